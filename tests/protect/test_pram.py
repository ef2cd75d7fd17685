"""PRAM (SPEC §8.8): realised transitions within binomial 99.9% bounds of the matrix, retention and
nearest-category matrices (seed S001 parameters), invariant PRAM, reproducibility; sdcMicro pram's
strata, alpha and pd (min_retention), the invariant matrix checked against its definition
(Gouweleeuw et al. 1998) computed here element by element."""

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


# --- sdcMicro pram parameters: strata, alpha, min_retention (pd) ---------------------------------

def _invariant_by_definition(p: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gouweleeuw et al. (1998): Q[q, s] = p[s, q] pi[s] / sum_t p[t, q] pi[t]; R = P Q."""
    pi = counts / counts.sum()
    q = np.zeros_like(p)
    for to in range(p.shape[0]):
        for frm in range(p.shape[0]):
            q[to, frm] = p[frm, to] * pi[frm] / sum(p[t, to] * pi[t] for t in range(p.shape[0]))
    return p @ q


@pytest.fixture(scope="module")
def stratified() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    n = 120_000
    region = rng.choice(["north", "south"], size=n, p=[0.4, 0.6])
    north = rng.choice(["a", "b", "c"], size=n, p=[0.7, 0.2, 0.1])
    south = rng.choice(["a", "b", "c"], size=n, p=[0.1, 0.3, 0.6])
    return pd.DataFrame({"region": region, "c": np.where(region == "north", north, south)})


def test_invariant_pram_per_stratum_with_alpha_follows_the_definition(stratified):
    result = pram(stratified, "c", retention=0.7, invariant=True, alpha=0.5, strata="region", random_state=4)
    base = np.full((3, 3), 0.15) + np.eye(3) * 0.55  # retention 0.7, rest 0.3 split over two categories
    assert set(result.stratum_matrices) == {"north", "south"}
    overall = np.zeros((3, 3))
    for region, used in result.stratum_matrices.items():
        counts = stratified.loc[stratified["region"] == region, "c"].value_counts().reindex(list("abc")).to_numpy()
        expected = 0.5 * _invariant_by_definition(base, counts.astype(float)) + 0.5 * np.eye(3)
        np.testing.assert_allclose(used.to_numpy(), expected, atol=1e-14)
        pi = counts / counts.sum()
        np.testing.assert_allclose(pi @ used.to_numpy(), pi, atol=1e-14)  # invariant within the stratum
        overall += counts[:, None] * used.to_numpy()
    per_category = stratified["c"].value_counts().reindex(list("abc")).to_numpy()[:, None]
    np.testing.assert_allclose(result.matrix.to_numpy(), overall / per_category, atol=1e-14)


def test_stratified_pram_frequencies_within_binomial_bounds(stratified):
    result = pram(stratified, "c", retention=0.7, invariant=True, alpha=0.8, strata="region", random_state=9)
    z = norm.ppf(1 - 0.001 / (2 * 18))  # 99.9 % jointly over 2 strata x 9 cells (Bonferroni)
    for region, used in result.stratum_matrices.items():
        rows = stratified["region"] == region
        table = pd.crosstab(stratified.loc[rows, "c"], result.data.loc[rows, "c"]).reindex(
            index=list("abc"), columns=list("abc"), fill_value=0)
        n_from = table.sum(axis=1).to_numpy()[:, None]
        p = used.to_numpy()
        assert (np.abs(table.to_numpy() / n_from - p) <= z * np.sqrt(p * (1 - p) / n_from)).all()
        # invariance: the released distribution of the stratum stays within binomial bounds of the original
        pi = table.sum(axis=1).to_numpy() / rows.sum()
        released = result.data.loc[rows, "c"].value_counts(normalize=True).reindex(list("abc")).to_numpy()
        assert (np.abs(released - pi) <= z * np.sqrt(2 * pi * (1 - pi) / rows.sum())).all()


def test_min_retention_draws_the_diagonal_like_sdcmicro_pd():
    frame = pd.DataFrame({"c": list("abcde") * 400})
    result = pram(frame, "c", min_retention=0.8, random_state=7)
    m = result.matrix.to_numpy()
    keep = np.diag(m)
    assert ((keep >= 0.8) & (keep <= 1.0)).all() and len(set(keep)) == 5
    off = (1 - keep) / 4
    np.testing.assert_allclose(m[~np.eye(5, dtype=bool)].reshape(5, 4), np.repeat(off[:, None], 4, axis=1))
    np.testing.assert_allclose(m.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_retention": 0.6, "invariant": True, "alpha": 0.5, "strata": "s"},
        {"retention": 0.5, "strata": ["s", "t"]},
        {"retention": 0.5},
    ],
)
def test_pram_reruns_with_a_seed_are_byte_identical(kwargs):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"c": rng.choice([1, 2, 3, 4], 5000), "s": rng.choice(["x", "y", None], 5000),
                          "t": rng.integers(0, 3, 5000)})
    first = pram(frame, "c", random_state=123, **kwargs)
    second = pram(frame, "c", random_state=123, **kwargs)
    assert first.data.to_csv().encode() == second.data.to_csv().encode()
    assert first.matrix.to_csv().encode() == second.matrix.to_csv().encode()
    other = pram(frame, "c", random_state=124, **kwargs)
    assert not other.data["c"].equals(first.data["c"])


def test_alpha_zero_changes_nothing_and_strata_keys_are_tuples():
    frame = pd.DataFrame({"c": [1, 2, 3] * 20, "s": [0, 1] * 30, "t": ["u"] * 60})
    same = pram(frame, "c", retention=0.2, invariant=True, alpha=0.0, strata=["s", "t"], random_state=1)
    pd.testing.assert_frame_equal(same.data, frame)
    assert set(same.stratum_matrices) == {(0, "u"), (1, "u")}


def test_bad_pram_parameters_are_rejected():
    frame = pd.DataFrame({"c": ["a", "b"], "s": [1, 2]})
    with pytest.raises(SDCInputError, match="alpha"):
        pram(frame, "c", retention=0.5, alpha=1.5)
    with pytest.raises(SDCInputError, match="min_retention"):
        pram(frame, "c", min_retention=-0.1)
    with pytest.raises(SDCInputError, match="exactly one"):
        pram(frame, "c", retention=0.5, min_retention=0.5)
    with pytest.raises(SDCInputError, match="'zz'"):
        pram(frame, "c", retention=0.5, strata="zz")
