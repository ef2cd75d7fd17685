"""The intruder's audit of a suppression pattern: the feasibility interval of every suppressed cell.

The intruder knows the model of every released table (:mod:`sdc_dagster.tables.model`: ``M z = b``
over the inner cells ``z >= 0``) and the published cells. The interval of a suppressed cell c is
``[min M_c z, max M_c z]`` over ``{z >= 0 : M_P z = b_P}`` (P the published rows of every table
together): Hundepool et al. 2012 §4.4.1 ("the attacker problem", Fischetti and Salazar 1999),
sdcTable ``attack()``, tau-Argus's audit. A cell is exactly derivable when its interval has width 0.

The linear programmes are solved with HiGHS on a reduced model, kept in one HiGHS model between
the solves (:class:`sdc_dagster.tables.programme.Programme`: each solve starts from the last
optimal basis), so that a pattern of a census-size table is audited with few cheap programmes:

1. inner cells pinned by a published row of a single inner cell, or by a published zero (every
   inner cell below a published 0 is 0), are known and removed;
2. published rows implied by other published rows (:func:`sdc_dagster.tables.model.implied_rows`)
   are left out: they add nothing to the feasible set;
3. the remaining unknown inner cells fall into independent components (linked by the rows left);
   a suppressed cell's bound is the sum of the bounds of its parts in each component;
4. feasible points without a programme (:func:`certificates`: the true table moved along the null
   space of the published rows, as far as the inner cells stay >= 0) certify a width for every
   part of a component at once; for a pass/fail check (``enough``) a cell they certify needs no
   programme at all (on a 2,079-cell census subtable: 2 programmes instead of 153 for the final
   audit of 373 primaries, 0.18 s CPU instead of 1.2 s); in a single table the hypercubes of
   :mod:`sdc_dagster.tables.hypercube` whose every corner is suppressed (a flat table's, or those
   of a hierarchical table's leaf subtables, :func:`sdc_dagster.tables.hypercube.leaf_ranges`) come
   first (explicit moves, no decomposition), the null-space certificates only for the cells they
   leave short;
   a part whose value at a feasible point already solved reaches a bound it cannot pass (0 below,
   the total of a published row containing it above) has that bound without a programme; every
   open part is bounded by its own component's programme (the constraints are block-diagonal),
   one HiGHS model per component, and every optimum is a feasible point of that component, so it
   settles the other parts of it that it brings to a bound, and its optimal basis proves the
   bounds of the other open parts it minimises too (reduced costs and weak duality,
   :meth:`sdc_dagster.tables.programme.Programme.also_minimised`); a report (every cell bounded,
   no ``enough``) skips the certificates, which the bases make cheaper to do without;
5. an unknown inner cell in no remaining row is bounded by 0 below and unbounded above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.linalg import qr
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables import hypercube
from sdc_dagster.tables.model import JointModel, Table, implied_rows, joint_model
from sdc_dagster.tables.pool import Pool
from sdc_dagster.tables.programme import Programme
from sdc_dagster.validation import check_scalar


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
class Reduced:
    """The intruder's programme after steps 1-3: unknown inner cells ``unknown`` (their component in
    ``component``), the equality rows ``rows`` over them with right-hand side ``rhs`` (``kept``: the
    stacked row of each), the known inner values ``known`` (NaN where unknown)."""

    unknown: np.ndarray
    component: np.ndarray
    rows: sparse.csr_matrix
    rhs: np.ndarray
    known: np.ndarray
    kept: np.ndarray


def reduced_programme(model: JointModel, suppressed: np.ndarray) -> Reduced:
    """The intruder's programme of the pattern ``suppressed`` (bool per stacked row) reduced by steps
    1-3 of the module text: its independent blocks are the components of ``Reduced.component``."""
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
    kept_rows = np.flatnonzero(keep)
    kept = matrix[kept_rows]
    rhs = b[kept_rows] - kept @ np.nan_to_num(known)
    kept = kept[:, unknown].tocsr()
    useful = np.diff(kept.indptr) > 0
    kept, rhs, kept_rows = kept[useful], rhs[useful], kept_rows[useful]
    # components of the unknown inner cells linked by a common row
    incidence = kept.tocoo()
    n = len(unknown)
    link = sparse.coo_matrix(
        (np.ones(incidence.nnz), (incidence.col, n + incidence.row)), shape=(n + kept.shape[0],) * 2
    )
    _, label = connected_components(link, directed=False)
    return Reduced(unknown, label[:n], kept, rhs, known, kept_rows)


def intervals(
    model: JointModel, suppressed: np.ndarray, *, of: np.ndarray | None = None, enough=None, workers: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(lo, up) of every stacked row of ``model`` under the pattern ``suppressed`` (bool per stacked
    row); NaN where published (or not in ``of``, a bool mask of the rows wanted), ``inf`` where nothing
    bounds a cell from above.

    A suppressed cell is split into its parts, one per component of the reduced programme (module
    text, steps 1-3); a part's bound in one direction is settled either by its own linear programme
    (step 4) or, without one, by a feasible point that reaches a bound the part cannot pass: 0 below
    (the part sums inner cells >= 0) and, above, the right-hand side of the smallest published row
    containing the part (the other inner cells of that row are >= 0; the bound tightening of
    Fischetti and Salazar's attacker problem, as sdcTable's ``attack()`` and tau-Argus's audit
    report the same interval). The feasible points are the true table, the optima of the programmes
    already solved, and for a pass/fail check (``enough``) the certificates of :func:`certificates`
    (null-space moves of the true table, no programme) and two programmes over the whole model that
    push the sum of every part up and down. A report (no ``enough``) skips those two and the
    certificates: with the component programmes' bases proving bounds (:meth:`_PartBounds.solve_open`)
    they saved ~250 of 10,850 programmes (under 1 s CPU) for ~9 s CPU of decompositions on the
    10^5-cell census table (issue 36, sixth pass). For a pass/fail
    check of a single table the fully suppressed hypercubes of every target in a flat table or in
    a leaf subtable (:func:`sdc_dagster.tables.hypercube.leaf_ranges`) are feasible points too, looked at first: the
    targets they certify need neither a decomposition nor a programme, and keep the hull of
    their estimate and the hypercubes' range.

    ``enough(rows, lo, up) -> bool per row``: when given, the cells whose inner estimate from those
    points (their true interval contains it) is already ``enough`` keep the estimate instead of
    being bounded exactly; when the certificates make every cell ``enough``, no programme is solved.
    For a pass/fail check, not a report.

    ``workers``: processes bounding the components' open parts at once (:meth:`_PartBounds.solve_open`;
    the intervals do not depend on it)."""
    suppressed = np.asarray(suppressed, dtype=bool)
    lo = np.full(len(suppressed), np.nan)
    up = np.full(len(suppressed), np.nan)
    wanted = suppressed if of is None else suppressed & of
    if not wanted.any():
        return lo, up
    red = reduced_programme(model, suppressed)
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
    bounds = _PartBounds(red, objective, part_component)
    cube = hypercube.leaf_ranges(model, targets, suppressed) if enough is not None else None

    def keep_estimates() -> bool:
        """Settle the targets whose estimate is ``enough``; True when every target is settled."""
        if enough is None:
            return False
        estimate_up, estimate_lo = target_up.copy(), target_lo.copy()
        np.add.at(estimate_up, part_target, bounds.seen_up)
        np.add.at(estimate_lo, part_target, bounds.seen_lo)
        if cube is not None:  # values at other feasible points: the interval contains the hull
            estimate_lo, estimate_up = np.minimum(estimate_lo, cube[0]), np.maximum(estimate_up, cube[1])
        done = np.asarray(enough(targets, estimate_lo, estimate_up), dtype=bool)
        bounds.settle(done[part_target] & ~bounds.skipped)
        return bool(bounds.skipped.all())

    if len(part_keys):
        start = model.start[red.unknown]
        bounds.observe(start)  # the true table
        if enough is not None and (cube is None or not keep_estimates()):  # the hypercubes first: no decomposition
            open_parts = np.flatnonzero(~bounds.skipped)
            bounds.record(open_parts, *certificates(red, objective[open_parts], start))
        if enough is not None and not keep_estimates():
            total = np.asarray(objective.sum(axis=0)).ravel()
            for sign in (1.0, -1.0):
                bounds.observe(bounds.optimum(sign * total))
            keep_estimates()
    bounds.solve_open(workers)
    np.add.at(target_lo, part_target, bounds.lo)
    np.add.at(target_up, part_target, bounds.up)
    if cube is not None:  # a target settled by its estimate keeps the hypercubes' hull too
        target_lo, target_up = np.minimum(target_lo, cube[0]), np.maximum(target_up, cube[1])
    lo[targets] = target_lo
    up[targets] = target_up
    # every row of a suppressed distinct cell gets its interval
    by_cell = np.full(model.cell.max() + 1, -1)
    by_cell[model.cell[targets]] = targets
    source = by_cell[model.cell[targets_rows]]
    lo[targets_rows] = lo[source]
    up[targets_rows] = up[source]
    return lo, up


