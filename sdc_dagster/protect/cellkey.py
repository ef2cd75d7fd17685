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

Perturbation table (OPEN in the seed, which only says "values +1 and -1"): for each original count
i = 0..D, the maximum-entropy distribution on d in {-min(i, D), ..., D} with mean 0 and variance V.
The truncation at -i makes every perturbed count non-negative, and row 0 is the point mass at 0,
so zeros stay zeros. Counts above D use row D (no truncation needed). This follows the design
constraints of the sdcTools ``ptable`` package (unbiased, fixed variance, bounded by D,
non-negative results) with a maximum-entropy solution instead of ptable's optimisation; ptable's
``js`` threshold (no perturbed counts in 1..js) is not offered. When V is not attainable on a
short support (the largest variance of a mean-0 distribution on [-a, D] is a·D), the row takes
90% of that bound, the largest variance at which the maximum-entropy solution stays well
conditioned; :attr:`PerturbationTable.row_variance` reports the variance each row really has.

Record keys as uniform numbers are summed as 32-bit fixed-point integers, so cell keys are exact
and do not depend on the order DuckDB adds them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

#: Fixed-point scale for uniform record keys (2^32): a 37-million-record sum stays below 2^63.
FIXED_POINT_SCALE = 2**32
#: Share of the attainable variance used when V cannot be reached on a truncated row.
ATTAINABLE_VARIANCE_SHARE = 0.9


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


@dataclass(frozen=True)
class PerturbationTable:
    """p-table: row i (count i = 0..D; larger counts use row D) is a distribution over -D..D.

    Attributes
    ----------
    max_deviation
        D, the largest absolute perturbation.
    variance
        V, the target variance of the perturbations.
    probabilities
        Array of shape (D + 1, 2D + 1); column j is the perturbation j - D.
    """

    max_deviation: int
    variance: float
    probabilities: np.ndarray = field(repr=False)

    @property
    def perturbations(self) -> np.ndarray:
        """The perturbation values -D..D (the columns of :attr:`probabilities`)."""
        return np.arange(-self.max_deviation, self.max_deviation + 1)

    @property
    def row_mean(self) -> np.ndarray:
        """Mean perturbation of each row (0 by construction)."""
        return self.probabilities @ self.perturbations

    @property
    def row_variance(self) -> np.ndarray:
        """Variance of the perturbation in each row (V where attainable)."""
        d = self.perturbations
        return self.probabilities @ (d * d) - self.row_mean**2

    def to_frame(self) -> pd.DataFrame:
        """The table as rows ``i`` by columns ``d`` (perturbation), for display and export."""
        return pd.DataFrame(
            self.probabilities,
            index=pd.RangeIndex(self.max_deviation + 1, name="i"),
            columns=pd.Index(self.perturbations, name="d"),
        )

    def lookup(self, values, cell_keys) -> np.ndarray:
        """Perturbations for cells with counts ``values`` and cell keys ``cell_keys`` in [0, 1).

        Parameters
        ----------
        values
            Non-negative integer cell counts.
        cell_keys
            Cell keys mapped to [0, 1).

        Returns
        -------
        numpy.ndarray
            int64 perturbations, one per cell.
        """
        values = np.asarray(values, dtype=np.int64)
        keys = np.asarray(cell_keys, dtype=np.float64)
        if values.shape != keys.shape:
            raise SDCInputError("cell values and cell keys: must have the same length")
        if (values < 0).any():
            raise SDCInputError("cell values: counts must be non-negative")
        if ((keys < 0) | (keys >= 1)).any():
            raise SDCInputError("cell keys: must lie in [0, 1)")
        cumulative = np.cumsum(self.probabilities, axis=1)
        cumulative[:, -1] = 1.0  # guard against rounding leaving u just above the last bound
        rows = np.minimum(values, self.max_deviation)
        # Inverse CDF: the number of bounds F(d) <= u is the column of the d with F(d-1) <= u < F(d);
        # zero-probability columns (below -i) have F = 0 and are always passed over.
        column = (keys[:, None] >= cumulative[rows]).sum(axis=1)
        return self.perturbations[column].astype(np.int64)


