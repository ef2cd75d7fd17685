"""TOPSIS composite of record-level partial distances as per-record information loss (SPEC §10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.loss.distance import descriptive_statistics, partial_distances
from sdc_dagster.validation import check_option

PATTERNS = ("empirical", "theoretical")
# Shapiro–Wilk's p-value is accurate up to 5,000 values (Royston 1995, scipy's limit): beyond, the
# test runs on a seeded random subsample of that size.
SHAPIRO_MAX_N = 5_000
SHAPIRO_SEED = 0
# Cramér–von Mises: from this W^2 on, the asymptotic p-value is below 1e-10 and scipy's series loses
# all accuracy (non-monotone, then NaN with a divide warning): the p-value is reported as 0.
CVM_ZERO_P_FROM = 5.0


def topsis_scores(losses: pd.DataFrame, *, pattern: str = "empirical") -> pd.Series:
    """TOPSIS steps 2–4 of SPEC §10.1 on variables that are all stimulants of loss in [0, 1].

    Parameters
    ----------
    losses : DataFrame
        Records x variables, no missing values (e.g. the partial distances of §9.1).
    pattern : {"empirical", "theoretical"}
        Ideal / anti-ideal = column maxima / minima (S001 default) or (1, ..., 1) / (0, ..., 0)
        (SPEC §10.2 ASSUMPTION: absolute loss).

    Returns
    -------
    Series
        eta_i = d-_i / (d-_i + d+_i) in [0, 1], named "topsis", indexed like ``losses``.
        OPEN decision (SPEC §10.2): when every column is constant the empirical pattern
        collapses (d+ = d- = 0 for all records); the theoretical pattern is then used, so
        unchanged data give eta = 0 (no loss) instead of an undefined value.
    """
    check_option(pattern, "pattern", PATTERNS)
    y = losses.to_numpy(dtype=float)
    if np.isnan(y).any():
        raise SDCInputError("losses: TOPSIS needs a value for every record and variable (found NA)")
    if y.shape[1] == 0:
        raise SDCInputError("losses: at least one variable is needed")
    if y.shape[0] == 0:
        return pd.Series(np.empty(0), index=losses.index, name="topsis")
    ideal, anti_ideal = y.max(axis=0), y.min(axis=0)
    # collapsed also when the spread underflows in the squared distances (a column of 0 and 2e-205)
    if pattern == "theoretical" or not ((ideal - anti_ideal) ** 2).sum() > 0:
        ideal, anti_ideal = np.ones(y.shape[1]), np.zeros(y.shape[1])
    to_ideal = np.sqrt(((y - ideal) ** 2).sum(axis=1))
    to_anti_ideal = np.sqrt(((y - anti_ideal) ** 2).sum(axis=1))
    eta = to_anti_ideal / (to_anti_ideal + to_ideal)
    return pd.Series(eta, index=losses.index, name="topsis")


def topsis_loss(original: pd.DataFrame, protected: pd.DataFrame, scales: Mapping[str, str], *,
                continuous_distance: str = "arctan", pattern: str = "empirical", c: float = 1.0,
                hidden_rule: str = "B", categories: Mapping[str, Sequence] | None = None) -> pd.Series:
    """Per-record TOPSIS information loss, SPEC §10.2.

    The partial distances y_ij = d(x_ij, x*_ij) of SPEC §9.1 (already in [0, 1], so not
    normalised again) are the stimulants of loss; eta_i is the relative closeness of record i
    to the pattern of largest loss.

    Parameters
    ----------
    original, protected, scales, continuous_distance, c, hidden_rule, categories :
        As :func:`sdc_dagster.loss.distance_loss`.
    pattern : {"empirical", "theoretical"}
        See :func:`topsis_scores`.

    Returns
    -------
    Series
        eta_i in [0, 1] named "topsis", indexed like ``original``; its mean summarises the
        file's loss (SPEC §10.2 ASSUMPTION).

    References
    ----------
    Młodak (S001), "Using TOPSIS to assess the effectiveness of microdata SDC"; Hwang and Yoon (1981).
    """
    check_option(pattern, "pattern", PATTERNS)
    distances = partial_distances(original, protected, scales, continuous_distance=continuous_distance,
                                  c=c, hidden_rule=hidden_rule, categories=categories)
    return topsis_scores(distances, pattern=pattern)


def topsis_summary(eta) -> dict[str, float]:
    """Distribution of per-record TOPSIS losses as reported in S001 (SPEC §10.2).

    Parameters
    ----------
    eta : array-like or Series
        Per-record losses (NA dropped); at least 3 values for the tests.

    Returns
    -------
    dict
        The statistics of :func:`sdc_dagster.loss.distance.descriptive_statistics` (n, min, q1,
        median, mean, q3, max, cv %, skewness G1) plus normality tests with statistic and
        p-value: ``shapiro_w``/``shapiro_p`` (Shapiro–Wilk), ``ks_d``/``ks_p``
        (Kolmogorov–Smirnov), ``cvm_w2``/``cvm_p`` (Cramér–von Mises) — both on values
        standardised with the sample mean and SD and compared with N(0, 1) — and
        ``ad_a2``/``ad_p`` (Anderson–Darling for normality with estimated parameters,
        p-value interpolated from scipy's tables). Tests are NaN when every value is equal.

        Every test is used where it is valid for the sample size, so no warning reaches the
        console at any n: Shapiro–Wilk on more than ``SHAPIRO_MAX_N`` values runs on a random
        subsample of that size (seed ``SHAPIRO_SEED``, the same subsample for the same data;
        ``shapiro_n`` gives the size used); the Cramér–von Mises p-value is 0 from
        ``CVM_ZERO_P_FROM`` on (true value below 1e-10). KS, CvM and AD use every value.
    """
    summary = descriptive_statistics(eta)
    data = pd.to_numeric(pd.Series(eta), errors="coerce").dropna().to_numpy(dtype=float)
    if data.size < 3:
        raise NotComputable(f"eta: normality tests need at least 3 values (got {data.size})")
    spread = data.std(ddof=1)
    tests = dict.fromkeys(["shapiro_w", "shapiro_p", "ks_d", "ks_p", "cvm_w2", "cvm_p", "ad_a2", "ad_p"],
                          float("nan"))
    if spread > 0:
        standardised = (data - data.mean()) / spread
        sample = _shapiro_sample(data)
        if np.ptp(sample) > 0:  # a subsample of a nearly constant column can be constant
            shapiro = stats.shapiro(sample)
            tests.update(shapiro_w=shapiro.statistic, shapiro_p=shapiro.pvalue)
        ks = stats.kstest(standardised, "norm")
        with np.errstate(all="ignore"):  # the p-value series of large W^2, replaced below
            cvm = stats.cramervonmises(standardised, "norm")
        cvm_p = 0.0 if cvm.statistic >= CVM_ZERO_P_FROM else cvm.pvalue
        anderson = stats.anderson(data, "norm", method="interpolate")
        tests.update(ks_d=ks.statistic, ks_p=ks.pvalue,
                     cvm_w2=cvm.statistic, cvm_p=cvm_p, ad_a2=anderson.statistic, ad_p=anderson.pvalue)
    summary.update({key: float(value) for key, value in tests.items()})
    summary["shapiro_n"] = float(min(data.size, SHAPIRO_MAX_N))
    return summary


def _shapiro_sample(data: np.ndarray) -> np.ndarray:
    """``data``, or past ``SHAPIRO_MAX_N`` values a seeded random subsample of that size in data order."""
    if data.size <= SHAPIRO_MAX_N:
        return data
    chosen = np.random.default_rng(SHAPIRO_SEED).choice(data.size, SHAPIRO_MAX_N, replace=False)
    return data[np.sort(chosen)]
