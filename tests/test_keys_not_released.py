"""Issues 34, 38: a key not released (withheld, or released as one category) is total loss of that key,
in the release's loss (headline_loss) and in the plan search's recode-only bounds alike.

Expected values are written out by hand (SPEC §9.1 measure (1): d = 1 for each observed value of a
key not released, over the observed values of the original's keys) or are properties of the
measure (additivity over the keys, suppression only raising it, monotone along a nested chain).
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.pipeline.evaluation import headline_loss, information_loss
from sdc_dagster.pipeline.variant import keys_lost
from sdc_dagster.search.coded import CodedLattice, level_bounds
from sdc_dagster.search.space import search_space
from sdc_dagster.spec import parse_spec
from tests.test_search_lattice import nested_levels


def nominal_spec(keys, *, levels=None):
    return parse_spec({"survey": "t", "risk": {"k": 2, "max_global_risk": 0.5},
                       "variables": {key: {"role": "categorical_key", "scale": "nominal",
                                           **({"hierarchy": {"levels": levels[key]}} if levels else {})}
                                     for key in keys}})


def test_a_key_at_its_top_in_a_two_key_file_loses_its_share_of_the_values():
    """4 records, sex and region: region released as one category (its top, coded by its smallest
    member 'a') loses its 4 values of 8, lambda = 4/8, not 2/8 (the 'b' records only)."""
    data = pd.DataFrame({"sex": ["m", "f", "m", "f"], "region": ["a", "a", "b", "b"]})
    spec = nominal_spec(["sex", "region"])
    figures = headline_loss(data, data.assign(region="a"), spec, topsis=False)
    assert figures["lambda_arctan"] == pytest.approx(4 / 8)
    assert figures["values_compared"] == 4 and figures["values_withheld"] == 4
    # with a missing region: 3 region values observed, lost of 4 + 3
    gap = data.assign(region=["a", "a", "b", None])
    assert headline_loss(gap, gap.assign(region=["a", "a", "a", None]), spec)["lambda_arctan"] == pytest.approx(3 / 7)
    # one sex value changed besides: 1 + 4 of 8
    both = data.assign(region="a", sex=["f", "f", "m", "f"])
    assert headline_loss(data, both, spec)["lambda_arctan"] == pytest.approx(5 / 8)
    # both keys as one category: nothing released, lambda 1
    assert headline_loss(data, data.assign(region="a", sex="f"), spec)["lambda_arctan"] == 1.0
    # the report's loss stage counts the same way, under each continuous distance (no continuous key
    # here: all three are 4/8), as the release manifest's headline does
    summary = information_loss(data, {"p": data.assign(region="a")}, spec).summary.loc["p"]
    assert summary["lambda_arctan"] == summary["lambda_max_abs"] == pytest.approx(4 / 8)
    assert summary["values_compared"] == 4 and summary["values_withheld"] == 4


def test_keys_not_released_names_withheld_and_one_category_keys_only():
    data = pd.DataFrame({"sex": ["m", "f", "m", "f"], "region": ["a", "a", "b", "b"], "flag": [1, 1, 1, 1]})
    spec = nominal_spec(["sex", "region", "flag"])
    # flag has one category in the original already: releasing it so loses nothing of it
    assert keys_lost(spec, data, data) == {}
    assert keys_lost(spec, data, data.assign(region="a").drop(columns="sex")) == {
        "sex": "withheld", "region": "one category"}
    # every value suppressed, or all but one category's: one category (nothing left to tell apart)
    assert keys_lost(spec, data, data.assign(region=[None, None, "b", None])) == {"region": "one category"}
    assert keys_lost(spec, data, data.assign(region=np.nan)) == {"region": "one category"}
    # a key given as unchanged is not read
    assert keys_lost(spec, data, data.assign(region="a"), unchanged=["region"]) == {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), share=st.sampled_from([0.0, 0.05, 0.3]))
def test_recode_only_bounds_add_up_and_bound_the_loss_with_suppression(seed, share):
    """The plan search's pruning rests on two properties of measure (1) with keys not released as
    total loss (search.coded.level_bounds): a node's recode-only loss is the sum of its keys'
    figures, and suppressing values (any of them, up to a whole key) never lowers it; within a nested
    chain a key's figure never falls from a level to a coarser one, its top (one category) the
    largest."""
    rng = np.random.default_rng(seed)
    n = 60
    data = pd.DataFrame({"region": rng.choice(np.arange(1, 7), n), "age": rng.integers(1, 6, n),
                         "tenure": rng.choice([1, 2, 3], n, p=[0.7, 0.2, 0.1]).astype(float)})
    data.loc[rng.random(n) < 0.1, "tenure"] = np.nan
    levels = {key: nested_levels(sorted(data[key].dropna().unique().tolist()), rng) for key in data.columns}
    spec = nominal_spec(list(data.columns), levels=levels)
    space = search_space(data, spec, withhold=True)  # each key's top (one category) in its chain
    lattice = CodedLattice(data, spec, space)
    bounds = level_bounds(data, spec, lattice)
    for key, per_level in zip(space, bounds):  # monotone along each nested chain, the top largest
        assert np.all(np.diff(per_level) >= -1e-12)
        # at its top the key's every observed value is lost, of the observed values of all keys
        assert per_level[-1] == pytest.approx(data[key].notna().sum() / data.notna().to_numpy().sum(), abs=1e-12)
    for _ in range(5):
        node = tuple(int(rng.integers(0, len(h.levels))) for h in space.values())
        digits, _ = lattice.digits(node)
        digits = np.where(rng.random(digits.shape) < share, 0, digits)
        released = data.copy()
        for key, values in lattice.released(node, digits).items():
            released[key] = values
        lower = sum(per_level[level] for per_level, level in zip(bounds, node))
        loss = headline_loss(data, released, spec, topsis=False)["lambda_arctan"]
        if share == 0:
            assert loss == pytest.approx(lower, abs=1e-12)  # additive
        else:
            assert loss >= lower - 1e-12  # suppression only raises it
