"""TOPSIS information loss, SPEC §10."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
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
def test_topsis_in_unit_interval_and_zero_for_identical(x, y, pattern, variant):
    scales = {"a": "continuous", "b": "continuous", "c": "continuous"}
    original, protected = pd.DataFrame(x, columns=list("abc")), pd.DataFrame(y, columns=list("abc"))
    eta = topsis_loss(original, protected, scales, pattern=pattern, continuous_distance=variant)
    assert eta.between(0, 1).all()
    unchanged = topsis_loss(original, original.copy(), scales, pattern=pattern, continuous_distance=variant)
    assert (unchanged == 0).all()
