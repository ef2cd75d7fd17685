"""Entropy-based information loss for PRAM, EBIL (SPEC §9.8)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import check_pair

_ROW_SUM_TOLERANCE = 1e-9


def backward_probabilities(matrix: pd.DataFrame, prior: pd.Series) -> pd.DataFrame:
    """P(X = r | X* = q) by Bayes from forward PRAM probabilities (SPEC §9.8 ASSUMPTION).

    Parameters
    ----------
    matrix : DataFrame
        Forward transition matrix p_rq = P(X* = q | X = r): rows = original categories r,
        columns = released categories q; rows sum to 1.
    prior : Series
        Original category distribution pi_r (index = categories, sums to 1).

    Returns
    -------
    DataFrame
        Same shape as ``matrix``; column q holds P(X = r | X* = q) = p_rq·pi_r / sum_s p_sq·pi_s.
        A column q that cannot be produced (sum_s p_sq·pi_s = 0) is all NaN.
    """
    joint = matrix.mul(prior.reindex(matrix.index).fillna(0.0), axis=0)
    released = joint.sum(axis=0)
    return joint.div(released.where(released > 0), axis=1)


def _validated_matrix(matrix: pd.DataFrame, column: str) -> pd.DataFrame:
    if not isinstance(matrix, pd.DataFrame) or matrix.empty:
        raise SDCInputError(f"matrix: a non-empty DataFrame (rows = original {column!r} categories) is required")
    values = matrix.to_numpy(dtype=float)
    if np.isnan(values).any() or (values < 0).any() or (values > 1).any():
        raise SDCInputError(f"matrix: PRAM probabilities for {column!r} must lie in [0, 1]")
    sums = values.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=_ROW_SUM_TOLERANCE):
        bad = matrix.index[int(np.argmax(np.abs(sums - 1.0)))]
        raise SDCInputError(f"matrix: row {bad!r} of the PRAM matrix for {column!r} must sum to 1")
    return matrix.astype(float)


def _conditional_entropy(backward: pd.DataFrame) -> pd.Series:
    """H(X | X* = q) per column q, natural log, 0·log 0 = 0."""
    p = backward.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return pd.Series(terms.sum(axis=0), index=backward.columns)


def ebil(original: pd.DataFrame, protected: pd.DataFrame, column: str, *, matrix: pd.DataFrame | None = None) -> float:
    """Entropy-based information loss of one PRAMmed variable, SPEC §9.8.

    EBIL_j = sum_i H(X_j | X*_j = x*_ij), H(X_j | X*_j = q) = -sum_r P(r | q)·log P(r | q).

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``column`` in both. Records whose released value is missing contribute
        nothing (PRAM releases a category for every record); missing original values are
        excluded from the original distribution / cross-tabulation.
    column : str
        The categorical variable.
    matrix : DataFrame, optional
        Forward PRAM matrix p_rq = P(X* = q | X = r) (rows = original categories, columns =
        released categories). Backward probabilities follow by Bayes with the original
        category distribution. Without it, P(X = r | X* = q) is estimated from the
        cross-tabulation of original against released values.

    Returns
    -------
    float
        EBIL_j in nats (natural log); 0 when the released value determines the original.

    References
    ----------
    Młodak (S003) §4; Domingo-Ferrer, Mateo-Sanz, Torra (2001); Kooiman, Willenborg, Gouweleeuw (1997).
    """
    check_pair(original, protected, [column])
    x, y = original[column], protected[column]
    if matrix is None:
        observed = x.notna() & y.notna()
        counts = pd.crosstab(x[observed], y[observed])
        backward = counts / counts.sum(axis=0)
    else:
        matrix = _validated_matrix(matrix, column)
        prior = x.value_counts(normalize=True)
        unknown = prior.index.difference(matrix.index)
        if len(unknown):
            raise SDCInputError(f"matrix: original category {unknown[0]!r} of {column!r} has no row in the PRAM matrix")
        backward = backward_probabilities(matrix, prior)
    entropy = _conditional_entropy(backward)
    released = y.dropna()
    unknown = pd.Index(released.unique()).difference(entropy.index)
    if len(unknown):
        raise SDCInputError(f"protected column {column!r}: category {unknown[0]!r} is not a column of the PRAM matrix")
    impossible = entropy.index[backward.isna().all(axis=0).to_numpy()]
    produced = impossible.intersection(pd.Index(released.unique()))
    if len(produced):
        raise SDCInputError(
            f"protected column {column!r}: category {produced[0]!r} cannot be produced by the PRAM matrix "
            "from the original distribution"
        )
    frequencies = released.value_counts()
    return float((frequencies * entropy.reindex(frequencies.index)).sum())
