"""Noise addition to continuous variables (SPEC §8.5).

* additive:        x* = x + e,      e ~ N(0, (a · sd_j)^2)    independently per variable j
* multiplicative:  x* = x · (1 + e), e ~ N(0, a^2)            (SPEC ASSUMPTION: x·(1 + e), E e = 0)
* correlated:      x* = x + e,      e ~ N(0, a · Sigma)       Sigma = sample covariance of the columns,
  so the noise has the correlation structure of the data (Kim 1986; sdcMicro ``addNoise`` "correlated").

sd_j and Sigma are sample moments (divisor n - 1) of the non-missing values. ``amount`` a is a fraction
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
        if np.isnan(x).any():
            raise SDCInputError("columns: correlated noise needs complete values (no missing values in the columns)")
        sigma = np.atleast_2d(np.cov(x, rowvar=False, ddof=1)) if n > 1 else np.zeros((m, m))
        noisy = x + rng.multivariate_normal(np.zeros(m), amount * sigma, size=n, method="eigh")
    out = data.copy()
    for j, column in enumerate(columns):
        out[column] = noisy[:, j]
    return out
