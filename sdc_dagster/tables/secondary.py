"""Secondary suppression: which further cells to suppress so that no primary is disclosed.

A pattern protects the table(s) when every primary's audit interval (:mod:`sdc_dagster.tables.intruder`,
over every linked table together) meets its protection levels (``up >= b + upper``,
``lo <= b - lower``; :func:`sdc_dagster.tables.primary.protection_levels`) or, for a primary without
levels, is at least ``min_width`` wide (not exactly derivable). Every pattern returned has passed
that audit; a pattern that fails it is never returned (RuntimeError).

* ``method="optimal"``: the exact integer programme of Fischetti and Salazar (1999, 2001;
  Hundepool et al. 2012 §4.4.1, tau-Argus's "optimal" method) solved by row generation with HiGHS
  (``scipy.optimize.milp``). The master programme chooses the cheapest pattern ``x`` (one binary per
  distinct cell, primaries fixed to 1) subject to the cuts found so far. For every primary the
  audit of ``x`` finds short, the intruder's programme in deviation form is solved,
  ``max ±M_p d`` subject to ``-b_c x_c <= M_c d <= U x_c`` for every cell c and ``d >= -z`` for the
  inner cells, and its dual values ``(α, β)`` give the capacity cut
  ``sum_c (α_c U + β_c b_c) x_c >= level_p - value(x) + sum_c (α_c U + β_c b_c) x_c(current)``
  (LP duality: the value is concave in the bounds, so the supergradient inequality holds for every
  pattern). The loop stops when the audit passes: the optimum of a relaxation that is feasible is
  optimal. ``U``, the a priori upper capacity of a cell, is twice the largest published value plus
  the largest level and ``min_width``; the audit has no upper bound, so it can only widen the
  intervals (a pattern the cuts exclude because of ``U`` alone would be a rare loss of optimality,
  never of protection). Before the loop, every free cell gets the relation cuts of
  :func:`relation_cuts` (no suppressed cell exactly derivable from one relation).
* ``method="gauss"``: the Gaussian elimination of Statistics Norway's GaussSuppression (Langsrud
  2024, "Secondary cell suppression by Gaussian elimination", JOS 40(1)): candidates are taken from
  the most to the least costly to suppress (zeros first, as GaussSuppression's default
  ``secondaryZeros = FALSE``); a candidate is published unless publishing it would put
  a primary's column in the span of the published columns (after elimination the primary's reduced
  column is parallel to the candidate's), in which case it is suppressed. The columns are
  eliminated in the first-difference basis of :func:`differences`, where a marginal cell has at
  most ``2^m`` nonzeros (m dimensions), so the elimination stays sparse. Linear algebra ignores
  ``z >= 0`` and the protection levels (GaussSuppression, too, meets interval requirements such
  as ``rangeMin`` by linear programmes after the elimination, its ``interval_suppression``), so the pattern is then repaired locally (:func:`_repair`): only the primaries still
  failing are audited again, each one's capacity cuts come from the programme above restricted to
  its block of the intruder's programme, and the cheapest cells meeting them are added, the
  suppressions so far kept, until the audit passes. As a cut is only a necessary condition, every
  round also runs GaussSuppression's interval iteration (:func:`_interval_iteration`): each cut's
  own cheapest cell and every suppressed cell become the primaries of a new elimination. In a flat
  table (every dimension a list of categories under its total, :func:`sdc_dagster.tables.hypercube.flat_shape`)
  a failing primary first gets the corners of its cheapest hypercube meeting its requirement
  (GHMiter, Repsilber 2002; Hundepool et al. 2012 §4.4.2; :mod:`sdc_dagster.tables.hypercube`), an
  explicit feasible move of the intruder's programme found without one: only a primary without
  such a hypercube gets the cuts.

* ``method="hitas"``: HiTaS (de Wolf 2002; tau-Argus's modular method), :mod:`sdc_dagster.tables.hitas`:
  the subtables of every level combination of the hierarchies protected from the top down (the
  ILP on small subtables, Gauss on large ones), the suppressions of a subtable's marginals carried
  into the subtables below as primaries; the whole pattern then repaired by :func:`_repair` as the
  Gauss pattern is, so that it passes the joint audit (HiTaS alone does not guarantee it).

Cost of suppressing a cell: ``"value"`` (its published value; tau-Argus's default for magnitude
tables), ``"count"`` (1 per cell) or a Series (one weight per cell of the table). A small
``1e-6 ·`` max cost is added to every cell so that no suppression is free. ``frozen``: a Series of
True (must be suppressed), False (must be published) or NA (free) per cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial, reduce

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables import hypercube
from sdc_dagster.tables.intruder import protection_failures, reduced_programme, requirement, stacked_mask
from sdc_dagster.tables.hitas import hitas_pattern
from sdc_dagster.tables.model import JointModel, Table, joint_model, relations
from sdc_dagster.validation import check_option, check_scalar

METHODS = ("optimal", "gauss", "hitas")


def _per_table(model: JointModel, given, role: str, default) -> list:
    if given is None:
        return [default(t) for t in model.tables]
    if len(model.tables) == 1 and not isinstance(given, (list, tuple)):
        given = [given]
    if not isinstance(given, (list, tuple)) or len(given) != len(model.tables):
        raise SDCInputError(f"{role}: one per table ({len(model.tables)}), got {given!r:.80}")
    return list(given)


def _levels(model: JointModel, protection) -> tuple[np.ndarray, np.ndarray]:
    frames = _per_table(
        model, protection, "protection",
        lambda t: pd.DataFrame({"lower": 0.0, "upper": 0.0}, index=t.cells.index),
    )
    lower, upper = [], []
    for position, (t, f) in enumerate(zip(model.tables, frames)):
        if not isinstance(f, pd.DataFrame) or not {"lower", "upper"} <= set(f.columns) or not f.index.equals(t.cells.index):
            raise SDCInputError(
                f"protection of table {position}: must be a DataFrame with columns 'lower', 'upper' indexed like "
                "table.cells (tables.protection_levels)"
            )
        values = f[["lower", "upper"]].to_numpy(dtype=np.float64)
        if not np.isfinite(values).all() or (values < 0).any():
            raise SDCInputError(f"protection of table {position}: levels must be finite and >= 0")
        lower.append(values[:, 0])
        upper.append(values[:, 1])
    n_cells = model.cell.max() + 1
    out = []
    for level in (np.concatenate(lower), np.concatenate(upper)):
        per_cell = np.zeros(n_cells)
        np.maximum.at(per_cell, model.cell, level)
        out.append(per_cell[model.cell])
    return out[0], out[1]


def _costs(model: JointModel, cost) -> np.ndarray:
    if isinstance(cost, str):
        check_option(cost, "cost", ("value", "count"))
        values = np.abs(model.published) if cost == "value" else np.ones(len(model.published))
    else:
        series = _per_table(model, cost, "cost", None)
        values = np.concatenate([np.asarray(s, dtype=np.float64) for s in series])
        if values.shape != model.published.shape or not np.isfinite(values).all() or (values < 0).any():
            raise SDCInputError("cost: a weight >= 0 for every cell of every table")
    return values + 1e-6 * max(1.0, float(values.max(initial=0.0)))


def _frozen(model: JointModel, frozen) -> tuple[np.ndarray, np.ndarray]:
    if frozen is None:
        n = len(model.published)
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    series = _per_table(model, frozen, "frozen", None)
    must = stacked_mask(model, [pd.Series(s).fillna(False).astype(bool) for s in series], "frozen")
    never = stacked_mask(model, [pd.Series(s).eq(False).fillna(False).astype(bool) for s in series], "frozen")
    return must, never


class _Cuts:
    """The capacity cuts of the optimal method over the distinct cells ``rep`` of ``model``."""

    def __init__(self, model: JointModel, rep: np.ndarray, lower, upper, min_width: float):
        self.model = model
        self.rows = model.matrix[rep].tocsr()
        self.b = model.published[rep]
        self.lower, self.upper, self.min_width = lower[rep], upper[rep], min_width
        self.capacity = 2.0 * float(np.abs(self.b).max(initial=0.0)) + float(max(upper.max(initial=0), lower.max(initial=0))) + min_width
        self.a_ub = sparse.vstack([self.rows, -self.rows], format="csr")
        self.bounds = [(-s, None) for s in model.start]
        self.coefficients: list[np.ndarray] = []
        self.rhs: list[float] = []

    def _deviation(self, p: int, sign: float, x: np.ndarray, inner: np.ndarray | None) -> tuple[float, np.ndarray]:
        """max sign·M_p d at pattern x, and the cut's coefficient of every cell. With ``inner`` (inner
        cells) the deviations of every other inner cell are held at 0: the programme of a block,
        whose cut is a heuristic's guide (the repair's), not a valid inequality of the whole."""
        if inner is None:
            rows, touched, a_ub, bounds = self.rows, np.arange(len(x)), self.a_ub, self.bounds
        else:
            rows = self.rows[:, inner].tocsr()
            touched = np.flatnonzero(np.diff(rows.indptr) > 0)
            rows = rows[touched]
            a_ub = sparse.vstack([rows, -rows], format="csr")
            bounds = np.column_stack([-self.model.start[inner], np.full(len(inner), np.inf)])
        h = np.concatenate([self.capacity * x[touched], self.b[touched] * x[touched]])
        objective = -sign * np.asarray(self.rows[p].toarray()).ravel()
        if inner is not None:
            objective = objective[inner]
        result = linprog(objective, A_ub=a_ub, b_ub=h, bounds=bounds, method="highs")
        if result.status != 0:
            raise RuntimeError(f"secondary suppression: HiGHS could not solve the intruder's programme ({result.message})")
        y = -result.ineqlin.marginals
        k = len(touched)
        coefficient = np.zeros(len(x))
        coefficient[touched] = y[:k] * self.capacity + y[k:] * self.b[touched]
        return -result.fun, coefficient

    def add(self, p: int, x: np.ndarray, inner: np.ndarray | None = None) -> None:
        """Add the cuts of primary ``p`` (a distinct cell) short at pattern ``x`` (over the block
        ``inner`` of inner cells when given, see :meth:`_deviation`)."""
        tolerance = 1e-9 * max(1.0, float(np.abs(self.b).max(initial=0.0)))
        if self.upper[p] > 0 or self.lower[p] > 0:
            for sign, level in ((1.0, self.upper[p]), (-1.0, self.lower[p])):
                value, coefficient = self._deviation(p, sign, x, inner)
                if value < max(level, tolerance):
                    self._append(coefficient, max(level, self.min_width * 1e-3) - value + coefficient @ x)
        else:
            up, c_up = self._deviation(p, 1.0, x, inner)
            down, c_down = self._deviation(p, -1.0, x, inner)
            if up + down < self.min_width:
                coefficient = c_up + c_down
                self._append(coefficient, self.min_width - up - down + coefficient @ x)

    def _append(self, coefficient: np.ndarray, rhs: float) -> None:
        # nonnegative coefficients of binaries: a_c may be lowered to the right-hand side (a valid
        # strengthening: one such cell alone already meets the cut)
        coefficient = np.minimum(np.where(np.abs(coefficient) < 1e-12, 0.0, coefficient), rhs)
        self.coefficients.append(coefficient)
        self.rhs.append(rhs)


def relation_cuts(model: JointModel, protect: np.ndarray) -> sparse.csr_matrix:
    """Initial cuts over the distinct cells: for every cell c of ``protect`` (bool per stacked row) and
    every additive relation of its table containing c, the other members hold at least x_c
    suppressions (``sum_{R \\ c} x - x_c >= 0``): else c is exactly derivable. For a primary (x_c = 1)
    these are Fischetti and Salazar's bridgeless inequalities; for any other cell they hold in every
    optimal pattern, because publishing a derivable cell changes no interval and saves its cost.
    Relations in which c is the only distinct cell (a parent with a single child) give none."""
    n_cells = model.cell.max() + 1
    wanted = np.zeros(n_cells, dtype=bool)
    wanted[model.cell[protect]] = True
    blocks = []
    for t, start in zip(model.tables, model.offsets[:-1]):
        incidence = relations(t).tocoo()
        member = sparse.csr_matrix(
            (np.ones(incidence.nnz), (incidence.row, model.cell[start + incidence.col])), shape=(incidence.shape[0], n_cells)
        )
        member.data[:] = 1.0  # a cell twice in a relation (a duplicate) counts once
        member = member[np.diff(member.indptr) > 1]  # relations with one distinct cell say nothing
        pairs = member.tocoo()
        keep = wanted[pairs.col]
        rel, cell = pairs.row[keep], pairs.col[keep]
        rows = member[rel].tocoo()
        cut = sparse.csr_matrix(
            (np.r_[rows.data, -2.0 * np.ones(len(cell))], (np.r_[rows.row, np.arange(len(cell))], np.r_[rows.col, cell])),
            shape=(len(cell), n_cells),
        )
        blocks.append(cut)
    return sparse.vstack(blocks, format="csr")


def _optimal(model, rep, primary, lower, upper, costs, must, never, min_width, time_limit):
    """The row-generation loop: returns the pattern over distinct cells. Every free cell gets the
    relation cuts (no derivable suppression) before the first master programme."""
    cuts = _Cuts(model, rep, lower, upper, min_width)
    initial = relation_cuts(model, primary | ~(must | never))
    lb = (primary | must)[rep].astype(float)
    ub = np.where(never[rep], 0.0, 1.0)
    x = lb.copy()
    if initial.shape[0] and (initial @ x < 0).any():
        x = _solve(costs[rep], lb, ub, LinearConstraint(initial, 0.0, np.inf), time_limit)
    for _ in range(10_000):
        failing, _, _ = protection_failures(
            model, x[model.cell] > 0.5, primary, lower, upper, min_width=min_width, only_primaries=True
        )
        failing_cells = np.unique(model.cell[failing])
        if not len(failing_cells):
            return x > 0.5
        cell_to_rep = np.full(model.cell.max() + 1, -1)
        cell_to_rep[model.cell[rep]] = np.arange(len(rep))
        before = len(cuts.rhs)
        for p in cell_to_rep[failing_cells]:
            cuts.add(int(p), x)
        if len(cuts.rhs) == before:
            raise RuntimeError("secondary suppression: the audit fails but no cut separates the pattern (numerical trouble)")
        constraint = LinearConstraint(
            sparse.vstack([initial, sparse.csr_matrix(np.vstack(cuts.coefficients))], format="csr"),
            np.r_[np.zeros(initial.shape[0]), cuts.rhs], np.inf,
        )
        x = _solve(costs[rep], lb, ub, constraint, time_limit)
    raise RuntimeError("secondary suppression: the optimal method did not converge")


def _repair(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start) -> np.ndarray:
    """The pattern ``start`` (over distinct cells) made to pass the audit by :func:`_repair_rounds`,
    with the cells of value 0 kept published (GaussSuppression's ``secondaryZeros = FALSE``) unless
    nothing else protects. A suppressed 0 cannot go down and costs almost nothing (the ``1e-6`` of
    the module text), so each round's cheapest cells meeting a cut were zeros that did not protect:
    on the 9,060-cell census table the repair of the HiTaS pattern took 20 rounds and 110 s CPU
    (34 cells added) with them, 3 rounds and 20 s (7 cells) without."""
    zeros = (model.published == 0) & ~primary
    try:
        return _repair_rounds(model, rep, primary, lower, upper, costs, never | zeros, min_width, time_limit, start)
    except RuntimeError:
        return _repair_rounds(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start)


def _repair_rounds(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start) -> np.ndarray:
    """The pattern ``start`` (over distinct cells) made to pass the audit, locally: each round
    audits only the primaries still failing (suppressing a further cell removes a published
    equation from the intruder's programme, so no interval narrows and a primary that passed keeps
    passing), bounds each failing primary's deviations within its block (the inner cells of its
    component of the intruder's programme, :func:`sdc_dagster.tables.intruder.reduced_programme`, and
    of the published rows tying it) and adds the cheapest cells meeting the round's cuts (HiGHS)
    and those of the interval iteration (:func:`_interval_iteration`), every earlier suppression
    kept. The interval iteration ran only after a round that fixed no failing primary until issue
    36's fourth pass; on the 2,079-cell census subtable the first round always fixed none (69
    primaries with fractional intervals), so every such round was two programmes per failing
    primary and an audit spent for one cell: run every round, the repair takes 3 rounds instead of
    6 (10 s CPU instead of 17, 644 cells suppressed instead of 643, cost 3,242 instead of 3,244),
    the reference cases' patterns unchanged.

    In a flat table each failing primary first gets its cheapest hypercube
    (:func:`sdc_dagster.tables.hypercube.cheapest`, the requirement of
    :func:`sdc_dagster.tables.intruder.requirement`), and only those without one get cuts (issue 36,
    fifth pass): on that subtable the 69 primaries Gauss leaves short all get one, in one round of no
    programme, and the next audit passes on the hypercubes' certificates (1.3 s CPU instead of 9 s;
    cost 4,073 instead of 3,464: a hypercube suppresses whole corners where the cuts found single
    cells)."""
    cuts = _Cuts(model, rep, lower, upper, min_width)
    cell_to_rep = np.full(model.cell.max() + 1, -1)
    cell_to_rep[model.cell[rep]] = np.arange(len(rep))
    ub = np.where(never[rep], 0.0, 1.0)
    x = start.astype(float)
    open_primaries = primary.copy()
    shape = hypercube.flat_shape(model)
    meets = requirement(model, lower, upper, min_width=min_width)
    for _ in range(10_000):
        suppressed = x[cell_to_rep[model.cell]] > 0.5
        failing, _, _ = protection_failures(
            model, suppressed, open_primaries, lower, upper, min_width=min_width, only_primaries=True
        )
        if not failing.any():
            return x > 0.5
        open_primaries = failing
        rows = np.flatnonzero(failing)[np.unique(model.cell[failing], return_index=True)[1]]
        if shape is not None:  # a flat table: each failing primary's cheapest hypercube
            grown, found = hypercube.cheapest(shape, rows, model.published, costs, suppressed, never, meets)
            x = np.maximum(x, grown.astype(float))  # a flat table's distinct cells are its rows
            if found.all():
                continue
            suppressed, rows = grown, rows[~found]
        red = reduced_programme(model, suppressed)
        row_component = red.component[red.rows.indices[red.rows.indptr[:-1]]]
        before = len(cuts.rhs)
        for row in rows:
            own = model.matrix[row].indices
            where = np.searchsorted(red.unknown, own).clip(max=len(red.unknown) - 1)
            components = np.unique(red.component[where[red.unknown[where] == own]]) if len(red.unknown) else []
            ties = red.kept[np.isin(row_component, components)]
            inner = np.unique(np.r_[own, red.unknown[np.isin(red.component, components)], model.matrix[ties].indices])
            cuts.add(int(cell_to_rep[model.cell[row]]), x, inner)
        if len(cuts.rhs) == before:
            raise RuntimeError("secondary suppression: the audit fails but no cut separates the pattern (numerical trouble)")
        coefficients, rhs = np.vstack(cuts.coefficients[before:]), np.asarray(cuts.rhs[before:])
        constraint = LinearConstraint(sparse.csr_matrix(coefficients), rhs, np.inf)
        lb, ub_round = np.maximum(x, 0.0), np.maximum(ub, x)
        new = _solve(costs[rep], lb, ub_round, constraint, time_limit)
        x = np.maximum(new, _interval_iteration(model, rep, costs, never, new, coefficients, rhs, ub_round - lb))
    raise RuntimeError("secondary suppression: the repair of the Gauss pattern did not converge")


def _interval_iteration(model, rep, costs, never, x, coefficients, rhs, free) -> np.ndarray:
    """The pattern ``x`` (over distinct cells) grown after a repair round's cuts. A capacity cut is
    only a necessary condition and one cheap cell may meet every cut of a round while widening nothing (on a 2,079-cell census subtable: 69 primaries failing for hundreds
    of rounds, one cell added a round). So every cut (one per failing primary) gets its own cheapest
    free cell meeting it alone, and those cells with every suppressed one become the primaries of a
    new elimination (:func:`_gauss`), which makes each of them non-derivable in turn: GaussSuppression's
    interval iteration (Langsrud and Lupp, R package GaussSuppression, ``OutputIntervalIteration``:
    the suppressed cells as primaries plus one new primary per risky cell, ``PrimaryFromRiskyDefault``,
    then a new elimination)."""
    meets = (coefficients >= rhs[:, None] * (1 - 1e-9)) & (free > 0.5)
    priced = np.where(meets, costs[rep], np.inf)
    pick = np.argmin(priced, axis=1)[np.isfinite(priced.min(axis=1, initial=np.inf))]
    grown = x > 0.5
    grown[pick] = True
    cell_to_rep = np.full(model.cell.max() + 1, -1)
    cell_to_rep[model.cell[rep]] = np.arange(len(rep))
    sure = grown[cell_to_rep[model.cell]]
    return _gauss(model, rep, sure, costs, sure, never).astype(float)


def _solve(cost, lb, ub, constraint, time_limit) -> np.ndarray:
    """The master programme: the cheapest 0/1 pattern within [lb, ub] meeting the cuts (HiGHS)."""
    result = milp(cost, integrality=np.ones(len(cost)), bounds=Bounds(lb, ub), constraints=constraint,
                  options={"time_limit": time_limit})
    if result.x is None:
        raise RuntimeError(f"secondary suppression: no pattern meets the protection ({result.message})")
    return np.round(result.x)


def differences(shape: Sequence[int]) -> sparse.csr_matrix:
    """``T = D_1 ⊗ ... ⊗ D_m``, ``D_d`` the first difference along the leaves of dimension d
    (``(D x)_i = x_i - x_{i-1}``): an invertible map of the inner cells under which a code's cell,
    the indicator of a block of contiguous leaves in every dimension (a code's leaves are contiguous
    in the depth-first order of :func:`sdc_dagster.tables.model.tabulate`), has at most ``2^m``
    nonzeros (``e_first - e_after_last`` per dimension), the grand total a single one."""
    blocks = [sparse.eye(n, format="csr") - sparse.eye(n, k=-1, format="csr") for n in shape]
    return reduce(lambda a, b: sparse.kron(a, b, format="csr"), blocks)


def _gauss(model, rep, primary, costs, must, never) -> np.ndarray:
    """GaussSuppression's elimination over the distinct cells; returns the pattern (bool per distinct cell).

    The cells' columns are eliminated after the change of basis :func:`differences` (a column lies
    in the span of others iff it does after an invertible map): a marginal cell's column has at most
    ``2^m`` nonzeros there instead of one per inner cell below it, so the elimination stays sparse."""
    rows = (model.matrix[rep] @ differences(model.shape).T).tocsr()
    rows.eliminate_zeros()
    n = len(rep)
    prim = primary[rep]
    suppressed = prim | must[rep]
    columns: dict[int, dict[int, float]] = {
        k: dict(zip(rows.indices[rows.indptr[k]:rows.indptr[k + 1]].tolist(), rows.data[rows.indptr[k]:rows.indptr[k + 1]].tolist()))
        for k in range(n) if not must[rep][k] or prim[k]
    }
    holders: dict[int, set[int]] = {}
    for k, col in columns.items():
        for r in col:
            holders.setdefault(r, set()).add(k)
    primaries = set(np.flatnonzero(prim).tolist())
    size = np.diff(rows.indptr)
    # publish first what must be published, then the zeros (a suppressed 0 cannot go down, so it
    # protects little: GaussSuppression's secondaryZeros = FALSE), then from the most to the least
    # costly to suppress (ties: cells over more inner cells first, as CandidatesDefault)
    zero = model.published[rep] == 0
    order = np.lexsort((-size, -costs[rep], ~zero, ~never[rep]))
    for j in order.tolist():
        if suppressed[j]:
            continue
        v = columns.pop(j)
        for r in v:
            holders[r].discard(j)
        if not v:
            continue
        pivot = min(v, key=lambda r: len(holders[r]))
        scale = v[pivot]
        reveals = False
        if not never[rep][j]:
            for q in holders[pivot] & primaries:
                col = columns[q]
                if len(col) == len(v) and col.keys() == v.keys():
                    f = col[pivot] / scale
                    if all(abs(col[r] - f * v[r]) <= 1e-9 * abs(col[r]) for r in v):
                        reveals = True
                        break
        if reveals:
            suppressed[j] = True
            continue
        for k in list(holders[pivot]):
            col = columns[k]
            f = col[pivot] / scale
            for r, a in v.items():
                new = col.get(r, 0.0) - f * a
                if abs(new) <= 1e-12:
                    if r in col:
                        del col[r]
                        holders[r].discard(k)
                else:
                    if r not in col:
                        holders[r].add(k)
                    col[r] = new
    return suppressed


def secondary_suppression(
    table_or_tables: Table | Sequence[Table],
    primary_or_primaries,
    *,
    method: str = "optimal",
    protection=None,
    cost="value",
    frozen=None,
    min_width: float = 1.0,
    time_limit: float = 600.0,
    workers: int = 1,
) -> pd.Series | list[pd.Series]:
    """Every suppressed cell (primaries included) such that no primary is disclosed (see the module
    text): a bool Series indexed like ``table.cells``, or a list of them for a list of linked tables,
    which are protected jointly. ``protection``: the levels of :func:`tables.protection_levels` (one
    frame per table; default: none, every primary must have an interval at least ``min_width`` wide).
    ``time_limit``: seconds for each integer programme of HiGHS. ``workers``: processes protecting
    the subtables of one level at once (``method="hitas"``; 1: in this process).

    Raises :class:`SDCInputError` for inputs that do not fit the tables, ``RuntimeError`` when no
    pattern can pass the audit (e.g. frozen cells forbid it).
    """
    single = isinstance(table_or_tables, Table)
    tables = [table_or_tables] if single else list(table_or_tables)
    model = joint_model(tables)
    check_option(method, "method", METHODS)
    min_width = check_scalar(min_width, "min_width", low=0, closed="neither")
    time_limit = check_scalar(time_limit, "time_limit", low=0, closed="neither")
    workers = check_scalar(workers, "workers", low=1, integer=True)
    primaries = [primary_or_primaries] if single else primary_or_primaries
    if not single and (isinstance(primaries, pd.Series) or not isinstance(primaries, Sequence)):
        raise SDCInputError("primary: for a list of tables, a list with one bool Series per table")
    primary = stacked_mask(model, primaries, "primary")
    lower, upper = _levels(model, protection)
    costs = _costs(model, cost)
    must, never = _frozen(model, frozen)
    if (primary & never).any():
        raise SDCInputError("frozen: a primary cell cannot be frozen as published")
    _, rep = np.unique(model.cell, return_index=True)
    if method == "gauss":
        start = _gauss(model, rep, primary, costs, must, never)
        pattern = _repair(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start)
    elif method == "hitas":
        solve = partial(secondary_suppression, min_width=min_width, time_limit=time_limit)
        start = hitas_pattern(model, primary, lower, upper, costs, must, never, solve, workers=workers)
        pattern = _repair(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start[rep])
    else:
        pattern = _optimal(model, rep, primary, lower, upper, costs, must, never, min_width, time_limit)
    cell_to_rep = np.full(model.cell.max() + 1, -1)
    cell_to_rep[model.cell[rep]] = np.arange(len(rep))
    stacked = pattern[cell_to_rep[model.cell]]
    failing, _, _ = protection_failures(model, stacked, primary, lower, upper, min_width=min_width, only_primaries=True)
    if failing.any():  # never release a pattern that fails the audit
        raise RuntimeError(f"secondary suppression: {int(failing.sum())} primary cells fail the audit")
    out = [pd.Series(s, index=t.cells.index, name="suppressed") for t, s in zip(tables, model.split(stacked))]
    return out[0] if single else out
