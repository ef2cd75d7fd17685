"""Moment-based measures, SPEC §9.4, §9.6, §9.7, against S003 Tables 3–4 and hand computations."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import (
    correlation_loss,
    covariance_loss,
    inverse_correlation_loss,
    mean_loss,
    mean_max_loss,
    moment_losses,
    variance_arctan_loss,
)
from sdc_dagster.loss.moments import correlation_matrix

CONTINUOUS = ["WYN", "STAZ", "ODL"]
# S003 Table 3 (Kendall tau-b) and Table 4 (inverses); SPEC §9.7
TAU_BEFORE = [[1, 0.3435, -0.1481], [0.3435, 1, -0.1079], [-0.1481, -0.1079, 1]]
TAU_AFTER = [[1, 0.4849, -0.1550], [0.4849, 1, -0.0661], [-0.1550, -0.0661, 1]]
INV_BEFORE = [[1.1500, -0.3810, 0.1292], [-0.3810, 1.1380, 0.0663], [0.1292, 0.0663, 1.0263]]
INV_AFTER = [[1.3338, -0.6358, 0.1647], [-0.6358, 1.3075, -0.0121], [0.1647, -0.0121, 1.0247]]


@pytest.fixture
def continuous(table1):
    original, swapped = table1
    return original[CONTINUOUS], swapped[CONTINUOUS]


def test_table3_kendall_tau_b_and_table4_inverses(continuous):
    original, swapped = continuous
    before = correlation_matrix(original.to_numpy(float), "kendall")
    after = correlation_matrix(swapped.to_numpy(float), "kendall")
    np.testing.assert_allclose(before, TAU_BEFORE, atol=5e-5)
    np.testing.assert_allclose(after, TAU_AFTER, atol=5e-5)
    np.testing.assert_allclose(np.linalg.inv(before), INV_BEFORE, atol=5e-5)
    # SPEC §13.2: element (WYN, STAZ) after the swap is published one unit off; tolerance 1e-4
    np.testing.assert_allclose(np.linalg.inv(after), INV_AFTER, atol=1e-4)


def test_inverse_correlation_measures_11_and_12(continuous):
    original, swapped = continuous
    raw, normalised = inverse_correlation_loss(original, swapped)
    assert raw == pytest.approx(0.354883, abs=5e-7)
    assert normalised == pytest.approx(0.031808, abs=5e-7)
    assert round(raw, 4) == 0.3549 and round(normalised, 4) == 0.0318


def test_rank_swapping_keeps_means_and_variances(continuous):
    original, swapped = continuous
    # SPEC §9.4: (7)-(9) are 0 for Table 1 (to rounding error); rank swapping keeps the variances (§9.7)
    for form in ("abs", "squared", "relative"):
        assert mean_loss(original, swapped, form=form) == pytest.approx(0.0, abs=1e-9)
        assert covariance_loss(original, swapped, form=form, diagonal_only=True) == pytest.approx(0.0, abs=1e-9)
    assert variance_arctan_loss(original, swapped) == pytest.approx(0.0, abs=1e-9)


def test_moment_forms_by_hand():
    original = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 1.0, 4.0, 3.0]})
    protected = pd.DataFrame({"a": [1.0, 2.0, 3.0, 6.0], "b": [2.0, 2.0, 4.0, 4.0]})
    # means: a 2.5 → 3.0, b 2.5 → 3.0
    assert mean_loss(original, protected, form="abs") == pytest.approx(0.5)
    assert mean_loss(original, protected, form="squared") == pytest.approx(0.25)
    assert mean_loss(original, protected, form="relative") == pytest.approx(0.2)
    assert mean_max_loss(original, protected) == pytest.approx((0.5 / 4 + 0.5 / 4) / 2)
    v, w = np.cov(original.T), np.cov(protected.T)
    upper = [(0, 0), (0, 1), (1, 1)]
    gaps = np.array([v[i] - w[i] for i in upper])
    assert covariance_loss(original, protected) == pytest.approx(np.abs(gaps).sum() * 2 / 6)
    assert covariance_loss(original, protected, form="squared") == pytest.approx((gaps**2).sum() / 3)
    assert covariance_loss(original, protected, form="relative") == pytest.approx(
        np.mean([abs(v[i] - w[i]) / abs(v[i]) for i in upper]))
    diag = np.abs(np.diag(v) - np.diag(w))
    assert covariance_loss(original, protected, diagonal_only=True) == pytest.approx(diag.mean())
    assert variance_arctan_loss(original, protected) == pytest.approx(2 / (np.pi * 2) * np.arctan(diag).sum())
    r, s = np.corrcoef(original.T)[0, 1], np.corrcoef(protected.T)[0, 1]
    # j <= l pairs: the two unit diagonal terms add 0 but count in m(m+1)/2 = 3
    assert correlation_loss(original, protected) == pytest.approx(abs(r - s) / 3)


def test_relative_form_with_zero_reference():
    original = pd.DataFrame({"a": [-1.0, 1.0], "b": [1.0, 3.0]})
    protected = pd.DataFrame({"a": [0.0, 1.0], "b": [1.0, 5.0]})
    with pytest.raises(SDCInputError, match="mean of 'a'"):
        mean_loss(original, protected, form="relative")
    # skipping the undefined term leaves b: |2 - 3| / 2
    assert mean_loss(original, protected, form="relative", on_zero="skip") == pytest.approx(0.5)


def test_singular_correlation_matrix_raises():
    original = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 4.0, 6.0, 8.0]})
    protected = pd.DataFrame({"a": [1.0, 3.0, 2.0, 4.0], "b": [2.0, 4.0, 6.0, 9.0]})
    with pytest.raises(SDCInputError, match="singular"):
        inverse_correlation_loss(original, protected, method="pearson")
    losses = moment_losses(original, protected)
    assert np.isnan(losses["inverse_correlation_raw"])


def test_pearson_inverse_correlation_by_hand(continuous):
    original, swapped = continuous
    a = np.diag(np.linalg.inv(np.corrcoef(original.T)))
    b = np.diag(np.linalg.inv(np.corrcoef(swapped.T)))
    raw, normalised = inverse_correlation_loss(original, swapped, method="pearson")
    assert raw == pytest.approx(np.abs(a - b).sum())
    assert normalised == pytest.approx(0.5 * np.linalg.norm(a / np.linalg.norm(a) - b / np.linalg.norm(b)))


def test_bad_parameters(continuous):
    original, swapped = continuous
    with pytest.raises(SDCInputError, match="method"):
        inverse_correlation_loss(original, swapped, method="spearman")
    with pytest.raises(SDCInputError, match="form"):
        mean_loss(original, swapped, form="cubic")
    with pytest.raises(SDCInputError, match="'nope'"):
        mean_loss(original, swapped, ["nope"])


@settings(max_examples=50, deadline=None)
@given(arrays(float, (12, 3), elements=st.floats(-1e3, 1e3, allow_nan=False)),
       arrays(float, (12, 3), elements=st.floats(-1e3, 1e3, allow_nan=False)))
def test_variance_arctan_in_unit_interval_and_zero_for_identical(x, y):
    original, protected = pd.DataFrame(x, columns=list("abc")), pd.DataFrame(y, columns=list("abc"))
    assert 0.0 <= variance_arctan_loss(original, protected) <= 1.0
    assert variance_arctan_loss(original, original.copy()) == 0.0
    assert mean_loss(original, original.copy()) == 0.0
    assert covariance_loss(original, original.copy()) == 0.0


def test_moment_losses_agree_with_the_individual_measures(table1):
    original, swapped = table1
    frame_o = original[CONTINUOUS].assign(WYN=lambda f: f["WYN"] * 1.0)
    protected = swapped[CONTINUOUS].assign(ODL=lambda f: f["ODL"] + np.arange(len(f)) % 3)
    for method in ("pearson", "kendall"):
        losses = moment_losses(frame_o, protected, correlation_method=method)
        for form in ("abs", "squared", "relative"):
            assert losses[f"mean_{form}"] == pytest.approx(mean_loss(frame_o, protected, form=form))
            assert losses[f"covariance_{form}"] == pytest.approx(covariance_loss(frame_o, protected, form=form))
            assert losses[f"variance_{form}"] == pytest.approx(
                covariance_loss(frame_o, protected, form=form, diagonal_only=True))
            assert losses[f"correlation_{form}"] == pytest.approx(
                correlation_loss(frame_o, protected, form=form, method=method))
        assert losses["mean_max"] == pytest.approx(mean_max_loss(frame_o, protected))
        assert losses["variance_arctan"] == pytest.approx(variance_arctan_loss(frame_o, protected))
        raw, normalised = inverse_correlation_loss(frame_o, protected, method=method)
        assert losses["inverse_correlation_raw"] == pytest.approx(raw)
        assert losses["inverse_correlation_normalised"] == pytest.approx(normalised)
