"""Checks of parameters and input columns, one message format for the whole engine.

Modelled on scikit-learn's ``check_scalar`` and ``check_array``: every check takes the name the
caller knows the value by, the expected type and bounds, and raises with the message
``"<name>: must be <rule>, got <value>"`` (for a column: ``"<role> '<column>': ..."``).
:class:`~sdc_dagster.errors.SDCInputError` is raised for data and parameters of engine functions;
``error=ValueError`` gives the same wording where a caller is not about data (e.g. a spec key).

This module sits at the bottom of the engine: it imports nothing of the project but
:mod:`sdc_dagster.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

_CLOSED = ("both", "left", "right", "neither")


def _number_text(value) -> str:
    """A bound as written in a message: whole numbers in full (2147483647), others as %g."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _bounds_text(low, high, closed: str) -> str:
    """The rule of the bounds in words: " in (0, 1]", " >= 1", " > 0", or "" without bounds."""
    lo, hi = (None if v is None else _number_text(v) for v in (low, high))
    if low is not None and high is not None:
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        return f" in {left}{lo}, {hi}{right}"
    if low is not None:
        return f" >= {lo}" if closed in ("both", "left") else f" > {lo}"
    if high is not None:
        return f" <= {hi}" if closed in ("both", "right") else f" < {hi}"
    return ""


def check_scalar(
    value,
    name: str,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
    closed: str = "both",
    error: type[Exception] = SDCInputError,
):
    """Check that ``value`` is a finite number (an integer when ``integer``) within the bounds.

    Parameters
    ----------
    value : the value to check; booleans are refused (``True`` is not the number 1 here).
    name : how the caller knows the value, e.g. ``"k"`` or ``"pram of 'roof': 'retention'"``.
    integer : whether the value must be an integer (int or numpy integer).
    low, high : bounds, None for none.
    closed : which bounds belong to the allowed interval: "both", "left", "right" or "neither".
    error : the exception class raised (SDCInputError for data and engine parameters).

    Returns
    -------
    The value as ``int`` (``integer``) or ``float``.

    Raises
    ------
    ``error("<name>: must be an integer >= 1, got 0")``, ``"...: must be a number in (0, 1], got 2"``.
    """
    if closed not in _CLOSED:
        raise ValueError(f"closed: must be one of {', '.join(_CLOSED)}, got {closed!r}")
    kind = (Integral,) if integer else (Real,)
    noun = "an integer" if integer else "a number"
    rule = noun + _bounds_text(low, high, closed)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind) or not np.isfinite(value):
        raise error(f"{name}: must be {rule}, got {value!r}")
    above = low is None or (value >= low if closed in ("both", "left") else value > low)
    below = high is None or (value <= high if closed in ("both", "right") else value < high)
    if not (above and below):
        raise error(f"{name}: must be {rule}, got {value!r}")
    return int(value) if integer else float(value)


def check_records_for_k(records: int, k: int, *, source: str) -> None:
    """Refuse a file of fewer records than the k of k-anonymity, before anything runs on it.

    k-anonymity asks every record to share its key with at least k - 1 others (Sweeney 2002,
    "k-anonymity: a model for protecting privacy"); the most a file of n records allows is every
    record sharing one key (every key value suppressed), n-anonymity. With n < k no plan can meet
    the target, so the file is refused up front with that sentence rather than by a protection step.

    Raises
    ------
    SDCInputError : "<source>: k-anonymity with k = K is impossible with N records ..." when
        ``records < k``.
    """
    if records < k:
        raise SDCInputError(f"{source}: k-anonymity with k = {k} is impossible with {records} "
                            f"record{'' if records == 1 else 's'} "
                            f"(at most {records}-anonymity, every key suppressed; lower risk.k to {records} or "
                            "fewer, or protect a larger file)")


