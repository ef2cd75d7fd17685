"""The optimal method (issue 36): equal to a brute force over every pattern on tiny tables, never
dearer than Gauss or HiTaS, every pattern passing the audit, and honest about a budget that runs
out (best found, bound, gap; never called optimal)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import sdc_dagster.tables as tables
from sdc_dagster.tables.model import joint_model
from sdc_dagster.tables.secondary import publish_derivable, relation_members

from .conftest import read, small_tables


def grid_table(counts: np.ndarray) -> tables.Table:
    """The 2-D frequency table of the inner counts ``counts`` (rows r0.., columns k0..)."""
    rows, columns = np.indices(counts.shape)
    data = pd.DataFrame({"r": [f"r{i}" for i in rows.ravel()], "k": [f"k{j}" for j in columns.ravel()],
                         "n": counts.ravel()})
    return tables.tabulate(data, {"r": None, "k": None}, freq="n")


def protects(table: tables.Table, suppressed: np.ndarray, primary: np.ndarray) -> bool:
    """The intruder's programme written out here with scipy's linprog (not the project's audit):
    every primary suppressed and, over the inner cells z >= 0 meeting every published cell, its
    interval at least 1 wide."""
    matrix, b = table.matrix.toarray(), table.published
    published = ~suppressed
    for p in np.flatnonzero(primary):
        if not suppressed[p]:
            return False
        ends = []
        for sign in (1.0, -1.0):
            result = linprog(sign * matrix[p], A_eq=matrix[published], b_eq=b[published], bounds=(0, None), method="highs")
            assert result.status in (0, 3)  # 3: unbounded (every cell of a line suppressed)
            ends.append(sign * result.fun if result.status == 0 else -sign * np.inf)
        if ends[1] - ends[0] < 1 - 1e-9:
            return False
    return True


def brute_force(table: tables.Table, primary: np.ndarray) -> float | None:
    """The smallest sum of the counts suppressed over every pattern that protects (None: none does)."""
    free = np.flatnonzero(~primary)
    best = None
    for chosen in itertools.product([False, True], repeat=len(free)):
        suppressed = primary.copy()
        suppressed[free] = chosen
        price = float(table.published[suppressed].sum())
        if (best is None or price < best) and protects(table, suppressed, primary):
            best = price
    return best


def price(table, suppressed) -> float:
    return float(table.cells.loc[suppressed, "freq"].sum())


def test_the_c6_rectangle_is_proved_optimal():
    """c6 (4 x 4, one primary (x, c) = 5 under n = 5): the cheapest protection by value is the
    rectangle (x,c), (x,d), (y,c), (y,d) = 5 + 31 + 59 + 85 = 180 (test_secondary), proved optimal:
    the bound equals the cost."""
    table = tables.tabulate(read("c6_audit_input_inner.csv"), {"v1": None, "v2": None}, freq="freq")
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 5}])
    suppressed = tables.secondary_suppression(table, primary, method="optimal")
    assert price(table, suppressed) == 180.0
    optimality = suppressed.attrs["optimality"]
    assert optimality.status == "optimal" and optimality.gap == pytest.approx(0.0, abs=1e-9)
    # the cost the ILP minimises: each of the 4 cells plus 1e-6 of the largest (secondary's module text)
    expected = 180.0 + 4 * 1e-6 * table.cells["freq"].max()
    assert optimality.cost == pytest.approx(expected, rel=1e-12)
    assert optimality.bound == pytest.approx(expected, rel=1e-9)  # HiGHS's dual bound, in floating point
    assert str(optimality).startswith("proven optimal, cost 180")


def test_a_3_x_3_table_by_hand_equals_the_brute_force():
    """Inner counts [[1, 5, 6], [4, 9, 7], [8, 2, 10]]: the primaries are the cells of 1 and 2 (n = 3).
    Each primary needs a suppressed partner in its row: at least 5 in row r0 and 8 in row r2, two
    different cells, so every protection costs at least 1 + 2 + 5 + 8 = 16; the rectangle of rows
    r0, r2 and columns k0, k1 (1, 5, 8, 2) costs 16 and protects ((r0, k0) lies in [0, 6])."""
    table = grid_table(np.array([[1, 5, 6], [4, 9, 7], [8, 2, 10]]))
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    assert int(primary.sum()) == 2
    suppressed = tables.secondary_suppression(table, primary, method="optimal")
    assert price(table, suppressed) == 16.0
    assert brute_force(table, primary.to_numpy()) == 16.0
    assert protects(table, suppressed.to_numpy(), primary.to_numpy())


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(2, 2), (2, 3), (3, 2)]).flatmap(
    lambda shape: st.lists(st.integers(0, 9), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]).map(
        lambda counts: np.array(counts).reshape(shape))))
def test_the_ilp_equals_a_brute_force_over_every_pattern(counts):
    table = grid_table(counts)
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    best = brute_force(table, primary.to_numpy())
    if best is None:
        with pytest.raises(RuntimeError, match="no pattern meets the protection"):
            tables.secondary_suppression(table, primary, method="optimal")
        return
    suppressed = tables.secondary_suppression(table, primary, method="optimal")
    assert protects(table, suppressed.to_numpy(), primary.to_numpy())
    assert price(table, suppressed) == best
    assert suppressed.attrs["optimality"].status == "optimal"


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables())
def test_the_ilp_is_no_dearer_than_gauss_and_hitas_and_its_bound_holds(data):
    table = tables.tabulate(data, {c: None for c in data.columns if c != "n"}, freq="n")
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    try:
        optimal = tables.secondary_suppression(table, primary, method="optimal")
    except RuntimeError as exc:  # no pattern can protect: the heuristics refuse too
        assert "no pattern meets the protection" in str(exc)
        return
    optimality = optimal.attrs["optimality"]
    assert optimality.status == "optimal" and optimality.bound <= optimality.cost + 1e-9
    width = tables.audit(table, optimal)
    assert ((width["up"] - width["lo"])[primary] >= 1 - 1e-6).all()
    for method in ("gauss", "hitas"):
        heuristic = tables.secondary_suppression(table, primary, method=method)
        assert price(table, optimal) <= price(table, heuristic) + 1e-9


def test_a_budget_that_runs_out_says_best_found_with_bound_and_gap():
    """With no time for a single master programme the optimal method returns its incumbent (the
    Gauss pattern repaired, audited), status "time_limit", a bound of 0 and a gap of 100 %: never
    called optimal, never dearer than Gauss."""
    data = read("c1_freq3d_input_inner.csv")
    table = tables.tabulate(data, {"age": None, "geo": None, "year": None}, freq="freq")
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 2}])
    suppressed = tables.secondary_suppression(table, primary, method="optimal", time_limit=1e-9)
    optimality = suppressed.attrs["optimality"]
    assert isinstance(optimality, tables.Optimality)
    assert optimality.status == "time_limit" and optimality.rounds == 0
    assert optimality.bound == 0.0 and optimality.gap == 1.0
    assert str(optimality).startswith("best found, cost ") and "bound 0, gap 100.00%" in str(optimality)
    assert "optimal" not in str(optimality)
    width = tables.audit(table, suppressed)
    assert ((width["up"] - width["lo"])[primary] >= 1).all()
    gauss = tables.secondary_suppression(table, primary, method="gauss")
    assert price(table, suppressed) <= price(table, gauss)


def test_publish_derivable_by_hand():
    """2 x 2 inner cells: suppressing (r0, k0), (r0, k1), (r1, k0), (r1, k1) and (r0, Total): the
    relation (r0, Total) = (r0, k0) + (r0, k1) has three suppressed members, but (Total, Total) =
    (r0, Total) + (r1, Total) has only (r0, Total): it is derivable and published; nothing else is (every other
    relation of a suppressed cell has two suppressed members)."""
    table = grid_table(np.array([[1, 2], [3, 4]]))
    model = joint_model([table])
    key = list(zip(table.cells["r"], table.cells["k"]))
    chosen = {("r0", "k0"), ("r0", "k1"), ("r1", "k0"), ("r1", "k1"), ("r0", "Total")}
    x = np.array([k in chosen for k in key], dtype=float)
    fixed = np.array([k == ("r0", "k0") for k in key])
    out = publish_derivable(relation_members(model), x, fixed)
    assert {k for k, v in zip(key, out) if v} == chosen - {("r0", "Total")}
    # a chain: (r0, Total) and (Total, Total) alone in their column: both published in turn
    chained = chosen | {("Total", "Total")}
    x = np.array([k in chained for k in key], dtype=float)
    out = publish_derivable(relation_members(model), x, fixed)
    assert {k for k, v in zip(key, out) if v} == chosen - {("r0", "Total")}
