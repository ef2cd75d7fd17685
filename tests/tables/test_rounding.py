"""Small-count rounding against SmallCountRounding's own printed examples, and its invariants.

Expected values are the outputs printed in SmallCountRounding 1.1.0's documentation (pkgdown site of
statisticsnorway/ssb-smallcountrounding): the vignette "Introduction to SmallCountRounding" (Table 6),
the examples of ``RoundViaDummy`` and of ``PLSrounding``, on the package's example data e6 and z2
(tests/data/tables/c5_rounding_*_input_inner.csv).
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables.rounding import pls_rounding, revealed_cells

from .conftest import read

GEO = pd.DataFrame({"parent": ["Total", "Total", "EU", "EU", "nonEU"],
                    "child": ["EU", "nonEU", "Portugal", "Spain", "Iceland"]})


def e6_table():
    return tables.tabulate(read("c5_rounding_e6_input_inner.csv"), {"geo": GEO, "year": None}, freq="freq")


def by_codes(frame):
    return {(str(g), str(y)): (o, r) for g, y, o, r in frame[["geo", "year", "original", "rounded"]].itertuples(index=False)}


def formula_matrix(data: pd.DataFrame, terms: list[list[str]]) -> sparse.csr_matrix:
    """The published cells x inner rows of a SmallCountRounding formula: one 0/1 row per code
    combination of each term ([] is the overall total)."""
    rows = []
    for term in terms:
        if not term:
            rows.append(np.ones((1, len(data)), dtype=int))
            continue
        key = data[term].astype(str).agg(":".join, axis=1)
        rows.append(pd.get_dummies(key).to_numpy(dtype=int).T)
    return sparse.csr_matrix(np.vstack(rows))


def test_e6_vignette_table_6_base_5():
    """Vignette Table 6: PLSrounding(e6, "freq", 5) with every cell published."""
    rounded = tables.small_count_rounding(e6_table(), round_base=5)
    expected = {
        ("Total", "Total"): (24, 23), ("Total", "2018"): (12, 12), ("Total", "2019"): (12, 11),
        ("EU", "Total"): (21, 23), ("EU", "2018"): (10, 12), ("EU", "2019"): (11, 11),
        ("nonEU", "Total"): (3, 0), ("nonEU", "2018"): (2, 0), ("nonEU", "2019"): (1, 0),
        ("Iceland", "Total"): (3, 0), ("Iceland", "2018"): (2, 0), ("Iceland", "2019"): (1, 0),
        ("Portugal", "Total"): (8, 10), ("Portugal", "2018"): (3, 5), ("Portugal", "2019"): (5, 5),
        ("Spain", "Total"): (13, 13), ("Spain", "2018"): (7, 7), ("Spain", "2019"): (6, 6),
    }
    assert by_codes(rounded) == expected
    assert rounded.attrs["parameters"]["seed"] == 123 and rounded.attrs["parameters"]["max_round"] == 4
    assert (rounded["difference"] == rounded["rounded"] - rounded["original"]).all()
    inner = rounded[rounded["inner"]]
    assert set(zip(inner["geo"], inner["year"].astype(str))) == {
        (g, y) for g in ("Iceland", "Portugal", "Spain") for y in ("2018", "2019")}


def test_e6_round_via_dummy_default_base_3():
    """RoundViaDummy(SmallCountData("e6"), "freq"): roundBase 3 (the default), all cells published."""
    rounded = tables.small_count_rounding(e6_table())
    got = by_codes(rounded)
    changed = {k: v for k, v in got.items() if v[0] != v[1]}
    assert changed == {("Total", "2018"): (12, 13), ("Total", "2019"): (12, 11), ("nonEU", "2018"): (2, 3),
                       ("nonEU", "2019"): (1, 0), ("Iceland", "2018"): (2, 3), ("Iceland", "2019"): (1, 0)}
    assert got[("Total", "Total")] == (24, 24)


def test_e6_formula_geo_plus_eu_plus_year():
    """PLSrounding(z, "freq", roundBase = 5, formula = ~geo + eu + year): only the margins are
    published; printed inner: Iceland 2018 2 -> 5, Iceland 2019 1 -> 0, others kept; publish:
    Total 26, Iceland 5, Portugal 8, Spain 13, EU 21, nonEU 5, 2018 15, 2019 11."""
    data = read("c5_rounding_e6_input_inner.csv")
    matrix = formula_matrix(data, [[], ["geo"], ["eu"], ["year"]])
    rounded = pls_rounding(data["freq"], matrix, round_base=5)
    assert rounded.tolist() == [5, 3, 7, 0, 5, 6]
    # rows: Total; geo Iceland, Portugal, Spain; eu EU, nonEU; year 2018, 2019
    assert (matrix @ rounded).tolist() == [26, 5, 8, 13, 21, 5, 15, 11]


# SmallCountRounding's data exPSD as the vignette prints it (rows x cols, inner cells column by column)
EXPSD = pd.DataFrame({"rows": ["row1", "row2", "row3"] * 5,
                      "cols": [f"col{j}" for j in range(1, 6) for _ in range(3)],
                      "freq": [6, 1, 0, 0, 2, 1, 1, 3, 1, 3, 1, 0, 4, 2, 2]})


def test_expsd_vignette_table_2_every_cell_published():
    """Vignette Table 2 (a$inner): PLSrounding(z, "freq", 5) with every cell published."""
    matrix = formula_matrix(EXPSD, [[], ["rows"], ["cols"], ["rows", "cols"]])
    rounded = pls_rounding(EXPSD["freq"], matrix, round_base=5)
    assert rounded.tolist() == [6, 0, 0, 0, 0, 0, 0, 5, 0, 5, 0, 0, 5, 0, 5]
    assert (matrix @ rounded)[0] == 26  # the printed Total 27 -> 26


def test_expsd_vignette_table_3_margins_only():
    """Vignette Table 3 (b$publish): PLSrounding(z, "freq", 5, formula = ~rows + cols) publishes
    Total 28, rows 15, 8, 5 and cols 7, 5, 5, 5, 6. The printed inner cells put the two 5s of col3
    and col4 in (row2, col3) and (row1, col4); (row1, col3) and (row2, col4) give the same published
    cells and the same criterion: a tie, broken by the random order (R's generator there)."""
    matrix = formula_matrix(EXPSD, [[], ["rows"], ["cols"]])
    rounded = pls_rounding(EXPSD["freq"], matrix, round_base=5)
    assert (matrix @ rounded).tolist() == [28, 15, 8, 5, 7, 5, 5, 5, 6]
    printed = np.array([6, 1, 0, 0, 0, 5, 0, 5, 0, 5, 0, 0, 4, 2, 0])
    assert sorted(np.flatnonzero(rounded != printed).tolist()) == [6, 7, 9, 10]  # the two tied swaps
    # identify_new=False rounds only the first pass's candidates: a new small published cell stays
    first_only = matrix @ pls_rounding(EXPSD["freq"], matrix, round_base=5, identify_new=False)
    assert ((first_only > 0) & (first_only < 5)).any()
    assert not ((matrix @ rounded > 0) & (matrix @ rounded < 5)).any()


def test_z2_round_via_dummy_base_10():
    """RoundViaDummy(SmallCountData('z2'), 'ant', ~region + hovedint + fylke*hovedint +
    kostragr*hovedint, 10): inner rows 2, 13, 18, 19, 22 (7, 1, 4, 3, 2) become 10, 0, 10, 0, 0;
    the others, small ones included (rows 9, 11, 15, 42: 3, 4, 2, 2, below no small published
    cell), are kept; the grand total 706 becomes 709."""
    data = read("c5_rounding_z2_input_inner.csv")
    terms = [[], ["region"], ["hovedint"], ["fylke"], ["kostragr"], ["fylke", "hovedint"], ["kostragr", "hovedint"]]
    matrix = formula_matrix(data, terms)
    assert matrix.shape == (56, 44)  # the 56 published cells of the printed crossTable
    original = data["ant"].to_numpy()
    rounded = pls_rounding(original, matrix, round_base=10)
    changed = np.flatnonzero(rounded != original) + 1
    assert changed.tolist() == [2, 13, 18, 19, 22]
    assert rounded[changed - 1].tolist() == [10, 0, 10, 0, 0]
    published = matrix @ rounded
    assert published[0] == 709
    assert ((published == 0) | (published >= 10)).all()
    # the printed publish values by hand: region G 40 -> 46, H 65 -> 62, K 35 -> 33; 400-arbeid 2 -> 0
    region = dict(zip(sorted(data["region"].unique()), published[1:12]))
    assert (region["G"], region["H"], region["K"]) == (46, 62, 33)


def test_linked_tables_round_jointly(c4_tables):
    rounded = tables.small_count_rounding(c4_tables)
    assert len(rounded) == 2
    inner = [frame.loc[frame["inner"]].set_index("region")["rounded"].sort_index() for frame in rounded]
    pd.testing.assert_series_equal(inner[0], inner[1])  # one rounding of the common inner cells
    for table, frame in zip(c4_tables, rounded):
        assert (frame["rounded"].to_numpy() == table.matrix @ frame.loc[table.inner_rows, "rounded"].to_numpy()).all()
        assert ((frame["rounded"] == 0) | (frame["rounded"] >= 3)).all()


def test_zero_candidates_may_round_a_zero_up():
    # one row: inner 1, 1, 0; the total 2 must become 0 or 3: with zero candidates a zero can take the 3
    data = pd.DataFrame({"a": ["x", "y", "z"], "n": [1, 1, 0]})
    table = tables.tabulate(data, {"a": None}, freq="n")
    plain = tables.small_count_rounding(table)
    assert plain.set_index("a").loc["z", "rounded"] == 0
    with_zeros = tables.small_count_rounding(table, zero_candidates=True)
    assert set(with_zeros.loc[with_zeros["inner"], "rounded"]) <= {0, 3}


def test_revealed_cells_by_zeros_and_single_unknowns():
    # inner a, b, c (rows) in published cells a + b, b + c, a + b + c (columns)
    x = sparse.csr_matrix(np.array([[1, 0, 1], [1, 1, 1], [0, 1, 1]]))
    # a + b = 0: a and b are 0; then c is alone in b + c
    assert revealed_cells(x, np.array([0, 4, 4]), np.array([0, 0, 4])).tolist() == [True, True, True]
    # 3, 4, 5: no zero and no cell alone; c = 5 - 3 needs a linear combination, which this check
    # (SmallCountRounding's easyCheck) does not look for (its leverageCheck does)
    assert revealed_cells(x, np.array([3, 4, 5]), np.array([1, 2, 2])).tolist() == [False, False, False]
    # cells a + b, b, a + b + c: b alone, then a alone in a + b, then c alone in the total
    x = sparse.csr_matrix(np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1]]))
    assert revealed_cells(x, np.array([3, 2, 5]), np.array([1, 2, 2])).tolist() == [True, True, True]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"round_base": 1}, "round_base"),
        ({"round_base": 5, "max_round": 2}, "max_round: cannot be below round_base - 1"),
        ({"identify_new": "yes"}, "identify_new"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        tables.small_count_rounding(e6_table(), **kwargs)


def test_bad_inputs_are_named(c4_tables):
    magnitude = tables.tabulate(pd.DataFrame({"a": ["x"], "v": [1.0]}), {"a": None}, value="v")
    with pytest.raises(SDCInputError, match="magnitude table"):
        tables.small_count_rounding(magnitude)
    with pytest.raises(SDCInputError, match="inner cell 1 is -1;"):
        pls_rounding([1, -1], sparse.csr_matrix(np.ones((1, 2))))
    other = tables.tabulate(pd.DataFrame({"b": ["x"], "n": [1]}), {"b": None}, freq="n")
    with pytest.raises(SDCInputError, match="must share their dimensions"):
        tables.small_count_rounding([c4_tables[0], other])
    with pytest.raises(SDCInputError, match="give a Table"):
        tables.small_count_rounding("table")


@st.composite
def small_tables(draw):
    rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    counts = draw(st.lists(st.integers(0, 12), min_size=rows * cols, max_size=rows * cols))
    data = pd.DataFrame({"r": np.repeat(np.arange(rows), cols), "c": np.tile(np.arange(cols), rows), "n": counts})
    return tables.tabulate(data, {"r": None, "c": None}, freq="n"), draw(st.integers(2, 6)), draw(st.sampled_from([1000, 2]))


@settings(max_examples=60, deadline=None)
@given(small_tables())
def test_rounding_is_additive_and_leaves_no_small_count(drawn):
    table, base, batch = drawn  # batch: candidates rounded per pass (maxIterRows), 2 forces many passes
    rounded = tables.small_count_rounding(table, round_base=base, max_iter_rows=batch)
    inner = rounded["rounded"].to_numpy()[table.inner_rows]
    # additivity holds exactly: every published cell is the sum of its rounded inner cells
    assert (rounded["rounded"].to_numpy() == table.matrix @ inner).all()
    # no published count in 1..base-1
    assert ((rounded["rounded"] == 0) | (rounded["rounded"] >= base)).all()
    # only small inner cells change, each to 0 or the base
    original = rounded["original"].to_numpy()[table.inner_rows]
    changed = inner != original
    assert (original[changed] < base).all()
    assert np.isin(inner[changed], [0, base]).all()
