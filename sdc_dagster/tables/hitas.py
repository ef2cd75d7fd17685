"""HiTaS: a hierarchical table protected subtable by subtable, from the top down.

de Wolf (2002), "HiTaS: a heuristic approach to cell suppression in hierarchical tables" (Inference
Control in Statistical Databases, LNCS 2316), tau-Argus's "modular" method (the tau-Argus manual;
Hundepool et al. 2012, "Statistical Disclosure Control", §4.4) and sdcTable's
``protectTable(method = "HITAS")``:

* A *subtable* takes one code with children (a *parent*) in every dimension and crosses, in each
  dimension, that parent and its direct children: a table without hierarchy whose totals are the
  parents. Its *level combination* is the depth of its parent in each dimension (:func:`subtables`).
* The level combinations are processed in order of their total depth (the whole table's top
  first; then ties in the order of the combinations). Two subtables of the same combination share
  no cell (two parents at the same depth have different children), so they are protected
  independently, in parallel when ``workers`` allow (a process pool; the subtables' results are
  merged in their fixed order, so the pattern does not depend on the pool).
* Each subtable is protected by the exact ILP when it has at most :data:`SMALL_SUBTABLE` cells, else
  by the Gaussian elimination with its repair (:mod:`sdc_dagster.tables.secondary`). Its primaries
  are the table's primaries plus every cell a subtable processed before suppressed (a marginal of
  this one, or a cell shared with another table of a linked set): the suppressions of a higher
  level are protected again in the lower one. A cell a subtable processed before published is
  frozen as published (tau-Argus and sdcTable keep it, so that the higher subtable's protection
  stands); when that makes a subtable infeasible, those cells are freed for that subtable only
  (suppressing more never narrows an interval elsewhere).

The decomposition ignores the relations between subtables, so the pattern it returns is not
certain to protect the whole table (tau-Argus's modular method fails its own audit on a 63-cell
table, issue 36): :func:`sdc_dagster.tables.secondary.secondary_suppression` audits it jointly and
repairs it before anything is released.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from sdc_dagster.tables.model import TOTAL, JointModel, Table, tabulate
from sdc_dagster.tables.pool import Pool

#: Subtables of at most this many cells are protected by the exact ILP; larger ones by Gauss.
SMALL_SUBTABLE = 100


@dataclass(frozen=True)
class Subtable:
    """One subtable of a table: the depth of its parent code in each dimension (``levels``), its
    parent and children per dimension (positions in :attr:`Dimension.codes`, parent first) and
    its ``rows`` in ``table.cells`` (the product of those codes)."""

    levels: tuple[int, ...]
    codes: tuple[np.ndarray, ...]
    rows: np.ndarray


def subtables(table: Table) -> list[list[Subtable]]:
    """The subtables of ``table`` grouped by level combination, in the order they are protected
    (total depth, then the combination). A dimension without hierarchy has one parent, its total."""
    families = []
    for d in table.dimensions:
        parents = np.unique(d.parent[d.parent >= 0])
        families.append({int(p): np.r_[p, np.flatnonzero(d.parent == p)] for p in parents})
    levels = [sorted({int(d.level[p]) for p in f}) for d, f in zip(table.dimensions, families)]
    shape = tuple(len(d.codes) for d in table.dimensions)
    out = []
    for combination in sorted(itertools.product(*levels), key=lambda c: (sum(c), c)):
        chosen = [[p for p in f if d.level[p] == level] for d, f, level in zip(table.dimensions, families, combination)]
        group = []
        for parents in itertools.product(*chosen):
            codes = tuple(f[p] for f, p in zip(families, parents))
            grid = np.meshgrid(*codes, indexing="ij")
            group.append(Subtable(combination, codes, np.ravel_multi_index([g.ravel() for g in grid], shape)))
        out.append(group)
    return out


def _sub_table(table: Table, sub: Subtable) -> tuple[Table, np.ndarray]:
    """The subtable as a :class:`Table` of flat dimensions (its parents as the totals, its inner
    cells the children's cells of ``table``), and for each of its cells the row of ``table``."""
    children = [codes[1:] for codes in sub.codes]
    grid = np.meshgrid(*children, indexing="ij")
    shape = tuple(len(d.codes) for d in table.dimensions)
    rows = np.ravel_multi_index([g.ravel() for g in grid], shape)
    data = pd.DataFrame({d.name: d.codes[g.ravel()] for d, g in zip(table.dimensions, grid)})
    data["_hitas_count"] = table.cells["freq"].to_numpy()[rows]
    if table.magnitude:
        data["_hitas_value"] = table.cells["value"].to_numpy()[rows]
    sub_table = tabulate(data, {d.name: None for d in table.dimensions}, freq="_hitas_count",
                         value="_hitas_value" if table.magnitude else None)
    positions = []
    for d, codes in zip(table.dimensions, sub.codes):
        column = sub_table.cells[d.name]
        found = d.codes.get_indexer(pd.Index(column, dtype=object))
        positions.append(np.where(column.eq(TOTAL).to_numpy(), codes[0], found))
    return sub_table, np.ravel_multi_index(positions, shape)


@dataclass(frozen=True)
class _Job:
    """What the solver of one subtable needs (picklable for the process pool)."""

    table: Table
    primary: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    cost: np.ndarray
    must: np.ndarray
    kept: np.ndarray
    never: np.ndarray


def _protect(solve: Callable, job: _Job) -> np.ndarray:
    """The pattern of one subtable (bool per cell): ``solve`` (secondary suppression of one table)
    with the exact ILP for a small subtable, Gauss for a large one; the cells published before
    (``kept``) freed when they make the subtable infeasible."""
    index = job.table.cells.index
    method = "optimal" if len(index) <= SMALL_SUBTABLE else "gauss"
    levels = pd.DataFrame({"lower": job.lower, "upper": job.upper}, index=index)

    def attempt(never: np.ndarray) -> np.ndarray:
        frozen = pd.Series(pd.NA, index=index, dtype="boolean")
        frozen[job.must] = True
        frozen[never] = False
        pattern = solve(job.table, pd.Series(job.primary, index=index), method=method, protection=levels,
                        cost=pd.Series(job.cost, index=index), frozen=frozen)
        return pattern.to_numpy(dtype=bool)

    try:
        return attempt(job.kept | job.never)
    except RuntimeError:  # the cells published above leave no pattern: free them here
        return attempt(job.never)


def _same_cells(model: JointModel) -> np.ndarray:
    """A label per stacked row of ``model``, equal for rows over the same inner cells (a distinct
    cell and its duplicates; the same cell in two linked tables)."""
    matrix = model.matrix.tocsr()
    matrix.sort_indices()
    keys = [matrix.indices[a:b].tobytes() for a, b in zip(matrix.indptr[:-1], matrix.indptr[1:])]
    return pd.factorize(pd.Series(keys))[0]


def hitas_pattern(
    model: JointModel, primary: np.ndarray, lower: np.ndarray, upper: np.ndarray, costs: np.ndarray,
    must: np.ndarray, never: np.ndarray, solve: Callable, *, workers: int = 1,
) -> np.ndarray:
    """The HiTaS pattern (bool per stacked row of ``model``) of every table of ``model`` in turn
    (module text). ``solve(table, primary, *, method, protection, cost, frozen) -> bool Series`` is
    the secondary suppression of one table; ``workers > 1`` protects the subtables of a level
    combination in a process pool."""
    same = _same_cells(model) if len(model.tables) > 1 else model.cell
    suppressed = primary | must
    decided = np.zeros(len(primary), dtype=bool)

    def spread(mask: np.ndarray) -> np.ndarray:
        return np.bincount(same, weights=mask, minlength=same.max() + 1)[same] > 0

    with Pool(workers) as pool:
        for table, offset in zip(model.tables, model.offsets[:-1]):
            for group in subtables(table):
                jobs, where = [], []
                needed = primary | must | decided & suppressed
                for sub in group:
                    if not needed[sub.rows + offset].any():
                        continue  # nothing to protect: every cell published
                    sub_table, rows = _sub_table(table, sub)
                    rows = rows + offset
                    carried = decided[rows] & suppressed[rows] & ~must[rows]  # secondaries above
                    sub_primary = primary[rows] | carried
                    jobs.append(_Job(sub_table, sub_primary, np.where(primary[rows], lower[rows], 0.0),
                                     np.where(primary[rows], upper[rows], 0.0), costs[rows], must[rows],
                                     decided[rows] & ~suppressed[rows], never[rows]))
                    where.append(rows)
                for rows, pattern in zip(where, pool.map(partial(_protect, solve), jobs)):
                    suppressed[rows] |= pattern
                decided[np.concatenate([s.rows + offset for s in group])] = True
                suppressed, decided = spread(suppressed), spread(decided)
    return suppressed
