"""Microaggregation of mixed (continuous and categorical) variables on a Gower-type distance: sdcMicro's
``microaggrGower`` (SPEC §8.6).

sdcMicro's ``maGowerWORK`` with VIM's ``gowerD`` (``src/gowerD.cpp``): within each stratum, every
record is replaced by an aggregate of its k nearest records (itself included unless k earlier records
lie at distance 0: the k smallest distances, ties to the earlier record, VIM's ``whichminN``). It is
not a partition: two records' neighbourhoods may overlap, so k-anonymity is not guaranteed.

Distance between records a and b over the distance variables, with weights w_v (default 1) and
W = sum of w_v, added in the order continuous, nominal, ordinal, semi-continuous ("mixed"):

* continuous: w · |a/r - b/r| / W, r = max - min of the stratum's observed values (1 if 0);
* nominal: w / W if the categories differ;
* ordinal: |pos(a) - pos(b)| / (L - 1) · w / W, pos the category's position 1..(number of levels) in
  the level order and L the label of the last level read as a number, as sdcMicro passes it (L is the
  number of levels when the levels are 1..L; levels "1", "3", "4", "7" give L = 7);
* mixed (semi-continuous with a probability mass at the constant c): w / W if exactly one of the
  two values equals c, w · |a - b| / W (unscaled, as VIM) if neither does, 0 if both do.

A missing value is coded as the variable's largest (scaled) value + 1 (VIM's ``maxplus1``), i.e.
it is compared as one more value.

Aggregates: a continuous variable the mean of its neighbours' observed values (sdcMicro ``numFun =
mean`` gives NA when a neighbour's value is missing: deviation, documented); a categorical one a
category drawn with probability proportional to its count among the neighbours (sdcMicro's default
``catFun = VIM::sampleCat``; ``categorical="sample"``) or the most frequent, ties drawn at random
(``VIM::maxCat``, ``categorical="mode"``); draws from ``random_state``.

Speed: all n^2 distances of a stratum are computed (compiled, without storing them), as sdcMicro
does ("in each by group all distances are computed"): strata keep it fast.

References
----------
sdcMicro ``R/maG.R`` (``microaggrGower``); VIM ``R/gowerD.R``, ``src/gowerD.cpp``; Gower (1971),
A general coefficient of similarity and some of its properties, Biometrics 27(4); Templ, Kowarik &
Meindl (2015), Journal of Statistical Software 67(4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numba import njit

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.protect.strata import stratum_codes, stratum_members
from sdc_dagster.validation import check_option, check_scalar

SCALES = ("continuous", "nominal", "ordinal")
CATEGORICAL_AGGREGATES = ("sample", "mode")
_KIND = {"continuous": 0, "nominal": 1, "ordinal": 2, "mixed": 3}


@njit(cache=True)
def gower_neighbours(z: np.ndarray, kinds: np.ndarray, weights: np.ndarray, levels: np.ndarray,
                     constants: np.ndarray, k: int) -> np.ndarray:
    """The k nearest records (positions) of every record of ``z`` (coded as in the module docstring,
    columns in the order continuous, nominal, ordinal, mixed; ``kinds`` 0..3), by VIM's distance,
    ties to the earlier record."""
    n, p = z.shape
    total_weight = 0.0
    for v in range(p):
        total_weight += weights[v]
    out = np.empty((n, k), dtype=np.int64)
    best = np.empty(k)
    for i in range(n):  # compiled: every pair, as VIM's gowerd
        found = 0
        for j in range(n):
            d = 0.0
            for v in range(p):
                a, b = z[j, v], z[i, v]
                kind = kinds[v]
                if kind == 0:
                    d += weights[v] * abs(a - b) / total_weight
                elif kind == 1:
                    if a != b:
                        d += weights[v] / total_weight
                elif kind == 2:
                    d += abs(a - b) / (levels[v] - 1) * weights[v] / total_weight
                else:
                    c = constants[v]
                    if (a == c) != (b == c):
                        d += weights[v] / total_weight
                    elif a != c and b != c:
                        d += weights[v] * abs(a - b) / total_weight
            if found == k and d >= best[k - 1]:
                continue  # an equal distance loses to the earlier record
            slot = found if found < k else k - 1
            if found < k:
                found += 1
            while slot > 0 and d < best[slot - 1]:
                best[slot], out[i, slot] = best[slot - 1], out[i, slot - 1]
                slot -= 1
            best[slot], out[i, slot] = d, j
    return out


def _scale(data: pd.DataFrame, column: str, scales: Mapping[str, str]) -> str:
    if column in scales:
        return check_option(scales[column], f"scales[{column!r}]", SCALES)
    series = data[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "ordinal" if series.dtype.ordered else "nominal"
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    return "continuous" if numeric else "nominal"


def _positions(series: pd.Series, scale: str) -> tuple[np.ndarray, float]:
    """Category positions 1..L in level order (NaN where missing) and the L of the ordinal distance:
    an ordered categorical's own order, else the sorted distinct values (R ``factor``).

    For an ordinal variable sdcMicro's ``maGowerWORK`` passes VIM's ``gowerD`` the *label* of the last
    level read as a number (``levOrders``), not the number of levels: levels "2", "3" give L = 3 and
    a step of 1/2, levels "1", "3", "4", "7" give L = 7. That L is used when the last label reads as a
    number above 1; otherwise (R would give NA, or a zero or negative L - 1) the number of levels."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        uniques = series.cat.categories
    else:
        codes, uniques = pd.factorize(series, sort=True)
    levels = float(len(uniques))
    if scale == "ordinal" and len(uniques):
        last = pd.to_numeric(pd.Series([uniques[-1]]).astype(str), errors="coerce").iloc[0]
        if np.isfinite(last) and last > 1:
            levels = float(last)
    return np.where(codes >= 0, codes + 1.0, np.nan), levels


