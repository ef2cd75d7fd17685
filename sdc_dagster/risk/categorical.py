"""Re-identification risk of categorical key variables (SPEC §2, §3.1–§3.5).

Frequencies follow sdcMicro's ``freqCalc`` (missing key values match any value, SPEC §2.4) and the
risks sdcMicro's ``measure_risk`` (individual risk ``indivRisk(method="approx")``, global risk,
household risk). The group-bys run in DuckDB (:mod:`sdc_dagster.risk.frequencies`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.frequencies import missing_aware_key_frequencies
from sdc_dagster.keys import key_columns
from sdc_dagster.validation import check_option, check_scalar, weight_values


def key_frequencies(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Sample frequency f_k and estimated population frequency F_k of every record's key.

    SPEC §2.1–§2.4, with sdcMicro ``freqCalc`` semantics for missing values: a missing value
    matches any value; a match relying on a missing value of the *other* record's key counts
    ``alpha`` (see :func:`sdc_dagster.risk.frequencies.compatible_counts` for the exact rule); a key
    missing in every variable gets f = n and F = sum of all weights.

    Parameters
    ----------
    data : the microdata (not modified).
    keys : the categorical key variables (quasi-identifiers).
    weight : column of sampling weights (finite, > 0); None for census data (then F = f).
    alpha : in [0, 1], default 1 (sdcMicro's default).
    con : DuckDB connection to run the group-by on (default: a fresh in-memory database).

    Returns
    -------
    DataFrame indexed like ``data`` with float64 columns ``fk`` and ``Fk`` (fk is whole unless
    alpha < 1 and there are missing values).

    References
    ----------
    sdcMicro ``freqCalc`` (R/freqCalc.r, 5.8.1); SDC Practice Guide Tables 7.1, 7.2.
    """
    keys = key_columns(data, keys)
    weights = weight_values(data, weight)
    f, F = missing_aware_key_frequencies(data, keys, weights=weights, alpha=check_scalar(alpha, "alpha", low=0, high=1), con=con)
    return pd.DataFrame({"fk": f, "Fk": F}, index=data.index)


_RISK_METHODS = ("approx", "exact")


def _risk_method(method: str, qual: float) -> tuple[str, float]:
    return check_option(method, "method", _RISK_METHODS), check_scalar(qual, "qual", low=0, closed="neither")


def exact_risk(fk: np.ndarray, Fk: np.ndarray) -> np.ndarray:
    """Benedetti–Franconi individual risk without approximation, sdcMicro ``indivRisk(method="exact")``.

    SPEC §3.2 (the "exact" method it names): under the negative-binomial superpopulation model the
    risk is E(1/F | f) = sum_{j>=0} C(f+j-1, j) p^f (1-p)^j / (f+j) with p = f/F, which is
    r = p · I_f with I_f = integral_0^1 u^(f-1) / (p + (1-p) u) du (substitute 1/(f+j) = integral of
    t^(f+j-1)). I_1 = ln(1/p)/(1-p) and (1-p) I_(f+1) + p I_f = 1/f, so for p < 1/2 the forward
    recurrence I_(f+1) = (1/f - p I_f)/(1-p) damps rounding errors by p/(1-p) per step; for
    p >= 1/2 the series r = (p/f) sum_n n!/((f+1)...(f+n)) (1-p)^n of positive terms converges
    at least as fast as 2^-n. f = 1 and f = 2 give sdcMicro's closed forms (which "approx" shares).

    sdcMicro evaluates an alternating series in powers p^(-f); it agrees with this value to about
    1e-13 (relative) and overflows to NaN from f of about 150 on testdata, where this stays finite.
    f == F gives 1/f as in sdcMicro. Frequencies must be whole (``alpha`` < 1 with missing key
    values gives fractional ones, for which the model has no exact form): SDCInputError.
    """
    fk = np.asarray(fk, dtype=np.float64)
    Fk = np.asarray(Fk, dtype=np.float64)
    if (fk != np.round(fk)).any():
        raise SDCInputError(
            "parameter method='exact' needs whole sample frequencies fk; alpha < 1 with missing key "
            "values gives fractional ones (use method='approx')"
        )
    pairs, record_pair = np.unique(np.column_stack([fk, Fk]), axis=0, return_inverse=True)
    fk, Fk = pairs[:, 0], pairs[:, 1]  # distinct (f, F), sorted by f
    risk = np.empty(len(fk))
    same = fk == Fk
    risk[same] = 1.0 / fk[same]
    p = fk / Fk
    q = (Fk - fk) / Fk

    forward = ~same & (p < 0.5)
    f_fw, p_fw, q_fw = fk[forward], p[forward], q[forward]
    integral = -np.log(p_fw) / q_fw  # I_1
    for m in range(1, int(f_fw.max(initial=1))):  # steps over frequencies, not records
        step = np.searchsorted(f_fw, m, side="right")  # f_fw is sorted: the pairs with f > m
        integral[step:] = (1.0 / m - p_fw[step:] * integral[step:]) / q_fw[step:]
    risk[forward] = p_fw * integral

    series = ~same & ~forward
    f_se, p_se, q_se = fk[series], p[series], q[series]
    total, term, n = np.ones(len(f_se)), np.ones(len(f_se)), 0
    while len(f_se) and term.max() > 1e-17 * total.min():
        n += 1
        term = term * n * q_se / (f_se + n)
        total = total + term
    risk[series] = p_se / f_se * total
    return risk[record_pair.ravel()]


