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

Missing values (SPEC §5.8): a categorical NA is a wildcard (symmetric compatibility, alpha = 1; a
key missing on every categorical variable has f_i = n), F^_i is the weight sum of the compatible
records, and a continuous NA is safe (w_j(i) = 0) and in nobody's neighbourhood. The denominator
of the continuous term stays m - h.

:func:`prepare_combined` builds the set-up once (:class:`CombinedSetup`: distinct categorical keys,
their frequencies, the unsafe continuous flags); r_i (:func:`risk_of_setup`) and the risk games of
:mod:`sdc_dagster.risk.contribution` read the same object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.numerics.kept import KeptResults, content_digest
from sdc_dagster.risk.frequencies import DistinctKeys, distinct_keys
from sdc_dagster.risk.subset_frequencies import symmetric_compatible_counts
from sdc_dagster.risk.neighbourhood import neighbourhood_counts
from sdc_dagster.validation import check_scalar, positive_values


def validate_threshold(k) -> int:
    """k as an int >= 1, or SDCInputError."""
    return check_scalar(k, "k", integer=True, low=1)


def _distinct_columns(data: pd.DataFrame, columns: Sequence[str], *, role: str) -> list[str]:
    columns = require_columns(data, [columns] if isinstance(columns, str) else columns, role=role)
    if len(set(columns)) != len(columns):
        raise SDCInputError(f"{role}s: a column is named twice in {columns}")
    return columns


@dataclass(frozen=True)
class CombinedSetup:
    """The set-up of SPEC §5 shared by the combined risk (§5.5, §5.6) and the risk games (§6.5).

    ``keys`` are the distinct categorical keys (:func:`~sdc_dagster.risk.frequencies.distinct_keys`,
    digit 0 = NA; None when h = 0), ``key_frequency`` f and ``key_weight`` F^ of each distinct key
    with the symmetric NA compatibility of SPEC §5.8 (F^ = f without weights), and
    ``unsafe_continuous`` the n x (m - h) flags w_j(i) or w*_j(i) (False for a missing value).
    """

    categorical: list[str]
    continuous: list[str]
    k: int
    weighted: bool
    keys: DistinctKeys | None
    key_frequency: np.ndarray
    key_weight: np.ndarray
    unsafe_continuous: np.ndarray

    @property
    def frequency(self) -> np.ndarray:
        """f_i per record (float64; SPEC §5.5, §5.8)."""
        return self.key_frequency[self.keys.record_key]

    @property
    def weight_sum(self) -> np.ndarray:
        """F^_i per record (float64; SPEC §5.6, §5.8)."""
        return self.key_weight[self.keys.record_key]


#: The set-ups of the last few :func:`prepare_combined` calls, by content and arguments.
_SETUPS = KeptResults(4)


def _unsafe_continuous(data: pd.DataFrame, continuous: list[str], precision, k: int, omega_values) -> np.ndarray:
    """w_j(i) (SPEC §5.3) or w*_j(i) (SPEC §5.6) per record and continuous variable; NA is safe (§5.8)."""
    unsafe = np.zeros((len(data), len(continuous)), dtype=bool)
    for j, c in enumerate(continuous):
        if isinstance(precision, Mapping):
            if c not in precision:
                raise SDCInputError(f"precision: no entry for continuous variable {c!r}")
            p = precision[c]
        else:
            p = precision
        try:
            values = pd.to_numeric(data[c], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise SDCInputError(f"continuous variable {c!r}: must be numeric ({exc})") from exc
        try:
            eta = neighbourhood_counts(values, p)
        except SDCInputError as exc:
            raise SDCInputError(f"continuous variable {c!r}: {exc}") from exc
        unsafe[:, j] = eta < k  # NaN (missing value) compares False: safe
        if omega_values is not None:
            unsafe[:, j] |= np.floor(omega_values * eta) < k
    return unsafe


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
    """Validate the arguments of SPEC §5 and build the shared set-up (:class:`CombinedSetup`).

    Categorical keys are grouped once in DuckDB and their frequencies counted with the project's
    compatible counter (SPEC §5.8: NA = wildcard, symmetric). w_j(i) = 1 when eta(x_ij, p_j) < k
    (SPEC §5.3); with ``weight`` (or an explicit ``omega``) the survey variant w*_j(i) = 1 when
    eta < k or floor(omega_i·eta) < k (SPEC §5.6). Missing continuous values are safe (SPEC §5.8).

    The last few set-ups are kept by the content of the columns they read and the arguments
    (:class:`~sdc_dagster.numerics.kept.KeptResults`): the wave chain asks for each protected
    variant's twice, in the residual risk and in the residual contributions (on 1,000,000 records
    0.8 CPU s each). A kept set-up is shared: its users read it, never modify it.
    """
    k = validate_threshold(k)
    categorical = _distinct_columns(data, categorical, role="categorical variable")
    continuous = _distinct_columns(data, continuous, role="continuous variable")
    if set(categorical) & set(continuous):
        raise SDCInputError(f"variable {sorted(set(categorical) & set(continuous))[0]!r}: is both categorical and continuous")
    if not categorical and not continuous:
        raise SDCInputError("categorical, continuous: name at least one quasi-identifier")
    if omega is None and weight is not None:
        omega = weight
    omega_values = positive_values(data, omega, role="omega") if omega is not None else None
    weights = positive_values(data, weight, role="weight") if weight is not None else None

    def setup() -> CombinedSetup:
        unsafe = _unsafe_continuous(data, continuous, precision, k, omega_values)
        keys, f, F = None, np.zeros(0), np.zeros(0)
        if categorical:
            keys = distinct_keys(data, categorical, weights=weights)
            f, F = symmetric_compatible_counts(keys.digits, keys.radices, keys.count, keys.weight_sum)
        return CombinedSetup(categorical=categorical, continuous=continuous, k=k, weighted=weight is not None,
                             keys=keys, key_frequency=f, key_weight=F, unsafe_continuous=unsafe)

    # the same variant's set-up is asked for by the residual risk and by the residual contributions
    precisions = sorted(precision.items(), key=repr) if isinstance(precision, Mapping) else precision
    content = content_digest(*(data[c] for c in [*categorical, *continuous]), weights, omega_values)
    return _SETUPS.get((content, tuple(categorical), tuple(continuous), repr(precisions), k, weight is not None),
                       setup)


def risk_of_setup(setup: CombinedSetup, index: pd.Index) -> pd.DataFrame:
    """The frame of :func:`combined_risk` (SPEC §5.5, §5.6, §5.8) read off a prepared set-up."""
    n = len(index)
    if setup.categorical:
        f, F = setup.frequency, setup.weight_sum
        categorical_term = 1.0 / f if not setup.weighted else f / (f + F * (f - 1.0))
    else:
        categorical_term = np.full(n, np.nan)
    if setup.continuous:
        continuous_term = setup.unsafe_continuous.mean(axis=1)
    else:
        continuous_term = np.full(n, np.nan)
    risk = np.nanmean(np.column_stack([categorical_term, continuous_term]), axis=1) if n else np.zeros(0)
    return pd.DataFrame({"categorical": categorical_term, "continuous": continuous_term, "risk": risk}, index=index)


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
        Microdata; missing values in the quasi-identifiers follow SPEC §5.8 (module docstring).
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
        weights of the records compatible with the record's categorical key (SPEC §2.2, §5.8).
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
    return risk_of_setup(setup, data.index)


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
