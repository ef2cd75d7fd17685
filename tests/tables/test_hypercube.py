"""GHMiter's hypercubes (Repsilber 2002; Hundepool et al. 2012 §4.4.2): their ranges by hand on c6,
the cheapest one by hand, and as properties against the attacker's programmes."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import sdc_dagster.tables as tables
from sdc_dagster.tables import hypercube, intruder
from sdc_dagster.tables.intruder import protection_failures, requirement
from sdc_dagster.tables.model import joint_model

from .conftest import read


@pytest.fixture
def c6():
    return tables.tabulate(read("c6_audit_input_inner.csv"), {"v1": None, "v2": None}, freq="freq")


def at(table):
    return {k: i for i, k in enumerate(zip(*(table.cells[n] for n in table.names)))}


def mask(table, cells):
    where = at(table)
    out = np.zeros(len(table.cells), dtype=bool)
    out[[where[c] for c in cells]] = True
    return out


def programme_interval(table, suppressed, row):
    """The attacker's programme of one cell over every inner cell (no reduction): min and max."""
    matrix, b = table.matrix.toarray(), table.published
    ends = []
    for sign in (1.0, -1.0):
        result = linprog(sign * matrix[row], A_eq=matrix[~suppressed], b_eq=b[~suppressed], bounds=(0, None),
                         method="highs")
        assert result.status in (0, 3)
        ends.append(sign * result.fun if result.status == 0 else np.inf)
    return ends


def test_the_codes_of_a_flat_table_and_no_shape_otherwise(c6, c4_tables):
    assert hypercube.flat_shape(joint_model([c6])) == (5, 5)  # Total, w, x, y, z by Total, a, b, c, d
    assert hypercube.flat_shape(joint_model(c4_tables)) is None  # linked tables
    assert hypercube.flat_shape(joint_model(c4_tables[:1])) is None  # a hierarchy
    single = pd.DataFrame({"a": ["p", "p"], "b": ["u", "v"], "n": [1, 2]})
    assert hypercube.flat_shape(joint_model([tables.tabulate(single, {"a": None, "b": None}, freq="n")])) is None


def test_c6_ranges_of_a_rectangle_and_of_a_hypercube_through_the_totals_by_hand(c6):
    """(x,c) = 5 on the rectangle with (w,d): corners (x,c) +, (w,c) = 64 -, (x,d) = 31 -,
    (w,d) = 89 +: up by min(64, 31) = 31, down by min(5, 89) = 5, [0, 36], the programmes' interval.
    Through the total of v1 and column d: corners (x,c) +, (Total,c) +, (x,d) -, (Total,d) -, of which
    (x,c) and (x,d) are inner cells: again up by 31 and down by 5. A hypercube with a corner published
    certifies nothing: the point 5."""
    row = np.array([at(c6)["x", "c"]])
    for cells in ({("x", "c"), ("w", "c"), ("x", "d"), ("w", "d")},
                  {("x", "c"), ("Total", "c"), ("x", "d"), ("Total", "d")}):
        suppressed = mask(c6, cells)
        lo, up = hypercube.ranges((5, 5), row, c6.published, suppressed)
        assert [lo[0], up[0]] == pytest.approx([0.0, 36.0])
        assert programme_interval(c6, suppressed, row[0]) == pytest.approx([0.0, 36.0])
    lo, up = hypercube.ranges((5, 5), row, c6.published, mask(c6, {("x", "c"), ("w", "c"), ("x", "d")}))
    assert [lo[0], up[0]] == [5.0, 5.0]


def test_c6_cheapest_hypercube_by_hand(c6):
    """Protecting (x,c) = 5 by value: the other corners of (y,d) cost 59 + 31 + 85 = 175, of (w,d)
    64 + 31 + 89 = 184, of (w,a) 64 + 90 + 30 = 184, of (w,b) 235, every one through a total more
    (a column total is at least 779): (y,d) is chosen, the rectangle of the ILP (cost 180 with
    (x,c)). With (x,d) never suppressed, (w,a) is the cheapest left."""
    model = joint_model([c6])
    row = np.array([at(c6)["x", "c"]])
    start = mask(c6, {("x", "c")})
    meets = requirement(model, np.zeros(25), np.zeros(25))
    never = np.zeros(25, dtype=bool)
    grown, found = hypercube.cheapest((5, 5), row, c6.published, c6.published, start, never, meets)
    assert found.all() and np.array_equal(grown, mask(c6, {("x", "c"), ("y", "c"), ("x", "d"), ("y", "d")}))
    never[at(c6)["x", "d"]] = True
    grown, found = hypercube.cheapest((5, 5), row, c6.published, c6.published, start, never, meets)
    assert found.all() and np.array_equal(grown, mask(c6, {("x", "c"), ("w", "c"), ("x", "a"), ("w", "a")}))


def test_no_hypercube_when_every_one_has_a_corner_never_suppressed(c6):
    model = joint_model([c6])
    row = np.array([at(c6)["x", "c"]])
    never = ~mask(c6, {("x", "c")})
    grown, found = hypercube.cheapest((5, 5), row, c6.published, c6.published, ~never, never,
                                      requirement(model, np.zeros(25), np.zeros(25)))
    assert not found.any() and np.array_equal(grown, ~never)


