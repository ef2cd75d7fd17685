"""Rank swapping (SPEC §8.9): each column is a permutation of itself, no value moves beyond p% of
the ranks, each value is swapped at most once."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import rank_swap
from sdc_dagster.protect.rank_swapping import rank_swap_permutation


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 300), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_partner_is_an_involution_within_the_window(n, window, seed):
    partner = rank_swap_permutation(n, window, np.random.default_rng(seed))
    assert np.array_equal(np.sort(partner), np.arange(n))
    assert np.array_equal(partner[partner], np.arange(n))  # swapped at most once, in pairs
    assert (np.abs(partner - np.arange(n)) <= window).all()


def test_columns_are_permutations_within_window():
    rng = np.random.default_rng(0)
    n = 10_000
    frame = pd.DataFrame({"wyn": rng.lognormal(8, 0.4, n), "staz": rng.permutation(n).astype(float)})
    before = frame.copy()
    out = rank_swap(frame, ["wyn", "staz"], p=5, random_state=1)
    pd.testing.assert_frame_equal(frame, before)
    window = int(0.05 * n)
    for column in ["wyn", "staz"]:
        assert np.array_equal(np.sort(out[column]), np.sort(frame[column]))
        rank_before = frame[column].rank(method="first").to_numpy()
        rank_of_value = dict(zip(frame[column], rank_before))
        rank_after = np.array([rank_of_value[v] for v in out[column]])
        assert (np.abs(rank_after - rank_before) <= window).all()
        assert (out[column] != frame[column]).mean() > 0.9  # nearly every value moved
    # means and variances preserved exactly up to summation order (SPEC §9.4)
    assert out.mean().to_numpy() == pytest.approx(frame.mean().to_numpy(), rel=1e-12)


def test_missing_values_stay_and_reproducible():
    frame = pd.DataFrame({"x": [3.0, np.nan, 1.0, 2.0, 5.0, 4.0] * 20})
    a = rank_swap(frame, ["x"], p=10, random_state=7)
    pd.testing.assert_frame_equal(a, rank_swap(frame, ["x"], p=10, random_state=7))
    assert a["x"].isna().equals(frame["x"].isna())
    for p in (-1, 100):
        with pytest.raises(SDCInputError, match=r"p: must be a number in \[0, 100\)"):
            rank_swap(frame, ["x"], p=p)


def test_p_zero_swaps_nothing_but_codes_the_tails_as_sdcmicro():
    """sdcMicro's rankSwap(P = 0) (issue 37; it was refused here): RankSwapping.h draws the partner of rank
    j among the ranks j + 1 .. j + N·P - 1, none when P = 0, so no value moves; TopPercent and
    BottomPercent still replace the tails by their means (Top = (int)(N·top), Bottom = floor(N·bottom))."""
    frame = pd.DataFrame({"x": [3.0, np.nan, 1.0, 2.0, 5.0, 4.0] * 20, "y": np.arange(120.0)})
    pd.testing.assert_frame_equal(rank_swap(frame, ["x", "y"], p=0, random_state=3), frame)
    # sdcMicro's tests/testthat/test_rankSwap.R: 1..10000 unchanged with P = 0, with R0 = 1 and with K0 = 0
    test = pd.DataFrame({"a": np.arange(1, 10_001), "b": np.arange(1, 10_001)})
    for parameter in ({"p": 0}, {"r0": 1}, {"k0": 0}):
        pd.testing.assert_frame_equal(rank_swap(test, ["a"], random_state=1, **parameter), test)
    # 1..10 with top 30% and bottom 20%: sdcMicro counts in single precision, (int)(10 * (30 * 0.01f))
    # = 2 and floor(10 * (20 * 0.01f)) = 1 (20 * 0.01f is just below 0.2): the 2 largest (9, 10)
    # become 9.5, the smallest (1) stays 1 (mean of itself); the rest keep their places (the values
    # sdcMicro 5.8.1's RankSwap returns for this call, tests/data/sdcmicro/golden_more README).
    ten = pd.DataFrame({"a": [7.0, 10.0, 1.0, 4.0, 9.0, 2.0, 3.0, 8.0, 5.0, 6.0]})
    out = rank_swap(ten, ["a"], p=0, top_percent=30, bottom_percent=20, random_state=3)
    assert out["a"].tolist() == [7.0, 9.5, 1.0, 4.0, 9.5, 2.0, 3.0, 8.0, 5.0, 6.0]
    # top and bottom 20% of 10 code 1 record each (a record's own mean): nothing changes
    out = rank_swap(ten, ["a"], p=0, top_percent=20, bottom_percent=20, random_state=3)
    assert out["a"].tolist() == ten["a"].tolist()


# --- sdcMicro's P, R0, K0 and top/bottom coding (issue 16) ---
from sdc_dagster.protect.rank_swapping import rank_swap_window  # noqa: E402


def rank_displacement(original: pd.Series, released: pd.Series) -> np.ndarray:
    """|rank of the released value - rank of the record| for distinct values."""
    rank_of_value = pd.Series(np.arange(len(original)), index=np.sort(original.to_numpy()))
    return np.abs(rank_of_value.loc[released.to_numpy()].to_numpy() - original.rank(method="first").to_numpy() + 1)


def test_windows_from_p_r0_k0_by_hand():
    values = np.arange(1.0, 1001.0)  # mean 500.5, var (1000^2 - 1) / 12 = 83333.25, delta 999
    assert rank_swap_window(values, p=10) == 100
    assert rank_swap_window(values, p=0.1) == 1
    # R0 = 0.95: P = 100 sqrt(2 · 83333.25 · 0.05) / 999 = 9.137... % -> floor(91.37...) = 91
    assert rank_swap_window(values, r0=0.95) == 91
    # K0 = 0.1: P = 100 sqrt(8/3) · 0.1 · 500.5 / 999 = 8.18... % -> 81
    assert rank_swap_window(values, k0=0.1) == 81
    assert rank_swap_window(values, r0=1.0) == 0 and rank_swap_window(values, k0=0.0) == 0


def test_sdcmicro_issue_366_p_is_a_percentage_as_documented():
    # sdcMicro's C++ uses P as a fraction: P = 10 swaps across all ranks there. Documented (and
    # here): |i - j| <= P · N / 100, so P = 10 on 1000 records moves no value more than 100 ranks.
    frame = pd.DataFrame({"a": np.arange(1.0, 1001.0)})
    out = rank_swap(frame, ["a"], p=10, random_state=366)
    moved = rank_displacement(frame["a"], out["a"])
    assert moved.max() <= 100
    assert moved.max() > 50  # the window is used, not a fraction of it
    assert rank_displacement(frame["a"], rank_swap(frame, ["a"], p=0.1, random_state=366)["a"]).max() <= 1


@pytest.mark.parametrize("parameter", [{"r0": 0.95}, {"k0": 0.1}, {"p": 3.0}])
def test_swaps_stay_within_the_window_of_each_parameter(parameter):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.permutation(2000).astype(float) + 1, "b": rng.lognormal(5, 1, 2000)})
    out = rank_swap(frame, ["a", "b"], random_state=4, **parameter)
    for column in ["a", "b"]:
        window = rank_swap_window(np.sort(frame[column].to_numpy()), **parameter)
        moved = rank_displacement(frame[column], out[column])
        assert moved.max() <= window and (moved > 0).mean() > 0.9
        assert np.array_equal(np.sort(out[column]), np.sort(frame[column]))
    rerun = rank_swap(frame, ["a", "b"], random_state=4, **parameter)
    assert out.to_numpy().tobytes() == rerun.to_numpy().tobytes()


def test_top_and_bottom_coding_replace_by_group_means_and_are_not_swapped():
    frame = pd.DataFrame({"a": np.arange(100.0, 0.0, -1.0)})
    out = rank_swap(frame, ["a"], p=10, top_percent=5, bottom_percent=10, random_state=1)
    released = out["a"].to_numpy()
    original = frame["a"].to_numpy()
    # sdcMicro's single-precision counts (RankSwapping.h): (int)(100 * (5 * 0.01f)) = 4 and
    # floor(100 * (10 * 0.01f)) = 9, both products just below 5 and 10 (sdcMicro 5.8.1's RankSwap
    # with P = 0 codes exactly these: 97..100 -> 98.5, 1..9 -> 5)
    assert (released[original > 96] == 98.5).all()  # mean of 97..100
    assert (released[original <= 9] == 5.0).all()  # mean of 1..9
    middle = (original > 9) & (original <= 96)
    assert np.array_equal(np.sort(released[middle]), np.sort(original[middle]))
    # the window counts the 87 swappable values: floor(10 · 87 / 100) = 8
    assert np.abs(released[middle] - original[middle]).max() <= 8
    # R0 with coding: delta = 96 - 10 = 86, var of 11..95 = (85^2 - 1) / 12 = 602;
    # P = 100 sqrt(2 · 602 · 0.05) / 86 = 9.02...% of 85 = 7.67 -> 7
    assert rank_swap_window(np.arange(11.0, 96.0), r0=0.95, low=10.0, high=96.0) == 7


def test_parameter_rules_name_the_parameter():
    frame = pd.DataFrame({"x": np.arange(10.0), "s": list("abcdefghij")})
    with pytest.raises(SDCInputError, match="p, r0: give only one"):
        rank_swap(frame, ["x"], p=5, r0=0.9)
    with pytest.raises(SDCInputError, match="r0"):
        rank_swap(frame, ["x"], r0=1.5)
    with pytest.raises(SDCInputError, match="k0"):
        rank_swap(frame, ["x"], k0=-1)
    with pytest.raises(SDCInputError, match="top_percent, bottom_percent"):
        rank_swap(frame, ["x"], top_percent=60, bottom_percent=40)
    with pytest.raises(SDCInputError, match="column 's'"):
        rank_swap(frame, ["s"], r0=0.9)
    assert rank_swap(frame, ["s"], p=50, random_state=0)["s"].sort_values().tolist() == list("abcdefghij")


def test_plan_steps_take_the_sdcmicro_parameters():
    from sdc_dagster.protect.plan import apply_plan, validate_plan

    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"key": rng.integers(0, 3, 600), "a": rng.lognormal(5, 1, 600), "b": rng.normal(9, 2, 600)})
    steps = [
        {"method": "rank_swap", "columns": ["a"], "r0": 0.95, "top_percent": 5, "bottom_percent": 5},
        {"method": "noise", "columns": ["a", "b"], "kind": "correlated2", "delta": 0.2},
        {"method": "noise", "columns": ["b"], "kind": "outdect", "noise": 150},
    ]
    first = apply_plan(frame, steps, keys=["key"], random_state=3)
    second = apply_plan(frame, steps, keys=["key"], random_state=3)
    assert first.data.to_numpy().tobytes() == second.data.to_numpy().tobytes()
    assert first.steps[0]["parameters"]["r0"] == 0.95
    with pytest.raises(SDCInputError, match=r"step 0 \(noise\): parameter 'kind'"):
        validate_plan([{"method": "noise", "columns": ["a"], "kind": "romm"}], columns=["a"])
    with pytest.raises(SDCInputError, match=r"step 0 \(rank_swap\): parameter 'k0' must be a number"):
        validate_plan([{"method": "rank_swap", "columns": ["a"], "k0": "big"}], columns=["a"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=2, max_size=200),
    st.sampled_from([{"p": 7.5}, {"r0": 0.9}, {"k0": 0.05}, {"p": 40.0}]),
    st.floats(0, 20),
    st.floats(0, 20),
    st.integers(0, 2**32 - 1),
)
def test_property_values_kept_and_moves_within_window(values, parameter, top, bottom, seed):
    frame = pd.DataFrame({"x": np.array(values, dtype=float)})
    out = rank_swap(frame, ["x"], top_percent=top, bottom_percent=bottom, random_state=seed, **parameter)
    n = len(values)
    n_top, n_bottom = int(np.floor(n * top / 100)), int(np.floor(n * bottom / 100))
    order = np.argsort(frame["x"].to_numpy(), kind="stable")
    middle = order[n_bottom : n - n_top]
    x, released = frame["x"].to_numpy(), out["x"].to_numpy()
    # the swappable values are permuted among themselves ...
    assert np.array_equal(np.sort(released[middle]), np.sort(x[middle]))
    # ... each to a record whose rank is within the window (ties: some value of equal rank range)
    window = rank_swap_window(
        x[middle], **parameter,
        low=x[order[n_bottom - 1]] if n_bottom else None, high=x[order[n - n_top]] if n_top else None,
    )
    ranks = np.empty(n, dtype=int)
    ranks[order] = np.arange(n)
    sorted_x = x[order]
    lowest = np.searchsorted(sorted_x, released[middle], side="left")
    highest = np.searchsorted(sorted_x, released[middle], side="right") - 1
    assert (lowest <= ranks[middle] + window).all() and (highest >= ranks[middle] - window).all()
    # the coded values are the means of their groups
    for coded in (order[:n_bottom], order[n - n_top :]):
        if len(coded):
            assert np.allclose(released[coded], x[coded].mean())
