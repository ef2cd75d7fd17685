"""Issue 22, "a report that reads as a decision": categories written as integers and with their
value labels, recoded bands on their own axis, readable charts of many categories, the risk-utility
map in % with the risk target and a search front, readable blocking-check text and association
changes, and the PDF printed without playwright."""

import sys
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from sdc_dagster.pipeline import protection
from sdc_dagster.loss.association import association_change, association_loss
from sdc_dagster.report import (
    PlanSummary,
    ReportInputs,
    category_shares,
    render_report,
    report_data,
    write_pdf,
    write_report,
)
from sdc_dagster.report.formats import chromium_executable
from sdc_dagster.report.categories import category_counts, category_sort_key, category_text
from sdc_dagster.report.content import distribution_panels, risk_target
from sdc_dagster.report.measures import format_measure
from sdc_dagster.report.plots import category_bars_svg, risk_utility_map_svg, top_categories
from sdc_dagster.spec.sources import value_labels


def _size(svg: bytes) -> tuple[float, float]:
    """(height, width) in pixels."""
    root = ElementTree.fromstring(svg)
    return float(root.get("height")), float(root.get("width"))


def _plan(steps, *, risk=0.004, loss=0.2):
    return PlanSummary(steps=steps, residual_risk={"global_risk": risk}, loss={"lambda_arctan": loss},
                       topsis=pd.Series(np.linspace(0, 1, 8)), checks={"k_anonymity": True}, releasable=True)


def _inputs(**fields) -> ReportInputs:
    n = 8
    base = dict(survey="s", wave="w", n_records=n, keys=["hsize", "db040"], risk_before={"global_risk": 0.0243},
                risk_per_record=pd.DataFrame({"fk": np.ones(n), "risk": np.ones(n)}),
                contributions_global=None, contributions_per_record=None, k=3, max_global_risk=0.01)
    return ReportInputs(**{**base, **fields})


# --- 1, 2: categories as integers and with value labels -------------------------------------------


def test_integral_float_categories_are_written_as_integers():
    shares = category_shares({"original": pd.Series([1.0, 2.0, 2.0, np.nan, 10.0])})
    assert list(shares.index) == ["1", "2", "10", "(missing)"]
    assert category_text(np.float64(3.0)) == "3" and category_text(2.5) == "2.5"


def test_categories_written_alike_are_counted_together_in_order_of_first_appearance():
    mixed = pd.Series([2, "2", 1.0, 1, None, "b", 2.0], dtype=object)  # 2, "2", 2.0 all write "2"
    counted = category_counts(mixed)
    assert counted.to_dict() == {"(missing)": 1, "2": 3, "1": 2, "b": 1} and counted.dtype == np.int64
    assert list(category_counts(pd.Series([3, 1, 3, 3])).items()) == [("3", 3), ("1", 1)]


def test_value_labels_are_shown_next_to_the_codes_and_the_data_keep_their_codes():
    region = pd.Series([4.0, 4.0, 1.0, 11.0])
    shares = category_shares({"original": region}, {1.0: "Wien", 4.0: "Burgenland"})
    assert list(shares.index) == ["1 (Wien)", "4 (Burgenland)", "11"]
    assert shares.loc["4 (Burgenland)", "original"] == 0.5
    assert region.tolist() == [4.0, 4.0, 1.0, 11.0]


@pytest.mark.slow
def test_the_report_writes_labelled_integer_categories_in_tables_and_json():
    original = pd.DataFrame({"hsize": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 1.0, 2.0], "db040": [4.0, 4, 1, 1, 4, 4, 1, 1]})
    after = original.assign(hsize=original["hsize"].where(original.index > 0))
    by_category = pd.DataFrame({"variable": ["db040", "hsize"], "category": [4.0, 1.0], "frequency": [4, 3],
                                "dim_1": [0, 0], "dim_2": [1, 1], "dim_3": [2, 2]})
    pram = PlanSummary(**{**_plan([{"method": "pram", "variable": "db040"}]).__dict__,
                          "pram_matrices": {"db040": pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], index=[1.0, 4.0],
                                                                  columns=[1.0, 4.0])}})
    inputs = _inputs(plans={"p": _plan([{"method": "local_suppression", "k": 3}]), "pram": pram},
                     distributions={"hsize": {"original": original["hsize"], "p": after["hsize"]},
                                    "db040": {"original": original["db040"], "p": original["db040"]}},
                     unsafe_by_variable=pd.DataFrame({"dim_1": [0, 0]}, index=["hsize", "db040"]),
                     unsafe_by_category=by_category, value_labels={"db040": {4.0: "Burgenland", 1.0: "Wien"}})
    page = render_report(inputs)
    assert "db040 = 4 (Burgenland)" in page and "hsize = 1<" in page and "hsize = 1.0" not in page
    assert "<td>1 (Wien)</td>" in page and "<th>4 (Burgenland)</th>" in page  # shares; the PRAM matrix
    shares = report_data(inputs)["distributions"]["db040"]["shares"]
    assert shares["index"] == ["1 (Wien)", "4 (Burgenland)"]


