"""The intruder's audit: intervals by hand on c6 and c4, unbounded and pinned cells."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError

from .conftest import read, small_tables


@pytest.fixture
def c6():
    return tables.tabulate(read("c6_audit_input_inner.csv"), {"v1": None, "v2": None}, freq="freq")


def pattern(table, cells):
    keys = list(zip(table.cells["v1"], table.cells["v2"]))
    return pd.Series([k in cells for k in keys], index=table.cells.index)


def test_c6_rectangle_intervals_by_hand(c6):
    # (x,c) = t, (x,d) = 36 - t, (w,c) = 69 - t, (w,d) = 84 + t from the published margins; all >= 0
    # gives t in [0, 36]
    suppressed = pattern(c6, {("x", "c"), ("x", "d"), ("w", "c"), ("w", "d")})
    result = tables.audit(c6, suppressed).set_axis(list(zip(c6.cells["v1"], c6.cells["v2"])))
    assert result.loc[[("x", "c")]].to_numpy().tolist() == [[0.0, 36.0]]
    assert result.loc[[("x", "d")]].to_numpy().tolist() == [[0.0, 36.0]]
    assert result.loc[[("w", "c")]].to_numpy().tolist() == [[33.0, 69.0]]
    assert result.loc[[("w", "d")]].to_numpy().tolist() == [[84.0, 120.0]]
    assert result[~suppressed.to_numpy()].isna().all().all()



def test_two_components_bounded_in_two_processes_by_hand(c6):
    """Two disjoint rectangles (rows w, x by columns c, d; rows y, z by columns a, b) are two
    independent components of the intruder's programme, bounded in two spawned processes: the first
    as in the test above; in the second (y,a) = 92 + t, (y,b) = 100 - t, (z,a) = 800 - t,
    (z,b) = 991 + t with t in [-92, 100]. The same intervals with one process."""
    cells = {("x", "c"), ("x", "d"), ("w", "c"), ("w", "d"), ("y", "a"), ("y", "b"), ("z", "a"), ("z", "b")}
    suppressed = pattern(c6, cells)
    result = tables.audit(c6, suppressed, workers=2)
    at = result.set_axis(list(zip(c6.cells["v1"], c6.cells["v2"])))
    expected = {("x", "c"): [0.0, 36.0], ("x", "d"): [0.0, 36.0], ("w", "c"): [33.0, 69.0], ("w", "d"): [84.0, 120.0],
                ("y", "a"): [0.0, 192.0], ("y", "b"): [0.0, 192.0], ("z", "a"): [700.0, 892.0],
                ("z", "b"): [899.0, 1091.0]}
    for cell, interval in expected.items():
        assert at.loc[[cell]].to_numpy().tolist() == [pytest.approx(interval)]
    pd.testing.assert_frame_equal(result, tables.audit(c6, suppressed, workers=1))
    with pytest.raises(SDCInputError, match="workers"):
        tables.audit(c6, suppressed, workers=0)

def test_c6_two_per_row_and_column_can_still_disclose(c6):
    """Two 2 x 2 rectangles joined by (x,c): every row and column of the pattern has two or more
    suppressions, yet rows w, x minus columns a, b (whose other cells are published) give
    (x,c) = 250 + 230 - 64 - 89 - 31 - (1012 - 92 - 800) - (1262 - 100 - 991) = 5 exactly."""
    cells = {("w", "a"), ("w", "b"), ("x", "a"), ("x", "b"), ("y", "c"), ("y", "d"), ("z", "c"), ("z", "d"),
             ("x", "c")}
    suppressed = pattern(c6, cells)
    result = tables.audit(c6, suppressed)
    xc = (c6.cells["v1"] == "x") & (c6.cells["v2"] == "c")
    assert result.loc[xc, "lo"].iloc[0] == pytest.approx(5.0)
    assert result.loc[xc, "up"].iloc[0] == pytest.approx(5.0)
    others = suppressed & ~xc
    assert ((result.loc[others, "up"] - result.loc[others, "lo"]) > 1).all()


def test_unbounded_and_pinned_cells():
    table = tables.tabulate(pd.DataFrame({"a": ["x", "y", "z"], "n": [4, 0, 2]}), {"a": None}, freq="n")
    everything = pd.Series(True, index=table.cells.index)
    result = tables.audit(table, everything)
    assert (result["lo"] == 0).all() and np.isinf(result["up"]).all()
    # with the total published and y published as 0: x + z = 6
    published_total = pd.Series([False, True, False, True], index=table.cells.index)
    result = tables.audit(table, published_total).set_axis(table.cells["a"])
    assert result.loc["x"].tolist() == [0.0, 6.0] and result.loc["z"].tolist() == [0.0, 6.0]


def test_c4_tables_protected_one_by_one_disclose_a_cell_when_read_together(c4_tables):
    """T1 suppresses A, B, K, L, M (counties published), T2 the same regions (big, small published):
    each alone leaves every primary an interval, but big = L + M = 6 and county-2 = K + L + M + N = 16
    with N = 7 published give K = 16 - 7 - 6 = 3."""
    one, two = c4_tables
    alone = [t.cells["region"].isin(["A", "B", "K", "L", "M"]) for t in c4_tables]
    for t, s in zip(c4_tables, alone):
        result = tables.audit(t, s)
        assert ((result["up"] - result["lo"])[s] > 0).all()
    together = tables.audit(c4_tables, alone)
    k = one.cells["region"] == "K"
    assert together[0].loc[k, ["lo", "up"]].to_numpy().tolist() == [[3.0, 3.0]]
    assert together[1].loc[two.cells["region"] == "K", ["lo", "up"]].to_numpy().tolist() == [[3.0, 3.0]]


def test_a_duplicate_of_a_suppressed_cell_is_suppressed():
    data = pd.DataFrame({"s": ["gov", "agri", "ind"], "n": [5, 1, 4]})
    hierarchy = pd.DataFrame({"parent": ["Total", "Total", "private", "private", "public"],
                              "child": ["private", "public", "agri", "ind", "gov"]})
    table = tables.tabulate(data, {"s": hierarchy}, freq="n")
    result = tables.audit(table, table.cells["s"].isin(["gov", "agri", "ind"])).set_axis(table.cells["s"])
    # public = gov: suppressing gov suppresses public; Total = 10 and private = 5 published
    assert result.loc["public"].tolist() == result.loc["gov"].tolist() == [5.0, 5.0]
    assert result.loc["agri"].tolist() == [0.0, 5.0]


def direct_intervals(table, suppressed):
    """Every suppressed cell's interval by its own two programmes over all inner cells (>= 0) and
    every published row: the attacker problem as written, without the audit's reductions."""
    from scipy.optimize import linprog

    matrix = table.matrix.toarray()
    b = table.published
    published = ~np.asarray(suppressed, dtype=bool)
    out = {}
    for row in np.flatnonzero(~published):
        bounds = []
        for sign in (1.0, -1.0):
            result = linprog(sign * matrix[row], A_eq=matrix[published], b_eq=b[published], bounds=(0, None), method="highs")
            assert result.status in (0, 3)
            bounds.append(sign * result.fun if result.status == 0 else np.inf)
        out[row] = bounds
    return out


