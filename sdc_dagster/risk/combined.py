"""Młodak's combined risk for categorical and continuous quasi-identifiers (SPEC §5).

A record is risky through its categorical key (small frequency f_i) or through a continuous value
with few neighbours (eta < k, SPEC §5.2–5.3). :func:`combined_risk` returns both components and
their average r_i (SPEC §5.5), or r*_i with survey weights (SPEC §5.6).

Decisions on the OPEN points of SPEC §5 (documented once here, applied everywhere):

* h = m (no continuous variable) and h = 0 (no categorical variable): r_i is the average of the
  components that exist, i.e. r_i = 1/f_i (or the weighted first term) when there is no continuous
  variable and r_i = (sum_j w_j(i))/(m - h) when there is no categorical variable. The missing
  component is reported as NaN. This keeps r_i in [0, 1] and agrees with the risk game of SPEC §6.5,
  in which an empty categorical sub-combination is safe.
* Safety threshold: the formula of SPEC §5.3 (eta >= k is safe), not the prose's strict variant.
* The weight omega of w*_j(i) (SPEC §5.6 ASSUMPTION) is per record: the ``omega`` argument names a
  column or gives a constant, and defaults to the design-weight column. With design weights >= 1
  the extra condition floor(omega·eta) < k never fires, so w* = w; it matters for omega < 1
  (e.g. a sampling fraction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.frequencies import complete_key_frequencies
from sdc_dagster.risk.continuous import neighbourhood_counts


def validate_threshold(k) -> int:
    """k as an int >= 1, or SDCInputError."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise SDCInputError(f"k: must be an integer of at least 1, got {k!r}")
    return int(k)


def _complete_columns(data: pd.DataFrame, columns: Sequence[str], *, role: str) -> list[str]:
    columns = require_columns(data, columns, role=role)
    if len(set(columns)) != len(columns):
        raise SDCInputError(f"{role}s: a column is named twice in {columns}")
    for c in columns:
        if data[c].isna().any():
            raise SDCInputError(
                f"{role} {c!r}: has missing values; the combined measure (SPEC §5.1) needs complete data"
            )
    return columns


