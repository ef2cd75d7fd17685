"""The minimum covariance determinant (sdc_dagster.numerics.robust): the subset found by scikit-learn's
MinCovDet, robustbase covMcd's and MASS cov.mcd's estimates on it (issue 37)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sdc_dagster.errors import SDCInputError
from sdc_dagster.numerics.robust import consistency_factor, cov_mcd, covmcd, mcd_subset, small_sample_factor

HBK = pd.read_csv(Path(__file__).parent / "data" / "robustbase" / "hbk.csv")[["X1", "X2", "X3"]].to_numpy(float)


@pytest.mark.parametrize("seed", [0, 1, 17, 2**40])
def test_hbk_as_robustbase_covmcd(seed):
    """robustbase's example covMcd(hbk[, 1:3]): the 14 planted outliers (records 1-14, Hawkins, Bradu &
    Kass 1984) get weight 0, so the centre is the mean of records 15-75, robustbase's printed
    1.538 1.780 1.687; the covariance is their sample covariance times c(61/75) k_rew(3, 75)."""
    subset = mcd_subset(HBK, random_state=seed)
    assert subset.sum() == (75 + 3 + 1) // 2 == 39 and not subset[:14].any()
    centre, covariance = covmcd(HBK, random_state=seed)
    good = HBK[14:]
    np.testing.assert_allclose(centre, good.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(centre, [1.538, 1.780, 1.687], atol=5e-4)
    # by hand: c(a) = a / F_{chi2(5)}(chi2_a(3)) at a = 61/75; Pison et al.'s reweighted factor for
    # p = 3 from robustbase's two fitted points (alfaq, betaq, qwaarden) for alpha = 1/2
    share = 61 / 75
    c = share / stats.chi2.cdf(stats.chi2.ppf(share, 3), 5)
    y = [np.log(1.02842572724793 / 3**1.67659883081926), np.log(0.26800273450853 / 3**1.35968562893582)]
    a, b = np.linalg.solve([[1, -np.log(2 * 9)], [1, -np.log(3 * 9)]], y)
    k = 1 / (1 - np.exp(a) / 75**b)
    np.testing.assert_allclose(covariance, np.cov(good, rowvar=False) * c * k, rtol=1e-12)


def test_consistency_factor_closed_form_for_two_variables():
    # p = 2: chi2_a(2) = -2 ln(1 - a) and F_{chi2(4)}(q) = 1 - e^{-q/2} (1 + q/2), so
    # c(a) = a / (1 - (1 - a)(1 - ln(1 - a)))
    for a in (0.5, 0.8133, 0.975):
        assert consistency_factor(2, a) == pytest.approx(a / (1 - (1 - a) * (1 - np.log(1 - a))), rel=1e-10)
    assert consistency_factor(3, 1.0) == 1.0


def test_small_sample_factors_simulated_and_fitted():
    # robustbase MCDcnp2s: for p = 2 the simulated factors cover n = 4..6 (m.0 row 2, m.rew row 2)
    assert small_sample_factor(2, 5, reweighted=False) == 1.799889
    assert small_sample_factor(2, 5, reweighted=True) == 1.418526
    assert small_sample_factor(9, 20, reweighted=True) == 1.834863
    # past them Pison et al.'s fitted factor 1 / (1 - e^a / n^b), for p = 2 (a, b) printed in robustbase
    assert small_sample_factor(2, 7, reweighted=False) == pytest.approx(
        1 / (1 - np.exp(0.673292623522027) / 7**0.691365864961895), rel=1e-12)
    assert small_sample_factor(1, 50, reweighted=True) == pytest.approx(
        1 / (1 - np.exp(1.11098143415027) / 50**1.5182890270453), rel=1e-12)


def test_mass_cov_mcd_cut_by_hand():
    """MASS cov.mcd: records kept when d_i < chi2_0.975(p) Q_{h/n}(d) / chi2_{h/n}(p), d from the MCD
    subset's mean and covariance; the estimate is their mean and covariance."""
    rng = np.random.default_rng(4)
    x = np.r_[rng.multivariate_normal([0, 0], [[1, 0.8], [0.8, 1]], 80), rng.normal(12, 1, (20, 2))]
    subset = mcd_subset(x, random_state=3)
    assert not subset[80:].any()
    diff = x - x[subset].mean(axis=0)
    d = np.einsum("ij,jk,ik->i", diff, np.linalg.inv(np.cov(x[subset], rowvar=False)), diff)
    share = subset.sum() / 100
    kept = d < stats.chi2.ppf(0.975, 2) * np.quantile(d, share) / stats.chi2.ppf(share, 2)
    centre, covariance = cov_mcd(x, random_state=3)
    assert not kept[80:].any()
    np.testing.assert_allclose(centre, x[kept].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(covariance, np.cov(x[kept], rowvar=False), rtol=1e-12)


def test_exact_fit_too_few_records_and_seeds():
    line = np.column_stack([np.arange(8.0), 2 * np.arange(8.0) + 1])  # every record on b = 2a + 1
    with pytest.raises(np.linalg.LinAlgError, match="exact fit: 5 of the 8 records lie on a hyperplane"):
        covmcd(line, random_state=0)
    same = np.r_[np.zeros((30, 2)), np.random.default_rng(1).normal(size=(20, 2))]  # 30 of 50 equal
    with pytest.raises(np.linalg.LinAlgError, match="exact fit"):
        cov_mcd(same, random_state=0)
    with pytest.raises(SDCInputError, match=r"needs more records \(3\) than variables \+ 1 \(3\)"):
        covmcd(np.eye(3)[:, :2], random_state=0)
    x = np.random.default_rng(2).standard_t(3, size=(200, 3))
    first = covmcd(x, random_state=np.random.default_rng(9))
    again = covmcd(x, random_state=np.random.default_rng(9))
    np.testing.assert_array_equal(first[1], again[1])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.integers(0, 20))
def test_planted_outliers_are_never_kept(seed, p, outliers):
    """For any seed: up to 20 of 100 records placed far from a normal cloud get weight 0 in both
    reweighting rules, and the centre is then near the cloud's."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(100, p))
    x[:outliers] = 50 + rng.normal(size=(outliers, p))
    for estimate in (covmcd, cov_mcd):
        centre, covariance = estimate(x, random_state=seed)
        assert np.abs(centre).max() < 1.0
        assert np.linalg.eigvalsh(covariance).max() < 5.0


def test_large_files_search_the_subset_on_a_seeded_sample(monkeypatch):
    import sdc_dagster.numerics.robust as robust

    monkeypatch.setattr(robust, "MCD_SAMPLE_RECORDS", 300)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(3_000, 2))
    x[:100] += 40  # planted far away
    subset = mcd_subset(x, random_state=5)
    assert subset.sum() == (300 + 2 + 1) // 2 and not subset[:100].any()  # h of the sample of 300
    np.testing.assert_array_equal(subset, mcd_subset(x, random_state=5))
    centre, covariance = covmcd(x, random_state=5)  # every record weighed: the planted ones get 0
    diff = x - x[subset].mean(axis=0)
    raw = np.cov(x[subset], rowvar=False) * consistency_factor(2, 151 / 300) * small_sample_factor(2, 300, reweighted=False)
    kept = np.einsum("ij,jk,ik->i", diff, np.linalg.inv(raw), diff) < stats.chi2.ppf(0.975, 2)
    assert not kept[:100].any() and kept.sum() > 2_700
    np.testing.assert_allclose(centre, x[kept].mean(axis=0), rtol=1e-12)