def risk_from_frequencies(
    fk: np.ndarray,
    Fk: np.ndarray,
    *,
    weighted: bool,
    weight: str = "weight",
    method: str = "approx",
    qual: float = 1.0,
) -> np.ndarray:
    """Individual risk from (f, F): Benedetti–Franconi risk, or 1/f without weights.

    SPEC §3.2, exactly sdcMicro ``indivRisk(method=, qual=)``. ``method="approx"`` (default):
    p = f/F; r = 1/f where f == F; otherwise r = p/(1-p)·ln(1/p) for f = 1,
    p/(1-p) - (p/(1-p))²·ln(1/p) for f = 2 and p/(f - (1-p)) for f > 2. Like sdcMicro, a fractional
    f strictly between 1 and 2 (possible only with alpha < 1) matches none of the branches and gets
    risk 0. ``method="exact"``: :func:`exact_risk`. ``qual`` (sdcMicro's final correction factor,
    any positive number) multiplies the risk, also the 1/f of unweighted data; as in sdcMicro's
    ``rk <- rk * qual`` the result is not capped, so a ``qual`` above 1 can give risks above 1.

    OPEN decision (SPEC §3.2, F < f): the approximation is meaningless there (p > 1, negative
    values), so it is rejected: SDCInputError naming ``weight`` (weights below 1 cause it).
    """
    method, qual = _risk_method(method, qual)
    fk = np.asarray(fk, dtype=np.float64)
    if not weighted:
        return qual / fk
    Fk = np.asarray(Fk, dtype=np.float64)
    below = Fk < fk
    if below.any():
        raise SDCInputError(
            f"weight {weight!r}: the estimated population frequency Fk is below the sample frequency fk "
            f"for {int(below.sum())} records (weights below 1?); the individual risk is undefined there"
        )
    if method == "exact":
        return qual * exact_risk(fk, Fk)
    risk = np.zeros(len(fk))
    same = fk == Fk
    with np.errstate(divide="ignore", invalid="ignore"):
        p = fk / Fk
        odds = p / (1.0 - p)
        log_inverse = np.log(1.0 / p)
        risk = np.where(fk > 2, p / (fk - (1.0 - p)), risk)
        risk = np.where(fk == 2, odds - odds**2 * log_inverse, risk)
        risk = np.where(fk == 1, odds * log_inverse, risk)
    risk[same] = 1.0 / fk[same]
    return qual * risk


def individual_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    method: str = "approx",
    qual: float = 1.0,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.Series:
    """Per-record re-identification risk, as sdcMicro ``indivRisk(freqCalc(...), method=, qual=)``.

    SPEC §3.2: with weights the Benedetti–Franconi risk of :func:`risk_from_frequencies` on the
    §2.4 frequencies (``method="approx"``, the default, equals ``measure_risk(...)$Res[, "risk"]``;
    ``method="exact"`` without approximation, :func:`exact_risk`); without weights 1/f_k. The risk
    is multiplied by ``qual`` (not capped at 1, as sdcMicro's ``rk * qual``).

    Parameters
    ----------
    data, keys, weight, alpha, con : as in :func:`key_frequencies`.
    method : "approx" or "exact".
    qual : sdcMicro's final correction factor, a positive number; above 1 it scales the risk up
        (risks above 1 are possible, as in sdcMicro).

    Returns
    -------
    Series ``risk`` (float64) indexed like ``data``.

    Raises
    ------
    SDCInputError : bad keys, weights, method or qual; F_k < f_k (weights below 1; the OPEN point
    of §3.2); fractional f_k with method "exact".

    References
    ----------
    Franconi & Polettini (2004), Individual risk estimation in mu-Argus: a review; sdcMicro
    ``indivRisk`` and ``measure_risk`` (5.8.1).
    """
    _risk_method(method, qual)
    freq = key_frequencies(data, keys, weight=weight, alpha=alpha, con=con)
    risk = risk_from_frequencies(freq["fk"].to_numpy(), freq["Fk"].to_numpy(), weighted=weight is not None,
                                 weight=str(weight), method=method, qual=qual)
    return pd.Series(risk, index=data.index, name="risk")


