"""The intruder's audit: intervals by hand on c6 and c4, unbounded and pinned cells."""

import numpy as np
import pandas as pd
import pytest

import sdc_dagster.tables as tables

from .conftest import read


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