def _positive_vector(data: pd.DataFrame, spec, *, role: str) -> np.ndarray:
    """A per-record positive float vector from a column name or a constant."""
    if isinstance(spec, str):
        name = require_columns(data, [spec], role=role)[0]
        try:
            values = pd.to_numeric(data[name], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise SDCInputError(f"{role} {name!r}: must be numeric ({exc})") from exc
    elif isinstance(spec, Real) and not isinstance(spec, bool):
        name = role
        values = np.full(len(data), float(spec))
    else:
        raise SDCInputError(f"{role}: must be a column name or a number, got {spec!r}")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise SDCInputError(f"{role} {name!r}: must be finite and positive for every record")
    return values


@dataclass(frozen=True)
class CombinedSetup:
    """Validated inputs of SPEC §5 shared by the combined risk and the risk games (SPEC §6.5)."""

    categorical: list[str]
    continuous: list[str]
    k: int
    unsafe_continuous: np.ndarray  # n x (m - h) bool, w_j(i) or w*_j(i)


def prepare_combined(
    data: pd.DataFrame,
    categorical: Sequence[str],
    continuous: Sequence[str],
    precision,
    *,
    k: int = 3,
    weight: str | None = None,
    omega=None,
) -> CombinedSetup:
    """Validate the arguments of SPEC §5 and compute the continuous unsafe indicators.

    w_j(i) = 1 when eta(x_ij, p_j) < k (SPEC §5.3); with ``weight`` (or an explicit ``omega``) the
    survey variant w*_j(i) = 1 when eta < k or floor(omega_i·eta) < k (SPEC §5.6).
    """
    k = validate_threshold(k)
    categorical = _complete_columns(data, [categorical] if isinstance(categorical, str) else categorical,
                                    role="categorical variable")
    continuous = _complete_columns(data, [continuous] if isinstance(continuous, str) else continuous,
                                   role="continuous variable")
    if set(categorical) & set(continuous):
        raise SDCInputError(f"variable {sorted(set(categorical) & set(continuous))[0]!r}: is both categorical and continuous")
    if not categorical and not continuous:
        raise SDCInputError("categorical, continuous: name at least one quasi-identifier")
    if omega is None and weight is not None:
        omega = weight
    omega_values = _positive_vector(data, omega, role="omega") if omega is not None else None
    if weight is not None:
        _positive_vector(data, weight, role="weight")
    unsafe = np.zeros((len(data), len(continuous)), dtype=bool)
    for j, c in enumerate(continuous):
        if isinstance(precision, Mapping):
            if c not in precision:
                raise SDCInputError(f"precision: no entry for continuous variable {c!r}")
            p = precision[c]
        else:
            p = precision
        try:
            values = pd.to_numeric(data[c], errors="raise").to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise SDCInputError(f"continuous variable {c!r}: must be numeric ({exc})") from exc
        try:
            eta = neighbourhood_counts(values, p)
        except SDCInputError as exc:
            raise SDCInputError(f"continuous variable {c!r}: {exc}") from exc
        unsafe[:, j] = eta < k
        if omega_values is not None:
            unsafe[:, j] |= np.floor(omega_values * eta) < k
    return CombinedSetup(categorical=categorical, continuous=continuous, k=k, unsafe_continuous=unsafe)


def combined_risk(
    data: pd.DataFrame,
    categorical: Sequence[str],
    continuous: Sequence[str],
    precision,
    *,
    k: int = 3,
    weight: str | None = None,
    omega=None,
) -> pd.DataFrame:
    """Per-record combined risk r_i (SPEC §5.5) or, with weights, r*_i (SPEC §5.6).

    r_i  = 0.5·( 1/f_i + sum_j w_j(i)/(m - h) )
    r*_i = 0.5·( f_i/(f_i + F^_i·(f_i - 1)) + sum_j w*_j(i)/(m - h) )

    Parameters
    ----------
    data : DataFrame
        Microdata without missing values in the quasi-identifiers.
    categorical : sequence of str
        X_1..X_h (may be empty; see the module docstring for h = 0).
    continuous : sequence of str
        X_{h+1}..X_m (may be empty; see the module docstring for h = m).
    precision : mapping {column: p_j} or float
        Precision p_j in (0, 1) of each continuous variable (a float applies to all).
    k : int
        Threshold for both the categorical frequency and the neighbourhood count (default 3).
    weight : str, optional
        Design-weight column; switches to r*_i. f_i is the sample frequency and F^_i the sum of
        weights of the record's categorical key (SPEC §2.2).
    omega : str or float, optional
        The weight of w*_j(i): a column or a constant; defaults to ``weight``.

    Returns
    -------
    DataFrame indexed like ``data`` with columns ``categorical`` (1/f_i or the weighted term),
    ``continuous`` (share of continuous variables unsafe for the record) and ``risk``.

    References
    ----------
    Młodak, "A method of comprehensive disclosure-risk assessment for microdata" (S000).
    """
    setup = prepare_combined(data, categorical, continuous, precision, k=k, weight=weight, omega=omega)
    n = len(data)
    if setup.categorical:
        freq = complete_key_frequencies(data, setup.categorical, weight=weight)
        f = freq["fk"].to_numpy(dtype=np.float64)
        F = freq["Fk"].to_numpy(dtype=np.float64)
        categorical_term = 1.0 / f if weight is None else f / (f + F * (f - 1.0))
    else:
        categorical_term = np.full(n, np.nan)
    if setup.continuous:
        continuous_term = setup.unsafe_continuous.mean(axis=1)
    else:
        continuous_term = np.full(n, np.nan)
    risk = np.nanmean(np.column_stack([categorical_term, continuous_term]), axis=1) if n else np.zeros(0)
    return pd.DataFrame(
        {"categorical": categorical_term, "continuous": continuous_term, "risk": risk}, index=data.index
    )


def global_combined_risk(
    data: pd.DataFrame,
    categorical: Sequence[str],
    continuous: Sequence[str],
    precision,
    *,
    k: int = 3,
    weight: str | None = None,
    omega=None,
) -> float:
    """Global combined risk r = (1/n)·sum_i r_i (SPEC §5.5), or r* = (1/n)·sum_i r*_i (SPEC §5.6).

    Same parameters as :func:`combined_risk`; returns a float (NaN for an empty frame).
    """
    per_record = combined_risk(data, categorical, continuous, precision, k=k, weight=weight, omega=omega)
    return float(per_record["risk"].mean()) if len(per_record) else float("nan")
