"""Key frequencies computed in DuckDB (SPEC §2).

Every key variable is coded as small integers ("digits": 0 for a missing value, 1.. for the
categories), the digits of a record are packed into one int64 code, and DuckDB groups the records by
that code. Everything after that works on the distinct keys, which are far fewer than the records,
and is gathered back to the records with one numpy index: nothing loops over records in Python.

Missing values (SPEC §2.4, sdcMicro ``freqCalc``) are handled on the distinct keys in one of two
ways, whichever is cheaper (:func:`_use_dense_lattice`); there is no pairwise comparison:

* dense: when the grid of all digit combinations (plus a top slot per key) is small (at most
  2**23 cells), every frequency is one cell of a down-set sum over that grid, computed with a few
  numpy passes per key variable (:func:`_dense_compatible_counts`). Cost ~ m x cells, independent
  of the number of missingness patterns.
* sparse: pattern by pattern, the distinct keys are split by which key variables they observe,
  and for every such pattern the keys are projected onto the pattern's observed variables and
  hash-joined with the keys of that pattern. Cost ~ (missingness patterns) x (distinct keys).

:mod:`sdc_dagster.risk.subset_frequencies` reads the same counter symmetrically (SPEC §5.8, the combined
measure) and extends its down-set sum to every sub-combination of the keys at once (§6.5).
"""

from __future__ import annotations

import atexit
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.keys import CODE_LIMIT, check_mask_width, key_columns, key_digits, pack_codes