def _household_codes(data: pd.DataFrame, household: str) -> np.ndarray:
    column = data[require_columns(data, [household], role="household id")[0]]
    if column.isna().any():
        raise SDCInputError(f"household id {household!r} has {int(column.isna().sum())} missing values")
    return pd.factorize(column)[0]


def household_risk_from_individual(risk: np.ndarray, households: np.ndarray) -> np.ndarray:
    """r_h = 1 - prod_j (1 - r_j) over the members of each household, given to every member (§3.5)."""
    safe = pd.Series(1.0 - np.asarray(risk, dtype=np.float64))
    return 1.0 - safe.groupby(households, sort=False).transform("prod").to_numpy()


def household_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    household: str,
    *,
    weight: str | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.Series:
    """Per-record household (hierarchical) risk, as sdcMicro ``measure_risk(..., hid=)`` column hier_risk.

    SPEC §3.5: the probability that at least one member of the household is re-identified,
    r_h = 1 - prod_j (1 - r_j) over its members' individual risks (:func:`individual_risk`),
    assigned to every member.

    Parameters
    ----------
    household : the household id column (no missing values).
    Others as in :func:`key_frequencies`.

    Returns
    -------
    Series ``household_risk`` indexed like ``data``.

    References
    ----------
    sdcMicro ``measure_risk`` (fast_hier = TRUE branch), SDC Practice Guide §7.8.
    """
    households = _household_codes(data, household)
    risk = individual_risk(data, keys, weight=weight, alpha=alpha, con=con).to_numpy()
    return pd.Series(household_risk_from_individual(risk, households), index=data.index, name="household_risk")


def global_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    household: str | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> dict[str, float]:
    """Global re-identification risk and expected number of re-identifications.

    SPEC §3.3 (R1 = mean individual risk, ER = sum) and §3.5 (the same over household risks), as
    sdcMicro ``measure_risk``: ``global_risk``/``global_risk_ER`` and ``hier_risk``/``hier_risk_ER``.

    Returns
    -------
    dict with ``risk`` and ``expected_reidentifications``; with ``household`` also
    ``household_risk`` and ``household_expected_reidentifications``.
    """
    return summarise_risk(risk_table(data, keys, weight=weight, household=household, alpha=alpha, con=con))