def test_value_labels_of_an_spss_and_a_stata_file(tmp_path):
    frame = pd.DataFrame({"db040": [1.0, 4.0], "age": [30.0, 40.0]})
    pyreadstat.write_sav(frame, str(tmp_path / "w.sav"),
                         variable_value_labels={"db040": {1.0: "Wien", 4.0: "Burgenland"}})
    pyreadstat.write_dta(frame, str(tmp_path / "w.dta"), variable_value_labels={"db040": {1: "Wien", 4: "Burgenland"}})
    assert value_labels(tmp_path / "w.sav") == {"db040": {1.0: "Wien", 4.0: "Burgenland"}}
    assert value_labels(tmp_path / "w.dta") == {"db040": {1: "Wien", 4: "Burgenland"}}
    frame.to_csv(tmp_path / "w.csv", index=False)
    assert value_labels(tmp_path / "w.csv") == {}


# --- 3, 4: recoded bands on their own axis; charts of many categories stay readable ---------------


def test_recoded_bands_get_their_own_chart_with_the_original_in_the_same_bands():
    ages = pd.Series([5.0, 15, 25, 25, 35, 45, 55, 65])
    codes = pd.Series([1, 2, 3, 3, 4, 5, 6, 7], dtype="Int64")  # interval_recode's default labels
    step = {"method": "interval_recode", "parameters": {"variable": "age", "breaks": [0, 10, 20, 30, 40, 50, 60, 70]}}
    inputs = _inputs(plans={"bands": _plan([step]), "kept": _plan([{"method": "local_suppression", "k": 3}])},
                     distributions={"age": {"original": ages, "bands": codes, "kept": ages.where(ages > 5)}})
    (title, shared, _), (band_title, banded, continuous) = distribution_panels(inputs, "age")
    assert set(shared) == {"original", "kept"} and "bands" in band_title and not continuous
    table = category_shares(banded)
    assert list(table.index) == ["[0,10]", "(10,20]", "(20,30]", "(30,40]", "(40,50]", "(50,60]", "(60,70]"]
    assert table["bands"].tolist() == table["original, in the same bands"].tolist()


def test_labels_that_are_not_original_categories_are_drawn_on_their_own():
    ages = pd.Series([5.0, 15, 25, 35])
    bands = pd.Series(["(0,20]", "(0,20]", "(20,40]", "(20,40]"])
    inputs = _inputs(plans={"r": _plan([{"method": "recode", "variable": "age", "mapping": {}}])},
                     distributions={"age": {"original": ages, "r": bands}})
    panels = distribution_panels(inputs, "age")
    # a recode is a fixed rule: the original is drawn beside it in the same categories (issue 34)
    assert [list(values) for _, values, _ in panels] == [["original"], ["original, in the same categories", "r"]]
    assert panels[1][1]["original, in the same categories"].tolist() == bands.tolist()
    ordered = sorted(["(20,40]", "(0,20]", "3", "(missing)"], key=category_sort_key)
    assert ordered == ["(0,20]", "3", "(20,40]", "(missing)"]


