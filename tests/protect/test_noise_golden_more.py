"""``protect.add_noise`` against sdcMicro 5.8.1's ``addNoise`` (methods additive, correlated,
correlated2, restr, outdect, ROMM), with and without missing values, given sdcMicro's random part.

Expected values: ``tests/data/sdcmicro/golden_more/m9_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R`` and README). Each call ran after ``set.seed``; the same seed then redrew what
``addNoise`` drew, saved as standard-normal draws (``m9_addNoise_draws.csv``; outdect's in
``m9_addNoise.json``) with the estimates sdcMicro computed on the way: MASS ``mvrnorm``'s Sigma and its
eigen-decomposition, robustbase ``covMcd``'s centre and covariance, the 99% quantiles, the chi-square
limit and the outliers. R rebuilt every output from those saved parts exactly (``check`` = 0). ROMM:
``m9_addNoise_ROMM.json``, R's N x N matrix M with the output, on the first 60 records.

The project is given the same random part: a ``numpy.random.Generator`` whose ``standard_normal``
hands out R's draws in the shape asked for, robustbase's ``covMcd`` estimates for the project's MCD, and
R's eigenvectors for :func:`~sdc_dagster.protect.noise.mvrnorm_factor` (LAPACK chooses each
eigenvector's sign; the test checks the project's factor equals R's up to those signs). Inputs:
CASCrefmicrodata's AGI, EMCONTRB, FEDTAX, PTOTVAL, STATETAX (``casc``); the same with AGI missing in
every 7th record and FEDTAX in every 11th from the 3rd (``cascna``); FEDTAX missing in every 3rd record
(``sparse``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import add_noise, noise
from sdc_dagster.protect.noise import mvrnorm_factor, outlier_records, restricted_noise_factor

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
CALLS = json.loads((GOLDEN / "m9_addNoise.json").read_text())["calls"]
OUTPUT = pd.read_csv(GOLDEN / "m9_addNoise.csv")
DRAWS = pd.read_csv(GOLDEN / "m9_addNoise_draws.csv")
VC = ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
M = len(VC)


def _input(name: str) -> pd.DataFrame:
    data = pd.read_csv(DATA / "CASCrefmicrodata.csv")[VC].astype(float)
    if name.startswith("cascna"):
        data.loc[np.arange(6, len(data), 7), "AGI"] = np.nan
        data.loc[np.arange(2, len(data), 11), "FEDTAX"] = np.nan
    elif name.startswith("sparse"):
        data.loc[np.arange(0, len(data), 3), "FEDTAX"] = np.nan
    return data


def _expected(name: str) -> np.ndarray:
    return OUTPUT[[f"{name}__{v}" for v in VC]].to_numpy()


def _draws(name: str) -> np.ndarray:
    """R's standard-normal draws as an N x m matrix, column j the j-th rnorm(N) (for correlated:
    mvrnorm's matrix(rnorm(m * N), N))."""
    return DRAWS[[f"{name}__z{j}" for j in range(1, M + 1)]].to_numpy()


class RDraws(np.random.Generator):
    """A Generator whose ``standard_normal`` returns R's draws, one saved array per call, in the shape
    the caller asks for (checked)."""

    def __init__(self, *arrays: np.ndarray):
        super().__init__(np.random.PCG64(0))
        self.arrays = list(arrays)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        array = self.arrays.pop(0)
        assert array.shape == tuple(size)
        return array.copy()


def _column_major(values, rows: int) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(rows, M, order="F")


def _assert_agrees(out: pd.DataFrame, expected: np.ndarray) -> None:
    got = out[VC].to_numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))  # the same cells stay missing
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-6, equal_nan=True)


def _noise_percent(name: str) -> float:
    return float(CALLS[name]["noise"])


@pytest.mark.parametrize("name", ["casc_additive", "cascna_additive"])
def test_additive_noise_agrees_given_rs_draws(name):
    """x + N(0, (noise/100 · sd_j)^2), sd_j over the observed values; missing values stay missing."""
    out = add_noise(_input(name), VC, method="additive", noise=_noise_percent(name), random_state=RDraws(_draws(name)))
    _assert_agrees(out, _expected(name))


