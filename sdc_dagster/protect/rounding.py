"""Rounding to a base b, deterministic or random (SPEC §8.7, §13 item 11).

Rounding points are the multiples of b. Deterministic: the nearest point, halves rounded up
(b·floor(x/b + 1/2)). Random: down to b·floor(x/b) or up to b·ceil(x/b); unbiased random rounding
goes up with probability (x - b·floor(x/b)) / b, so E[x*] = x. S001 illustrates a non-unbiased
probability (§13 item 11); ``probability_up`` makes that probability an explicit parameter.
Values already on a rounding point are unchanged; missing values stay missing.

References
----------
Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4 and §5.4 (random rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.validation import check_option, check_scalar

ROUNDING_METHODS = ("deterministic", "random")


def rounding(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    base: float = 1.0,
    method: str = "deterministic",
    probability_up: float | None = None,
    random_state=None,
) -> pd.DataFrame:
    """Round numeric columns to multiples of ``base`` (SPEC §8.7).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : numeric columns.
    base : b > 0.
    method : "deterministic" (nearest multiple) or "random".
    probability_up : with ``method="random"``: a fixed probability of rounding up for every value
        not on a rounding point; default None = unbiased, (x - b·floor(x/b)) / b.
    random_state : int seed or numpy Generator (random rounding).

    Returns
    -------
    A copy of ``data`` with the columns rounded (integer columns stay integer when b is an integer).
    """
    columns = require_columns(data, columns, role="column")
    check_option(method, "method", ROUNDING_METHODS)
    check_scalar(base, "base", low=0, closed="neither")
    if probability_up is not None:
        if method != "random":
            raise SDCInputError("probability_up: only applies to method='random'")
        check_scalar(probability_up, "probability_up", low=0, high=1)
    rng = np.random.default_rng(random_state)
    out = data.copy()
    for column in columns:
        series = data[column]
        if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            raise SDCInputError(f"column {column!r}: rounding needs a numeric column, got {series.dtype}")
        x = series.to_numpy(dtype="float64", na_value=np.nan)
        lower = base * np.floor(x / base)
        if method == "deterministic":
            rounded = base * np.floor(x / base + 0.5)
        else:
            remainder = x - lower
            chance = remainder / base if probability_up is None else np.where(remainder > 0, probability_up, 0.0)
            up = rng.random(len(x)) < chance
            rounded = np.where(up, lower + base, lower)
        result = pd.Series(rounded, index=data.index)
        if pd.api.types.is_integer_dtype(series) and float(base).is_integer():
            result = result.astype("Int64" if pd.api.types.is_extension_array_dtype(series) else "int64")
        out[column] = result
    return out
