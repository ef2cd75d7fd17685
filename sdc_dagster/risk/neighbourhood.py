"""Neighbourhood counts of continuous values: Młodak's eta(x_ij, p_j) (SPEC §5.2), the building
block of the continuous part of the combined measure in :mod:`sdc_dagster.risk.combined`."""

from __future__ import annotations

import numpy as np

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import check_scalar


def neighbourhood_counts(values, precision: float) -> np.ndarray:
    """eta(x_ij, p_j): for each value, how many OTHER records lie in its closed precision interval.

    SPEC §5.2. The interval of x is [(1 - p)·x, (1 + p)·x]; for negative x the bounds are swapped
    (ASSUMPTION of SPEC §5.2) and for x = 0 it is {0}, both of which fall out of taking the min and
    max of the two bounds. Counting uses one sort and two binary searches, O(n log n).
    Missing values (NaN, SPEC §5.8) lie in nobody's interval and have no count of their own.

    Parameters
    ----------
    values : array-like of float
        The values x_1j..x_nj of one continuous variable; NaN marks a missing value.
    precision : float
        p_j, strictly between 0 and 1.

    Returns
    -------
    ndarray of float64: the count of observed values for each value in input order (the record
    itself excluded; whole numbers), NaN for a missing value.

    References
    ----------
    Młodak, "A method of comprehensive disclosure-risk assessment for microdata" (S000).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if np.isinf(x).any():
        raise SDCInputError("values: contain infinite values; eta is defined for finite values only")
    p = check_scalar(precision, "precision", low=0, high=1, closed="neither")
    # Both bounds are non-decreasing in x (also in floating point), so the values are sorted once
    # and searched with sorted bounds, which keeps the binary searches cache-friendly.
    observed = np.flatnonzero(~np.isnan(x))
    order = observed[np.argsort(x[observed])]
    ordered = x[order]
    a, b = (1.0 - p) * ordered, (1.0 + p) * ordered
    lower, upper = np.minimum(a, b), np.maximum(a, b)
    inside = np.searchsorted(ordered, upper, side="right") - np.searchsorted(ordered, lower, side="left")
    eta = np.full(len(x), np.nan)
    # Rounding of (1 ± p)·x can never push x itself out of its interval, so x always counts once.
    eta[order] = inside - 1
    return eta