class _PartBounds:
    """The bounds of the parts (rows of ``objective`` over the unknowns of ``red``, one component
    each) settled so far: ``lo``/``up`` (NaN while open), the range ``seen_lo``/``seen_up`` of every
    part over the feasible points observed, and the ceiling no part can pass (see :func:`intervals`)."""

    def __init__(self, red: Reduced, objective: sparse.csr_matrix, component: np.ndarray):
        self.red, self.objective, self.component = red, objective, component
        n = objective.shape[0]
        self.lo, self.up = np.full(n, np.nan), np.full(n, np.nan)
        self.seen_lo, self.seen_up = np.full(n, np.inf), np.full(n, -np.inf)
        self.skipped = np.zeros(n, dtype=bool)
        self.tolerance = 1e-9 * max(1.0, float(np.abs(red.rhs).max(initial=0.0)))
        # the smallest right-hand side of a row containing every unknown of the part (0/1 model)
        support = objective.copy()
        support.data[:] = 1.0
        rows = red.rows.copy()
        rows.data[:] = 1.0
        overlap = (support @ rows.T).tocoo()
        size = np.diff(support.indptr)
        contains = overlap.data >= size[overlap.row] - 0.5
        self.ceiling = np.full(n, np.inf)
        np.minimum.at(self.ceiling, overlap.row[contains], red.rhs[overlap.col[contains]])
        self._programme = None

    def optimum(self, c: np.ndarray) -> np.ndarray:
        """A minimiser of ``c z`` over the whole reduced programme (``z >= 0``), solved in one HiGHS
        model kept between the calls (:class:`sdc_dagster.tables.programme.Programme`): each solve
        starts from the last basis."""
        if self._programme is None:
            self._programme = Programme(self.red.rows, self.red.rhs, self.red.rhs, 0.0, np.inf, what="audit")
        return self._programme.minimise(c)[1]

    def observe(self, z: np.ndarray) -> None:
        """Record the feasible point ``z`` and settle every part that reaches 0 or its ceiling there."""
        values = self.objective @ z
        self.record(np.arange(len(values)), values, values)

    def record(self, parts: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        """Record values ``low`` and ``high`` of ``parts`` at feasible points (:func:`_record`)."""
        _record(self, parts, low, high)

    def settle(self, skip: np.ndarray) -> None:
        """Leave the parts ``skip`` out (their cell keeps an estimate)."""
        self.skipped |= skip
        self.lo[skip] = self.seen_lo[skip]
        self.up[skip] = self.seen_up[skip]

    def solve_open(self, workers: int = 1) -> None:
        """Bound every open part by linear programming, component by component: the components'
        constraints are block-diagonal, so each part's programme is its component's alone, kept in
        one HiGHS model per component (:func:`_bound_block`). On the 10^5-cell census table (49
        components of ~550 unknowns) a component's programme took ~10 ms (~3 ms by the primal
        simplex, sixth pass) where one over all components at once took ~1.5 s for one part of
        each (issue 36, fifth pass). With
        ``workers > 1`` the components are bounded in that many spawned processes (each one's
        bounds depend on its own programmes only, so the intervals are the same)."""
        n_components = int(self.component.max(initial=-1)) + 1
        parts_of = _grouped(self.component, n_components)
        unknowns = _grouped(self.red.component, int(self.red.component.max(initial=0)) + 1)
        row_component = self.red.component[self.red.rows.indices[self.red.rows.indptr[:-1]]]
        rows_of = _grouped(row_component, int(self.red.component.max(initial=0)) + 1)
        still_open = np.isnan(self.lo) | np.isnan(self.up)
        blocks, their_parts = [], []
        for k in np.unique(self.component[still_open]):  # components, not records
            parts, columns, rows = parts_of([k]), unknowns([k]), rows_of([k])
            blocks.append(_Block(self.red.rows[rows][:, columns].tocsr(), self.red.rhs[rows],
                                 self.objective[parts][:, columns].tocsr(), self.lo[parts], self.up[parts],
                                 self.seen_lo[parts], self.seen_up[parts], self.ceiling[parts], self.tolerance))
            their_parts.append(parts)
        with Pool(min(workers, len(blocks))) as pool:
            bounded = list(pool.map(_bound_block, blocks))
        for parts, (lo, up) in zip(their_parts, bounded):
            self.lo[parts], self.up[parts] = lo, up


def _record(bounds, parts: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
    """Record values ``low`` and ``high`` of ``parts`` at feasible points in ``bounds`` (a
    :class:`_PartBounds` or a :class:`_Block`) and settle every part that reaches 0 or its ceiling
    there (within the tolerance: the bound is then that of 0 or the ceiling, which no feasible
    point passes)."""
    bounds.seen_lo[parts] = np.minimum(bounds.seen_lo[parts], low)
    bounds.seen_up[parts] = np.maximum(bounds.seen_up[parts], high)
    low = np.isnan(bounds.lo[parts]) & (bounds.seen_lo[parts] <= bounds.tolerance)
    bounds.lo[parts[low]] = 0.0
    high = np.isnan(bounds.up[parts]) & (bounds.seen_up[parts] >= bounds.ceiling[parts] - bounds.tolerance)
    bounds.up[parts[high]] = bounds.ceiling[parts[high]]


@dataclass
class _Block:
    """One component of the reduced programme for :func:`_bound_block`: its ``rows`` over its
    unknowns with right-hand side ``rhs``, the ``objective`` of its parts over the same unknowns,
    and the parts' bounds so far (``lo``, ``up``, NaN while open), the range ``seen_lo``/``seen_up``
    over the feasible points observed, their ``ceiling`` and the ``tolerance`` (:class:`_PartBounds`)."""

    rows: sparse.csr_matrix
    rhs: np.ndarray
    objective: sparse.csr_matrix
    lo: np.ndarray
    up: np.ndarray
    seen_lo: np.ndarray
    seen_up: np.ndarray
    ceiling: np.ndarray
    tolerance: float


def _bound_block(block: _Block) -> tuple[np.ndarray, np.ndarray]:
    """(lo, up) of every part of ``block`` (its open bounds by linear programming), in one HiGHS
    model kept between the solves, each starting from the last basis by the primal simplex
    (:mod:`sdc_dagster.tables.programme`). Every optimum is a feasible point of the component that
    settles the other parts it brings to 0 or their ceiling (:func:`_record`), and the open parts
    whose value there is the best seen in a direction are tested against the optimal basis
    (:meth:`Programme.also_minimised`: reduced costs and weak duality): a basis optimal for a
    part's objective proves that value its bound, no programme needed. On the 10^5-cell census
    table 81 % of the programmes had returned a value already seen at a feasible point: only its
    proof was missing (issue 36, sixth pass)."""
    programme = Programme(block.rows, block.rhs, block.rhs, 0.0, np.inf, what="audit")
    objective, every = block.objective, np.arange(block.objective.shape[0])
    for sign, bound in ((1.0, block.lo), (-1.0, block.up)):
        while True:  # one programme per open part: each optimum may settle others
            open_parts = np.flatnonzero(np.isnan(bound))
            if not len(open_parts):
                break
            chosen = open_parts[0]
            z = programme.minimise(sign * objective[chosen].toarray().ravel())[1]
            values = objective @ z
            bound[chosen] = values[chosen]
            _record(block, every, values, values)
            at_low = np.flatnonzero(np.isnan(block.lo) & (values <= block.seen_lo + block.tolerance))
            at_high = np.flatnonzero(np.isnan(block.up) & (values >= block.seen_up - block.tolerance))
            if not len(at_low) + len(at_high):
                continue
            candidates = objective[np.r_[at_low, at_high]].toarray()
            candidates[len(at_low):] *= -1.0  # a maximum is the minimum of the opposite
            proved = programme.also_minimised(candidates, z)
            low, high = at_low[proved[:len(at_low)]], at_high[proved[len(at_low):]]
            block.lo[low], block.up[high] = values[low], values[high]
    return block.lo, block.up


#: Components of the reduced programme with at most this many unknown inner cells of positive value
#: get the certificates of :func:`certificates` (a dense QR decomposition each).
CERTIFIED_COMPONENT = 1500


def certificates(red: Reduced, objective: sparse.csr_matrix, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): for every part (row of ``objective`` over the unknowns of ``red``, within one
    component) its smallest and largest value at feasible points of the intruder's programme found
    without a programme (the true table alone for a component larger than :data:`CERTIFIED_COMPONENT`).

    ``start`` (over the unknowns) is the true table, a feasible point. A direction ``d`` in the null
    space of the component's rows, restricted to its unknowns of positive value (those at 0 stay at
    0), moves it to ``start + t d``, feasible while ``start + t d >= 0``: for ``t`` up to
    ``min_{d_j < 0} start_j / |d_j|`` and down to ``-min_{d_j > 0} start_j / d_j``. The direction of a
    part ``o`` is its projection on that null space, ``d = o - Q_r Q_r' o`` with ``Q_r`` an orthonormal
    basis of the rows' span (:func:`_row_space`; ``o·d = |d|^2 > 0`` unless the part is a linear
    function of the published cells), so one decomposition per component certifies every part of it
    at once. Any feasible point is a rigorous
    certificate: the part's interval (its programmes' optima, Fischetti and Salazar 1999) contains
    ``[low, high]``; a certificate proves a width, never its absence. The directions are those of
    GaussSuppression's and Fischetti and Salazar's reasoning on the kernel of the published rows (a
    suppressed cell is safe when some deviation of the suppressed cells that keeps every published
    cell moves it); the nonnegativity of the inner cells bounds the step. A point whose equations
    are off by more than ``1e-9`` times the largest published value (rounding in a large step) is
    not used."""
    n_parts = objective.shape[0]
    at_start = objective @ start
    low, high = at_start.copy(), at_start.copy()  # the true table itself
    if not n_parts:
        return low, high
    tolerance = 1e-9 * max(1.0, float(np.abs(red.rhs).max(initial=0.0)), float(np.abs(start).max(initial=0.0)))
    n_components = int(red.component.max(initial=0)) + 1
    row_component = red.component[red.rows.indices[red.rows.indptr[:-1]]] if red.rows.shape[0] else np.zeros(0, int)
    unknowns, rows = _grouped(red.component, n_components), _grouped(row_component, n_components)
    part_component = np.full(n_parts, -1)
    coo = objective.tocoo()
    part_component[coo.row] = red.component[coo.col]
    parts_of = _grouped(np.where(part_component < 0, n_components, part_component), n_components + 1)
    for k in np.unique(part_component[part_component >= 0]):  # components, not records
        columns = unknowns(np.array([k]))
        columns = columns[start[columns] > tolerance]
        if not len(columns) or len(columns) > CERTIFIED_COMPONENT:
            continue
        parts = parts_of(np.array([k]))
        matrix = red.rows[rows(np.array([k]))][:, columns].toarray()
        # one BLAS thread: on a shared machine threaded BLAS spun 40 times the CPU on these
        # decompositions (2.5 s instead of 0.06 s CPU on the census subtable, load 5)
        with threadpool_limits(1, user_api="blas"):
            span = _row_space(matrix)
            if span.shape[1] == len(columns):
                continue  # no null space: every part is fixed by the published cells
            o = objective[parts][:, columns].toarray().T  # columns x parts
            d = o - span @ (span.T @ o)
        gain = np.einsum("ij,ij->j", o, d)  # o·d = |d|^2
        a = start[columns][:, None]
        with np.errstate(divide="ignore"):
            up_step = np.where(d < 0, a / np.where(d < 0, -d, 1.0), np.inf).min(axis=0)
            down_step = np.where(d > 0, a / np.where(d > 0, d, 1.0), np.inf).min(axis=0)
        moves = (gain > tolerance) & np.isfinite(up_step) & np.isfinite(down_step)
        off = np.abs(matrix @ d[:, moves]).max(axis=0, initial=0.0) * np.maximum(up_step, down_step)[moves]
        moves[moves] = off <= tolerance
        low[parts[moves]] = at_start[parts[moves]] - down_step[moves] * gain[moves]
        high[parts[moves]] = at_start[parts[moves]] + up_step[moves] * gain[moves]
    return low, high


def _row_space(matrix: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the span of the rows of ``matrix``, from the QR decomposition
    with column pivoting of its transpose (LAPACK ``geqp3``; Golub and Van Loan 2013, "Matrix
    Computations", §5.4.2): the rank is the number of diagonal entries of ``R`` above
    ``max(shape) · eps · |R_00|``, the tolerance of ``scipy.linalg.null_space``. Where the null space
    came from a full singular value decomposition (``scipy.linalg.null_space``) the QR takes about a
    third of its time: 0.25 s instead of 0.65 s CPU on the 1,087 x 1,163 component of a municipality
    subtable of the 10^6-cell census table (issue 36, sixth pass). A rank misjudged by rounding
    could only give a direction off the null space, which :func:`certificates` checks and drops."""
    if not matrix.shape[0]:
        return np.zeros((matrix.shape[1], 0))
    q, r, _ = qr(matrix.T, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(r))
    rank = int((diagonal > max(matrix.shape) * np.finfo(np.float64).eps * diagonal[0]).sum()) if diagonal[0] > 0 else 0
    return q[:, :rank]


