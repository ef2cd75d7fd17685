"""Rank-based interval disclosure (Domingo-Ferrer, Mateo-Sanz & Torra 2001; SPEC §4.2, §4.5):
a small frame worked out by hand from the definition, and its invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import rank_interval_disclosure


def test_by_hand():
    # 20 records; variable a: originals 0..19 (sorted s_k = k), released shifted by +1.5 except
    # record 0 (released exactly) and record 19 (released 40). Variable b: originals 10 x {0, 1}
    # (ties), released unchanged.
    original = pd.DataFrame({"a": np.arange(20.0), "b": np.repeat([0.0, 1.0], 10)})
    released = original.assign(a=np.r_[0.0, np.arange(1.0, 19.0) + 1.5, 40.0])
    result = rank_interval_disclosure(original, released, ["a", "b"], percents=[5, 10, 20])
    # h = floor(p * 20 / 200): 0 for p = 5, 1 for p = 10, 2 for p = 20.
    # a, p = 5 (h = 0): only record 0, released as its own value, discloses (the interval of a
    #   masked value between two originals is empty) -> 1 of 20.
    # a, p = 10 (h = 1): record 0: [s_0, s_0] holds 0. Records 1..18: masked k + 1.5 lies between
    #   s_{k+1} and s_{k+2}, interval [s_{k+1}, s_{k+2}], original k outside. Record 19: masked 40
    #   above every original, interval [s_19, s_20] cut to [s_19, s_19] = {19}: inside -> 2 of 20.
    # a, p = 20 (h = 2): record 0: [s_-2, s_2] cut to [0, 2], inside. Records 1..17: interval
    #   [s_k, s_{k+3}] holds k. Record 18 (masked 19.5): [s_18, s_21] cut to [18, 19], inside.
    #   Record 19: [s_18, s_19], inside -> 20 of 20.
    # b: unchanged, every masked value is an original value -> always disclosed, 20 of 20.
    assert result.by_percent.tolist() == pytest.approx([21 / 40, 22 / 40, 40 / 40])
    assert result.by_percent.index.tolist() == [5.0, 10.0, 20.0]
    assert result.value == pytest.approx((21 + 22 + 40) / 120)
    assert result.by_variable.to_dict() == pytest.approx({"a": (1 + 2 + 20) / 60, "b": 1.0})
    assert result.compared == 40


def test_ties_share_the_centre_and_default_percents():
    # 10 originals, 0 five times and 10, 20, ..., 50; default p = 1..10 gives h = 0 throughout
    # (floor(10 p / 200) = 0), so only values inside the tied block of their masked value count.
    original = pd.DataFrame({"x": [0.0] * 5 + [10.0, 20, 30, 40, 50]})
    released = pd.DataFrame({"x": [0.0, 0, 10, 0, 0, 10, 25, 30, 40, 55]})
    # record 2 (original 0, masked 10): interval [10, 10] -> no; record 6 (masked 25): empty;
    # record 9 (masked 55, above all): empty. 7 of 10 disclosed for every p.
    result = rank_interval_disclosure(original, released, ["x"])
    assert result.by_percent.index.tolist() == [float(p) for p in range(1, 11)]
    assert result.by_percent.tolist() == pytest.approx([0.7] * 10)
    assert result.value == pytest.approx(0.7)


def test_missing_values_are_skipped_pairwise():
    original = pd.DataFrame({"a": [1.0, 2, 3, np.nan], "b": [np.nan, np.nan, np.nan, np.nan]})
    released = pd.DataFrame({"a": [1.0, np.nan, 3.5, 4], "b": [1.0, 2, 3, 4]})
    result = rank_interval_disclosure(original, released, ["a", "b"], percents=[100])
    # a: ranking over the observed originals 1, 2, 3 (n = 3, h = floor(100 * 3 / 200) = 1);
    # record 0: [s_-1, s_1] cut to [1, 2], holds 1. Record 2 (masked 3.5 above all): [s_2, s_3]
    # cut to [3, 3], holds 3. Records 1 and 3 have a missing value. b: nothing compared.
    assert result.compared == 2 and result.value == 1.0
    assert result.by_variable["a"] == 1.0 and np.isnan(result.by_variable["b"])
    nothing = rank_interval_disclosure(original[["b"]], released[["b"]], ["b"])
    assert nothing.compared == 0 and np.isnan(nothing.value)


def test_bad_input():
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    for percents in ([], [0], [150], [float("nan")]):
        with pytest.raises(SDCInputError, match="percents"):
            rank_interval_disclosure(frame, frame, ["x"], percents=percents)
    with pytest.raises(SDCInputError, match="'x'.*numeric"):
        rank_interval_disclosure(frame, frame.assign(x=["a", "b"]), ["x"])
    with pytest.raises(SDCInputError, match="rows"):
        rank_interval_disclosure(frame, frame.iloc[:1], ["x"])


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 40), st.just(2)), elements=st.floats(-50, 50, width=32)),
    st.data(),
)
def test_property_identity_bounds_and_monotonicity(x, data):
    noise = data.draw(arrays(np.float64, x.shape, elements=st.floats(-20, 20, width=32)))
    holes = data.draw(arrays(bool, x.shape))
    original = pd.DataFrame(x, columns=["a", "b"])
    released = pd.DataFrame(np.where(holes, np.nan, x + noise), columns=["a", "b"])
    percents = sorted(data.draw(st.lists(st.floats(0.5, 100), min_size=1, max_size=6)))
    # identity masking discloses every value at every p
    same = rank_interval_disclosure(original, original, ["a", "b"], percents=percents)
    assert same.value == 1.0 and (same.by_percent == 1.0).all() and same.compared == x.size
    result = rank_interval_disclosure(original, released, ["a", "b"], percents=percents)
    assert result.compared == int((~holes).sum())
    if result.compared:
        values = result.by_percent.to_numpy()
        assert ((values >= 0) & (values <= 1)).all() and 0 <= result.value <= 1
        assert (np.diff(values) >= 0).all()  # the interval only grows with p


def _disclosed_by_definition(x: np.ndarray, xm: np.ndarray, percent: float) -> tuple[int, int]:
    """(values disclosed, values compared) of one variable, record by record as the docstring
    defines the interval: ranks [lo - h, hi - 1 + h] of the sorted originals, cut at the ends."""
    ranked = np.sort(x[~np.isnan(x)])
    n, h = len(ranked), int(np.floor(percent / 200.0 * len(ranked)))
    disclosed = compared = 0
    for value, masked in zip(x, xm):
        if np.isnan(value) or np.isnan(masked):
            continue
        compared += 1
        lo, hi = int((ranked < masked).sum()), int((ranked <= masked).sum())
        first, last = max(lo - h, 0), min(hi - 1 + h, n - 1)
        disclosed += int(first <= last and ranked[first] <= value <= ranked[last])
    return disclosed, compared


@settings(max_examples=80, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 30), st.just(1)), elements=st.integers(-6, 6).map(float)),
    st.data(),
)
def test_property_counts_equal_the_interval_taken_record_by_record(x, data):
    """The counting by each record's least half-width (one sort for every p) gives the disclosed
    values of the interval taken record by record: ties on both sides, values outside the range."""
    masked = data.draw(arrays(np.float64, x.shape, elements=st.one_of(st.integers(-9, 9).map(float), st.just(np.nan))))
    x = np.where(data.draw(arrays(bool, x.shape)), np.nan, x) if data.draw(st.booleans()) else x
    percents = data.draw(st.lists(st.sampled_from([1.0, 5.0, 10.0, 25.0, 50.0, 100.0]), min_size=1, max_size=4,
                                  unique=True))
    result = rank_interval_disclosure(pd.DataFrame({"a": x[:, 0]}), pd.DataFrame({"a": masked[:, 0]}), ["a"],
                                      percents=percents)
    for percent in percents:
        disclosed, compared = _disclosed_by_definition(x[:, 0], masked[:, 0], percent)
        assert result.compared == compared
        if compared:
            assert result.by_percent[percent] == disclosed / compared


def test_variants_of_the_same_originals_share_their_ranking_and_count_as_by_definition():
    """Issue 38: the originals' ranks are kept for the next variant compared with the same originals
    (``intervals._RANKED``); every variant's counts are still those of the definition, and originals
    that differ in one value are ranked again."""
    from sdc_dagster.risk import intervals

    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=200), 1)  # many ties
    x[[3, 50]] = np.nan
    intervals._RANKED.clear()
    for seed in range(3):
        masked = np.round(x + np.random.default_rng(seed).normal(scale=0.3, size=200), 1)
        result = rank_interval_disclosure(pd.DataFrame({"a": x}), pd.DataFrame({"a": masked}), ["a"], percents=[1, 5, 10])
        for percent in (1, 5, 10):
            disclosed, compared = _disclosed_by_definition(x, masked, percent)
            assert result.by_percent[percent] == disclosed / compared
    assert len(intervals._RANKED) == 1  # ranked once
    changed = x.copy()
    changed[7] += 0.1
    rank_interval_disclosure(pd.DataFrame({"a": changed}), pd.DataFrame({"a": masked}), ["a"])
    assert len(intervals._RANKED) == 2