@pytest.mark.parametrize("name", ["casc_correlated2", "cascna_correlated2"])
def test_correlated2_noise_agrees_given_rs_draws(name):
    """d·x + (1 - d)·mean_j + delta·sd_j·z with d = sqrt(1 - delta^2) (sdcMicro's rnorm(N, mean =
    (1 - d)/delta · mean_j, sd = sd_j) scaled by delta), delta = 0.2."""
    delta = float(CALLS[name]["delta"])
    out = add_noise(_input(name), VC, method="correlated2", delta=delta, random_state=RDraws(_draws(name)))
    _assert_agrees(out, _expected(name))


@pytest.mark.parametrize("name", ["casc_correlated", "cascna_correlated", "sparse_correlated"])
def test_correlated_noise_agrees_given_rs_draws_and_eigenvectors(name, monkeypatch):
    """x + Z F' with F = V diag(sqrt(lambda)) of Sigma = noise/100 · cov(na.omit(x)): the project's
    Sigma (the covariance of the complete records only) is sdcMicro's, its factor is R's up to the
    sign of each eigenvector, and given R's eigenvectors and draws the output is sdcMicro's."""
    call = CALLS[name]
    sigma = _column_major(call["sigma"], M)
    vectors = _column_major(call["eigen_vectors"], M)
    r_factor = vectors * np.sqrt(np.asarray(call["eigen_values"]))
    data = _input(name)
    assert int((~data.isna().any(axis=1)).sum()) == call["n_complete"]

    project_factor = mvrnorm_factor(sigma)
    signs = np.sign(np.sum(project_factor * r_factor, axis=0))
    np.testing.assert_allclose(project_factor * signs, r_factor, rtol=1e-9, atol=1e-9 * np.abs(r_factor).max())

    seen = []

    def factor_with_rs_signs(covariance):
        seen.append(covariance)
        return r_factor

    monkeypatch.setattr(noise, "mvrnorm_factor", factor_with_rs_signs)
    out = add_noise(data, VC, method="correlated", noise=_noise_percent(name), random_state=RDraws(_draws(name).T))
    np.testing.assert_allclose(seen[0], sigma, rtol=1e-12)
    _assert_agrees(out, _expected(name))


@pytest.mark.parametrize("name", ["casc_outdect", "cascna_outdect", "sparse_outdect"])
def test_outdect_agrees_given_rs_mcd_and_draws(name, monkeypatch):
    """Outliers: above a column's 99% quantile (R's type 7, observed values) or with a robust distance
    from robustbase ``covMcd(na.omit(x), alpha = 1/2)`` above sqrt(chi2_0.975(m)); records with a
    missing value have no distance. Only they get noise N(0, (1.96 · sd_j / sqrt(N) · noise/100)^2)."""
    call = CALLS[name]
    data = _input(name)
    x = data[VC].to_numpy()
    np.testing.assert_allclose(np.nanquantile(x, 0.99, axis=0), call["q99"], rtol=1e-15)
    centre, covariance = np.asarray(call["mcd_center"]), _column_major(call["mcd_cov"], M)
    fitted_on = []

    def rs_covmcd(complete, *, random_state):
        fitted_on.append(len(complete))
        return centre, covariance

    monkeypatch.setattr(noise, "covmcd", rs_covmcd)
    outliers = np.flatnonzero(outlier_records(x, RDraws())) + 1
    assert fitted_on == [call["n_complete"]]
    np.testing.assert_array_equal(outliers, call["outliers"])
    k = len(outliers)
    draws = _column_major(call["z"], k)
    out = add_noise(data, VC, method="outdect", noise=_noise_percent(name), random_state=RDraws(draws))
    _assert_agrees(out, _expected(name))
    sd = np.nanstd(x, axis=0, ddof=1)
    np.testing.assert_allclose(1.96 * sd / np.sqrt(len(x)) * _noise_percent(name) / 100, call["scale"], rtol=1e-14)