def _grouped(label: np.ndarray, n_groups: int):
    """``positions(groups)``: the positions of ``label`` (values below ``n_groups``) whose value is in
    ``groups`` (sorted)."""
    order = np.argsort(label, kind="stable")
    starts = np.searchsorted(label[order], np.arange(n_groups + 1))

    def positions(groups: np.ndarray) -> np.ndarray:
        groups = np.asarray(groups, dtype=np.int64)
        if not len(groups):
            return np.zeros(0, dtype=np.int64)
        lengths = starts[groups + 1] - starts[groups]
        offsets = np.repeat(starts[groups] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return np.sort(order[np.arange(lengths.sum()) + offsets])

    return positions


def audit(table_or_tables: Table | Sequence[Table], suppressed, *,
          workers: int = 1) -> pd.DataFrame | list[pd.DataFrame]:
    """Per cell ``lo``, ``up``: the interval an intruder derives for each suppressed cell by linear
    programming over the inner cells (>= 0) from every published cell of every given table (NaN
    where published). ``suppressed``: a bool Series indexed like ``table.cells`` (a list of them for
    a list of linked tables, audited together). The rows of a cell and its duplicates (a parent with
    a single child) count as suppressed when any of them is. ``workers``: processes bounding the
    independent components of the intruder's programme at once (spawned; the intervals are the
    same with any number: on the 10^5-cell census table 49 components, ~40 s CPU in all)."""
    workers = check_scalar(workers, "workers", low=1, integer=True)
    single = isinstance(table_or_tables, Table)
    tables = [table_or_tables] if single else list(table_or_tables)
    model = joint_model(tables)
    masks = [suppressed] if single else suppressed
    if not single and (isinstance(masks, pd.Series) or not isinstance(masks, Sequence)):
        raise SDCInputError("suppressed: for a list of tables, a list with one bool Series per table")
    lo, up = intervals(model, stacked_mask(model, masks, "suppressed"), workers=workers)
    out = [
        pd.DataFrame({"lo": a, "up": b}, index=t.cells.index)
        for t, a, b in zip(tables, model.split(lo), model.split(up))
    ]
    return out[0] if single else out


def requirement(model: JointModel, lower: np.ndarray, upper: np.ndarray, *, min_width: float = 1.0,
                tolerance: float = 1e-6):
    """``meets(rows, lo, up) -> bool``: whether an interval ``[lo, up]`` of each of the stacked
    ``rows`` (broadcast) protects it: its protection levels met (``up >= b + upper``,
    ``lo <= b - lower``, a width above 0) or, without levels, at least ``min_width`` wide; within
    ``tolerance`` times the largest published value. The one test of :func:`protection_failures`
    and of the repair's hypercubes (:mod:`sdc_dagster.tables.hypercube`)."""
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

    return meets


def protection_failures(
    model: JointModel, suppressed: np.ndarray, primary: np.ndarray, lower: np.ndarray, upper: np.ndarray,
    *, min_width: float = 1.0, tolerance: float = 1e-6, only_primaries: bool = False, workers: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Primary rows (stacked) whose audit interval fails. A primary fails when it is published, or
    its interval ``[lo, up]`` misses a protection level (``up < b + upper`` or ``lo > b - lower``),
    or, without levels, is narrower than ``min_width`` (an exactly derivable cell has width 0).
    Returns (failing rows as bool, lo, up). With ``only_primaries`` only the primaries are bounded,
    and those an inner estimate already protects keep the estimate (:func:`intervals` ``enough``).
    ``tolerance`` is relative to the largest published value; ``workers``: processes of
    :func:`intervals`."""
    meets = requirement(model, lower, upper, min_width=min_width, tolerance=tolerance)

    if only_primaries:
        lo, up = intervals(model, suppressed, of=primary, enough=meets, workers=workers)
    else:
        lo, up = intervals(model, suppressed, workers=workers)
    rows = np.flatnonzero(primary & suppressed)
    failing = primary & ~suppressed
    failing[rows] = ~meets(rows, lo[rows], up[rows])
    return failing, lo, up
