"""mu-Argus style unsafe-combinations table (SPEC §3.10), checked against brute-force counting.

The published S001 counts cannot be reproduced (their data are not printed), so the reference is
a direct itertools enumeration of every value combination of every key subset.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import risky_cells, unsafe_combinations


def brute_force(data: pd.DataFrame, keys: list[str], k: int, max_dim: int):
    per_variable = {v: [0] * max_dim for v in keys}
    per_category: dict[tuple, list[int]] = {}
    for v in keys:
        for value in data[v].dropna().unique():
            per_category[(v, value)] = [0] * max_dim
    for d in range(1, max_dim + 1):
        for subset in combinations(keys, d):
            rows = data[list(subset)].dropna()
            counts = Counter(map(tuple, rows.itertuples(index=False)))
            for combo, count in counts.items():
                if count >= k:
                    continue
                for v, value in zip(subset, combo):
                    per_variable[v][d - 1] += 1
                    per_category[(v, value)][d - 1] += 1
    return per_variable, per_category


def check_against_brute_force(data, keys, k, max_dim):
    per_variable, per_category = unsafe_combinations(data, keys, k=k, max_dim=max_dim)
    expected_variable, expected_category = brute_force(data, keys, k, max_dim)
    dims = [f"dim_{d}" for d in range(1, max_dim + 1)]
    assert list(per_variable.columns) == dims
    assert list(per_variable.index) == keys
    for v in keys:
        assert per_variable.loc[v].tolist() == expected_variable[v], v
    assert list(per_category.columns) == ["variable", "category", "frequency", *dims]
    assert len(per_category) == len(expected_category)
    for row in per_category.itertuples(index=False):
        assert [getattr(row, c) for c in dims] == expected_category[(row.variable, row.category)]
        assert row.frequency == int((data[row.variable] == row.category).sum())


def test_small_hand_example():
    data = pd.DataFrame(
        {
            "sex": ["m", "m", "f", "f", "f"],
            "region": ["n", "s", "n", "n", "s"],
            "age": [1, 1, 1, 2, 2],
        }
    )
    per_variable, per_category = unsafe_combinations(data, ["sex", "region", "age"], k=2, max_dim=2)
    # dimension 1: every value occurs at least twice -> nothing unsafe
    # sex x region: (m,n), (m,s), (f,s) unique; sex x age: (f,1) unique
    # region x age: (n,2), (s,1), (s,2) unique
    assert per_variable.loc["sex"].tolist() == [0, 4]
    assert per_variable.loc["region"].tolist() == [0, 6]
    assert per_variable.loc["age"].tolist() == [0, 4]
    row = per_category[(per_category["variable"] == "sex") & (per_category["category"] == "f")].iloc[0]
    assert (row["frequency"], row["dim_1"], row["dim_2"]) == (3, 0, 2)
    check_against_brute_force(data, ["sex", "region", "age"], 2, 2)


def test_missing_values_never_form_an_unsafe_combination():
    data = pd.DataFrame({"a": [1, 1, None, 2, 2], "b": ["x", "x", "y", None, "y"]})
    per_variable, per_category = unsafe_combinations(data, ["a", "b"], k=2, max_dim=2)
    check_against_brute_force(data, ["a", "b"], 2, 2)
    assert per_category["category"].notna().all()


def test_dimensions_beyond_the_number_of_keys_are_zero():
    data = pd.DataFrame({"a": [1, 2], "b": [1, 1]})
    per_variable, _ = unsafe_combinations(data, ["a", "b"], k=2, max_dim=3)
    assert per_variable["dim_3"].tolist() == [0, 0]


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(1, 30),
    m=st.integers(1, 4),
    k=st.integers(1, 4),
    max_dim=st.integers(1, 3),
    na=st.sampled_from([0.0, 0.2]),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_brute_force(n, m, k, max_dim, na, seed):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({f"v{j}": rng.integers(0, 3, n) for j in range(m)}).astype("Int64")
    data = data.mask(rng.random(data.shape) < na)
    check_against_brute_force(data, list(data.columns), k, max_dim)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"keys": ["a", "zz"]}, "'zz'"), ({"keys": []}, "empty"), ({"k": 0}, "k"), ({"max_dim": 0}, "max_dim")],
)
def test_bad_input(kwargs, message):
    data = pd.DataFrame({"a": [1, 2], "b": [1, 1]})
    args = {"keys": ["a", "b"], **kwargs}
    with pytest.raises(SDCInputError, match=message):
        unsafe_combinations(data, **args)


# --- sdcMicro riskyCells (golden_parity g_*) ----------------------------------------------------

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
PARITY = SDCMICRO / "golden_parity"
KEYS7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
RISKY_CELLS_CALLS = {
    "g_testdata2_riskyCells_maxDim3_th3.csv": ("testdata2.csv", {"threshold": 3, "max_dim": 3}),
    "g_testdata2_riskyCells_maxDim3_th5_3_2.csv": ("testdata2.csv", {"threshold": [5, 3, 2], "max_dim": 3}),
    "g_testdata2_riskyCells_level_th2.csv": ("testdata2.csv", {"threshold": 2, "levels": [1, 1, 1, 2, 2, 3, 3]}),
    "g_testdata_riskyCells_maxDim3.csv": ("testdata.csv", {"threshold": [3, 2, 1], "max_dim": 3}),
    "g_testdata_riskyCells_levels.csv": ("testdata.csv", {"threshold": 3, "levels": [1, 1, 1, 2, 2, 2, 3]}),
}


def _golden_risky_cells(name: str) -> pd.DataFrame:
    return pd.read_csv(PARITY / name, keep_default_na=False, dtype={"dim1": str, "dim2": str, "dim3": str})


@pytest.mark.parametrize("name", sorted(RISKY_CELLS_CALLS))
def test_risky_cells_matches_sdcmicro(name):
    source, kwargs = RISKY_CELLS_CALLS[name]
    data = pd.read_csv(SDCMICRO / source)
    golden = _golden_risky_cells(name)
    result = risky_cells(data, KEYS7, **kwargs)
    assert list(result.columns) == list(golden.columns)
    pd.testing.assert_frame_equal(result, golden.astype({"threshold": "int64", "unsafe_cells": "int64"}))


def test_risky_cells_on_suppressed_keys_counts_missing_as_a_category():
    """sdcMicroObj route after localSuppression(k=3): unsafe_cells_manip counts a missing value as a
    category of its own; the suppressed keys are those of f_testdata2_suppressed_risk_per_record."""
    golden = _golden_risky_cells("g_testdata2_riskyCells_sdcObj_ls3_maxDim2_th2.csv")
    original = pd.read_csv(SDCMICRO / "testdata2.csv")
    suppressed = pd.read_csv(PARITY / "f_testdata2_suppressed_risk_per_record.csv")[KEYS7]
    assert suppressed.isna().any().any()
    before = risky_cells(original, KEYS7, threshold=2, max_dim=2)
    after = risky_cells(suppressed, KEYS7, threshold=2, max_dim=2)
    np.testing.assert_array_equal(before["unsafe_cells"].to_numpy(), golden["unsafe_cells_orig"].to_numpy())
    np.testing.assert_array_equal(after["unsafe_cells"].to_numpy(), golden["unsafe_cells_manip"].to_numpy())
    assert before[["dim1", "dim2"]].equals(golden[["dim1", "dim2"]])


def test_risky_cells_small_hand_example():
    """a = 1,1,1,2,NA and b = x,x,y,y,y. threshold 1 per dimension: one-way cells a: {1:3, 2:1, NA:1}
    -> 2 unsafe; b: {x:2, y:3} -> 0; two-way (a,b): {(1,x):2, (1,y):1, (2,y):1, (NA,y):1} -> 3."""
    data = pd.DataFrame({"a": [1, 1, 1, 2, None], "b": list("xxyyy")})
    result = risky_cells(data, ["a", "b"], threshold=1, max_dim=2)
    assert result.to_dict("list") == {
        "dim1": ["a", "b", "a"], "dim2": ["", "", "b"], "threshold": [1, 1, 1], "unsafe_cells": [2, 0, 3],
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 2}, "exactly one"),
        ({"threshold": 2, "max_dim": 2, "levels": [1, 2]}, "exactly one"),
        ({"threshold": [2, 1, 1], "max_dim": 2}, "threshold"),
        ({"threshold": [2, 1], "levels": [1, 2]}, "one threshold"),
        ({"threshold": 0, "max_dim": 1}, "threshold"),
        ({"threshold": 2, "max_dim": 3}, "max_dim"),
        ({"threshold": 2, "levels": [1]}, "levels"),
    ],
)
def test_risky_cells_bad_input(kwargs, message):
    data = pd.DataFrame({"a": [1, 2], "b": [1, 1]})
    with pytest.raises(SDCInputError, match=message):
        risky_cells(data, ["a", "b"], **kwargs)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), threshold=st.integers(1, 4), na=st.sampled_from([0.0, 0.3]),
       seed=st.integers(0, 2**32 - 1))
def test_risky_cells_match_direct_counting(n, threshold, na, seed):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({f"k{j}": rng.integers(0, 3, n).astype(float) for j in range(3)})
    data = data.mask(rng.random(data.shape) < na)
    result = risky_cells(data, ["k0", "k1", "k2"], threshold=threshold, max_dim=3)
    for row in result.itertuples(index=False):
        subset = [v for v in (row.dim1, row.dim2, row.dim3) if v]
        rows = data[subset].itertuples(index=False)
        cells = Counter(tuple("NA" if pd.isna(v) else v for v in values) for values in rows)
        assert row.unsafe_cells == sum(1 for c in cells.values() if c <= threshold)
