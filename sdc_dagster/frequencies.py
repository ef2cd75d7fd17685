"""Key frequencies computed in DuckDB (SPEC §2).

Group-bys run inside DuckDB on the pandas frame registered as a view: the frame is never copied
into Python objects and nothing loops over records.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def connect(con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """The given connection, or a fresh in-memory DuckDB database."""
    return con if con is not None else duckdb.connect()


def complete_key_frequencies(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Per record, f_k and F_k of its key, with a missing value treated as a category of its own.

    SPEC §2.1 (sample frequency f_k) and §2.2 (F_k = sum of weights, = f_k without weights). This
    is the exact-match count; the matching semantics of missing values (SPEC §2.4) are layered on
    top in :mod:`sdc_dagster.risk.categorical`.

    Returns a frame indexed like ``data`` with columns ``fk`` (int64) and ``Fk`` (float64).
    """
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("key variables: the selection is empty; name at least one key column")
    frame = pd.DataFrame({f"k{j}": data[k].to_numpy() for j, k in enumerate(keys)})
    if weight is not None:
        frame["w"] = data[require_columns(data, [weight], role="weight")[0]].to_numpy(dtype="float64")
    frame["row_"] = np.arange(len(frame), dtype=np.int64)
    db = connect(con)
    db.register("sdc_freq_input", frame)
    try:
        part = ", ".join(_quote(f"k{j}") for j in range(len(keys)))
        wsum = "sum(w)" if weight is not None else "count(*)"
        result = db.execute(
            f"""
            SELECT count(*) OVER (PARTITION BY {part}) AS fk,
                   CAST({wsum} OVER (PARTITION BY {part}) AS DOUBLE) AS pop_fk
            FROM sdc_freq_input ORDER BY row_
            """
        ).fetchnumpy()
    finally:
        db.unregister("sdc_freq_input")
    return pd.DataFrame(
        {"fk": np.asarray(result["fk"], dtype=np.int64), "Fk": np.asarray(result["pop_fk"], dtype=np.float64)},
        index=data.index,
    )


def grouping_sets_counts(
    data: pd.DataFrame,
    keys: Sequence[str],
    subsets: Sequence[Sequence[str]],
    *,
    weight: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Frequencies of every value combination of every key subset, from one GROUPING SETS query.

    Returns a long frame with one row per (subset, combination): the key columns (value, or NA
    where the key is not in the subset), ``subset`` (the index of the subset in ``subsets``),
    ``n`` (number of records) and ``weight_sum`` (sum of weights; = n without weights). Missing
    values in the data form a combination value of their own here.
    """
    keys = require_columns(data, keys, role="key variable")
    subsets = [list(s) for s in subsets]
    for s in subsets:
        for k in s:
            if k not in keys:
                raise SDCInputError(f"key subset names {k!r}, which is not among the key variables {keys}")
    used = [k for k in keys if any(k in s for s in subsets)] or keys[:1]
    frame = pd.DataFrame({f"k{j}": data[k].to_numpy() for j, k in enumerate(used)})
    frame["w"] = data[weight].to_numpy(dtype="float64") if weight is not None else 1.0
    position = {k: j for j, k in enumerate(used)}
    sets_sql = ", ".join(
        "(" + ", ".join(_quote(f"k{position[k]}") for k in s) + ")" for s in subsets
    )
    used_cols = ", ".join(_quote(f"k{j}") for j in range(len(used)))
    db = connect(con)
    db.register("sdc_gs_input", frame)
    try:
        out = db.execute(
            f"""
            SELECT {used_cols}, GROUPING_ID({used_cols}) AS gid, count(*) AS n,
                   CAST(sum(w) AS DOUBLE) AS weight_sum
            FROM sdc_gs_input GROUP BY GROUPING SETS ({sets_sql})
            """
        ).df()
    finally:
        db.unregister("sdc_gs_input")
    # GROUPING_ID sets bit (len(used)-1-j) when column j is aggregated away.
    gid_of = {}
    for idx, s in enumerate(subsets):
        gid = sum(1 << (len(used) - 1 - j) for j, k in enumerate(used) if k not in s)
        gid_of.setdefault(gid, idx)
    out["subset"] = out["gid"].map(gid_of).astype("int64")
    out = out.drop(columns="gid").rename(columns={f"k{j}": k for j, k in enumerate(used)})
    for k in keys:
        if k not in out.columns:
            out[k] = pd.NA
    out = out[[*keys, "subset", "n", "weight_sum"]]
    return out.sort_values(["subset", *keys], kind="stable").reset_index(drop=True)
