"""Rank swapping within p% of the ranks (SPEC §8.9).

Each variable is handled on its own: values are sorted ascending and each value is swapped with
another whose rank differs by at most w = floor(p/100 · n) positions; every value is swapped at
most once (without replacement, SPEC ASSUMPTION after μ-Argus). The released column is therefore a
permutation of the original one (means, variances, univariate distribution unchanged).

Vectorised pairing (deviation from μ-Argus's sequential partner choice, documented): the sorted
ranks are cut into consecutive blocks of w + 1 ranks starting at a random offset; inside each block
the ranks are shuffled and paired two by two (an odd rank out keeps its value). Partners are thus
uniform within a block, always within w ranks, and each value moves at most once, without any
Python loop over records.

References
----------
Moore (1996), Controlled data-swapping techniques for masking public use microdata sets;
Hundepool et al. (2012) §3.4.6; μ-Argus manual (rank swapping).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns


def rank_swap_permutation(n: int, window: int, rng: np.random.Generator) -> np.ndarray:
    """A random involution ``partner`` of the ranks 0..n-1 with |partner[i] - i| <= window."""
    partner = np.arange(n)
    if window < 1 or n < 2:
        return partner
    block_size = window + 1
    offset = int(rng.integers(0, block_size))
    block = (np.arange(n) + offset) // block_size
    shuffled = np.argsort(block + rng.random(n))  # ranks grouped by block, random order inside
    sorted_block = block[shuffled]
    position_in_block = np.arange(n) - np.searchsorted(sorted_block, sorted_block, side="left")
    first = position_in_block % 2 == 0
    has_next = np.r_[sorted_block[1:] == sorted_block[:-1], False]
    a = shuffled[first & has_next]
    b = shuffled[np.flatnonzero(first & has_next) + 1]
    partner[a], partner[b] = b, a
    return partner


def rank_swap(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    p: float = 5.0,
    random_state=None,
) -> pd.DataFrame:
    """Swap the values of each column between records whose ranks differ by at most p% of n (SPEC §8.9).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : columns at least ordinal (numbers, or ordered categories that sort correctly).
    p : the window in percent of the number of non-missing values, 0 < p < 100.
    random_state : int seed or numpy Generator.

    Returns
    -------
    A copy of ``data`` in which each column is a permutation of the original values; missing
    values stay in place. Ties are ranked in data order.
    """
    columns = require_columns(data, columns, role="column")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or not 0 < p < 100:
        raise SDCInputError(f"p: must be a percentage strictly between 0 and 100, got {p!r}")
    rng = np.random.default_rng(random_state)
    out = data.copy()
    for column in columns:
        series = data[column]
        present = np.flatnonzero(series.notna().to_numpy())
        values = series.to_numpy()[present]
        try:
            order = present[np.argsort(values, kind="stable")]
        except TypeError as error:
            raise SDCInputError(f"column {column!r}: rank swapping needs values that can be sorted ({error})") from error
        window = int(np.floor(p / 100.0 * len(order)))
        partner = rank_swap_permutation(len(order), window, rng)
        source = np.arange(len(data))
        source[order] = order[partner]
        out[column] = series.iloc[source].set_axis(data.index)
    return out