@st.composite
def patterns(draw):
    """A small table (flat or with a 2-tier first dimension) and a random suppression pattern."""
    hierarchical = draw(st.booleans())
    second = draw(st.integers(2, 4))
    first = ["a1", "a2", "b1", "b2", "b3"] if hierarchical else ["a", "b", "c"]
    grid = pd.MultiIndex.from_product([first, [f"k{i}" for i in range(second)]], names=["g", "k"]).to_frame(index=False)
    grid["n"] = draw(st.lists(st.integers(0, 9), min_size=len(grid), max_size=len(grid)))
    tree = pd.DataFrame({"parent": ["Total", "Total", "A", "A", "B", "B", "B"],
                         "child": ["A", "B", "a1", "a2", "b1", "b2", "b3"]}) if hierarchical else None
    table = tables.tabulate(grid, {"g": tree, "k": None}, freq="n")
    flags = draw(st.lists(st.booleans(), min_size=len(table.cells), max_size=len(table.cells)))
    return table, pd.Series(flags, index=table.cells.index)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns())
def test_audit_intervals_are_the_attacker_programmes_optima(drawn):
    """The audit's reductions (pinned and implied rows left out, blocks, bounds settled by feasible
    points reaching 0 or a containing row's total) give every cell the optimum of its own programmes."""
    table, suppressed = drawn
    result = tables.audit(table, suppressed)
    expected = direct_intervals(table, suppressed)
    for row, (lo, up) in expected.items():
        assert result["lo"].iloc[row] == pytest.approx(lo, abs=1e-6)
        assert result["up"].iloc[row] == pytest.approx(up, abs=1e-6) if np.isfinite(up) else np.isinf(result["up"].iloc[row])
    assert result.loc[~suppressed].isna().all().all()



@st.composite
def flat_patterns(draw):
    """A flat 2- or 3-dimensional table (:func:`small_tables`) and a pattern suppressing each cell
    with probability about 0.6: many suppressed cells in one component, degenerate programmes whose
    optimal bases serve several cells (the basis test of the audit)."""
    data = draw(small_tables())
    table = tables.tabulate(data, {c: None for c in data.columns if c != "n"}, freq="n")
    flags = draw(st.lists(st.integers(0, 4), min_size=len(table.cells), max_size=len(table.cells)))
    return table, pd.Series(np.array(flags) >= 2, index=table.cells.index)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_patterns())
