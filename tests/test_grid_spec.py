"""The grid spec without Dagster: defaults, the bundled example, and errors naming the key and the rule;
and the ``grid_spec`` resource that hands it to the grid assets."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.resources.grid import GridSpecResource
from sdc_dagster.spec.grid import (ROUTES, CellKeySpec, GridSpec, SuppressionSpec, SwapSpec, grid_spec_document,
                                   load_grid_spec, parse_grid_spec, release_parameters, spec_parameters)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_bundled_example_is_the_published_practice():
    spec = load_grid_spec(EXAMPLES / "grid" / "census_grid.yaml")
    assert spec == GridSpec()
    assert spec_parameters(spec.swap) == {"swaprate": 0.05, "k_anonymity": 3, "risk_variables": ["sex", "age_group"],
                                     "seed": 2021}
    assert spec_parameters(spec.cell_key) == {"max_deviation": 2, "variance": 1.05, "threshold": 1, "seed": 2021}


def test_routes_in_canonical_order_and_sections_default():
    spec = parse_grid_spec({"routes": ["suppression", "cell_key"], "swap": {"swaprate": 1, "seed": 7}})
    assert spec.routes == ("cell_key", "suppression")
    assert spec.swap == SwapSpec(swaprate=1.0, seed=7) and isinstance(spec.swap.swaprate, float)
    assert spec.cell_key == CellKeySpec()
    assert parse_grid_spec(None) == GridSpec()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"routes": ["cell_key", "rounding"]}, "key 'routes': a non-empty list"),
        ({"routes": []}, "key 'routes'"),
        ({"rounding": {}}, "unknown key 'rounding'"),
        ({"cell_key": {"max_deviaton": 3}}, "key 'cell_key': unknown parameter 'max_deviaton'"),
        ({"cell_key": {"max_deviation": 2.5}}, "key 'cell_key.max_deviation': must be an integer, got 2.5"),
        ({"suppression": {"tie_only": "yes"}}, "key 'suppression.tie_only': must be true or false"),
        ({"suppression": {"k": True}}, "key 'suppression.k': must be an integer"),
        ({"swap": {"risk_variables": "sex"}}, "key 'swap.risk_variables': must be a list of column names"),
        ({"swap": [1]}, "key 'swap': must be a mapping"),
        ([1, 2], "expected a mapping"),
    ],
)
def test_errors_name_the_key_and_the_rule(raw, message):
    with pytest.raises(SDCInputError, match=message):
        parse_grid_spec(raw)


def test_file_errors_name_the_file(tmp_path):
    spec = tmp_path / "grid.yaml"
    spec.write_text("cell_key: {max_deviaton: 3}\n")
    with pytest.raises(SDCInputError, match=f"grid spec {spec}, key 'cell_key': unknown parameter 'max_deviaton'"):
        load_grid_spec(spec)


def test_release_parameters_are_the_swap_and_the_routes_in_name_order():
    spec = parse_grid_spec({"routes": ["suppression"], "swap": {"swaprate": 0.1, "seed": 7}})
    assert release_parameters(spec) == {
        "swap": {"k_anonymity": 3, "risk_variables": ["sex", "age_group"], "seed": 7, "swaprate": 0.1},
        "suppression": {"k": 3, "seed": 2021, "strategy": "distribution", "tie_only": True},
    }
    assert [list(section) for section in release_parameters(GridSpec()).values()] == [
        ["k_anonymity", "risk_variables", "seed", "swaprate"], ["max_deviation", "seed", "threshold", "variance"],
        ["k", "seed", "strategy", "tie_only"]]


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
grid_specs = st.builds(
    GridSpec,
    routes=st.sets(st.sampled_from(ROUTES), min_size=1).map(lambda chosen: tuple(r for r in ROUTES if r in chosen)),
    swap=st.builds(SwapSpec, swaprate=st.floats(0, 1), k_anonymity=st.integers(1, 50),
                   risk_variables=st.lists(names, max_size=4).map(tuple), seed=st.integers(0, 2**31)),
    cell_key=st.builds(CellKeySpec, max_deviation=st.integers(1, 10), variance=st.floats(0.1, 10),
                       threshold=st.integers(0, 5), seed=st.integers(0, 2**31)),
    suppression=st.builds(SuppressionSpec, k=st.integers(2, 10), strategy=st.sampled_from(["fixed", "uniform",
                                                                                         "distribution"]),
                          tie_only=st.booleans(), seed=st.integers(0, 2**31)),
)


@given(grid_specs)
def test_a_spec_survives_its_document_and_the_resource(spec):
    assert parse_grid_spec(grid_spec_document(spec)) == spec
    assert GridSpecResource.of(spec).spec() == spec


def test_the_resource_reads_a_file_or_text_and_defaults_to_the_published_practice(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("routes: [cell_key]\ncell_key: {max_deviation: 3}\n")
    assert GridSpecResource(path=str(path)).spec() == GridSpec(routes=("cell_key",), cell_key=CellKeySpec(max_deviation=3))
    assert GridSpecResource(yaml="suppression: {k: 4}").spec() == GridSpec(suppression=SuppressionSpec(k=4))
    assert GridSpecResource().spec() == GridSpec()
    with pytest.raises(SDCInputError, match="grid_spec resource yaml, key 'swap': must be a mapping"):
        GridSpecResource(yaml="swap: 3").spec()
    with pytest.raises(SDCInputError, match="give the spec's path or its yaml text, not both"):
        GridSpecResource(path=str(path), yaml="routes: [cell_key]").spec()
