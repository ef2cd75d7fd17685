"""Re-identification risk of categorical key variables (SPEC §2, §3.1–§3.5).

Frequencies follow sdcMicro's ``freqCalc`` (missing key values match any value, SPEC §2.4) and the
risks sdcMicro's ``measure_risk`` (individual risk ``indivRisk(method="approx")``, global risk,
household risk). The group-bys run in DuckDB (:mod:`sdc_dagster.frequencies`).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.frequencies import key_columns, missing_aware_key_frequencies


def _weights(data: pd.DataFrame, weight: str | None) -> np.ndarray | None:
    """The weight column as float64, after checking it is numeric, complete and positive."""
    if weight is None:
        return None
    column = data[require_columns(data, [weight], role="weight")[0]]
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        raise SDCInputError(f"weight {weight!r} must be numeric (found dtype {column.dtype})")
    if column.isna().any():
        raise SDCInputError(f"weight {weight!r} has {int(column.isna().sum())} missing values; every record needs a weight")
    values = column.to_numpy(dtype="float64")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        raise SDCInputError(
            f"weight {weight!r} must be finite and positive; {int(bad.sum())} values are not "
            f"(first: {values[bad][0]!r})"
        )
    return values


def _alpha(alpha: float) -> float:
    if not (0.0 <= float(alpha) <= 1.0):
        raise SDCInputError(f"parameter alpha must lie in [0, 1] (got {alpha!r})")
    return float(alpha)


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
    ``alpha`` (see :func:`sdc_dagster.frequencies.compatible_counts` for the exact rule); a key
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
    weights = _weights(data, weight)
    f, F = missing_aware_key_frequencies(data, keys, weights=weights, alpha=_alpha(alpha), con=con)
    return pd.DataFrame({"fk": f, "Fk": F}, index=data.index)


def risk_from_frequencies(fk: np.ndarray, Fk: np.ndarray, *, weighted: bool, weight: str = "weight") -> np.ndarray:
    """Individual risk from (f, F): Benedetti–Franconi approximation, or 1/f without weights.

    SPEC §3.2, exactly sdcMicro ``indivRisk(method="approx")``: p = f/F; r = 1/f where f == F;
    otherwise r = p/(1-p)·ln(1/p) for f = 1, p/(1-p) - (p/(1-p))²·ln(1/p) for f = 2 and
    p/(f - (1-p)) for f > 2. Like sdcMicro, a fractional f strictly between 1 and 2 (possible only
    with alpha < 1) matches none of the branches and gets risk 0.

    OPEN decision (SPEC §3.2, F < f): the approximation is meaningless there (p > 1, negative
    values), so it is rejected: SDCInputError naming ``weight`` (weights below 1 cause it).
    """
    fk = np.asarray(fk, dtype=np.float64)
    if not weighted:
        return 1.0 / fk
    Fk = np.asarray(Fk, dtype=np.float64)
    below = Fk < fk
    if below.any():
        raise SDCInputError(
            f"weight {weight!r}: the estimated population frequency Fk is below the sample frequency fk "
            f"for {int(below.sum())} records (weights below 1?); the individual risk is undefined there"
        )
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
    return risk


def individual_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.Series:
    """Per-record re-identification risk, as sdcMicro ``measure_risk(...)$Res[, "risk"]``.

    SPEC §3.2: with weights the Benedetti–Franconi approximation of :func:`risk_from_frequencies`
    on the §2.4 frequencies; without weights 1/f_k.

    Parameters
    ----------
    data, keys, weight, alpha, con : as in :func:`key_frequencies`.

    Returns
    -------
    Series ``risk`` (float64) indexed like ``data``.

    Raises
    ------
    SDCInputError : bad keys or weights, or F_k < f_k (weights below 1; the OPEN point of §3.2).

    References
    ----------
    Franconi & Polettini (2004), Individual risk estimation in mu-Argus: a review; sdcMicro
    ``indivRisk`` and ``measure_risk`` (5.8.1).
    """
    freq = key_frequencies(data, keys, weight=weight, alpha=alpha, con=con)
    risk = risk_from_frequencies(freq["fk"].to_numpy(), freq["Fk"].to_numpy(), weighted=weight is not None,
                                 weight=str(weight))
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
        if not (0.0 <= threshold <= 1.0):
            raise SDCInputError(f"parameter threshold must be a quantile level in [0, 1] when relative (got {threshold!r})")
        threshold = float(np.quantile(values, threshold)) if len(values) else 0.0
    return int(np.count_nonzero(values > threshold))


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
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise SDCInputError(f"parameter k must be a positive integer (got {k!r})")
    freq = key_frequencies(data, keys, alpha=alpha, con=con)
    return int(np.count_nonzero(freq["fk"].to_numpy() < k))
