"""One linear programme kept in HiGHS between solves: only the objective changes.

The audit (:mod:`sdc_dagster.tables.intruder`) bounds many cells over the same intruder's
programme, each with another objective. Solved from scratch (``scipy.optimize.linprog``) every one
of them was presolved, crashed and pivoted again: on a 2,079-cell census subtable 85 % of the
protection's time was inside HiGHS (issue 36). Kept in one HiGHS model, a new objective leaves the
last optimal basis primal feasible, so HiGHS restarts the primal simplex from it (Huangfu and Hall
2018, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10, on HiGHS's hot start)
and needs a few pivots instead of a full solve. An interval is the optimum, whichever vertex
attains it, so the audit's results do not depend on the start.

The repair's capacity programmes (:mod:`sdc_dagster.tables.secondary`) are not solved here: their
cuts are the dual values, and a degenerate programme restarted from another basis returns other
(equally valid) dual values, which led the repair elsewhere (HiTaS on the linked reference case c4:
14 suppressions of cost 76 instead of 12 of cost 40). The optimal method's capacity programmes are
(:meth:`Programme.change_rows` between its rounds): its cuts are valid inequalities whatever the
dual values, so another basis changes the rounds it takes, never its optimum.

The restart must be the primal simplex: HiGHS's default strategy is the dual simplex whatever the
basis, and after a new objective the last basis is primal feasible but not dual feasible, so the
dual simplex first restores dual feasibility from it, about as far as a solve from scratch. With
``simplex_strategy = 0`` (HiGHS chooses by the basis: the primal simplex from a primal feasible
basis, the dual one from a dual feasible basis, as after :meth:`Programme.change_rows`) the audit
of a 4,455-cell municipality subtable of the 10^6-cell census table (issue 36, sixth pass) took
~30 pivots a programme instead of ~700 and 0.65 s CPU for its 208 programmes instead of 9.7 s,
the same optima (within 1e-11); on a 504-row component of the 10^5-cell census table ~30
iterations and 1.4 ms a programme against 284 and 9.5 ms.

The same basis often minimises other objectives too (a degenerate programme has many optimal
bases): :meth:`Programme.also_minimised` tells which of a batch of objectives the last point
minimises, by the reduced costs of the last basis (one backward solve with HiGHS's factorisation
each) and weak duality, without a programme.

HiGHS is used through ``highspy``'s compiled ``_Highs`` (the class ``highspy.Highs`` extends and
``scipy.optimize.linprog`` runs): ``highspy.Highs`` adds Python callbacks whose set-up prints HiGHS's
banner on the process's standard output, which ``sdc`` must keep for its own output.
"""

from __future__ import annotations

import numpy as np
from highspy import HighsLp, HighsModelStatus, HighsStatus, MatrixFormat
from highspy._core import _Highs
from scipy import sparse


