"""PRAM, the post-randomisation method for a categorical variable (SPEC §8.8).

Each record in category r is released as category q with probability p_rq = P(X* = q | X = r),
the rows of the Markov transition matrix P summing to 1. The matrix is either given, or built
from per-category retention probabilities p_rr with the rest 1 - p_rr split equally over the other
categories, or over the c nearest categories in the ordinal order (S001: changes of education
restricted to the three nearest categories; equal split is SPEC's ASSUMPTION). With
``invariant=True`` the matrix is replaced by the invariant matrix R = P Q, Q the backward
(Bayes) matrix Q_qs = p_sq pi_s / sum_t p_tq pi_t of the observed distribution pi, so that pi R = pi
and the expected released distribution equals the observed one (Gouweleeuw et al. 1998).

sdcMicro ``pram`` parameters: ``min_retention`` is its ``pd`` (each category's retention drawn
uniformly from [pd, 1] with the seed), ``alpha`` its ``alpha`` (the matrix used is
alpha·M + (1 - alpha)·I; sdcMicro applies it to its invariant matrix, default 0.5; here default 1,
any matrix). ``strata``: the records of each stratum are post-randomised separately and, with
``invariant=True``, with the invariant matrix of the stratum's own distribution, so that the
expected released distribution equals the observed one within every stratum. DECISION (differs
from sdcMicro 5.8.1, whose ``strata_variables`` only split the random draws and reuse one matrix
built from the whole column, so its strata leave the distribution of the result unchanged).

OPEN decision (nearest categories): with c nearest, candidates are ranked by their distance in
category positions; equal distances (one below, one above) take the lower category first.

References
----------
Gouweleeuw, Kooiman, Willenborg & de Wolf (1998), Post randomisation for statistical disclosure
control: theory and implementation, J. Off. Stat. 14(4). sdcMicro ``pram``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.protect.strata import stratum_codes
from sdc_dagster.validation import check_scalar

_ROW_SUM_TOL = 1e-9


@dataclass(frozen=True)
class PramResult:
    """The protected data and the transition matrix used (categories x categories, rows = from).

    With strata, ``matrix`` is the transition matrix over the whole data, P(X* = q | X = r) =
    sum_s n_sr R_s[r, q] / n_r (a category absent from the data keeps the row before the strata
    step), and ``stratum_matrices`` holds each stratum's matrix R_s (keys: the stratum value, a
    tuple for several strata columns); None without strata.
    """

    data: pd.DataFrame
    matrix: pd.DataFrame
    stratum_matrices: dict | None = None


def _categories(series: pd.Series, categories: Sequence[Hashable] | None) -> list:
    observed = pd.unique(series.dropna())
    if categories is None:
        try:
            return sorted(observed.tolist())
        except TypeError:
            return list(observed)
    categories = list(categories)
    if len(set(categories)) != len(categories):
        raise SDCInputError(f"variable {series.name!r}: 'categories' lists a category twice")
    unknown = [v for v in observed if v not in set(categories)]
    if unknown:
        raise SDCInputError(f"variable {series.name!r}: value {unknown[0]!r} is not among the given categories")
    return categories


def _matrix_from_retention(variable, categories: list, retention, nearest: int | None) -> np.ndarray:
    c = len(categories)
    if isinstance(retention, Mapping):
        missing = [cat for cat in categories if cat not in retention]
        if missing:
            raise SDCInputError(f"pram of {variable!r}: 'retention' gives no probability for category {missing[0]!r}")
        keep = np.array([float(retention[cat]) for cat in categories])
    else:
        keep = np.full(c, float(retention))
    if np.isnan(keep).any() or (keep < 0).any() or (keep > 1).any():
        raise SDCInputError(f"pram of {variable!r}: retention probabilities must lie in [0, 1]")
    if nearest is not None:
        check_scalar(nearest, f"pram of {variable!r}: 'nearest'", integer=True, low=1)
    matrix = np.zeros((c, c))
    position = np.arange(c)
    for r in range(c):
        others = position[position != r]
        if nearest is not None and len(others) > nearest:
            # by distance in positions, the lower category first on equal distance
            others = others[np.lexsort((others, np.abs(others - r)))][:nearest]
        matrix[r, r] = keep[r] if len(others) else 1.0
        if len(others):
            matrix[r, others] = (1.0 - keep[r]) / len(others)
    return matrix


def _matrix_from_given(variable, categories: list, matrix) -> np.ndarray:
    if isinstance(matrix, Mapping):
        matrix = pd.DataFrame({to: {fr: row.get(to, 0.0) for fr, row in matrix.items()} for to in
                               {t for row in matrix.values() for t in row}}).fillna(0.0)
    if not isinstance(matrix, pd.DataFrame):
        raise SDCInputError(f"pram of {variable!r}: 'matrix' must be a DataFrame (rows = from) or a nested mapping")
    absent = [cat for cat in categories if cat not in matrix.index]
    if absent:
        raise SDCInputError(f"pram of {variable!r}: the transition matrix has no row for category {absent[0]!r}")
    extra = [cat for cat in list(matrix.index) + list(matrix.columns) if cat not in set(categories)]
    if extra:
        raise SDCInputError(f"pram of {variable!r}: the transition matrix names {extra[0]!r}, not a category")
    values = matrix.reindex(index=categories, columns=categories).fillna(0.0).to_numpy(dtype="float64")
    if (values < 0).any() or (values > 1).any():
        raise SDCInputError(f"pram of {variable!r}: transition probabilities must lie in [0, 1]")
    sums = values.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOL)
    if len(bad):
        raise SDCInputError(
            f"pram of {variable!r}: row {categories[bad[0]]!r} of the transition matrix sums to {sums[bad[0]]}, not 1"
        )
    return values


def invariant_matrix(matrix: np.ndarray, distribution: np.ndarray) -> np.ndarray:
    """R = P Q with Q the backward matrix of P under ``distribution`` pi; pi R = pi (SPEC §8.8).

    Categories with probability 0 under pi keep their row of P (they never occur in the data).
    """
    pi = np.asarray(distribution, dtype="float64")
    pi = pi / pi.sum()
    arriving = pi @ matrix  # P(X* = q)
    with np.errstate(divide="ignore", invalid="ignore"):
        backward = np.where(arriving[:, None] > 0, (matrix * pi[:, None]).T / arriving[:, None], 0.0)
    return matrix @ backward


# over 10 parameters, kept: public (exported by sdc_dagster.protect), keyword-only, sdcMicro's pram
# arguments (pd, alpha, strata_variables) and the matrix/retention alternatives
def pram(
    data: pd.DataFrame,
    variable: str,
    *,
    matrix=None,
    retention=None,
    min_retention: float | None = None,
    nearest: int | None = None,
    invariant: bool = False,
    alpha: float = 1.0,
    strata: str | Sequence[str] | None = None,
    categories: Sequence[Hashable] | None = None,
    random_state=None,
) -> PramResult:
    """Post-randomise a categorical variable with a transition matrix (SPEC §8.8; sdcMicro ``pram``).

    Parameters
    ----------
    data : the microdata; not modified.
    variable : the categorical column; missing values stay missing.
    matrix : the transition matrix, a DataFrame with categories as index (from) and columns (to),
        or a mapping ``{from: {to: probability}}``; rows must sum to 1.
    retention : instead of ``matrix``: the probability of keeping the category, one number or
        ``{category: probability}``; the rest is split equally over the other categories.
    min_retention : instead of ``matrix`` or ``retention``: sdcMicro's ``pd``; each category's
        retention is drawn uniformly from [min_retention, 1] (from ``random_state``), the rest
        split as with ``retention``.
    nearest : with ``retention`` or ``min_retention``: only the ``nearest`` closest categories in the
        order of ``categories`` receive the rest (ordinal variables).
    invariant : replace the matrix by its invariant version for the observed distribution (of
        each stratum, with ``strata``).
    alpha : in [0, 1]; the matrix used is alpha·M + (1 - alpha)·I (sdcMicro's ``alpha``), after the
        invariant step; 1 (default) uses M itself.
    strata : column name(s); each stratum is post-randomised on its own (see the module notes).
    categories : the categories in order (default: the sorted observed values).
    random_state : int seed or numpy Generator; the same seed gives the same result.

    Returns
    -------
    :class:`PramResult` with the protected copy and the matrix actually used (a DataFrame
    categories x categories, rows = from) and, with ``strata``, one matrix per stratum.
    """
    column = require_columns(data, [variable], role="variable")[0]
    if sum(x is not None for x in (matrix, retention, min_retention)) != 1:
        raise SDCInputError(f"pram of {column!r}: give exactly one of 'matrix', 'retention' or 'min_retention'")
    alpha = check_scalar(alpha, f"pram of {column!r}: 'alpha'", low=0, high=1)
    series = data[column]
    cats = _categories(series, categories)
    if not cats:
        raise SDCInputError(f"pram of {column!r}: the variable has no observed category")
    rng = np.random.default_rng(random_state)
    if matrix is not None:
        base = _matrix_from_given(column, cats, matrix)
    else:
        if min_retention is not None:
            low = check_scalar(min_retention, f"pram of {column!r}: 'min_retention'", low=0, high=1)
            retention = dict(zip(cats, rng.uniform(low, 1.0, len(cats))))
        base = _matrix_from_retention(column, cats, retention, nearest)
    codes = pd.Index(cats).get_indexer(series)
    present = codes >= 0
    stratum, stratum_values = stratum_codes(data, strata)
    c, n_strata = len(cats), len(stratum_values)
    counts = np.zeros((n_strata, c))
    np.add.at(counts, (stratum[present], codes[present]), 1.0)
    identity = np.eye(c)
    used = np.empty((n_strata, c, c))
    for s in range(n_strata):  # strata, not records
        m = invariant_matrix(base, counts[s]) if invariant and counts[s].sum() > 0 else base
        used[s] = alpha * m + (1.0 - alpha) * identity

    cumulative = np.cumsum(used, axis=2)
    draws = rng.random(len(series))
    released = codes.copy()
    rows = cumulative[stratum[present], codes[present]]  # each record's row of its stratum's matrix
    released[present] = np.minimum((rows <= draws[present, None]).sum(axis=1), c - 1)

    values = pd.Index(cats).take(np.where(present, released, 0))
    out = data.copy()
    new_column = pd.Series(np.asarray(values, dtype=object), index=data.index).where(present)
    try:
        new_column = new_column.astype(series.dtype)
    except (TypeError, ValueError):
        new_column = new_column.infer_objects()
    out[column] = new_column

    if strata is None:
        return PramResult(data=out, matrix=pd.DataFrame(used[0], index=cats, columns=cats))
    per_category = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        overall = np.einsum("sr,srq->rq", counts, used) / per_category[:, None]
    overall[per_category == 0] = (alpha * base + (1.0 - alpha) * identity)[per_category == 0]
    return PramResult(
        data=out,
        matrix=pd.DataFrame(overall, index=cats, columns=cats),
        stratum_matrices={
            value: pd.DataFrame(used[s], index=cats, columns=cats) for s, value in enumerate(stratum_values)
        },
    )
