"""The intruder's audit of a suppression pattern: the feasibility interval of every suppressed cell.

The intruder knows the model of every released table (:mod:`sdc_dagster.tables.model`: ``M z = b``
over the inner cells ``z >= 0``) and the published cells. The interval of a suppressed cell c is
``[min M_c z, max M_c z]`` over ``{z >= 0 : M_P z = b_P}`` (P the published rows of every table
together): Hundepool et al. 2012 §4.4.1 ("the attacker problem", Fischetti and Salazar 1999),
sdcTable ``attack()``, tau-Argus's audit. A cell is exactly derivable when its interval has width 0.

The linear programmes are solved with HiGHS (``scipy.optimize.linprog``) on a reduced model, so
that a pattern of a census-size table is audited with few small programmes:

1. inner cells pinned by a published row of a single inner cell, or by a published zero (every
   inner cell below a published 0 is 0), are known and removed;
2. published rows implied by other published rows (:func:`sdc_dagster.tables.model.implied_rows`)
   are left out: they add nothing to the feasible set;
3. the remaining unknown inner cells fall into independent components (linked by the rows left);
   a suppressed cell's bound is the sum of the bounds of its parts in each component;
4. the j-th part of every component is bounded by one programme over all components at once (their
   constraints are block-diagonal, so one optimum of the sum optimises every part): two programmes
   per round, as many rounds as the largest component has parts;
5. an unknown inner cell in no remaining row is bounded by 0 below and unbounded above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables.model import JointModel, Table, implied_rows, joint_model


def stacked_mask(model: JointModel, masks, role: str) -> np.ndarray:
    """One bool per stacked row of ``model`` from one Series (or array) per table, the rows of a
    distinct cell made equal (a duplicate of a suppressed cell is suppressed)."""
    masks = list(masks)
    if len(masks) != len(model.tables):
        raise SDCInputError(f"{role}: one per table, got {len(masks)} for {len(model.tables)} tables")
    out = []
    for position, (t, m) in enumerate(zip(model.tables, masks)):
        values = m.to_numpy() if isinstance(m, pd.Series) else np.asarray(m)
        if isinstance(m, pd.Series) and not m.index.equals(t.cells.index):
            raise SDCInputError(f"{role} of table {position}: must be indexed like table.cells")
        if values.shape != (len(t.cells),):
            raise SDCInputError(f"{role} of table {position}: needs {len(t.cells)} values, got {values.shape}")
        if pd.isna(values).any():
            raise SDCInputError(f"{role} of table {position}: has missing values")
        out.append(values.astype(bool))
    flags = np.concatenate(out)
    return np.bincount(model.cell, weights=flags, minlength=model.cell.max() + 1)[model.cell] > 0


@dataclass(frozen=True)
class _Reduced:
    """The intruder's programme after steps 1-3: unknown inner cells ``unknown`` (their component in
    ``component``), the equality rows ``rows`` over them with right-hand side ``rhs``, the known inner
    values ``known`` (NaN where unknown)."""

    unknown: np.ndarray
    component: np.ndarray
    rows: sparse.csr_matrix
    rhs: np.ndarray
    known: np.ndarray


def _reduce(model: JointModel, suppressed: np.ndarray) -> _Reduced:
    published = ~suppressed
    matrix, b = model.matrix, model.published
    n_inner = matrix.shape[1]
    known = np.full(n_inner, np.nan)
    pub = matrix[published]
    pub_b = b[published]
    single = np.diff(pub.indptr) == 1
    known[pub.indices[pub.indptr[:-1][single]]] = pub_b[single]
    zero_rows = pub[pub_b == 0]
    known[zero_rows.indices] = 0.0
    unknown = np.flatnonzero(np.isnan(known))
    keep = np.zeros(len(b), dtype=bool)
    for t, start in zip(model.tables, model.offsets[:-1]):
        rows = slice(start, start + len(t.cells))
        keep[rows] = published[rows] & ~implied_rows(t, published[rows])
    _, first = np.unique(model.cell, return_index=True)
    distinct = np.zeros(len(b), dtype=bool)
    distinct[first] = True
    keep &= distinct
    kept = matrix[keep]
    rhs = b[keep] - kept @ np.nan_to_num(known)
    kept = kept[:, unknown].tocsr()
    useful = np.diff(kept.indptr) > 0
    kept, rhs = kept[useful], rhs[useful]
    # components of the unknown inner cells linked by a common row
    incidence = kept.tocoo()
    n = len(unknown)
    link = sparse.coo_matrix(
        (np.ones(incidence.nnz), (incidence.col, n + incidence.row)), shape=(n + kept.shape[0],) * 2
    )
    _, label = connected_components(link, directed=False)
    return _Reduced(unknown, label[:n], kept, rhs, known)


def intervals(
    model: JointModel, suppressed: np.ndarray, *, of: np.ndarray | None = None, enough=None
) -> tuple[np.ndarray, np.ndarray]:
    """(lo, up) of every stacked row of ``model`` under the pattern ``suppressed`` (bool per stacked
    row); NaN where published (or not in ``of``, a bool mask of the rows wanted), ``inf`` where nothing
    bounds a cell from above.

    ``enough(rows, lo, up) -> bool per row``: when given, two programmes first push the sum of every
    wanted cell up and down; the best of the two points in each component gives every cell an inner
    estimate of its interval, and the cells whose estimate is already ``enough`` keep it (their true
    interval contains it) instead of being bounded exactly. For a pass/fail check, not a report."""
    suppressed = np.asarray(suppressed, dtype=bool)
    lo = np.full(len(suppressed), np.nan)
    up = np.full(len(suppressed), np.nan)
    wanted = suppressed if of is None else suppressed & of
    if not wanted.any():
        return lo, up
    red = _reduce(model, suppressed)
    targets_rows = np.flatnonzero(wanted)
    _, first = np.unique(model.cell[targets_rows], return_index=True)
    targets = targets_rows[first]
    full = model.matrix[targets]
    constant = full @ np.nan_to_num(red.known)
    parts = full[:, red.unknown].tocoo()  # target x unknown
    covered = np.zeros(len(red.unknown), dtype=bool)
    covered[red.rows.indices] = True
    target_lo = constant.copy()
    target_up = constant.copy()
    free = ~covered[parts.col]
    target_up[np.unique(parts.row[free])] = np.inf  # an uncovered unknown can be anything >= 0
    bounded = ~free
    # parts: (target, component) pairs with their coefficients on covered unknowns
    comp = red.component[parts.col[bounded]]
    n_components = int(red.component.max(initial=0)) + 1
    part_keys, part_id = np.unique(parts.row[bounded].astype(np.int64) * n_components + comp, return_inverse=True)
    part_target, part_component = np.divmod(part_keys, n_components)
    objective = sparse.csr_matrix(
        (parts.data[bounded], (part_id, parts.col[bounded])), shape=(len(part_keys), len(red.unknown))
    )
    row_component = red.component[red.rows.indices[red.rows.indptr[:-1]]] if red.rows.shape[0] else np.zeros(0, int)
    if enough is not None and len(part_keys):
        total = np.asarray(objective.sum(axis=0)).ravel()
        points = [objective @ _optimum(red, sign * total, np.arange(len(red.unknown)), np.arange(red.rows.shape[0]))
                  for sign in (1.0, -1.0)]
        estimate_up, estimate_lo = target_up.copy(), target_lo.copy()
        np.add.at(estimate_up, part_target, np.maximum(*points))
        np.add.at(estimate_lo, part_target, np.minimum(*points))
        done = np.asarray(enough(targets, estimate_lo, estimate_up), dtype=bool)
        target_up[done], target_lo[done] = estimate_up[done], estimate_lo[done]
        rest = ~done[part_target]
        part_target, part_component, objective = part_target[rest], part_component[rest], objective[rest]
        part_keys = part_keys[rest]
    # round r takes the r-th part of every component
    order = np.lexsort((np.arange(len(part_keys)), part_component))
    rank = np.empty(len(part_keys), dtype=np.int64)
    sorted_comp = part_component[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_comp)) + 1]
    rank[order] = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    for r in range(int(rank.max()) + 1 if len(rank) else 0):
        chosen = np.flatnonzero(rank == r)
        components = np.unique(part_component[chosen])
        columns = np.flatnonzero(np.isin(red.component, components))
        rows = np.flatnonzero(np.isin(row_component, components))
        c = np.asarray(objective[chosen].sum(axis=0)).ravel()
        for sign, out in ((1.0, target_lo), (-1.0, target_up)):
            np.add.at(out, part_target[chosen], objective[chosen] @ _optimum(red, sign * c, columns, rows))
    lo[targets] = target_lo
    up[targets] = target_up
    # every row of a suppressed distinct cell gets its interval
    by_cell = np.full(model.cell.max() + 1, -1)
    by_cell[model.cell[targets]] = targets
    source = by_cell[model.cell[targets_rows]]
    lo[targets_rows] = lo[source]
    up[targets_rows] = up[source]
    return lo, up


def _optimum(red: _Reduced, c: np.ndarray, columns: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A minimiser of ``c z`` over the intruder's programme restricted to ``columns`` and ``rows``
    (whole components), as a point over every unknown (0 outside ``columns``)."""
    result = linprog(c[columns], A_eq=red.rows[rows][:, columns], b_eq=red.rhs[rows], bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"audit: HiGHS could not solve the intruder's programme ({result.message})")
    z = np.zeros(len(red.unknown))
    z[columns] = result.x
    return z


