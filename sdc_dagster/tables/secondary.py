"""Secondary suppression: which further cells to suppress so that no primary is disclosed.

A pattern protects the table(s) when every primary's audit interval (:mod:`sdc_dagster.tables.intruder`,
over every linked table together) meets its protection levels (``up >= b + upper``,
``lo <= b - lower``; :func:`sdc_dagster.tables.primary.protection_levels`) or, for a primary without
levels, is at least ``min_width`` wide (not exactly derivable). Every pattern returned has passed
that audit; a pattern that fails it is never returned (RuntimeError).

* ``method="optimal"``: the exact integer programme of Fischetti and Salazar (1999, 2001;
  Hundepool et al. 2012 §4.4.1, tau-Argus's "optimal" method) solved by row generation with HiGHS
  (one ``highspy`` model kept across the rounds, :class:`_Master`). The master programme chooses the
  cheapest pattern ``x`` (one binary per distinct cell, primaries fixed to 1) subject to the cuts
  found so far. For every primary the audit of ``x`` finds short, the intruder's programme in deviation form is solved,
  ``max ±M_p d`` subject to ``-b_c x_c <= M_c d <= U x_c`` for every cell c and ``d >= -z`` for the
  inner cells, and its dual values ``(α, β)`` give the capacity cut
  ``sum_c (α_c U + β_c b_c) x_c >= level_p - value(x) + sum_c (α_c U + β_c b_c) x_c(current)``
  (LP duality: the value is concave in the bounds, so the supergradient inequality holds for every
  pattern). An audited incumbent (a master pattern that passes, or one repaired as the Gauss
  pattern is) is the masters' cutoff; the loop stops when no pattern meeting the cuts is cheaper
  than the incumbent (it is optimal), or when ``time_limit`` (the whole loop's budget) runs out:
  the incumbent is returned with a lower bound and a gap, and :class:`Optimality` says so
  (:func:`_optimal`). ``U``, the a priori upper capacity of a cell, is twice the largest published value plus
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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial, reduce

import numpy as np
import pandas as pd
from highspy import HighsLp, HighsModelStatus, HighsVarType, MatrixFormat
from highspy._core import _Highs
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables import hypercube
from sdc_dagster.tables.intruder import protection_failures, reduced_programme, requirement, stacked_mask
from sdc_dagster.tables.hitas import hitas_pattern
from sdc_dagster.tables.model import JointModel, Table, joint_model, relations
from sdc_dagster.tables.programme import Programme
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
        self.coefficients: list[np.ndarray] = []
        self.rhs: list[float] = []
        self._programme: Programme | None = None  # the whole programme, kept in HiGHS (_whole)
        self._at: np.ndarray | None = None

    def _whole(self, p: int, sign: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        """:meth:`_deviation` of the whole programme (the optimal method's cuts) in one HiGHS model
        kept across the calls (:class:`sdc_dagster.tables.programme.Programme`): the rows
        ``-b_c x_c <= M_c d <= U x_c``, their bounds changed when the pattern changes, ``d >= -z``.
        HiGHS's dual ``y_c`` of row c (a minimisation of ``-sign·M_p d``) is ``-α_c`` at the upper
        bound and ``β_c`` at the lower one. Another basis may give other dual values of a degenerate
        programme: other valid cuts, so other rounds, never another optimum."""
        if self._programme is None:
            zero = np.zeros(len(self.b))
            self._programme = Programme(self.rows, zero, zero, -self.model.start, np.inf, what="secondary suppression")
        if self._at is None or not np.array_equal(self._at, x):
            self._programme.change_rows(-self.b * x, self.capacity * x)
            self._at = x.copy()
        value, _, dual = self._programme.minimise(-sign * np.asarray(self.rows[p].toarray()).ravel())
        return -value, self.capacity * np.maximum(-dual, 0.0) + self.b * np.maximum(dual, 0.0)

    def _deviation(self, p: int, sign: float, x: np.ndarray, inner: np.ndarray | None) -> tuple[float, np.ndarray]:
        """max sign·M_p d at pattern x, and the cut's coefficient of every cell. Without ``inner``
        the whole programme (:meth:`_whole`). With ``inner`` (inner cells) the deviations of every
        other inner cell are held at 0: the programme of a block, whose cut is a heuristic's guide
        (the repair's), not a valid inequality of the whole, solved from scratch (a warm start's
        other dual values led the repair elsewhere, :mod:`sdc_dagster.tables.programme`)."""
        if inner is None:
            return self._whole(p, sign, x)
        rows = self.rows[:, inner].tocsr()
        touched = np.flatnonzero(np.diff(rows.indptr) > 0)
        rows = rows[touched]
        a_ub = sparse.vstack([rows, -rows], format="csr")
        bounds = np.column_stack([-self.model.start[inner], np.full(len(inner), np.inf)])
        h = np.concatenate([self.capacity * x[touched], self.b[touched] * x[touched]])
        objective = -sign * np.asarray(self.rows[p].toarray()).ravel()[inner]
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


def relation_members(model: JointModel) -> sparse.csr_matrix:
    """The additive relations of every table of ``model`` (:func:`sdc_dagster.tables.model.relations`)
    over its distinct cells: relations x distinct cells, 1 where the cell is a member (a cell twice
    in a relation, a duplicate, counts once); relations with a single distinct cell (a parent with a
    single child) say nothing and are left out."""
    n_cells = model.cell.max() + 1
    blocks = []
    for t, start in zip(model.tables, model.offsets[:-1]):
        incidence = relations(t).tocoo()
        member = sparse.csr_matrix(
            (np.ones(incidence.nnz), (incidence.row, model.cell[start + incidence.col])), shape=(incidence.shape[0], n_cells)
        )
        member.data[:] = 1.0
        blocks.append(member[np.diff(member.indptr) > 1])
    return sparse.vstack(blocks, format="csr")


def relation_cuts(model: JointModel, protect: np.ndarray) -> sparse.csr_matrix:
    """Initial cuts over the distinct cells: for every cell c of ``protect`` (bool per stacked row) and
    every additive relation of its table containing c (:func:`relation_members`), the other members
    hold at least x_c suppressions (``sum_{R \\ c} x - x_c >= 0``): else c is exactly derivable. For a
    primary (x_c = 1) these are Fischetti and Salazar's bridgeless inequalities; for any other cell
    they hold in every optimal pattern, because publishing a derivable cell changes no interval and
    saves its cost (:func:`publish_derivable`)."""
    n_cells = model.cell.max() + 1
    wanted = np.zeros(n_cells, dtype=bool)
    wanted[model.cell[protect]] = True
    member = relation_members(model)
    pairs = member.tocoo()
    keep = wanted[pairs.col]
    rel, cell = pairs.row[keep], pairs.col[keep]
    rows = member[rel].tocoo()
    return sparse.csr_matrix(
        (np.r_[rows.data, -2.0 * np.ones(len(cell))], (np.r_[rows.row, np.arange(len(cell))], np.r_[rows.col, cell])),
        shape=(len(cell), n_cells),
    )


def publish_derivable(member: sparse.csr_matrix, x: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """The pattern ``x`` (0/1 per distinct cell) with every suppressed cell outside ``fixed``
    (primaries, cells frozen as suppressed) that is exactly derivable from one relation (``member``,
    :func:`relation_members`: every other member published) published, until none is left: its
    value is known anyway, so the intruder's feasible set, every interval and the audit are
    unchanged and the cost goes down (a heuristic's pattern made to meet :func:`relation_cuts`).
    Each pass publishes the derivable cells of every relation at once; publishing one can make
    another derivable, hence the passes."""
    x = np.asarray(x, dtype=float).copy()
    while True:
        alone = np.flatnonzero(member @ x == 1)
        derivable = np.zeros(len(x), dtype=bool)
        derivable[member[alone].indices] = True
        derivable &= (x > 0.5) & ~fixed
        if not derivable.any():
            return x
        x[derivable] = 0.0


@dataclass(frozen=True)
class Optimality:
    """What the optimal method proved about the pattern it returns (``attrs["optimality"]`` of every
    Series :func:`secondary_suppression` returns with ``method="optimal"``): ``status`` "optimal"
    (no pattern meeting the cuts is cheaper by more than :data:`OPTIMALITY_TOLERANCE` of the cost
    of the dearest cell) or "time_limit" (the budget ran out: the best pattern found, audited, whose
    cost may exceed the optimum by up to ``gap``); ``cost`` of the pattern; ``bound``, a lower bound
    on the cost of every pattern passing the audit (HiGHS's dual bound of the last master programme,
    which relaxes the problem; 0 before any); ``gap = (cost - bound) / cost``; ``rounds`` of the row
    generation; ``seconds`` spent."""

    status: str
    cost: float
    bound: float
    gap: float
    rounds: int
    seconds: float

    def __str__(self) -> str:
        rounds = f"{self.rounds} round{'s' if self.rounds != 1 else ''}"
        if self.status == "optimal":
            return f"proven optimal, cost {self.cost:,.6g} ({rounds}, {self.seconds:.1f} s)"
        return (f"best found, cost {self.cost:,.6g}, bound {self.bound:,.6g}, gap {self.gap:.2%} "
                f"(time limit after {rounds}, {self.seconds:.1f} s)")


#: The optimal method calls a pattern optimal when no pattern meeting its cuts is cheaper by more
#: than this fraction of the cost of the dearest cell (every cell carries ``1e-6`` of it, module text).
OPTIMALITY_TOLERANCE = 1e-7

#: The relative gap the master programmes are solved to: their cuts are valid whichever pattern
#: they separate, so a near-optimal master pattern serves as well, and the proof of optimality comes
#: from the cutoff (:meth:`_Master.solve`: a master with no pattern cheaper than the incumbent).
#: On the 1,860-cell census table (issue 36) a master took 0.24 s CPU at 5 %, 7-16 s at 1 % and
#: 20-50 s exactly.
LOOSE_GAP = 5e-2


class _Master:
    """The master programme of the row generation in one HiGHS model kept across the rounds: the
    cheapest 0/1 pattern within ``[lb, ub]`` meeting the cuts, the new cuts added as rows, the
    incumbent's cost as HiGHS's cutoff (:meth:`solve`). The incumbent itself is not passed as a
    starting solution: it meets the cuts, but below the cutoff HiGHS could only reject it, and with
    the gap of :data:`LOOSE_GAP` it would return it, already audited."""

    def __init__(self, cost: np.ndarray, lb: np.ndarray, ub: np.ndarray, rows: sparse.csr_matrix, rhs: np.ndarray):
        n = len(cost)
        lp = HighsLp()
        lp.num_col_, lp.num_row_ = n, 0
        lp.col_cost_ = np.asarray(cost, dtype=np.float64)
        lp.col_lower_ = np.asarray(lb, dtype=np.float64)
        lp.col_upper_ = np.asarray(ub, dtype=np.float64)
        lp.a_matrix_.format_ = MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, 0
        lp.a_matrix_.start_ = np.zeros(n + 1, dtype=np.int32)
        lp.integrality_ = [HighsVarType.kInteger] * n
        self.highs = _Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.passModel(lp)
        self.cost = lp.col_cost_
        self.add(rows, rhs)

    def add(self, rows: sparse.spmatrix, rhs: np.ndarray) -> None:
        """Add the cuts ``rows · x >= rhs``."""
        rows = sparse.csr_matrix(rows)
        rows.eliminate_zeros()
        if not rows.shape[0]:
            return
        self.highs.addRows(rows.shape[0], np.asarray(rhs, dtype=np.float64), np.full(rows.shape[0], np.inf), rows.nnz,
                           rows.indptr[:-1].astype(np.int32), rows.indices.astype(np.int32), rows.data.astype(np.float64))

    def solve(self, seconds: float, gap: float, cutoff: float) -> tuple[np.ndarray | None, float, bool]:
        """(a pattern within ``gap`` of the master's optimum, or None when none was found in time;
        HiGHS's lower bound on the master's optimum; whether no pattern meeting the cuts costs less
        than ``cutoff``) in at most ``seconds``. The cutoff (HiGHS's ``objective_bound``: the incumbent's
        cost) prunes HiGHS's tree as a starting solution would, and a master without a pattern below
        it proves the incumbent optimal."""
        self.highs.setOptionValue("time_limit", float(max(seconds, 1e-3)))
        self.highs.setOptionValue("mip_rel_gap", float(gap))
        self.highs.setOptionValue("mip_abs_gap", OPTIMALITY_TOLERANCE * float(self.cost.max(initial=1.0)))
        self.highs.setOptionValue("objective_bound", float(cutoff))
        self.highs.run()
        if self.highs.getModelStatus() == HighsModelStatus.kInfeasible:
            return None, cutoff, True
        info = self.highs.getInfo()
        bound = float(info.mip_dual_bound)
        bound = bound if np.isfinite(bound) else 0.0  # costs are >= 0
        if info.primal_solution_status != 2:  # no feasible solution (kSolutionStatusFeasible) in time
            return None, bound, False
        return np.round(np.asarray(self.highs.getSolution().col_value)), bound, False


def _optimal(model, rep, primary, lower, upper, costs, must, never, min_width, time_limit):
    """The row-generation loop (module text) within ``time_limit`` seconds in all: returns the
    pattern over distinct cells and its :class:`Optimality`.

    * The master programme is kept in one HiGHS model (:class:`_Master`), every free cell's relation
      cuts (:func:`relation_cuts`) from the start, the capacity cuts of every failing primary added
      each round from the whole intruder's programme kept in HiGHS (:meth:`_Cuts._whole`); each
      master is solved to :data:`LOOSE_GAP` only, below the incumbent's cost (its cutoff).
    * The incumbent: a master pattern that passes the audit, or a failing one repaired
      (:func:`_repair`, as the Gauss pattern is) with its derivable secondaries published
      (:func:`publish_derivable`): the first master's pattern always, later ones while a repair
      costs no more than the round before it and fits in the budget left (a repair under way runs
      to its end: the first one may pass the budget). The master's pattern is near the optimum, so
      its repair usually is too: on the 9,060-cell census table the Gauss pattern repaired cost 29 %
      more than the bound and took half the 60 s budget. Without any incumbent when the budget
      runs out, the Gauss pattern repaired is returned (after the budget: a pattern is owed).
    * The loop stops when a master finds no pattern cheaper than the incumbent (it is optimal, up
      to :data:`OPTIMALITY_TOLERANCE`), or when the budget runs out: the incumbent, with the best
      lower bound (HiGHS's dual bound of a master) and the gap."""
    clock = time.perf_counter()
    deadline = clock + time_limit
    fixed = (primary | must)[rep]
    lb = fixed.astype(float)
    ub = np.where(never[rep], 0.0, 1.0)
    c = costs[rep]
    tolerance = OPTIMALITY_TOLERANCE * float(c.max(initial=1.0))
    member = relation_members(model)
    cell_to_rep = np.full(model.cell.max() + 1, -1)
    cell_to_rep[model.cell[rep]] = np.arange(len(rep))

    def failing_cells(x):
        failing, _, _ = protection_failures(
            model, x[cell_to_rep[model.cell]] > 0.5, primary, lower, upper, min_width=min_width, only_primaries=True
        )
        return cell_to_rep[np.unique(model.cell[failing])]

    def repaired(x):
        try:
            pattern = _repair(model, rep, primary, lower, upper, costs, never, min_width,
                              max(deadline - time.perf_counter(), 1.0), x > 0.5)
        except RuntimeError:
            return None
        return publish_derivable(member, pattern, fixed)

    initial = relation_cuts(model, primary | ~(must | never))
    master = _Master(c, lb, ub, initial, np.zeros(initial.shape[0]))
    cuts = _Cuts(model, rep, lower, upper, min_width)
    incumbent, best, bound, rounds, last_repair, round_seconds = None, np.inf, 0.0, 0, np.inf, 0.0

    def result(x, status):
        cost = float(c @ x)
        low = min(bound, cost)
        return x > 0.5, Optimality(status, cost, low, (cost - low) / cost if cost > 0 else 0.0, rounds,
                                   time.perf_counter() - clock)

    while True:
        if incumbent is not None and best - bound <= tolerance:
            return result(incumbent, "optimal")
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            break
        rounds += 1
        started = time.perf_counter()
        x, master_bound, none_cheaper = master.solve(remaining, LOOSE_GAP, best - tolerance)
        if none_cheaper:
            if incumbent is None:
                raise RuntimeError("secondary suppression: no pattern meets the protection (the master programme is infeasible)")
            bound = best
            continue
        bound = max(bound, master_bound)
        if x is None:
            break
        failing = failing_cells(x)
        if not len(failing):  # below the cutoff, so cheaper than the incumbent
            incumbent, best = x, float(c @ x)
            continue
        repair_seconds = 0.0
        if incumbent is None or last_repair <= min(round_seconds, deadline - time.perf_counter()):
            repair_started = time.perf_counter()
            candidate = repaired(x)
            repair_seconds = last_repair = time.perf_counter() - repair_started
            if candidate is not None and c @ candidate < best:
                incumbent, best = candidate, float(c @ candidate)
        before = len(cuts.rhs)
        for p in failing:
            if time.perf_counter() > deadline:  # the cuts so far are valid; the budget is spent
                break
            cuts.add(int(p), x)
        else:
            if len(cuts.rhs) == before:
                raise RuntimeError("secondary suppression: the audit fails but no cut separates the pattern (numerical trouble)")
        if len(cuts.rhs) > before:
            master.add(np.vstack(cuts.coefficients[before:]), np.asarray(cuts.rhs[before:]))
        round_seconds = time.perf_counter() - started - repair_seconds  # the master's and the cuts'
    if incumbent is None:
        incumbent = repaired(_gauss(model, rep, primary, costs, must, never).astype(float))
        if incumbent is None:
            raise RuntimeError(f"secondary suppression: the optimal method found no pattern passing the audit in {time_limit:g} s")
    return result(incumbent, "time_limit")


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
    ``time_limit``: seconds for each integer programme of HiGHS; with ``method="optimal"`` the
    budget of the whole row generation, after which the best audited pattern found is returned.
    ``workers``: processes protecting the subtables of one level at once (``method="hitas"``; 1: in
    this process). With ``method="optimal"`` every Series returned carries ``attrs["optimality"]``,
    an :class:`Optimality`: "optimal", or "time_limit" with the best pattern's cost, a lower bound
    and the gap (never called optimal).

    Raises :class:`SDCInputError` for inputs that do not fit the tables, ``RuntimeError`` when no
    pattern can pass the audit (e.g. frozen cells forbid it).
    """
    return _secondary(table_or_tables, primary_or_primaries, method=method, protection=protection, cost=cost,
                      frozen=frozen, min_width=min_width, time_limit=time_limit, workers=workers, final_audit=True)


def _secondary(table_or_tables, primary_or_primaries, *, method, protection, cost, frozen, min_width, time_limit,
               workers, final_audit: bool):
    """:func:`secondary_suppression`; with ``final_audit=False`` (the subtables of HiTaS only) without
    the last audit of every primary. The pattern of a subtable is never released: the whole table's
    pattern is repaired and audited jointly after it, and the subtable's own repair audited each of
    its primaries until it passed (suppressing more never narrows an interval, so a primary that
    passed keeps passing). On a municipality subtable of the 10^6-cell census table that last audit
    was ~0.3 s CPU of ~2 (issue 36, sixth pass)."""
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
        solve = partial(_secondary, min_width=min_width, time_limit=time_limit, workers=1, final_audit=False)
        start = hitas_pattern(model, primary, lower, upper, costs, must, never, solve, workers=workers)
        pattern = _repair(model, rep, primary, lower, upper, costs, never, min_width, time_limit, start[rep])
    else:
        pattern, optimality = _optimal(model, rep, primary, lower, upper, costs, must, never, min_width, time_limit)
    cell_to_rep = np.full(model.cell.max() + 1, -1)
    cell_to_rep[model.cell[rep]] = np.arange(len(rep))
    stacked = pattern[cell_to_rep[model.cell]]
    if final_audit:
        failing, _, _ = protection_failures(model, stacked, primary, lower, upper, min_width=min_width,
                                            only_primaries=True)
        if failing.any():  # never release a pattern that fails the audit
            raise RuntimeError(f"secondary suppression: {int(failing.sum())} primary cells fail the audit")
    out = [pd.Series(s, index=t.cells.index, name="suppressed") for t, s in zip(tables, model.split(stacked))]
    if method == "optimal":
        for series in out:
            series.attrs["optimality"] = optimality
    return out[0] if single else out