def test_a_hypercube_certifies_the_audit_without_a_programme_or_a_decomposition(c6, monkeypatch):
    """The pass/fail audit of (x,c) on the rectangle of (y,d) ends at the hypercube's range
    [0, 36]: neither a linear programme nor the null-space certificates are computed."""

    def forbidden(*args, **kwargs):
        raise AssertionError("not needed")

    monkeypatch.setattr(intruder.Programme, "minimise", forbidden)
    monkeypatch.setattr(intruder, "certificates", forbidden)
    model = joint_model([c6])
    primary = mask(c6, {("x", "c")})
    suppressed = mask(c6, {("x", "c"), ("y", "c"), ("x", "d"), ("y", "d")})
    failing, lo, up = protection_failures(model, suppressed, primary, np.zeros(25), np.zeros(25), only_primaries=True)
    assert not failing.any()
    assert [lo[primary][0], up[primary][0]] == pytest.approx([0.0, 36.0])


@st.composite
def flat_tables(draw):
    """A flat table of 2 or 3 dimensions of 2 to 4 categories with small counts (many 0 to 3)."""
    shape = draw(st.lists(st.integers(2, 4), min_size=2, max_size=3))
    n = int(np.prod(shape))
    grid = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    data = pd.DataFrame({f"d{i}": [f"c{v}" for v in g.ravel()] for i, g in enumerate(grid)})
    data["n"] = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    table = tables.tabulate(data, {c: None for c in data.columns if c != "n"}, freq="n")
    flags = draw(st.lists(st.booleans(), min_size=len(table.cells), max_size=len(table.cells)))
    return table, np.asarray(flags)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables())
def test_hypercube_ranges_lie_within_the_programmes_interval(drawn):
    """Soundness of the certificate: for a random pattern, every suppressed cell's hypercube range
    contains its true value and lies within the interval of its own programmes."""
    table, suppressed = drawn
    shape = hypercube.flat_shape(joint_model([table]))
    rows = np.flatnonzero(suppressed)
    lo, up = hypercube.ranges(shape, rows, table.published, suppressed)
    for row, low, high in zip(rows, lo, up):
        exact_lo, exact_up = programme_interval(table, suppressed, row)
        assert exact_lo - 1e-6 <= low <= table.published[row] <= high <= exact_up + 1e-6


def brute_force_ranges(shape, row, values, suppressed):
    """Every hypercube of ``row`` in turn (itertools over the alternatives, each of its 2^m corners
    read): the module text's range over those fully suppressed."""
    import itertools

    position = np.unravel_index(row, shape)
    lo = up = float(values[row])
    others = [[a for a in range(n) if a != p] for n, p in zip(shape, position)]
    for alternative in itertools.product(*others):
        t_up = t_down = np.inf
        closed = True
        for taken in itertools.product((0, 1), repeat=len(shape)):
            corner = tuple(a if t else p for a, p, t in zip(alternative, position, taken))
            cell = np.ravel_multi_index(corner, shape)
            closed &= bool(suppressed[cell])
            flips = sum(1 for a, p, t in zip(alternative, position, taken) if t and a != 0 and p != 0)
            if all(c != 0 for c in corner):  # an inner corner bounds the step
                if flips % 2:
                    t_up = min(t_up, values[cell])
                else:
                    t_down = min(t_down, values[cell])
        if closed:
            lo, up = min(lo, values[row] - t_down), max(up, values[row] + t_up)
    return lo, up


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables())
def test_hypercube_ranges_miss_no_fully_suppressed_hypercube(drawn):
    """Completeness of :func:`hypercube.ranges`, which reads only the hypercubes whose corners next
    to the row are suppressed: its range is the one over every fully suppressed hypercube, each
    enumerated."""
    table, suppressed = drawn
    shape = hypercube.flat_shape(joint_model([table]))
    rows = np.flatnonzero(suppressed)
    lo, up = hypercube.ranges(shape, rows, table.published, suppressed)
    for row, low, high in zip(rows, lo, up):
        assert (low, high) == pytest.approx(brute_force_ranges(shape, row, table.published, suppressed))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables())
def test_the_cheapest_hypercubes_protect_what_they_are_chosen_for(drawn):
    """Every primary (1 <= n <= 3) given its cheapest hypercube in turn has, under the grown
    pattern, a programmes' interval containing its certified range and at least 1 wide; and the
    Gauss pattern with its repair passes the attacker's programme of every primary."""
    table, _ = drawn
    model = joint_model([table])
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}]).to_numpy()
    n = len(table.cells)
    meets = requirement(model, np.zeros(n), np.zeros(n))
    rows = np.flatnonzero(primary)
    shape = hypercube.flat_shape(model)
    grown, found = hypercube.cheapest(shape, rows, table.published, table.published + 1e-6, primary,
                                      np.zeros(n, dtype=bool), meets)
    lo, up = hypercube.ranges(shape, rows[found], table.published, grown)
    for row, low, high in zip(rows[found], lo, up):
        exact_lo, exact_up = programme_interval(table, grown, row)
        assert exact_lo - 1e-6 <= low and high <= exact_up + 1e-6
        assert high - low >= 1 - 1e-6
    try:
        suppressed = tables.secondary_suppression(table, pd.Series(primary, index=table.cells.index), method="gauss")
    except RuntimeError as exc:  # no pattern can protect: nothing is released
        assert "no pattern meets the protection" in str(exc)
        return
    suppressed = suppressed.to_numpy()
    for row in rows:
        exact_lo, exact_up = programme_interval(table, suppressed, row)
        assert exact_up - exact_lo >= 1 - 1e-6


