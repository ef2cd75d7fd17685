"""Suppression to l-diversity (``diversity_suppression``, SPEC §3.6): every key group of the result
is l-diverse, grouped as ``risk.l_diversity`` groups the records (identical keys, a missing key
value a value of its own, as sdcMicro's ``ldiversity``), checked by a brute-force count in this
file; or l is reported unreachable when the whole file is not l-diverse."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.suppression import diversity_suppression


def distinct_score(values) -> int:
    """SPEC §3.6 distinct l-diversity of one group: its distinct present values, a missing value
    counted as one more when other values exist (sdcMicro)."""
    present = {v for v in values if not pd.isna(v)}
    return len(present) + (1 if present and any(pd.isna(v) for v in values) else 0)


def entropy_score(values) -> float:
    """exp of the entropy of the group's values, missing values one category (SPEC §3.6, sdcMicro)."""
    counts = pd.Series(["<missing>" if pd.isna(v) else v for v in values]).value_counts().to_numpy()
    p = counts / counts.sum()
    return math.exp(-(p * np.log(p)).sum())


def groups(frame: pd.DataFrame, keys):
    """The records' key groups, identical keys with a missing value a value of its own."""
    return frame.groupby([frame[k].astype("string").fillna("<missing>") for k in keys], sort=False).groups.values()


def test_the_suppressed_records_join_a_diverse_group_when_their_own_pool_is_not_by_hand():
    """Groups a = 3 and a = 4 hold only x: their keys are suppressed and the two records form one
    group {x, x}, 1-diverse, where the old function stopped. The group that brings the pool a
    missing value with the fewest records joins it: a = 1 ({x, y}, one new value for 2 records)
    rather than a = 2 ({x, z, z}, one for 3). The pool {x, y, x, x} is 2-diverse; a = 2 is kept."""
    data = pd.DataFrame({"a": [1, 1, 2, 2, 2, 3, 4], "s": ["x", "y", "x", "z", "z", "x", "x"]})
    released = diversity_suppression(data, ["a"], "s", l=2)
    assert released["a"].isna().tolist() == [True, True, False, False, False, True, True]
    assert released.loc[[2, 3, 4], "a"].tolist() == [2, 2, 2]
    assert released["s"].equals(data["s"])
    # the 4-record case of the issue: the only other group joins, every key is suppressed
    four = pd.DataFrame({"a": [1, 1, 2, 3], "s": ["x", "y", "x", "x"]})
    assert diversity_suppression(four, ["a"], "s", l=2)["a"].isna().all()


def test_an_unreachable_l_is_an_error_naming_the_variable():
    data = pd.DataFrame({"a": [1, 1, 2, 3], "s": ["x", "y", "x", "x"]})
    with pytest.raises(SDCInputError, match=r"l: 3 is unreachable for sensitive variable 's'.*distinct l-diversity 2"):
        diversity_suppression(data, ["a"], "s", l=3)
    # exp(entropy) of x, y, x, x = 4 / 3^(3/4) = 1.755 < 2
    with pytest.raises(SDCInputError, match=r"l: 2 is unreachable for sensitive variable 's'.*entropy.*1\.755"):
        diversity_suppression(data, ["a"], "s", l=2, entropy=True)


key_values = st.sampled_from([1, 2, 3, None])
sensitive_values = st.sampled_from(["u", "v", "w", "x", None])


@st.composite
def diversity_cases(draw):
    n = draw(st.integers(1, 14))
    n_keys = draw(st.integers(1, 3))
    n_sensitive = draw(st.integers(1, 2))
    frame = pd.DataFrame(
        {**{f"k{j}": pd.array(draw(st.lists(key_values, min_size=n, max_size=n)), dtype="Int64") for j in range(n_keys)},
         **{f"s{j}": draw(st.lists(sensitive_values, min_size=n, max_size=n)) for j in range(n_sensitive)}}
    )
    return frame, [f"k{j}" for j in range(n_keys)], [f"s{j}" for j in range(n_sensitive)]


@settings(max_examples=200, deadline=None)
@given(diversity_cases(), st.integers(1, 4), st.booleans())
def test_every_key_group_is_l_diverse_after_suppression(case, l, entropy):
    data, keys, sensitive = case
    def score(values) -> float:
        """The rule diversity_suppression enforces: entropy l-diversity asks the distinct one too (a
        group of only missing values: distinct 0, exp(entropy) 1)."""
        return min(distinct_score(values), entropy_score(values)) if entropy else distinct_score(values)

    if any(score(data[s].tolist()) < l - 1e-9 for s in sensitive):
        # the whole file as one group is not l-diverse: no grouping is
        with pytest.raises(SDCInputError, match=rf"l: {l} is unreachable"):
            diversity_suppression(data, keys, sensitive, l=l, entropy=entropy)
        return
    released = diversity_suppression(data, keys, sensitive, l=l, entropy=entropy)
    for rows in groups(released, keys):
        for s in sensitive:
            assert score(released.loc[rows, s].tolist()) >= l - 1e-9
    # only whole records are suppressed, the sensitive values and the other keys are as they were
    hidden = released[keys].isna() & data[keys].notna()
    suppressed = released[keys].isna().all(axis=1)
    assert (hidden.any(axis=1) <= suppressed).all()
    kept = ~suppressed
    assert released.loc[kept, keys].equals(data.loc[kept, keys])
    assert released[sensitive].equals(data[sensitive])
    # a file that is l-diverse already is left as it is
    if all(score(data.loc[rows, s].tolist()) >= l - 1e-9 for rows in groups(data, keys) for s in sensitive):
        assert released.equals(data)
