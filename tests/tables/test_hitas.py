"""HiTaS (method hitas): the decomposition into subtables, a two-level example checked by hand whose
pattern depends on the top-down order, the joint audit of every released pattern and the ILP never
dearer than the heuristic."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables.hitas import subtables

GEO = pd.DataFrame(
    [("Total", "A"), ("Total", "B"), ("A", "a1"), ("A", "a2"), ("B", "b1"), ("B", "b2")], columns=["parent", "child"]
)


def two_level_table():
    """geo (Total > A{a1, a2}, B{b1, b2}) x sex (f, m): the counts of the hand computation below."""
    counts = {("a1", "f"): 5, ("a1", "m"): 6, ("a2", "f"): 10, ("a2", "m"): 12,
              ("b1", "f"): 1, ("b1", "m"): 20, ("b2", "f"): 1, ("b2", "m"): 30}
    data = pd.DataFrame([(g, s, n) for (g, s), n in counts.items()], columns=["geo", "sex", "n"])
    return tables.tabulate(data, {"geo": GEO, "sex": None}, freq="n")


def cells(table, mask):
    return set(zip(table.cells.loc[mask, "geo"], table.cells.loc[mask, "sex"]))


def test_the_subtables_of_two_levels_are_the_top_then_a_and_b():
    table = two_level_table()
    groups = subtables(table)
    assert [[s.levels for s in g] for g in groups] == [[(0, 0)], [(1, 0), (1, 0)]]
    named = [[cells(table, np.isin(np.arange(len(table.cells)), s.rows)) for s in g] for g in groups]
    rows = {"Total": ["Total", "A", "B"], "A": ["A", "a1", "a2"], "B": ["B", "b1", "b2"]}
    expected = [{(g, s) for g in rows[parent] for s in ("Total", "f", "m")} for parent in ("Total", "A", "B")]
    assert named == [[expected[0]], expected[1:]]


def test_two_levels_by_hand_the_top_suppressions_are_protected_again_below():
    """Primaries (1 <= n <= 3): (b1, f) = 1, (b2, f) = 1 and (B, f) = 2.

    Top subtable (Total, A, B) x (Total, f, m), cost by value: the cheapest rectangle through (B, f)
    is (A, f) 15, (A, m) 18, (B, f) 2, (B, m) 50 = 85 (with (B, Total) and (A, Total): 102; with the
    Total row: 137). Subtable A (A, a1, a2) x (Total, f, m) has no primary of its own, but (A, f) and
    (A, m) come down suppressed and (A, Total) = 33 published: the cheapest protection is row a1,
    (a1, f) 5 + (a1, m) 6 = 11 (row a2: 22; (a1, Total) would be derivable from column Total).
    Subtable B: (b1, f), (b2, f), (B, f) and (B, m) suppressed, (B, Total) published; each of rows
    b1, b2 needs a second suppression: (b1, m) 20 + (b2, m) 30 = 50 (the totals 21 + 31 = 52). Taken
    together, with t = (a1, f), u = (b1, f), v = (b2, f) >= 0: t + u + v = 7 from (Total, f) = 17
    (the other rows and columns fix the rest), so (b1, f), (b2, f), (B, f) = u + v = 7 - t and
    (a1, f) each lie in [0, 7] and the joint audit passes: nothing to repair.
    Subtable A would suppress nothing were it protected before the top (order matters)."""
    table = two_level_table()
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    assert cells(table, primary) == {("b1", "f"), ("b2", "f"), ("B", "f")}
    suppressed = tables.secondary_suppression(table, primary, method="hitas")
    assert cells(table, suppressed) == {("A", "f"), ("A", "m"), ("B", "f"), ("B", "m"), ("a1", "f"), ("a1", "m"),
                                        ("b1", "f"), ("b1", "m"), ("b2", "f"), ("b2", "m")}
    result = tables.audit(table, suppressed).set_axis(list(zip(table.cells["geo"], table.cells["sex"])))
    for cell in [("b1", "f"), ("b2", "f"), ("B", "f")]:
        assert (result.loc[[cell], "lo"].item(), result.loc[[cell], "up"].item()) == pytest.approx((0.0, 7.0))
    assert (result.loc[[("a1", "f")], "lo"].item(), result.loc[[("a1", "f")], "up"].item()) == pytest.approx((0, 7))
    # subtable A alone, without the suppressions carried from the top, needs nothing
    a_rows = cells(table, table.cells["geo"].isin(["A", "a1", "a2"]).to_numpy())
    assert not (cells(table, primary) & a_rows)


def test_hitas_never_costs_less_than_the_ilp_on_the_two_level_table():
    table = two_level_table()
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    price = {m: table.cells.loc[tables.secondary_suppression(table, primary, method=m), "freq"].sum()
             for m in ("optimal", "hitas")}
    assert price["hitas"] == 1 + 1 + 2 + 20 + 30 + 50 + 15 + 18 + 5 + 6
    assert price["optimal"] <= price["hitas"]


def test_the_whole_table_is_audited_at_the_end_not_each_subtable_and_a_failing_pattern_refused(monkeypatch):
    """HiTaS's last audit (the one after the method, in ``_secondary``) is over the whole table (21
    cells), never over a 9-cell subtable on its own (each subtable's repair audited its primaries
    until they passed, and the whole pattern is repaired and audited after them); and a whole
    pattern that fails it is refused (the joint repair replaced by one that publishes (b1, m) of the
    subtables' pattern: row b1 then shows (b1, f) = 21 - 20 = 1)."""
    import inspect

    from sdc_dagster.tables import secondary

    table = two_level_table()
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    last_audits = []
    audit = secondary.protection_failures

    def counted(model, suppressed, *args, **kwargs):
        if inspect.stack()[1].function == "_secondary":
            last_audits.append(len(suppressed))
        return audit(model, suppressed, *args, **kwargs)

    monkeypatch.setattr(secondary, "protection_failures", counted)
    tables.secondary_suppression(table, primary, method="hitas")
    assert last_audits == [21]
    b1_m = ((table.cells["geo"] == "b1") & (table.cells["sex"] == "m")).to_numpy()
    repair = secondary._repair
    monkeypatch.setattr(secondary, "_repair", lambda *args: repair(*args) & ~b1_m)
    with pytest.raises(RuntimeError, match="1 primary cells fail the audit"):
        tables.secondary_suppression(table, primary, method="hitas")


@pytest.mark.slow
def test_a_process_pool_gives_the_same_pattern():
    table = census_like(np.random.default_rng(4).poisson(2.0, 2 * 2 * 3 * 3))
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 2}])
    alone = tables.secondary_suppression(table, primary, method="hitas")
    pooled = tables.secondary_suppression(table, primary, method="hitas", workers=2)
    assert alone.equals(pooled)


