"""Distances between records of mixed scales, shared by the risk and the loss measures.

* :func:`ordinal_positions`: the category positions of an ordinal variable in two files (the
  partial distance of SPEC §9.1 (3) and the ordinal part of Gower's distance, SPEC §4.1).
* :func:`gower_encoding`, :func:`gower_block`, :func:`gower_distances`: Gower's (1971) distance
  for mixed continuous, nominal and ordinal variables exactly as ``cluster::daisy(metric="gower")``
  computes it (record linkage, SPEC §4.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.validation import check_option, numeric_matrix

GOWER_SCALES = ("nominal", "ordinal", "continuous")


def ordinal_positions(x: pd.Series, y: pd.Series, column: str,
                      categories: Sequence | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Category positions 0..k-1 of both series (NaN for missing) and k_j.

    With ``categories`` the positions are those of the ordered list; otherwise the sorted
    union of the codes observed in either file (SPEC §8.2: merged categories keep the smallest
    member code, so the union is the original category set).
    """
    if categories is None:
        observed = pd.concat([x.dropna(), y.dropna()], ignore_index=True)
        try:
            categories = np.sort(observed.unique())
        except TypeError as error:
            raise SDCInputError(
                f"column {column!r}: ordinal codes must be mutually orderable, or pass categories"
            ) from error
    categories = list(categories)
    if len(set(categories)) != len(categories):
        raise SDCInputError(f"categories[{column!r}]: categories must be distinct")
    positions = []
    for side, series in (("original", x), ("protected", y)):
        codes = pd.Categorical(series, categories=categories).codes.astype(float)
        unknown = (codes < 0) & series.notna().to_numpy()
        if unknown.any():
            value = series[unknown].iloc[0]
            raise SDCInputError(f"{side} column {column!r}: value {value!r} is not in the ordinal categories")
        codes[codes < 0] = np.nan
        positions.append(codes)
    return positions[0], positions[1], len(categories)


def _gower_scale(column: str, x: pd.Series, y: pd.Series, scales: Mapping[str, str]) -> str:
    """The scale of a linkage column: ``scales[column]`` when given, otherwise from the dtypes as
    sdcMicro ``recordLinkage`` and ``daisy`` read R classes (ordered Categorical in either file:
    ordinal; Categorical, object, string or bool: nominal; numeric: continuous)."""
    if column in scales:
        return check_option(scales[column], f"scales[{column!r}]", GOWER_SCALES)
    if any(isinstance(s.dtype, pd.CategoricalDtype) and s.dtype.ordered for s in (x, y)):
        return "ordinal"
    if all(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (x, y)):
        return "continuous"
    return "nominal"


def _gower_order(column: str, x: pd.Series, y: pd.Series, categories: Mapping[str, Sequence]):
    """The category order of an ordinal column: ``categories[column]``, else the categories of its
    ordered Categorical dtype (the same in both files when both are ordered), else None (the sorted
    codes observed in either file, :func:`ordinal_positions`)."""
    if column in categories:
        return list(categories[column])
    orders = [list(s.dtype.categories) for s in (x, y) if isinstance(s.dtype, pd.CategoricalDtype) and s.dtype.ordered]
    if len(orders) == 2 and orders[0] != orders[1]:
        raise SDCInputError(
            f"column {column!r}: the ordered categories differ between the original and the protected file"
        )
    return orders[0] if orders else None