def check_option(value, name: str, options: Sequence, *, error: type[Exception] = SDCInputError):
    """Check that ``value`` is one of ``options``; the message lists them: ``"<name>: must be one of
    'a', 'b', got 'c'"``. Returns the value."""
    if value not in options:
        raise error(f"{name}: must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


def check_flag(value, name: str, *, error: type[Exception] = SDCInputError) -> bool:
    """Check that ``value`` is a boolean (Python's or numpy's): ``"<name>: must be true or false,
    got 1"``. Returns it as ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{name}: must be true or false, got {value!r}")
    return bool(value)


def numeric_matrix(
    data: pd.DataFrame, columns: Sequence[str], *, role: str, allow_missing: bool = False
) -> np.ndarray:
    """The columns as a float64 matrix (one column per variable), as ``check_array`` of scikit-learn.

    Non-numeric columns and infinite values are refused, naming the column; missing values become
    NaN when ``allow_missing`` and are refused otherwise. An empty selection is refused.
    """
    columns = require_columns(data, columns, role=role)
    if not columns:
        raise SDCInputError(f"{role}: the selection is empty; name at least one column")
    out = np.empty((len(data), len(columns)), dtype=np.float64)
    for j, c in enumerate(columns):
        try:
            out[:, j] = pd.to_numeric(data[c], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise SDCInputError(f"{role} {c!r}: must be numeric ({exc})") from exc
        if allow_missing and np.isinf(out[:, j]).any():
            raise SDCInputError(f"{role} {c!r}: contains infinite values, which this measure does not allow")
        if not allow_missing and not np.isfinite(out[:, j]).all():
            raise SDCInputError(f"{role} {c!r}: contains missing or infinite values, which this measure does not allow")
    return out


def check_pair(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """Validate that ``protected`` is a release of ``original`` for ``columns``.

    Both frames must hold the columns and the same index (same records, same order), since
    every loss measure compares record i of one with record i of the other.
    """
    columns = require_columns(original, columns, role="original column")
    require_columns(protected, columns, role="protected column")
    if len(original) != len(protected) or not original.index.equals(protected.index):
        raise SDCInputError(
            "protected: must have the same index (same records in the same order) as original "
            f"({len(protected)} vs {len(original)} records)"
        )
    if not columns:
        raise SDCInputError("columns: at least one variable is needed")
    return columns


def continuous_values(frame: pd.DataFrame, column: str, role: str) -> np.ndarray:
    """Float array of a numeric column, NA as NaN; non-numeric columns are rejected."""
    series = frame[column]
    if not (pd.api.types.is_numeric_dtype(series) or series.isna().all()) or pd.api.types.is_bool_dtype(series):
        raise SDCInputError(f"{role} column {column!r}: a continuous variable must be numeric (got {series.dtype})")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(values).any():
        raise SDCInputError(f"{role} column {column!r}: values must be finite")
    return values


def paired_matrices(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str]):
    """Original and protected values of ``columns`` as float64 matrices matched by position
    (:func:`numeric_matrix`, missing values NaN); frames of different lengths are refused."""
    x = numeric_matrix(original, columns, role="original column", allow_missing=True)
    xm = numeric_matrix(protected, columns, role="protected column", allow_missing=True)
    if x.shape[0] != xm.shape[0]:
        raise SDCInputError(
            f"protected: has {xm.shape[0]} rows but original has {x.shape[0]}; rows are matched by position"
        )
    return x, xm


def count_matrix(frame: pd.DataFrame, columns: Sequence[str], *, role: str = "grid counts") -> np.ndarray:
    """The count columns of a table as an int64 matrix (cells x columns), after checking that every
    count is present, numeric and a non-negative integer (a float column of whole numbers is
    accepted); the message names the column and ``role`` (e.g. "original counts")."""
    blocks = []
    for col in columns:
        series = frame[col]
        if series.isna().any():
            raise SDCInputError(f"column {col!r}: {role} must not be missing")
        if not (pd.api.types.is_integer_dtype(series) or pd.api.types.is_float_dtype(series)):
            raise SDCInputError(f"column {col!r}: {role} must be numeric, got {series.dtype}")
        values = series.to_numpy(dtype="float64")
        if (values < 0).any() or (values != np.floor(values)).any():
            raise SDCInputError(f"column {col!r}: {role} must be non-negative integers")
        blocks.append(values.astype(np.int64))
    return np.column_stack(blocks) if blocks else np.empty((len(frame), 0), dtype=np.int64)


def weight_values(data: pd.DataFrame, weight: str | None) -> np.ndarray | None:
    """The sampling-weight column as float64 (None without a weight), after checking that it is
    numeric, complete, finite and positive: a record's weight is the number of population units it
    stands for (SPEC §3.1)."""
    if weight is None:
        return None
    column = data[require_columns(data, [weight], role="weight")[0]]
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        raise SDCInputError(f"weight {weight!r} must be numeric (found dtype {column.dtype})")
    if column.isna().any():
        raise SDCInputError(f"weight {weight!r} has {int(column.isna().sum())} missing values; every record needs a weight")
    values = column.to_numpy(dtype="float64")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        raise SDCInputError(
            f"weight {weight!r} must be finite and positive; {int(bad.sum())} values are not "
            f"(first: {values[bad][0]!r})"
        )
    return values


def positive_values(data: pd.DataFrame, spec, *, role: str) -> np.ndarray:
    """A per-record positive float vector from a column name or one number for every record."""
    if isinstance(spec, str):
        name = require_columns(data, [spec], role=role)[0]
        try:
            values = pd.to_numeric(data[name], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise SDCInputError(f"{role} {name!r}: must be numeric ({exc})") from exc
    elif isinstance(spec, Real) and not isinstance(spec, bool):
        name = role
        values = np.full(len(data), float(spec))
    else:
        raise SDCInputError(f"{role}: must be a column name or a number, got {spec!r}")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise SDCInputError(f"{role} {name!r}: must be finite and positive for every record")
    return values