def test_workers_must_be_a_whole_number_of_processes():
    table = two_level_table()
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    with pytest.raises(SDCInputError, match="workers: must be an integer >= 1"):
        tables.secondary_suppression(table, primary, method="hitas", workers=0)


def census_like(counts, groups=2, members=2, categories=3):
    """Total > G{g} > G{g}M{m} (``groups`` x ``members`` leaves) by a flat dimension of
    ``categories`` codes, one count per inner cell from ``counts``."""
    pairs = [("Total", f"G{g}") for g in range(groups)]
    pairs += [(f"G{g}", f"G{g}M{m}") for g in range(groups) for m in range(members)]
    geo = pd.DataFrame(pairs, columns=["parent", "child"])
    leaves = [f"G{g}M{m}" for g in range(groups) for m in range(members)]
    grid = pd.MultiIndex.from_product([leaves, [f"k{c}" for c in range(categories)]], names=["geo", "k"])
    data = grid.to_frame(index=False)
    data["n"] = np.asarray(counts)[: len(data)]
    return tables.tabulate(data, {"geo": geo, "k": None}, freq="n")


@st.composite
def hierarchical_tables(draw):
    groups, members, categories = draw(st.integers(2, 3)), draw(st.integers(1, 3)), draw(st.integers(2, 3))
    n = groups * members * categories
    return census_like(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), groups, members, categories)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables())
def test_hitas_passes_the_joint_audit_and_costs_no_less_than_the_ilp(table):
    """Every HiTaS pattern released passes the intruder's programme over the whole table (each
    primary's interval at least 1 wide), and the exact ILP's optimum is never dearer."""
    primary = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    patterns, refused = {}, set()
    for method in ("optimal", "hitas"):
        try:
            patterns[method] = tables.secondary_suppression(table, primary, method=method, cost="count")
        except RuntimeError:
            refused.add(method)
    assert refused in (set(), {"optimal", "hitas"})  # HiTaS refuses only what no pattern protects
    if refused:
        return
    hitas = patterns["hitas"]
    assert hitas[primary].all()
    width = tables.audit(table, hitas).eval("up - lo")
    assert (width[primary] >= 1 - 1e-6).all()
    # cost "count": one per distinct cell (a parent with a single child is its child's cell)
    distinct = {m: len(np.unique(table.cell[s.to_numpy()])) for m, s in patterns.items()}
    assert distinct["optimal"] <= distinct["hitas"]


def test_the_repair_publishes_a_zero_unless_nothing_else_protects():
    """a = 1 (primary), b = 0, c = 5, Total = 6, starting from a alone (derivable: 6 - 0 - 5). The
    zero b is the cheapest cell and would leave a in [0, 1]; the repair publishes it and suppresses
    c (a in [0, 6]). With c and Total frozen as published, only b protects, and it is suppressed."""
    from sdc_dagster.tables.model import joint_model
    from sdc_dagster.tables.secondary import _costs, _repair

    table = tables.tabulate(pd.DataFrame({"k": ["a", "b", "c"], "n": [1, 0, 5]}), {"k": None}, freq="n")
    model = joint_model([table])
    codes = table.cells["k"].to_numpy()
    primary = codes == "a"
    rep = np.arange(len(codes))
    none = np.zeros(len(codes))
    for never, expected in ((np.zeros(len(codes), dtype=bool), {"a", "c"}), (np.isin(codes, ["c", "Total"]), {"a", "b"})):
        pattern = _repair(model, rep, primary, none, none, _costs(model, "value"), never, 1.0, 60.0, primary)
        assert set(codes[pattern]) == expected
