"""Loss in the strength of association: contingency tables and regression coefficients
before and after protection (SPEC §9.9, §9.11)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from sdc_dagster.errors import NotComputable, SDCInputError, require_columns
from sdc_dagster.keys import key_digits
from sdc_dagster.validation import check_pair, continuous_values


def contingency_association(data: pd.DataFrame, row: str, column: str) -> dict[str, float]:
    """Chi-square test of independence and association coefficients of a two-way table (SPEC §9.9).

    Parameters
    ----------
    data : DataFrame
        Records; ``row`` and ``column`` categorical. Records missing either value are dropped.
    row, column : str
        The two variables.

    Returns
    -------
    dict
        ``n``, ``chi2`` (Pearson, no continuity correction), ``dof``, ``p_value``,
        ``cramers_v`` = sqrt(chi2 / (n·min(r-1, c-1))) and ``contingency_coefficient``
        C = sqrt(chi2 / (chi2 + n)), r and c the numbers of observed categories.

    References
    ----------
    Młodak (S003) §5; Cramér (1946); Pearson (1904).
    """
    require_columns(data, [row, column])
    digits, radices = key_digits(data, [row, column])
    return _coded_association(digits[:, 0], radices[0], digits[:, 1], radices[1], row, column)


def _coded_association(a: np.ndarray, a_radix: int, b: np.ndarray, b_radix: int, row: str, column: str) -> dict:
    """:func:`contingency_association` from :func:`~sdc_dagster.keys.key_digits` codes
    (0 = missing): the two-way table of the records observed in both, categories seen there only."""
    # every record counted, then the row and column of code 0 (missing) dropped: no selection copied
    counts = np.bincount(a * b_radix + b, minlength=int(a_radix * b_radix))
    table = counts.reshape(int(a_radix), int(b_radix))[1:, 1:]
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = int(table.sum())
    for name, size in ((row, table.shape[0]), (column, table.shape[1])):
        if size < 2:
            raise NotComputable(f"column {name!r}: association needs at least 2 observed categories (got {size})")
    chi2, p_value, dof, _ = stats.chi2_contingency(table, correction=False)
    return {"n": n, "chi2": float(chi2), "dof": int(dof), "p_value": float(p_value),
            "cramers_v": float(np.sqrt(chi2 / (n * (min(table.shape) - 1)))),
            "contingency_coefficient": float(np.sqrt(chi2 / (chi2 + n)))}


WEAK_ASSOCIATION = 0.1
"""Cramér's V (or C) below which an association is negligible (Cohen 1988, 'small' = 0.1); the
relative change of a coefficient divides by at least this much (:func:`association_change`)."""


def association_change(before: float, after: float, *, floor: float = WEAK_ASSOCIATION) -> float:
    """Relative change of an association coefficient in percent, SPEC §9.9 (ASSUMPTION):
    100·|V - V*| / max(V, floor).

    For an original association of at least ``floor`` this is the relative change 100·|V - V*| / V;
    below it, the change is taken relative to ``floor``, i.e. in units of a negligible association.
    Dividing by a V near 0 would turn a change of 0.01 in a non-existent association (0.0023 ->
    0.0122) into "431 %"; with the floor it is 10 %, while the change of a real association
    (0.4 -> 0.3: 25 %) is unaffected. Defined (0 for no change) when V = 0."""
    return 100.0 * abs(before - after) / max(abs(before), floor)


def association_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str], *,
                     pairs: Sequence[tuple[str, str]] | None = None,
                     known: dict[tuple[str, str], dict] | None = None) -> pd.DataFrame:
    """Change of chi-square, Cramér's V and the contingency coefficient per pair of variables, SPEC §9.9.

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` categorical in both.
    columns : sequence of str
        The categorical variables; every unordered pair is compared unless ``pairs`` is given.
    pairs : sequence of (str, str), optional
        The pairs to compare.
    known : dict, optional
        The original's figures of the pairs already computed, by pair (a dict this call adds the
        pairs it computes to), so that several variants compared with one original compute each
        of its tables once; the figures of a pair depend on its two columns only.

    Returns
    -------
    DataFrame
        One row per pair (columns "row", "column"), with ``chi2``, ``chi2_protected``,
        ``p_value``, ``p_value_protected``, ``cramers_v``, ``cramers_v_protected``,
        ``contingency_coefficient``, ``contingency_coefficient_protected`` and the relative
        changes in percent ``cramers_v_change`` = 100·|V - V*| / max(V, 0.1) and
        ``contingency_coefficient_change`` (:func:`association_change`: relative to the original
        coefficient, or to 0.1 where the original association is negligible).
    """
    columns = check_pair(original, protected, columns)
    pairs = list(combinations(columns, 2)) if pairs is None else [tuple(p) for p in pairs]
    if not pairs:
        raise SDCInputError("columns: at least two variables (one pair) are needed")
    for pair in pairs:
        if len(pair) != 2:
            raise SDCInputError(f"pairs: {pair!r} is not a pair of column names")
        check_pair(original, protected, list(pair))
    known = {} if known is None else known
    used = list(dict.fromkeys(c for pair in pairs for c in pair))
    position = {c: j for j, c in enumerate(used)}
    # each column coded once per file (the original's only when some pair is not known yet)
    coded = [None if all(p in known for p in pairs) else key_digits(original, used), key_digits(protected, used)]

    def association(which: int, a: str, b: str) -> dict:
        digits, radices = coded[which]
        i, j = position[a], position[b]
        return _coded_association(digits[:, i], radices[i], digits[:, j], radices[j], a, b)

    rows = []
    for a, b in pairs:
        if (a, b) not in known:
            known[a, b] = association(0, a, b)
        before, after = known[a, b], association(1, a, b)
        rows.append({
            "row": a, "column": b,
            "chi2": before["chi2"], "chi2_protected": after["chi2"],
            "p_value": before["p_value"], "p_value_protected": after["p_value"],
            "cramers_v": before["cramers_v"], "cramers_v_protected": after["cramers_v"],
            "contingency_coefficient": before["contingency_coefficient"],
            "contingency_coefficient_protected": after["contingency_coefficient"],
            "cramers_v_change": association_change(before["cramers_v"], after["cramers_v"]),
            "contingency_coefficient_change": association_change(before["contingency_coefficient"],
                                                                 after["contingency_coefficient"]),
        })
    return pd.DataFrame(rows)


def _ols(frame: pd.DataFrame, response: str, predictors: list[str], which: str) -> np.ndarray:
    y = continuous_values(frame, response, which)
    x = np.column_stack([continuous_values(frame, c, which) for c in predictors])
    complete = ~(np.isnan(y) | np.isnan(x).any(axis=1))
    design = np.column_stack([np.ones(int(complete.sum())), x[complete]])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        raise NotComputable(f"{which}: the predictors {predictors} (with intercept) are collinear on the complete "
                            "records, so the regression coefficients are not identified")
    coefficients, *_ = np.linalg.lstsq(design, y[complete], rcond=None)
    return coefficients


def regression_loss(original: pd.DataFrame, protected: pd.DataFrame, response: str,
                    predictors: Sequence[str]) -> pd.DataFrame:
    """OLS coefficients fitted on the original and on the protected data (SPEC §9.9, §9.11).

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``response`` and ``predictors`` numeric in both. Each fit uses the records
        complete in its own file.
    response : str
        Dependent variable.
    predictors : sequence of str
        Explanatory variables; an intercept is added.

    Returns
    -------
    DataFrame
        Index "intercept" and the predictors; columns ``original``, ``protected``,
        ``difference`` (protected - original) and ``relative_change`` = 100·|b - b*|/|b| (%,
        NaN when b = 0).
    """
    predictors = list(predictors)
    if not predictors:
        raise SDCInputError("predictors: at least one explanatory variable is needed")
    if response in predictors:
        raise SDCInputError(f"predictors: the response {response!r} cannot also be a predictor")
    check_pair(original, protected, [response, *predictors])
    before = _ols(original, response, predictors, "original")
    after = _ols(protected, response, predictors, "protected")
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(before != 0, 100.0 * np.abs(after - before) / np.abs(before), np.nan)
    return pd.DataFrame({"original": before, "protected": after, "difference": after - before,
                         "relative_change": relative}, index=["intercept", *predictors])
