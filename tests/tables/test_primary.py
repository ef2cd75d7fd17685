"""Primary rules against the Handbook's worked examples (Hundepool et al. 2012 §4.2) and by hand."""

import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError

from .conftest import read


def one_cell(contributions, *, holding=None):
    """A one-dimensional table whose cell "c" has the given contributions (one contributor each)."""
    data = pd.DataFrame({"a": "c", "v": contributions})
    if holding is not None:
        data["h"] = holding
    return tables.tabulate(data, {"a": None}, value="v", holding="h" if holding is not None else None)


def unsafe(table, rules, **kwargs) -> bool:
    flags = tables.primary_suppression(table, rules, **kwargs)
    return bool(flags[table.cells["a"] == "c"].iloc[0])


def test_handbook_cell_of_100000_safe_under_1_90_unsafe_under_p10():
    # 100,000 = 50,000 + 49,000 + 1,000 (rest): 50,000 is 50 % <= 90 %; rest 1,000 < 10 % of 50,000
    table = one_cell([50_000.0, 49_000.0, 1_000.0])
    assert not unsafe(table, [{"rule": "nk", "n": 1, "k": 90}])
    assert unsafe(table, [{"rule": "p", "p": 10}])


def test_handbook_cell_of_110000_safe_under_p10_unsafe_under_2_9091():
    # 110,000 = 52,000 + 50,000 + 8,000: rest 8,000 >= 5,200; 102,000 > 90.91 % of 110,000 = 100,001
    table = one_cell([52_000.0, 50_000.0, 8_000.0])
    assert not unsafe(table, [{"rule": "p", "p": 10}])
    assert unsafe(table, [{"rule": "nk", "n": 2, "k": 90.91}])


def test_handbook_upper_protection_level_under_1_85():
    # UPL = 100/k (x1 + .. + xn) - X = 300 / 0.85 - 330 = 22.94 (Hundepool et al. 2012 §4.2.3)
    table = one_cell([300.0, 20.0, 10.0])
    rules = [{"rule": "nk", "n": 1, "k": 85}]
    assert unsafe(table, rules)
    levels = tables.protection_levels(table, rules)[table.cells["a"] == "c"].iloc[0]
    assert levels["upper"] == pytest.approx(30000 / 85 - 330)
    assert round(levels["upper"], 2) == 22.94
    assert levels["lower"] == levels["upper"]


def test_p_percent_protection_level():
    # UPL = p/100 x1 - (X - x1 - x2) = 5,000 - 1,000 for the first Handbook cell
    table = one_cell([50_000.0, 49_000.0, 1_000.0])
    levels = tables.protection_levels(table, [{"rule": "p", "p": 10}])
    assert levels.loc[table.cells["a"] == "c", "upper"].iloc[0] == pytest.approx(4_000.0)
    # the pq rule with q = 100 is the p % rule; with q = 50 the level doubles its first term
    levels = tables.protection_levels(table, [{"rule": "pq", "p": 10, "q": 50}])
    assert levels.loc[table.cells["a"] == "c", "upper"].iloc[0] == pytest.approx(10_000.0 - 1_000.0)


def test_dominance_tie_conventions():
    # (2,70) at an exact tie: 40 + 30 = 70 % of 100
    table = one_cell([40.0, 30.0, 20.0, 10.0])
    rules = [{"rule": "nk", "n": 2, "k": 70}]
    assert not unsafe(table, rules, dominance_tie="strict")
    assert unsafe(table, rules, dominance_tie="inclusive")
    # p % at an exact tie: rest 4 = 10 % of 40
    table = one_cell([40.0, 30.0, 4.0])
    assert not unsafe(table, [{"rule": "p", "p": 10}], dominance_tie="strict")
    assert unsafe(table, [{"rule": "p", "p": 10}], dominance_tie="inclusive")


def test_negative_contributions_count_by_absolute_value():
    # |-80| = 80 of 80 + 10 + 10 = 100: dominant under (1, 75) though the signed sum is -60
    table = one_cell([-80.0, 10.0, 10.0])
    assert unsafe(table, [{"rule": "nk", "n": 1, "k": 75}])
    assert table.cells.loc[table.cells["a"] == "c", "value"].iloc[0] == -60.0


