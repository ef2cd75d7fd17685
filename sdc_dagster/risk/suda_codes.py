"""The integer key codes sdcMicro's SUDA2 (C++) sees (SPEC §3.8): R's ``as.numeric`` of each key,
a factor's level index, sorted categories for text, and one whole-number code for missing values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.keys import category_codes
from sdc_dagster.validation import check_scalar

_INT32 = np.iinfo(np.int32)


def missing_code(missing) -> int:
    """The missing-value code sdcMicro's SUDA2 gives a missing key value: a whole number that fits
    in a C int (a float such as ``-999.0`` is accepted, as R passes numbers)."""
    value = check_scalar(missing, "missing", low=_INT32.min, high=_INT32.max)
    if not value.is_integer():
        raise SDCInputError(f"missing: must be a whole number (the missing-value code), got {missing!r}")
    return int(value)


def sdcmicro_codes(column: pd.Series, name: str, missing: int) -> np.ndarray:
    """The integer codes sdcMicro's C++ sees for one key (R: as.numeric, NA -> missing, cast to int).

    Integer category codes pass through as R's numbers; a Categorical is R's factor (its level
    index, unused levels included); other values are coded by
    :func:`~sdc_dagster.keys.category_codes` in sorted order, as R's ``factor`` levels.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy(dtype=np.int64) + 1
        return np.where(codes == 0, missing, codes)
    if pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
        numbers = column.to_numpy(dtype=np.int64)
        if numbers.size and (numbers.min() < _INT32.min or numbers.max() > _INT32.max):
            raise SDCInputError(f"key variable {name!r}: category codes must fit in 32-bit integers")
        return numbers
    if pd.api.types.is_bool_dtype(column.dtype):
        if column.isna().any():
            numbers = column.astype("float64").to_numpy(na_value=np.nan)
        else:
            return column.to_numpy(dtype=np.int64)
    elif pd.api.types.is_numeric_dtype(column.dtype):
        numbers = column.astype("float64").to_numpy(na_value=np.nan)
    else:  # strings etc.: R's factor() codes the sorted levels 1..c
        codes, _ = category_codes(column, sort=True)
        codes[codes == 0] = missing
        return codes
    is_na = np.isnan(numbers)
    present = numbers[~is_na]
    if not np.all(np.isfinite(present)):
        raise SDCInputError(f"key variable {name!r}: numeric keys must hold finite category codes (found an infinite value)")
    if np.any(present != np.trunc(present)):
        # fractional codes (years of education 10.5): SUDA2 only compares codes for equality, so the
        # sorted categories 1..c code them, as R's factor() would
        codes, _ = category_codes(column, sort=True)
        codes[codes == 0] = missing
        return codes
    if present.size and (present.min() < _INT32.min or present.max() > _INT32.max):
        raise SDCInputError(f"key variable {name!r}: category codes must fit in 32-bit integers")
    codes = np.full(len(numbers), missing, dtype=np.int64)
    codes[~is_na] = present.astype(np.int64)
    return codes
