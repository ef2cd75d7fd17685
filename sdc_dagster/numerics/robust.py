"""Robust location and covariance from the minimum covariance determinant (MCD).

The MCD of n records in p variables is the subset of h = floor((n + p + 1) / 2) records whose
covariance matrix has the smallest determinant (Rousseeuw 1984). Finding it is combinatorial; the
subset is searched by scikit-learn's FastMCD (:class:`sklearn.covariance.MinCovDet`: random starts
refined by concentration steps, on subsets merged to 1,500 records past 500 records, Rousseeuw &
Van Driessen 1999), seeded, so the same seed gives the same subset. On that h-subset H the estimate
of the R function sdcMicro calls is computed here, because scikit-learn's own reweighted estimate
follows neither R convention (its reweighted covariance has divisor n and the consistency factor of
the share 0.975 instead of the share retained):

* :func:`covmcd` — robustbase ``covMcd`` with its defaults (sdcMicro ``mvTopCoding``, ``dRiskRMD``,
  ``addNoise(method = "outdect")``, microaggregation ``rmd``). With m_H, S_H the mean and the
  covariance (divisor h - 1) of H, chi2_q(p) the q quantile of the chi-square with p degrees of freedom:

      raw:        S_0 = c(h/n) · k_raw(p, n) · S_H,  centre m_H
      c(a)        = a / F_{chi2(p+2)}(chi2_a(p))              (consistency, Croux & Haesbroeck 1999)
      weights     w_i = 1 if (x_i - m_H)' S_0^-1 (x_i - m_H) < chi2_0.975(p), else 0
      reweighted: centre m_w = mean of the w_i = 1 records,
                  S = c(n_w/n) · k_rew(p, n) · cov(w_i = 1 records, divisor n_w - 1)  (when n_w < n)

  k_raw and k_rew are the small-sample correction factors of Pison, Van Aelst & Willems (2002), for
  alpha = 1/2: 1 / (1 - exp(a) / n^b) with (a, b) fitted per p (for p > 2 from two fitted points, as
  robustbase ``.MCDcnp2``/``.MCDcnp2.rew``), replaced by robustbase's simulated factors for p <= 9
  and n up to 6 (p = 2) .. 20 (p >= 7) (``MCDcnp2s``).

* :func:`cov_mcd` — MASS ``cov.mcd`` (sdcMicro microaggregation ``mcdpca``, ``clustmcdpca``): with
  d_i the squared distance of x_i from m_H under S_H, the records with
  d_i < chi2_0.975(p) · Q_{h/n}(d) / chi2_{h/n}(p) (Q: R's default type 7 quantile of the n distances)
  are kept; the estimate is their mean and covariance (divisor n_w - 1). MASS applies no consistency
  factor: only the shape of its covariance is meaningful.

Large files: scikit-learn's search splits the records into subsets of 300 and refines ten candidates
of each on a merged set, without robustbase's cap of five subsets, so its time grows with n (about
23 s of CPU at 100,000 records). Past ``MCD_SAMPLE_RECORDS`` records the subset is therefore searched
on a seeded random sample of that many records (its raw factors with the sample's size); the
reweighting step weighs every record. A deviation from R, documented: the raw estimate is that of
the sample's MCD, a consistent estimate of the same quantity.

Exact fit: when the covariance of H is singular (at least h records on a hyperplane), robustbase
reports the hyperplane and MASS stops; here :class:`numpy.linalg.LinAlgError` is raised, for the
caller to name the columns (sdcMicro's callers cannot use a singular covariance either). A
deviation: scikit-learn starts from random h-subsets (robustbase from (p + 1)-subsets, which find
any hyperplane holding h records), so it finds an exact fit of h equal records, or of data lying
wholly on a hyperplane, but may miss h distinct records on a hyperplane among others; the estimate
is then that of the best non-singular subset it found.

Deviations from R: the h-subset is that of scikit-learn's random starts, not R's (robustbase draws
500 (p + 1)-subsets from R's generator, MASS ``cov.mcd`` 3,000 for p ≥ 2); it is the exact MCD when
the search finds it, so the estimates agree with R's to rounding whenever both find the same
subset (as on robustbase's example ``covMcd(hbk[, 1:3])``: the same centre, tests/test_robust_mcd.py).
For p = 1 robustbase computes the univariate MCD exactly (the shortest half); scikit-learn does the
same. Open question, recorded: the reweighting factor c(n_w/n) k_rew is that of robustbase's source
(R/covMcd.R, CRAN mirror); the hbk covariance printed by some ports (first variance 1.2209) instead
matches c(0.975) without k_rew, so it should be checked against the robustbase sdcMicro 5.8.1 runs with.

References
----------
Rousseeuw (1984), Least median of squares regression, JASA 79; Rousseeuw & Van Driessen (1999), A fast
algorithm for the minimum covariance determinant estimator, Technometrics 41(3); Croux & Haesbroeck
(1999), Influence function and efficiency of the MCD scatter matrix estimator, J. Multivariate Anal.
71(2); Pison, Van Aelst & Willems (2002), Small sample corrections for LTS and MCD, Metrika 55(1);
R robustbase ``covMcd`` (R/covMcd.R); R MASS ``cov.rob``; scikit-learn ``MinCovDet``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from sdc_dagster.errors import SDCInputError

#: Weight cut-off of the reweighting step: chi-square quantile (robustbase and MASS).
REWEIGHT_LEVEL = 0.975
#: Past this many records the MCD subset is searched on a seeded random sample of this many (module docstring).
MCD_SAMPLE_RECORDS = 10_000

# robustbase's simulated small-sample factors for alpha = 1/2 (R/covMcd.R, MCDcnp2s: m.0, m.rew), by p:
# (the first n they cover, the factors for n, n + 1, ...).
_SIMULATED_RAW = {
    2: (4, (3.15342, 1.799889, 2.258497)),
    3: (6, (2.12777, 2.718898, 1.993509, 2.220433, 1.820585)),
    4: (8, (2.950549, 2.145387, 2.382224, 1.927077, 2.032489, 1.8371)),
    5: (10, (2.229573, 2.494447, 2.016117, 2.190061, 1.877996, 1.978964, 1.767284)),
    6: (12, (2.580264, 2.109121, 2.240741, 1.944719, 2.043397, 1.821808, 1.89725)),
    7: (14, (2.165233, 2.320281, 2.007836, 2.086471, 1.884052, 1.950563, 1.76926)),
    8: (16, (2.340443, 2.048262, 2.161097, 1.926082, 1.995422)),
    9: (18, (2.093386, 2.185793, 1.948989)),
}
_SIMULATED_REWEIGHTED = {
    2: (4, (2.216302, 1.418526, 1.635601)),
    3: (6, (1.73511, 2.06681, 1.545905, 1.659655, 1.456835)),
    4: (8, (2.388892, 1.847626, 1.96998, 1.630723, 1.701272, 1.521008)),
    5: (10, (1.968153, 2.168931, 1.784373, 1.894409, 1.667912, 1.693007, 1.545176)),
    6: (12, (2.275891, 1.866587, 2.014249, 1.750567, 1.829363, 1.650019, 1.689043)),
    7: (14, (1.95771, 2.074066, 1.847385, 1.905408, 1.71393, 1.768425, 1.63908)),
    8: (16, (2.164121, 1.871024, 1.979485, 1.782417, 1.84489)),
    9: (18, (1.938822, 2.050409, 1.834863)),
}
# Pison et al.'s fitted factors for alpha = 1/2: p = 1, 2 directly (a, b); p > 2 from two fitted
# points (alfaq, betaq, qwaarden) per estimate (robustbase .MCDcnp2, .MCDcnp2.rew).
_FITTED_RAW = {1: (0.262024211897096, 0.604756680630497), 2: (0.673292623522027, 0.691365864961895),
               "p>2": ((-1.42764571687802, 1.26263336932151, 2), (-1.06141115981725, 1.28907991440387, 3))}
_FITTED_REWEIGHTED = {1: (1.11098143415027, 1.5182890270453), 2: (3.11101712909049, 1.91401056721863),
                      "p>2": ((-1.02842572724793, 1.67659883081926, 2), (-0.26800273450853, 1.35968562893582, 3))}


def consistency_factor(p: int, share: float) -> float:
    """c(a) = a / F_{chi2(p+2)}(chi2_a(p)): the factor making the covariance of the share a of
    records nearest the centre consistent at the normal model (Croux & Haesbroeck 1999; robustbase
    ``.MCDcons``)."""
    return float(share / stats.chi2.cdf(stats.chi2.ppf(share, p), p + 2))


def small_sample_factor(p: int, n: int, *, reweighted: bool) -> float:
    """Pison, Van Aelst & Willems (2002) small-sample factor of the raw or reweighted MCD covariance
    for alpha = 1/2 (robustbase ``.MCDcnp2`` / ``.MCDcnp2.rew``; module docstring)."""
    simulated = (_SIMULATED_REWEIGHTED if reweighted else _SIMULATED_RAW).get(p)
    if simulated is not None and simulated[0] <= n < simulated[0] + len(simulated[1]):
        return simulated[1][n - simulated[0]]
    fitted = _FITTED_REWEIGHTED if reweighted else _FITTED_RAW
    if p <= 2:
        a, b = fitted[p]
    else:
        rows = fitted["p>2"]
        y = [np.log(-alfaq / p ** betaq) for alfaq, betaq, _ in rows]
        design = [[1.0, -np.log(q * p * p)] for _, _, q in rows]
        a, b = np.linalg.solve(design, y)
    return float(1.0 / (1.0 - np.exp(a) / n ** b))


def _sklearn_seed(random_state) -> int:
    """An int seed for scikit-learn (0 <= seed < 2^32): an int as given, drawn from a numpy Generator,
    fresh entropy for None."""
    if isinstance(random_state, (int, np.integer)) and 0 <= random_state < 2**32:
        return int(random_state)
    return int(np.random.default_rng(random_state).integers(2**32))


def mcd_subset(x: np.ndarray, *, random_state) -> np.ndarray:
    """Boolean mask of the MCD's h = floor((n + p + 1) / 2) records, found by scikit-learn's FastMCD
    (``MinCovDet(random_state=seed, support_fraction=h/n).raw_support_``); past
    ``MCD_SAMPLE_RECORDS`` records, those of the MCD of a seeded random sample of m = that many
    records (h = floor((m + p + 1) / 2)).

    Raises
    ------
    SDCInputError : n <= p + 1 (robustbase: too small a sample for an MCD).
    numpy.linalg.LinAlgError : the covariance of the subset is singular (an exact fit).
    """
    n, p = x.shape
    if n <= p + 1:
        raise SDCInputError(f"robust covariance (MCD): needs more records ({n}) than variables + 1 ({p + 1})")
    rows = None
    if n > MCD_SAMPLE_RECORDS:
        random_state = np.random.default_rng(random_state)
        rows = np.sort(random_state.choice(n, MCD_SAMPLE_RECORDS, replace=False))
    searched = x if rows is None else x[rows]
    m = len(searched)
    h = (m + p + 1) // 2
    # imported here: scikit-learn costs about 0.5 s to import, and most runs (the wave chain's
    # default plans and checks) never estimate an MCD (issue 38)
    from sklearn.covariance import MinCovDet

    # int(support_fraction * m) is scikit-learn's subset size: h + 0.5 keeps it h despite rounding.
    estimator = MinCovDet(random_state=_sklearn_seed(random_state), support_fraction=(h + 0.5) / m)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The covariance matrix associated to your dataset is not full rank")
        try:
            found = estimator.fit(searched).raw_support_
        except ValueError as error:  # scikit-learn: the subset's covariance is 0 (h equal records)
            raise np.linalg.LinAlgError(f"exact fit: {error}") from error
    eigenvalues = np.linalg.eigvalsh(np.atleast_2d(np.cov(searched[found], rowvar=False)))
    if eigenvalues[0] <= 1e-12 * max(eigenvalues[-1], np.finfo(float).tiny):
        raise np.linalg.LinAlgError(f"exact fit: {h} of the {m} records lie on a hyperplane")
    if rows is None:
        return found
    subset = np.zeros(n, dtype=bool)
    subset[rows[found]] = True
    return subset


def _squared_distances(x: np.ndarray, centre: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    diff = x - centre
    return np.einsum("ij,ij->i", diff @ np.linalg.inv(covariance), diff)


def covmcd(x: np.ndarray, *, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted MCD centre and covariance as robustbase ``covMcd(x)`` (defaults: alpha = 1/2,
    consistency and small-sample corrections, 0/1 weights at chi2_0.975(p)); formulas in the module
    docstring. Raises as :func:`mcd_subset`."""
    n, p = x.shape
    subset = mcd_subset(x, random_state=random_state)
    h, m = int(subset.sum()), min(n, MCD_SAMPLE_RECORDS)
    centre = x[subset].mean(axis=0)
    raw = (np.atleast_2d(np.cov(x[subset], rowvar=False))
           * consistency_factor(p, h / m) * small_sample_factor(p, m, reweighted=False))
    kept = _squared_distances(x, centre, raw) < stats.chi2.ppf(REWEIGHT_LEVEL, p)
    covariance = np.atleast_2d(np.cov(x[kept], rowvar=False))
    if kept.sum() < n:
        covariance = covariance * consistency_factor(p, kept.mean()) * small_sample_factor(p, n, reweighted=True)
    return x[kept].mean(axis=0), covariance


def cov_mcd(x: np.ndarray, *, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted MCD centre and covariance as MASS ``cov.mcd(x)`` (no consistency factor; the
    cut-off scaled by the h/n quantile of the raw distances); formulas in the module docstring.
    Raises as :func:`mcd_subset`."""
    n, p = x.shape
    subset = mcd_subset(x, random_state=random_state)
    share = subset.sum() / min(n, MCD_SAMPLE_RECORDS)
    d = _squared_distances(x, x[subset].mean(axis=0), np.atleast_2d(np.cov(x[subset], rowvar=False)))
    kept = d < stats.chi2.ppf(REWEIGHT_LEVEL, p) * np.quantile(d, share) / stats.chi2.ppf(share, p)
    return x[kept].mean(axis=0), np.atleast_2d(np.cov(x[kept], rowvar=False))
