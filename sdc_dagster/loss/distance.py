"""Distribution-distortion loss from record-level partial distances (SPEC §9.1–§9.3).

Every variable X_j gets a partial distance d(x_ij, x*_ij) in [0, 1] chosen by its scale
(nominal (2), ordinal (3), continuous (4)–(6), scaled arctan, unnormalised footnote variant);
suppressed or missing values are replaced by the "largest possible loss" working values of
SPEC §9.3 before the distances are taken. The overall measure is lambda of SPEC eq (1).

A value missing in both files (item non-response that stayed missing) is skipped pairwise: nothing
was known, so nothing was compared; its distance is recorded as 0 (it adds nothing to a record's
sum or to TOPSIS) and it is left out of the averages, lambda = sum of distances / number of values
compared (m·n when nothing is missing on both sides). :func:`distance_losses` computes several
continuous variants from one pass over the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.numerics.distance import ordinal_positions
from sdc_dagster.validation import check_option, check_pair, check_scalar, continuous_values

SCALES = ("nominal", "ordinal", "continuous")
CONTINUOUS_DISTANCES = ("max_abs", "max_sq", "arctan", "scaled_arctan", "max_value")
HIDDEN_RULES = ("A", "B")


@dataclass(frozen=True, eq=False)
class LossResult:
    """Result of :func:`distance_loss`.

    Attributes
    ----------
    value : float
        lambda of SPEC eq (1): mean partial distance over all records and variables, in [0, 1].
    per_record : Series
        Sum over variables of the record's partial distances (indexed like the input).
    per_variable : Series
        Mean partial distance of each variable (index = variable names).
    distances : DataFrame
        The n x m partial distances d(x_ij, x*_ij) (index like the input, one column per variable).
    compared : Series
        Number of values compared per variable (records not missing on both sides).
    """

    value: float
    per_record: pd.Series
    per_variable: pd.Series
    distances: pd.DataFrame
    compared: pd.Series


def _nominal_distance(x: pd.Series, y: pd.Series, x_missing: np.ndarray, y_missing: np.ndarray) -> np.ndarray:
    """SPEC (2), with a hidden value on either side counted as a different category (§9.3);
    ``x_missing``, ``y_missing``: where ``x``, ``y`` are missing."""
    if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
        differs = _float_values(x) != _float_values(y)
    else:
        # object arrays compare element by element; categoricals with different category sets
        # would refuse pandas' own comparison
        differs = x.to_numpy(dtype=object) != y.to_numpy(dtype=object)
    distance = np.where(x_missing | y_missing, 1.0, differs.astype(float))
    # both sides unknown: nothing was known, so nothing was lost (OPEN decision, see distance_loss)
    distance[x_missing & y_missing] = 0.0
    return distance


def _float_values(values: pd.Series) -> np.ndarray:
    """A numeric column as float64, missing values NaN (``to_numpy(dtype=float, na_value=nan)``,
    without its missing-value pass where the column is a NumPy one, whose missing values are NaN
    already)."""
    if isinstance(values.dtype, np.dtype):
        return np.asarray(values.to_numpy(), dtype=float)
    return values.to_numpy(dtype=float, na_value=np.nan)


def _missing(values: pd.Series) -> np.ndarray:
    """Where a column is missing (``values.isna()`` as an array, without building the Series)."""
    return np.asarray(pd.isna(values.array))


def _ordinal_distance(x: pd.Series, y: pd.Series, column: str, categories: Sequence | None) -> np.ndarray:
    """SPEC (3): positions apart / (k_j - 1); a hidden side becomes the farthest category (§9.3)."""
    px, py, k = ordinal_positions(x, y, column, categories)
    if k <= 1:
        # a single category: no two positions can differ
        return np.zeros(len(x))
    top = k - 1
    both = np.isnan(px) & np.isnan(py)
    # Rules A and B coincide for ordinal scales: the farthest of the two end categories.
    py = np.where(np.isnan(py), np.where(px <= top - px, top, 0), py)
    px = np.where(np.isnan(px), np.where(py <= top - py, top, 0), px)
    distance = np.abs(px - py) / top
    # both sides unknown: nothing was known, so nothing was lost
    distance[both] = 0.0
    return distance


def _substitute_hidden_continuous(x: np.ndarray, y: np.ndarray, column: str, hidden_rule: str):
    """Working values for hidden continuous values (SPEC §9.3 rules A and B).

    Extremes and median are taken over Z_j, the records whose original value is observed.
    Rule A (median split) is defined by the seed for a hidden released value only; for a
    missing original it is applied symmetrically (x := max if x* <= median else min).
    """
    x_missing, y_missing = np.isnan(x), np.isnan(y)
    if not (x_missing.any() or y_missing.any()):
        return x, y
    observed = x[~x_missing]
    if observed.size == 0:
        raise NotComputable(f"original column {column!r}: no observed value to substitute hidden values")
    low, high = observed.min(), observed.max()
    split = np.median(observed) if hidden_rule == "A" else (low + high) / 2.0
    both = x_missing & y_missing
    # a hidden released value becomes the extreme on the other side of the split from x
    y = np.where(y_missing & ~both, np.where(x <= split, high, low), y)
    x = np.where(x_missing & ~both, np.where(y <= split, high, low), x)
    # both unknown: nothing was known, so nothing was lost
    x = np.where(both, 0.0, x)
    y = np.where(both, 0.0, y)
    return x, y


def _continuous_distance(gap: np.ndarray, x: np.ndarray, column: str, continuous_distance: str,
                         c: float) -> np.ndarray:
    """SPEC (4)–(6), scaled arctan and the footnote variant from the gaps |x - x*| taken after the
    substitution of hidden values (``x``: the original values, for the footnote's maximum)."""
    if continuous_distance == "max_value":
        observed = x[~np.isnan(x)]
        if (observed < 0).any():
            raise SDCInputError(
                f"original column {column!r}: continuous_distance='max_value' needs non-negative values"
            )
        scale = observed.max() if observed.size else 0.0
        if scale <= 0:
            raise SDCInputError(
                f"original column {column!r}: continuous_distance='max_value' needs a positive maximum"
            )
    if continuous_distance == "arctan":
        return np.arctan(gap) * (2.0 / np.pi)
    if continuous_distance == "scaled_arctan":
        return np.arctan(c * gap) * (2.0 / np.pi)
    if continuous_distance == "max_value":
        # a hidden value substituted by an extreme keeps the gap within [0, max - min] <= max
        return gap / scale
    if continuous_distance == "max_sq":
        gap = gap * gap
    largest = gap.max() if gap.size else 0.0
    # OPEN (SPEC §9.1): an unchanged variable has max = 0; its distances are 0
    return gap / largest if largest > 0 else np.zeros_like(gap)


def _validate_options(scales: Mapping[str, str], continuous_distance: str, c: float, hidden_rule: str,
                      categories: Mapping[str, Sequence] | None) -> None:
    if not isinstance(scales, Mapping) or not scales:
        raise SDCInputError("scales: a non-empty mapping {column: 'nominal'|'ordinal'|'continuous'} is required")
    for column, scale in scales.items():
        check_option(scale, f"scales[{column!r}]", SCALES)
    check_option(continuous_distance, "continuous_distance", CONTINUOUS_DISTANCES)
    check_scalar(c, "c", low=0, closed="neither")
    check_option(hidden_rule, "hidden_rule", HIDDEN_RULES)
    for column in categories or {}:
        if scales.get(column) != "ordinal":
            raise SDCInputError(f"categories[{column!r}]: categories are only used for ordinal variables")


def partial_distances(original: pd.DataFrame, protected: pd.DataFrame, scales: Mapping[str, str], *,
                      continuous_distance: str = "arctan", c: float = 1.0, hidden_rule: str = "B",
                      categories: Mapping[str, Sequence] | None = None) -> pd.DataFrame:
    """The n x m matrix of partial distances d(x_ij, x*_ij) of SPEC §9.1 (2)–(6).

    Parameters are those of :func:`distance_loss`.

    Returns
    -------
    DataFrame
        Index of ``original``, one float column per variable of ``scales``, values in [0, 1].
    """
    return distance_losses(original, protected, scales, continuous_distances=(continuous_distance,), c=c,
                           hidden_rule=hidden_rule, categories=categories)[continuous_distance].distances


def distance_losses(original: pd.DataFrame, protected: pd.DataFrame, scales: Mapping[str, str], *,
                    continuous_distances: Sequence[str] = ("arctan",), c: float = 1.0, hidden_rule: str = "B",
                    categories: Mapping[str, Sequence] | None = None,
                    unchanged: Sequence[str] = ()) -> dict[str, LossResult]:
    """:func:`distance_loss` under several continuous distances from one pass over the data (SPEC §9.1).

    The nominal and ordinal distances and the substituted continuous gaps |x - x*| (SPEC §9.3) are
    computed once; each variant of ``continuous_distances`` only rescales the gaps.

    ``unchanged``: columns the caller knows to be released as they are (the plan search, which
    changes the keys only): their partial distances are 0 (eqs (2)-(6) at x* = x; a value missing on
    both sides is 0 too) and are not computed, and their values compared are the observed ones. The
    result is the same as without it, in every bit, when those columns are equal in both files.

    Returns
    -------
    dict
        ``{continuous_distance: LossResult}``, in the order given.
    """
    for variant in continuous_distances:
        _validate_options(scales, variant, c, hidden_rule, categories)
    columns = check_pair(original, protected, list(scales))
    categories = categories or {}
    shared, gaps, compared = {}, {}, {}
    kept = [column for column in columns if column in unchanged]
    for column in kept:  # the values observed in the columns released as they are
        compared[column] = len(original) - int(np.count_nonzero(_missing(original[column])))
    for column in columns:
        scale = scales[column]
        if column in unchanged:
            shared[column] = np.zeros(len(original))
            continue
        x, y = original[column], protected[column]
        x_missing, y_missing = _missing(x), _missing(y)
        compared[column] = len(original) - int(np.count_nonzero(x_missing & y_missing))
        if scale == "nominal":
            shared[column] = _nominal_distance(x, y, x_missing, y_missing)
        elif scale == "ordinal":
            shared[column] = _ordinal_distance(x, y, column, categories.get(column))
        else:
            x = continuous_values(original, column, "original")
            y = continuous_values(protected, column, "protected")
            gaps[column] = (np.abs(np.subtract(*_substitute_hidden_continuous(x, y, column, hidden_rule))), x)
    counts = pd.Series([compared[column] for column in columns], index=columns, name="compared", dtype="int64")
    results = {}
    for variant in continuous_distances:
        # n x m, column-major like pandas' own block (the sums of _loss_result run in that order)
        distances = np.stack([
            shared[column] if column in shared else _continuous_distance(*gaps[column], column, variant, c)
            for column in columns
        ]).T
        results[variant] = _loss_result(pd.DataFrame(distances, index=original.index, columns=columns), counts)
    return results


def _loss_result(distances: pd.DataFrame, compared: pd.Series) -> LossResult:
    """lambda (eq (1)), per-record sums and per-variable means over the values compared."""
    values = distances.to_numpy()
    per_record = pd.Series(values.sum(axis=1), index=distances.index, name="distance")
    counts = compared.to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_variable = pd.Series(values.sum(axis=0) / counts, index=distances.columns, name="distance")
    total = counts.sum()
    value = float(values.sum() / total) if total else float("nan")
    return LossResult(value=value, per_record=per_record, per_variable=per_variable, distances=distances,
                      compared=compared)


def distance_loss(original: pd.DataFrame, protected: pd.DataFrame, scales: Mapping[str, str], *,
                  continuous_distance: str = "arctan", c: float = 1.0, hidden_rule: str = "B",
                  categories: Mapping[str, Sequence] | None = None, unchanged: Sequence[str] = ()) -> LossResult:
    """Distribution-distortion measure lambda, SPEC §9.1 eq (1), with partial distances (2)–(6).

    Parameters
    ----------
    original, protected : DataFrame
        The original and the released file; same index, the columns of ``scales`` in both.
        Neither is modified.
    scales : mapping
        ``{column: "nominal" | "ordinal" | "continuous"}``; the variables compared.
    continuous_distance : str
        Partial distance of continuous variables: ``"max_abs"`` (4), ``"max_sq"`` (5),
        ``"arctan"`` (6) (2/pi)·arctan|x - x*|, ``"scaled_arctan"`` (2/pi)·arctan(c|x - x*|)
        (S003 §7) or ``"max_value"`` |x - x*| / max_l x_lj (S003 footnote 2, X_j >= 0).
    c : float
        Scale of ``"scaled_arctan"`` (SPEC suggests 0 < c < 1; any c > 0 is accepted).
    hidden_rule : {"A", "B"}
        Working value for a suppressed / missing value on one side (SPEC §9.3): "A" splits
        continuous values at the median, "B" (default, "largest possible loss") at the
        mid-range. Nominal: d = 1; ordinal: the farthest end category (both rules).
        A value missing on both sides is not compared (see the module docstring): d = 0 in
        ``distances``, left out of ``value`` and ``per_variable``.
    categories : mapping, optional
        ``{column: ordered list of categories}`` for ordinal variables; k_j = its length and the
        positions are ranks in this order (e.g. the spec's ``order:``). Without it the sorted
        union of codes observed in either file is used (SPEC §8.2).
    unchanged : sequence of str
        Columns known to be released as they are, not compared value by value
        (:func:`distance_losses`).

    Returns
    -------
    LossResult
        ``value`` = lambda in [0, 1] (NaN when no value is compared), ``per_record``,
        ``per_variable``, ``distances`` and ``compared``.

    References
    ----------
    Młodak (S003) eqs (1)–(6), §3, §7 and footnote 2; SPEC §9.1–§9.3.
    """
    return distance_losses(original, protected, scales, continuous_distances=(continuous_distance,), c=c,
                           hidden_rule=hidden_rule, categories=categories, unchanged=unchanged)[continuous_distance]


def descriptive_statistics(values) -> dict[str, float]:
    """Summary of per-record losses as printed in S003 Table 2 (SPEC §9.2).

    Returns
    -------
    dict
        ``n``, ``min``, ``q1``, ``median``, ``mean``, ``q3``, ``max`` (quartiles Hyndman–Fan
        type 7), ``cv`` = 100·population SD / mean (%), ``skewness`` = adjusted Fisher–Pearson G1.
        NA values are dropped; ``cv`` is NaN for a zero mean, ``skewness`` for n < 3 or zero spread.
    """
    data = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(dtype=float)
    n = data.size
    if n == 0:
        raise NotComputable("values: at least one non-missing value is needed for descriptive statistics")
    q1, median, q3 = np.quantile(data, [0.25, 0.5, 0.75], method="linear")
    mean = data.mean()
    centred = data - mean
    m2 = np.mean(centred**2)
    m3 = np.mean(centred**3)
    cv = 100.0 * np.sqrt(m2) / mean if mean != 0 else np.nan
    skewness = np.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5 if n >= 3 and m2 > 0 else np.nan
    return {"n": int(n), "min": float(data.min()), "q1": float(q1), "median": float(median),
            "mean": float(mean), "q3": float(q3), "max": float(data.max()), "cv": float(cv),
            "skewness": float(skewness)}
