"""Noise addition to continuous variables (SPEC §8.5).

* additive:        x* = x + e,      e ~ N(0, (a · sd_j)^2)    independently per variable j
* multiplicative:  x* = x · (1 + e), e ~ N(0, a^2)            (SPEC ASSUMPTION: x·(1 + e), E e = 0)
* correlated:      x* = x + e,      e ~ N(0, a · Sigma)       Sigma = sample covariance of the columns,
  so the noise has the correlation structure of the data (Kim 1986; sdcMicro ``addNoise`` "correlated").

sd_j and Sigma are sample moments (divisor n - 1) of the non-missing values (Sigma pairwise, made
positive semi-definite when missing values break that). ``amount`` a is a fraction
(a = 0.1: noise SD 10% of the variable's SD), not sdcMicro's percentage. Missing values stay missing.

References
----------
Brand (2002), Microdata protection through noise addition; Kim (1986); sdcMicro ``addNoise``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

NOISE_METHODS = ("additive", "multiplicative", "correlated")


def _noise_covariance(x: np.ndarray) -> np.ndarray:
    """Sample covariance of the columns (divisor n - 1) for correlated noise.

    With missing values each entry uses the records observed in both variables (pairwise); such a
    matrix need not be positive semi-definite, so negative eigenvalues are set to 0 (the nearest
    PSD matrix in Frobenius norm). A pair never observed together gets covariance 0."""
    m = x.shape[1]
    if len(x) < 2:
        return np.zeros((m, m))
    if not np.isnan(x).any():
        return np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    sigma = np.nan_to_num(pd.DataFrame(x).cov(ddof=1).to_numpy(), nan=0.0)
    values, vectors = np.linalg.eigh(sigma)
    if values.min() >= 0:
        return sigma
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


def add_noise(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    amount: float = 0.1,
    method: str = "additive",
    random_state=None,
) -> pd.DataFrame:
    """Add random noise to continuous columns (SPEC §8.5).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : numeric columns.
    amount : a >= 0; noise SD a·sd_j (additive), a (multiplicative, relative), covariance a·Sigma
        (correlated).
    method : "additive", "multiplicative" or "correlated".
    random_state : int seed or numpy Generator.

    Returns
    -------
    A copy of ``data`` with the columns perturbed (float64).
    """
    columns = require_columns(data, columns, role="column")
    if method not in NOISE_METHODS:
        raise SDCInputError(f"method: must be one of {', '.join(NOISE_METHODS)}, got {method!r}")
    if isinstance(amount, bool) or not isinstance(amount, (int, float, np.integer, np.floating)) or not amount >= 0:
        raise SDCInputError(f"amount: must be a non-negative number, got {amount!r}")
    for column in columns:
        if not pd.api.types.is_numeric_dtype(data[column]) or pd.api.types.is_bool_dtype(data[column]):
            raise SDCInputError(f"column {column!r}: noise needs a numeric column, got {data[column].dtype}")
    x = data[columns].to_numpy(dtype="float64", na_value=np.nan)
    rng = np.random.default_rng(random_state)
    n, m = x.shape
    if method == "additive":
        sd = np.nanstd(x, axis=0, ddof=1) if n > 1 else np.zeros(m)
        noisy = x + rng.standard_normal((n, m)) * (amount * sd)
    elif method == "multiplicative":
        noisy = x * (1.0 + amount * rng.standard_normal((n, m)))
    else:
        noisy = x + rng.multivariate_normal(np.zeros(m), amount * _noise_covariance(x), size=n, method="eigh")
    out = data.copy()
    for j, column in enumerate(columns):
        out[column] = noisy[:, j]
    return out
