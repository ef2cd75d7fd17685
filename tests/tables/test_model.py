"""The model of a table: published cells, the matrix from inner cells, duplicates, linked tables."""

import numpy as np
import pandas as pd
import pytest

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError

from .conftest import read


def test_c1_flat_three_dimensional_counts():
    data = read("c1_freq3d_input_inner.csv")
    table = tables.tabulate(data, {"age": None, "geo": None, "year": None}, freq="freq")
    # 2 x 3 x 3 inner cells, (2+1) x (3+1) x (3+1) published cells, none duplicated
    assert table.matrix.shape == (48, 18)
    assert len(table.cells) == 48 and table.cell.max() + 1 == 48
    cells = table.cells.set_index(["age", "geo", "year"])["freq"]
    assert cells[("Total", "Total", "Total")] == data["freq"].sum() == 59
    # by hand from the file: 2014 = 5 + 2 + 0 + 6 + 3 + 4
    assert cells[("Total", "Total", 2014)] == 20
    assert cells[("young", "Portugal", "Total")] == 0 + 0 + 1
    # the file has 3 zero inner cells (its README says 4)
    assert (table.cells["freq"].to_numpy()[table.inner_rows] == 0).sum() == (data["freq"] == 0).sum() == 3
    # every published cell is the sum of the inner cells below it
    inner = table.cells["freq"].to_numpy()[table.inner_rows]
    np.testing.assert_array_equal(table.matrix @ inner, table.cells["freq"].to_numpy())


def test_c2_hierarchy_and_magnitude_from_microdata():
    data = read("c2_magnitude_input_microdata.csv")
    eco = read("c2_magnitude_hierarchy_eco.csv")
    table = tables.tabulate(data, {"region": None, "gender": None, "eco": eco}, value="numVal")
    assert list(table.dimensions[2].codes) == ["Total", "A", "Aa", "Ab", "B", "Ba", "Bb"]
    assert list(table.dimensions[2].leaves) == ["Aa", "Ab", "Ba", "Bb"]
    cells = table.cells.set_index(["region", "gender", "eco"])
    assert cells.loc[("Total", "Total", "Total"), "value"] == data["numVal"].sum()
    assert cells.loc[("Total", "Total", "Total"), "freq"] == 100
    a = data[data["eco"].isin(["Aa", "Ab"]) & (data["region"] == "R1")]
    assert cells.loc[("R1", "Total", "A"), "value"] == a["numVal"].sum()
    assert cells.loc[("R1", "Total", "A"), "freq"] == len(a)
    assert table.contributions["value"].sum() == data["numVal"].sum()


def test_a_parent_with_a_single_child_is_the_same_cell():
    data = pd.DataFrame({"sector": ["gov", "agri", "agri", "ind"], "v": [5.0, 1.0, 2.0, 4.0]})
    hierarchy = pd.DataFrame({"parent": ["Total", "Total", "private", "private", "public"],
                              "child": ["private", "public", "agri", "ind", "gov"]})
    table = tables.tabulate(data, {"sector": hierarchy}, value="v")
    assert list(table.cells["sector"]) == ["Total", "private", "agri", "ind", "public", "gov"]
    cell = dict(zip(table.cells["sector"], table.cell))
    assert cell["public"] == cell["gov"]
    assert len(set(table.cell)) == 5
    assert list(table.cells["value"]) == [12.0, 7.0, 3.0, 4.0, 5.0, 5.0]


def test_holding_counts_holdings_as_contributors():
    data = read("c3a_holding_input_microdata.csv")
    by_unit = tables.tabulate(data, {"cellA": None, "cellB": None}, value="value")
    by_holding = tables.tabulate(data, {"cellA": None, "cellB": None}, value="value", holding="group")
    rows = by_unit.cells.set_index(["cellA", "cellB"]).index
    # (900, 20): units ru9..ru12 in holdings g4 and g5
    position = rows.get_loc((900, 20))
    assert by_unit.contributors[position] == 4
    assert by_holding.contributors[position] == 2
    assert by_holding.contributors[rows.get_loc(("Total", "Total"))] == 9
    np.testing.assert_array_equal(by_unit.cells["value"], by_holding.cells["value"])


@pytest.mark.parametrize(
    "dimensions, message",
    [
        ({"eco": pd.DataFrame({"parent": ["Total", "Total"], "child": ["A", "B"]})}, "'Aa' is not in its hierarchy"),
        ({"eco": pd.DataFrame({"parent": ["Total", "A", "A"], "child": ["A", "Aa", "Ab"]})}, "value 'B'"),
        ({"eco": pd.DataFrame({"parent": ["T1", "T2"], "child": ["Aa", "Ab"]})}, "exactly one root"),
        ({"eco": pd.DataFrame({"parent": ["Total", "Total", "A"], "child": ["Aa", "A", "Aa"]})}, "more than one parent"),
        ({"nace": None}, "'nace' is not in the data"),
    ],
)
def test_bad_dimensions_are_named(dimensions, message):
    data = pd.DataFrame({"eco": ["Aa", "Ab", "B"], "n": [1, 2, 3]})
    with pytest.raises(SDCInputError, match=message):
        tables.tabulate(data, dimensions, freq="n")


def test_a_code_above_the_leaves_is_refused():
    data = pd.DataFrame({"eco": ["Aa", "A"], "n": [1, 2]})
    hierarchy = pd.DataFrame({"parent": ["Total", "A", "A"], "child": ["A", "Aa", "Ab"]})
    with pytest.raises(SDCInputError, match="'A' is a code above the leaves"):
        tables.tabulate(data, {"eco": hierarchy}, freq="n")


def test_reserved_total_and_bad_counts():
    with pytest.raises(SDCInputError, match="'Total' is reserved"):
        tables.tabulate(pd.DataFrame({"a": ["Total", "x"], "n": [1, 2]}), {"a": None}, freq="n")
    with pytest.raises(SDCInputError, match="freq column 'n': row 1 is negative"):
        tables.tabulate(pd.DataFrame({"a": ["y", "x"], "n": [1, -2]}), {"a": None}, freq="n")
    with pytest.raises(SDCInputError, match="value column 'v': row 0 is missing or not a number"):
        tables.tabulate(pd.DataFrame({"a": ["y"], "v": ["a lot"]}), {"a": None}, value="v")


def test_linked_tables_share_their_inner_cells(c4_tables):
    model = tables.joint_model(c4_tables)
    assert model.matrix.shape == (22, 8)
    np.testing.assert_array_equal(model.matrix @ model.start, model.published)
    assert list(model.start) == [2, 2, 8, 8, 3, 3, 3, 7]


def test_linked_tables_over_different_dimensions_get_a_joint_start():
    data = pd.DataFrame({"a": ["x", "x", "y"], "b": ["u", "v", "v"], "c": ["p", "q", "q"]})
    ab = tables.tabulate(data, {"a": None, "b": None})
    ac = tables.tabulate(data, {"a": None, "c": None})
    model = tables.joint_model([ab, ac])
    assert model.matrix.shape == (len(ab.cells) + len(ac.cells), 2 * 2 * 2)
    np.testing.assert_allclose(model.matrix @ model.start, model.published, atol=1e-7)
    assert (model.start >= -1e-9).all()


def test_linked_tables_from_other_data_are_refused(c4_tables):
    other = read("c4_linked_input_inner.csv").assign(n=lambda f: f["n"] + 1)
    single = tables.tabulate(other, {"region": None}, freq="n")
    with pytest.raises(SDCInputError, match="not from the same data|inner cells differ"):
        tables.joint_model([c4_tables[0], single])