def gower_encoding(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str],
    scales: Mapping[str, str],
    categories: Mapping[str, Sequence],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both files as float matrices on which Gower's partial distances are simple, and the nominal flags.

    As ``cluster::daisy(rbind(x, y), metric = "gower")``: a continuous variable becomes
    (v - min) / range and an ordinal one (position - min) / range of its category positions, min
    and range over the values observed in BOTH files (a range of 0 becomes 1), so that |a - b| is
    its partial distance; a nominal variable becomes integer codes shared by both files, whose
    partial distance is 0 when equal and 1 otherwise. Missing values are NaN.
    """
    columns = require_columns(original, columns, role="original column")
    require_columns(protected, columns, role="protected column")
    if not columns:
        raise SDCInputError("original column: the selection is empty; name at least one column")
    if len(original) != len(protected):
        raise SDCInputError(
            f"protected: has {len(protected)} rows but original has {len(original)}; rows are matched by position"
        )
    n = len(original)
    encoded = np.empty((2 * n, len(columns)), dtype=np.float64)
    nominal = np.zeros(len(columns), dtype=bool)
    for j, c in enumerate(columns):
        x, y = original[c].reset_index(drop=True), protected[c].reset_index(drop=True)
        scale = _gower_scale(c, x, y, scales)
        if scale == "nominal":
            # codes in order of first appearance; both files as objects only when their dtypes differ
            # (a numeric column of one dtype factorizes ten times faster than its objects)
            same = x.dtype == y.dtype and not isinstance(x.dtype, pd.CategoricalDtype)
            codes = pd.factorize(pd.concat([x, y] if same else [x.astype(object), y.astype(object)],
                                           ignore_index=True))[0]
            encoded[:, j] = np.where(codes >= 0, codes, np.nan)
            nominal[j] = True
            continue
        if scale == "ordinal":
            px, py, _ = ordinal_positions(x, y, c, _gower_order(c, x, y, categories))
            values = np.concatenate([px, py])
        else:
            try:
                values = np.concatenate([
                    numeric_matrix(frame, [c], role=f"{side} column", allow_missing=True)[:, 0]
                    for side, frame in (("original", original), ("protected", protected))
                ])
            except SDCInputError as exc:
                raise SDCInputError(
                    f"{exc} (Gower reads it as continuous; a nominal or ordinal variable is named so in scales=)"
                ) from None
        seen = values[~np.isnan(values)]
        low, spread = (seen.min(), seen.max() - seen.min()) if len(seen) else (0.0, 1.0)
        encoded[:, j] = (values - low) / (spread if spread > 0 else 1.0)
    return encoded[:n], encoded[n:], nominal


def gower_block(zm: np.ndarray, zx: np.ndarray, nominal: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Gower distances between the rows of ``zm`` and of ``zx`` (encoded by :func:`gower_encoding`):
    the mean of the partial distances over the variables observed in both records, NaN for a pair
    with no such variable (daisy's pairwise treatment of missing values, equal weights). With
    ``weights`` (one non-negative number per variable) the weighted mean, as daisy's ``weights``:
    sum_j w_j d_j / sum_j w_j over the variables observed in both records (NaN where that sum is 0)."""
    total = np.zeros((len(zm), len(zx)))
    count = np.zeros((len(zm), len(zx)))
    complete = 0.0  # weight of the variables observed in every record of both blocks
    for j in range(zm.shape[1]):
        w = 1.0 if weights is None else float(weights[j])
        # |a - b| is NaN exactly when a value is missing; for nominal codes it is > 0 when they differ
        gap = np.abs(zm[:, j, None] - zx[None, :, j])
        if np.isnan(zm[:, j]).any() or np.isnan(zx[:, j]).any():
            seen = ~np.isnan(gap)
            count += w * seen if w != 1.0 else seen
        else:
            complete += w
        if w == 0.0:
            continue
        partial = (gap > 0).astype(np.float64) if nominal[j] else np.nan_to_num(gap, copy=False, nan=0.0)
        total += partial if w == 1.0 else w * partial
    count += complete
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)


def gower_distances(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str],
    *,
    scales: Mapping[str, str] | None = None,
    categories: Mapping[str, Sequence] | None = None,
    weights: Sequence[float] | None = None,
) -> np.ndarray:
    """Gower distances between every protected and every original record (SPEC §4.1).

    The (protected x original) block of ``cluster::daisy(rbind(original, protected), metric =
    "gower", weights = weights)``, which sdcMicro's ``recordLinkage`` links on (equal weights by
    default; ``weights``: one per column, :func:`gower_block`); the variables' scales and the
    missing-value rule are those of :func:`record_linkage_risk` with ``distance="gower"``. NaN marks
    a pair with no variable observed in both records (or only variables of weight 0). Holds an
    n x n float matrix.

    References
    ----------
    Gower (1971), Biometrics 27(4); Kaufman & Rousseeuw (1990); R ``cluster::daisy``.
    """
    zx, zm, nominal = gower_encoding(original, protected, columns, dict(scales or {}), dict(categories or {}))
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (zx.shape[1],) or not np.isfinite(weights).all() or (weights < 0).any():
            raise SDCInputError(f"weights: needs {zx.shape[1]} finite non-negative numbers, one per column, got {list(weights)}")
    return gower_block(zm, zx, nominal, weights)
