"""mu-Argus style tables of unsafe key-value combinations by dimension (SPEC §3.10): the per
variable/category table (:func:`unsafe_combinations`) and sdcMicro's ``riskyCells``
(:func:`risky_cells`).

All frequencies come from one DuckDB GROUPING SETS query over every subset of 1..max_dim key
variables (:func:`sdc_dagster.risk.frequencies.grouping_sets_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import grouping_sets_counts
from sdc_dagster.keys import category_codes, key_columns, key_digits
from sdc_dagster.validation import check_scalar


def unsafe_combinations(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    k: int = 3,
    max_dim: int = 3,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Unsafe combinations (frequency < k) of the values of d key variables, d = 1..max_dim.

    SPEC §3.10 with its ASSUMPTION (mu-Argus convention): every distinct value combination of a
    subset of d key variables carried by fewer than ``k`` records is one unsafe combination; it is
    counted for each variable of the subset (and for that variable's value). A combination that
    involves a missing value is not counted (a missing value identifies no one).

    Parameters
    ----------
    data : the microdata (not modified).
    keys : the key variables.
    k : threshold; a combination is unsafe when fewer than k records carry it.
    max_dim : largest subset size d.
    con : DuckDB connection for the GROUPING SETS query.

    Returns
    -------
    (per_variable, per_category):
        ``per_variable`` indexed by key variable, int64 columns ``dim_1`` .. ``dim_<max_dim>``:
        number of unsafe combinations of that dimension involving the variable;
        ``per_category`` with columns ``variable``, ``category`` (the value), ``frequency``
        (records with that value) and ``dim_1`` .. ``dim_<max_dim>``: unsafe combinations of each
        dimension in which the variable takes that value. One row per observed value, each
        variable's values in sorted order (:func:`~sdc_dagster.keys.category_codes`).

    Raises
    ------
    SDCInputError : a key whose values do not sort against each other.

    References
    ----------
    Hundepool et al., mu-Argus 5.1 user's manual (unsafe combinations table); S001 TOPSIS example.
    """
    keys = key_columns(data, keys)
    k = check_scalar(k, "k", integer=True, low=1)
    max_dim = check_scalar(max_dim, "max_dim", integer=True, low=1)
    dim_columns = [f"dim_{d}" for d in range(1, max_dim + 1)]

    coded, categories = {}, {}
    for key in keys:
        # sorted: per_category lists each key's values in order; 0 = missing, so DuckDB never sees NULL
        coded[key], categories[key] = category_codes(data[key], sort=True)
    frame = pd.DataFrame(coded, index=data.index)

    subsets = [list(s) for d in range(1, min(max_dim, len(keys)) + 1) for s in combinations(keys, d)]
    counts = grouping_sets_counts(frame, keys, subsets, con=con)
    member = np.array([[key in s for key in keys] for s in subsets])[counts["subset"].to_numpy()]
    digits = counts[keys].fillna(0).to_numpy(dtype=np.int64)
    complete = ~(member & (digits == 0)).any(axis=1)
    dimension = member.sum(axis=1)
    unsafe = complete & (counts["n"].to_numpy() < k)

    per_variable = pd.DataFrame(0, index=pd.Index(keys, name="variable"), columns=dim_columns, dtype=np.int64)
    category_tables = []
    for j, key in enumerate(keys):
        involved = unsafe & member[:, j]
        per_variable.loc[key, :] = np.bincount(dimension[involved] - 1, minlength=max_dim)[:max_dim]

        n_categories = len(categories[key])
        by_value = np.zeros((n_categories, max_dim), dtype=np.int64)
        np.add.at(by_value, (digits[involved, j] - 1, dimension[involved] - 1), 1)
        single = (counts["subset"].to_numpy() == subsets.index([key])) & (digits[:, j] > 0)
        frequency = np.zeros(n_categories, dtype=np.int64)
        frequency[digits[single, j] - 1] = counts["n"].to_numpy()[single]
        table = pd.DataFrame(by_value, columns=dim_columns)
        table.insert(0, "frequency", frequency)
        table.insert(0, "category", pd.Series(categories[key], dtype=object))
        table.insert(0, "variable", key)
        category_tables.append(table)
    per_category = pd.concat(category_tables, ignore_index=True)
    return per_variable, per_category


