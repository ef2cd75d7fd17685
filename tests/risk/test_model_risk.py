"""Model-based risk (sdcMicro ``modRisk``, Skinner & Shlomo 2008) and the log-linear fits under it.

Expected values come from sdcMicro's own test file (tests/testthat/test_modRisks.R, where they are
printed to 2-7 digits), from hand computations on tiny tables (closed formulas noted at each test),
and from properties every maximum-likelihood fit has.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.numerics.loglinear import design_matrix, hierarchical_closure, ipf_fit, poisson_fit, poisson_irls
from sdc_dagster.risk import model_risk
from sdc_dagster.risk.model_risk import parse_formula

KEYS = ["Var1", "Var2", "Var3"]


@pytest.fixture
def sdcmicro_sample() -> pd.DataFrame:
    """sdcMicro's test data of test_modRisks.R: ``set.seed(123)``, then the columns
    ``round(runif(10, 1, 3))``, ``round(runif(10, 1, 2))``, ``round(runif(10, 1, 5))`` as factors and
    weights 100. R's first thirty uniforms after set.seed(123) are 0.2875775 0.7883051 0.4089769
    0.8830174 0.9404673 0.0455565 0.5281055 0.8924190 0.5514350 0.4566147 | 0.9568333 0.4533342
    0.6775706 0.5726334 0.1029247 0.8998250 0.2460877 0.0420595 0.3279207 0.9545036 | 0.8895393
    0.6928034 0.6405068 0.9942698 0.6557058 0.7085305 0.5440660 0.5941420 0.2891597 0.1471136; the
    independence fit these codes give (margins 1:5:4, 5:5, 2:2:4:2) is the fitted table the test file
    prints."""
    return pd.DataFrame(
        {
            "Var1": [2, 3, 2, 3, 3, 1, 2, 3, 2, 2],
            "Var2": [2, 1, 2, 2, 1, 2, 1, 1, 1, 2],
            "Var3": [5, 4, 4, 5, 4, 4, 3, 3, 2, 2],
            "weights": [100.0] * 10,
        }
    )


# test_modRisks.R, data.frame without missing values: (method, bound, gr1, gr2, digits)
PUBLISHED = [
    ("default", math.inf, 0.553, 0.705, 3),
    ("CE", math.inf, 0.542, 0.699, 3),
    ("PML", math.inf, 0.553, 0.705, 3),
    ("weightedLLM", math.inf, 0.408, 0.613, 3),
    ("IPF", math.inf, 0.552916, 0.7053842, (6, 7)),
    ("default", 1.5, 0.622, 0.794, 3),
    ("CE", 1.5, 0.609, 0.786, 3),
    ("PML", 1.5, 0.622, 0.794, 3),
    ("weightedLLM", 1.5, 0.459, 0.69, 3),
    ("IPF", 1.5, 0.622, 0.794, 3),
]

# test_modRisks.R: the fitted table (fr[7]) to 2 digits, cells in sorted key order, Var3 fastest
INDEPENDENCE = [0.1, 0.1, 0.2, 0.1] * 2 + [0.5, 0.5, 1.0, 0.5] * 2 + [0.4, 0.4, 0.8, 0.4] * 2
FITTED = {
    "default": INDEPENDENCE,
    "PML": INDEPENDENCE,
    "IPF": INDEPENDENCE,
    "CE": [0.10, 0.10, 0.20, 0.10, 0.10, 0.10, 0.21, 0.10, 0.52, 0.52, 0.95, 0.47, 0.52, 0.47, 1.03, 0.52,
           0.39, 0.43, 0.85, 0.39, 0.38, 0.38, 0.76, 0.42],
    "weightedLLM": [0.03, 0.05, 0.01, 0.02, 0.06, 0.13, 0.63, 0.06, 0.53, 1.07, 0.01, 0.02, 1.34, 0.13, 0.65,
                    1.25, 0.01, 0.55, 2.68, 0.01, 0.03, 0.07, 0.02, 0.63],
}


@pytest.mark.parametrize("method, bound, gr1, gr2, digits", PUBLISHED)
def test_sdcmicro_published_risks(sdcmicro_sample, method, bound, gr1, gr2, digits):
    result = model_risk(sdcmicro_sample, KEYS, weight="weights", method=method, bound=bound)
    d1, d2 = digits if isinstance(digits, tuple) else (digits, digits)
    assert round(result["gr1"], d1) == gr1
    assert round(result["gr2"], d2) == gr2


@pytest.mark.parametrize("method", sorted(FITTED))
def test_sdcmicro_published_fitted_table(sdcmicro_sample, method):
    cells = model_risk(sdcmicro_sample, KEYS, weight="weights", method=method)["cells"]
    assert list(cells.columns) == KEYS + ["fk", "weight_sum", "inclusion", "Fk"]
    assert len(cells) == 3 * 2 * 4
    assert cells["Var1"].iloc[0] == "1" and cells["Var3"].tolist()[:4] == ["2", "3", "4", "5"]
    np.testing.assert_array_equal(np.round(cells["Fk"].to_numpy(), 2), FITTED[method])
    # fr[8] of the test file: the inclusion probabilities of the 9 cells that hold records
    inclusion = cells.loc[cells["fk"] > 0, "inclusion"].round(2).tolist()
    assert inclusion == [0.01] * 7 + [0.02, 0.01]


def test_independence_fit_and_risks_by_hand():
    """2x2 table, records (x,u) x3 with weight 2, (x,v) weight 4, (y,u) weight 10: the independence
    fit is row x column / n = 16/5, 4/5, 4/5, 1/5. Sample uniques (x,v): v = (1 - 1/4) 0.8 = 0.6;
    (y,u): v = (1 - 1/10) 0.8 = 0.72; K = 3 cells with records."""
    data = pd.DataFrame({"a": ["x", "x", "x", "x", "y"], "b": ["u", "u", "u", "v", "u"],
                         "w": [2.0, 2.0, 2.0, 4.0, 10.0]})
    result = model_risk(data, ["a", "b"], weight="w")
    np.testing.assert_allclose(result["cells"]["Fk"], [3.2, 0.8, 0.8, 0.2], rtol=1e-9)
    assert result["cells"]["fk"].tolist() == [3, 1, 1, 0]
    assert result["cells"]["weight_sum"].tolist() == [6.0, 4.0, 10.0, 0.0]
    np.testing.assert_allclose(result["cells"]["inclusion"], [1.5, 0.25, 0.1, 0.0])
    assert result["gr1"] == pytest.approx((math.exp(-0.6) + math.exp(-0.72)) / 3, rel=1e-9)
    expected_gr2 = ((1 - math.exp(-0.6)) / 0.6 + (1 - math.exp(-0.72)) / 0.72) / 3
    assert result["gr2"] == pytest.approx(expected_gr2, rel=1e-9)
    assert result["formula"] == "~a + b" and result["method"] == "default"
    # bound = 1 keeps the two unique cells only: K = 2
    bounded = model_risk(data, ["a", "b"], weight="w", bound=1)
    assert bounded["gr1"] == pytest.approx((math.exp(-0.6) + math.exp(-0.72)) / 2, rel=1e-9)
    # a bound below 1 counts no cell: sdcMicro sums an empty set
    assert model_risk(data, ["a", "b"], weight="w", bound=0.5)["gr1"] == 0.0


@pytest.mark.parametrize("formula", ["~a + b + a:b", "~a*b", "a:b", "~ `a` * `b`"])
def test_saturated_model_reproduces_the_counts(formula):
    """The saturated model fits every cell exactly (f_k = lambda_k; the empty cell's mean tends to
    0), so a sample unique has v = (1 - 1/w) * 1: with w = 4 and 10, gr1 = (e^-0.75 + e^-0.9) / 3."""
    data = pd.DataFrame({"a": ["x", "x", "x", "x", "y"], "b": ["u", "u", "u", "v", "u"],
                         "w": [2.0, 2.0, 2.0, 4.0, 10.0]})
    result = model_risk(data, ["a", "b"], weight="w", formula=formula)
    np.testing.assert_allclose(result["cells"]["Fk"].to_numpy()[:3], [3.0, 1.0, 1.0], rtol=1e-8)
    assert result["cells"]["Fk"].iloc[3] < 1e-6
    assert result["gr1"] == pytest.approx((math.exp(-0.75) + math.exp(-0.9)) / 3, rel=1e-7)
    assert result["formula"] == "~a + b + a:b"


def test_weight_one_gives_the_limit_of_gr2():
    """A sample unique of weight 1 is the whole population cell: v = 0, exp(-v) = 1 and the limit of
    (1 - exp(-v)) / v is 1 (sdcMicro divides 0 by 0)."""
    data = pd.DataFrame({"a": ["x", "y"], "w": [1.0, 1.0]})
    result = model_risk(data, ["a"], weight="w")
    assert result["gr1"] == 1.0 and result["gr2"] == 1.0


def test_records_with_a_missing_key_are_left_out():
    """test_modRisks.R's data with missing values: the keys observed in full are (2,2,5), (3,2,5),
    (1,2,4), whose independence fit is 1/3 and 2/3 in the cells (v1, 2, 4) and (v1, 2, 5), as the
    test file prints. With every weight 100: gr1 = (e^{-0.99/3} + 2 e^{-0.99*2/3}) / 3 (the test file's
    0.582 comes from weights of which some are missing, which sdcMicro sums to an inclusion of 0 and
    model_risk refuses)."""
    data = pd.DataFrame(
        {
            "Var1": [2, None, 2, 3, 3, 1, None, 3, None, 2],
            "Var2": [2, 1, None, 2, None, 2, 1, 1, 1, None],
            "Var3": [5, None, 4, 5, 4, 4, 3, None, 2, 2],
            "weights": [100.0] * 10,
        }
    )
    result = model_risk(data, KEYS, weight="weights")
    cells = result["cells"]
    assert cells[KEYS].astype(str).agg(",".join, axis=1).tolist() == [
        "1,2,4", "1,2,5", "2,2,4", "2,2,5", "3,2,4", "3,2,5"]
    np.testing.assert_allclose(cells["Fk"], [1 / 3, 2 / 3] * 3, rtol=1e-9)
    expected = (math.exp(-0.99 / 3) + 2 * math.exp(-0.99 * 2 / 3)) / 3
    assert result["gr1"] == pytest.approx(expected, rel=1e-9)


def test_keys_compared_as_strings():
    """1 (a number) and "1" (text) are one category; cells listed in sorted string order."""
    data = pd.DataFrame({"a": pd.Series([1, "1", "2", 2], dtype=object), "w": [5.0] * 4})
    cells = model_risk(data, ["a"], weight="w")["cells"]
    assert cells["a"].tolist() == ["1", "2"] and cells["fk"].tolist() == [2, 2]


def test_pml_rounds_the_scaled_weights_half_to_even():
    """PML's response is round(W_k n / sum w): here n / sum w = 3 / 12 = 0.25 and the weight sums 2,
    10 give 0.5 -> 0 and 2.5 -> 2 (R rounds half to even); one main effect fits the response itself,
    so the fitted table is (0, 2) while the sample counts are (1, 2)."""
    data = pd.DataFrame({"a": ["x", "y", "y"], "w": [2.0, 5.0, 5.0]})
    cells = model_risk(data, ["a"], weight="w", method="PML")["cells"]
    assert cells["fk"].tolist() == [1, 2]
    np.testing.assert_allclose(cells["Fk"], [0.0, 2.0], atol=1e-6)


def test_numeric_key_with_two_values_spans_the_same_model():
    """A numeric predictor on two values spans what a factor does: the independence fit of the hand
    computation above, row x column / n = 3.2, 0.8, 0.8, 0.2, with the first key numeric (1, 2)."""
    data = pd.DataFrame({"a": [1, 1, 1, 1, 2], "b": ["u", "u", "u", "v", "u"], "w": [2.0, 2.0, 2.0, 4.0, 10.0]})
    for method in ("default", "IPF"):
        cells = model_risk(data, ["a", "b"], weight="w", numeric=["a"], method=method)["cells"]
        assert cells["a"].tolist() == ["1", "1", "2", "2"]
        np.testing.assert_allclose(cells["Fk"], [3.2, 0.8, 0.8, 0.2], rtol=1e-9)


def test_numeric_key_fits_a_log_linear_trend():
    """One numeric key x in {1, 2, 4} with counts 3, 1, 2: log mu is linear in x (equal slopes
    between the cells) and the likelihood equations sum mu = sum f = 6, sum x mu = sum x f = 13 hold."""
    data = pd.DataFrame({"x": [1, 1, 1, 2, 4, 4], "w": [3.0] * 6})
    cells = model_risk(data, ["x"], weight="w", numeric=["x"])["cells"]
    x, mu = np.array([1.0, 2.0, 4.0]), cells["Fk"].to_numpy()
    assert cells["x"].tolist() == ["1", "2", "4"]
    assert (np.log(mu[2]) - np.log(mu[1])) / 2 == pytest.approx(np.log(mu[1]) - np.log(mu[0]), rel=1e-9)
    assert mu.sum() == pytest.approx(6.0, rel=1e-9) and (x * mu).sum() == pytest.approx(13.0, rel=1e-9)


@pytest.mark.parametrize(
    "numeric, formula, message",
    [
        (["c"], None, "numeric: 'c' is not one of the key variables (a, b)"),
        (["b"], None, "numeric: key 'b' must be a numeric column"),
        (["a"], "~a*b", "numeric: key 'a' is in an interaction"),
    ],
)
def test_bad_numeric_keys(numeric, formula, message):
    data = pd.DataFrame({"a": [1, 2], "b": ["u", "v"], "w": [2.0, 3.0]})
    with pytest.raises(SDCInputError) as caught:
        model_risk(data, ["a", "b"], weight="w", numeric=numeric, formula=formula)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "loglinear"}, "method: must be one of 'default', 'CE', 'PML', 'weightedLLM', 'IPF'"),
        ({"formula": "~a*b", "method": "IPF"}, "method 'IPF' fits main effects only"),
        ({"formula": "~a + bb"}, "'bb' is not one of the key variables (a, b); did you mean 'b'?"),
        ({"formula": "~a"}, "key variable 'b' is not in the model"),
        ({"formula": "~a - b"}, "cannot read 'a - b'"),
        ({"formula": "~a + log(b)"}, "cannot read 'log(b)'"),
        ({"formula": "~"}, "names no term"),
        ({"bound": 0}, "bound: must be a number > 0"),
        ({"bound": "1"}, "bound: must be a number > 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    data = pd.DataFrame({"a": ["x", "y"], "b": ["u", "v"], "w": [2.0, 3.0]})
    with pytest.raises(SDCInputError) as caught:
        model_risk(data, ["a", "b"], weight="w", **kwargs)
    assert message in str(caught.value)


def test_bad_weights_and_data():
    data = pd.DataFrame({"a": ["x", None], "w": [2.0, np.nan]})
    with pytest.raises(SDCInputError, match="weight 'w' has 1 missing values"):
        model_risk(data, ["a"], weight="w")
    with pytest.raises(SDCInputError, match="modRisk needs weights"):
        model_risk(data, ["a"], weight=None)
    with pytest.raises(NotComputable, match="no record has every key observed"):
        model_risk(pd.DataFrame({"a": [None, None], "w": [1.0, 2.0]}), ["a"], weight="w")


def test_table_too_large_is_not_computable():
    data = pd.DataFrame({f"k{j}": np.arange(60) for j in range(4)} | {"w": np.ones(60)})
    with pytest.raises(NotComputable, match="12,960,000 cells"):
        model_risk(data, [f"k{j}" for j in range(4)], weight="w")


def test_parse_formula():
    assert parse_formula("~`age-band` + sex", ["sex", "age-band"]) == [(1,), (0,)]
    with pytest.raises(SDCInputError, match="in backticks"):
        parse_formula("~age-band + sex", ["sex", "age-band"])
    keys = ["a", "b", "c"]
    assert parse_formula("~a + b + c", keys) == [(0,), (1,), (2,)]
    assert parse_formula("a*b + c", keys) == [(0,), (1,), (0, 1), (2,)]
    assert parse_formula("~ a + b:c + c:b + a", keys) == [(0,), (1, 2)]
    assert parse_formula("~a*b:c", keys) == [(0,), (1, 2), (0, 1, 2)]


def test_hierarchical_closure_and_design():
    assert hierarchical_closure([(1, 0)]) == [(0,), (1,), (0, 1)]
    assert hierarchical_closure([(0,), (0, 2)]) == [(0,), (2,), (0, 2)]
    # 3 x 2 table, main effects: intercept, 2 contrasts of the first, 1 of the second
    design = design_matrix((3, 2), [(0,), (1,)]).toarray()
    expected = np.array([[1, 0, 0, 0], [1, 0, 0, 1], [1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 1, 0], [1, 0, 1, 1]])
    np.testing.assert_array_equal(design, expected)
    saturated = design_matrix((3, 2, 2), [(0, 1, 2)])
    assert saturated.shape == (12, 12) and np.linalg.matrix_rank(saturated.toarray()) == 12


def test_no_three_way_interaction_margins():
    """The model [ab][ac][bc] has no closed form; its maximum-likelihood fit matches every observed
    two-way margin (Birch's theorem), whether by IRLS or by IPF (poisson_fit's path without
    covariates)."""
    counts = np.array([5, 1, 2, 7, 3, 0, 4, 6, 2, 2, 8, 1], dtype=float)
    shape = (3, 2, 2)
    margins = [(0, 1), (0, 2), (1, 2)]
    by_irls = poisson_irls(counts, shape, margins).reshape(shape)
    by_ipf = poisson_fit(counts, shape, margins).reshape(shape)
    table = counts.reshape(shape)
    for axis in range(3):
        np.testing.assert_allclose(by_irls.sum(axis=axis), table.sum(axis=axis), rtol=1e-8)
        np.testing.assert_allclose(by_ipf.sum(axis=axis), table.sum(axis=axis), rtol=1e-8)
    np.testing.assert_allclose(by_irls, by_ipf, rtol=1e-7)


def test_offset_scales_the_fit():
    """A model of the intercept alone with offset log(t_c) fits mu_c = n t_c / sum t (the rate model)."""
    counts = np.array([2.0, 5.0, 3.0])
    for fit in (poisson_fit, poisson_irls):  # by IPF from the start exp(offset), and by IRLS
        mu = fit(counts, (3,), [], offset=np.log([1.0, 2.0, 7.0]))
        np.testing.assert_allclose(mu, 10 * np.array([1.0, 2.0, 7.0]) / 10, rtol=1e-9)


def test_offset_with_a_main_effect_by_ipf_and_irls():
    """2 x 2 table, the first variable's main effect and an offset: mu_ij = a_i t_ij with
    a_i = (row total i) / (sum_j t_ij), hand-computable; IPF and IRLS give it."""
    counts = np.array([3.0, 1.0, 2.0, 4.0])
    t = np.array([1.0, 3.0, 2.0, 2.0])
    expected = np.array([4 * 1 / 4, 4 * 3 / 4, 6 * 2 / 4, 6 * 2 / 4])
    for fit in (poisson_fit, poisson_irls):
        np.testing.assert_allclose(fit(counts, (2, 2), [(0,)], offset=np.log(t)), expected, rtol=1e-9)


records = st.lists(
    st.tuples(st.sampled_from("pqr"), st.sampled_from("uv"), st.sampled_from("xyz"), st.integers(1, 50)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(records, st.sampled_from(["default", "IPF", "CE", "PML", "weightedLLM"]))
# two tables whose maximum-likelihood fit does not exist (an empty margin): IRLS once ended in NaN there
@example([("p", "u", "x", 1), ("p", "u", "x", 15), ("q", "u", "y", 1), ("q", "v", "z", 1)], "weightedLLM")
@example([("p", "u", "x", 13), ("q", "u", "y", 1), ("q", "v", "z", 1)], "weightedLLM")
def test_fit_and_risk_invariants(rows, method):
    """Every method's risks are averages of probabilities (0 <= gr1 <= gr2 <= 1, as e^-v <= (1 - e^-v)/v
    for v >= 0); the main-effects fit of the counts matches their one-way margins (the likelihood
    equations X'y = X'mu), IRLS and IPF alike."""
    data = pd.DataFrame(rows, columns=["a", "b", "c", "w"]).astype({"w": float})
    result = model_risk(data, ["a", "b", "c"], weight="w", method=method)
    assert 0.0 <= result["gr1"] <= result["gr2"] + 1e-12 <= 1.0 + 1e-12
    cells = result["cells"]
    assert cells["fk"].sum() == len(data)
    if method in ("default", "IPF"):
        for key in ["a", "b", "c"]:
            sums = cells.groupby(key)[["fk", "Fk"]].sum()
            np.testing.assert_allclose(sums["Fk"], sums["fk"], rtol=1e-7, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=12, max_size=12),
    st.sampled_from([[(0,), (1,), (2,)], [(0, 1), (2,)], [(0, 1), (1, 2)], [(0, 1), (0, 2), (1, 2)]]),
    st.lists(st.floats(0.1, 10.0), min_size=12, max_size=12),
)
def test_ipf_and_irls_agree(counts, terms, offset):
    """Two algorithms, one maximum-likelihood fit: IPF (poisson_fit without covariates) and IRLS agree
    on every cell with a positive fitted mean, with or without an offset, and match the observed
    margins of every term (the likelihood equations), wherever the maximum-likelihood estimate exists
    (Bishop, Fienberg & Holland 1975, §3.7: every observed margin of a decomposable model positive; for
    the model of the three two-way terms, which is not decomposable, every cell positive here). Where it
    does not, IPF converges only sublinearly and the two stop at different points."""
    y = np.asarray(counts, dtype=float) + np.eye(12)[0]  # at least one record
    shape = (3, 2, 2)
    table = y.reshape(shape)
    assume(all((table.sum(axis=tuple(j for j in range(3) if j not in t)) > 0).all() for t in terms))
    assume(len(terms) < 3 or (y > 0).all() or terms == [(0,), (1,), (2,)])
    for log_offset in (None, np.log(offset)):
        by_ipf = poisson_fit(y, shape, terms, offset=log_offset)
        by_irls = poisson_irls(y, shape, terms, offset=log_offset)
        np.testing.assert_allclose(by_ipf, by_irls, rtol=1e-6, atol=1e-6)
        table, fitted = y.reshape(shape), by_ipf.reshape(shape)
        for term in terms:
            axes = tuple(j for j in range(3) if j not in term)
            np.testing.assert_allclose(fitted.sum(axis=axes), table.sum(axis=axes), rtol=1e-8, atol=1e-8)
