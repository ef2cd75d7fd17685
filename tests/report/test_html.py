"""The HTML release report: content and order, self-containment, the JSON and index formats, and
rendering in headless Chromium (no overflow at 1280 and 800 px, no console error, every image
loads, the PDF has the decision on page 1)."""

import json
import re

import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.report import (
    decision_table,
    headline_table,
    plan_points,
    recommendation,
    render_report,
    report_data,
    report_plots,
    step_sentence,
    wave_trend,
    write_pdf,
    write_report,
)
from sdc_dagster.report.inputs import ReportInputs

WIDE_PLAN = "plan_with_a_rather_long_name_that_keeps_going_and_going"


def test_headline_table(report_inputs):
    table = headline_table(report_inputs)
    assert list(table.index) == ["original", "suppression", "recode+pram"]
    assert table.loc["original", "global_risk"] == 0.31
    assert table.loc["suppression", "k3_violations"] == 0
    assert table.loc["recode+pram", "mean_topsis_loss"] == pytest.approx(report_inputs.plans["recode+pram"].topsis.mean())
    assert table.loc["suppression", "checks_passed"] == "3/3"
    assert table.loc["recode+pram", "checks_passed"] == "1/3"
    assert bool(table.loc["suppression", "releasable"]) and not bool(table.loc["recode+pram", "releasable"])


def test_report_plots_are_svg(report_inputs):
    plots = report_plots(report_inputs)
    assert set(plots) == {"risk_histogram", "combined_risk_histogram", "shapley_boxplot", "solidarity_boxplot",
                          "topsis_histograms", "risk_utility_map"}
    assert all(chart.startswith(b"<svg") for chart in plots.values())


def test_plan_points_and_recommendation_from_the_fixture(full_report_inputs):
    points = plan_points(full_report_inputs)
    # loss axis = lambda_arctan of each plan (0.12, 0.2, 0.12), risk = residual global risk
    assert points["loss"].tolist() == [0.12, 0.2, 0.12]
    assert points["risk"].tolist() == [0.05, 0.18, 0.05]
    assert points["utility"].tolist() == pytest.approx([0.88, 0.8, 0.88])
    assert points["pareto"].tolist() == [True, False, True]
    chosen = recommendation(full_report_inputs)
    assert chosen.plan == "suppression" and chosen.tied == ["suppression", WIDE_PLAN]


@pytest.mark.slow
def test_report_order_decision_first_and_self_contained(full_report_inputs):
    page = render_report(full_report_inputs)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"src=\"(?!data:)", page)
    assert not re.search(r"href=\"(?!file:|#)", page)  # links to release manifests on disk and within the page
    assert "http://" not in page and "https://" not in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "Household budget &lt;survey&gt;" in page
    headings = re.findall(r"<h2 id=\"([\w-]+)\"", page)
    assert headings == ["decision", "map", "variables", "measures", "provenance", "sign-off", "references"]
    decision = page[page.index('id="decision"'):page.index('id="map"')]
    assert "Recommended plan: <strong>suppression</strong>" in decision and "Rule: Only plans" in decision
    assert "k = 3" in decision and "individual-risk threshold 5 %" in decision
    assert "failed: k_anonymity: fk &gt;= 3 (found: 11)" in decision
    assert "31 %" in decision and "18.6" in decision  # global risk 0.31 as a share, expected re-identifications
    variables = page[page.index('id="variables"'):page.index('id="measures"')]
    for text in ("Suppressions per key and plan", "shapley after suppression", "Unsafe combinations (k = 3)",
                 "age = 68", "PRAM transition matrix of sex, plan recode+pram", "age before and after",
                 "sex before and after"):
        assert text in variables, text
    measures = page[page.index('id="measures"'):page.index('id="provenance"')]
    for text in ("Disclosure risk", "Młodak&#x27;s measures", "lower is better", ">Młodak 2020</a>",
                 "EBIL of sex", "shapiro_w"):
        assert text in measures, text
    provenance = page[page.index('id="provenance"'):page.index('id="sign-off"')]
    assert "Local suppression with k = 3; keys age, sex, region: suppressed 4 values (age 4)." in provenance
    assert "sdc audit 2024Q1 --survey s --plan suppression --run run-1" in provenance
    assert "a" * 64 in provenance and "Versions" in provenance
    # every chart: alt text and a table behind it
    assert page.count("<img ") == page.count("Data behind the chart") >= 10
    assert all(alt.strip() for alt in re.findall(r'<img alt="([^"]*)"', page))


