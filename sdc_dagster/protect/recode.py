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
from sdc_dagster.validation import check_option, check_scalar


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


def group_names_problem(groups, names) -> str | None:
    """What is wrong with the ``names`` of a recode step's ``groups`` (None when nothing): a list
    parallel to ``groups``, one non-empty string per group, no two alike; only with ``groups``."""
    if names is None:
        return None
    if groups is None:
        return "'names' name the merged groups: give them with 'groups', not with 'mapping'"
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n.strip() for n in names):
        return f"'names' must be a list of non-empty strings, one per group, got {names!r}"
    if len(names) != len(groups):
        return f"'names' must name each of the {len(groups)} groups, got {len(names)} names"
    repeated = [n for i, n in enumerate(names) if n in names[:i]]
    if repeated:
        return f"'names' must be distinct: {repeated[0]!r} names two groups"
    return None


def _recode_mapping(column: str, mapping, groups, names=None) -> Mapping[Hashable, Hashable]:
    if (mapping is None) == (groups is None):
        raise SDCInputError(f"recode of {column!r}: give exactly one of 'mapping' or 'groups'")
    problem = group_names_problem(groups, names)
    if problem is not None:
        raise SDCInputError(f"recode of {column!r}: {problem}")
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
    names: Sequence[str] | None = None,
) -> list:
    """The categories a :func:`recode` (same parameters; ``names`` lists none) lists that do not occur
    in ``variable``.

    Recoding them is a no-op; a protection plan records them so that a reader of the release sees
    which parts of the step had nothing to do in this wave.
    """
    column = require_columns(data, [variable], role="variable")[0]
    listed = list(_recode_mapping(column, mapping, groups, names))
    occurs = pd.Index(listed, dtype=object).isin(data[column].dropna().unique())
    return [category for category, found in zip(listed, occurs) if not found]