def test_merged_groups_of_a_search_plan_are_drawn_with_the_original_in_the_same_categories():
    # the plan search's recode (groups, as a manifest records them) then local suppression: ages 40
    # and 80 suppressed; 80 had no other record, so it goes with its group (61, 70, 80)
    ages = pd.Series([18, 25, 40, 41, 55, 61, 80, 70])
    released = pd.Series(["81 ([18,40])", "81 ([18,40])", None, "82 ((40,60])", "82 ((40,60])", "83 ((60,80])",
                          None, "83 ((60,80])"], dtype=object)
    recode = {"method": "recode", "parameters": {"variable": "age", "groups": [[18.0, 25.0, 40.0], [41.0, 55.0],
                                                                              [61.0, 70.0, 80.0]],
                                                 "names": ["[18,40]", "(40,60]", "(60,80]"], "mapping": None}}
    suppress = {"method": "local_suppression", "parameters": {"k": 3}}
    inputs = _inputs(plans={"searched": _plan([recode, suppress])},
                     distributions={"age": {"original": ages, "searched": released}})
    (_, shared, _), (title, panel, continuous) = distribution_panels(inputs, "age")
    assert list(shared) == ["original"] and title == "age, recoded by searched" and not continuous
    table = category_shares(panel)
    # by hand: 3, 2 and 3 of the 8 original records fall in the bands; the plan released 2, 2, 2 and 2 missing
    assert table["original, in the same categories"].to_dict() == {
        "81 ([18,40])": 3 / 8, "82 ((40,60])": 2 / 8, "83 ((60,80])": 3 / 8, "(missing)": 0.0}
    assert table["searched"].to_dict() == {"81 ([18,40])": 2 / 8, "82 ((40,60])": 2 / 8, "83 ((60,80])": 2 / 8,
                                           "(missing)": 2 / 8}


def test_a_key_moved_between_categories_gets_no_original_in_the_same_categories():
    # PRAM writes into the key: its categories are no rule of the original ones
    ages = pd.Series([18, 18, 41, 41])
    released = pd.Series(["a", "b", "b", "b"], dtype=object)
    for steps in ([{"method": "pram", "variable": "age"}],
                  [{"method": "recode", "variable": "age", "mapping": {}}]):  # 18 released as a and as b
        inputs = _inputs(plans={"p": _plan(steps)}, distributions={"age": {"original": ages, "p": released}})
        assert [list(values) for _, values, _ in distribution_panels(inputs, "age")] == [["original"], ["p"]]


def test_a_chart_of_a_hundred_categories_grows_in_height_and_pools_the_rest():
    few = pd.DataFrame({"original": [0.5, 0.3, 0.2], "plan": [0.4, 0.4, 0.2]}, index=["1", "2", "3"])
    many = pd.DataFrame({"original": np.full(100, 0.01), "plan": np.full(100, 0.01)},
                        index=[str(i) for i in range(100)])
    many.iloc[7] = [0.2, 0.2]
    shown = top_categories(many, limit=30)
    assert len(shown) == 30 and shown.index[-1] == "other (71 categories)" and "7" in shown.index
    assert shown["original"].sum() == pytest.approx(many["original"].sum())
    (tall, wide), (short, _) = _size(category_bars_svg(100 * many, "many")), _size(category_bars_svg(100 * few, "few"))
    assert tall > 1.8 * short and wide < 900  # shown at its own size on a page, not shrunk to a strip


# --- 5: the risk-utility map ------------------------------------------------------------------------


@pytest.mark.slow
def test_the_map_draws_the_risk_target_and_the_search_front_in_percent():
    inputs = _inputs(plans={"a": _plan([], risk=0.004, loss=0.2), "b": _plan([], risk=0.02, loss=0.1)},
                     search_front=pd.DataFrame({"global_risk": [0.002, 0.009], "loss": [0.3, 0.15]}))
    assert risk_target(inputs) == (0.01, "target: at most 1 %")
    page = render_report(inputs)
    map_section = page[page.index('id="map"'):page.index('id="measures"')]
    assert "dotted vertical line is the risk target" in map_section and "front of the plan search" in map_section
    assert "<td>0.4 %</td>" in map_section  # the data behind the map as the tables write it
    assert "Front of the plan search" in map_section and "<td>0.9 %</td>" in map_section
    points = pd.DataFrame({"risk": [0.004, 0.02], "loss": [0.2, 0.1], "releasable": [True, False]}, index=["a", "b"])
    plain = risk_utility_map_svg(points)
    drawn = risk_utility_map_svg(points, target=0.01, front=pd.DataFrame({"risk": [0.002], "loss": [0.3]}),
                                 percent=(True, False))
    assert plain != drawn


# --- 6, 7: readable check outcomes and association changes ------------------------------------------