def _coded(frame: pd.DataFrame, columns: Sequence[str], kinds: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The distance variables of one stratum coded for :func:`gower_neighbours`, and their level counts."""
    z = np.empty((len(frame), len(columns)))
    levels = np.ones(len(columns))
    for v, (column, kind) in enumerate(zip(columns, kinds)):
        if kind in ("nominal", "ordinal"):
            z[:, v], levels[v] = _positions(frame[column], kind)
        else:
            values = frame[column].to_numpy(dtype="float64", na_value=np.nan)
            if kind == "continuous":
                seen = values[~np.isnan(values)]
                spread = seen.max() - seen.min() if len(seen) else 1.0
                values = values / (spread if spread > 0 else 1.0)
            z[:, v] = values
        seen = z[~np.isnan(z[:, v]), v]
        z[np.isnan(z[:, v]), v] = seen.max() + 1 if len(seen) else 1.0  # VIM's maxplus1
    return z, levels


def _categorical(values: pd.Series, neighbours: np.ndarray, how: str, rng: np.random.Generator) -> pd.Series:
    """Per record, a category of its neighbours: drawn in proportion to their counts (``sample``), or
    the most frequent, ties drawn (``mode``); missing where every neighbour's is missing."""
    codes, uniques = pd.factorize(values)
    near = codes[neighbours]  # records x k, -1 missing
    observed = near >= 0
    counts = (near[:, :, None] == near[:, None, :]).sum(axis=2) * observed  # each neighbour's category count
    if how == "sample":  # a neighbour drawn uniformly among the observed: its category has probability count / total
        score = np.where(observed, rng.random(near.shape), -1.0)
    else:
        score = np.where(observed, counts + rng.random(near.shape) * 0.5, -1.0)
    chosen = near[np.arange(len(near)), np.argmax(score, axis=1)]
    if isinstance(values.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical.from_codes(values.cat.codes.to_numpy()[neighbours][np.arange(len(near)),
                                                                                          np.argmax(score, axis=1)],
                                                   dtype=values.dtype), index=values.index)
    picked = pd.Series(np.asarray(uniques, dtype=object)[np.maximum(chosen, 0)], index=values.index)
    picked[chosen < 0] = None
    return picked.astype(values.dtype) if (chosen >= 0).all() else picked


def gower_options(columns: Sequence[str], *, k=3, distance_columns: Sequence[str] | None = None,
                  scales: Mapping[str, str] | None = None, mixed: Mapping[str, float] | None = None,
                  weights: Sequence[float] | None = None, categorical: str = "sample") -> None:
    """Check the options of :func:`microaggregation_gower` that need no data: k >= 1, the
    categorical aggregate, each scale one of :data:`SCALES`, each semi-continuous constant a finite
    number, and one non-negative weight per distance column (``distance_columns``, default
    ``columns``), not all 0. A
    plan's checks run it on each step before any data is read
    (:func:`sdc_dagster.protect.plan.plan_problems`).

    Raises
    ------
    SDCInputError : ``"<option>: must be ..., got ..."`` for the first option that breaks its rule.
    """
    check_scalar(k, "k", integer=True, low=1)
    check_option(categorical, "categorical", CATEGORICAL_AGGREGATES)
    for column, scale in dict(scales or {}).items():
        check_option(scale, f"scales[{column!r}]", SCALES)
    for column, constant in dict(mixed or {}).items():
        check_scalar(constant, f"mixed[{column!r}] (the semi-continuous variable's constant)")
    distance = columns if distance_columns is None else distance_columns
    count = 1 if isinstance(distance, str) else len(distance)
    if weights is not None and (isinstance(weights, str) or len(weights) != count
                                or not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                                           and np.isfinite(w) and w >= 0 for w in weights)
                                or sum(weights) <= 0):
        raise SDCInputError(f"weights: must be one non-negative number per distance column ({count}), not all 0; "
                            f"got {weights!r}")