def audit(table_or_tables: Table | Sequence[Table], suppressed) -> pd.DataFrame | list[pd.DataFrame]:
    """Per cell ``lo``, ``up``: the interval an intruder derives for each suppressed cell by linear
    programming over the inner cells (>= 0) from every published cell of every given table (NaN
    where published). ``suppressed``: a bool Series indexed like ``table.cells`` (a list of them for
    a list of linked tables, audited together). The rows of a cell and its duplicates (a parent with
    a single child) count as suppressed when any of them is."""
    single = isinstance(table_or_tables, Table)
    tables = [table_or_tables] if single else list(table_or_tables)
    model = joint_model(tables)
    masks = [suppressed] if single else suppressed
    if not single and (isinstance(masks, pd.Series) or not isinstance(masks, Sequence)):
        raise SDCInputError("suppressed: for a list of tables, a list with one bool Series per table")
    lo, up = intervals(model, stacked_mask(model, masks, "suppressed"))
    out = [
        pd.DataFrame({"lo": a, "up": b}, index=t.cells.index)
        for t, a, b in zip(tables, model.split(lo), model.split(up))
    ]
    return out[0] if single else out


def protection_failures(
    model: JointModel, suppressed: np.ndarray, primary: np.ndarray, lower: np.ndarray, upper: np.ndarray,
    *, min_width: float = 1.0, tolerance: float = 1e-6, only_primaries: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Primary rows (stacked) whose audit interval fails. A primary fails when it is published, or
    its interval ``[lo, up]`` misses a protection level (``up < b + upper`` or ``lo > b - lower``),
    or, without levels, is narrower than ``min_width`` (an exactly derivable cell has width 0).
    Returns (failing rows as bool, lo, up). With ``only_primaries`` only the primaries are bounded,
    and those an inner estimate already protects keep the estimate (:func:`intervals` ``enough``).
    ``tolerance`` is relative to the largest published value."""
    scale = tolerance * max(1.0, float(np.abs(model.published).max(initial=0.0)))
    b = model.published

    def meets(rows, lo, up):
        with np.errstate(invalid="ignore"):
            levelled = (lower[rows] > 0) | (upper[rows] > 0)
            return np.where(
                levelled,
                (up >= b[rows] + upper[rows] - scale) & (lo <= b[rows] - lower[rows] + scale) & (up - lo > scale),
                up - lo >= min_width - scale,
            )

    if only_primaries:
        lo, up = intervals(model, suppressed, of=primary, enough=meets)
    else:
        lo, up = intervals(model, suppressed)
    rows = np.flatnonzero(primary & suppressed)
    failing = primary & ~suppressed
    failing[rows] = ~meets(rows, lo[rows], up[rows])
    return failing, lo, up