def quote_identifier(name: str) -> str:
    """``name`` as a DuckDB identifier in double quotes (an embedded quote doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


_shared_database: duckdb.DuckDBPyConnection | None = None


def connect(con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """The given connection, or a new cursor on a process-wide in-memory DuckDB database.

    Opening a database costs ~0.1 s while a cursor is nearly free, and each cursor is private to
    its caller (thread-safe); the queries only read registered views, so sharing is harmless.
    """
    global _shared_database
    if con is not None:
        return con
    if _shared_database is None:
        _shared_database = duckdb.connect()
        atexit.register(_close_shared_database)
    return _shared_database.cursor()


def _close_shared_database() -> None:
    """Close the process-wide database while the interpreter is whole (``atexit``).

    Left to interpreter shutdown, DuckDB's worker threads can still be running when its C++ objects
    are destroyed, and the process aborts with "terminate called without an active exception"
    (exit 134; DuckDB issue 13904). Closing it here joins them first."""
    global _shared_database
    if _shared_database is not None:
        _shared_database.close()
        _shared_database = None


@dataclass(frozen=True)
class DistinctKeys:
    """The distinct keys of a data set (missing value = a value of its own here).

    ``digits`` (d, m), ``count`` and ``weight_sum`` per distinct key (float64), and ``record_key``:
    for each record the row of its key in these arrays.
    """

    digits: np.ndarray
    radices: np.ndarray
    count: np.ndarray
    weight_sum: np.ndarray
    record_key: np.ndarray


def distinct_keys(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weights: np.ndarray | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> DistinctKeys:
    """Group the records by their key in DuckDB (SPEC §2.1, §2.2), missing value = own category.

    ``weights`` (validated float64 array, one per record) are summed per key; without weights the
    sum is the count. The keys are coded by :func:`~sdc_dagster.keys.key_digits` and grouped by
    :func:`distinct_digit_keys`.
    """
    digits, radices = key_digits(data, keys)
    return distinct_digit_keys(digits, radices, weights=weights, con=con)


def distinct_digit_keys(
    digits: np.ndarray,
    radices: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> DistinctKeys:
    """:func:`distinct_keys` of keys already coded (``digits``, ``radices`` as from
    :func:`~sdc_dagster.keys.key_digits`; the plan search recodes its keys' codes per node). The
    GROUP BY runs in DuckDB on the packed int64 key codes.

    Reproducible to the bit: the keys come in the order of their codes, and the weights of a key
    are summed in record order (``np.bincount``). DuckDB's own ``sum`` of doubles and its group
    order depend on how its threads split the work, so two runs on the same wave could differ in
    the last bit of F_k (and of every risk computed from it)."""
    (code,) = pack_codes([digits], radices)
    sdc_digit_keys = pa.table({"code": code})  # noqa: F841 (DuckDB reads it by its name)
    # the Arrow table read by its Python name (DuckDB's replacement scan): no view to register, and
    # ~1 ms a query less than the relation API's from_arrow(...).aggregate(...) (a pandas frame
    # costs ~1 ms more)
    grouped = connect(con).execute("SELECT code, count(*) AS n FROM sdc_digit_keys GROUP BY code").fetchnumpy()
    codes = np.asarray(grouped["code"], dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    codes, count = codes[order], np.asarray(grouped["n"], dtype=np.float64)[order]
    # a hash lookup gathers the groups back to the records (faster than a sorted search here)
    record_key = pd.Index(codes).get_indexer(code)
    representative = np.empty(len(codes), dtype=np.int64)
    representative[record_key] = np.arange(len(code), dtype=np.int64)
    return DistinctKeys(
        digits=np.stack([digits[representative, j] for j in range(digits.shape[1])], axis=1),
        radices=radices,
        count=count,
        weight_sum=count.copy() if weights is None else np.bincount(record_key, weights=weights, minlength=len(codes)),
        record_key=record_key,
    )


def complete_key_frequencies(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weight: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Per record, f_k and F_k of its key, with a missing value treated as a category of its own.

    SPEC §2.1 (sample frequency f_k) and §2.2 (F_k = sum of weights, = f_k without weights). This
    is the exact-match count; the matching semantics of missing values (SPEC §2.4) are in
    :func:`missing_aware_key_frequencies`.

    Returns a frame indexed like ``data`` with columns ``fk`` (int64) and ``Fk`` (float64).
    """
    keys = key_columns(data, keys)
    weights = None
    if weight is not None:
        weights = data[require_columns(data, [weight], role="weight")[0]].to_numpy(dtype="float64")
    groups = distinct_keys(data, keys, weights=weights, con=con)
    return pd.DataFrame(
        {
            "fk": groups.count.astype(np.int64)[groups.record_key],
            "Fk": groups.weight_sum[groups.record_key],
        },
        index=data.index,
    )


def compatible_counts(
    digits: np.ndarray, radices: np.ndarray, count: np.ndarray, weight_sum: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """sdcMicro ``freqCalc`` frequencies of distinct keys whose missing values match any value.

    SPEC §2.4. Keys are *compatible* when they agree wherever both are observed. For a key d
    (count n_d, weight sum W_d) the result is n_d plus, over the other compatible keys e:

    * d complete: alpha·n_e for every partially missing e (a key missing in every variable is
      not added here, except with a single key variable, as in sdcMicro);
    * d partially missing: n_e for every complete e and alpha·n_e for every other key with a
      missing value (all-missing keys included);
    * d missing in every variable: f = n (all records), F = sum of all weights.

    Parameters
    ----------
    digits, radices : distinct keys as from :func:`distinct_keys` (0 = missing value).
    count, weight_sum : n_d and W_d of each distinct key.
    alpha : weight in [0, 1] of a match that relies on a missing value.

    Returns
    -------
    (f, F) per distinct key, float64.

    References
    ----------
    sdcMicro ``R/freqCalc.r`` (version 5.8.1): the loop over keys with missing values.
    """
    n_keys, m = digits.shape
    observed = digits > 0
    if not observed.all():
        check_mask_width(m, "matching missing values")
    mask = observed.astype(np.int64) @ (np.int64(1) << np.arange(m, dtype=np.int64))
    full = (1 << m) - 1
    complete = mask == full
    all_missing = mask == 0
    partial = ~complete & ~all_missing
    f = count.copy()
    F = weight_sum.copy()
    if complete.all():
        return f, F
    if m == 1:
        f[complete] += alpha * count[all_missing].sum()
        F[complete] += alpha * weight_sum[all_missing].sum()
    elif _use_dense_lattice(radices, n_keys, mask, partial):
        _dense_compatible_counts(digits, radices, count, weight_sum, complete, all_missing, alpha, f, F)
    else:
        projector = _Projector(digits, radices)
        _add_partial_keys_to_complete_keys(projector, count, weight_sum, mask, complete, partial, alpha, f, F)
        _add_compatible_keys_to_partial_keys(projector, count, weight_sum, mask, complete, partial, alpha, f, F)
    f[all_missing] = count.sum()
    F[all_missing] = weight_sum.sum()
    return f, F


#: Cells of the dense lattice (prod(radix + 1), one float64 each): at most 2**23 (64 MB per array).
DENSE_CELL_LIMIT = 2**23


def _use_dense_lattice(radices: np.ndarray, n_keys: int, mask: np.ndarray, partial: np.ndarray) -> bool:
    """Whether the dense down-set sum of :func:`_dense_compatible_counts` is the cheaper method.

    Its cost is about m x cells, the sparse method's about (patterns) x (distinct keys) hash
    operations, each roughly ten times dearer than a dense cell update (measured: 1M records x 7
    keys with 10% missing cells, 127 patterns x 506k keys: 7 s sparse, 0.6 s dense on 8M cells).
    """
    cells = 1
    for radix in radices:
        cells *= int(radix) + 1
        if cells > DENSE_CELL_LIMIT:
            return False
    patterns = len(np.unique(mask[partial])) + 1
    return cells * len(radices) <= 12 * patterns * n_keys


def _dense_compatible_counts(digits, radices, count, weight_sum, complete, all_missing, alpha, f, F):
    """All freqCalc frequencies of :func:`compatible_counts` from one down-set sum on a dense lattice.

    Order the values of key j as 0 (missing) < every category < T (a top element). Key e is
    compatible with key d exactly when e <= d' coordinate-wise, where d' is d with T in place of its
    missing values (a missing value of e is below anything; T above anything). So with the measure
    mu(e) = c_e n_e (c_e = 1 for complete keys, alpha otherwise) placed on the dense grid of all
    digit combinations, plus a T slot per key, every answer is one cell of the down-set sum
    Z(x) = sum_{e <= x} mu(e). Z is computed one key variable at a time (the coordinate sums
    commute): slot T = sum over the variable's slots (a roll-up), every category slot += slot 0.
    Counts and weights are transformed separately. Then for a key d:

    * complete: f = Z(d') = n_d + alpha (partially missing keys <= d), with the all-missing key
      left out of mu (m > 1: it is not added to complete keys);
    * partially missing: Z(d') counted d itself with alpha, and the all-missing key matches it, so
      f = Z(d') + (1 - alpha) n_d + alpha n_allmissing;
    * all-missing: set by the caller (f = n).
    """
    m = len(radices)
    shape = tuple(int(r) + 1 for r in radices)
    strides = np.ones(m, dtype=np.int64)
    for j in range(m - 2, -1, -1):
        strides[j] = strides[j + 1] * shape[j + 1]
    cells = int(strides[0]) * shape[0]
    # the all-missing key (cell 0) is compatible with every key but added to partial keys only
    coef = np.where(complete, 1.0, np.where(all_missing, 0.0, alpha))
    cell = digits @ strides
    query = np.where(digits > 0, digits, np.asarray(radices, dtype=np.int64)) @ strides
    z_f = down_set_sum(np.bincount(cell, weights=coef * count, minlength=cells), shape)[query]
    z_F = down_set_sum(np.bincount(cell, weights=coef * weight_sum, minlength=cells), shape)[query]
    partial = ~complete & ~all_missing
    f[partial] = z_f[partial] + ((1.0 - alpha) * count[partial] + alpha * count[all_missing].sum())
    F[partial] = z_F[partial] + ((1.0 - alpha) * weight_sum[partial] + alpha * weight_sum[all_missing].sum())
    f[complete] = z_f[complete]
    F[complete] = z_F[complete]


def down_set_sum(lattice: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """In place on the flat C-ordered ``lattice`` of ``shape``: the down-set sum, returned flat.

    Along each axis, slot 0 is the missing value, the last slot the top element T (its input is
    ignored) and the slots between are the categories: T = sum of the other slots (taken before
    the categories change), then every category += the missing slot.
    """
    outer, inner = 1, len(lattice)
    for size in shape:
        inner //= size
        grid = lattice.reshape(outer, size, inner)
        np.add.reduce(grid[:, : size - 1], axis=1, out=grid[:, size - 1])
        grid[:, 1 : size - 1] += grid[:, 0:1]
        outer *= size
    return lattice


class _Projector:
    """Distinct keys ready to be projected onto column subsets (digits outside the subset set to 0).

    With mixed-radix place values that fit in int64, the code of a projection is the sum of
    precomputed per-column terms (stored column-major, so each term column is contiguous).
    """

    def __init__(self, digits: np.ndarray, radices: np.ndarray):
        self.digits = np.asfortranarray(digits)
        self.radices = radices
        self.terms = None
        place = np.ones(len(radices), dtype=np.int64)
        span = 1
        for j in range(len(radices) - 1, -1, -1):
            if span > CODE_LIMIT:  # the place values do not fit in int64: pack_codes re-numbers instead
                return
            place[j] = span
            span *= int(radices[j])
        if span <= CODE_LIMIT:
            self.terms = np.asfortranarray(self.digits * place)

    def subset(self, rows: np.ndarray) -> _Projector:
        """The same for a subset of the keys, gathered once for repeated projections."""
        return _Projector(self.digits[rows], self.radices)


def projection_codes(parts: Sequence[tuple[_Projector, np.ndarray | None, np.ndarray]]) -> list[np.ndarray]:
    """int64 codes of each (keys, rows or None for all, 0/1 column mask) projection.

    Codes are comparable across parts: equal exactly when the projected digits are equal. When the
    place values overflow int64 the parts are packed jointly (:func:`pack_codes`) instead.
    """
    if all(keys.terms is not None for keys, _, _ in parts):
        out = []
        for keys, rows, keep in parts:
            code = np.zeros(keys.terms.shape[0] if rows is None else len(rows), dtype=np.int64)
            for j in np.flatnonzero(keep):
                code += keys.terms[:, j] if rows is None else keys.terms[rows, j]
            out.append(code)
        return out
    blocks = [(keys.digits if rows is None else keys.digits[rows]) * keep for keys, rows, keep in parts]
    return pack_codes(blocks, parts[0][0].radices)


# Up to this many distinct codes a sorted search finds positions faster than pandas' hash table,
# whose set-up costs ~50 us a call (the sparse counter looks up thousands of small pattern tables).
_SORTED_LOOKUP_SIZE = 256


def _positions(table: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The position of each of ``values`` in ``table`` (distinct int64 codes), -1 where absent:
    ``pd.Index(table).get_indexer(values)``, by a sorted search when the table is small."""
    if len(table) > _SORTED_LOOKUP_SIZE or len(table) == 0 or len(values) > 16 * _SORTED_LOOKUP_SIZE:
        return pd.Index(table).get_indexer(values)
    order = np.argsort(table)
    found = order[np.minimum(np.searchsorted(table, values, sorter=order), len(table) - 1)]
    return np.where(table[found] == values, found, -1)


def _column_mask(pattern: int, m: int) -> np.ndarray:
    """0/1 int64 vector of the columns whose bit is set in ``pattern``."""
    return ((int(pattern) >> np.arange(m)) & 1).astype(np.int64)


def _column_masks(patterns: np.ndarray, m: int) -> np.ndarray:
    """(len(patterns), m) 0/1 int64 matrix: :func:`_column_mask` of each pattern."""
    return (np.asarray(patterns, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)) & 1


def _add_partial_keys_to_complete_keys(projector, count, weight_sum, mask, complete, partial, alpha, f, F):
    """For each complete key, alpha times the counts of the partially missing keys it matches.

    A partially missing key with pattern Q matches a complete key when they agree on Q's observed
    variables; keys with the same pattern differ there, so this is one hash join per pattern.
    """
    complete_rows = np.flatnonzero(complete)
    if not len(complete_rows):
        return
    m = projector.digits.shape[1]
    complete_keys = projector.subset(complete_rows)
    add_f = np.zeros(len(complete_rows))
    add_F = np.zeros(len(complete_rows))
    for pattern, rows in _keys_by_pattern(mask, partial & (count > 0)):  # keys without records add nothing
        keep = _column_mask(pattern, m)
        table, probes = projection_codes([(projector, rows, keep), (complete_keys, None, keep)])
        pos = _positions(table, probes)
        found = pos >= 0
        add_f[found] += count[rows[pos[found]]]
        add_F[found] += weight_sum[rows[pos[found]]]
    f[complete_rows] += alpha * add_f
    F[complete_rows] += alpha * add_F


def _add_compatible_keys_to_partial_keys(projector, count, weight_sum, mask, complete, partial, alpha, f, F):
    """For each partially missing key, the (alpha-weighted) counts of all keys compatible with it.

    For a pattern P every key e is projected onto P's observed variables, its own missing values
    kept as 0 digits, so the projection shows the subset S_e of P that e observes. A key d with
    pattern P is compatible with e exactly when d, with its digits outside S_e set to 0, equals that
    projection. So d is probed once per subset S that occurs, and every key e is hashed against the
    (small) set of probes: one pass over the distinct keys per pattern, no pairwise comparison.
    Complete keys weigh 1, keys with a missing value alpha.
    """
    m = projector.digits.shape[1]
    # only keys with records add to other keys (probe keys of IncrementalCompatibleCounts have none)
    counted = np.flatnonzero(count > 0)
    counted_keys = projector.subset(counted)
    coef = np.where(complete, 1.0, alpha)[counted]
    weighted_f, weighted_F = coef * count[counted], coef * weight_sum[counted]
    present_masks = np.unique(mask[counted])
    for pattern, rows in _keys_by_pattern(mask, partial):
        subsets = np.unique(present_masks & pattern)
        if projector.terms is not None:
            # every (subset, key) probe code at once: the place-value terms times the 0/1 subset columns
            (table,) = projection_codes([(counted_keys, None, _column_mask(pattern, m))])
            probes = (projector.terms[rows] @ _column_masks(subsets, m).T).T.ravel()
        else:
            table, *parts = projection_codes(
                [(counted_keys, None, _column_mask(pattern, m))]
                + [(projector, rows, _column_mask(s, m)) for s in subsets]
            )
            probes = np.concatenate(parts)
        # the numbering of the distinct probes does not matter: each gets the sum over its hits
        if len(probes) <= _SORTED_LOOKUP_SIZE:
            probe_codes, probe_index = np.unique(probes, return_inverse=True)
        else:
            probe_index, probe_codes = pd.factorize(probes)
        pos = _positions(probe_codes, table)
        hit = np.flatnonzero(pos >= 0)
        sum_f = np.bincount(pos[hit], weights=weighted_f[hit], minlength=len(probe_codes))
        sum_F = np.bincount(pos[hit], weights=weighted_F[hit], minlength=len(probe_codes))
        add_f = sum_f[probe_index].reshape(len(subsets), len(rows)).sum(axis=0)
        add_F = sum_F[probe_index].reshape(len(subsets), len(rows)).sum(axis=0)
        # the key itself was matched with weight alpha; it counts once, fully, via its count
        f[rows] += add_f - alpha * count[rows]
        F[rows] += add_F - alpha * weight_sum[rows]


def _keys_by_pattern(mask: np.ndarray, selected: np.ndarray):
    """(pattern, rows) for each missingness pattern among the ``selected`` keys, from one sort."""
    rows = np.flatnonzero(selected)
    rows = rows[np.argsort(mask[rows], kind="stable")]
    patterns, starts = np.unique(mask[rows], return_index=True)
    return zip(patterns.tolist(), np.split(rows, starts[1:]))


def missing_aware_key_frequencies(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weights: np.ndarray | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per record (f, F) with sdcMicro ``freqCalc`` semantics for missing values (SPEC §2.4).

    ``keys`` must be validated, ``weights`` a validated float64 array or None. Returns two float64
    arrays aligned with the rows of ``data`` (f is fractional when alpha < 1).
    """
    digits, radices = key_digits(data, keys)
    return digit_key_frequencies(digits, radices, weights=weights, alpha=alpha, con=con)


def digit_key_frequencies(
    digits: np.ndarray,
    radices: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    alpha: float = 1.0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`missing_aware_key_frequencies` of keys already coded (``digits``, ``radices`` as from
    :func:`~sdc_dagster.keys.key_digits`): per record (f, F), SPEC §2.4."""
    groups = distinct_digit_keys(digits, radices, weights=weights, con=con)
    f, F = compatible_counts(groups.digits, groups.radices, groups.count, groups.weight_sum, alpha)
    return f[groups.record_key], F[groups.record_key]


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
        "(" + ", ".join(quote_identifier(f"k{position[k]}") for k in s) + ")" for s in subsets
    )
    used_cols = ", ".join(quote_identifier(f"k{j}") for j in range(len(used)))
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


def compatible_sums(targets: np.ndarray, sources: np.ndarray, values: np.ndarray, radices: np.ndarray) -> np.ndarray:
    """For each target key, the sums of ``values`` over the source keys compatible with it.

    SPEC §2.4's relation (sdcMicro ``freqCalc``): two keys are *compatible* when they agree wherever
    both are observed (0 = missing). The relation is symmetric, so the sum can be organised by the
    missingness patterns of either side, whichever has fewer patterns per key of the other side
    (cost ~ patterns(one side) x keys(other side)): for a pattern P of side A, every key b of side B
    is projected onto P with its own missing values kept as 0, which shows the subset S_b of P that b
    observes; a key a with pattern P is compatible with b exactly when a projected onto S_b equals
    that projection. So each a is probed once per subset S that occurs, the B keys' codes are
    looked up among the (few) distinct probes, and no pair is compared. This is the join of
    :func:`compatible_counts` (``_add_compatible_keys_to_partial_keys``) read in both directions
    and for many value columns at once; with few source keys (the keys whose counts a suppression
    changed) it costs a pass over the targets per source pattern instead of a recount
    (:class:`~sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts`).

    Parameters
    ----------
    targets, sources : key digits (rows), as :func:`~sdc_dagster.keys.key_digits` codes them with
        ``radices`` (0 = missing). A key missing in every variable is compatible with every key.
    values : (len(sources), c) or (len(sources),) float64, the values summed per column.

    Returns
    -------
    (len(targets), c) float64 sums, c = 1 for one column (integer-valued values give exact sums).
    """
    targets = np.asarray(targets, dtype=np.int64)
    sources = np.asarray(sources, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    values = values[:, None] if values.ndim == 1 else values
    out = np.zeros((len(targets), values.shape[1]))
    if not len(targets) or not len(sources):
        return out
    m = targets.shape[1]
    check_mask_width(m, "matching missing values")
    bit = np.int64(1) << np.arange(m, dtype=np.int64)
    target_mask = (targets > 0).astype(np.int64) @ bit
    source_mask = (sources > 0).astype(np.int64) @ bit
    target_patterns, source_patterns = np.unique(target_mask), np.unique(source_mask)
    target_keys, source_keys = _Projector(targets, radices), _Projector(sources, radices)
    if len(target_patterns) * len(sources) <= len(source_patterns) * len(targets):
        # per target pattern: the sources' sums gathered onto the probes of the targets
        for pattern, rows in _keys_by_pattern(target_mask, np.ones(len(targets), dtype=bool)):
            pos, probe_index, n_probes, n_subsets = _pattern_join(target_keys.subset(rows), source_keys, pattern,
                                                                  source_patterns)
            hit = np.flatnonzero(pos >= 0)
            for c in range(values.shape[1]):
                sums = np.bincount(pos[hit], weights=values[hit, c], minlength=n_probes)
                out[rows, c] = sums[probe_index].reshape(n_subsets, len(rows)).sum(axis=0)
    else:
        # per source pattern: the sources' values summed by probe, read by each target's projection
        for pattern, rows in _keys_by_pattern(source_mask, np.ones(len(sources), dtype=bool)):
            pos, probe_index, n_probes, n_subsets = _pattern_join(source_keys.subset(rows), target_keys, pattern,
                                                                  target_patterns)
            hit = np.flatnonzero(pos >= 0)
            for c in range(values.shape[1]):
                sums = np.bincount(probe_index, weights=np.tile(values[rows, c], n_subsets), minlength=n_probes)
                out[hit, c] += sums[pos[hit]]
    return out


def _pattern_join(probed: _Projector, other: _Projector, pattern: int,
                  other_patterns: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The join of :func:`compatible_sums` for the ``probed`` keys, all of missingness ``pattern``,
    against every key of ``other`` (whose patterns are ``other_patterns``): the position of each
    ``other`` key among the distinct probes (-1: compatible with none), each probe's index among
    them (subset-major, :func:`_pattern_codes`), the number of distinct probes and of subsets."""
    subsets = np.unique(other_patterns & pattern)
    other_code, probes = _pattern_codes(other, probed, pattern, subsets)
    probe_codes, probe_index = _distinct(probes)
    return _positions(probe_codes, other_code), probe_index, len(probe_codes), len(subsets)


def _pattern_codes(one: _Projector, many: _Projector, pattern: int,
                   subsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The codes of :func:`compatible_sums` for one pattern: the keys of ``one`` projected onto
    the pattern's variables (their own missing values kept as 0), and the keys of ``many`` projected onto
    each of ``subsets`` (subset-major: all probed keys for the first subset, then the next), in
    codes comparable with each other (:func:`projection_codes`)."""
    m = one.digits.shape[1]
    if one.terms is not None:
        (code,) = projection_codes([(one, None, _column_mask(pattern, m))])
        return code, (many.terms @ _column_masks(subsets, m).T).T.ravel()
    code, *parts = projection_codes([(one, None, _column_mask(pattern, m))]
                                    + [(many, None, _column_mask(s, m)) for s in subsets])
    return code, np.concatenate(parts)


def _distinct(probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct probe codes (any numbering) and each probe's index among them."""
    if len(probes) <= _SORTED_LOOKUP_SIZE:
        return np.unique(probes, return_inverse=True)
    index, codes = pd.factorize(probes)
    return codes, index


def matched_counts(digits: np.ndarray, radices: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """:func:`compatible_counts` with alpha = 1 of distinct keys for several count columns at once
    (SPEC §2.4, sdcMicro ``freqCalc``): for each key d and column, the column summed over the keys
    compatible with d, the key missing in every variable left out for complete keys when there is
    more than one key variable (as freqCalc counts it), and for the all-missing key the column's
    total. ``columns`` (len(digits), c); the result has the same shape and equals
    ``compatible_counts(digits, radices, column, column, 1.0)[0]`` column by column (tested), one
    pattern pass serving every column (the l-diversity of a key group counts each sensitive
    category so, :func:`~sdc_dagster.risk.diversity.matched_l_diversity`)."""
    digits = np.asarray(digits, dtype=np.int64)
    columns = np.asarray(columns, dtype=np.float64).reshape(len(digits), -1)
    observed = digits > 0
    complete = observed.all(axis=1)
    if complete.all():
        return columns.copy()
    all_missing = ~observed.any(axis=1)
    m = digits.shape[1]
    mask = observed.astype(np.int64) @ (np.int64(1) << np.arange(m, dtype=np.int64))
    if m == 1 or _use_dense_lattice(radices, len(digits), mask, ~complete & ~all_missing):
        return np.column_stack([compatible_counts(digits, radices, column, column, 1.0)[0] for column in columns.T])
    counted = ~all_missing & columns.any(axis=1)
    out = compatible_sums(digits, digits[counted], columns[counted], radices)
    out[~complete] += columns[all_missing].sum(axis=0)
    out[all_missing] = columns.sum(axis=0)
    return out