def _thresholds(threshold, max_dim: int, *, one: bool) -> list[int]:
    values = list(threshold) if isinstance(threshold, (list, tuple, np.ndarray, pd.Series)) else [threshold]
    if one and len(values) != 1:
        raise SDCInputError(f"parameter threshold: with levels give one threshold (got {len(values)})")
    if len(values) not in (1, max_dim):
        raise SDCInputError(
            f"parameter threshold: give one threshold or one per dimension 1..{max_dim} (got {len(values)})"
        )
    return [check_scalar(v, "threshold", integer=True, low=1) for v in values] * (max_dim if len(values) == 1 else 1)


def risky_cells(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    threshold: int | Sequence[int],
    max_dim: int | None = None,
    levels: Sequence[int] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Number of unsafe cells in the frequency table of every combination of 1..D key variables,
    as sdcMicro ``riskyCells`` (5.8.1, data.frame method).

    SPEC §3.10 in sdcMicro's form: for every subset of d key variables (d = 1..D, subsets in
    ``combn`` order, i.e. :func:`itertools.combinations` of ``keys``), a cell is a value combination
    observed in the data and it is unsafe when at most ``threshold`` records carry it (``N <=
    threshold``; unlike :func:`unsafe_combinations`, where fewer than k is unsafe). Unweighted; a
    missing value is a category of its own.

    Give exactly one of ``max_dim`` (D; ``threshold`` one number or one per dimension) or
    ``levels`` (identification level of each key, mu-Argus style, with one threshold). As in
    sdcMicro 5.8.1, ``levels`` only fixes D = the number of distinct levels: every combination up
    to that size is listed (sdcMicro's restriction by level is commented out).

    Parameters
    ----------
    data : the microdata (not modified).
    keys : the key variables.
    threshold : positive integer(s).
    max_dim : largest number of keys combined, at most ``len(keys)``.
    levels : one whole number per key.
    con : DuckDB connection for the GROUPING SETS query.

    Returns
    -------
    DataFrame, one row per key combination: ``dim1`` .. ``dim<D>`` (key names; "" where the
    combination has fewer keys), ``threshold`` and ``unsafe_cells`` (int64).

    References
    ----------
    sdcMicro R/riskyCells.R (``riskycells_upto_dimension``); mu-Argus 5.1 manual (identification
    levels).
    """
    keys = key_columns(data, keys)
    if (max_dim is None) == (levels is None):
        raise SDCInputError("risky_cells: give exactly one of 'max_dim' or 'levels'")
    if levels is not None:
        levels = list(levels)
        if len(levels) != len(keys):
            raise SDCInputError(f"parameter levels: one level per key variable ({len(keys)}), got {len(levels)}")
        for level in levels:
            check_scalar(level, "levels", integer=True, low=1)
        max_dim = len(set(levels))
    max_dim = check_scalar(max_dim, "max_dim", integer=True, low=1)
    if max_dim > len(keys):
        raise SDCInputError(f"parameter max_dim: at most the number of key variables ({len(keys)}), got {max_dim}")
    limits = _thresholds(threshold, max_dim, one=levels is not None)

    digits, _ = key_digits(data, keys)  # 0 = missing: a category of its own, as data.table's by=
    subsets = [list(s) for d in range(1, max_dim + 1) for s in combinations(keys, d)]
    counts = grouping_sets_counts(pd.DataFrame(digits, columns=keys), keys, subsets, con=con)
    subset = counts["subset"].to_numpy()
    size = np.array([len(s) for s in subsets])
    limit = np.array(limits)[size - 1]
    unsafe = counts["n"].to_numpy() <= limit[subset]
    table = pd.DataFrame(
        [s + [""] * (max_dim - len(s)) for s in subsets], columns=[f"dim{d}" for d in range(1, max_dim + 1)]
    )
    table["threshold"] = limit.astype(np.int64)
    table["unsafe_cells"] = np.bincount(subset[unsafe], minlength=len(subsets)).astype(np.int64)
    return table