def test_audit_of_flat_tables_equals_every_cells_own_programmes(drawn):
    """Exactness with the bounds proved by an optimal basis instead of a programme (issue 36, sixth
    pass): on random 2- and 3-D tables, every suppressed cell's interval is the optimum of its own
    two programmes solved by ``scipy.optimize.linprog`` over every inner cell and published row."""
    table, suppressed = drawn
    result = tables.audit(table, suppressed)
    for row, (lo, up) in direct_intervals(table, suppressed).items():
        assert result["lo"].iloc[row] == pytest.approx(lo, abs=1e-6)
        assert result["up"].iloc[row] == pytest.approx(up, abs=1e-6) if np.isfinite(up) else np.isinf(result["up"].iloc[row])
    assert result.loc[~suppressed].isna().all().all()


def test_the_contracts_audit_function_and_its_module_are_both_reachable():
    """CONTRACT.md's ``tables.audit(table_or_tables, suppressed)`` is the function; its module is
    ``sdc_dagster.tables.intruder`` (named apart, so that the function no longer hides it)."""
    import importlib

    module = importlib.import_module("sdc_dagster.tables.intruder")
    assert tables.intruder is module and tables.audit is module.audit
    assert callable(tables.audit) and not hasattr(tables.audit, "__path__")


def certified(table, suppressed):
    """The intervals the certificates alone give (``enough`` accepts every estimate, so no programme
    is solved): the range of each suppressed cell over null-space moves of the true table."""
    from sdc_dagster.tables.intruder import intervals
    from sdc_dagster.tables.model import joint_model

    model = joint_model([table])
    return intervals(model, np.asarray(suppressed, dtype=bool), enough=lambda rows, lo, up: np.ones(len(rows), bool))


def test_c6_rectangle_certificates_by_hand(c6):
    """The 4 suppressed cells (x,c) = 5, (x,d) = 31, (w,c) = 64, (w,d) = 89 have one null direction,
    (+1, -1, -1, +1) / 2 (every published row keeps its total); the projection of (x,c) on it is
    (1, -1, -1, 1) / 4 with gain 1/4. Upwards the cells going down stop it: 4 min(31, 64) steps, so
    (x,c) reaches 5 + 31 = 36; downwards (x,c) itself stops at 0. (w,d) goes up by min(31, 64) = 31
    to 120 and down by min(5, 89) = 5 to 84: the certificates are the exact intervals here."""
    suppressed = pattern(c6, {("x", "c"), ("x", "d"), ("w", "c"), ("w", "d")})
    lo, up = certified(c6, suppressed)
    at = {k: i for i, k in enumerate(zip(c6.cells["v1"], c6.cells["v2"]))}
    assert [lo[at["x", "c"]], up[at["x", "c"]]] == pytest.approx([0.0, 36.0])
    assert [lo[at["w", "d"]], up[at["w", "d"]]] == pytest.approx([84.0, 120.0])
    assert [lo[at["w", "c"]], up[at["w", "c"]]] == pytest.approx([33.0, 69.0])


def test_no_certificate_for_an_exactly_derivable_cell(c6):
    """(x,c) = 5 exactly in the pattern of two joined rectangles (see above): it is a linear function
    of the published cells, so no null direction moves it and its certificate is the point 5."""
    cells = {("w", "a"), ("w", "b"), ("x", "a"), ("x", "b"), ("y", "c"), ("y", "d"), ("z", "c"), ("z", "d"),
             ("x", "c")}
    lo, up = certified(c6, pattern(c6, cells))
    xc = ((c6.cells["v1"] == "x") & (c6.cells["v2"] == "c")).to_numpy()
    assert lo[xc][0] == pytest.approx(5.0) and up[xc][0] == pytest.approx(5.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns())
def test_certificates_are_sound(drawn):
    """Soundness: every certified range lies within the cell's interval from its own programmes
    (the LP interval is at least as wide as its certificate), and contains the true value."""
    table, suppressed = drawn
    lo, up = certified(table, suppressed)
    expected = direct_intervals(table, suppressed)
    for row, (exact_lo, exact_up) in expected.items():
        assert exact_lo - 1e-6 <= lo[row] <= table.published[row] + 1e-9
        assert table.published[row] - 1e-9 <= up[row] <= exact_up + 1e-6


def test_row_space_of_a_rank_deficient_matrix_by_hand():
    """Rows (1,1,0), (0,0,1) and their sum (1,1,1): rank 2, the row space spanned by (1,1,0)/√2 and
    (0,0,1). An orthonormal basis of it projects (1,0,0) onto (1/2,1/2,0), so the certificates'
    direction of that part, its component off the row space, is (1/2,-1/2,0): the null direction."""
    from sdc_dagster.tables.intruder import _row_space

    basis = _row_space(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]))
    assert basis.shape == (3, 2)
    assert basis.T @ basis == pytest.approx(np.eye(2))
    o = np.array([1.0, 0.0, 0.0])
    assert (o - basis @ (basis.T @ o)).tolist() == pytest.approx([0.5, -0.5, 0.0])
    assert _row_space(np.zeros((2, 3))).shape == (3, 0)  # no row of rank: everything is null space
    assert _row_space(np.zeros((0, 3))).shape == (3, 0)
