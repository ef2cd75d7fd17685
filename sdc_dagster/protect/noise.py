"""Noise addition to continuous variables (SPEC §8.5), with the methods of sdcMicro's ``addNoise``.

With a the noise amount (``amount``, a fraction; sdcMicro's ``noise`` is 100·a, a percentage),
sd_j, Sigma and xbar_j the sample moments of the data (divisor n - 1, missing values left out) and
n the number of records:

* additive:       x* = x + e,  e ~ N(0, (a · sd_j)^2)   independently per variable j (sdcMicro "additive")
* multiplicative: x* = x · (1 + e), e ~ N(0, a^2)       (SPEC ASSUMPTION: x·(1 + e), E e = 0)
* correlated:     x* = x + e,  e ~ N(0, a · Sigma)      (Kim 1986; sdcMicro "correlated", drawn as MASS
  ``mvrnorm`` draws it: :func:`mvrnorm_factor`)
* correlated2:    x* = d·x + (1 - d)·xbar_j + delta·sd_j·e, e ~ N(0, 1), d = sqrt(1 - delta^2)
  (Brand 2002; sdcMicro "correlated2": mean and variance kept in expectation; uses ``delta``, not a)
* restr:          x* = c·(x + e) + (1 - c)·xbar_j,  e ~ N(0, a · Sigma), with sdcMicro's constant
  c = sqrt((n - 1 - a) / ((n + 1)(1 + a))) for n < 500, c = sqrt((n - 1) / (n + n·a - 1)) otherwise,
  so that the expected covariance of x* is Sigma again (Kim 1986, "restricted" noise).
  Deviation, documented: sdcMicro 5.8 computes c and d but leaves out e (its "restr" is then a
  deterministic shrinkage towards the mean that adds no noise); here e is added as in Kim. sdcMicro
  also adds the shift d = (1 - c)·xbar to its data.frame, where R recycles d down the columns (value
  i of the column-major n x m values gets d_{i mod m}, not d_j), a slip the project does not copy
  (tests/protect/test_noise_golden_more.py shows the difference exactly).
* ROMM:           x* = T x, T = the orthonormalised (Gram–Schmidt, i.e. QR with a positive diagonal)
  n x n matrix I + p·M, M standard normal (Ting, Fienberg & Trottini 2008; sdcMicro "ROMM" with
  ``p``). T is orthogonal, so the cross products x*'x* = x'x are kept exactly; records are mixed.
  Needs n^2 memory and n^3 time, so above ``ROMM_MAX_RECORDS`` records (issue 23) the records are
  dealt at random (from the same seed) into blocks of at most ``ROMM_BLOCK_RECORDS`` and each block
  gets its own ROMM matrix with the same p: T is then block-diagonal after a permutation, still
  orthogonal (x*'x* = x'x exactly), and the time is linear in n. Approximation, documented: a record
  is mixed only with the records of its block, so its perturbation is that of ROMM on
  ``ROMM_BLOCK_RECORDS`` records (about p·sqrt(block size) times the root mean square of the
  column, instead of p·sqrt(n)). :func:`romm_blocks` tells which applies; no missing values.
* outdect:        noise e ~ N(0, (1.96 · sd_j / sqrt(n) · a)^2) on the outliers only, in every
  column: records above the 99% quantile of some column (R's default quantile, type 7) or with a
  robust Mahalanobis distance above sqrt(chi^2_{0.975, m}), the distance from the MCD estimate
  with half of the records (sdcMicro "outdect": robustbase ``covMcd(na.omit(x), alpha = 1/2)``,
  its consistency and small-sample factors included since distances are compared with a chi-square
  cut-off: :func:`sdc_dagster.numerics.robust.covmcd`, the MCD subset found by scikit-learn's
  ``MinCovDet`` seeded from the method's generator; past
  :data:`sdc_dagster.numerics.robust.MCD_SAMPLE_RECORDS` complete records on a seeded sample of that
  size, the distances of all records from that fit).

Missing values stay missing. Sigma is the covariance of the records complete in every column, as
sdcMicro's ``cov(na.omit(x))`` (at least two such records are needed); every other moment (sd_j,
xbar_j, the 99% quantiles) uses each column's observed values (``na.rm=TRUE``). "outdect" fits the
MCD on the complete records and gives a record with a missing value no robust distance (R's
``mahalanobis`` is NA there and ``which(rd > limit)`` leaves it out): such a record is an outlier
only through a column's 99% quantile, and then gets noise on its observed values. Deviation: where
a column has fewer than two observed values its sd is undefined; sdcMicro's noise is then NA and
turns the values it is added to into missing values, here that column gets no noise.

References
----------
Brand (2002), Microdata protection through noise addition; Kim (1986), A method for limiting
disclosure in microdata based on random noise and transformation; Ting, Fienberg & Trottini (2008),
Random orthogonal matrix masking methodology for microdata release; Templ & Meindl (2008),
Robustification of microdata masking methods; sdcMicro ``addNoise``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import linalg, stats

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.numerics.robust import covmcd
from sdc_dagster.validation import check_option, check_scalar

NOISE_METHODS = ("additive", "multiplicative", "correlated", "correlated2", "restr", "ROMM", "outdect")
# ROMM builds n x n matrices: 10,000 records take two of 800 MB. Beyond, blocks of at most
# ROMM_BLOCK_RECORDS records (module docstring).
ROMM_MAX_RECORDS = 10_000
ROMM_BLOCK_RECORDS = 250
# The attribute of a ROMM result giving the number of blocks (1: exact ROMM), for the metadata.
ROMM_BLOCKS_ATTRIBUTE = "romm_blocks"
# sdcMicro's "outdect": univariate outliers above this quantile, robust distances above the
# square root of this chi-square quantile, MCD on this share of the records.
OUTLIER_QUANTILE = 0.99
OUTLIER_CHI2_LEVEL = 0.975


def _noise_covariance(x: np.ndarray, method: str) -> np.ndarray:
    """Sample covariance of the columns (divisor n - 1) for correlated noise, on the records complete
    in every column: sdcMicro's ``cov(na.omit(x))`` (addNoise.r, ``addNoise_correlated``).

    With fewer than two complete records the covariance is undefined (sdcMicro's ``mvrnorm`` stops
    on the NA matrix): SDCInputError."""
    complete = x[~np.isnan(x).any(axis=1)]
    if len(complete) < 2:
        raise SDCInputError(
            f"method {method!r}: the noise covariance is estimated on the records complete in every column "
            f"(sdcMicro's cov(na.omit(x))); needs at least 2 such records, got {len(complete)}")
    return np.atleast_2d(np.cov(complete, rowvar=False, ddof=1))


def _column_sd(x: np.ndarray) -> np.ndarray:
    """Sample SD of each column over its observed values; 0 where fewer than two are observed (no
    spread to scale the noise by), so an observed value never becomes missing."""
    observed = (~np.isnan(x)).sum(axis=0)
    sd = np.zeros(x.shape[1])
    spread = observed > 1
    if spread.any():
        sd[spread] = np.nanstd(x[:, spread], axis=0, ddof=1)
    return sd


def mvrnorm_factor(covariance: np.ndarray) -> np.ndarray:
    """The m x m factor F = V diag(sqrt(max(lambda, 0))) (F F' = covariance) that MASS ``mvrnorm``
    applies to standard normal draws, as sdcMicro's correlated noise draws it: the symmetric
    eigen-decomposition covariance = V diag(lambda) V' by LAPACK's dsyevr (R's ``eigen(symmetric =
    TRUE)``), eigenvalues in decreasing order, negative ones (rounding) taken as 0. The sign of each
    eigenvector is LAPACK's choice and may differ between LAPACK builds; the noise's distribution
    does not depend on it (Venables & Ripley, MASS ``mvrnorm``)."""
    values, vectors = linalg.eigh(covariance, driver="evr")
    return vectors[:, ::-1] * np.sqrt(np.clip(values[::-1], 0.0, None))


def _correlated_noise(x: np.ndarray, amount: float, rng: np.random.Generator, method: str) -> np.ndarray:
    """e = Z F' with F = :func:`mvrnorm_factor` of a·Sigma and Z n x m standard normal, filled column
    by column from the generator as MASS ``mvrnorm``'s ``matrix(rnorm(m * n), n)``."""
    n, m = x.shape
    factor = mvrnorm_factor(amount * _noise_covariance(x, method))
    return rng.standard_normal((m, n)).T @ factor.T