def test_report_without_plans_or_contributions(report_inputs):
    minimal = ReportInputs(survey="s", wave="w", n_records=60, keys=["age"], risk_before={"global_risk": 0.2},
                           risk_per_record=report_inputs.risk_per_record[["fk", "risk"]],
                           contributions_global=None, contributions_per_record=None)
    page = render_report(minimal)
    assert page.count("data:image/svg+xml") == 1 and "No protection plan is configured" in page
    assert report_data(minimal)["decision"]["recommended"] is None


def test_no_plan_passes_says_so(report_inputs):
    plans = {name: type(plan)(**{**plan.__dict__, "releasable": False}) for name, plan in report_inputs.plans.items()}
    page = render_report(ReportInputs(**{**report_inputs.__dict__, "plans": plans}))
    assert "<strong>No plan is recommended</strong>. No plan passes its blocking release checks" in page


def test_missing_risk_column_raises(report_inputs):
    bad = ReportInputs(survey="s", wave="w", n_records=1, keys=[], risk_before={},
                       risk_per_record=pd.DataFrame({"fk": [1]}), contributions_global=None,
                       contributions_per_record=None)
    with pytest.raises(SDCInputError, match="'risk'"):
        render_report(bad)


def test_decision_table_names_the_failed_blocking_checks(report_inputs):
    plans = dict(report_inputs.plans)
    pram = plans["recode+pram"]
    plans["recode+pram"] = type(pram)(
        steps=pram.steps, residual_risk=pram.residual_risk, loss=pram.loss, topsis=pram.topsis, checks=pram.checks,
        releasable=False, withheld_because={"k_anonymity_3": "fk >= 3 for every record (found: 11)"},
        warnings={"individual_risk": "no record with risk > 0.05 (found: 2)"},
    )
    inputs = ReportInputs(**{**report_inputs.__dict__, "plans": plans})
    table = decision_table(inputs)
    assert table.loc["suppression"].tolist() == ["released", "none", "none"]
    assert table.loc["recode+pram"].tolist() == [
        "withheld", "k_anonymity_3: fk >= 3 for every record (found: 11)", "individual_risk: no record with risk > 0.05 (found: 2)"
    ]
    page = render_report(inputs)
    assert "Release decision" in page and "k_anonymity_3: fk &gt;= 3 for every record (found: 11)" in page


@pytest.mark.slow
def test_contributions_before_and_after_each_plan(full_report_inputs):
    plots = report_plots(full_report_inputs)
    assert "contributions_suppression" in plots and plots["contributions_suppression"].startswith(b"<svg")
    page = render_report(full_report_inputs)
    body = page[page.index("</nav>"):]  # the sections, after the table of contents that names them too
    section = body[body.index("Contributions to the residual risk after each plan"):body.index("Unsafe combinations")]
    assert "shapley_after" in section and "<td>0.6</td>" in section


def test_step_sentences():
    assert step_sentence({"method": "recode", "variable": "water", "mapping": {7: 5, 8: 5}}) == (
        "Global recoding with variable water; mapping 7 → 5, 8 → 5.")
    recorded = {"method": "pram", "parameters": {"variable": "water", "retention": 0.9, "matrix": None, "invariant": False},
                "random_state": 4207457573, "records_before": 10, "records_after": 10,
                "values_changed": {"water": 3}, "values_suppressed": {}, "columns_removed": []}
    assert step_sentence(recorded) == ("PRAM with variable water; retention = 0.9 (seed 4207457573): "
                                       "changed 3 values (water 3).")
    subsample = {"method": "subsample", "parameters": {"fraction": 0.5}, "random_state": 1, "records_before": 10,
                 "records_after": 5, "values_changed": {}, "values_suppressed": {}, "columns_removed": []}
    assert step_sentence(subsample) == "Subsampling with fraction = 0.5 (seed 1): kept 5 of 10 records."


