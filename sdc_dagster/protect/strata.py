"""Strata (sdcMicro ``strataVars`` / ``strata_variables``): each stratum is protected on its own and
the results are reassembled in record order (SPEC §8.3, §8.6, §8.8)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import require_columns


def stratum_codes(data: pd.DataFrame, strata: str | Sequence[str] | None) -> tuple[np.ndarray, list]:
    """Stratum number of every record and the stratum values (a missing value is a stratum).

    Strata are numbered in the sorted order of their values; the values are scalars for one strata
    column and tuples for several. Without strata every record is in stratum 0 (value None).
    """
    if strata is None:
        return np.zeros(len(data), dtype=np.int64), [None]
    columns = require_columns(data, [strata] if isinstance(strata, str) else list(strata), role="strata variable")
    grouped = data.groupby(columns, dropna=False, sort=True).ngroup().to_numpy().astype(np.int64)
    first = np.unique(grouped, return_index=True)[1]  # first record of stratum 0, 1, ...
    rows = data[columns].iloc[first].itertuples(index=False)
    return grouped, [tuple(row) if len(columns) > 1 else row[0] for row in rows]


def stratum_members(codes: np.ndarray) -> list[np.ndarray]:
    """Positions of the records of each stratum, in record order (stratum 0 first)."""
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1], True])
    return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