def _max_entropy_row(support: np.ndarray, variance: float) -> np.ndarray:
    """Maximum-entropy distribution on ``support`` with mean 0 and the given variance."""
    if variance == 0:
        return (support == 0).astype(np.float64)
    features = np.column_stack([support, support.astype(np.float64) ** 2])
    target = np.array([0.0, variance])

    def dual(theta):
        z = features @ theta
        shift = z.max()
        weights = np.exp(z - shift)
        total = weights.sum()
        p = weights / total
        moments = p @ features
        value = shift + np.log(total) - theta @ target
        centred = features - moments
        hessian = (centred * p[:, None]).T @ centred
        return value, moments - target, hessian

    # Damped Newton on the convex dual (log-partition minus theta . target); two unknowns.
    theta = np.zeros(2)
    value, gradient, hessian = dual(theta)
    for _ in range(200):
        if np.abs(gradient).max() < 1e-12:
            break
        step = np.linalg.solve(hessian + 1e-12 * np.eye(2), gradient)
        scale = 1.0
        while scale > 1e-10:
            candidate = theta - scale * step
            cand_value, cand_gradient, cand_hessian = dual(candidate)
            # Near the optimum the dual is flat to machine precision; a smaller gradient also counts.
            if cand_value < value or np.abs(cand_gradient).max() < np.abs(gradient).max():
                break
            scale /= 2
        theta, value, gradient, hessian = candidate, cand_value, cand_gradient, cand_hessian
    z = features @ theta
    p = np.exp(z - z.max())
    p /= p.sum()
    moments = p @ features
    if abs(moments[0]) > 1e-8 or abs(moments[1] - variance) > 1e-8:
        raise SDCInputError(
            f"p-table: no maximum-entropy row with variance {variance} on support {support.tolist()}"
        )
    return p


def perturbation_table(max_deviation: int, variance: float) -> PerturbationTable:
    """Build the p-table for maximum deviation D and variance V (SPEC §8.11 step 3).

    Parameters
    ----------
    max_deviation
        D >= 1: perturbations lie in -D..D.
    variance
        V > 0: target variance of the perturbation of every count (rows with a short support
        get the largest well-conditioned variance below V, see the module docstring).

    Returns
    -------
    PerturbationTable
        Rows 0..D; row 0 is the point mass at 0; every row has mean 0 and never takes a count
        below 0.

    References
    ----------
    SPEC §8.11; Enderle, Giessing, Tent (2018), "Designing confidentiality on the fly: the cell key
    method" / sdcTools ptable package (constraints of the table).
    """
    if isinstance(max_deviation, bool) or not isinstance(max_deviation, int | np.integer) or max_deviation < 1:
        raise SDCInputError(f"parameter max_deviation: must be an integer >= 1, got {max_deviation!r}")
    if not np.isfinite(variance) or variance <= 0:
        raise SDCInputError(f"parameter variance: must be a positive number, got {variance!r}")
    d_max = int(max_deviation)
    if variance >= d_max * d_max:
        raise SDCInputError(
            f"parameter variance: {variance} is not below D^2 = {d_max * d_max}, the largest variance of "
            "a mean-0 perturbation bounded by D"
        )
    width = 2 * d_max + 1
    table = np.zeros((d_max + 1, width))
    table[0, d_max] = 1.0  # zeros stay zeros
    for i in range(1, d_max + 1):  # D rows, never records
        lowest = -min(i, d_max)
        support = np.arange(lowest, d_max + 1)
        row_variance = min(variance, ATTAINABLE_VARIANCE_SHARE * (-lowest) * d_max)
        table[i, lowest + d_max :] = _max_entropy_row(support, row_variance)
    return PerturbationTable(max_deviation=d_max, variance=float(variance), probabilities=table)