GEO = pd.DataFrame([("Total", "A"), ("Total", "B"), ("A", "a1"), ("A", "a2"), ("B", "b1"), ("B", "b2")],
                   columns=["parent", "child"])


def two_level_table():
    """geo (Total > A{a1, a2}, B{b1, b2}) x sex (f, m), the counts of tests/tables/test_hitas.py."""
    counts = {("a1", "f"): 5, ("a1", "m"): 6, ("a2", "f"): 10, ("a2", "m"): 12,
              ("b1", "f"): 1, ("b1", "m"): 20, ("b2", "f"): 1, ("b2", "m"): 30}
    data = pd.DataFrame([(g, s, n) for (g, s), n in counts.items()], columns=["geo", "sex", "n"])
    return tables.tabulate(data, {"geo": GEO, "sex": None}, freq="n")


def test_leaf_subtable_hypercubes_by_hand():
    """Leaf subtable A: (A, a1, a2) x (Total, f, m). With a1 and a2 suppressed in f and m, the
    rectangle (a1,f) +, (a2,f) -, (a1,m) -, (a2,m) + moves no other cell (A's rows keep their sums):
    (a1,f) = 5 goes up by min(10, 6) = 6 and down by min(5, 12) = 5, [0, 11], the programmes'
    interval. Through A itself, (a1,f), (A,f), (a1,m), (A,m) suppressed: moving (A,f) would move
    (Total,f) = 17, published (A is not the root), so that hypercube certifies nothing, and rightly:
    (A,f) = 17 - (B,f) 2 = 15, (a1,f) = 15 - (a2,f) 10 = 5 exactly."""
    table = two_level_table()
    model = joint_model([table])
    row = np.array([at(table)["a1", "f"]])
    rectangle = mask(table, {("a1", "f"), ("a2", "f"), ("a1", "m"), ("a2", "m")})
    lo, up = hypercube.leaf_ranges(model, row, rectangle)
    assert [lo[0], up[0]] == pytest.approx([0.0, 11.0])
    assert programme_interval(table, rectangle, row[0]) == pytest.approx([0.0, 11.0])
    through_a = mask(table, {("a1", "f"), ("A", "f"), ("a1", "m"), ("A", "m")})
    lo, up = hypercube.leaf_ranges(model, row, through_a)
    assert [lo[0], up[0]] == [5.0, 5.0]
    assert programme_interval(table, through_a, row[0]) == pytest.approx([5.0, 5.0])
    assert hypercube.leaf_ranges(joint_model([table, table]), row, rectangle) is None  # linked tables


@st.composite
def hierarchical_tables(draw):
    """Total > G{g} > G{g}M{m} (2-3 groups of 2-3 members) by one or two flat dimensions of 2-3
    categories, small counts (many 0 to 3), and a random pattern."""
    groups, members = draw(st.integers(2, 3)), draw(st.integers(2, 3))
    pairs = [("Total", f"G{g}") for g in range(groups)]
    pairs += [(f"G{g}", f"G{g}M{m}") for g in range(groups) for m in range(members)]
    geo = pd.DataFrame(pairs, columns=["parent", "child"])
    flat = draw(st.lists(st.integers(2, 3), min_size=1, max_size=2))
    leaves = [f"G{g}M{m}" for g in range(groups) for m in range(members)]
    grid = pd.MultiIndex.from_product([leaves] + [[f"c{i}" for i in range(n)] for n in flat]).to_frame(index=False)
    grid.columns = ["geo"] + [f"d{i}" for i in range(len(flat))]
    grid["n"] = draw(st.lists(st.integers(0, 8), min_size=len(grid), max_size=len(grid)))
    table = tables.tabulate(grid, {"geo": geo, **{f"d{i}": None for i in range(len(flat))}}, freq="n")
    flags = draw(st.lists(st.booleans(), min_size=len(table.cells), max_size=len(table.cells)))
    return table, np.asarray(flags)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables())
def test_leaf_subtable_ranges_lie_within_the_programmes_interval(drawn):
    """Soundness in a hierarchical table: every suppressed cell's range over the hypercubes of its
    leaf subtables contains its true value and lies within the interval of its own programmes over
    the whole table."""
    table, suppressed = drawn
    rows = np.flatnonzero(suppressed)
    lo, up = hypercube.leaf_ranges(joint_model([table]), rows, suppressed)
    for row, low, high in zip(rows, lo, up):
        exact_lo, exact_up = programme_interval(table, suppressed, row)
        assert exact_lo - 1e-6 <= low <= table.published[row] <= high <= exact_up + 1e-6
