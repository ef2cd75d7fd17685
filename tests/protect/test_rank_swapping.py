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
    with pytest.raises(SDCInputError, match="p:"):
        rank_swap(frame, ["x"], p=0)
