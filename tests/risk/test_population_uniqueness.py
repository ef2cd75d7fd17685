"""Population uniqueness (ARX's Pitman and Zayatz estimates): hand computations and the likelihood
equations of Pitman's sampling formula (Hoshino 2001), written out term by term here."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

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
