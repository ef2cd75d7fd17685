"""The linear programme kept in HiGHS between solves (sdc_dagster.tables.programme): optima and dual
values by hand, new objectives on the same model, no output."""

import numpy as np
import pytest
from scipy import sparse

from sdc_dagster.tables.programme import Programme


def test_optima_and_duals_by_hand_with_new_objectives(capfd):
    # rows: x1 + x2 = 4 and x1 <= 3; x >= 0
    programme = Programme(sparse.csr_matrix([[1.0, 1.0], [1.0, 0.0]]), [4.0, -np.inf], [4.0, 3.0], 0.0, np.inf,
                          what="test")
    value, x, dual = programme.minimise(np.array([1.0, 2.0]))
    # x1 as large as the second row allows (3), x2 = 1: 3 + 2 = 5; raising the total by 1 costs 2,
    # raising the cap of x1 by 1 saves 1 (dual <= 0 at an upper bound of a minimisation)
    assert value == pytest.approx(5.0) and x.tolist() == pytest.approx([3.0, 1.0])
    assert dual.tolist() == pytest.approx([2.0, -1.0])
    value, x, dual = programme.minimise(np.array([2.0, 1.0]))  # now x2 is the cheaper: (0, 4)
    assert value == pytest.approx(4.0) and x.tolist() == pytest.approx([0.0, 4.0])
    assert dual.tolist() == pytest.approx([1.0, 0.0])
    value, x, _ = programme.minimise(np.array([1.0, 2.0]))  # back to the first objective
    assert value == pytest.approx(5.0) and x.tolist() == pytest.approx([3.0, 1.0])
    # HiGHS's banner and log stay off the process's output (sdc prints there)
    assert capfd.readouterr().out == ""


def test_an_infeasible_programme_is_an_error_naming_its_user():
    programme = Programme(sparse.csr_matrix([[1.0, 1.0]]), [-1.0], [-1.0], 0.0, np.inf, what="audit")
    with pytest.raises(RuntimeError, match="audit: HiGHS could not solve"):
        programme.minimise(np.array([1.0, 1.0]))


def test_new_row_bounds_on_the_same_model_by_hand():
    # the optimal method's capacity programme at a new pattern: x1 + x2 in [lo, hi], x <= 10
    programme = Programme(sparse.csr_matrix([[1.0, 1.0]]), [0.0], [0.0], 0.0, 10.0, what="test")
    value, x, _ = programme.minimise(np.array([-1.0, 0.0]))  # max x1 with x1 + x2 = 0: 0
    assert value == pytest.approx(0.0)
    programme.change_rows([2.0], [5.0])  # now 2 <= x1 + x2 <= 5: x1 = 5, the cap's dual -1
    value, x, dual = programme.minimise(np.array([-1.0, 0.0]))
    assert value == pytest.approx(-5.0) and x.tolist() == pytest.approx([5.0, 0.0])
    assert dual.tolist() == pytest.approx([-1.0])
    value, x, dual = programme.minimise(np.array([1.0, 1.0]))  # min x1 + x2: the lower bound 2
    assert value == pytest.approx(2.0) and dual.tolist() == pytest.approx([1.0])


def test_also_minimised_by_hand():
    # x1 + x2 = 4, x >= 0; min x1 ends at (0, 4) with x2 basic
    programme = Programme(sparse.csr_matrix([[1.0, 1.0]]), [4.0], [4.0], 0.0, np.inf, what="test")
    _, x, _ = programme.minimise(np.array([1.0, 0.0]))
    assert x.tolist() == pytest.approx([0.0, 4.0])
    # min x1 (0: the last objective), min x1 + x2 (4 everywhere), min 2 x1 + x2 (4 at (0, 4)) are
    # minimised there; min x2 (0 at (4, 0)) and max x1 (-4 at (4, 0)) are not: at (0, 4) they are 4, 0
    objectives = np.array([[1.0, 0.0], [1.0, 1.0], [2.0, 1.0], [0.0, 1.0], [-1.0, 0.0]])
    assert programme.also_minimised(objectives, x).tolist() == [True, True, True, False, False]


def test_also_minimised_needs_the_intruders_form():
    # an inequality row (x1 <= 3) or an upper bound: the duality test would need signs it does not check
    programme = Programme(sparse.csr_matrix([[1.0, 1.0], [1.0, 0.0]]), [4.0, -np.inf], [4.0, 3.0], 0.0, np.inf,
                          what="test")
    _, x, _ = programme.minimise(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="test: also_minimised needs A x = b"):
        programme.also_minimised(np.array([[1.0, 0.0]]), x)
    capped = Programme(sparse.csr_matrix([[1.0, 1.0]]), [4.0], [4.0], 0.0, 10.0, what="capped")
    _, x, _ = capped.minimise(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="capped: also_minimised"):
        capped.also_minimised(np.array([[1.0, 0.0]]), x)


def test_restarts_reach_the_same_optima_by_hand():
    # x1 + x2 + x3 = 6, x1 + x2 = 4 (so x3 = 2); objectives in turn, each optimum by hand
    matrix = sparse.csr_matrix([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    programme = Programme(matrix, [6.0, 4.0], [6.0, 4.0], 0.0, np.inf, what="test")
    objectives = (([1.0, 0.0, 0.0], 0.0), ([-1.0, 0.0, 0.0], -4.0), ([0.0, -1.0, 1.0], -2.0), ([0.0, 0.0, -1.0], -2.0))
    for c, best in objectives:
        value, x, _ = programme.minimise(np.array(c))
        assert value == pytest.approx(best) and matrix @ x == pytest.approx([6.0, 4.0]) and (x >= -1e-9).all()


def test_a_new_objective_restarts_from_the_last_basis_in_few_pivots():
    """A 30 x 30 table of positive counts with its 60 margins published: the audit's programmes of
    single cells, one after the other on the same model. A new objective leaves the last optimal
    basis primal feasible, so HiGHS's primal simplex goes on from it (``simplex_strategy = 0``):
    a few pivots where the dual simplex, its default, took more than the first solve from scratch
    (263 and 226 against 92). Every optimum is the one of a programme solved from scratch."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(0)
    n = 30
    z = rng.poisson(5.0, (n, n)).astype(float) + 1.0
    rows = sparse.vstack([sparse.kron(sparse.eye(n), np.ones((1, n))),
                          sparse.kron(np.ones((1, n)), sparse.eye(n))]).tocsr()
    totals = rows @ z.ravel()
    programme = Programme(rows, totals, totals, 0.0, np.inf, what="test")
    pivots = []
    for k in range(6):
        c = np.zeros(n * n)
        c[k * (n + 1)] = 1.0 if k % 2 else -1.0  # the diagonal cells, max and min in turn
        value, _, _ = programme.minimise(c)
        pivots.append(programme.highs.getInfo().simplex_iteration_count)
        scratch = linprog(c, A_eq=rows, b_eq=totals, bounds=(0, None), method="highs")
        assert value == pytest.approx(scratch.fun, abs=1e-9)
    assert pivots[0] > 50 and max(pivots[1:]) <= 10
