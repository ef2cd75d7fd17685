"""Cell key method, CKM (SPEC §8.11): consistent post-tabular noise for frequency tables.

Steps (S002; sdcTools/cellKey):

1. every record gets a random record key: an integer in 1..N (``n_key=N``) or a uniform number in
   [0, 1) (``n_key=None``, the cellKey package convention);
2. the cell key of a table cell is the sum of its records' keys modulo N (or modulo 1); it is
   mapped to u in [0, 1) (u = cell key / N for integer keys);
3. the perturbation of a cell with count i is looked up in a perturbation table (p-table): row
   min(i, D) gives a distribution over perturbations -D..D, and u selects the perturbation by
   inverse-CDF lookup (u in [F(d-1), F(d)) gives d);
4. perturbed count = count + perturbation.

Because the perturbation depends only on (contributing records, count), the same cell gets the same
noise in every table it appears in.

The perturbation table is built by :func:`~sdc_dagster.protect.ptable.perturbation_table`.

Record-key mode of the UK Office for National Statistics (package ``cell-key-perturbation``,
:func:`cell_key_table`): integer record keys 0..255 (or 0..4095), cell key = sum of the record keys
mod (largest ckey + 1), and a p-table frame with columns ``pcv`` (count, 1..750; larger counts
reuse rows 501..750 cyclically), ``ckey`` and ``pvalue``. :meth:`PerturbationTable.to_ons_frame`
writes a D/V/js table in that form (pvalue of ckey c = the perturbation at u = (c + 0.5)/256 by
inverse CDF), so the grid route (:func:`grid_cell_key`) and any ONS p-table share one lookup.

Record keys as uniform numbers are summed as 32-bit fixed-point integers, so cell keys are exact
and do not depend on the order DuckDB adds them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.frequencies import quote_identifier
from sdc_dagster.grid.counts import grid_variables_of
from sdc_dagster.protect.ptable import PerturbationTable
from sdc_dagster.validation import check_option, check_scalar

#: Fixed-point scale for uniform record keys (2^32): a 37-million-record sum stays below 2^63.
FIXED_POINT_SCALE = 2**32
def _splitmix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a bijective scramble of uint64 values (wrapping arithmetic)."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def assign_record_keys(
    data: pd.DataFrame, *, n_key: int | None = None, first: int = 1, id_column: str | None = None, random_state=None
) -> pd.Series:
    """Random record keys (SPEC §8.11 step 1), indexed like ``data``.

    Parameters
    ----------
    data
        The microdata (only its length and index are used).
    n_key
        N: integer keys uniform in first..N; None: uniform keys in [0, 1).
    first
        Smallest integer key: 1 (cellKey convention) or 0 (ONS record keys 0..255, ``n_key=255``).
    id_column
        Integer unit id column: the key is a seeded hash of the id (splitmix64 of id + seed),
        so a unit keeps its key in every partition, table and rerun, whatever the row order
        (integer keys only; ``random_state`` must then be an int).
    random_state
        int seed or numpy Generator.

    Returns
    -------
    pandas.Series
        ``record_key``: int64 in first..N, or float64 in [0, 1).
    """
    if id_column is not None:
        require_columns(data, [id_column], role="unit id column")
        if n_key is None or isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
            raise SDCInputError("assign_record_keys with id_column: give integer keys (n_key) and an int random_state")
        check_option(first, "first", (0, 1))
        ids = data[id_column]
        if ids.isna().any() or not pd.api.types.is_integer_dtype(ids):
            raise SDCInputError(f"column {id_column!r}: unit ids must be integers without missing values")
        mixed = _splitmix64(ids.to_numpy().astype(np.uint64) ^ _splitmix64(np.array([int(random_state)], dtype=np.uint64)))
        keys = (mixed % np.uint64(int(n_key) - first + 1)).astype(np.int64) + first
        return pd.Series(keys, index=data.index, name="record_key")
    rng = np.random.default_rng(random_state)
    if n_key is None:
        keys = rng.random(len(data))
    else:
        check_scalar(n_key, "n_key", integer=True, low=2)
        check_option(first, "first", (0, 1))
        keys = rng.integers(int(first), int(n_key), size=len(data), endpoint=True, dtype=np.int64)
    return pd.Series(keys, index=data.index, name="record_key")


def record_key_addends(data: pd.DataFrame, record_key_col: str, n_key: int | None) -> tuple[np.ndarray, int]:
    """Record keys as non-negative int64 addends and the modulus their sum is reduced by (SPEC §8.11
    step 2: a cell key is the sum of its records' addends mod the modulus, divided by it).

    Integer keys 1..``n_key`` are their own addends (modulus ``n_key``); uniform keys in [0, 1)
    (``n_key=None``) become 32-bit fixed-point integers (modulus 2^32), so sums are exact.
    Raises :class:`SDCInputError` for missing keys or keys outside their range."""
    keys = data[record_key_col]
    if keys.isna().any():
        raise SDCInputError(f"column {record_key_col!r}: record keys must not be missing")
    if n_key is None:
        values = keys.to_numpy(dtype=np.float64)
        if ((values < 0) | (values >= 1)).any():
            raise SDCInputError(
                f"column {record_key_col!r}: uniform record keys must lie in [0, 1) (or pass n_key for integer keys)"
            )
        return np.floor(values * FIXED_POINT_SCALE).astype(np.int64), FIXED_POINT_SCALE
    values = keys.to_numpy(dtype=np.float64)
    if ((values < 1) | (values > n_key) | (values != np.floor(values))).any():
        raise SDCInputError(f"column {record_key_col!r}: integer record keys must lie in 1..{n_key}")
    return values.astype(np.int64), int(n_key)


def cell_key_perturb(
    microdata: pd.DataFrame,
    by: Sequence[str] | str,
    *,
    record_key_col: str,
    ptable: PerturbationTable,
    n_key: int | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Frequency table of ``microdata`` by ``by`` with cell-key noise (SPEC §8.11).

    Parameters
    ----------
    microdata
        One row per record, with the record key column.
    by
        Columns spanning the table (one cell per observed combination).
    record_key_col
        Column of record keys (see :func:`assign_record_keys`).
    ptable
        The perturbation table (:func:`perturbation_table`).
    n_key
        N when the record keys are integers in 1..N; None for uniform keys in [0, 1).
    con
        DuckDB connection (default: a fresh in-memory database).

    Returns
    -------
    pandas.DataFrame
        One row per cell, sorted by ``by``: the ``by`` columns, ``count`` (original), ``cell_key``
        (in [0, 1)), ``perturbation`` and ``perturbed`` (count + perturbation, never negative).
    """
    by = require_columns(microdata, by, role="table variable")
    require_columns(microdata, [record_key_col], role="record key column")
    if not by:
        raise SDCInputError("by: name at least one column spanning the table")
    addends, modulus = record_key_addends(microdata, record_key_col, n_key)
    frame = pd.DataFrame({f"v{j}": microdata[c].to_numpy() for j, c in enumerate(by)})
    frame["rk"] = addends
    db = con if con is not None else duckdb.connect()
    db.register("sdc_ckm_input", frame)
    try:
        cols = ", ".join(quote_identifier(f"v{j}") for j in range(len(by)))
        cells = db.execute(
            f"""
            SELECT {cols}, count(*) AS count, CAST(sum(rk) % {modulus} AS BIGINT) AS key_sum
            FROM sdc_ckm_input GROUP BY {cols} ORDER BY {cols}
            """
        ).df()
    finally:
        db.unregister("sdc_ckm_input")
    cells = cells.rename(columns={f"v{j}": c for j, c in enumerate(by)})
    counts = cells["count"].to_numpy(dtype=np.int64)
    cell_key = cells["key_sum"].to_numpy(dtype=np.float64) / modulus
    perturbation = ptable.lookup(counts, cell_key)
    cells = cells.drop(columns="key_sum")
    cells["count"] = counts
    cells["cell_key"] = cell_key
    cells["perturbation"] = perturbation
    cells["perturbed"] = counts + perturbation
    return cells


@dataclass(frozen=True)
class _OnsTable:
    """An ONS p-table as a dense array: ``pvalue[pcv, ckey]`` (row 0 unused: zeros are not looked up)."""

    pvalue: np.ndarray

    @property
    def n_keys(self) -> int:
        return self.pvalue.shape[1]

    def perturb(self, counts: np.ndarray, key_sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cell keys, pcv and pvalues of cells with ``counts`` and record-key sums ``key_sums``.

        Counts above 750 use pcv ((count - 1) mod 250) + 501, as ``cell-key-perturbation`` does; a
        zero count gets pvalue 0.
        """
        ckey = key_sums % self.n_keys
        max_pcv = self.pvalue.shape[0] - 1
        pcv = np.where(counts <= 750, counts, (counts - 1) % 250 + 501)
        if (pcv > max_pcv).any():
            raise SDCInputError(f"ptable: no row for pcv {int(pcv.max())} (the table stops at pcv {max_pcv})")
        return ckey, pcv, self.pvalue[pcv, ckey]


def _ons_table(ptable: pd.DataFrame | PerturbationTable) -> _OnsTable:
    """Check an ONS p-table frame (pcv, ckey, pvalue) and index it densely; a D/V/js table is converted."""
    if isinstance(ptable, PerturbationTable):
        ptable = ptable.to_ons_frame()
    if not isinstance(ptable, pd.DataFrame):
        raise SDCInputError("ptable: expected a frame with columns 'pcv', 'ckey', 'pvalue' (or a PerturbationTable)")
    require_columns(ptable, ["pcv", "ckey", "pvalue"], role="ptable column")
    values = {}
    for col in ("pcv", "ckey", "pvalue"):
        column = ptable[col]
        if column.isna().any() or not pd.api.types.is_numeric_dtype(column):
            raise SDCInputError(f"ptable column {col!r}: must be integers without missing values")
        values[col] = column.to_numpy(dtype=np.int64)
    if (values["pcv"] < 0).any() or (values["ckey"] < 0).any():
        raise SDCInputError("ptable columns 'pcv' and 'ckey': must be non-negative")
    if ptable.duplicated(["pcv", "ckey"]).any():
        raise SDCInputError("ptable: each (pcv, ckey) pair must appear once")
    dense = np.zeros((int(values["pcv"].max()) + 1, int(values["ckey"].max()) + 1), dtype=np.int64)
    dense[values["pcv"], values["ckey"]] = values["pvalue"]  # pairs absent from the table: pvalue 0
    return _OnsTable(dense)


def _integer_record_keys(data: pd.DataFrame, record_key: str, n_keys: int) -> np.ndarray:
    keys = data[record_key]
    if keys.isna().any():
        raise SDCInputError(f"column {record_key!r}: record keys must not be missing")
    values = keys.to_numpy(dtype=np.float64)
    if ((values < 0) | (values >= n_keys) | (values != np.floor(values))).any():
        raise SDCInputError(f"column {record_key!r}: record keys must be integers in 0..{n_keys - 1} (the ptable's ckeys)")
    return values.astype(np.int64)


def cell_key_table(
    data: pd.DataFrame,
    by: Sequence[str] | str,
    ptable: pd.DataFrame | PerturbationTable,
    *,
    record_key: str = "record_key",
    threshold: int = 0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Frequency table of ``data`` by ``by`` perturbed in the ONS record-key form of the cell key method.

    Parameters
    ----------
    data
        Microdata, one row per unit, with integer record keys.
    by
        Columns spanning the table (one row per observed combination; values must not be missing).
    ptable
        Frame with columns ``pcv``, ``ckey``, ``pvalue`` (e.g. the 10-5 rule table of
        ``cell-key-perturbation``), or a :class:`PerturbationTable` (converted by
        :meth:`PerturbationTable.to_ons_frame`).
    record_key
        Column of integer record keys in 0..max ckey.
    threshold
        Perturbed counts below it are published as NA (0: none).
    con
        DuckDB connection (default: a fresh in-memory database).

    Returns
    -------
    pandas.DataFrame
        Sorted by ``by``: the ``by`` columns, ``pre_sdc_count``, ``ckey`` (sum of record keys mod
        (max ckey + 1)), ``pcv`` (the count, counts above 750 mapped into 501..750), ``pvalue`` and
        ``count`` (pre_sdc_count + pvalue, nullable Int64, NA below ``threshold``).

    References
    ----------
    SPEC §8.11; ONS ``cell-key-perturbation`` (create_perturbed_table), whose output this equals.
    """
    by = require_columns(data, by, role="table variable")
    if not by:
        raise SDCInputError("by: name at least one column spanning the table")
    require_columns(data, [record_key], role="record key column")
    for col in by:
        if data[col].isna().any():
            raise SDCInputError(f"column {col!r}: table variables must not be missing")
    table = _ons_table(ptable)
    frame = pd.DataFrame({f"v{j}": data[c].to_numpy() for j, c in enumerate(by)})
    frame["rk"] = _integer_record_keys(data, record_key, table.n_keys)
    cols = ", ".join(quote_identifier(f"v{j}") for j in range(len(by)))
    db = con if con is not None else duckdb.connect()
    db.register("sdc_ckm_table", frame)
    try:
        cells = db.execute(
            f"SELECT {cols}, count(*) AS pre_sdc_count, CAST(sum(rk) % {table.n_keys} AS BIGINT) AS key_sum "
            f"FROM sdc_ckm_table GROUP BY {cols} ORDER BY {cols}"
        ).df()
    finally:
        db.unregister("sdc_ckm_table")
    out = cells.drop(columns="key_sum").rename(columns={f"v{j}": c for j, c in enumerate(by)})
    for c in by:  # DuckDB may widen integer types; keep the input's
        out[c] = out[c].astype(data[c].dtype) if not isinstance(data[c].dtype, pd.CategoricalDtype) else out[c]
    counts = out["pre_sdc_count"].to_numpy(dtype=np.int64)
    ckey, pcv, pvalue = table.perturb(counts, cells["key_sum"].to_numpy(dtype=np.int64))
    out["pre_sdc_count"] = counts
    out["ckey"] = ckey
    out["pcv"] = pcv
    out["pvalue"] = pvalue
    published = pd.array(counts + pvalue, dtype="Int64")
    published[published < threshold] = pd.NA
    out["count"] = published
    return out


def grid_cell_key(
    microdata: pd.DataFrame,
    *,
    ptable: pd.DataFrame | PerturbationTable,
    record_key_col: str = "record_key",
    cell: str = "cell_id",
    where: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """The grid table (every figure of :data:`GRID_VARIABLES` per cell) perturbed by the cell key method.

    Every figure is the cell of a table by (cell, variable) in the ONS record-key form of
    :func:`cell_key_table` (same keys, same p-table lookup), computed for all figures in one DuckDB
    pass: each count gets its own cell key from its own contributing records, so a count gets the
    same noise in every table and partition it appears in, and a category holding every resident
    of a cell gets the same noise as the cell total (SPEC §8.11 consistency).

    Parameters
    ----------
    microdata
        Persons with the cell column, sex and age group (other grid variables used when present)
        and integer record keys in 0..max ckey.
    ptable
        ONS p-table frame (``pcv``, ``ckey``, ``pvalue``) or a :class:`PerturbationTable`.
    record_key_col, cell
        Column names.
    where
        Optional SQL predicate selecting the population (e.g. ``"resident"``).
    con
        DuckDB connection (default: a fresh in-memory database).

    Returns
    -------
    pandas.DataFrame
        One row per inhabited cell, sorted by cell id (as text, like ``tabulate_grid``): the cell
        column, the perturbed counts (int64) in the columns of ``tabulate_grid`` and the original
        counts as ``<name>_original``.
    """
    variables = grid_variables_of(microdata.columns)
    require_columns(microdata, [cell, record_key_col], role="census column")
    table = _ons_table(ptable)
    frame = pd.DataFrame({"c": microdata[cell].to_numpy()})
    conditions = {"total": "TRUE"}
    for j, v in enumerate(variables):
        frame[f"x{j}"] = microdata[v.column].to_numpy()
        conditions.update({name: f"x{j} = {code}" for code, name in zip(v.published, v.columns)})
    frame["rk"] = _integer_record_keys(microdata, record_key_col, table.n_keys)
    if where:
        frame["w"] = microdata.eval(where).to_numpy(dtype=bool)
    select = ",\n".join(
        f"count(*) FILTER (WHERE {cond}) AS n_{name}, "
        f"CAST(coalesce(sum(rk) FILTER (WHERE {cond}), 0) % {table.n_keys} AS BIGINT) AS k_{name}"
        for name, cond in conditions.items()
    )
    db = con if con is not None else duckdb.connect()
    db.register("sdc_ckm_grid", frame)
    try:
        cells = db.execute(
            f"SELECT CAST(c AS VARCHAR) AS cell_key, {select} FROM sdc_ckm_grid {'WHERE w' if where else ''} "
            "GROUP BY cell_key ORDER BY cell_key"
        ).df()
    finally:
        db.unregister("sdc_ckm_grid")
    out = {cell: cells["cell_key"].to_numpy()}
    for name in conditions:
        counts = cells[f"n_{name}"].to_numpy(dtype=np.int64)
        out[name] = counts + table.perturb(counts, cells[f"k_{name}"].to_numpy(dtype=np.int64))[2]
    for name in conditions:
        out[f"{name}_original"] = cells[f"n_{name}"].to_numpy(dtype=np.int64)
    return pd.DataFrame(out)