def test_frequency_and_zero_rules_on_c1():
    data = read("c1_freq3d_input_inner.csv")
    table = tables.tabulate(data, {"age": None, "geo": None, "year": None}, freq="freq")
    freq = table.cells["freq"]
    flags = tables.primary_suppression(table, [{"rule": "freq", "n": 3}])
    pd.testing.assert_series_equal(flags, ((freq > 0) & (freq <= 3)).rename("primary"))
    # by hand: inner cells 2, 3, 3, 1, 1, 3 and the margin young x Portugal = 1, young x Iceland x Total = 3
    assert flags.sum() == 9
    zero = tables.primary_suppression(table, [{"rule": "zero"}])
    assert zero.sum() == (freq == 0).sum() == 3
    both = tables.primary_suppression(table, [{"rule": "freq", "n": 3}, {"rule": "zero"}])
    pd.testing.assert_series_equal(both, (flags | zero).rename("primary"))


def test_tau_argus_holding_example_c3a():
    """c3a, the tau-Argus manual's holding example, under the dominance rule (1, 75) (tau-Argus
    manual §4.2.3: at holding level a holding's contributions are summed). By hand from the file:

    at contributor level no cell is dominated (largest shares: (900,30) 700/1010 = 69.3 %,
    (900,Total) 700/1163 = 60.2 %); at holding level g6 = 700 + 200 = 900 dominates (900,30)
    (900/1010 = 89.1 %) and (900,Total) (900/1163 = 77.4 %), and g5 = 43 + 34 + 53 = 130 dominates
    (900,20) (130/153 = 85.0 %); every (800, .) and (Total, .) cell stays below 75 % (largest: (800,20)
    g1 = 1187 of 1831 = 64.8 %).
    """
    data = read("c3a_holding_input_microdata.csv")
    rules = [{"rule": "nk", "n": 1, "k": 75}]
    by_unit = tables.tabulate(data, {"cellA": None, "cellB": None}, value="value")
    by_holding = tables.tabulate(data, {"cellA": None, "cellB": None}, value="value", holding="group")
    assert not tables.primary_suppression(by_unit, rules).any()
    flags = tables.primary_suppression(by_holding, rules)
    unsafe_cells = set(map(tuple, by_holding.cells.loc[flags, ["cellA", "cellB"]].to_numpy().tolist()))
    assert unsafe_cells == {(900, "Total"), (900, 20), (900, 30)}
    # the frequency rule counts holdings: (900,20) has 4 units in 2 holdings (g4, g5), (800,20) 4 units
    # in 2 (g1, g2); by units no cell has fewer than 4
    freq = tables.primary_suppression(by_holding, [{"rule": "freq", "n": 2}])
    assert set(map(tuple, by_holding.cells.loc[freq, ["cellA", "cellB"]].to_numpy().tolist())) == {(800, 20), (900, 20)}
    assert not tables.primary_suppression(by_unit, [{"rule": "freq", "n": 2}]).any()


def test_request_rule():
    data = pd.DataFrame({"a": ["c"] * 3 + ["d"] * 3, "v": [60.0, 30.0, 10.0, 60.0, 30.0, 10.0],
                         "asked": [False, True, False, False, False, False]})
    table = tables.tabulate(data, {"a": None}, value="v", request="asked")
    flags = tables.primary_suppression(table, [{"rule": "request", "percent": 25}]).set_axis(table.cells["a"])
    # c: the requesting contributor has 30 % > 25 %; d: nobody asked; Total: 30 of 200 = 15 %
    assert flags.to_dict() == {"Total": False, "c": True, "d": False}
    flags = tables.primary_suppression(table, [{"rule": "request", "percent": 30}], dominance_tie="inclusive")
    assert flags.set_axis(table.cells["a"])["c"]


@pytest.mark.parametrize(
    "rules, message",
    [
        ([{"rule": "nk", "n": 2}], "needs 'k'"),
        ([{"rule": "freq", "n": 0}], "'n': must be an integer >= 1"),
        ([{"rule": "dominance", "n": 1}], "must be one of"),
        ([{"rule": "p", "p": 10, "k": 3}], "unknown parameter 'k'"),
        ([], "non-empty list"),
    ],
)
def test_bad_rules_are_named(rules, message):
    with pytest.raises(SDCInputError, match=message):
        tables.primary_suppression(one_cell([1.0]), rules)


def test_magnitude_rules_need_contributions():
    table = tables.tabulate(pd.DataFrame({"a": ["c"], "n": [3]}), {"a": None}, freq="n")
    with pytest.raises(SDCInputError, match="tabulate microdata with value="):
        tables.primary_suppression(table, [{"rule": "p", "p": 10}])
    with pytest.raises(SDCInputError, match="dominance_tie: must be one of"):
        tables.primary_suppression(table, [{"rule": "freq", "n": 3}], dominance_tie=">=")