def test_outdect_robust_distances_are_rs_given_rs_mcd():
    """sdcMicro's ``rd`` (NA for records with a missing value) from the saved covMcd estimate, by hand."""
    call = CALLS["cascna_outdect"]
    x = _input("cascna")[VC].to_numpy()
    diff = x - np.asarray(call["mcd_center"])
    distance = np.sqrt(np.einsum("ij,ij->i", diff @ np.linalg.inv(_column_major(call["mcd_cov"], M)), diff))
    np.testing.assert_allclose(distance, OUTPUT["cascna_outdect__robust_distance"], rtol=1e-10, equal_nan=True)
    assert np.isnan(OUTPUT["cascna_outdect__robust_distance"]).sum() == np.isnan(x).any(axis=1).sum()


@pytest.mark.parametrize("name", ["casc_restr", "cascna_restr"])
def test_restr_constant_and_sdcmicros_shift(name):
    """"restr": sdcMicro draws nothing (the project adds Kim's noise e ~ N(0, a·Sigma), its documented
    deviation); its constant c = sqrt((N - 1)/(N + N·a - 1)) for N >= 500 is the project's. sdcMicro's
    shift d_j = (1 - c)·mean_j is added to a data.frame, so R recycles d down the columns: record i
    (from 0) of every column gets d_{i mod 5} (N = 1080 is a multiple of 5), where the project (given
    zero noise) adds d_j to column j. The two differ by exactly d_{i mod 5} - d_j."""
    call = CALLS[name]
    data = _input(name)
    n = len(data)
    c = restricted_noise_factor(n, _noise_percent(name) / 100)
    assert c == pytest.approx(call["c"], rel=1e-15)
    assert c == pytest.approx(np.sqrt((n - 1) / (n + n * 1.5 - 1)), rel=1e-15)
    d = (1 - c) * np.nanmean(data[VC].to_numpy(), axis=0)
    np.testing.assert_allclose(d, call["d"], rtol=1e-12)
    out = add_noise(data, VC, method="restr", noise=_noise_percent(name), random_state=RDraws(np.zeros((M, n))))
    recycled = d[np.arange(n) % M][:, None] - d[None, :]
    _assert_agrees(out[VC] + recycled, _expected(name))


ROMM = json.loads((GOLDEN / "m9_addNoise_ROMM.json").read_text())


@pytest.mark.parametrize("name", ["casc60_p0.001", "casc60_p0.5"])
def test_romm_agrees_given_rs_matrix(name):
    """x* = T x with T the Gram-Schmidt orthonormalisation of the columns of I + p M (Ting, Fienberg &
    Trottini 2008); given sdcMicro's M (R's rnorm(N * N), column-major) the project's T x is
    sdcMicro's, on the first 60 records of casc."""
    call = ROMM[name]
    n = call["N"]
    data = _input("casc").iloc[:n]
    matrix = np.asarray(call["M"], dtype=float).reshape(n, n, order="F")
    out = add_noise(data, VC, method="ROMM", p=call["p"], random_state=RDraws(matrix))
    assert out.attrs["romm_blocks"] == 1
    _assert_agrees(out, _column_major(call["xm"], n))


def test_romm_with_missing_values_refused_where_sdcmicro_blanks_whole_columns():
    """sdcMicro's T x turns every value of a column holding a missing value into NA (14 missing values
    in AGI and FEDTAX of cascna's first 60 records became 120); the project refuses instead."""
    call = ROMM["cascna60_p0.1"]
    data = _input("cascna").iloc[: call["N"]]
    holed = [column for column in VC if data[column].isna().any()]
    assert call["missing_before"] == int(data.isna().sum().sum()) == 14
    assert call["missing_after"] == len(holed) * call["N"] == 120
    with pytest.raises(SDCInputError, match="ROMM mixes all records"):
        add_noise(data, VC, method="ROMM", p=call["p"], random_state=1)