@pytest.mark.slow
def test_json_has_every_figure_and_is_strict(full_report_inputs, tmp_path):
    paths = write_report(full_report_inputs, tmp_path / "survey")
    data = json.loads(paths["json"].read_text())  # strict JSON: NaN written as null
    assert data["decision"]["recommended"] == "suppression"
    assert data["risk_before"]["global_risk"] == 0.31
    assert data["plans"]["recode+pram"]["pram_matrices"]["sex"]["data"] == [[0.9, 0.1], [0.2, 0.8]]
    assert data["plans"]["suppression"]["provenance"]["seed"] == 42
    assert data["measures"]["global_risk"]["sources"] == ("Franconi & Polettini 2004; Hundepool et al. 2012, §3.3; "
                                                          "Templ, Kowarik & Meindl 2015")
    assert {"Franconi & Polettini 2004", "Hundepool et al. 2012", "Templ, Kowarik & Meindl 2015"} <= set(data["references"])
    assert data["suppressions"]["data"][0] == [4, 0, 4]
    assert data["distributions"]["sex"]["kind"] == "categorical"
    assert data["distributions"]["age"]["kind"] == "continuous"
    assert data["plans"]["suppression"]["topsis_summary"]["n"] == 60
    assert data["risk_per_record_summary"]["index"][0] == "count"
    assert "NaN" not in paths["json"].read_text()


@pytest.mark.slow
def test_index_links_every_wave_with_the_trend(full_report_inputs, tmp_path):
    folder = tmp_path / "survey"
    for wave in ("w10", "w2"):
        write_report(ReportInputs(**{**full_report_inputs.__dict__, "wave": wave}), folder)
    trend = wave_trend(folder)
    assert list(trend.index) == ["w2", "w10"]  # natural wave order
    assert trend.loc["w2"].tolist() == [0.31, "suppression", 0.05, 0.12]
    index = (folder / "index.html").read_text()
    assert '<a href="w2.html">' in index and '<a href="w10.html">' in index
    assert "Risk and utility across waves" in index and index.count("data:image/svg+xml") == 2


@pytest.mark.slow
@pytest.mark.ui
@pytest.mark.parametrize("width", [1280, 800])
def test_report_renders_without_overflow_in_headless_chromium(full_report_inputs, tmp_path, width,
                                                            open_in_chromium):
    paths = write_report(full_report_inputs, tmp_path / "survey")
    for path in (paths["html"], paths["index"]):
        page, problems, requests = open_in_chromium(path, width)
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], (path.name, widths)
        # no element sticks out of the page; wide tables scroll inside their own container
        sticking_out = page.evaluate("""() => [...document.querySelectorAll('body *')]
            .filter(e => !e.closest('.scroll'))
            .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
            .map(e => e.tagName + '.' + e.className)""")
        assert sticking_out == [], (path.name, sticking_out)
        images = page.locator("img")
        assert images.count() >= 2
        loaded = images.evaluate_all("imgs => imgs.map(i => i.complete && i.naturalWidth > 0)")
        assert all(loaded), loaded
        assert problems == [], problems
        assert all(url.startswith(("file://", "data:")) for url in requests), requests
        page.close()
    page, _, _ = open_in_chromium(paths["html"], width)
    first = page.locator("h2").first.inner_text()
    assert first == "Decision"
    assert "Recommended plan: suppression" in page.locator(".decision").inner_text()


@pytest.mark.slow
@pytest.mark.ui
def test_pdf_has_the_decision_on_page_one(full_report_inputs, tmp_path):
    from pypdf import PdfReader

    paths = write_report(full_report_inputs, tmp_path / "survey")
    pdf = write_pdf(paths["html"], tmp_path / "report.pdf")
    reader = PdfReader(pdf)
    first = reader.pages[0].extract_text()
    assert "Decision" in first and "Recommended plan: suppression" in first
    assert len(reader.pages) >= 2
