"""Optimal local suppression (SPEC §8.3 with the §2.4 frequencies): checked against exhaustive
search over every suppression pattern of every record (frequencies counted here pair by pair, the
SPEC §2.4 rule written out), a hand example, and k-anonymity of the testdata result."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import local_suppression, optimal_local_suppression
from sdc_dagster.risk import k_anonymity_violations

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
KEYS7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def _fk_by_definition(rows: list[tuple]) -> list[int]:
    """SPEC §2.4 with alpha = 1: records compatible with record i (equal or missing in every key),
    except that a key missing in every variable is not counted for a complete key (sdcMicro)."""
    def compatible(a, b):
        return all(x is None or y is None or x == y for x, y in zip(a, b))

    fk = []
    for a in rows:
        if all(x is None for x in a):
            fk.append(len(rows))
            continue
        complete = all(x is not None for x in a)
        fk.append(sum(1 for b in rows if compatible(a, b) and not (complete and all(y is None for y in b))))
    return fk


def _exhaustive_minimum(data: pd.DataFrame, keys: list[str], k: int) -> int:
    values = [tuple(row) for row in data[keys].itertuples(index=False)]
    m = len(keys)
    best = None
    patterns = list(product([False, True], repeat=m))
    for choice in product(patterns, repeat=len(values)):
        count = sum(sum(p) for p in choice)
        if best is not None and count >= best:
            continue
        released = [tuple(None if hide else v for v, hide in zip(row, p)) for row, p in zip(values, choice)]
        if min(_fk_by_definition(released)) >= k:
            best = count
    return best


def test_hand_example_one_suppression():
    """(1,1) x2, (1,2), (2,2) x2, k = 2: the unique (1,2) is fixed by suppressing b alone, which makes
    it compatible with both (1,1) records (f = 3); suppressing a would also work (compatible with
    (2,2) x2), and importance decides: b is kept when it comes first."""
    data = pd.DataFrame({"a": [1, 1, 1, 2, 2], "b": [1, 1, 2, 2, 2], "x": range(5)})
    before = data.copy()
    result = optimal_local_suppression(data, ["a", "b"], k=2, importance=["a", "b"])
    assert result.suppressions == 1 and result.status == "optimal"
    assert result.data["b"].isna().tolist() == [False, False, True, False, False]
    assert result.data["a"].notna().all()
    other = optimal_local_suppression(data, ["a", "b"], k=2, importance=["b", "a"])
    assert other.data["a"].isna().tolist() == [False, False, True, False, False]
    assert other.objective == pytest.approx(1.0) and result.objective == pytest.approx(1.0)  # 1 + 0/m²
    pd.testing.assert_frame_equal(data, before)
    assert result.lower_bound == pytest.approx(result.objective) and result.gap == pytest.approx(0.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6), k=st.integers(2, 3))
def test_k_anonymous_and_never_below_the_exhaustive_optimum(seed, n, k):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n)})
    if k > n:
        return
    result = optimal_local_suppression(data, ["a", "b"], k=k)
    rows = result.data[["a", "b"]].itertuples(index=False)
    released = [tuple(None if pd.isna(v) else v for v in row) for row in rows]
    assert min(_fk_by_definition(released)) >= k
    assert result.suppressions >= _exhaustive_minimum(data, ["a", "b"], k)
    assert result.lower_bound <= result.objective + 1e-9


def test_exhaustive_optimum_reached_on_a_small_case():
    data = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 1], "b": [1, 2, 1, 2, 1, 2, 1]})
    expected = _exhaustive_minimum(data, ["a", "b"], 2)
    result = optimal_local_suppression(data, ["a", "b"], k=2)
    assert result.suppressions == expected


@pytest.mark.slow
@pytest.mark.parametrize("k", [2])
def test_testdata_result_is_k_anonymous_and_beats_the_greedy_count(k):
    """Measured once (see the report): k = 2, 3, 5 give 12, 24 and 48 suppressions (k = 5 stopped by a
    120 s limit, gap 6 %), against 105 / 182 / 317 (greedy) and 157 / 293 / 500 (sdcMicro 5.8.1)."""
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    result = optimal_local_suppression(data, KEYS7, k=k, time_limit=120)
    assert k_anonymity_violations(result.data, KEYS7, k) == 0
    assert result.suppressions == int(result.data[KEYS7].isna().to_numpy().sum())
    assert result.suppressions < 105
    assert result.lower_bound <= result.objective + 1e-6


def test_bad_input():
    data = pd.DataFrame({"a": [1, 2, None], "b": [1, 1, 2]})
    with pytest.raises(SDCInputError, match="'a'"):
        optimal_local_suppression(data, ["a", "b"], k=2)
    complete = data.fillna(3)
    with pytest.raises(SDCInputError, match="k"):
        optimal_local_suppression(complete, ["a", "b"], k=4)
    with pytest.raises(SDCInputError, match="max_suppressed"):
        optimal_local_suppression(complete, ["a", "b"], k=2, max_suppressed=3)
    with pytest.raises(SDCInputError, match="importance"):
        optimal_local_suppression(complete, ["a", "b"], k=2, importance=["a"])


def test_already_k_anonymous_data_is_returned_unchanged():
    data = pd.DataFrame({"a": [1, 1, 2, 2], "b": [5, 5, 6, 6]})
    result = optimal_local_suppression(data, ["a", "b"], k=2)
    assert result.suppressions == 0 and result.status == "optimal"
    pd.testing.assert_frame_equal(result.data, data)


def test_time_limit_without_a_solution_falls_back_to_the_greedy_result():
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    result = optimal_local_suppression(data, KEYS7, k=3, time_limit=0.01)
    assert result.status in {"heuristic", "time_limit"}
    assert k_anonymity_violations(result.data, KEYS7, 3) == 0
    assert 0.0 <= result.lower_bound <= result.objective
    if result.status == "heuristic":  # the documented fallback: the greedy result itself
        pd.testing.assert_frame_equal(result.data, local_suppression(data, KEYS7, k=3))


def test_testdata_with_at_most_two_suppressions_per_record():
    """max_suppressed=2, k = 2 on testdata: the optimum found by HiGHS is 73 suppressions (measured),
    below the greedy 105 and sdcMicro's 157; checked here for k-anonymity and the per-record limit."""
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    result = optimal_local_suppression(data, KEYS7, k=2, max_suppressed=2, time_limit=120)
    assert k_anonymity_violations(result.data, KEYS7, 2) == 0
    per_record = result.data[KEYS7].isna().sum(axis=1)
    assert per_record.max() <= 2
    assert result.suppressions == per_record.sum() < 105
