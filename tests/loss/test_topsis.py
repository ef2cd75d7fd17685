"""TOPSIS information loss, SPEC §10."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import distance_loss, topsis_loss, topsis_scores, topsis_summary


def test_topsis_steps_by_hand():
    # two variables; ideal = (0.8, 0.6), anti-ideal = (0.0, 0.2)
    losses = pd.DataFrame({"a": [0.0, 0.8, 0.4], "b": [0.2, 0.6, 0.6]}, index=[10, 11, 12])
    eta = topsis_scores(losses)
    d_plus = np.sqrt([(0.8**2 + 0.4**2), 0.0, 0.4**2])
    d_minus = np.sqrt([0.0, 0.8**2 + 0.4**2, 0.4**2 + 0.4**2])
    np.testing.assert_allclose(eta, d_minus / (d_minus + d_plus))
    assert list(eta.index) == [10, 11, 12]
    theoretical = topsis_scores(losses, pattern="theoretical")
    y = losses.to_numpy()
    expected = np.sqrt((y**2).sum(1)) / (np.sqrt((y**2).sum(1)) + np.sqrt(((1 - y) ** 2).sum(1)))
    np.testing.assert_allclose(theoretical, expected)


def test_topsis_loss_on_table1(table1, table1_scales):
    original, swapped = table1
    eta = topsis_loss(original, swapped, table1_scales, continuous_distance="max_abs")
    distances = distance_loss(original, swapped, table1_scales, continuous_distance="max_abs").distances
    np.testing.assert_allclose(eta, topsis_scores(distances))
    assert eta.name == "topsis" and eta.index.equals(original.index)
    assert eta.between(0, 1).all()


def test_all_constant_columns_fall_back_to_theoretical_pattern():
    losses = pd.DataFrame({"a": [0.3, 0.3], "b": [0.0, 0.0]})
    np.testing.assert_allclose(topsis_scores(losses), topsis_scores(losses, pattern="theoretical"))


def test_summary_matches_scipy_and_descriptives():
    eta = pd.Series(np.linspace(0.0, 1.0, 40) ** 2)
    summary = topsis_summary(eta)
    assert summary["n"] == 40 and summary["median"] == pytest.approx(np.median(eta))
    assert summary["shapiro_w"] == pytest.approx(stats.shapiro(eta).statistic)
    z = (eta - eta.mean()) / eta.std(ddof=1)
    assert summary["ks_d"] == pytest.approx(stats.kstest(z, "norm").statistic)
    assert summary["cvm_w2"] == pytest.approx(stats.cramervonmises(z, "norm").statistic)
    assert summary["ad_a2"] == pytest.approx(stats.anderson(eta, "norm", method="interpolate").statistic)
    assert summary["skewness"] == pytest.approx(stats.skew(eta, bias=False))
    for key in ("shapiro_p", "ks_p", "cvm_p", "ad_p"):
        assert 0 <= summary[key] <= 1
    with pytest.raises(SDCInputError, match="at least 3"):
        topsis_summary([0.1, 0.2])


def test_bad_pattern(table1, table1_scales):
    original, swapped = table1
    with pytest.raises(SDCInputError, match="pattern"):
        topsis_loss(original, swapped, table1_scales, pattern="best")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(arrays(float, (15, 3), elements=st.floats(-100, 100, allow_nan=False)),
       arrays(float, (15, 3), elements=st.floats(-100, 100, allow_nan=False)),
       st.sampled_from(["empirical", "theoretical"]),
       st.sampled_from(["max_abs", "max_sq", "arctan"]))
# found by hypothesis in CI: a spread of 2e-205 underflows in the squared distances (d+ = d- = 0, eta NaN)
@example(np.zeros((15, 3)), np.vstack([[2.12388116e-205, 0.0, 0.0], np.zeros((14, 3))]), "empirical", "arctan")
def test_topsis_in_unit_interval_and_zero_for_identical(x, y, pattern, variant):
    scales = {"a": "continuous", "b": "continuous", "c": "continuous"}
    original, protected = pd.DataFrame(x, columns=list("abc")), pd.DataFrame(y, columns=list("abc"))
    eta = topsis_loss(original, protected, scales, pattern=pattern, continuous_distance=variant)
    assert eta.between(0, 1).all()
    unchanged = topsis_loss(original, original.copy(), scales, pattern=pattern, continuous_distance=variant)
    assert (unchanged == 0).all()


@pytest.mark.parametrize("eta", [
    np.r_[np.zeros(99_000), np.linspace(0.001, 1.0, 1_000)],  # 100k, mostly unchanged records
    np.r_[np.zeros(99_990), np.ones(10)],  # a Shapiro subsample that is constant
    np.full(50_000, 0.25),  # constant
    np.array([0.1, 0.1, 0.2]),  # the smallest n
    np.array([0.0, 0.0, 0.0, 1e-300]),
])
def test_summary_prints_no_warning_at_any_size(eta):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = topsis_summary(eta)
    assert summary["n"] == len(eta) and summary["shapiro_n"] == min(len(eta), 5_000)
    for key in ("shapiro_p", "ks_p", "cvm_p", "ad_p"):
        assert np.isnan(summary[key]) or 0 <= summary[key] <= 1


def test_shapiro_on_a_seeded_subsample_past_5000_values():
    rng = np.random.default_rng(3)
    eta = rng.beta(2, 5, 20_000)
    summary = topsis_summary(eta)
    chosen = np.sort(np.random.default_rng(0).choice(20_000, 5_000, replace=False))
    assert summary["shapiro_w"] == pytest.approx(stats.shapiro(eta[chosen]).statistic)
    assert topsis_summary(eta)["shapiro_p"] == summary["shapiro_p"]  # the same subsample each time
    # at most 5,000 values: the whole data, as before
    assert topsis_summary(eta[:5_000])["shapiro_w"] == pytest.approx(stats.shapiro(eta[:5_000]).statistic)


def test_cramer_von_mises_p_is_zero_far_in_the_tail():
    eta = np.r_[np.zeros(9_900), np.linspace(0.5, 1.0, 100)]
    summary = topsis_summary(eta)
    assert summary["cvm_w2"] > 5 and summary["cvm_p"] == 0.0
    assert summary["ks_p"] < 1e-10  # the other tests agree that normality is rejected
