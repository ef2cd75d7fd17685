"""Suppression to l-diversity (``diversity_suppression``, SPEC §3.6): every record of the result is
l-diverse among the records its key matches, as ``risk.l_diversity`` and k-anonymity judge them (a
missing key value matches any value, SPEC §2.4, sdcMicro's freqCalc: a complete key is not matched
by a key missing in every variable unless there is one key variable), checked by a brute-force
comparison of every pair of records in this file; or l is reported unreachable when the whole file
is not l-diverse.

Since issue 34 a missing key value is judged for l as it is for k; before, it was a value of its own
(sdcMicro's ``ldiversity``), and the suppressed records, one group of their own, had to be made
l-diverse by adding further groups to them (the by-hand case below suppressed 4 records where 2 do
now)."""

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


def matched(frame: pd.DataFrame, keys):
    """For each record, the rows its key matches (brute force over every pair): equal wherever both
    are known; a complete key is not matched by a key missing in every variable when there are two
    or more key variables (sdcMicro's freqCalc)."""
    known = frame[keys].notna().to_numpy()
    values = frame[keys].astype("string").to_numpy()
    rows = []
    for i in range(len(frame)):
        hits = []
        for j in range(len(frame)):
            both = known[i] & known[j]
            if not all(values[i][both] == values[j][both]):
                continue
            if j != i and len(keys) > 1 and known[i].all() and not known[j].any():
                continue
            hits.append(frame.index[j])
        rows.append(hits)
    return rows


def test_the_suppressed_records_match_every_group_as_they_do_for_k_by_hand():
    """Groups a = 3 and a = 4 hold only x: their keys are suppressed. With one key variable a
    missing value matches every record and every record matches it (freqCalc): a = 1 then holds
    {x, y, x, x}, a = 2 {x, z, z, x, x}, the two suppressed records the whole file {x, y, z}: all
    2-diverse, nothing more is suppressed (the old notion, the suppressed records a group of their
    own {x, x}, also took a = 1's two records)."""
    data = pd.DataFrame({"a": [1, 1, 2, 2, 2, 3, 4], "s": ["x", "y", "x", "z", "z", "x", "x"]})
    released = diversity_suppression(data, ["a"], "s", l=2)
    assert released["a"].isna().tolist() == [False, False, False, False, False, True, True]
    assert released["s"].equals(data["s"])
    # the 4-record case of the issue: a = 2 and a = 3 are suppressed, a = 1 keeps its key
    four = pd.DataFrame({"a": [1, 1, 2, 3], "s": ["x", "y", "x", "x"]})
    assert diversity_suppression(four, ["a"], "s", l=2)["a"].isna().tolist() == [False, False, True, True]


def test_a_complete_key_that_matched_a_suppressed_record_is_judged_again_by_hand():
    """Two key variables. (1, 1) holds x; (1, NA) holds y and matches it, so (1, 1) sees {x, y} and
    (1, NA) sees {y, x}; (2, 2) holds x, x and (3, 3) holds y, z. With l = 3 on the sensitive values
    x, y, z: (1, NA) sees 2 values, (1, 1) 2, (2, 2) 1, (3, 3) 2: all are suppressed but the file
    as a whole ({x, y, x, x, y, z}: 3 values) is 3-diverse. With l = 2, (2, 2) alone is below: its
    two records lose both keys; the complete keys do not match records missing in every variable
    (freqCalc), so (1, 1) still sees {x, y} and stays; the suppressed records match every record."""
    data = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3], "b": [1, None, 2, 2, 3, 3], "s": ["x", "y", "x", "x", "y", "z"]})
    data["b"] = data["b"].astype("Int64")
    released = diversity_suppression(data, ["a", "b"], "s", l=2)
    assert released[["a", "b"]].isna().all(axis=1).tolist() == [False, False, True, True, False, False]
    assert diversity_suppression(data, ["a", "b"], "s", l=3)[["a", "b"]].isna().all().all()


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
    for rows in matched(released, keys):
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
    if all(score(data.loc[rows, s].tolist()) >= l - 1e-9 for rows in matched(data, keys) for s in sensitive):
        assert released.equals(data)
