"""Model-based global risk from log-linear models (SPEC §3.9; sdcMicro ``modRisk``; Skinner & Shlomo 2008).

The sample counts f_k of the cells k of the complete cross-classification of the key variables are
taken as independent Poisson counts whose means follow a log-linear model; the fitted mean lambda_k
of a cell stands in for its unknown population frequency. With pi_k the sum of the inclusion
probabilities 1 / w_i of the cell's records (for a sample unique, 1 / w of that record) and
v_k = (1 - pi_k) lambda_k, Skinner & Holmes (1998) and Skinner & Shlomo (2008) give for a sample
unique

    P(F_k = 1 | f_k = 1) = exp(-v_k)                 (it is unique in the population)
    E(1 / F_k | f_k = 1) = (1 - exp(-v_k)) / v_k      (the chance that a match to it is correct)

and sdcMicro 5.8.1 reports their averages over the K cells with 0 < f_k <= bound (cells whose fitted
mean is 0 while they hold records left out):

    gr1 = (1/K) sum_{k: f_k = 1} exp(-v_k),    gr2 = (1/K) sum_{k: f_k = 1} (1 - exp(-v_k)) / v_k.

The five estimation methods (``modRisk(method=)``), each a Poisson GLM of the model's terms over
every cell of the table (empty cells included) but "IPF":

* "default": the sample counts f_k.
* "CE" (Clogg & Eliason 1987): f_k with the offset log(f_k / W_k + 0.1), W_k the cell's weight sum
  (0 / 0 taken as 0 in an empty cell).
* "PML" (pseudo maximum likelihood): the response round(W_k * n / sum w), n and sum w over every
  record (R rounds half to even).
* "weightedLLM": f_k with W_k as a further numeric predictor.
* "IPF": f_k fitted by iterative proportional fitting (MASS ``loglm``); main effects only, as in
  sdcMicro.

Every GLM without a numeric predictor has the same maximum-likelihood fit as IPF from the start
table exp(offset), which :func:`~sdc_dagster.numerics.loglinear.poisson_fit` computes (fast on large
tables); "weightedLLM" and ``numeric`` keys are fitted by IRLS as R's ``glm``.

Two readings of sdcMicro's code that its documentation does not state: lambda_k is the fitted mean
of the *sample* count (Skinner & Shlomo's population mean would be lambda_k / pi_k), and gr1, gr2
are divided by K, so they are shares of the counted cells rather than the expected numbers tau_1,
tau_2 of the documentation; this module follows the code, whose own test values it reproduces.

References
----------
Skinner, C. J. & Shlomo, N. (2008), "Assessing identification risk in survey microdata using
log-linear models", JASA 103(483), 989-1001. Skinner, C. J. & Holmes, D. J. (1998), "Estimating the
re-identification risk per record in microdata", JOS 14, 361-372. Clogg, C. C. & Eliason, S. R.
(1987), "Some common problems in log-linear analysis", Sociological Methods & Research 16, 8-44.
sdcMicro ``modRisk`` (R/modRisk.R, 5.8.1) and its tests (tests/testthat/test_modRisks.R).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from sdc_dagster.errors import NotComputable, SDCInputError, did_you_mean
from sdc_dagster.risk.frequencies import distinct_digit_keys
from sdc_dagster.keys import key_columns
from sdc_dagster.numerics.loglinear import MAX_TABLE_CELLS, hierarchical_closure, ipf_fit, poisson_fit
from sdc_dagster.validation import check_option, weight_values

MODEL_RISK_METHODS = ("default", "CE", "PML", "weightedLLM", "IPF")

# A variable of an R formula: a syntactic name or a name in backticks.
_VARIABLE = re.compile(r"\s*(`[^`]+`|[A-Za-z.][A-Za-z0-9._]*)\s*")


def parse_formula(formula: str, keys: Sequence[str]) -> list[tuple[int, ...]]:
    """The terms of an R model formula over the key variables, as tuples of key positions.

    ``"~ a + b + a:b"``: terms joined by ``+``; ``a:b`` the interaction of a and b; ``a*b`` short for
    ``a + b + a:b`` (R's crossing); names with other characters in backticks. The leading ``~`` may
    be left out. Every key must occur in the formula (the table is the keys' cross-classification)
    and every variable must be a key.

    Raises
    ------
    SDCInputError : anything else (``-``, ``^``, ``.``, parentheses, functions), an unknown
    variable, a key left out.
    """
    text = str(formula).strip()
    if text.startswith("~"):
        text = text[1:]
    if not text.strip():
        raise SDCInputError(f"formula {formula!r}: names no term; write e.g. '~ {' + '.join(keys)}'")
    terms: list[tuple[int, ...]] = []
    for part in text.split("+"):
        factors = []
        for operator_term in re.split(r"(\*|:)", part):
            if operator_term in ("*", ":"):
                factors.append(operator_term)
                continue
            match = _VARIABLE.fullmatch(operator_term)
            if match is None:
                raise SDCInputError(
                    f"formula {formula!r}: cannot read {operator_term.strip()!r}; a model formula here "
                    "joins key variables with '+', ':' (interaction) and '*' (crossing) only, a name with "
                    "other characters in backticks (`age-band`)"
                )
            name = match.group(1).strip("`")
            if name not in keys:
                raise SDCInputError(
                    f"formula {formula!r}: {name!r} is not one of the key variables ({', '.join(keys)})"
                    + did_you_mean(name, keys)
                )
            factors.append(keys.index(name))
        variables = factors[0::2]
        if "*" in factors[1::2]:  # a*b:c -> every sub-product of the crossed groups, as R expands it
            groups = [tuple(g) for g in _split_groups(factors)]
            for size in range(1, len(groups) + 1):
                for chosen in combinations(groups, size):
                    terms.append(tuple(sorted({v for g in chosen for v in g})))
        else:
            terms.append(tuple(sorted(set(variables))))
    named = {v for term in terms for v in term}
    left_out = [key for j, key in enumerate(keys) if j not in named]
    if left_out:
        raise SDCInputError(
            f"formula {formula!r}: key variable {left_out[0]!r} is not in the model; the cells are the "
            "cross-classification of every key, so the formula must name each of them"
        )
    unique = []
    for term in terms:
        if term not in unique:
            unique.append(term)
    return unique


def formula_on_keys(formula: str | None, keys: Sequence[str], kept: Sequence[str]) -> str | None:
    """The terms of ``formula`` (over ``keys``, :func:`parse_formula`) that name only keys of ``kept``,
    as an R formula over ``kept``; None (the main effects) for None. A release that withholds a key
    is fitted with the model's terms of the keys it releases (each kept key is still in a main
    effect, as the formula names every key)."""
    if formula is None:
        return None
    keys = list(keys)
    terms = [term for term in parse_formula(formula, keys) if all(keys[j] in kept for j in term)]
    return _formula_text(terms, keys)


def _split_groups(factors: list) -> list[list[int]]:
    """``[a, ':', b, '*', c]`` -> ``[[a, b], [c]]``: the ``:``-products that ``*`` crosses."""
    groups = [[factors[0]]]
    for operator, variable in zip(factors[1::2], factors[2::2]):
        if operator == "*":
            groups.append([variable])
        else:
            groups[-1].append(variable)
    return groups


def _formula_text(terms: list[tuple[int, ...]], keys: Sequence[str]) -> str:
    """The terms written back as an R formula, ``"~a + b + a:b"``."""
    return "~" + " + ".join(":".join(keys[j] for j in term) for term in terms)


def _string_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes 0.. of a column without missing values, its values compared as strings ("1" and 1 are
    one category; a whole float is written as R writes it, 1.0 as "1", so a numeric key that pandas
    holds as float because of a missing value keeps its codes) and numbered in sorted string order;
    returns the codes and the categories."""
    codes, uniques = pd.factorize(column, sort=False)
    text = [_category_text(value) for value in uniques]
    merged, categories = pd.factorize(np.asarray(text, dtype=object), sort=True)
    return merged[codes].astype(np.int64), [str(c) for c in categories]


def _category_text(value) -> str:
    """``str(value)``, but a whole float without its ".0" (R's ``as.character(1)`` is "1")."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def model_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str,
    formula: str | None = None,
    method: str = "default",
    bound: float = float("inf"),
    numeric: Sequence[str] = (),
) -> dict:
    """Global re-identification risk of sample uniques under a log-linear model (sdcMicro ``modRisk``).

    See the module docstring for the formulas of gr1 and gr2 and of each method. The cells are
    every combination of the keys' categories (keys compared as strings). Records with a missing key
    value are left out, as R's ``glm`` leaves out the cells with a missing value (sdcMicro's fitted
    table then also lists the categories seen only beside a missing value, with fitted means of
    about 0; here such categories are not cells).

    Parameters
    ----------
    data : the microdata (not modified).
    keys : the categorical key variables.
    weight : the sampling-weight column (finite, > 0): the inclusion probability of a record is 1 / w.
    formula : an R model formula over the keys, e.g. ``"~a + b + a:b"`` (see :func:`parse_formula`);
        default the main effects of the keys.
    method : "default", "CE", "PML", "weightedLLM" or "IPF".
    bound : only cells with 0 < f_k <= bound are counted (a number > 0, default infinity).
    numeric : keys that enter the model as numeric predictors (one coefficient times the value), as R's
        ``glm`` takes a numeric column of sdcMicro's data.frame (its documented call on testdata2,
        ``~sex+water+roof``, has three); main effects only. Their cells are still every value seen.
        "IPF" fits table margins, where every key is a category (MASS ``loglm`` on an ``xtabs`` table).

    Returns
    -------
    dict with ``gr1`` and ``gr2`` (floats; sdcMicro's names), ``method``, ``formula`` (the terms of
    the hierarchical model fitted, R notation: ``"a:b"`` fits ``"~a + b + a:b"``) and ``cells``: a
    DataFrame with one row per cell of the table in sorted key order (the first key varying
    slowest, as sdcMicro's table), the key values (strings), ``fk`` (records), ``weight_sum``,
    ``inclusion`` (sum of 1 / w) and ``Fk`` (the fitted mean lambda_k).

    Deviations from sdcMicro 5.8.1: a cell of weight 1 (v_k = 0) gets the limit 1 of
    (1 - exp(-v)) / v, not NaN; a numeric key column is a category unless named in ``numeric``,
    where sdcMicro's data.frame method hands every numeric column to ``glm`` as a numeric predictor.

    Raises
    ------
    SDCInputError : unknown columns or method, a bad weight, a formula that cannot be read, "IPF"
        with an interaction, a bound <= 0, a ``numeric`` key that is not a numeric key column or is
        in an interaction.
    NotComputable : no record has every key observed; the table has more than 2**22 cells.
    """
    keys = key_columns(data, keys)
    weights = weight_values(data, weight)
    if weights is None:
        raise SDCInputError("model_risk: weight must name the sampling-weight column (modRisk needs weights)")
    check_option(method, "method", MODEL_RISK_METHODS)
    if isinstance(bound, bool) or not isinstance(bound, (int, float, np.integer, np.floating)) or not bound > 0:
        raise SDCInputError(f"bound: must be a number > 0 (infinity allowed), got {bound!r}")
    terms = [(j,) for j in range(len(keys))] if formula is None else parse_formula(formula, keys)
    if method == "IPF" and any(len(term) > 1 for term in terms):
        raise SDCInputError(
            f"formula {formula!r}: method 'IPF' fits main effects only (as sdcMicro's modRisk); "
            "use another method for a model with interactions"
        )

    numeric = _numeric_keys(data, keys, numeric, terms)

    complete = data[keys].notna().all(axis=1).to_numpy()
    if not complete.any():
        raise NotComputable(f"model_risk: no record has every key observed ({', '.join(keys)})")
    observed = data if complete.all() else data.loc[complete]
    columns = [_numeric_codes(observed[key]) if key in numeric else _string_codes(observed[key]) for key in keys]
    shape = tuple(len(categories) for _, categories in columns)
    cells = int(np.prod(shape, dtype=object))
    if cells > MAX_TABLE_CELLS:
        raise NotComputable(
            f"model_risk: the keys' cross-classification has {cells:,} cells ({' x '.join(map(str, shape))} "
            f"categories of {', '.join(keys)}); at most {MAX_TABLE_CELLS:,}: use fewer or coarser keys"
        )
    digits = np.empty((len(observed), len(keys)), dtype=np.int64, order="F")
    for j, (codes, _) in enumerate(columns):
        np.add(codes, 1, out=digits[:, j])
    w = weights[complete]
    groups = distinct_digit_keys(digits, np.asarray(shape, dtype=np.int64) + 1, weights=w)
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    cell = (groups.digits - 1) @ strides
    fk = np.bincount(cell, weights=groups.count, minlength=cells)
    weight_sum = np.bincount(cell, weights=groups.weight_sum, minlength=cells)
    inclusion = np.bincount(cell, weights=np.bincount(groups.record_key, weights=1.0 / w), minlength=cells)

    # PML's sampling fraction n / sum w is over every record, as sdcMicro sums its table's cells
    # including those with a missing key
    levels = np.unravel_index(np.arange(cells), shape)
    values = [np.asarray([float(c) for c in columns[j][1]])[levels[j]] for j, key in enumerate(keys) if key in numeric]
    model = _Model(shape, [t for t in terms if keys[t[0]] not in numeric], np.column_stack(values) if values else None)
    if method == "IPF":  # table margins: every key a category
        model = _Model(shape, terms, None)
    fitted = _fitted_means(method, fk, weight_sum, model, len(weights) / weights.sum())
    counted = (fk > 0) & (fk <= bound) & (fitted != 0)  # sdcMicro drops cells fitted at exactly 0
    unique = counted & (fk == 1)
    v = (1.0 - inclusion[unique]) * fitted[unique]
    matched = np.ones_like(v)
    positive = v != 0
    matched[positive] = -np.expm1(-v[positive]) / v[positive]
    k = int(counted.sum())
    gr1 = float(np.exp(-v).sum() / k) if k else 0.0
    gr2 = float(matched.sum() / k) if k else 0.0

    table = pd.DataFrame({key: np.asarray([_category_text(c) for c in categories], dtype=object)[levels[j]]
                          for j, (key, (_, categories)) in enumerate(zip(keys, columns))})
    table["fk"] = fk.astype(np.int64)
    table["weight_sum"] = weight_sum
    table["inclusion"] = inclusion
    table["Fk"] = fitted
    fitted_formula = _formula_text(hierarchical_closure(terms), keys)
    return {"gr1": gr1, "gr2": gr2, "method": method, "formula": fitted_formula, "cells": table}


@dataclass(frozen=True)
class _Model:
    """The log-linear model on the table of ``shape``: its factor ``terms`` (tuples of key positions)
    and the values of its numeric keys per cell (cells x q, or None)."""

    shape: tuple
    terms: list
    covariates: np.ndarray | None


def _fitted_means(method: str, fk: np.ndarray, weight_sum: np.ndarray, model: _Model, fraction: float) -> np.ndarray:
    """lambda_k of every cell by ``method`` (module docstring); ``fraction`` is PML's n / sum w."""
    shape, terms, covariates = model.shape, model.terms, model.covariates
    if method == "IPF":
        return ipf_fit(fk, shape, terms)
    if method == "CE":
        ratio = np.divide(fk, weight_sum, out=np.zeros_like(fk), where=weight_sum > 0)
        return poisson_fit(fk, shape, terms, offset=np.log(ratio + 0.1), covariates=covariates)
    if method == "PML":
        return poisson_fit(np.round(weight_sum * fraction), shape, terms, covariates=covariates)
    if method == "weightedLLM":
        extra = weight_sum[:, None] if covariates is None else np.column_stack([covariates, weight_sum])
        return poisson_fit(fk, shape, terms, covariates=extra)
    return poisson_fit(fk, shape, terms, covariates=covariates)


def _numeric_keys(data: pd.DataFrame, keys: list[str], numeric: Sequence[str], terms: list) -> set[str]:
    """``numeric`` checked: keys of ``keys`` with a numeric (not boolean) column, in no interaction."""
    numeric = [numeric] if isinstance(numeric, str) else list(numeric)
    for name in numeric:
        if name not in keys:
            raise SDCInputError(f"numeric: {name!r} is not one of the key variables ({', '.join(keys)})"
                                + did_you_mean(name, keys))
        column = data[name]
        if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
            raise SDCInputError(f"numeric: key {name!r} must be a numeric column to enter the model as a number "
                                f"(found dtype {column.dtype})")
        if any(len(term) > 1 and keys.index(name) in term for term in terms):
            raise SDCInputError(f"numeric: key {name!r} is in an interaction of the formula; a numeric key enters "
                                "as a main effect only")
    return set(numeric)


def _numeric_codes(column: pd.Series) -> tuple[np.ndarray, list]:
    """Codes 0.. of a numeric column without missing values in increasing order of the values, and
    the values (floats)."""
    codes, uniques = pd.factorize(column, sort=True)
    return codes.astype(np.int64), [float(v) for v in uniques]
