"""PRAM (SPEC §8.8): realised transitions within binomial 99.9% bounds of the matrix, retention and
nearest-category matrices (seed S001 parameters), invariant PRAM, reproducibility."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import invariant_matrix, pram

Z999 = norm.ppf(1 - 0.001 / 2)


def test_transition_frequencies_within_binomial_bounds():
    rng = np.random.default_rng(0)
    n = 200_000
    frame = pd.DataFrame({"c": rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])})
    matrix = pd.DataFrame(
        [[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.0, 0.4, 0.6]], index=list("abc"), columns=list("abc")
    )
    result = pram(frame, "c", matrix=matrix, random_state=1)
    table = pd.crosstab(frame["c"], result.data["c"]).reindex(index=list("abc"), columns=list("abc"), fill_value=0)
    n_from = table.sum(axis=1).to_numpy()[:, None]
    p = matrix.to_numpy()
    bound = Z999 * np.sqrt(p * (1 - p) / n_from)
    assert (np.abs(table.to_numpy() / n_from - p) <= bound + 1e-12).all()
    assert table.loc["c", "a"] == 0  # probability 0 never happens
    pd.testing.assert_frame_equal(result.matrix, matrix.astype(float))


def test_retention_with_nearest_categories_seed_s001():
    # S001: education kept with probability 0.8, changes restricted to the three nearest categories.
    frame = pd.DataFrame({"edu": [1, 2, 3, 4, 5, 6] * 10})
    result = pram(frame, "edu", retention=0.8, nearest=3, random_state=3)
    m = result.matrix
    assert np.allclose(m.sum(axis=1), 1.0) and np.allclose(np.diag(m), 0.8)
    assert m.loc[1, [2, 3, 4]].tolist() == pytest.approx([0.2 / 3] * 3) and m.loc[1, [5, 6]].sum() == 0
    # middle category: distances 1, 1, 2 (lower first on the tie at distance 2): 2, 4, 1
    assert m.loc[3, [2, 4, 1]].tolist() == pytest.approx([0.2 / 3] * 3) and m.loc[3, [5, 6]].sum() == 0
    per_category = pram(frame, "edu", retention={1: 0.8, 2: 0.7, 3: 0.6, 4: 1, 5: 1, 6: 1}, random_state=3).matrix
    assert per_category.loc[2, 2] == 0.7 and per_category.loc[2, 1] == pytest.approx(0.3 / 5)
    assert (result.data["edu"] != frame["edu"]).any()


def test_invariant_pram_keeps_the_observed_distribution():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"c": rng.choice([1, 2, 3, 4], size=100_000, p=[0.1, 0.2, 0.3, 0.4])})
    result = pram(frame, "c", retention=0.6, invariant=True, random_state=2)
    pi = frame["c"].value_counts(normalize=True).sort_index().to_numpy()
    r = result.matrix.to_numpy()
    np.testing.assert_allclose(pi @ r, pi, atol=1e-12)
    np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-12)
    released = result.data["c"].value_counts(normalize=True).sort_index().to_numpy()
    assert np.abs(released - pi).max() < 4 * np.sqrt(0.25 / 100_000) * 3
    p = np.array([[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(np.array([0.5, 0.5]) @ invariant_matrix(p, [1, 1]), [0.5, 0.5])


def test_reproducible_input_unchanged_missing_kept():
    frame = pd.DataFrame({"c": pd.array([1, 2, None, 3, 1, 2] * 50, dtype="Int64"), "x": range(300)})
    before = frame.copy()
    a = pram(frame, "c", retention=0.5, random_state=11)
    b = pram(frame, "c", retention=0.5, random_state=11)
    pd.testing.assert_frame_equal(frame, before)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert a.data["c"].dtype == frame["c"].dtype
    assert a.data["c"].isna().equals(frame["c"].isna())
    assert not a.data["c"].equals(pram(frame, "c", retention=0.5, random_state=12).data["c"])


def test_bad_matrices_are_rejected():
    frame = pd.DataFrame({"c": ["a", "b"]})
    with pytest.raises(SDCInputError, match="sums to"):
        pram(frame, "c", matrix={"a": {"a": 0.5, "b": 0.4}, "b": {"b": 1.0}})
    with pytest.raises(SDCInputError, match="no row"):
        pram(frame, "c", matrix={"a": {"a": 1.0}})
    with pytest.raises(SDCInputError, match="exactly one"):
        pram(frame, "c")
    with pytest.raises(SDCInputError, match="retention"):
        pram(frame, "c", retention=1.5)