def test_blocking_check_outcomes_write_risk_shares_in_percent():
    checks = {
        "global_risk": protection.CheckOutcome(False, 0.02430882811024742, "global risk <= 0.01", True),
        "k_anonymity": protection.CheckOutcome(False, 12, "fk >= 3", True),
        "other": protection.CheckOutcome(False, 1.23456789, "x <= 1", True),
    }
    assert protection.blocking_failures(checks) == {"global_risk": "global risk <= 0.01 (found: 2.43 %)",
                                                "k_anonymity": "fk >= 3 (found: 12)", "other": "x <= 1 (found: 1.235)"}


def test_association_change_stays_meaningful_near_zero():
    assert association_change(0.4, 0.3) == pytest.approx(25.0)  # a real association: relative change
    assert association_change(0.0023, 0.0122) == pytest.approx(9.9)  # negligible: in units of V = 0.1, not 430 %
    assert association_change(0.0, 0.0) == 0.0
    # two independent variables (V = 0) made dependent: the floor keeps the change finite
    original = pd.DataFrame({"a": ["x"] * 50 + ["y"] * 50, "b": (["u"] * 25 + ["v"] * 25) * 2})
    protected = original.assign(b=["u"] * 30 + ["v"] * 20 + ["u"] * 20 + ["v"] * 30)
    # protected table [[30, 20], [20, 30]]: chi2 = 100 * (30*30 - 20*20)^2 / (50^4) = 4, V = sqrt(4 / 100) = 0.2
    row = association_loss(original, protected, ["a", "b"]).iloc[0]
    assert row["cramers_v"] == pytest.approx(0.0) and row["cramers_v_protected"] == pytest.approx(0.2)
    assert row["cramers_v_change"] == pytest.approx(200.0)


def test_the_change_of_cramers_v_is_written_as_the_percent_it_is():
    assert format_measure("cramers_v_change_mean", {"cramers_v_change_mean": 4.31}) == "4.31 %"
    assert format_measure("regression_relative_change_mean", {"regression_relative_change_mean": 12.5}) == "12.5 %"


# --- 8: the PDF ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_pdf_names_what_to_install_when_no_browser_is_found(full_report_inputs, tmp_path, monkeypatch, capsys):
    from sdc_dagster.cli import main
    from sdc_dagster.report import formats

    monkeypatch.setattr(formats, "BROWSERS", ("no-such-browser-sdc",))
    paths = write_report(full_report_inputs, tmp_path / "reports" / "s")
    with pytest.raises(formats.BrowserNotFound, match="needs Chromium or Google Chrome on PATH: install it"):
        formats.write_pdf(paths["html"], tmp_path / "r.pdf")
    monkeypatch.setenv("SDC_HOME", str(tmp_path))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    assert main(["--home", str(tmp_path), "report", "s", "2024Q1", "--pdf"]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("sdc report: printing the PDF needs Chromium")


def _lowest_text(page) -> float:
    """The height of the lowest line of text on a PDF page, as a share of the page height."""
    heights = []
    page.extract_text(visitor_text=lambda text, cm, tm, font, size:
                      heights.append(tm[5] * cm[3] + cm[5]) if text.strip() else None)
    return min(heights) / float(page.mediabox.height)


@pytest.mark.slow
@pytest.mark.skipif(chromium_executable() is None, reason="no Chromium-family browser on PATH")
def test_the_pdf_is_printed_without_playwright_and_its_pages_are_filled(full_report_inputs, tmp_path, monkeypatch):
    from pypdf import PdfReader

    monkeypatch.setitem(sys.modules, "playwright", None)  # as after `pip install .`: no test extra
    many = pd.DataFrame({"variable": ["age"] * 120, "category": np.arange(120.0), "frequency": np.arange(120),
                         "dim_1": 0, "dim_2": 1, "dim_3": 2})
    inputs = ReportInputs(**{**full_report_inputs.__dict__, "unsafe_by_category": many})
    paths = write_report(inputs, tmp_path / "survey")
    reader = PdfReader(write_pdf(paths["html"], tmp_path / "report.pdf"))
    assert "Recommended plan: suppression" in reader.pages[0].extract_text()
    # a long table is not pushed whole to the next page and the charts stand two abreast: the pages
    # but the last are written down to their last fifth, a tenth on average (the print style before
    # this change left 35 % of a page blank, 16 % on average, on these inputs; this one 6 %)
    blank = [_lowest_text(page) for page in reader.pages[:-1]]
    assert max(blank) < 0.2 and np.mean(blank) < 0.1, [round(b, 2) for b in blank]
