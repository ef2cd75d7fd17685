"""Tables in and out: tau-Argus's .hrc/.tab/.rda, hierarchies from codes and columns, the office's
published layout (CSV, Excel), aggregated input from CSV."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError
from tests.tables.conftest import read

ECO = read("c2_magnitude_hierarchy_eco.csv")


def _frame(pairs) -> pd.DataFrame:
    return pd.DataFrame(pairs, columns=["parent", "child"], dtype=object)


def _pairs(hierarchy: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, hierarchy[["parent", "child"]].to_numpy()))


# ---------------------------------------------------------------- .hrc


def test_write_hrc_hand_checked_text(tmp_path):
    # c2's eco hierarchy: Total > A{Aa, Ab}, B{Ba, Bb}; the total is not listed, one "@" per level
    # below the top, CR LF line ends (tau-Argus manual §4.4.2; sdcTable's write_hrc)
    path = tables.write_hrc(ECO, tmp_path / "eco.hrc")
    assert path.read_bytes() == b"A\r\n@Aa\r\n@Ab\r\nB\r\n@Ba\r\n@Bb\r\n"
    back = tables.read_hrc(path)
    assert back.equals(_frame([("Total", "A"), ("A", "Aa"), ("A", "Ab"), ("Total", "B"), ("B", "Ba"), ("B", "Bb")]))


def test_read_hrc_text_padded_codes_and_own_total_and_leadstring():
    # sdcTable pads the codes to the variable's width after the lead string; blank lines are skipped
    text = "  A\n@ A1\n@@A11\n\n@ A2\n  B\n"
    assert tables.read_hrc(text, total="EU").equals(
        _frame([("EU", "A"), ("A", "A1"), ("A1", "A11"), ("A", "A2"), ("EU", "B")]))
    assert tables.read_hrc("x\n**y\n", leadstring="**").equals(_frame([("Total", "x"), ("x", "y")]))
    # a one-line text is a code; a name ending in .hrc is a file, which must exist
    assert tables.read_hrc("A").equals(_frame([("Total", "A")]))
    with pytest.raises(SDCInputError, match=r"missing.hrc: no such .hrc file"):
        tables.read_hrc("missing.hrc")


@pytest.mark.parametrize("text, message", [
    ("A\n@@B\n", r"bad.hrc line 2: 'B' is at depth 2 but follows a code at depth 0"),
    ("@A\n", r"bad.hrc line 1: 'A' is at depth 1 .*the first code must be at depth 0"),
    ("A\n@\n", r"bad.hrc line 2: no code after the lead string '@'"),
    ("A\n@B\nC\n@B\n", r"bad.hrc line 4: code 'B' is listed again \(first on line 2\)"),
    ("A\nTotal\n", r"bad.hrc line 2: code 'Total' is the total"),
    ("\n\n", r"bad.hrc: the hierarchy file is empty"),
])
def test_malformed_hrc_names_file_and_line(tmp_path, text, message):
    (tmp_path / "bad.hrc").write_text(text)
    with pytest.raises(SDCInputError, match=message):
        tables.read_hrc(tmp_path / "bad.hrc")


def test_write_hrc_refuses_what_the_file_cannot_give_back(tmp_path):
    with pytest.raises(SDCInputError, match=r"its root is 'Total', not the total 'All'"):
        tables.write_hrc(ECO, tmp_path / "x.hrc", total="All")
    with pytest.raises(SDCInputError, match=r"code '@A' cannot be written"):
        tables.write_hrc(_frame([("Total", "@A")]), tmp_path / "x.hrc")
    with pytest.raises(SDCInputError, match=r"code 'B' has more than one parent"):
        tables.write_hrc(_frame([("Total", "A"), ("Total", "B"), ("A", "B")]), tmp_path / "x.hrc")
    assert not (tmp_path / "x.hrc").exists()


@st.composite
def trees(draw):
    """A random hierarchy: codes c0, c1, ... (or 00, 01, ...: codes that only text keeps) each below
    the total or an earlier code."""
    n = draw(st.integers(1, 25))
    prefix = draw(st.sampled_from(["c", "0"]))
    parents = ["Total"]
    pairs = []
    for i in range(n):
        parent = draw(st.sampled_from(parents))
        pairs.append((parent, f"{prefix}{i}"))
        parents.append(f"{prefix}{i}")
    return _frame(pairs)


@st.composite
def count_tables(draw):
    """Inner counts over one hierarchical dimension (a random tree) and one flat one."""
    tree = draw(trees())
    leaves = sorted(set(tree["child"]) - set(tree["parent"]))
    flat = draw(st.lists(st.sampled_from(draw(st.sampled_from([["x", "y", "z"], [2014, 2015, 2016]]))),
                         min_size=1, max_size=3, unique=True))
    inner = pd.DataFrame([(a, b) for a in leaves for b in flat], columns=["h", "f"])
    inner["n"] = draw(st.lists(st.integers(0, 50), min_size=len(inner), max_size=len(inner)))
    inner["v"] = draw(st.lists(st.integers(-500, 5000), min_size=len(inner), max_size=len(inner)))
    inner["v"] = inner["v"] / 100
    return tables.tabulate(inner, {"h": tree, "f": None}, freq="n", value=draw(st.sampled_from([None, "v"])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees())
def test_hrc_round_trip_keeps_the_tree_and_its_order(tmp_path, tree):
    tables.write_hrc(tree, tmp_path / "t.hrc")
    back = tables.read_hrc(tmp_path / "t.hrc")
    # the same pairs; written depth first, so each code's children keep their order
    assert set(map(tuple, back.to_numpy())) == set(map(tuple, tree.to_numpy()))
    for parent, group in tree.groupby("parent", sort=False):
        assert back.loc[back["parent"] == parent, "child"].tolist() == group["child"].tolist()


def test_reference_hierarchies_round_trip_through_hrc(tmp_path):
    # c4: two alternative hierarchies of the same regions (T1 counties, T2 big/small)
    c4 = read("c4_linked_hierarchies.csv").rename(columns={"mapsTo": "parent", "mapsFrom": "child"})
    inner = read("c4_linked_input_inner.csv")
    for name in ("T1", "T2"):
        hierarchy = c4.loc[c4["table"] == name, ["parent", "child"]].reset_index(drop=True)
        back = tables.read_hrc(tables.write_hrc(hierarchy, tmp_path / f"{name}.hrc"))
        assert _pairs(back) == _pairs(hierarchy)
        before = tables.tabulate(inner, {"region": hierarchy}, freq="n").cells.sort_values("region")
        after = tables.tabulate(inner, {"region": back}, freq="n").cells.sort_values("region")
        assert before.reset_index(drop=True).equals(after.reset_index(drop=True))
    # c2: eco's hierarchy
    back = tables.read_hrc(tables.write_hrc(ECO, tmp_path / "eco.hrc"))
    assert _pairs(back) == _pairs(ECO)


# ---------------------------------------------------------------- codes and columns


def test_hierarchy_from_codes_isco_like_prefixes():
    # unit groups 5111, 5112, 5120 in sub-major group 51 in major group 5; 5211 in 52 in 5; 7
    # given as a major group alone is a leaf
    got = tables.hierarchy_from_codes(["5112", "5111", "5120", "5211", "7"], levels=[1, 2, 4])
    assert got.equals(_frame([("Total", "5"), ("5", "51"), ("51", "5111"), ("51", "5112"), ("51", "5120"),
                              ("5", "52"), ("52", "5211"), ("Total", "7")]))


def test_hierarchy_from_codes_nace_with_section_letters():
    # NACE Rev. 2: section A, division A01, group A011; a parent with a single child (B05 > B051) is kept
    got = tables.hierarchy_from_codes(["A011", "A012", "A021", "B051", "A"], levels=[1, 3, 4], total="All")
    assert got.equals(_frame([("All", "A"), ("A", "A01"), ("A01", "A011"), ("A01", "A012"), ("A", "A02"),
                              ("A02", "A021"), ("All", "B"), ("B", "B05"), ("B05", "B051")]))
    table = tables.tabulate(pd.DataFrame({"nace": ["A011", "A012", "A021", "B051"], "n": [1, 2, 3, 4]}),
                            {"nace": got}, freq="n")
    assert table.cells.set_index("nace")["freq"].to_dict() == {
        "All": 10, "A": 6, "A01": 3, "A011": 1, "A012": 2, "A02": 3, "A021": 3, "B": 4, "B05": 4, "B051": 4}


def test_hierarchy_from_codes_errors():
    with pytest.raises(SDCInputError, match=r"codes: '511' has 3 characters; every code must have one of the level lengths \[1, 2, 4\]"):
        tables.hierarchy_from_codes(["5111", "511"], levels=[1, 2, 4])
    with pytest.raises(SDCInputError, match=r"levels: must be increasing positive code lengths"):
        tables.hierarchy_from_codes(["5111"], levels=[2, 1])


def test_hierarchy_from_columns_c3b_nested_codes(tmp_path):
    c3b = read("c3b_magnitude1_input_microdata.csv")
    sector = tables.hierarchy_from_columns(c3b, ["sector2", "sector4"])
    assert sector.equals(_frame([("Total", "private"), ("Total", "public"), ("private", "Agriculture"),
                                 ("private", "Entertainment"), ("private", "Industry"), ("public", "Governmental")]))
    geo = tables.hierarchy_from_columns(c3b, ["eu", "geo"])
    assert geo.equals(_frame([("Total", "EU"), ("Total", "nonEU"), ("EU", "Portugal"), ("EU", "Spain"),
                              ("nonEU", "Iceland")]))
    for name, hierarchy in (("sector4", sector), ("geo", geo)):
        back = tables.read_hrc(tables.write_hrc(hierarchy, tmp_path / f"{name}.hrc"))
        assert _pairs(back) == _pairs(hierarchy)
    table = tables.tabulate(c3b, {"sector4": sector, "geo": geo}, value="value")
    cells = table.cells.set_index(["sector4", "geo"])
    # public = Governmental: 21.6 + 2 + 6.5 + 2.7 (the data's rows)
    assert cells.loc[("public", "Total"), "value"] == pytest.approx(32.8)
    assert cells.loc[("Total", "nonEU"), "value"] == pytest.approx(16.8 + 9.6 + 8.8 + 1.9)


def test_hierarchy_from_columns_errors():
    data = pd.DataFrame({"region": ["N", "S", "N"], "county": ["a", "a", "b"]})
    with pytest.raises(SDCInputError, match=r"hierarchy column 'county': value 'a' lies in 2 values of 'region' \('N', 'S'\)"):
        tables.hierarchy_from_columns(data, ["region", "county"])
    with pytest.raises(SDCInputError, match=r"hierarchy column 'county': row 1 is missing"):
        tables.hierarchy_from_columns(pd.DataFrame({"region": ["N", "S"], "county": ["a", None]}), ["region", "county"])
    with pytest.raises(SDCInputError, match=r"code 'N' is a value of two of them"):
        tables.hierarchy_from_columns(pd.DataFrame({"region": ["N", "S"], "county": ["N", "b"]}), ["region", "county"])


# ---------------------------------------------------------------- the office's layout


@pytest.fixture
def small():
    """A 2 x 2 count table: rows r1, r2, columns c1, c2, inner counts 4, 1 / 0, 6."""
    inner = pd.DataFrame({"row": ["r1", "r1", "r2", "r2"], "col": ["c1", "c2", "c1", "c2"], "n": [4, 1, 0, 6]})
    return tables.tabulate(inner, {"row": None, "col": None}, freq="n")


def _mask(table, cells):
    index = pd.MultiIndex.from_frame(table.cells[table.names])
    return pd.Series(index.isin(cells), index=table.cells.index)


def test_published_table_flags_values_and_intervals(small):
    primary = _mask(small, [("r1", "c2")])
    suppressed = _mask(small, [("r1", "c2"), ("r1", "c1"), ("r2", "c1"), ("r2", "c2")])
    audit = tables.audit(small, suppressed)
    out = tables.published_table(small, suppressed, primary=primary, intervals=audit)
    rows = out.set_index(["row", "col"])
    assert list(out.columns) == ["row", "col", "value", "status", "lo", "up"]
    assert rows.loc[("Total", "Total"), "value"] == 11 and rows.loc[("Total", "Total"), "status"] == "S"
    assert rows.loc[("r1", "c2"), "status"] == "U" and pd.isna(rows.loc[("r1", "c2"), "value"])
    assert rows.loc[("r1", "c1"), "status"] == "M" and rows.loc[("r2", "c1"), "status"] == "M"
    # r1 = 5, r2 = 6, c1 = 4, c2 = 7 published: r1c2 = 5 - r1c1 with r1c1 in [0, 4] -> [1, 5]
    assert (rows.loc[("r1", "c2"), "lo"], rows.loc[("r1", "c2"), "up"]) == (1, 5)
    assert pd.isna(rows.loc[("Total", "Total"), "lo"])
    # an empty published cell is Z; without primaries a suppressed cell is X
    plain = tables.published_table(small, _mask(small, [])).set_index(["row", "col"])
    assert plain.loc[("r2", "c1"), "status"] == "Z" and plain.loc[("r2", "c1"), "value"] == 0
    unknown = tables.published_table(small, suppressed).set_index(["row", "col"])
    assert set(unknown.loc[[("r1", "c1"), ("r1", "c2")], "status"]) == {"X"}
    assert str(out["value"].dtype) == "Int64"


def test_published_magnitudes_keep_the_decimals_of_the_input(tmp_path):
    # issue 34: turnovers of one decimal summed in binary floating point (0.1 + 0.2 = 0.30000000000000004,
    # 562.1 + 0.2 = 562.3000000000001) were written with the float noise; the office publishes 0.3, 562.3
    micro = pd.DataFrame({"region": ["a", "a", "b", "b"], "turnover": [0.1, 0.2, 562.1, 0.2]})
    table = tables.tabulate(micro, {"region": None}, value="turnover")
    assert table.published.tolist() != [0.3, 562.3, 562.6]  # the noise the fix removes
    out = tables.published_table(table, _mask(table, []))
    assert out.set_index("region")["value"].to_dict() == {"a": 0.3, "b": 562.3, "Total": 562.6}
    path = tables.write_published(out, tmp_path / "t.csv")
    assert sorted(path.read_text().splitlines()[1:]) == ["Total,562.6,S", "a,0.3,S", "b,562.3,S"]
    # aggregated input: the inner cells' values are the input; two decimals stay two
    cells = pd.DataFrame({"region": ["a", "b"], "n": [3, 4], "turnover": [1.25, 2.35]})
    aggregated = tables.tabulate(cells, {"region": None}, freq="n", value="turnover")
    published = tables.published_table(aggregated, _mask(aggregated, [])).set_index("region")["value"]
    assert published.to_dict() == {"a": 1.25, "b": 2.35, "Total": 3.6}


@settings(max_examples=40, deadline=None)
@given(table=count_tables(), data=st.data())
def test_published_table_invariants(table, data):
    n = len(table.cells)
    hidden = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    hidden = np.isin(table.cell, table.cell[hidden])  # a cell's rows (a parent with one child) alike
    primary = hidden & np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    primary = np.isin(table.cell, table.cell[primary])
    out = tables.published_table(table, pd.Series(hidden, index=table.cells.index),
                                 primary=pd.Series(primary, index=table.cells.index))
    status = out["status"].to_numpy()
    assert (out["value"].isna().to_numpy() == hidden).all()
    assert (status[primary] == "U").all() and (status[hidden & ~primary] == "M").all()
    empty = table.cells["freq"].to_numpy() == 0
    assert (status[~hidden] == np.where(empty[~hidden], "Z", "S")).all()
    figure = table.cells["value" if table.magnitude else "freq"].to_numpy()
    assert np.allclose(out["value"].to_numpy(dtype=float, na_value=np.nan)[~hidden], figure[~hidden])
    assert out[table.names].equals(table.cells[table.names].reset_index(drop=True))


def test_published_table_errors(small):
    with pytest.raises(SDCInputError, match=r"primary: cell \(row='r1', col='c2'\) is primary unsafe but not suppressed"):
        tables.published_table(small, _mask(small, []), primary=_mask(small, [("r1", "c2")]))
    with pytest.raises(SDCInputError, match=r"suppressed of table 0: needs 9 values"):
        tables.published_table(small, [True])
    with pytest.raises(SDCInputError, match=r"intervals: must be the audit's DataFrame"):
        tables.published_table(small, _mask(small, []), intervals=pd.DataFrame({"lo": []}))


def test_write_published_csv_semicolon_and_decimal_comma(tmp_path):
    frame = pd.DataFrame({"region": ["Total", "A"], "value": pd.array([2.5, np.nan], dtype="Float64"),
                          "status": ["S", "U"]})
    path = tables.write_published(frame, tmp_path / "t.csv", sep=";", decimal=",")
    assert path.read_text() == "region;value;status\nTotal;2,5;S\nA;;U\n"
    tables.write_published(frame, tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text() == "region,value,status\nTotal,2.5,S\nA,,U\n"
    with pytest.raises(SDCInputError, match=r"decimal: ',' is the separator too"):
        tables.write_published(frame, tmp_path / "x.csv", sep=",", decimal=",")
    with pytest.raises(SDCInputError, match=r"fmt: must be one of 'csv', 'xlsx', got 'ods'"):
        tables.write_published(frame, tmp_path / "x.ods", fmt="ods")


def test_write_published_xlsx_reads_back_and_is_pinned(tmp_path, small):
    suppressed = _mask(small, [("r1", "c2"), ("r1", "c1"), ("r2", "c1"), ("r2", "c2")])
    frame = tables.published_table(small, suppressed, primary=_mask(small, [("r1", "c2")]))
    first = tables.write_published(frame, tmp_path / "a.xlsx", fmt="xlsx").read_bytes()
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        core = archive.read("docProps/core.xml").decode()
    assert "1970-01-01T00:00:00Z</dcterms:created>" in core and "1970-01-01T00:00:00Z</dcterms:modified>" in core
    back = pd.read_excel(tmp_path / "a.xlsx", engine="calamine")
    assert back["status"].tolist() == frame["status"].tolist()
    assert back["value"].isna().tolist() == frame["value"].isna().tolist()
    # the flags explained beside the table, each letter the table uses (a reader of the workbook
    # alone had no key to S, U, M)
    legend = pd.read_excel(tmp_path / "a.xlsx", engine="calamine", sheet_name="legend")
    assert legend.values.tolist() == [
        ["S", "safe: published"], ["U", "primary unsafe: suppressed by a primary (sensitivity) rule"],
        ["M", "secondary: suppressed to protect a primary unsafe cell"]]
    assert tables.write_published(frame, tmp_path / "b.xlsx", fmt="xlsx").read_bytes() == first


# ---------------------------------------------------------------- tau-Argus .tab / .rda


def _c2_table():
    return tables.tabulate(read("c2_magnitude_input_microdata.csv"), {"region": None, "gender": None, "eco": ECO},
                           value="numVal")


def test_write_tau_argus_files_of_c2(tmp_path):
    table = _c2_table()
    suppressed = _mask(table, [("R1", "f", "Ba"), ("R1", "f", "B")])  # B above Ba: a total suppressed
    paths = tables.write_tau_argus(table, tmp_path, "c2", suppressed=suppressed)
    assert set(paths) == {"tab", "rda", "hst", "hrc:eco"}
    rda = paths["rda"].read_text().splitlines()
    assert rda[:8] == ['<SEPARATOR> ","', '<SAFE> "S"', '<UNSAFE> "U"', '<PROTECT> "P"',
                       "region", "  <RECODEABLE>", '  <TOTCODE> "Total"', "gender"]
    assert rda[10:17] == ["eco", "  <RECODEABLE>", '  <TOTCODE> "Total"', "  <HIERARCHICAL>",
                          '  <HIERCODELIST> "c2_eco.hrc"', '  <HIERLEADSTRING> "@"', "value"]
    assert ["freq", "  <FREQUENCY>"] == rda[19:21] and rda[-2:] == ["status", "  <STATUS>"]
    lines = paths["tab"].read_bytes().decode().split("\r\n")
    assert len(lines) == 2 * 2 * 4 + 1 and lines[-1] == ""
    # the first inner cell, by hand from the microdata: R1, f, Aa
    data = read("c2_magnitude_input_microdata.csv")
    cell = data[(data.region == "R1") & (data.gender == "f") & (data.eco == "Aa")]["numVal"].sort_values(ascending=False)
    assert lines[0] == f"R1,f,Aa,{cell.sum()},{len(cell)},{cell.iloc[0]},{cell.iloc[1]},{cell.iloc[2]},S"
    assert lines[2].startswith("R1,f,Ba,") and lines[2].endswith(",U")
    assert paths["hst"].read_text().splitlines() == ["R1,f,B,u", "R1,f,Ba,u"]
    assert paths["hrc:eco"].read_bytes() == b"A\r\n@Aa\r\n@Ab\r\nB\r\n@Ba\r\n@Bb\r\n"


def test_tau_argus_round_trip_of_c2_and_c1(tmp_path):
    table = _c2_table()
    paths = tables.write_tau_argus(table, tmp_path, "c2")
    cells, dimensions, names = tables.read_tau_argus(paths["rda"])
    assert names == {"freq": "freq", "value": "value", "top": ["top1", "top2", "top3"]}
    assert dimensions["region"] is None and _pairs(dimensions["eco"]) == _pairs(ECO)
    assert "status" not in cells.columns and list(cells.columns[-3:]) == ["top1", "top2", "top3"]
    again = tables.tabulate(cells, dimensions, freq=names["freq"], value=names["value"])
    assert again.cells.equals(table.cells)
    # c1: a frequency table over three flat dimensions, zeros included, years read back as numbers
    c1 = read("c1_freq3d_input_inner.csv")
    table = tables.tabulate(c1, {"age": None, "geo": None, "year": None}, freq="freq")
    cells, dimensions, names = tables.read_tau_argus(tables.write_tau_argus(table, tmp_path, "c1")["rda"])
    assert names == {"freq": "freq", "value": None, "top": []} and len(cells) == len(c1)
    assert tables.tabulate(cells, dimensions, freq="freq").cells.equals(table.cells)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=count_tables(), data=st.data())
def test_tau_argus_round_trip_rebuilds_the_table(tmp_path, table, data):
    suppressed = pd.Series(data.draw(st.lists(st.booleans(), min_size=len(table.cells), max_size=len(table.cells))),
                           index=table.cells.index)
    paths = tables.write_tau_argus(table, tmp_path, "t", suppressed=suppressed)
    cells, dimensions, names = tables.read_tau_argus(paths["rda"])
    again = tables.tabulate(cells, dimensions, freq=names["freq"], value=names["value"])
    assert again.magnitude == table.magnitude
    assert again.cells.equals(table.cells)
    # an inner cell is suppressed when its row or a row of the same cell (a parent with one child) is
    inner_hidden = np.isin(table.cell[table.inner_rows], table.cell[suppressed.to_numpy()])
    assert (cells["status"].to_numpy() == np.where(inner_hidden, "U", "S")).all()


def test_read_tau_argus_sdctable_style_files_with_totals(tmp_path):
    # as sdcTable's createArgusInput(typ = "tabular") writes them: names alone, the count as the one
    # <NUMERIC> column, the status letters in upper case, the protection levels "<NUMERIC> <LOWERPL>",
    # lines for the totals too (left out: tabulate adds them up), padded codes
    (tmp_path / "hier_x_region.hrc").write_text("  A\r\n@a1\r\n@a2\r\n  B\r\n")
    (tmp_path / "metadata_x.rda").write_text(
        '<SEPARATOR> ","\r\n<SAFE> "S"\r\n<UNSAFE> "U"\r\n<PROTECT> "Z"\r\nregion\r\n  <RECODEABLE>\r\n'
        '  <TOTCODE> "Tot"\r\n  <HIERCODELIST> "hier_x_region.hrc"\r\n  <HIERLEADSTRING> "@"\r\n  <HIERARCHICAL>\r\n'
        "sdcStatus\r\n  <STATUS>\r\nfreq\r\n  <NUMERIC>\r\nlpl\r\n  <NUMERIC> <LOWERPL>\r\nupl\r\n  <NUMERIC> <UPPERPL>\r\n")
    (tmp_path / "metadata_x.tab").write_text(
        "Tot,S,10,0,0\r\n  A,S,7,0,0\r\n a1,U,2,1,1\r\n a2,S,5,0,0\r\n  B,S,3,0,0\r\n")
    cells, dimensions, names = tables.read_tau_argus(tmp_path / "metadata_x.rda")
    assert names == {"freq": "freq", "value": None, "top": []}
    assert dimensions["region"].equals(_frame([("Tot", "A"), ("A", "a1"), ("A", "a2"), ("Tot", "B")]))
    assert cells["region"].tolist() == ["a1", "a2", "B"] and cells["freq"].tolist() == [2, 5, 3]
    assert cells["sdcStatus"].tolist() == ["U", "S", "S"]
    table = tables.tabulate(cells, dimensions, freq="freq")
    assert table.cells.set_index("region")["freq"].to_dict() == {"Tot": 10, "A": 7, "a1": 2, "a2": 5, "B": 3}


def test_read_tau_argus_own_lead_string_and_flat_total(tmp_path):
    (tmp_path / "t.rda").write_text(
        '<SEPARATOR> ";"\nsector\n  <RECODEABLE>\n  <HIERARCHICAL>\n  <HIERCODELIST> "s.hrc"\n'
        '  <HIERLEADSTRING> "#"\nsize\n  <RECODEABLE>\n  <TOTCODE> "all"\nturnover\n  <NUMERIC>\n'
        '  <DECIMALS> 1\nn\n  <FREQUENCY>\n')
    (tmp_path / "s.hrc").write_text("A\n#A1\n#A2\n")
    (tmp_path / "t.tab").write_text("A1;small;1.5;2\nA2;small;2.0;1\nA2;large;10.5;3\n")
    cells, dimensions, names = tables.read_tau_argus(tmp_path / "t.rda")
    assert names == {"freq": "n", "value": "turnover", "top": []}
    assert dimensions["sector"].equals(_frame([("Total", "A"), ("A", "A1"), ("A", "A2")]))
    # a flat dimension whose total is not "Total": a one-level hierarchy below its own total
    assert dimensions["size"].equals(_frame([("all", "large"), ("all", "small")]))
    table = tables.tabulate(cells, dimensions, freq=names["freq"], value=names["value"])
    totals = table.cells.set_index(["sector", "size"])
    assert totals.loc[("Total", "all"), "value"] == 14.0 and totals.loc[("A2", "all"), "freq"] == 4


def test_malformed_tau_argus_input_names_file_and_line(tmp_path):
    rda = '<SEPARATOR> ","\nregion\n  <RECODEABLE>\n  <HIERCODELIST> "gone.hrc"\nfreq\n  <NUMERIC>\n'
    (tmp_path / "t.rda").write_text(rda)
    (tmp_path / "t.tab").write_text("a,1\n")
    with pytest.raises(SDCInputError, match=r"t.rda:4: region's <HIERCODELIST> 'gone.hrc' is not in"):
        tables.read_tau_argus(tmp_path / "t.rda")
    (tmp_path / "t.rda").write_text(rda.replace('"gone.hrc"', '"r.hrc"'))
    (tmp_path / "r.hrc").write_text("a\n@@b\n")
    with pytest.raises(SDCInputError, match=r"r.hrc line 2: 'b' is at depth 2"):
        tables.read_tau_argus(tmp_path / "t.rda")
    (tmp_path / "t.rda").write_text('<SEPARATOR> ","\n<SAFE>\nregion\n  <RECODEABLE>\nfreq\n  <NUMERIC>\n')
    with pytest.raises(SDCInputError, match=r't.rda:2: <SAFE> needs its status letter, e.g. <SAFE> "S"'):
        tables.read_tau_argus(tmp_path / "t.rda")
    (tmp_path / "t.rda").write_text('<SEPARATOR> ","\nregion\n  <RECODEABLE>\nfreq\n  <NUMERIC>\nn\n  <NUMERIC>\n')
    (tmp_path / "t.tab").write_text("a,1,1\n")
    with pytest.raises(SDCInputError, match=r"t.rda: declares no <FREQUENCY> column and 2 <NUMERIC> columns"):
        tables.read_tau_argus(tmp_path / "t.rda")
    (tmp_path / "t.tab").write_text("a,1\n")
    with pytest.raises(SDCInputError, match=r"t.tab: 2 fields a record, but t.rda declares 3 variables"):
        tables.read_tau_argus(tmp_path / "t.rda")
    # without <SEPARATOR> the metadata describe fixed-width data: a variable needs its columns
    (tmp_path / "u.rda").write_text('region\n  <RECODEABLE>\n')
    with pytest.raises(SDCInputError, match=r"u.rda:1: the start of region must be a whole number, got ''"):
        tables.read_tau_argus(tmp_path / "u.rda")
    (tmp_path / "u.rda").write_text('region 1 2\n  <RECODEABLE>\n')
    with pytest.raises(SDCInputError, match=r"u.rda: declares no <SEPARATOR>; tau-Argus tabular input is read in free format"):
        tables.read_tau_argus(tmp_path / "u.rda")


def test_write_tau_argus_refuses_unsafe_names_and_codes(tmp_path, small):
    with pytest.raises(SDCInputError, match=r"'\.\./x' is not allowed"):
        tables.write_tau_argus(small, tmp_path, "../x")
    odd = tables.tabulate(pd.DataFrame({"g": ["a,b", "c"], "n": [1, 2]}), {"g": None}, freq="n")
    with pytest.raises(SDCInputError, match=r"dimension 'g': code 'a,b' cannot be written in a .tab file"):
        tables.write_tau_argus(odd, tmp_path, "odd")


# ---------------------------------------------------------------- aggregated input


def test_read_aggregated_semicolon_and_decimal_comma(tmp_path):
    c1 = read("c1_freq3d_input_inner.csv")
    c1["turnover"] = np.arange(len(c1)) * 1.5
    (tmp_path / "c1.csv").write_text(c1.to_csv(index=False, sep=";", decimal=","), encoding="cp1252")
    data = tables.read_aggregated(tmp_path / "c1.csv")
    assert data.equals(c1)
    dims = {"age": None, "geo": None, "year": None}
    assert tables.tabulate(data, dims, freq="freq", value="turnover").cells.equals(
        tables.tabulate(c1, dims, freq="freq", value="turnover").cells)
    with pytest.raises(SDCInputError, match=r"none.csv: no such file"):
        tables.read_aggregated(tmp_path / "none.csv")
    # a workbook of aggregated input (the office's own layout: a title row above the table)
    with pd.ExcelWriter(tmp_path / "c1.xlsx", engine="openpyxl") as writer:
        pd.DataFrame([["Counts by age, geo and year"]]).to_excel(writer, index=False, header=False)
        c1.to_excel(writer, index=False, startrow=2)
    assert tables.read_aggregated(tmp_path / "c1.xlsx").equals(c1)


def test_argus_text_files_with_a_byte_order_mark_or_windows_1252(tmp_path):
    from sdc_dagster.datafiles.argus import read_codelist

    (tmp_path / "r.cdl").write_bytes("\ufeff1,Nord\n2,\"Süd\"\n".encode("utf-8"))
    assert read_codelist(tmp_path / "r.cdl") == {"1": "Nord", "2": "Süd"}
    (tmp_path / "r.hrc").write_bytes("Süd\n@Zürich\n".encode("cp1252"))
    assert tables.read_hrc(tmp_path / "r.hrc").equals(_frame([("Total", "Süd"), ("Süd", "Zürich")]))


def test_contributions_from_top_rebuild_the_contributors_of_each_cell():
    # a cell of 100 with 5 contributors whose top 2 are 50 and 20: the other 3 share 30 equally (10 each);
    # a cell of 7 with its one contributor given
    cells = pd.DataFrame({"geo": ["A", "B"], "value": [100.0, 7.0], "freq": [5, 1], "top1": [50.0, 7.0],
                          "top2": [20.0, 0.0]})
    rows = tables.contributions_from_top(cells, ["geo"], value="value", freq="freq", top=["top1", "top2"])
    assert sorted(rows.loc[rows["geo"] == "A", "value"].tolist()) == [10.0, 10.0, 10.0, 20.0, 50.0]
    assert rows.loc[rows["geo"] == "B", "value"].tolist() == [7.0]
    # the total's top 2 are the largest of its inner cells' tops: 50 and 20 (the manual's computation)
    table = tables.tabulate(rows, {"geo": None}, value="value")
    total = table.cells["geo"] == "Total"
    assert table.cells.loc[total, ["freq", "value"]].values.tolist() == [[6.0, 107.0]]
    stats = tables.primary.contributor_statistics(table, 2)
    assert stats.loc[total.to_numpy(), ["x1", "x2"]].values.tolist() == [[50.0, 20.0]]


@pytest.mark.parametrize("change, why", [
    ({"freq": [1, 1]}, "its count is below the number of its top contributions"),
    ({"top1": [150.0, 7.0]}, "its top contributions exceed its value"),
    ({"freq": [2, 1]}, "its value exceeds its top contributions and it has no other contributor"),
    ({"freq": [3, 1]}, "the share of its other contributors exceeds its smallest top contribution"),
])
def test_inconsistent_top_contributions_are_named_by_cell(change, why):
    cells = pd.DataFrame({"geo": ["A", "B"], "value": [100.0, 7.0], "freq": [5, 1], "top1": [50.0, 7.0],
                          "top2": [20.0, 0.0]}).assign(**change)
    with pytest.raises(SDCInputError, match=rf"cell \(geo='A'\): {why}"):
        tables.contributions_from_top(cells, ["geo"], value="value", freq="freq", top=["top1", "top2"])


def test_the_tab_counts_holdings_as_the_contributors_of_its_top_contributions(tmp_path):
    """The tau-Argus manual's holding example (c3a: 17 reporting units in 9 groups): with the group as
    the holding, a .tab line's frequency is the cell's number of groups, the units its top
    contributions are of (hand count: (800, 20) g1 599+344+244 = 1187 and g2 644; (800, 30) g3
    323+343 = 666, g2 433, g1 355; (900, 20) g5 43+34+53 = 130 and g4 23; (900, 30) g6 700+200 = 900,
    g7 60, g8 40, g9 10), not its 4, 4, 4 and 5 records. Read back, the frequency rule (0 < n <= 2)
    flags the inner cells of two groups, as on the microdata; the record counts hid them."""
    from sdc_dagster.pipeline.tables import tabulate_tables, table_input, read_table_input, primary_cells
    from sdc_dagster.spec.tables import load_table_spec

    micro = tables.tabulate(read("c3a_holding_input_microdata.csv"), {"cellA": None, "cellB": None},
                            value="value", holding="group")
    tables.write_tau_argus(micro, tmp_path, "c3a")
    lines = (tmp_path / "c3a.tab").read_text().split()
    assert lines == ["800,20,1831,2,1187,644,0", "800,30,1454,3,666,433,355", "900,20,153,2,130,23,0",
                     "900,30,1010,4,900,60,40"]
    (tmp_path / "t.yaml").write_text("tables: from_argus\nsource: {tau_argus: c3a.rda}\n"
                                     "dimensions: {cellA: {}, cellB: {}}\npublished:\n"
                                     "  t: {dimensions: [cellA, cellB], value: value, freq: freq, "
                                     "rules: [{rule: freq, n: 2}]}\n")
    spec = load_table_spec(tmp_path / "t.yaml")
    read_back = tabulate_tables(spec, table_input(spec, read_table_input(spec)))["t"]
    flagged = primary_cells(spec, {"t": read_back})["t"].astype({"cellA": str, "cellB": str}) \
        .set_index(["cellA", "cellB"])["primary"]
    inner = [("800", "20"), ("800", "30"), ("900", "20"), ("900", "30")]
    assert flagged.loc[inner].tolist() == [True, False, True, False]
    on_microdata = pd.Series(tables.primary_suppression(micro, [{"rule": "freq", "n": 2}]).to_numpy(),
                             index=pd.MultiIndex.from_frame(micro.cells[["cellA", "cellB"]].astype(str)))
    assert on_microdata.loc[inner].tolist() == [True, False, True, False]


def test_tab_values_are_written_at_the_decimals_of_the_input(tmp_path):
    """The business file's contributions have one decimal (Entertainment x Portugal: 7.1 + 2.3); the
    .tab wrote its sum as 9.399999999999999 and declared <DECIMALS> 15."""
    data = pd.DataFrame({"sector": ["E", "E", "E"], "geo": ["PT", "PT", "ES"], "value": [7.1, 2.3, 105.3]})
    tables.write_tau_argus(tables.tabulate(data, {"sector": None, "geo": None}, value="value"), tmp_path, "t")
    assert (tmp_path / "t.tab").read_text().split() == ["E,ES,105.3,1,105.3,0,0", "E,PT,9.4,2,7.1,2.3,0"]
    assert "value\n  <NUMERIC>\n  <DECIMALS> 1\n" in (tmp_path / "t.rda").read_text().replace("\r\n", "\n")


def test_read_apriori_reads_the_unsafe_cells_and_names_what_it_does_not_read(tmp_path):
    """An a priori file as write_tau_argus and rtauargus write it (codes, then u); tau-Argus's other
    statuses (s safe, p protected) would publish a cell whatever the rules say: named, not ignored."""
    (tmp_path / "a.hst").write_text("Total,PT,u\r\n\r\nE,ES,U\r\n")
    cells = tables.read_apriori(tmp_path / "a.hst", ["sector", "geo"])
    assert cells.values.tolist() == [["Total", "PT"], ["E", "ES"]]
    (tmp_path / "b.hst").write_text("E,PT,u\r\nE,ES,p\r\n")
    with pytest.raises(SDCInputError, match=r"b.hst:2: status 'p' is not read: only u"):
        tables.read_apriori(tmp_path / "b.hst", ["sector", "geo"])
    (tmp_path / "c.hst").write_text("E,u\r\n")
    with pytest.raises(SDCInputError, match=r"c.hst:1: expected a code for each of sector, geo and then the status"):
        tables.read_apriori(tmp_path / "c.hst", ["sector", "geo"])
