"""Robust location and covariance: the reweighted minimum covariance determinant (FastMCD).

Used by the robust-Mahalanobis interval risk (SPEC §4.4, :func:`~sdc_dagster.risk.interval_risk_rmd`)
and by the robust noise method ROMM (SPEC §8.5, :mod:`sdc_dagster.protect.noise`).

References
----------
Rousseeuw & Van Driessen (1999), "A fast algorithm for the minimum covariance determinant
estimator", Technometrics 41(3); R ``robustbase::covMcd``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from sdc_dagster.errors import SDCInputError

# --- robust covariance (FastMCD) for dRiskRMD ---------------------------------------------------------

_MCD_STARTS = 500  # robustbase covMcd default nsamp
_MCD_KEEP = 10  # best starts refined to convergence, as in FastMCD


def _concentration_steps(x: np.ndarray, subset: np.ndarray, h: int, iterations: int | None):
    """Concentration steps of FastMCD from one h-subset; returns (log det, subset)."""
    previous = np.inf
    step = 0
    while True:
        centre = x[subset].mean(axis=0)
        cov = np.cov(x[subset], rowvar=False, ddof=1).reshape(x.shape[1], x.shape[1])
        sign, logdet = np.linalg.slogdet(cov)
        if sign <= 0:
            return -np.inf, subset  # exact fit: a singular h-subset has the smallest possible determinant
        diff = x - centre
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.inv(cov), diff)
        subset = np.argpartition(d2, h - 1)[:h]
        step += 1
        if logdet >= previous - 1e-12 or (iterations is not None and step >= iterations):
            return logdet, subset
        previous = logdet


def _consistency_factor(alpha: float, p: int) -> float:
    """Factor making the MCD covariance of an alpha-fraction consistent at the normal model."""
    q = stats.chi2.ppf(alpha, p)
    return alpha / stats.chi2.cdf(q, p + 2)


def minimum_covariance_determinant(x: np.ndarray, *, random_state=None,
                                   start_records: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted MCD location and covariance (FastMCD, Rousseeuw & Van Driessen 1999), robustbase-style.

    Mirrors robustbase ``covMcd`` defaults: h = floor((n + p + 1) / 2), 500 random (p+1)-subsets
    with two C-steps each, the 10 best iterated to convergence, raw covariance scaled for
    consistency, then one reweighting step keeping the points with squared distance below the
    chi-square 0.975 quantile, scaled again for consistency. Returns (location, covariance): the mean and the covariance
    of the retained points.

    ``start_records``: when given and smaller than n, the 500 starts and their two C-steps run on a
    random subset of that many records, the 10 best are iterated to convergence there, and the best
    of them is carried to all records and iterated to convergence (FastMCD's device for large n:
    robustbase starts in subsets of 300 merged to 1,500 records, Rousseeuw & Van Driessen 1999 §3);
    None (the default) starts on all records.

    Deviation from robustbase: the small-sample correction factors of Pison et al. (2002) are
    not applied and the random subsets differ, so covariances can differ slightly from R's.
    """
    n, p = x.shape
    if n <= p + 1:
        raise SDCInputError(f"robust covariance: needs more records ({n}) than variables + 1 ({p + 1})")
    rng = np.random.default_rng(random_state)
    h = (n + p + 1) // 2
    subset_rows = None
    if start_records is not None and p + 1 < start_records < n:
        subset_rows = np.sort(rng.choice(n, size=start_records, replace=False))
    xs = x if subset_rows is None else x[subset_rows]
    hs = (len(xs) + p + 1) // 2
    starts = []
    for _ in range(_MCD_STARTS):
        seed = rng.choice(len(xs), size=p + 1, replace=False)
        centre = xs[seed].mean(axis=0)
        cov = np.cov(xs[seed], rowvar=False).reshape(p, p) + 1e-12 * np.eye(p)
        diff = xs - centre
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.pinv(cov), diff)
        starts.append(_concentration_steps(xs, np.argpartition(d2, hs - 1)[:hs], hs, iterations=2))
    starts.sort(key=lambda t: t[0])
    if subset_rows is not None:  # the best of the subset, converged there, carried to all records
        _, s = min((_concentration_steps(xs, s, hs, iterations=None) for _, s in starts[:_MCD_KEEP]),
                   key=lambda t: t[0])
        centre = xs[s].mean(axis=0)
        cov = np.cov(xs[s], rowvar=False).reshape(p, p) + 1e-12 * np.eye(p)
        diff = x - centre
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.pinv(cov), diff)
        starts = [(0.0, np.argpartition(d2, h - 1)[:h])]
    best = min((_concentration_steps(x, s, h, iterations=None) for _, s in starts[:_MCD_KEEP]), key=lambda t: t[0])
    subset = best[1]
    centre = x[subset].mean(axis=0)
    raw = np.cov(x[subset], rowvar=False).reshape(p, p) * _consistency_factor(h / n, p)
    diff = x - centre
    d2 = np.einsum("ij,ij->i", diff @ np.linalg.inv(raw), diff)
    keep = d2 <= stats.chi2.ppf(0.975, p)
    return x[keep].mean(axis=0), np.cov(x[keep], rowvar=False).reshape(p, p) * _consistency_factor(keep.mean(), p)