class Programme:
    """``min c·x`` subject to ``row_lower <= A x <= row_upper`` and ``col_lower <= x <= col_upper``
    (``±inf``: no bound), ``A`` sparse; :meth:`minimise` with each objective in turn, each solve
    started from the last one's basis."""

    def __init__(self, matrix: sparse.spmatrix, row_lower, row_upper, col_lower, col_upper, *, what: str):
        matrix = sparse.csc_matrix(matrix)
        matrix.sort_indices()
        self.what, self.matrix = what, matrix
        self.n_cols, self.n_rows = matrix.shape[1], matrix.shape[0]
        lp = HighsLp()
        lp.num_col_, lp.num_row_ = self.n_cols, self.n_rows
        lower = np.broadcast_to(np.asarray(col_lower, dtype=np.float64), (self.n_cols,)).copy()
        upper = np.broadcast_to(np.asarray(col_upper, dtype=np.float64), (self.n_cols,)).copy()
        row_lower = np.asarray(row_lower, dtype=np.float64)
        row_upper = np.asarray(row_upper, dtype=np.float64)
        lp.col_cost_ = np.zeros(self.n_cols)
        lp.col_lower_, lp.col_upper_ = lower, upper
        lp.row_lower_, lp.row_upper_ = row_lower, row_upper
        # min c·x subject to A x = b, x >= 0: the form in which also_minimised certifies by duality
        self._nonnegative = bool((lower == 0).all() and np.isposinf(upper).all())
        self._equalities(row_lower, row_upper)
        lp.a_matrix_.format_ = MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = self.n_cols, self.n_rows
        lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
        lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
        lp.a_matrix_.value_ = matrix.data.astype(np.float64)
        self.highs = _Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("simplex_strategy", 0)  # the primal simplex after a new objective (module text)
        self.highs.passModel(lp)
        self._columns = np.arange(self.n_cols, dtype=np.int32)

    def _equalities(self, row_lower: np.ndarray, row_upper: np.ndarray) -> None:
        """Keep the rows' bounds for :meth:`also_minimised` (``b`` when every row is an equality)."""
        equalities = np.array_equal(row_lower, row_upper) and np.isfinite(row_lower).all()
        self._standard = self._nonnegative and bool(equalities)
        self._b = row_lower

    def change_rows(self, row_lower, row_upper) -> None:
        """New bounds of every row (the optimal method's capacity programme at a new pattern): the
        last basis stays dual feasible for the objective, so HiGHS restarts from it."""
        row_lower, row_upper = np.asarray(row_lower, dtype=np.float64), np.asarray(row_upper, dtype=np.float64)
        self.highs.changeRowsBounds(self.n_rows, np.arange(self.n_rows, dtype=np.int32), row_lower, row_upper)
        self._equalities(row_lower, row_upper)

    def minimise(self, c: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(optimal value, an optimal ``x``, the rows' dual values) of ``min c·x``. A row's dual value
        is HiGHS's: the derivative of the optimal value in the row's active bound (>= 0 at a lower
        bound, <= 0 at an upper one, for a minimisation). Raises RuntimeError unless optimal."""
        self.highs.changeColsCost(self.n_cols, self._columns, np.asarray(c, dtype=np.float64))
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != HighsModelStatus.kOptimal:
            raise RuntimeError(f"{self.what}: HiGHS could not solve the intruder's programme "
                               f"({self.highs.modelStatusToString(status)})")
        solution = self.highs.getSolution()
        x = np.asarray(solution.col_value)
        return float(np.dot(c, x)), x, np.asarray(solution.row_dual)

    def also_minimised(self, objectives: np.ndarray, x: np.ndarray, *, tolerance: float = 1e-9) -> np.ndarray:
        """One bool per row ``c`` of ``objectives`` (objectives x columns, dense): whether ``x``, the
        last optimum, minimises ``c·x`` too, proved without solving: the last optimal basis gives the
        dual values ``y`` of ``c`` (``B' y = c_B``, a backward solve with HiGHS's factorisation of
        the basis ``B``; 0 on a row whose slack is basic), and when every reduced cost ``c - A' y``
        is ``>= -tolerance`` and ``b·y = c·x`` (within ``tolerance`` times the largest ``|b|``), weak
        duality bounds every feasible point's ``c·x'`` below by ``b·y``: ``x`` is optimal (the
        textbook optimality test of the revised simplex method: Dantzig 1963, "Linear Programming
        and Extensions"; Chvátal 1983, "Linear Programming").
        Only for ``min c·x`` subject to ``A x = b, x >= 0`` (the intruder's programme)."""
        if not self._standard:
            raise ValueError(f"{self.what}: also_minimised needs A x = b and x >= 0 without upper bounds")
        objectives = np.atleast_2d(np.asarray(objectives, dtype=np.float64))
        status, basic = self.highs.getBasicVariables()
        if status != HighsStatus.kOk or len(basic) != self.n_rows:
            return np.zeros(len(objectives), dtype=bool)
        structural = basic >= 0
        columns = basic[structural]
        rhs = np.zeros(self.n_rows)
        duals = np.empty((len(objectives), self.n_rows))
        for i, c in enumerate(objectives):  # one backward solve per objective (HiGHS takes one)
            rhs[structural] = c[columns]
            duals[i] = self.highs.getBasisTransposeSolve(rhs)[1]
        reduced = objectives - (self.matrix.T @ duals.T).T
        gap = duals @ self._b - objectives @ x
        scale = tolerance * max(1.0, float(np.abs(self._b).max(initial=0.0)))
        return (reduced >= -tolerance).all(axis=1) & (np.abs(gap) <= scale)
