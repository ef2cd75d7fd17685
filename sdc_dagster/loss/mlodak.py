"""Mlodak's information-loss measures, sdcMicro's ``IL_correl`` and ``IL_variables`` (both between 0 and 1).

``il_correl`` (Mlodak 2020, with sdcMicro's constant 1/sqrt(2) instead of 1/2): with d and d* the
diagonals of the inverse Pearson correlation matrices of the numeric variables in the original and the
protected file,

    lambda = (1 / sqrt(2)) * || d / ||d|| - d* / ||d*|| ||      (Euclidean norms).

``il_variables`` (Mlodak 2019): per variable v a distance summed over the n records i, by the
variable's scale,

* continuous: (2 / pi) * arctan |x_iv - x*_iv|;
* ordinal: |pos(x_iv) - pos(x*_iv)| / (L - 1), pos the category's position among the L categories;
* nominal: 0 if the categories are equal, else 1;

where a value missing in one file only counts as the largest distance (nominal and ordinal 1;
continuous (2/pi) arctan(M) with M = max(|min x* - max x|, |max x* - min x|)) and missing in both
as 0. The per-variable losses are D_v / n and lambda = sum_v D_v / (m n) over the m variables.

Scales: sdcMicro reads them from R classes: a "numeric" (double) column is continuous, an ordered
factor ordinal, anything else nominal, R integers included (class "integer" is not "numeric": an
integer column read by ``read.csv`` is compared as categories). Here the default follows pandas
dtypes (any numeric dtype continuous, an ordered Categorical ordinal, the rest nominal) and
``scales`` maps a column to "continuous", "ordinal" or "nominal", e.g. {"age": "nominal"} for R's
integer rule. An ordinal column that is not an ordered Categorical is ordered by its sorted values
over both files.

References
----------
Mlodak, A. (2020), "Information loss resulting from statistical disclosure control of output data",
Wiadomosci Statystyczne 65(9), 7-27; Mlodak, A. (2019), "Using the complex measure in an assessment of
the information loss due to the microdata disclosure control", Przeglad Statystyczny 66(1), 7-26;
sdcMicro ``IL_correl`` and ``IL_variables`` (R/dUtility.R, Meindl).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.loss.moments import inverse_correlation_loss
from sdc_dagster.validation import check_option, check_pair, continuous_values

IL_SCALES = ("continuous", "ordinal", "nominal")


def il_correl(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None) -> float:
    """Mlodak's correlation-based information loss (sdcMicro ``IL_correl``; module docstring).

    It is SPEC §9.7's normalised inverse-correlation loss (12) on Pearson correlations, whose
    constant 1/2 sdcMicro replaces by 1/sqrt(2): sqrt(2) times
    :func:`~sdc_dagster.loss.moments.inverse_correlation_loss`'s second value, so it lies in [0, 1).

    Parameters
    ----------
    original, protected : the files before and after protection, same records in the same order.
    columns : numeric variables (at least 2); default every numeric column of ``original``.

    Raises
    ------
    As :func:`~sdc_dagster.loss.moments.inverse_correlation_loss` (a column missing or not numeric,
    fewer than two variables, a singular correlation matrix).
    """
    if columns is None:
        columns = [c for c in original.columns if pd.api.types.is_numeric_dtype(original[c])
                   and not pd.api.types.is_bool_dtype(original[c])]
    _, normalised = inverse_correlation_loss(original, protected, method="pearson", columns=columns)
    return float(np.sqrt(2.0) * normalised)


@dataclass(frozen=True)
class VariablesLoss:
    """Result of :func:`il_variables`: ``value`` (lambda) and ``by_variable`` (D_v / n, a Series
    indexed by variable), with the ``scales`` used."""

    value: float
    by_variable: pd.Series
    scales: dict[str, str]


def _scale_of(original: pd.Series, protected: pd.Series, column: str, scales: Mapping[str, str]) -> str:
    if column in scales:
        return check_option(scales[column], f"scales[{column!r}]", IL_SCALES)
    for series in (original, protected):
        if isinstance(series.dtype, pd.CategoricalDtype) and series.dtype.ordered:
            return "ordinal"
    numeric = [pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (original, protected)]
    return "continuous" if all(numeric) else "nominal"


def _both_missing(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(one missing, both missing) masks."""
    return a ^ b, a & b


