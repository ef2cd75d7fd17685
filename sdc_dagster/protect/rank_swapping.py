"""Rank swapping within p% of the ranks (SPEC §8.9), with the parameters of sdcMicro's ``rankSwap``.

Each variable is handled on its own: values are sorted ascending and each value is swapped with
another whose rank differs by at most w = floor(P/100 · N) positions; every value is swapped at
most once (without replacement, SPEC ASSUMPTION after μ-Argus). The released column is therefore a
permutation of the original one (means, variances, univariate distribution unchanged), unless top
or bottom coding is asked for.

The window is given in one of three ways, as in sdcMicro (at most one of them; none means P = 5,
our earlier default, where sdcMicro sets R0 = 0.95):

* ``p``: P, the rank range in percent of N, as sdcMicro documents it. sdcMicro's C++ code uses the
  value as a fraction instead (sdcMicro issue 366: ``P = 10`` gives a 1000% window there, i.e.
  every rank); here ``p=10`` is a 10% window, as documented. ``p=0`` swaps nothing (a value's
  candidate partners are the ranks j + 1 .. j + N·P - 1 in sdcMicro's ``RankSwapping.h``, none for
  P = 0); top and bottom coding still apply.
* ``r0``: multivariate preservation factor R0 (correlation after / before swapping),
  P = 100 · sqrt(2 · var · (1 - R0)) / delta.
* ``k0``: subset-mean preservation factor K0, P = 100 · sqrt(8/3) · K0 · |mean| / delta.

Here mean and var (divisor N) are those of the N values that are not top or bottom coded, and delta
is the distance between the smallest top-coded and the largest bottom-coded value (the maximum and
the minimum when there is no coding) — sdcMicro's ``RankSwapping.h`` formulas.

Top and bottom coding (sdcMicro's ``TopPercent``, ``BottomPercent``; default 0 here, 5 in
sdcMicro): the floor(n·top/100) largest and the floor(n·bottom/100) smallest non-missing values are
each replaced by the mean of their group and are not swapped, the counts computed as sdcMicro's
``RankSwapping.h`` does in single precision: floor(n · (float(top) · 0.01f)), so a share whose
float is just below its value codes one record fewer (5% of 1080 records: 53, not 54; 20% of 10: 1).

Vectorised pairing (deviation from μ-Argus's / sdcMicro's sequential partner choice, documented):
the sorted ranks are cut into consecutive blocks of w + 1 ranks starting at a random offset; inside
each block the ranks are shuffled and paired two by two (an odd rank out keeps its value). Partners
are thus uniform within a block, always within w ranks, and each value moves at most once, without
any Python loop over records. sdcMicro draws each rank's partner among the unswapped ranks j + 1 ..
(int)(j + N·P) - 1 in rank order, so its partners are at most w - 1 ranks apart where the project's
window allows w; given sdcMicro's drawn partners the project releases sdcMicro's values
(tests/protect/test_rank_swapping_golden_more.py).

References
----------
Moore (1996), Controlled data-swapping techniques for masking public use microdata sets;
Hundepool et al. (2012) §3.4.6; μ-Argus manual (rank swapping); sdcMicro ``rankSwap`` and its
issue 366 (https://github.com/sdcTools/sdcMicro/issues/366).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.validation import check_scalar


def _coded_count(n: int, percent: float) -> int:
    """Records top or bottom coded: sdcMicro's ``(int) (n * g_Ratio)`` with ``g_Ratio = percent * 0.01f``
    in single precision (``RankSwapping.h``), e.g. 53 for 5% of 1080."""
    ratio = np.float32(np.float32(percent) * np.float32(0.01))
    return int(np.floor(np.float32(n) * ratio))


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


def rank_swap_window(
    values: np.ndarray,
    *,
    p: float | None = None,
    r0: float | None = None,
    k0: float | None = None,
    low: float | None = None,
    high: float | None = None,
) -> int:
    """The rank window w = floor(P/100 · N) for the N swappable ``values`` (SPEC §8.9; sdcMicro's P, R0, K0).

    With ``p`` the values are only counted. With ``r0`` or ``k0`` they must be numbers; ``low`` and
    ``high`` are the largest bottom-coded and the smallest top-coded value (default: the minimum and
    the maximum of ``values``), delta = high - low. Give exactly one of p, r0, k0."""
    n = len(values)
    if n < 2:
        return 0
    if p is None:
        low = np.min(values) if low is None else low
        high = np.max(values) if high is None else high
        delta = abs(float(high) - float(low))
        if delta == 0:
            return 0
        if r0 is not None:
            fraction = np.sqrt(2.0 * np.var(values) * (1.0 - r0)) / delta
        else:
            fraction = np.sqrt(8.0 / 3.0) * k0 * abs(np.mean(values)) / delta
        p = 100.0 * fraction
    return int(np.floor(p * n / 100.0))


def rank_swap(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    p: float | None = None,
    r0: float | None = None,
    k0: float | None = None,
    top_percent: float = 0.0,
    bottom_percent: float = 0.0,
    random_state=None,
) -> pd.DataFrame:
    """Swap the values of each column between records whose ranks differ by at most P% of N (SPEC §8.9).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : columns at least ordinal (numbers, or ordered categories that sort correctly; R0,
        K0 and top/bottom coding need numbers).
    p : the window in percent of N, 0 <= p < 100 (sdcMicro's ``P`` as documented, see issue 366);
        0 swaps nothing, as in sdcMicro.
    r0 : 0 <= r0 <= 1, the correlation preservation factor R0 (sdcMicro's ``R0``).
    k0 : k0 >= 0, the subset-mean preservation factor K0 (sdcMicro's ``K0``).
        At most one of p, r0, k0; none means p = 5.
    top_percent, bottom_percent : 0 <= x < 100, shares of the largest / smallest values replaced
        by their group mean and not swapped (sdcMicro's ``TopPercent``, ``BottomPercent``).
    random_state : int seed or numpy Generator.

    Returns
    -------
    A copy of ``data`` in which each column is a permutation of the original values (when there is
    no top or bottom coding); missing values stay in place. Ties are ranked in data order.
    """
    columns = require_columns(data, columns, role="column")
    given = [name for name, value in (("p", p), ("r0", r0), ("k0", k0)) if value is not None]
    if len(given) > 1:
        raise SDCInputError(f"{', '.join(given)}: give only one of p, r0 and k0 (as sdcMicro's rankSwap)")
    if not given:
        p = 5.0
    if p is not None:
        check_scalar(p, "p", low=0, high=100, closed="left")
    if r0 is not None:
        check_scalar(r0, "r0", low=0, high=1)
    if k0 is not None:
        check_scalar(k0, "k0", low=0)
    check_scalar(top_percent, "top_percent", low=0, high=100, closed="left")
    check_scalar(bottom_percent, "bottom_percent", low=0, high=100, closed="left")
    if top_percent + bottom_percent >= 100:
        raise SDCInputError(
            f"top_percent, bottom_percent: must leave values to swap (sum below 100), got {top_percent!r} + {bottom_percent!r}"
        )
    numeric_needed = r0 is not None or k0 is not None or top_percent > 0 or bottom_percent > 0
    rng = np.random.default_rng(random_state)
    out = data.copy()
    for column in columns:
        series = data[column]
        if numeric_needed and (
            not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
        ):
            raise SDCInputError(
                f"column {column!r}: r0, k0 and top/bottom coding need a numeric column, got {series.dtype}"
            )
        present = np.flatnonzero(series.notna().to_numpy())
        values = series.to_numpy()[present]
        try:
            order = present[np.argsort(values, kind="stable")]
        except TypeError as error:
            raise SDCInputError(f"column {column!r}: rank swapping needs values that can be sorted ({error})") from error
        n = len(order)
        n_bottom, n_top = _coded_count(n, bottom_percent), _coded_count(n, top_percent)
        swappable = order[n_bottom : n - n_top]
        if numeric_needed:
            sorted_values = series.to_numpy(dtype="float64")[order]
            window = rank_swap_window(
                sorted_values[n_bottom : n - n_top], p=p, r0=r0, k0=k0,
                low=sorted_values[n_bottom - 1] if n_bottom else None,
                high=sorted_values[n - n_top] if n_top else None,
            )
        else:
            window = rank_swap_window(swappable, p=p)
        partner = rank_swap_permutation(len(swappable), window, rng)
        source = np.arange(len(data))
        source[swappable] = swappable[partner]
        released = series.iloc[source].set_axis(data.index)
        if n_bottom or n_top:
            released = released.astype("float64")
            for coded in (order[:n_bottom], order[n - n_top :]):
                if len(coded):
                    released.iloc[coded] = float(series.iloc[coded].mean())
        out[column] = released
    return out
