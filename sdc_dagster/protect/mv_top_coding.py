"""Multivariate top coding: outlying records pulled onto the boundary of a tolerance ellipsoid,
sdcMicro's ``mvTopCoding`` (winsorisation of multivariate outliers).

With x_i the record's values of the p columns, m the centre and S the covariance of the data,

    d_i^2 = (x_i - m)' S^-1 (x_i - m)                     (squared Mahalanobis distance)
    q     = chi^2_{1 - alpha, p}                          (the (1 - alpha) quantile, p degrees of freedom)
    x*_i  = m + a_i (x_i - m),  a_i = sqrt(q / d_i^2)     for the records with d_i^2 > q,

and x*_i = x_i for the others. A pulled record lies on the ellipsoid d^2 = q (its distance is
a_i^2 d_i^2 = q) on the ray from the centre through its original position: its direction from the
centre is kept and only its distance shrinks.

Estimators: ``"robust"`` (sdcMicro's only one) takes m and S from the reweighted minimum covariance
determinant as robustbase's ``covMcd`` with its defaults, consistency and small-sample (Pison et al.
2002) factors included, since the cut-off compares distances with q and so depends on the scale of S
(:func:`sdc_dagster.numerics.robust.covmcd`: the MCD subset found by scikit-learn's ``MinCovDet``
seeded with ``random_state``); ``"classical"`` takes the column means and the sample covariance (divisor
n - 1). ``center`` and ``covariance`` give m and S directly (sdcMicro's ``center`` and ``cov``
arguments; with published MCD estimates the result is then deterministic).

Missing values (a deviation: ``covMcd`` refuses them): the estimates use the records complete in
the columns, and a record with a missing value keeps its values (its distance is undefined, as R's
``mahalanobis`` gives NA and ``which(maha > d)`` leaves it out).

References
----------
sdcMicro ``mvTopCoding`` (R/mvTopCoding.R, Gussenbauer & Templ); Rousseeuw & Van Driessen (1999),
"A fast algorithm for the minimum covariance determinant estimator", Technometrics 41(3); Pison, Van
Aelst & Willems (2002), "Small sample corrections for LTS and MCD", Metrika 55(1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from sdc_dagster.errors import SDCInputError
from sdc_dagster.numerics.robust import covmcd
from sdc_dagster.validation import check_option, check_scalar, numeric_matrix

MV_TOP_CODING_ESTIMATORS = ("robust", "classical")
#: The attribute of the result giving the number of records pulled onto the ellipsoid.
PULLED_ATTRIBUTE = "mv_top_coded_records"


def _estimates(x: np.ndarray, columns: list[str], estimator: str, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Centre and covariance of the complete records ``x`` by ``estimator``."""
    n, p = x.shape
    if estimator == "classical":
        if n <= p:
            raise SDCInputError(
                f"columns {', '.join(map(repr, columns))}: the classical covariance of {p} variables needs more "
                f"than {p} complete records, got {n}")
        return x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    try:
        return covmcd(x, random_state=random_state)
    except np.linalg.LinAlgError as error:  # robustbase's "exact fit": the MCD subset spans fewer dimensions
        raise SDCInputError(
            f"columns {', '.join(map(repr, columns))}: the robust (MCD) covariance is singular: at least half of the "
            f"complete records lie on a hyperplane (an exact fit); use estimator='classical'") from error


def _given_estimates(center, covariance, p: int) -> tuple[np.ndarray, np.ndarray]:
    location = np.asarray(center, dtype=np.float64).reshape(-1)
    scatter = np.atleast_2d(np.asarray(covariance, dtype=np.float64))
    if location.shape != (p,) or not np.isfinite(location).all():
        raise SDCInputError(f"center: must be {p} finite numbers, one per column, got {center!r}")
    if scatter.shape != (p, p) or not np.isfinite(scatter).all() or not np.allclose(scatter, scatter.T):
        raise SDCInputError(f"covariance: must be a finite symmetric {p} x {p} matrix, got {covariance!r}")
    return location, scatter