def risk_table(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    household: str | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
    frequencies: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per record ``fk``, ``Fk``, ``risk`` and, with ``household``, ``household_risk``, from one
    frequency pass (SPEC §2.4, §3.2, §3.5): what :func:`key_frequencies`, :func:`individual_risk`
    and :func:`household_risk` give, without computing the frequencies three times.
    ``frequencies``: the :func:`key_frequencies` of the same data, keys, weight and alpha when
    already computed (they are then not computed again)."""
    households = _household_codes(data, household) if household is not None else None
    if frequencies is None:
        table = key_frequencies(data, keys, weight=weight, alpha=alpha, con=con)
    else:
        table = frequencies[["fk", "Fk"]].set_axis(data.index)
    table["risk"] = risk_from_frequencies(
        table["fk"].to_numpy(), table["Fk"].to_numpy(), weighted=weight is not None, weight=str(weight)
    )
    if households is not None:
        table["household_risk"] = household_risk_from_individual(table["risk"].to_numpy(), households)
    return table


def summarise_risk(table: pd.DataFrame) -> dict[str, float]:
    """The global figures of a :func:`risk_table` (SPEC §3.3, §3.5): ``risk`` (mean individual risk)
    and ``expected_reidentifications`` (their sum); with a ``household_risk`` column also
    ``household_risk`` and ``household_expected_reidentifications``."""
    n = len(table)
    risk = table["risk"].to_numpy()
    result = {"risk": float(risk.sum() / n) if n else float("nan"), "expected_reidentifications": float(risk.sum())}
    if "household_risk" in table.columns:
        hier = table["household_risk"].to_numpy()
        result["household_risk"] = float(hier.sum() / n) if n else float("nan")
        result["household_expected_reidentifications"] = float(hier.sum())
    return result


def risk_above_threshold(risk: pd.Series | np.ndarray, threshold: float, *, relative: bool = False) -> int:
    """Number of records whose risk exceeds a threshold (SPEC §3.3): sum_i I(r_i > tau).

    Parameters
    ----------
    risk : per-record risks.
    threshold : tau itself, or with ``relative=True`` a quantile level in [0, 1] and tau is that
        quantile of the risks (0.75: records above the upper quartile).
    """
    values = np.asarray(risk, dtype=np.float64)
    if relative:
        check_scalar(threshold, "threshold (a quantile level when relative)", low=0, high=1)
        threshold = float(np.quantile(values, threshold)) if len(values) else 0.0
    return int(np.count_nonzero(values > threshold))


@dataclass(frozen=True)
class GlobalRiskThreshold:
    """Result of :func:`global_risk_threshold`.

    ``threshold``: the individual-risk level; None when the global risk is already below
    ``max_global_risk`` (sdcMicro's NA). ``records``: index labels of the records whose risk exceeds
    the threshold, the ones to treat (empty when ``threshold`` is None). ``global_risk``: the mean
    individual risk (SPEC §3.3). ``max_global_risk``: the target.
    """

    threshold: float | None
    records: pd.Index
    global_risk: float
    max_global_risk: float


def global_risk_threshold(risk: pd.Series, *, max_global_risk: float = 0.01) -> GlobalRiskThreshold:
    """The individual-risk threshold at which the global risk falls below ``max_global_risk``, and
    the records above it: sdcMicro ``measure_risk(..., max_global_risk=)$global_threshold``.

    SPEC §3.3 (global risk R1 = mean of r_i, count above a threshold) with the mu-Argus 4.1 rule
    (manual §2.3.4.1, equation 17) that sdcMicro's ``measure_threshold`` implements: with
    ER = max_global_risk · n, the threshold is the largest risk level l, below the largest risk,
    for which bringing every record above l down to l gives sum_{r_i <= l} r_i + l · #{r_i > l} < ER.
    None (sdcMicro NA) when sum_i r_i < ER already; 0 when no level works (e.g. all risks equal:
    then every record is to be treated).

    Parameters
    ----------
    risk : per-record individual risks (e.g. :func:`individual_risk`), no missing values.
    max_global_risk : the target global risk, in (0, 1) as in sdcMicro.

    Returns
    -------
    :class:`GlobalRiskThreshold`.
    """
    check_scalar(max_global_risk, "max_global_risk", low=0, high=1, closed="neither")
    values = pd.Series(risk).to_numpy(dtype=np.float64, na_value=np.nan)
    if len(values) == 0:
        raise SDCInputError("parameter risk: no records")
    if not np.isfinite(values).all() or (values < 0).any():
        raise SDCInputError("parameter risk: individual risks must be finite and non-negative")
    n = len(values)
    expected = float(max_global_risk) * n
    total = values.sum()
    index = pd.Series(risk).index
    if total < expected:
        return GlobalRiskThreshold(None, index[:0], float(total / n), float(max_global_risk))
    ordered = np.sort(values)[::-1]
    above = np.concatenate(([0.0], np.cumsum(ordered)[:-1]))  # risk of the records before position j
    new_level = np.concatenate(([False], ordered[1:] != ordered[:-1]))  # first record of a lower level
    reduced = (total - above) + ordered * np.arange(n)  # equation 17 at each position
    found = np.flatnonzero(new_level & (reduced < expected))
    threshold = float(ordered[found[0]]) if len(found) else 0.0
    return GlobalRiskThreshold(threshold, index[values > threshold], float(total / n), float(max_global_risk))


def k_anonymity_violations(
    data: pd.DataFrame,
    keys: Sequence[str],
    k: int,
    *,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> int:
    """Number of records violating k-anonymity, sum_i I(f_i < k) (SPEC §3.1).

    f_i is the §2.4 sample frequency (missing values match any value); weights are not used.
    """
    check_scalar(k, "k", integer=True, low=1)
    freq = key_frequencies(data, keys, alpha=alpha, con=con)
    return int(np.count_nonzero(freq["fk"].to_numpy() < k))
