"""mu-Argus style table of unsafe key-value combinations by dimension (SPEC §3.10).

All frequencies come from one DuckDB GROUPING SETS query over every subset of 1..max_dim key
variables (:func:`sdc_dagster.frequencies.grouping_sets_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.frequencies import grouping_sets_counts, key_columns


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SDCInputError(f"parameter {name} must be a positive integer (got {value!r})")
    return int(value)


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    try:
        codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=True)
    except TypeError:  # values that do not sort against each other: keep first-appearance order
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return codes, pd.Index(uniques)


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
        dimension in which the variable takes that value. One row per observed value.

    References
    ----------
    Hundepool et al., mu-Argus 5.1 user's manual (unsafe combinations table); S001 TOPSIS example.
    """
    keys = key_columns(data, keys)
    k = _positive_int(k, "k")
    max_dim = _positive_int(max_dim, "max_dim")
    dim_columns = [f"dim_{d}" for d in range(1, max_dim + 1)]

    coded, categories = {}, {}
    for key in keys:
        codes, uniques = _factorize(data[key])
        coded[key] = codes.astype(np.int64) + 1  # 0 = missing, so DuckDB never sees a NULL value
        categories[key] = uniques
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