def _continuous_distance(x: np.ndarray, y: np.ndarray) -> float:
    one, both = _both_missing(np.isnan(x), np.isnan(y))
    observed_x, observed_y = x[~np.isnan(x)], y[~np.isnan(y)]
    gap = np.abs(x - y)
    if one.any():
        if not len(observed_x) or not len(observed_y):
            raise NotComputable("IL_variables: a continuous variable with no observed value in one file")
        gap[one] = max(abs(observed_y.min() - observed_x.max()), abs(observed_y.max() - observed_x.min()))
    gap[both] = 0.0
    return float(np.sum(2.0 / np.pi * np.arctan(gap)))


def _ordinal_positions(original: pd.Series, protected: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Positions (NaN where missing) in the categories' order and the number of categories."""
    for series in (original, protected):
        if isinstance(series.dtype, pd.CategoricalDtype) and series.dtype.ordered:
            categories = list(series.cat.categories)
            break
    else:
        categories = sorted(pd.unique(pd.concat([original, protected], ignore_index=True).dropna()))
    positions = []
    for series, which in ((original, "original"), (protected, "protected")):
        codes = pd.Categorical(series.astype(object), categories=categories).codes
        unknown = (codes < 0) & series.notna().to_numpy()
        if unknown.any():
            raise SDCInputError(f"{which} column {column!r}: values {sorted(map(str, series[unknown].unique()))[:5]} "
                                f"are not among the ordered categories {categories[:10]}")
        positions.append(np.where(codes >= 0, codes, np.nan).astype(float))
    return positions[0], positions[1], len(categories)


def il_variables(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None, *,
                 scales: Mapping[str, str] | None = None) -> VariablesLoss:
    """Mlodak's variable-wise information loss (sdcMicro ``IL_variables``; module docstring).

    Parameters
    ----------
    original, protected : the files before and after protection, same records in the same order.
    columns : the variables compared; default the columns the two files have in common.
    scales : {column: "continuous" | "ordinal" | "nominal"}; default from the dtypes (module docstring).

    Raises
    ------
    SDCInputError : a column missing, a continuous variable not numeric, an ordinal value outside
        the ordered categories, no records.
    """
    if columns is None:
        columns = [c for c in original.columns if c in protected.columns]
    columns = check_pair(original, protected, columns)
    if not columns or not len(original):
        raise SDCInputError("il_variables: needs at least one common variable and one record")
    scales = dict(scales or {})
    unknown = sorted(set(scales) - set(columns))
    if unknown:
        raise SDCInputError(f"scales: {unknown} are not among the compared columns {columns}")
    used, losses = {}, {}
    n = len(original)
    for column in columns:
        a, b = original[column], protected[column]
        scale = used[column] = _scale_of(a, b, column, scales)
        if scale == "continuous":
            total = _continuous_distance(continuous_values(original, column, "original"),
                                         continuous_values(protected, column, "protected"))
        elif scale == "ordinal":
            x, y, levels = _ordinal_positions(a, b, column)
            one, both = _both_missing(np.isnan(x), np.isnan(y))
            steps = np.abs(x - y)
            steps[one] = levels - 1
            steps[both] = 0.0
            total = float(np.sum(steps / (levels - 1))) if levels > 1 else 0.0
        else:
            x, y = a.astype(object).to_numpy(), b.astype(object).to_numpy()
            one, both = _both_missing(pd.isna(x), pd.isna(y))
            differ = np.not_equal(x, y).astype(bool)
            differ[one] = True
            differ[both] = False
            total = float(differ.sum())
        losses[column] = total / n
    by_variable = pd.Series(losses, name="loss")
    return VariablesLoss(value=float(by_variable.sum() / len(columns)), by_variable=by_variable, scales=used)
