"""Microaggregation along a first principal component: sdcMicro's methods ``pca``, ``mcdpca`` and
``pppca`` (SPEC §8.6).

Each sorts the records by their score on a first principal component and cuts them into groups
(:func:`~sdc_dagster.protect.microaggregation.ranking.cut`):

* ``pca``: the variables standardised (mean, standard deviation with n - 1); the eigenvector of the
  largest eigenvalue of their covariance (R ``princomp(scale(x))``); a constant variable is left
  centred, unscaled (R would divide by 0).
* ``mcdpca``: the eigenvector of the largest eigenvalue of the robust (reweighted MCD) covariance of
  the raw variables, scores about the MCD centre (sdcMicro ``princomp(x.scale, covmat = cov.mcd(x))``:
  its ``x.scale`` divides by sqrt(diag(cor)) = 1, so the variables are not rescaled). The estimate is
  MASS ``cov.mcd``'s (:func:`sdc_dagster.numerics.robust.cov_mcd`: its reweighting cut-off scaled by
  the h/n quantile of the raw distances, no consistency factor, which would not move the
  eigenvector), on the MCD subset found by scikit-learn's ``MinCovDet`` seeded from
  ``random_state`` (MASS draws its own random subsets from R's generator).
* ``pppca``: the robust projection-pursuit first component of Croux & Ruiz-Gazen (sdcMicro's
  ``prcompRob``): the variables centred at their medians; among the directions of the centred
  records (x_i - med) / ||x_i - med||, the one on which the projected data have the largest MAD
  (the last of equal maxima, R ``order(s)[n]``); scores are the centred records' projections. A
  record at the median gives no direction and is not a candidate (in R its direction is NaN).

The sign of a component is not fixed by an eigenvector; sdcMicro's ``prcompRob`` makes the
loading of the first variable non-negative, and the same rule is applied to ``pca`` and ``mcdpca``
here (R's ``eigen`` returns whatever sign LAPACK gives: sorting by the opposite sign reverses the
order, which moves the larger last group to the other end). Ties of scores keep data order (R
``sort(..., index.return = TRUE)`` is stable).

Speed, documented deviation for ``pppca``: the exact search projects all n records on all n
candidate directions (n^2 values). Up to ``_PP_EXACT_LIMIT`` records it is done exactly; above, the
MAD of every direction is first estimated on a systematic subsample of ``_PP_SCREEN_ROWS`` records
(every (n / rows)-th record), and the exact MAD is computed on all records for the
``_PP_SHORTLIST`` directions estimated largest; the chosen direction is the best of those.

References
----------
sdcMicro ``R/microaggregation.R`` (``micro_pca``, ``micro_mcdpca``, ``micro_pppca``, ``prcompRob``);
Croux & Ruiz-Gazen (2005), High breakdown estimators for principal components: the
projection-pursuit approach revisited, Journal of Multivariate Analysis 95(1); Rousseeuw & Van
Driessen (1999), A fast algorithm for the minimum covariance determinant estimator, Technometrics
41(3); Templ (2008), Transactions on Data Privacy 1(2).
"""

from __future__ import annotations

import numpy as np

from sdc_dagster.errors import SDCInputError
from sdc_dagster.numerics.robust import cov_mcd

_PP_EXACT_LIMIT = 2_000  # records: up to here every direction's MAD is computed on all records
_PP_SCREEN_ROWS = 500  # records of the systematic subsample the directions are screened on
_PP_SHORTLIST = 50  # directions whose exact MAD is computed after screening
_CHUNK_VALUES = 2_000_000  # projected values held at once


def _oriented(vector: np.ndarray) -> np.ndarray:
    """``vector`` with its first non-zero entry made positive (sdcMicro ``prcompRob``: V[1] >= 0)."""
    nonzero = np.flatnonzero(vector)
    return -vector if len(nonzero) and vector[nonzero[0]] < 0 else vector


def _leading_eigenvector(covariance: np.ndarray) -> np.ndarray:
    """The eigenvector of the largest eigenvalue of a symmetric matrix, oriented (:func:`_oriented`)."""
    _, vectors = np.linalg.eigh(covariance)
    return _oriented(vectors[:, -1])


def pca_order(x: np.ndarray) -> np.ndarray:
    """sdcMicro ``pca``: records sorted by their score on the first principal component of the
    standardised variables."""
    sd = x.std(axis=0, ddof=1) if len(x) > 1 else np.ones(x.shape[1])
    z = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    vector = _leading_eigenvector(np.cov(z, rowvar=False).reshape(x.shape[1], x.shape[1]))
    return np.argsort((z - z.mean(axis=0)) @ vector, kind="stable")


def robust_estimate(estimate, x: np.ndarray, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted MCD centre and covariance of ``x`` by ``estimate`` (a function of
    :mod:`sdc_dagster.numerics.robust`: ``cov_mcd`` as MASS, ``covmcd`` as robustbase), an exact fit
    refused with a clear error."""
    try:
        return estimate(x, random_state=random_state)
    except np.linalg.LinAlgError as error:
        raise SDCInputError(f"robust covariance (MCD) of {len(x)} records is singular: at least half of them lie on "
                            "a hyperplane (an exact fit); use a classical method (pca, clustpca) for these data") from error


def mcdpca_order(x: np.ndarray, random_state) -> np.ndarray:
    """sdcMicro ``mcdpca``: records sorted by their score on the first principal component of the
    reweighted MCD covariance (MASS ``cov.mcd``), about the MCD centre."""
    centre, covariance = robust_estimate(cov_mcd, x, random_state)
    return np.argsort((x - centre) @ _leading_eigenvector(covariance), kind="stable")


def _direction_mads(centred: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Median absolute deviation (without R's constant: it does not change the argmax) of the
    projections of ``centred`` on each row of ``directions``, in chunks of directions."""
    out = np.empty(len(directions))
    step = max(1, _CHUNK_VALUES // max(len(centred), 1))
    for a in range(0, len(directions), step):  # chunks of directions
        projected = directions[a:a + step] @ centred.T  # a row per direction
        middle = np.median(projected, axis=1)
        out[a:a + step] = np.median(np.abs(projected - middle[:, None]), axis=1)
    return out


def pp_direction(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Croux & Ruiz-Gazen's first projection-pursuit direction (sdcMicro ``prcompRob``, first
    component) and the medians the records are centred at."""
    median = np.median(x, axis=0)
    centred = x - median
    norms = np.sqrt((centred ** 2).sum(axis=1))
    candidates = np.flatnonzero(norms > 0)
    if not len(candidates):  # every record at the median: any direction gives score 0
        return np.eye(x.shape[1])[0], median
    directions = centred[candidates] / norms[candidates, None]
    if len(x) <= _PP_EXACT_LIMIT:
        mads = _direction_mads(centred, directions)
    else:
        sample = centred[np.linspace(0, len(x) - 1, _PP_SCREEN_ROWS).astype(np.int64)]
        screened = _direction_mads(sample, directions)
        shortlist = np.sort(np.argsort(-screened, kind="stable")[:_PP_SHORTLIST])
        mads = np.full(len(directions), -np.inf)
        mads[shortlist] = _direction_mads(centred, directions[shortlist])
    best = len(mads) - 1 - int(np.argmax(mads[::-1]))  # the last of equal maxima (R order(s)[n])
    return _oriented(directions[best]), median


def pppca_order(x: np.ndarray) -> np.ndarray:
    """sdcMicro ``pppca``: records sorted by their score on the projection-pursuit first component."""
    direction, median = pp_direction(x)
    return np.argsort((x - median) @ direction, kind="stable")
