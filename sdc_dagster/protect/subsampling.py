"""Subsampling: release a simple random sample of the records or of whole households (SPEC §8.4).

With a household id, households are the sampling units: round(fraction · H) of the H households
are drawn without replacement and every record of a drawn household is released, so no household is
split. With a weight column, the released weights are the original ones divided by the realised
sampling fraction (h / H households, or m / n records), so that weighted totals still estimate the
population (the inverse of the subsampling fraction multiplies the original design weight).

References
----------
Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4 (sampling as a non-perturbative method).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.keys import key_digits
from sdc_dagster.validation import check_scalar


def subsample(
    data: pd.DataFrame,
    *,
    fraction: float,
    household: str | None = None,
    weight: str | None = None,
    random_state=None,
) -> pd.DataFrame:
    """A simple random sample without replacement of records or of whole households (SPEC §8.4).

    Parameters
    ----------
    data : the microdata; not modified.
    fraction : the share of records (or households) released, 0 < fraction <= 1.
    household : household id column; when given, round(fraction · H) households are sampled and all
        their records released. Records with a missing household id are refused.
    weight : weight column; when given, it is multiplied by the inverse realised sampling fraction
        (H / h households, or n / m records) and returned as float64.
    random_state : int seed or numpy Generator.

    Returns
    -------
    The sampled records in their original order, with their original index labels.
    """
    check_scalar(fraction, "fraction", low=0, high=1, closed="right")
    for role, column in (("household", household), ("weight", weight)):
        if column is not None:
            require_columns(data, [column], role=role)
    if weight is not None and (
        not pd.api.types.is_numeric_dtype(data[weight]) or pd.api.types.is_bool_dtype(data[weight])
    ):
        raise SDCInputError(f"column {weight!r}: the weight must be numeric to be rescaled, got {data[weight].dtype}")
    rng = np.random.default_rng(random_state)
    if household is None:
        units = np.arange(len(data))
        n_units = len(data)
    else:
        if data[household].isna().any():
            raise SDCInputError(f"column {household!r}: household ids must be complete to sample whole households")
        digits, radices = key_digits(data, [household])  # households numbered 1..H by first appearance
        units, n_units = digits[:, 0] - 1, int(radices[0]) - 1
    size = int(round(fraction * n_units))
    drawn = np.zeros(n_units, dtype=bool)
    drawn[rng.choice(n_units, size=size, replace=False)] = True
    out = data.iloc[np.flatnonzero(drawn[units])].copy()
    if weight is not None and size:
        out[weight] = out[weight].astype("float64") * (n_units / size)
    return out