def mv_top_coding_options(columns: Sequence[str], *, alpha=0.025, estimator: str = "robust",
                          center: Sequence[float] | None = None, covariance=None) -> None:
    """Check the options of :func:`mv_top_coding` that need no data: 0 < alpha < 1, the estimator,
    and ``center`` and ``covariance`` given together, p finite numbers and a finite symmetric p x p
    matrix for the p ``columns``. A plan's checks run it on each step before any data is read
    (:func:`sdc_dagster.protect.plan.plan_problems`).

    Raises
    ------
    SDCInputError : ``"<option>: must be ..., got ..."`` for the first option that breaks its rule.
    """
    check_scalar(alpha, "alpha", low=0, high=1, closed="neither")
    check_option(estimator, "estimator", MV_TOP_CODING_ESTIMATORS)
    if (center is None) != (covariance is None):
        raise SDCInputError("center, covariance: give both (sdcMicro's center and cov) or neither")
    if center is not None:
        try:
            _given_estimates(center, covariance, 1 if isinstance(columns, str) else len(columns))
        except SDCInputError:
            raise
        except (TypeError, ValueError) as error:  # not numbers, or rows of unequal length
            raise SDCInputError(f"center, covariance: must be numbers ({error})") from error


def mv_top_coding(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    alpha: float = 0.025,
    estimator: str = "robust",
    center: Sequence[float] | None = None,
    covariance=None,
    random_state=0,
) -> pd.DataFrame:
    """Pull the records whose squared Mahalanobis distance exceeds chi^2_{1-alpha, p} onto that
    ellipsoid, towards the centre (sdcMicro ``mvTopCoding``; formula in the module docstring).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : the p numeric columns (at least one).
    alpha : 0 < alpha < 1, sdcMicro's ``alpha``: the ellipsoid is the (1 - alpha) chi-square quantile.
    estimator : "robust" (reweighted MCD, as sdcMicro) or "classical" (mean, sample covariance).
    center, covariance : the centre (p numbers) and covariance (p x p) to use instead of estimating
        them (give both or neither), sdcMicro's ``center`` and ``cov``.
    random_state : seed of the MCD's random starts (default 0: the same data give the same result);
        unused by "classical" and by given estimates.

    Returns
    -------
    A copy of ``data`` with ``columns`` as float64, the outlying records pulled onto the ellipsoid;
    ``result.attrs["mv_top_coded_records"]`` is the number of records pulled.

    Raises
    ------
    SDCInputError : a non-numeric column or infinite value, alpha outside (0, 1), an unknown
        estimator, too few complete records for the estimate, or a singular covariance.
    """
    x = numeric_matrix(data, columns, role="column", allow_missing=True)
    columns = list(columns) if not isinstance(columns, str) else [columns]
    mv_top_coding_options(columns, alpha=alpha, estimator=estimator, center=center, covariance=covariance)
    alpha = float(alpha)
    p = x.shape[1]
    complete = ~np.isnan(x).any(axis=1)
    if center is not None:
        location, scatter = _given_estimates(center, covariance, p)
    else:
        location, scatter = _estimates(x[complete], columns, estimator, random_state)
    try:
        factor = np.linalg.cholesky(scatter)
    except np.linalg.LinAlgError as error:
        raise SDCInputError(
            f"columns {', '.join(map(repr, columns))}: the {estimator if center is None else 'given'} covariance is "
            f"singular or not positive definite (a column constant or a linear combination of others)") from error
    diff = x[complete] - location
    # d^2 = |L^-1 (x - m)|^2 with S = L L'
    d2 = np.square(np.linalg.solve(factor, diff.T)).sum(axis=0)
    quantile = stats.chi2.ppf(1.0 - alpha, p)
    outside = d2 > quantile
    pulled = x.copy()
    rows = np.flatnonzero(complete)[outside]
    pulled[rows] = location + np.sqrt(quantile / d2[outside])[:, None] * diff[outside]
    out = data.copy()
    for j, column in enumerate(columns):
        out[column] = pulled[:, j]
    out.attrs[PULLED_ATTRIBUTE] = int(outside.sum())
    return out