def microaggregation_gower(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    k: int = 3,
    distance_columns: Sequence[str] | None = None,
    strata: str | Sequence[str] | None = None,
    scales: Mapping[str, str] | None = None,
    mixed: Mapping[str, float] | None = None,
    weights: Sequence[float] | None = None,
    categorical: str = "sample",
    random_state=None,
) -> pd.DataFrame:
    """Replace ``columns`` by aggregates over each record's k nearest records on a Gower-type distance
    (sdcMicro ``microaggrGower``; the module docstring gives the rule).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : the variables replaced (sdcMicro ``variables``): continuous ones by the mean, categorical
        ones (nominal or ordinal) by a neighbour's category.
    k : neighbours per record (sdcMicro ``aggr``).
    distance_columns : the variables of the distance (sdcMicro ``dist_var``; default ``columns``).
    strata : column name(s) (sdcMicro ``by``): neighbours are searched within the stratum.
    scales : {column: "continuous" | "nominal" | "ordinal"}; default: an ordered categorical is
        ordinal, another categorical or a non-numeric column nominal, a numeric column continuous.
    mixed : {column: constant}: semi-continuous distance variables (sdcMicro ``mixed``,
        ``mixed.constant``) with a probability mass at the constant (e.g. 0).
    weights : one weight per distance variable, in the order of ``distance_columns``.
    categorical : "sample" (sdcMicro's default ``VIM::sampleCat``) or "mode" (``VIM::maxCat``).
    random_state : seed or numpy Generator of the categorical draws.

    Returns
    -------
    A copy of ``data`` with ``columns`` replaced, indexed like ``data``.
    """
    columns = require_columns(data, columns, role="column")
    distance = require_columns(data, columns if distance_columns is None else distance_columns, role="distance column")
    if not columns or not distance:
        raise SDCInputError("columns: name at least one column to microaggregate and one distance column")
    gower_options(columns, distance_columns=distance, k=k, scales=scales, mixed=mixed, weights=weights, categorical=categorical)
    scales, mixed = dict(scales or {}), dict(mixed or {})
    require_columns(data, list(scales) + list(mixed), role="scales/mixed column")
    weight_of = dict(zip(distance, [1.0] * len(distance) if weights is None else weights))
    kinds = {c: "mixed" if c in mixed else _scale(data, c, scales) for c in distance}
    position = {c: i for i, c in enumerate(data.columns)}
    # VIM's order: continuous, nominal, ordinal, mixed, each in the data's column order
    ordered = sorted(distance, key=lambda c: (_KIND[kinds[c]], position[c]))
    for c in ordered:
        if kinds[c] in ("continuous", "mixed") and not pd.api.types.is_numeric_dtype(data[c]):
            raise SDCInputError(f"distance column {c!r}: a {kinds[c]} variable must be numeric, got {data[c].dtype}")
    kind_codes = np.array([_KIND[kinds[c]] for c in ordered], dtype=np.int64)
    weight_vector = np.array([float(weight_of[c]) for c in ordered])
    constants = np.array([float(mixed.get(c, 0.0)) for c in ordered])
    codes, values = stratum_codes(data, strata)
    neighbours = np.empty((len(data), int(k)), dtype=np.int64)
    for rows, value in zip(stratum_members(codes), values):  # strata, not records
        if len(rows) < k:
            raise SDCInputError(f"strata: stratum {value!r} has {len(rows)} records, fewer than k={k}")
        z, levels = _coded(data.iloc[rows], ordered, [kinds[c] for c in ordered])
        neighbours[rows] = rows[gower_neighbours(z, kind_codes, weight_vector, np.maximum(levels, 2.0), constants, int(k))]
    rng = np.random.default_rng(random_state)
    out = data.copy()
    for column in columns:
        if column in mixed or _scale(data, column, scales) == "continuous":
            x = data[column].to_numpy(dtype="float64", na_value=np.nan)[neighbours]
            seen = ~np.isnan(x)
            total = np.where(seen, x, 0.0).sum(axis=1)
            count = seen.sum(axis=1)
            out[column] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        else:
            out[column] = _categorical(data[column], neighbours, categorical, rng)
    return out