def test_pq_rule_by_hand():
    # 100 = 60 + 30 + 10; pq with p = 10, q = 50: q (X - x1 - x2) = 500 < p x1 = 600: unsafe;
    # with q = 100 (the p % rule): 1,000 >= 600: safe; at q = 60 the tie 600 = 600 is safe under
    # "strict" (<) and unsafe under "inclusive" (<=)
    table = one_cell([60.0, 30.0, 10.0])
    assert unsafe(table, [{"rule": "pq", "p": 10, "q": 50}])
    assert not unsafe(table, [{"rule": "pq", "p": 10, "q": 100}])
    assert not unsafe(table, [{"rule": "p", "p": 10}])
    assert not unsafe(table, [{"rule": "pq", "p": 10, "q": 60}])
    assert unsafe(table, [{"rule": "pq", "p": 10, "q": 60}], dominance_tie="inclusive")


def test_rules_combine_and_the_largest_level_counts():
    # 330 = 300 + 20 + 10: (1, 85) asks 22.94, p = 10 % asks 30 - 10 = 20; together the larger
    table = one_cell([300.0, 20.0, 10.0])
    rules = [{"rule": "nk", "n": 1, "k": 85}, {"rule": "p", "p": 10}]
    level = tables.protection_levels(table, rules).loc[table.cells["a"] == "c", "upper"].iloc[0]
    assert level == pytest.approx(30000 / 85 - 330)
    # a cell unsafe only under the frequency rule needs no distance, only not to be exactly derivable
    levels = tables.protection_levels(table, [{"rule": "freq", "n": 3}])
    assert unsafe(table, [{"rule": "freq", "n": 3}]) and (levels["upper"] == 0).all()


def test_zero_rule_counts_contributors_not_the_value():
    # a cell whose contributions cancel (+5, -5) is not empty: the zero rule leaves it, freq flags it
    data = pd.DataFrame({"a": ["c", "c", "d"], "v": [5.0, -5.0, 1.0]})
    table = tables.tabulate(data, {"a": None}, value="v")
    assert not unsafe(table, [{"rule": "zero"}])
    assert unsafe(table, [{"rule": "freq", "n": 2}])


@settings(max_examples=25, deadline=None)
@given(st.integers(20, 90), st.lists(st.integers(1, 30), max_size=5), st.integers(2, 40), st.sampled_from([5, 10, 20, 25]))
def test_p_percent_upper_protection_level_is_the_distance_to_safety(hundreds, rest, spare, p):
    """Hundepool et al. 2012 §4.2.3: the UPL of a cell unsafe under p % is how much the rest must
    grow for the cell to be safe: one more contribution of UPL + 1 (below x1 and x2) makes it safe,
    one of UPL - 1 does not (integers, x1 a multiple of 100: no rounding at the boundary)."""
    x1 = 100 * hundreds
    assume(p * hundreds - sum(rest) > 1)  # unsafe, with a level above 1
    x2 = max(p * hundreds - sum(rest) + spare, *rest, 1)  # large enough to stay second after the addition
    contributions = [float(x1), float(x2), *map(float, rest)]
    table = one_cell(contributions)
    rules = [{"rule": "p", "p": p}]
    assert unsafe(table, rules)
    level = tables.protection_levels(table, rules).loc[table.cells["a"] == "c", "upper"].iloc[0]
    assert not unsafe(one_cell([*contributions, level + 1]), rules)
    assert unsafe(one_cell([*contributions, level - 1]), rules)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(400, 1000), min_size=1, max_size=2), st.lists(st.integers(1, 30), max_size=5),
       st.sampled_from([60, 75, 80, 90]))
def test_dominance_upper_protection_level_is_the_distance_to_safety(top, others, k):
    """The (n, k) UPL 100/k (x1 + .. + xn) - X: adding UPL + 1 to the cell (as a contribution below
    the n largest) makes it safe, adding UPL - 1 does not."""
    n = len(top)
    contributions = [float(c) for c in sorted(top, reverse=True) + sorted(others, reverse=True)]
    table = one_cell(contributions)
    rules = [{"rule": "nk", "n": n, "k": k}]
    assume(unsafe(table, rules))
    level = tables.protection_levels(table, rules).loc[table.cells["a"] == "c", "upper"].iloc[0]
    assume(1 < level <= min(top) - 1)
    assert not unsafe(one_cell([*contributions, level + 1]), rules)
    assert unsafe(one_cell([*contributions, level - 1]), rules)