def recode(
    data: pd.DataFrame,
    variable: str,
    mapping: Mapping[Hashable, Hashable] | None = None,
    *,
    groups: Sequence[Sequence[Hashable]] | None = None,
    names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Merge categories of a categorical variable (global recoding, SPEC §8.2).

    Parameters
    ----------
    data : the microdata; not modified.
    variable : the column to recode.
    mapping : old category -> new category; categories not in the mapping keep their code.
    groups : alternative to ``mapping``: groups of categories, each merged into its smallest code
        (the ordinal convention of SPEC §8.2, see :func:`merge_mapping`).
    names : with ``groups``, one name per group (non-empty, distinct): the label the released
        files give the merged category (:mod:`sdc_dagster.releases.categories`); the variant's
        values are the same with or without them.

    Returns
    -------
    A copy of ``data`` with ``variable`` recoded; missing values stay missing. A listed category
    that does not occur (e.g. in a wave where nobody chose it) is left alone: recoding it is a no-op,
    which :func:`absent_categories` reports for the plan's record.
    """
    column = require_columns(data, [variable], role="variable")[0]
    mapping = _recode_mapping(column, mapping, groups, names)
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
    labels : one label per interval; default the interval index 1, 2, ... (ordinal codes, which the
        released files show as the intervals' text, :func:`interval_labels`). Numbers (a value
        representing each interval, such as its median) keep the variable numeric: integers when
        they are whole and the variable was, floats otherwise.
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
    numbers = all(isinstance(label, (int, float, np.integer, np.floating)) and not isinstance(label, bool)
                  for label in labels)
    whole = numbers and all(float(label).is_integer() for label in labels)
    if all(isinstance(label, (int, np.integer)) for label in labels) or (
            whole and pd.api.types.is_integer_dtype(series.dtype)):
        out[variable] = pd.array(coded, dtype="Int64")
    elif numbers:  # a value per interval (its median, say): the variable stays a number
        numeric = np.full(len(values), np.nan)
        numeric[present] = np.asarray(labels, dtype="float64")[position[present]]
        out[variable] = pd.Series(numeric, index=data.index)
    else:
        out[variable] = pd.Series(coded, index=data.index)
    return out


def top_bottom_coding(
    data: pd.DataFrame, variable: str, value: float, replacement: float | None, *, kind: str = "top"
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
    replacement : the released value for every coded record; None releases them as missing
        (sdcMicro ``replacement=NA``). Like sdcMicro, there is no default.
    kind : "top" or "bottom".

    Returns
    -------
    A copy of ``data`` with ``variable`` coded (float64 when the replacement is not an integer;
    nullable Int64 for an integer column coded to missing).

    References
    ----------
    sdcMicro R/topBotCoding.R, ``topBotCodingWORK``.
    """
    check_option(kind, f"top_bottom_coding of {variable!r}: kind", ("top", "bottom"))
    series = _numeric_column(data, variable)
    for name, number in (("value", value), ("replacement", replacement)):
        if name == "replacement" and number is None:
            continue
        check_scalar(number, f"top_bottom_coding of {variable!r}: {name!r}")
    coded = series > value if kind == "top" else series < value
    coded = coded.fillna(False).astype(bool) if coded.dtype != bool else coded
    out = data.copy()
    if replacement is None:
        if pd.api.types.is_integer_dtype(series):
            out[variable] = series.astype("Int64").mask(coded)
        else:
            out[variable] = series.astype("float64").mask(coded)
    elif float(replacement).is_integer() and pd.api.types.is_integer_dtype(series):
        out[variable] = series.where(~coded, int(replacement))
    else:
        out[variable] = series.astype("float64").where(~coded, float(replacement))
    return out


def top_coding(data: pd.DataFrame, variable: str, value: float, replacement: float | None) -> pd.DataFrame:
    """Top coding: values above ``value`` become ``replacement`` (SPEC §8.2; sdcMicro kind="top")."""
    return top_bottom_coding(data, variable, value, replacement, kind="top")


def bottom_coding(data: pd.DataFrame, variable: str, value: float, replacement: float | None) -> pd.DataFrame:
    """Bottom coding: values below ``value`` become ``replacement`` (SPEC §8.2; sdcMicro kind="bottom")."""
    return top_bottom_coding(data, variable, value, replacement, kind="bottom")


_GLOBAL_RECODE_METHODS = ("breaks", "equidistant", "logEqui", "equalAmount")


def _r_seq(start: float, stop: float, length: int) -> np.ndarray:
    """R's ``seq(start, stop, length.out=length)``: the ends exact, start + i*by in between."""
    by = (stop - start) / (length - 1)
    return np.concatenate(([start], start + np.arange(1, length - 1) * by, [stop]))


def _rounded_unless_tied(breaks: np.ndarray) -> np.ndarray:
    rounded = np.round(breaks)  # half to even, as R's round(x)
    return rounded if len(np.unique(rounded)) == len(rounded) else breaks


def _r_quantile_type7(values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(x, probs)`` (type 7) with R's own interpolation (1-h)·x_lo + h·x_hi."""
    x = np.sort(values)
    position = 1.0 + (len(x) - 1) * probs  # 1-based, as R
    lo = np.floor(position).astype(np.int64)
    hi = np.ceil(position).astype(np.int64)
    h = position - lo
    quantiles = x[lo - 1].copy()
    mix = (position > lo) & (x[hi - 1] != quantiles)
    quantiles[mix] = (1.0 - h[mix]) * quantiles[mix] + h[mix] * x[hi - 1][mix]
    return quantiles


def _r_interval_labels(breaks: np.ndarray, *, include_lowest: bool) -> list[str]:
    """The labels of R's ``cut(x, breaks, dig.lab=8)`` (right-closed): ``formatC(breaks, digits=d,
    width=1)`` for the first d in 8..12 that makes neighbouring breaks differ, "(a,b]" per interval,
    "[" for the first one with include.lowest. Infinite breaks are printed as R's ``format`` prints
    them together ("-Inf" and " Inf"); if no d separates the breaks R names them "Range_i"."""
    finite = np.isfinite(breaks)
    specials = np.where(breaks > 0, "Inf", "-Inf")[~finite]
    width = max((len(s) for s in specials), default=0)
    for digits in range(8, 13):
        text = np.array(["%.*g" % (digits, b + 0.0) if ok else "" for b, ok in zip(breaks, finite)], dtype=object)
        text[~finite] = [s.rjust(width) for s in specials]
        if (text[1:] != text[:-1]).all():
            break
    else:
        return [f"Range_{i}" for i in range(1, len(breaks))]
    labels = [f"({a},{b}]" for a, b in zip(text[:-1], text[1:])]
    if include_lowest:
        labels[0] = "[" + labels[0][1:]
    return labels


def interval_labels(breaks: Sequence[float], *, right: bool = True) -> list[str]:
    """The text of each interval of :func:`interval_recode` with these ``breaks`` and ``right``:
    right-closed ``"(a,b]"`` with the first one closed on both ends ``"[a,b]"`` (interval_recode
    includes the lowest break), as sdcMicro's ``globalRecode`` prints intervals (R ``cut``,
    ``dig.lab=8``); left-closed ``"[a,b)"`` with the last ``"[a,b]"``. The released files and the
    report show an ``interval_recode`` without ``labels`` by these texts."""
    edges = np.asarray(list(breaks), dtype="float64")
    labels = _r_interval_labels(edges, include_lowest=right)
    if right or labels[0].startswith("Range_"):
        return labels
    inner = [label[1:-1] for label in labels]
    return [f"[{text})" for text in inner[:-1]] + [f"[{inner[-1]}]"]


def global_recode(
    values: pd.Series,
    *,
    breaks: Sequence[float] | int,
    method: str = "breaks",
    labels: Sequence[Hashable] | None = None,
) -> pd.Series:
    """Recode a continuous variable into intervals exactly as sdcMicro ``globalRecode`` (5.8.1).

    SPEC §8.2 (global recoding of a continuous variable into intervals). The intervals are
    right-closed, (b_i, b_(i+1)], as R's ``cut(x, breaks, labels, dig.lab=8)``:

    * ``method="breaks"``: ``breaks`` is the list of break points (sorted as ``cut`` sorts them);
      no ``include.lowest``, so a value equal to the lowest break falls outside every interval.
    * ``breaks`` a number b of intervals, with ``method`` one of ``"equidistant"``:
      ``seq(min - 1, max + 1, length.out = b + 1)``; ``"logEqui"``: ``exp`` of the same on ``log(x)``
      (both rounded to integers unless rounding makes two breaks equal); ``"equalAmount"``: the
      type-7 quantiles at 0, 1/b, ..., 1 (not rounded); the lowest break is included. b = 1 gives
      the single interval (min - 1, max + 1] whatever the method.

    Missing values stay missing, and so do values outside every interval (sdcMicro's NA).

    Parameters
    ----------
    values : numeric Series (not modified).
    breaks : list of break points, or a positive whole number of intervals.
    method : "breaks" (a list) or "equidistant", "logEqui", "equalAmount" (a number).
    labels : one label per interval; default the interval as sdcMicro prints it, e.g.
        ``"(10000000,30000000]"``, ``"[145340,24934005]"``, ``"(32022550,2.6992539e+08]"``.

    Returns
    -------
    Ordered categorical Series (categories = the labels in interval order), index and name of
    ``values``.

    Raises
    ------
    SDCInputError : non-numeric values, bad breaks/method/labels; ``logEqui`` with a value <= 0;
    ``equalAmount`` whose quantiles tie (sdcMicro would then ``jitter`` them at random).

    References
    ----------
    sdcMicro R/globalRecode.R (``globalRecodeWORK``); R ``cut.default``, ``formatC``.
    """
    series = pd.Series(values)
    name = series.name if series.name is not None else "values"
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise SDCInputError(f"global_recode of {name!r}: values must be numeric, got {series.dtype}")
    check_option(method, f"global_recode of {name!r}: method", _GLOBAL_RECODE_METHODS)
    x = series.to_numpy(dtype="float64", na_value=np.nan)
    present = x[~np.isnan(x)]
    include_lowest = False
    if isinstance(breaks, (float, np.floating)) and float(breaks).is_integer():
        breaks = int(breaks)  # a whole number of intervals given as a float, e.g. 5.0
    if isinstance(breaks, (int, np.integer)) and not isinstance(breaks, bool):
        if method == "breaks":
            raise SDCInputError(
                f"global_recode of {name!r}: a number of intervals needs method 'equidistant', 'logEqui' or "
                f"'equalAmount' (method 'breaks' takes a list of break points)"
            )
        check_scalar(breaks, f"global_recode of {name!r}: the number of intervals", integer=True, low=1)
        if len(present) == 0:
            raise SDCInputError(f"global_recode of {name!r}: no non-missing value to compute breaks from")
        if breaks == 1:
            edges = np.array([present.min() - 1.0, present.max() + 1.0])
        elif method == "equidistant":
            edges = _rounded_unless_tied(_r_seq(present.min() - 1.0, present.max() + 1.0, breaks + 1))
            include_lowest = True
        elif method == "logEqui":
            if (present <= 0).any():
                raise SDCInputError(f"global_recode of {name!r}: method 'logEqui' needs positive values")
            logs = np.log(present)
            edges = _rounded_unless_tied(np.exp(_r_seq(logs.min() - 1.0, logs.max() + 1.0, breaks + 1)))
            include_lowest = True
        else:
            edges = _r_quantile_type7(present, np.concatenate(([0.0], np.arange(1, breaks + 1) / breaks)))
            if len(np.unique(edges)) != len(edges):
                raise SDCInputError(
                    f"global_recode of {name!r}: method 'equalAmount' gives tied quantiles for {breaks} intervals "
                    f"(sdcMicro would jitter them at random); use fewer intervals or explicit breaks"
                )
            include_lowest = True
    else:
        if method != "breaks":
            raise SDCInputError(f"global_recode of {name!r}: method {method!r} takes a number of intervals as breaks")
        try:
            edges = np.sort(np.asarray(list(breaks), dtype="float64"))
        except (TypeError, ValueError):
            raise SDCInputError(f"global_recode of {name!r}: breaks must be numbers, got {breaks!r}") from None
        if edges.ndim != 1 or len(edges) < 2 or np.isnan(edges).any() or (np.diff(edges) == 0).any():
            raise SDCInputError(f"global_recode of {name!r}: breaks must be at least two distinct numbers")
    n_intervals = len(edges) - 1
    if labels is None:
        labels = _r_interval_labels(edges, include_lowest=include_lowest)
    labels = list(labels)
    if len(labels) != n_intervals or len(set(labels)) != len(labels):
        raise SDCInputError(
            f"global_recode of {name!r}: {n_intervals} intervals need {n_intervals} distinct labels, got {labels!r}"
        )
    codes = np.searchsorted(edges, x, side="left") - 1  # b_i < x <= b_(i+1)
    if include_lowest:
        codes[x == edges[0]] = 0
    codes[np.isnan(x) | (codes < 0) | (codes >= n_intervals)] = -1
    categorical = pd.Categorical.from_codes(codes, categories=labels, ordered=True)
    return pd.Series(categorical, index=series.index, name=series.name)
