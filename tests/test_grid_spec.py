"""The grid spec without Dagster: defaults, the bundled example, and errors naming the key and the rule."""

from pathlib import Path

import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.grid_spec import (CellKeySpec, GridSpec, SwapSpec, load_grid_spec, parse_grid_spec,
                                   spec_parameters)

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
