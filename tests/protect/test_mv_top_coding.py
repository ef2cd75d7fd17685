"""Multivariate top coding (sdcMicro ``mvTopCoding``): records beyond the chi-square quantile of the
squared Mahalanobis distance are pulled towards the centre onto the ellipsoid d^2 = quantile."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import apply_plan, mv_top_coding
from sdc_dagster.report.content import step_sentence

# With 2 degrees of freedom the chi-square quantile is closed-form: chi^2_{1-alpha, 2} = -2 ln(alpha),
# so alpha = exp(-1) puts the ellipsoid at d^2 = 2 exactly.
ALPHA_Q2 = float(np.exp(-1.0))


@pytest.fixture
def diamond():
    # Seven points, centred on (10, 20) after the shift; in centred coordinates
    # (1,1), (-1,-1), (2,2), (-2,-2), (1,-1), (-1,1), (0,0).
    centred = np.array([[1, 1], [-1, -1], [2, 2], [-2, -2], [1, -1], [-1, 1], [0, 0]], dtype=float)
    return pd.DataFrame(centred + [10.0, 20.0], columns=["a", "b"], index=list("pqrstuv"))


def test_classical_hand_computed(diamond):
    # Mean (10, 20). Sample covariance (divisor n - 1 = 6) of the centred points:
    #   Sxx = Syy = (1 + 1 + 4 + 4 + 1 + 1) / 6 = 2,  Sxy = (1 + 1 + 4 + 4 - 1 - 1) / 6 = 4/3.
    #   det S = 4 - 16/9 = 20/9,  S^-1 = (9/20) [[2, -4/3], [-4/3, 2]] = [[0.9, -0.6], [-0.6, 0.9]].
    # d^2 = 0.9 u^2 + 0.9 v^2 - 1.2 u v for a centred point (u, v):
    #   (1,1), (-1,-1): 0.6;  (2,2), (-2,-2): 3.6 + 3.6 - 4.8 = 2.4;  (1,-1), (-1,1): 0.9 + 0.9 + 1.2 = 3;  (0,0): 0.
    # Quantile chi^2_{1 - e^-1, 2} = 2: the four points with d^2 2.4 and 3 are pulled.
    #   (2,2):  a = sqrt(2 / 2.4) = sqrt(5/6) = 0.9128709291752769 -> (10, 20) + a (2, 2) = (11.825741858, 21.825741858)
    #   (1,-1): a = sqrt(2 / 3) = 0.816496580927726              -> (10.816496581, 19.183503419)
    out = mv_top_coding(diamond, ["a", "b"], alpha=ALPHA_Q2, estimator="classical")
    a22, a1 = np.sqrt(5 / 6), np.sqrt(2 / 3)
    expected = pd.DataFrame(
        {"a": [11, 9, 10 + 2 * a22, 10 - 2 * a22, 10 + a1, 10 - a1, 10],
         "b": [21, 19, 20 + 2 * a22, 20 - 2 * a22, 20 - a1, 20 + a1, 20]},
        index=list("pqrstuv"))
    pd.testing.assert_frame_equal(out, expected, rtol=1e-12)
    assert out.loc["r", "a"] == pytest.approx(11.825741858350554, abs=1e-9)
    assert out.attrs["mv_top_coded_records"] == 4


def test_default_alpha_leaves_the_diamond_alone(diamond):
    # sdcMicro's default alpha 0.025: chi^2_{0.975, 2} = -2 ln 0.025 = 7.3778; the largest d^2 is 3.
    out = mv_top_coding(diamond, ["a", "b"], estimator="classical")
    pd.testing.assert_frame_equal(out, diamond.astype(float))
    assert out.attrs["mv_top_coded_records"] == 0


def test_given_center_and_covariance(diamond):
    # sdcMicro's center and cov arguments: centre (10, 20), S = identity. Quantile 2 (alpha = e^-1):
    # (2,2) has d^2 = 8, a = sqrt(2/8) = 1/2 -> (11, 21); (1,-1) has d^2 = 2, not above 2: kept;
    # (1,1) likewise kept.
    out = mv_top_coding(diamond, ["a", "b"], alpha=ALPHA_Q2, center=[10, 20], covariance=np.eye(2))
    assert out.loc["r"].tolist() == pytest.approx([11.0, 21.0], abs=1e-12)
    assert out.loc["s"].tolist() == pytest.approx([9.0, 19.0], abs=1e-12)
    changed = (out != diamond).any(axis=1)
    assert changed[changed].index.tolist() == ["r", "s"]


def test_one_column_is_two_sided_winsorisation():
    # p = 1: d^2 = (x - m)^2 / s^2, chi^2_{0.95, 1} = 1.959964^2: the values beyond m +- 1.959964 s are
    # set to m +- 1.959964 s. Given m = 0, s = 1: 3 -> 1.959964, -5 -> -1.959964, 1 kept.
    frame = pd.DataFrame({"x": [3.0, -5.0, 1.0]})
    out = mv_top_coding(frame, "x", alpha=0.05, center=[0.0], covariance=[[1.0]])
    assert out["x"].tolist() == pytest.approx([1.959963984540054, -1.959963984540054, 1.0], abs=1e-12)


def test_missing_values_are_kept_and_left_out_of_the_estimate(diamond):
    # A record missing a value has no distance: it keeps its values; the estimate uses the complete records,
    # so the hand-computed result of the diamond is unchanged for them.
    frame = pd.concat([diamond, pd.DataFrame({"a": [100.0], "b": [np.nan]}, index=["w"])])
    out = mv_top_coding(frame, ["a", "b"], alpha=ALPHA_Q2, estimator="classical")
    assert out.loc["w", "a"] == 100.0 and np.isnan(out.loc["w", "b"])
    expected = mv_top_coding(diamond, ["a", "b"], alpha=ALPHA_Q2, estimator="classical")
    pd.testing.assert_frame_equal(out.loc[diamond.index], expected)


def test_robust_estimate_pulls_planted_outliers_that_mask_the_classical_one():
    # 300 records on a strongly correlated cloud (correlation 0.95, unit variances) and 60 records far
    # against the correlation (on the line b = -a, from (2, -2) to (3, -3)). The planted records inflate the
    # classical covariance along b = -a, so that most of them look ordinary; the MCD ignores them.
    rng = np.random.default_rng(7)
    cloud = rng.multivariate_normal([0, 0], [[1, 0.95], [0.95, 1]], size=300)
    planted = np.column_stack([np.linspace(2, 3, 60), -np.linspace(2, 3, 60)])
    frame = pd.DataFrame(np.vstack([cloud, planted]), columns=["a", "b"])
    robust = mv_top_coding(frame, ["a", "b"], random_state=1)
    classical = mv_top_coding(frame, ["a", "b"], estimator="classical")
    moved_robust = (robust != frame).any(axis=1).to_numpy()
    moved_classical = (classical != frame).any(axis=1).to_numpy()
    assert moved_robust[300:].all()
    assert moved_classical[300:].sum() < 10
    # Each planted record moves towards the centre of the cloud, about the origin: distance shrinks.
    assert (np.hypot(robust["a"], robust["b"])[300:] < np.hypot(frame["a"], frame["b"])[300:]).all()
    # The same seed gives the same result.
    pd.testing.assert_frame_equal(robust, mv_top_coding(frame, ["a", "b"], random_state=1))
    assert not frame.equals(robust)


def test_input_is_not_modified_and_index_kept(diamond):
    before = diamond.copy()
    out = mv_top_coding(diamond, ["a", "b"], alpha=0.5, estimator="classical")
    pd.testing.assert_frame_equal(diamond, before)
    assert out.index.equals(diamond.index)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0}, r"alpha: must be a number in \(0, 1\)"),
        ({"alpha": 1.5}, r"alpha: must be a number in \(0, 1\)"),
        ({"estimator": "mcd"}, r"estimator: must be one of 'robust', 'classical'"),
        ({"center": [10, 20]}, "center, covariance: give both"),
        ({"center": [10], "covariance": np.eye(2)}, "center: must be 2 finite numbers"),
        ({"center": [10, 20], "covariance": [[1, 2], [0, 1]]}, "covariance: must be a finite symmetric 2 x 2"),
        ({"center": [10, 20], "covariance": [[1, 1], [1, 1]]}, "singular or not positive definite"),
    ],
)
def test_bad_parameters(diamond, kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        mv_top_coding(diamond, ["a", "b"], **kwargs)


def test_bad_data():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "z", "w"], "c": [1.0, 1.0, 1.0, 1.0]})
    with pytest.raises(SDCInputError, match="column 'b': must be numeric"):
        mv_top_coding(frame, ["a", "b"])
    with pytest.raises(SDCInputError, match="column 'zz' is not in the data"):
        mv_top_coding(frame, ["a", "zz"])
    with pytest.raises(SDCInputError, match="classical covariance is singular"):
        mv_top_coding(frame, ["a", "c"], estimator="classical")
    with pytest.raises(SDCInputError, match="needs more than 2 complete records, got 2"):
        mv_top_coding(frame.iloc[:2], ["a", "c"], estimator="classical")


def test_plan_step_records_the_seed(diamond):
    steps = [{"method": "mv_top_coding", "columns": ["a", "b"], "alpha": 0.3, "estimator": "classical"}]
    result = apply_plan(diamond, steps, keys=[], random_state=5)
    record = result.steps[0]
    assert record["method"] == "mv_top_coding"
    assert record["random_state"] is None  # classical: nothing random
    # alpha 0.3: chi^2_{0.7, 2} = -2 ln 0.3 = 2.408; only (1,-1), (-1,1) (d^2 = 3) lie beyond it.
    assert record["reported"] == {"mv_top_coded_records": 2}
    sentence = step_sentence(record)
    assert sentence.startswith("Multivariate top coding (outliers pulled onto the chi-square ellipsoid")
    assert "(2 records pulled onto the ellipsoid)" in sentence and "changed 4 values (a 2, b 2)" in sentence
    assert record["values_changed"] == {"a": 2, "b": 2}
    # Whole-number columns keep the pulled values (not rounded as after microaggregation and noise): rounded,
    # a = sqrt(2.408 / 3) = 0.8959: (10.896, 19.104) would be the original (11, 19) again.
    assert "rounded_to_whole_numbers" not in record
    a = np.sqrt(-2 * np.log(0.3) / 3)
    assert result.data.loc["t"].tolist() == pytest.approx([10 + a, 20 - a], abs=1e-12)
    cloud = pd.DataFrame(np.random.default_rng(3).normal(size=(50, 2)), columns=["a", "b"])
    robust = apply_plan(cloud, [{"method": "mv_top_coding", "columns": ["a", "b"]}], keys=[], random_state=5)
    seed = robust.steps[0]["random_state"]
    assert isinstance(seed, int)  # the MCD's seed, recorded
    pd.testing.assert_frame_equal(robust.data, mv_top_coding(cloud, ["a", "b"], random_state=seed))


def test_plan_step_with_given_estimates_and_its_validation(diamond):
    # the centre and covariance given in the step (sdcMicro's center and cov): as test_given_center_and_covariance
    steps = [{"method": "mv_top_coding", "columns": ["a", "b"], "alpha": ALPHA_Q2, "center": [10, 20],
              "covariance": [[1, 0], [0, 1]]}]
    result = apply_plan(diamond, steps, keys=[], random_state=1)
    assert result.data.loc["r"].tolist() == pytest.approx([11.0, 21.0], abs=1e-12)
    assert result.steps[0]["random_state"] is None  # given estimates: nothing random
    with pytest.raises(SDCInputError, match="parameter 'estimator' must be one of 'robust', 'classical'"):
        apply_plan(diamond, [{"method": "mv_top_coding", "columns": ["a", "b"], "estimator": "mve"}], keys=[])
    with pytest.raises(SDCInputError, match="parameter 'center' must be a list"):
        apply_plan(diamond, [{"method": "mv_top_coding", "columns": ["a", "b"], "center": 10,
                              "covariance": [[1, 0], [0, 1]]}], keys=[])


def test_robust_exact_fit_is_refused(diamond):
    # (1,1), (-1,-1), (2,2), (-2,-2), (0,0): every h = 4 subset lies on the line b = a (robustbase's exact fit).
    with pytest.raises(SDCInputError, match="robust \\(MCD\\) covariance is singular"):
        mv_top_coding(diamond.iloc[[0, 1, 2, 3, 6]], ["a", "b"])


# --- properties -----------------------------------------------------------------------------------


@st.composite
def clouds(draw):
    p = draw(st.integers(1, 3))
    n = draw(st.integers(p + 2, 30))
    x = draw(arrays(np.float64, (n, p), elements=st.floats(-1e3, 1e3, allow_nan=False, width=32)))
    alpha = draw(st.floats(0.01, 0.9))
    return x, alpha


@settings(max_examples=150, deadline=None)
@given(clouds())
def test_properties_classical(case):
    x, alpha = case
    n, p = x.shape
    centre = x.mean(axis=0)
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    assume(np.linalg.cond(cov) < 1e8 and np.linalg.eigvalsh(cov).min() > 1e-6)
    columns = [f"c{j}" for j in range(p)]
    frame = pd.DataFrame(x, columns=columns)
    out = mv_top_coding(frame, columns, alpha=alpha, estimator="classical").to_numpy()
    inverse = np.linalg.inv(cov)
    d2 = np.einsum("ij,jk,ik->i", x - centre, inverse, x - centre)
    quantile = stats.chi2.ppf(1 - alpha, p)
    inside = d2 <= quantile
    # untouched rows unchanged, bit for bit
    assert np.array_equal(out[inside], x[inside])
    # changed rows lie on the boundary d^2 = quantile
    new_d2 = np.einsum("ij,jk,ik->i", out - centre, inverse, out - centre)
    assert np.allclose(new_d2[~inside], quantile, rtol=1e-7)
    # direction from the centre preserved: x* - m = a (x - m) with 0 < a < 1
    before, after = x[~inside] - centre, out[~inside] - centre
    ratio = np.einsum("ij,ij->i", after, before) / np.einsum("ij,ij->i", before, before)
    assert ((ratio > 0) & (ratio < 1)).all()
    assert np.allclose(after, ratio[:, None] * before, atol=1e-9 * (1 + np.abs(x - centre).max()))