def restricted_noise_factor(n: int, amount: float) -> float:
    """sdcMicro's scaling constant c of the "restr" method (SPEC §8.5; Kim 1986), see module docstring."""
    if n < 500:
        return float(np.sqrt(max(n - 1 - amount, 0.0) / ((n + 1) * (1 + amount))))
    return float(np.sqrt((n - 1) / (n + n * amount - 1)))


def romm_transform(x: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """T x for the orthogonal ROMM matrix T: Gram–Schmidt of the columns of A = I + p·M, M standard normal.

    Gram–Schmidt with normalised columns is A = T R with R upper triangular with a positive
    diagonal, i.e. R' R = A'A (Cholesky), so T x = A (R^-1 x) without forming T (Cholesky QR:
    accurate while A is well conditioned, as I + p·M is for the small p ROMM is used with)."""
    n = len(x)
    a = p * rng.standard_normal((n, n))
    a[np.diag_indices(n)] += 1.0
    r = np.linalg.cholesky(a.T @ a).T
    return a @ linalg.solve_triangular(r, x, lower=False)


def romm_blocks(n: int) -> int:
    """Number of blocks ROMM mixes ``n`` records in: 1 (exact ROMM) up to ``ROMM_MAX_RECORDS``,
    else enough blocks of at most ``ROMM_BLOCK_RECORDS`` (sizes differing by at most one)."""
    return 1 if n <= ROMM_MAX_RECORDS else -(-n // ROMM_BLOCK_RECORDS)


def block_romm_transform(x: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """ROMM of ``x`` (module docstring): :func:`romm_transform` up to ``ROMM_MAX_RECORDS`` records,
    beyond it on random blocks of at most ``ROMM_BLOCK_RECORDS`` records (a seeded permutation dealt
    into :func:`romm_blocks` blocks, each transformed with its own matrix)."""
    n_blocks = romm_blocks(len(x))
    if n_blocks == 1:
        return romm_transform(x, p, rng)
    out = np.empty_like(x)
    for rows in np.array_split(rng.permutation(len(x)), n_blocks):  # blocks of ~250 records, not records
        out[rows] = romm_transform(x[rows], p, rng)
    return out


def outlier_records(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the outliers of sdcMicro's "outdect" noise (SPEC §8.5), see module docstring.

    Records with a missing value get no robust distance (as in sdcMicro) but may still be
    univariate outliers on their observed columns."""
    n, m = x.shape
    with np.errstate(invalid="ignore"):
        univariate = (x > np.nanquantile(x, OUTLIER_QUANTILE, axis=0)).any(axis=1)
    complete = ~np.isnan(x).any(axis=1)
    if complete.sum() <= m + 1:
        return univariate
    location, covariance = covmcd(x[complete], random_state=rng)
    diff = x[complete] - location
    distance = np.zeros(n)
    distance[complete] = np.sqrt(np.einsum("ij,ij->i", diff @ np.linalg.inv(covariance), diff))
    return univariate | (distance > np.sqrt(stats.chi2.ppf(OUTLIER_CHI2_LEVEL, m)))


def add_noise(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    amount: float | None = None,
    method: str = "additive",
    noise: float | None = None,
    delta: float = 0.1,
    p: float = 0.001,
    random_state=None,
) -> pd.DataFrame:
    """Add random noise to continuous columns (SPEC §8.5), the methods of sdcMicro's ``addNoise``.

    Parameters
    ----------
    data : the microdata; not modified.
    columns : numeric columns.
    amount : a >= 0, a fraction (default 0.1): noise SD a·sd_j (additive), a (multiplicative,
        relative), covariance a·Sigma (correlated, restr), 1.96·a·sd_j/sqrt(n) (outdect).
    method : one of ``NOISE_METHODS`` (see the module docstring for each formula).
    noise : sdcMicro's ``noise``, the amount in percent (``noise=150`` is ``amount=1.5``); give
        ``amount`` or ``noise``, not both.
    delta : 0 < delta < 1, the noise weight of "correlated2" (sdcMicro's ``delta``).
    p : p >= 0, the perturbation of the identity in "ROMM" (sdcMicro's ``p``).
    random_state : int seed or numpy Generator.

    Returns
    -------
    A copy of ``data`` with the columns perturbed (float64); missing values stay missing. With
    "ROMM", ``result.attrs["romm_blocks"]`` is the number of blocks mixed (1 = exact ROMM).
    """
    columns = require_columns(data, columns, role="column")
    check_option(method, "method", NOISE_METHODS)
    if amount is not None and noise is not None:
        raise SDCInputError(f"amount, noise: give one of them (noise = 100 · amount), got {amount!r} and {noise!r}")
    if noise is not None:
        check_scalar(noise, "noise (a percentage)", low=0)
        amount = noise / 100.0
    amount = 0.1 if amount is None else amount
    check_scalar(amount, "amount", low=0)
    check_scalar(delta, "delta", low=0, high=1, closed="neither")
    check_scalar(p, "p", low=0)
    for column in columns:
        if not pd.api.types.is_numeric_dtype(data[column]) or pd.api.types.is_bool_dtype(data[column]):
            raise SDCInputError(f"column {column!r}: noise needs a numeric column, got {data[column].dtype}")
    x = data[columns].to_numpy(dtype="float64", na_value=np.nan)
    rng = np.random.default_rng(random_state)
    n, m = x.shape
    if method == "additive":
        noisy = x + rng.standard_normal((n, m)) * (amount * _column_sd(x))
    elif method == "multiplicative":
        noisy = x * (1.0 + amount * rng.standard_normal((n, m)))
    elif method == "correlated":
        noisy = x + _correlated_noise(x, amount, rng, method)
    elif method == "correlated2":
        d = np.sqrt(1.0 - delta**2)
        noisy = d * x + (1.0 - d) * np.nanmean(x, axis=0) + delta * _column_sd(x) * rng.standard_normal((n, m))
    elif method == "restr":
        if n < 2:
            raise SDCInputError(f"method 'restr': needs at least 2 records, got {n}")
        c = restricted_noise_factor(n, amount)
        if c == 0:
            raise SDCInputError(f"method 'restr': amount {amount!r} must be below n - 1 = {n - 1} for n < 500 records")
        noisy = c * (x + _correlated_noise(x, amount, rng, method)) + (1.0 - c) * np.nanmean(x, axis=0)
    elif method == "ROMM":
        holes = [c for c, hole in zip(columns, np.isnan(x).any(axis=0)) if hole]
        if holes:
            raise SDCInputError(
                f"column {holes[0]!r}: ROMM mixes all records, so it cannot keep missing values in place"
            )
        noisy = block_romm_transform(x, p, rng)
    else:
        outliers = outlier_records(x, rng)
        scale = 1.96 * _column_sd(x) / np.sqrt(n) * amount
        noisy = x.copy()
        noisy[outliers] += rng.standard_normal((int(outliers.sum()), m)) * scale
    out = data.copy()
    for j, column in enumerate(columns):
        out[column] = noisy[:, j]
    if method == "ROMM":
        out.attrs[ROMM_BLOCKS_ATTRIBUTE] = romm_blocks(n)
    return out
