"""Loss measured on moments of continuous variables: means, (co)variances, correlations and
the diagonal of the inverse correlation matrix (SPEC §9.4, §9.6, §9.7).

Missing values are skipped (pairwise complete observations for covariances and correlations),
so a suppressed value changes the moments exactly as it changes what users can estimate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.validation import check_option, check_pair, continuous_values

FORMS = ("abs", "squared", "relative")
CORRELATION_METHODS = ("pearson", "kendall", "spearman")
ON_ZERO = ("raise", "skip")


def _numeric_frames(original: pd.DataFrame, protected: pd.DataFrame,
                    columns: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    columns = list(original.columns) if columns is None else list(columns)
    columns = check_pair(original, protected, columns)
    return _stacked(original, columns, "original"), _stacked(protected, columns, "protected"), columns


def _stacked(frame: pd.DataFrame, columns: list[str], role: str) -> np.ndarray:
    # column-major, so reductions down each variable read contiguous memory
    values = np.empty((len(frame), len(columns)), order="F")
    for j, column in enumerate(columns):
        values[:, j] = continuous_values(frame, column, role)
    return values


def _aggregate(before: np.ndarray, after: np.ndarray, labels: list[str], form: str, on_zero: str) -> float:
    """Mean over terms of |b - a|, (b - a)^2 or |b - a| / |b| (the three forms of SPEC §9.4/§9.6).

    The relative form is undefined for a zero reference value (OPEN in SPEC §9.6): ``on_zero``
    "raise" names the offending term, "skip" averages over the defined terms only.
    """
    if np.isnan(before).any() or np.isnan(after).any():
        bad = labels[int(np.flatnonzero(np.isnan(before) | np.isnan(after))[0])]
        raise NotComputable(f"{bad}: the moment is undefined (too few observed values or no spread)")
    gap = before - after
    if form == "abs":
        return float(np.mean(np.abs(gap)))
    if form == "squared":
        return float(np.mean(gap * gap))
    zero = before == 0
    if zero.any():
        if on_zero == "raise":
            raise SDCInputError(
                f"{labels[int(np.flatnonzero(zero)[0])]}: the relative form divides by the original value, which is 0"
            )
        if zero.all():
            return float("nan")
    return float(np.mean(np.abs(gap[~zero]) / np.abs(before[~zero])))


def mean_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None, *,
              form: str = "abs", on_zero: str = "raise") -> float:
    """Loss in column means, SPEC §9.4 eqs (7) ``"abs"``, (8) ``"squared"``, (9) ``"relative"``.

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` numeric in both (default: all columns of ``original``).
    columns : sequence of str, optional
        The continuous variables.
    form : {"abs", "squared", "relative"}
        (1/m)·sum_j |xbar_j - xbar*_j|, its squared version, or relative to |xbar_j|.
    on_zero : {"raise", "skip"}
        Relative form with a zero original mean: raise :class:`SDCInputError` or skip the term.

    Returns
    -------
    float
        Not bounded above; 0 when every mean is preserved.

    References
    ----------
    Młodak (S003) eqs (7)–(9); Domingo-Ferrer, Mateo-Sanz, Torra (2001).
    """
    check_option(form, "form", FORMS)
    check_option(on_zero, "on_zero", ON_ZERO)
    x, y, columns = _numeric_frames(original, protected, columns)
    return _aggregate(np.nanmean(x, axis=0), np.nanmean(y, axis=0), [f"mean of {c!r}" for c in columns],
                      form, on_zero)


def mean_max_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None) -> float:
    """(1/m)·sum_j |xbar_j - xbar*_j| / max_l x_lj for non-negative variables.

    The mean-based analogue of the unnormalised distance of S003 footnote 2 (SPEC §9.1):
    the change of the mean in units of the variable's largest original value.

    Returns
    -------
    float
        In [0, 1] when the protected values stay within [0, max_l x_lj].
    """
    x, y, columns = _numeric_frames(original, protected, columns)
    top = np.nanmax(x, axis=0)
    for j, column in enumerate(columns):
        if np.nanmin(x[:, j]) < 0 or not top[j] > 0:
            raise SDCInputError(f"original column {column!r}: the max-normalised form needs non-negative "
                                "values that are not all 0")
    return float(np.mean(np.abs(np.nanmean(x, axis=0) - np.nanmean(y, axis=0)) / top))


def _covariance(values: np.ndarray) -> np.ndarray:
    # sample covariance (divisor n - 1, SPEC §9.6 ASSUMPTION); pairwise complete when NA present
    if np.isnan(values).any():
        return pd.DataFrame(values).cov().to_numpy()
    return np.atleast_2d(np.cov(values, rowvar=False))


def correlation_matrix(values: np.ndarray, method: str) -> np.ndarray:
    """Correlation matrix of the columns of ``values``; Kendall is tau-b (ties corrected).

    Kendall uses scipy's O(n log n) tau-b per pair (pandas' own Kendall is O(n^2)); pairs are
    taken over records observed in both variables.
    """
    check_option(method, "method", CORRELATION_METHODS)
    m = values.shape[1]
    if method == "pearson":
        if np.isnan(values).any():
            return pd.DataFrame(values).corr().to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.atleast_2d(np.corrcoef(values, rowvar=False))
    if method == "spearman":
        return pd.DataFrame(values).corr(method="spearman").to_numpy()
    matrix = np.eye(m)
    for j in range(m):
        for l in range(j + 1, m):
            both = ~(np.isnan(values[:, j]) | np.isnan(values[:, l]))
            tau = stats.kendalltau(values[both, j], values[both, l], variant="b").statistic
            matrix[j, l] = matrix[l, j] = tau
    return matrix


def _pairwise_labels(columns: list[str], kind: str) -> list[str]:
    return [f"{kind}({columns[j]!r}, {columns[l]!r})" for l in range(len(columns)) for j in range(l + 1)]


def _upper(matrix: np.ndarray) -> np.ndarray:
    """Entries j <= l, ordered as :func:`_pairwise_labels`."""
    m = matrix.shape[0]
    return np.array([matrix[j, l] for l in range(m) for j in range(l + 1)])


def covariance_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None, *,
                    form: str = "abs", diagonal_only: bool = False, on_zero: str = "raise") -> float:
    """Loss in the covariance matrix, SPEC §9.6.

    Parameters
    ----------
    original, protected, columns :
        As :func:`mean_loss`.
    form : {"abs", "squared", "relative"}
        Mean over the m(m+1)/2 pairs j <= l of |v_jl - v*_jl|, (v_jl - v*_jl)^2 or
        |v_jl - v*_jl| / |v_jl| (i.e. 2·sum / (m(m+1))).
    diagonal_only : bool
        Use only the variances v_jj (the three "/ m" forms of SPEC §9.6).
    on_zero : {"raise", "skip"}
        Relative form with a zero original covariance: raise or skip the term (OPEN in SPEC).

    Returns
    -------
    float

    References
    ----------
    Młodak (S003) §4; Domingo-Ferrer, Mateo-Sanz, Torra (2001).
    """
    check_option(form, "form", FORMS)
    check_option(on_zero, "on_zero", ON_ZERO)
    x, y, columns = _numeric_frames(original, protected, columns)
    before, after = _covariance(x), _covariance(y)
    if diagonal_only:
        return _aggregate(np.diag(before), np.diag(after), [f"variance of {c!r}" for c in columns], form, on_zero)
    return _aggregate(_upper(before), _upper(after), _pairwise_labels(columns, "covariance"), form, on_zero)


def correlation_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None, *,
                     form: str = "abs", method: str = "pearson", on_zero: str = "raise") -> float:
    """Loss in the correlation matrix: the three pairwise forms of SPEC §9.6 with rho for v.

    The m diagonal terms (always 1 - 1 = 0) are counted in the m(m+1)/2 denominator, as the
    formula with j <= l prescribes. ``method`` "kendall" (tau-b) suits ordinal data.

    Returns
    -------
    float
    """
    check_option(form, "form", FORMS)
    check_option(on_zero, "on_zero", ON_ZERO)
    x, y, columns = _numeric_frames(original, protected, columns)
    before, after = correlation_matrix(x, method), correlation_matrix(y, method)
    return _aggregate(_upper(before), _upper(after), _pairwise_labels(columns, "correlation"), form, on_zero)


def variance_arctan_loss(original: pd.DataFrame, protected: pd.DataFrame,
                         columns: Sequence[str] | None = None) -> float:
    """(2/(pi·m))·sum_j arctan|v_jj - v*_jj|, SPEC §9.6; in [0, 1].

    Returns
    -------
    float
    """
    x, y, columns = _numeric_frames(original, protected, columns)
    gap = np.abs(np.diag(_covariance(x)) - np.diag(_covariance(y)))
    if np.isnan(gap).any():
        raise NotComputable(f"variance of {columns[int(np.flatnonzero(np.isnan(gap))[0])]!r}: "
                            "at least two observed values are needed")
    return float(2.0 / (np.pi * len(columns)) * np.arctan(gap).sum())


def _inverse_diagonal(matrix: np.ndarray, which: str, columns: list[str]) -> np.ndarray:
    if np.isnan(matrix).any():
        raise NotComputable(f"{which}: correlations are undefined (a variable of {columns} has no spread)")
    # the condition number catches numerically singular matrices that inv() would still invert
    if np.linalg.cond(matrix) > 1e12:
        raise NotComputable(f"{which}: the correlation matrix of {columns} is singular, so (11)/(12) are undefined")
    return np.diag(np.linalg.inv(matrix))


def _inverse_correlation_measures(before: np.ndarray, after: np.ndarray, columns: list[str]) -> tuple[float, float]:
    """(11) and (12) from the correlation matrices before and after."""
    a = _inverse_diagonal(before, "original", columns)
    b = _inverse_diagonal(after, "protected", columns)
    return float(np.abs(a - b).sum()), float(0.5 * np.linalg.norm(a / np.linalg.norm(a) - b / np.linalg.norm(b)))


def inverse_correlation_loss(original: pd.DataFrame, protected: pd.DataFrame, *, method: str = "kendall",
                             columns: Sequence[str] | None = None) -> tuple[float, float]:
    """Inverse-correlation loss, SPEC §9.7 eqs (11) and (12).

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` (default: all columns of ``original``) numeric in both.
    method : {"kendall", "pearson"}
        Correlation used for R and R*: Kendall tau-b (as in the S003 worked example) or Pearson.
    columns : sequence of str, optional
        The variables (at least two).

    Returns
    -------
    (float, float)
        (11) sum_j |rho^-1_jj - rho*^-1_jj| and (12) 0.5·||a/||a|| - b/||b|||, a and b the
        diagonals of R^-1 and R*^-1; (12) lies in [0, sqrt(2)/2).

    Raises
    ------
    SDCInputError
        If R or R* is singular.

    References
    ----------
    Młodak (S003) eqs (11), (12), Tables 3–4.
    """
    check_option(method, "method", ("kendall", "pearson"))
    x, y, columns = _numeric_frames(original, protected, columns)
    if len(columns) < 2:
        raise SDCInputError("columns: inverse-correlation loss needs at least two variables")
    return _inverse_correlation_measures(correlation_matrix(x, method), correlation_matrix(y, method), columns)


def moment_losses(original: pd.DataFrame, protected: pd.DataFrame,
                  columns: Sequence[str] | None = None, *, correlation_method: str = "pearson") -> dict[str, float]:
    """Every moment-based measure of SPEC §9.4, §9.6 and §9.7 in one dictionary.

    Means, covariances and correlations are computed once and shared by all forms (the
    individual functions give the same numbers). Relative forms skip terms whose original
    value is 0 (NaN when all are); the inverse-correlation pair is NaN when a correlation
    matrix is singular. Intended for reports and Dagster metadata.

    Returns
    -------
    dict
        Keys ``mean_{form}``, ``covariance_{form}``, ``variance_{form}``,
        ``correlation_{form}`` for form in abs / squared / relative, ``mean_max`` (only when
        every variable is non-negative and not all 0), ``variance_arctan``,
        ``inverse_correlation_raw`` and ``inverse_correlation_normalised``.
    """
    check_option(correlation_method, "correlation_method", ("kendall", "pearson"))
    x, y, columns = _numeric_frames(original, protected, columns)
    means = (np.nanmean(x, axis=0), np.nanmean(y, axis=0))
    covariances = (_covariance(x), _covariance(y))
    correlations = (correlation_matrix(x, correlation_method), correlation_matrix(y, correlation_method))
    terms = {
        "mean": ([f"mean of {c!r}" for c in columns], *means),
        "covariance": (_pairwise_labels(columns, "covariance"), _upper(covariances[0]), _upper(covariances[1])),
        "variance": ([f"variance of {c!r}" for c in columns], np.diag(covariances[0]), np.diag(covariances[1])),
        "correlation": (_pairwise_labels(columns, "correlation"), _upper(correlations[0]), _upper(correlations[1])),
    }
    result: dict[str, float] = {}
    for form in FORMS:
        for name, (labels, before, after) in terms.items():
            result[f"{name}_{form}"] = _aggregate(before, after, labels, form, "skip")
    top = np.nanmax(x, axis=0)
    if (np.nanmin(x, axis=0) >= 0).all() and (top > 0).all():
        result["mean_max"] = float(np.mean(np.abs(means[0] - means[1]) / top))
    result["variance_arctan"] = float(2.0 / (np.pi * len(columns))
                                      * np.arctan(np.abs(np.diag(covariances[0]) - np.diag(covariances[1]))).sum())
    raw = normalised = float("nan")
    if len(columns) >= 2:
        # a singular correlation matrix leaves (11)/(12) undefined: reported as NaN here
        with contextlib.suppress(SDCInputError):
            raw, normalised = _inverse_correlation_measures(*correlations, columns)
    result["inverse_correlation_raw"], result["inverse_correlation_normalised"] = raw, normalised
    return result