def assign_record_keys(data: pd.DataFrame, *, n_key: int | None = None, random_state=None) -> pd.Series:
    """Random record keys (SPEC §8.11 step 1), indexed like ``data``.

    Parameters
    ----------
    data
        The microdata (only its length and index are used).
    n_key
        N: integer keys uniform in 1..N; None: uniform keys in [0, 1).
    random_state
        int seed or numpy Generator.

    Returns
    -------
    pandas.Series
        ``record_key``: int64 in 1..N, or float64 in [0, 1).
    """
    rng = np.random.default_rng(random_state)
    if n_key is None:
        keys = rng.random(len(data))
    else:
        if isinstance(n_key, bool) or not isinstance(n_key, int | np.integer) or n_key < 2:
            raise SDCInputError(f"parameter n_key: must be an integer >= 2, got {n_key!r}")
        keys = rng.integers(1, int(n_key), size=len(data), endpoint=True, dtype=np.int64)
    return pd.Series(keys, index=data.index, name="record_key")


def _key_column(data: pd.DataFrame, record_key_col: str, n_key: int | None) -> tuple[np.ndarray, int]:
    """Record keys as non-negative int64 addends and the modulus their sum is reduced by."""
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
    addends, modulus = _key_column(microdata, record_key_col, n_key)
    frame = pd.DataFrame({f"v{j}": microdata[c].to_numpy() for j, c in enumerate(by)})
    frame["rk"] = addends
    db = con if con is not None else duckdb.connect()
    db.register("sdc_ckm_input", frame)
    try:
        cols = ", ".join(_quote(f"v{j}") for j in range(len(by)))
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


def grid_cell_key(
    microdata: pd.DataFrame,
    *,
    record_key_col: str,
    ptable: PerturbationTable,
    cell: str = "cell_id",
    sex: str = "sex",
    age_group: str = "age_group",
    n_key: int | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """The grid table (total, sex_1, sex_2, age_1..age_3 per cell) perturbed by the cell key method.

    The six tables are computed in one DuckDB pass (count and key sum per cell and category);
    each count gets its own cell key from its own contributing records, so a category holding every
    resident of a cell gets the same noise as the cell total (SPEC §8.11 consistency).

    Returns
    -------
    pandas.DataFrame
        One row per inhabited cell, sorted by cell id (as text, like ``tabulate_grid``): the cell
        column, the six perturbed counts
        (int64) and the six original counts as ``<name>_original``.
    """
    require_columns(microdata, [cell, sex, age_group, record_key_col], role="census column")
    addends, modulus = _key_column(microdata, record_key_col, n_key)
    frame = pd.DataFrame(
        {"c": microdata[cell].to_numpy(), "s": microdata[sex].to_numpy(), "a": microdata[age_group].to_numpy()}
    )
    frame["rk"] = addends
    conditions = {
        "total": "TRUE",
        "sex_1": "s = 1",
        "sex_2": "s = 2",
        "age_1": "a = 1",
        "age_2": "a = 2",
        "age_3": "a = 3",
    }
    select = ",\n".join(
        f"count(*) FILTER (WHERE {cond}) AS n_{name}, "
        f"CAST(coalesce(sum(rk) FILTER (WHERE {cond}), 0) % {modulus} AS BIGINT) AS k_{name}"
        for name, cond in conditions.items()
    )
    db = con if con is not None else duckdb.connect()
    db.register("sdc_ckm_grid", frame)
    try:
        cells = db.execute(
            f"SELECT CAST(c AS VARCHAR) AS cell_key, {select} FROM sdc_ckm_grid GROUP BY cell_key ORDER BY cell_key"
        ).df()
    finally:
        db.unregister("sdc_ckm_grid")
    out = pd.DataFrame({cell: cells["cell_key"].to_numpy()})
    for name in conditions:
        counts = cells[f"n_{name}"].to_numpy(dtype=np.int64)
        keys = cells[f"k_{name}"].to_numpy(dtype=np.float64) / modulus
        out[name] = counts + ptable.lookup(counts, keys)
    for name in conditions:
        out[f"{name}_original"] = cells[f"n_{name}"].to_numpy(dtype=np.int64)
    return out
