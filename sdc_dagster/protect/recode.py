"""Global recoding: merging categories, interval recoding, top and bottom coding (SPEC §8.2).

Global recoding is non-perturbative: every record with a given original value receives the same
released value. All functions return a protected copy and never modify their input.

References
----------
Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4.2 (global recoding, top and bottom
coding). sdcMicro ``globalRecode`` and ``topBotCoding`` (Templ, Kowarik & Meindl 2015).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns


def _numeric_column(data: pd.DataFrame, variable: str) -> pd.Series:
    series = data[require_columns(data, [variable], role="variable")[0]]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise SDCInputError(f"variable {variable!r}: must be numeric to be coded by value, got {series.dtype}")
    return series


def merge_mapping(groups: Sequence[Sequence[Hashable]]) -> dict[Hashable, Hashable]:
    """The old -> new mapping that merges each group into the smallest code of its members.

    SPEC §8.2 (S003): the codes of untouched categories are kept and a merged category gets the
    smallest code of its members, e.g. merging 2+3 and 6+7 of codes 1..8 gives 1, 2, 4, 5, 6, 8.

    Parameters
    ----------
    groups : sequence of sequences of category codes; each inner sequence is merged into one.

    Returns
    -------
    dict mapping every member of every group to the group's smallest code.
    """
    mapping: dict[Hashable, Hashable] = {}
    for position, group in enumerate(groups):
        members = list(group)
        if not members:
            raise SDCInputError(f"groups[{position}]: a merge group must name at least one category")
        target = min(members)
        for code in members:
            if code in mapping and mapping[code] != target:
                raise SDCInputError(f"groups[{position}]: category {code!r} is already in another merge group")
            mapping[code] = target
    return mapping


def _recode_mapping(column: str, mapping, groups) -> Mapping[Hashable, Hashable]:
    if (mapping is None) == (groups is None):
        raise SDCInputError(f"recode of {column!r}: give exactly one of 'mapping' or 'groups'")
    if groups is not None:
        mapping = merge_mapping(groups)
    if not isinstance(mapping, Mapping):
        raise SDCInputError(f"recode of {column!r}: 'mapping' must be a mapping old -> new category")
    return mapping


def absent_categories(
    data: pd.DataFrame,
    variable: str,
    mapping: Mapping[Hashable, Hashable] | None = None,
    *,
    groups: Sequence[Sequence[Hashable]] | None = None,
) -> list:
    """The categories a :func:`recode` (same parameters) lists that do not occur in ``variable``.

    Recoding them is a no-op; a protection plan records them so that a reader of the release sees
    which parts of the step had nothing to do in this wave.
    """
    column = require_columns(data, [variable], role="variable")[0]
    listed = list(_recode_mapping(column, mapping, groups))
    occurs = pd.Index(listed, dtype=object).isin(data[column].dropna().unique())
    return [category for category, found in zip(listed, occurs) if not found]


def recode(
    data: pd.DataFrame,
    variable: str,
    mapping: Mapping[Hashable, Hashable] | None = None,
    *,
    groups: Sequence[Sequence[Hashable]] | None = None,
) -> pd.DataFrame:
    """Merge categories of a categorical variable (global recoding, SPEC §8.2).

    Parameters
    ----------
    data : the microdata; not modified.
    variable : the column to recode.
    mapping : old category -> new category; categories not in the mapping keep their code.
    groups : alternative to ``mapping``: groups of categories, each merged into its smallest code
        (the ordinal convention of SPEC §8.2, see :func:`merge_mapping`).

    Returns
    -------
    A copy of ``data`` with ``variable`` recoded; missing values stay missing. A listed category
    that does not occur (e.g. in a wave where nobody chose it) is left alone: recoding it is a no-op,
    which :func:`absent_categories` reports for the plan's record.
    """
    column = require_columns(data, [variable], role="variable")[0]
    mapping = _recode_mapping(column, mapping, groups)
    original = data[column]
    out = data.copy()
    # Series.replace maps only the listed values and keeps dtype where it can (ints stay ints).
    out[column] = original.replace(dict(mapping))
    return out


def interval_recode(
    data: pd.DataFrame,
    variable: str,
    breaks: Sequence[float],
    *,
    labels: Sequence[Hashable] | None = None,
    right: bool = True,
) -> pd.DataFrame:
    """Replace a continuous variable by intervals (global recoding, SPEC §8.2).

    Intervals are ``(b_i, b_{i+1}]`` (``right=True``) or ``[b_i, b_{i+1})``; the outermost closed
    ends include the first (or last) break so that every value in [b_0, b_last] is coded.

    Parameters
    ----------
    data : the microdata; not modified.
    variable : numeric column to recode.
    breaks : strictly increasing interval limits covering all observed values.
    labels : one label per interval; default the interval index 1, 2, ... (ordinal codes).
    right : whether intervals are closed on the right.

    Returns
    -------
    A copy of ``data`` in which ``variable`` holds the interval labels (missing stays missing).
    """
    series = _numeric_column(data, variable)
    edges = np.asarray(list(breaks), dtype="float64")
    if edges.ndim != 1 or len(edges) < 2 or not np.all(np.diff(edges) > 0):
        raise SDCInputError(f"interval_recode of {variable!r}: 'breaks' must be at least two strictly increasing numbers")
    n_intervals = len(edges) - 1
    if labels is None:
        labels = list(range(1, n_intervals + 1))
    labels = list(labels)
    if len(labels) != n_intervals:
        raise SDCInputError(
            f"interval_recode of {variable!r}: {len(labels)} labels given for {n_intervals} intervals"
        )
    values = series.to_numpy(dtype="float64", na_value=np.nan)
    present = ~np.isnan(values)
    outside = present & ((values < edges[0]) | (values > edges[-1]))
    if outside.any():
        raise SDCInputError(
            f"interval_recode of {variable!r}: {int(outside.sum())} values lie outside the breaks "
            f"[{edges[0]}, {edges[-1]}]; every value must fall in an interval"
        )
    if right:
        position = np.searchsorted(edges, values, side="left") - 1
        position[present & (values == edges[0])] = 0
    else:
        position = np.searchsorted(edges, values, side="right") - 1
        position[present & (values == edges[-1])] = n_intervals - 1
    label_array = np.asarray(labels, dtype=object)
    coded = np.empty(len(values), dtype=object)
    coded[:] = pd.NA
    coded[present] = label_array[position[present]]
    out = data.copy()
    if all(isinstance(label, (int, np.integer)) for label in labels):
        out[variable] = pd.array(coded, dtype="Int64")
    else:
        out[variable] = pd.Series(coded, index=data.index)
    return out


def top_bottom_coding(
    data: pd.DataFrame, variable: str, value: float, replacement: float, *, kind: str = "top"
) -> pd.DataFrame:
    """Top or bottom coding exactly as sdcMicro ``topBotCoding(x, value, replacement, kind)``.

    sdcMicro replaces values strictly above ``value`` (``kind="top"``: ``x[x > value]``) or strictly
    below it (``kind="bottom"``: ``x[x < value]``) by ``replacement``; a value equal to the limit
    is kept. Missing values stay missing.

    Parameters
    ----------
    data : the microdata; not modified.
    variable : numeric column.
    value : the limit.
    replacement : the released value for every coded record.
    kind : "top" or "bottom".

    Returns
    -------
    A copy of ``data`` with ``variable`` coded (float64 when the replacement is not an integer).

    References
    ----------
    sdcMicro R/topBotCoding.R, ``topBotCodingWORK``.
    """
    if kind not in ("top", "bottom"):
        raise SDCInputError(f"top_bottom_coding of {variable!r}: kind must be 'top' or 'bottom', got {kind!r}")
    series = _numeric_column(data, variable)
    for name, number in (("value", value), ("replacement", replacement)):
        if isinstance(number, bool) or not isinstance(number, (int, float, np.integer, np.floating)):
            raise SDCInputError(f"top_bottom_coding of {variable!r}: {name!r} must be a number, got {number!r}")
    coded = series > value if kind == "top" else series < value
    coded = coded.fillna(False).astype(bool) if coded.dtype != bool else coded
    out = data.copy()
    if float(replacement).is_integer() and pd.api.types.is_integer_dtype(series):
        out[variable] = series.where(~coded, int(replacement))
    else:
        out[variable] = series.astype("float64").where(~coded, float(replacement))
    return out


def top_coding(data: pd.DataFrame, variable: str, value: float, replacement: float) -> pd.DataFrame:
    """Top coding: values above ``value`` become ``replacement`` (SPEC §8.2; sdcMicro kind="top")."""
    return top_bottom_coding(data, variable, value, replacement, kind="top")


def bottom_coding(data: pd.DataFrame, variable: str, value: float, replacement: float) -> pd.DataFrame:
    """Bottom coding: values below ``value`` become ``replacement`` (SPEC §8.2; sdcMicro kind="bottom")."""
    return top_bottom_coding(data, variable, value, replacement, kind="bottom")
