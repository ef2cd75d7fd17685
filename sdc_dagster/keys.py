"""The one coding of key variables (SPEC §2.1): category codes with 0 for a missing value, the
digits of several keys side by side, and their packing into one int64 code per record.

Every frequency count (:mod:`sdc_dagster.risk.frequencies`), risk measure and protection method that
groups records by their keys codes them here, so a missing value means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

# Packed codes stay below this bound; beyond it the partial code is re-numbered densely first.
CODE_LIMIT = 2**62

# Missing-value patterns are int64 bit masks over the keys (one bit per key, sign bit unused).
MAX_MASKED_KEYS = 62


def check_mask_width(n_keys: int, purpose: str) -> None:
    """Raise :class:`SDCInputError` when ``n_keys`` keys do not fit in a missing-value bit mask."""
    if n_keys > MAX_MASKED_KEYS:
        raise SDCInputError(
            f"key variables: {purpose} combines at most {MAX_MASKED_KEYS} categorical keys "
            f"(got {n_keys}); give fewer variables the role categorical_key"
        )


def key_columns(data: pd.DataFrame, keys: Sequence[str] | str) -> list[str]:
    """``keys`` as a validated list: non-empty, no repeats, every column present in ``data``."""
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("key variables: the selection is empty; name at least one key column")
    repeated = [k for i, k in enumerate(keys) if k in keys[:i]]
    if repeated:
        raise SDCInputError(f"key variable {repeated[0]!r} is selected more than once")
    return keys


def category_codes(column: pd.Series, *, sort: bool = False) -> tuple[np.ndarray, pd.Index]:
    """The one integer coding of a categorical column (key variables, SPEC §2.1; also the
    sensitive variables of SPEC §3.6-3.7): 0 for a missing value, 1..c for its c categories.

    Missing is whatever pandas treats as missing (``None``, ``np.nan``, ``pd.NA``, ``NaT``): every
    spelling gets code 0. Values compare as pandas does (``1`` and ``1.0`` are the same category).
    Order of the categories: first appearance by default (a hash pass, no sort; what frequency
    counts need), or with ``sort=True`` sorted order (a Categorical's category order; pandas
    ``factorize(sort=True)``, which puts numbers before strings in a mixed column), for callers whose
    output lists the categories or whose reference (sdcMicro: R factor levels) sorts them. Only
    categories present in the column get a code (unused Categorical categories do not).

    Returns ``(codes, categories)``: int64 codes, one per row, and the categories (code d is
    ``categories[d - 1]``).

    Raises
    ------
    SDCInputError : ``sort=True`` and the values do not sort against each other.
    """
    try:
        codes, uniques = pd.factorize(column, sort=sort, use_na_sentinel=True)
    except TypeError:
        raise SDCInputError(
            f"column {column.name!r}: its values cannot be ordered into categories (mixed types)"
        ) from None
    codes = codes.astype(np.int64, copy=False)
    codes += 1
    return codes, pd.Index(uniques)


def key_digits(data: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`category_codes` of each key column, side by side.

    Returns ``(digits, radices)``: ``digits`` is an (n, m) int64 array with 0 for a missing value
    and 1..c_j for the c_j categories of key j in order of first appearance; ``radices[j] = c_j + 1``.
    """
    n = len(data)
    # column-major: each key's digits are written and later read contiguously
    digits = np.empty((n, len(keys)), dtype=np.int64, order="F")
    radices = np.empty(len(keys), dtype=np.int64)
    for j, key in enumerate(keys):
        codes, categories = category_codes(data[key])
        digits[:, j] = codes
        radices[j] = len(categories) + 1
    return digits, radices


def renumbered_digits(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`key_digits` of key values known by their digits: ``digits`` codes each key's values
    (0 = missing, any numbering of the categories, e.g. :func:`key_digits` of the keys before some
    of their values were suppressed); returns the digits and radices :func:`key_digits` gives for
    those values, the categories renumbered 1..c_j by first appearance (categories no longer present
    dropped). Equal values keep equal digits, so key frequencies are unchanged; the numbering (and
    with it the order in which counts are summed) is exactly that of the values themselves."""
    out = np.empty(digits.shape, dtype=np.int64, order="F")
    radices = np.empty(digits.shape[1], dtype=np.int64)
    for j in range(digits.shape[1]):
        first_seen, uniques = pd.factorize(digits[:, j])
        present = uniques != 0
        lookup = np.cumsum(present) * present  # the k-th present category by first appearance -> k
        out[:, j] = lookup[first_seen]
        radices[j] = int(present.sum()) + 1
    return out, radices


def pack_codes(blocks: Sequence[np.ndarray], radices: np.ndarray) -> list[np.ndarray]:
    """One int64 code per row of each digit block, equal exactly when the rows are equal.

    ``blocks`` are 2-d digit arrays with ``len(radices)`` columns. They are coded jointly, so codes
    are comparable across blocks (a table and the probes looked up in it). Mixed-radix packing; if
    the product of the radices would overflow, the partial code is first re-numbered densely.
    """
    sizes = [len(b) for b in blocks]
    digits = np.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
    code = np.zeros(len(digits), dtype=np.int64)
    span = 1
    for j, radix in enumerate(radices):
        radix = int(radix)
        if span * radix > CODE_LIMIT:
            code = np.unique(code, return_inverse=True)[1].astype(np.int64).ravel()
            span = int(code.max()) + 1 if len(code) else 1
        code = code * radix + digits[:, j]
        span *= radix
    return np.split(code, np.cumsum(sizes)[:-1])
