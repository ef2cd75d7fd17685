"""sdcMicro's data-utility measures IL1, IL1s and eigen (``dUtility``) for continuous variables.

Semantics follow sdcMicro 5.8 ``dUtilityWORK``: sums (not means) over all cells, NA and
non-finite terms dropped as R's ``sum(na.rm = TRUE)`` after ``a[a == Inf] <- NA`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import NotComputable
from sdc_dagster.validation import check_option, check_pair, continuous_values

UTILITY_METHODS = ("IL1", "IL1s", "eigen")


def _standardised_correlation(values: np.ndarray, which: str, columns: list[str]) -> np.ndarray:
    """``var(scale(x), use = "pairwise.complete.obs")``: the Pearson correlation matrix."""
    correlation = pd.DataFrame(values).corr().to_numpy()
    if np.isnan(correlation).any():
        raise NotComputable(f"{which}: a variable of {columns} has no spread, so eigen utility is undefined")
    return correlation


def d_utility(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None, *,
              method: str = "IL1") -> float:
    """sdcMicro ``dUtility(x, xm, method)`` between original and perturbed continuous variables.

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` (default: all columns of ``original``) numeric in both.
    columns : sequence of str, optional
        The continuous variables.
    method : {"IL1", "IL1s", "eigen"}
        ``"IL1"``: sum_ij 100·|x_ij - x*_ij| / |x_ij| (cells with x_ij = 0 dropped);
        ``"IL1s"``: sum_ij |x_ij - x*_ij| / (sqrt(2)·s_j), s_j the sample SD of the original;
        ``"eigen"``: sum_k |e_k - e*_k| / e_k over the eigenvalues (descending) of the
        correlation matrices of original and perturbed data.

    Returns
    -------
    float
        0 for identical data; larger = more loss.

    References
    ----------
    sdcMicro ``dUtility`` (Templ); Mateo-Sanz, Sebé, Domingo-Ferrer (2004) for IL1s;
    Templ and Meindl (2008).
    """
    check_option(method, "method", UTILITY_METHODS)
    columns = list(original.columns) if columns is None else list(columns)
    columns = check_pair(original, protected, columns)
    x = np.column_stack([continuous_values(original, c, "original") for c in columns])
    y = np.column_stack([continuous_values(protected, c, "protected") for c in columns])
    if method == "eigen":
        before = np.sort(np.linalg.eigvalsh(_standardised_correlation(x, "original", columns)))[::-1]
        after = np.sort(np.linalg.eigvalsh(_standardised_correlation(y, "protected", columns)))[::-1]
        return float(np.sum(np.abs(before - after) / before))
    gap = np.abs(x - y)
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "IL1":
            terms = 100.0 * gap / np.abs(x)
        else:
            terms = gap / (np.nanstd(x, axis=0, ddof=1) * np.sqrt(2.0))
    return float(terms[np.isfinite(terms)].sum())


def d_utility_summary(original: pd.DataFrame, protected: pd.DataFrame,
                      columns: Sequence[str] | None = None) -> dict[str, float]:
    """All three :func:`d_utility` measures: ``{"IL1": ..., "IL1s": ..., "eigen": ...}``."""
    return {method: d_utility(original, protected, columns, method=method) for method in UTILITY_METHODS}
