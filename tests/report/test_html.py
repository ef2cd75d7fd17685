"""The HTML release report: content, self-containment, and rendering in headless Chromium."""

import re

import pandas as pd
import pytest
from playwright.sync_api import sync_playwright

from sdc_dagster.errors import SDCInputError
from sdc_dagster.report import decision_table, headline_table, render_report, report_plots
from sdc_dagster.report.inputs import ReportInputs

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def test_headline_table(report_inputs):
    table = headline_table(report_inputs)
    assert list(table.index) == ["original", "suppression", "recode+pram"]
    assert table.loc["original", "global_risk"] == 0.31
    assert table.loc["suppression", "k3_violations"] == 0
    assert table.loc["recode+pram", "mean_topsis_loss"] == pytest.approx(report_inputs.plans["recode+pram"].topsis.mean())
    assert table.loc["suppression", "checks_passed"] == "3/3"
    assert table.loc["recode+pram", "checks_passed"] == "1/3"
    assert bool(table.loc["suppression", "releasable"]) and not bool(table.loc["recode+pram", "releasable"])


def test_report_plots_are_png(report_inputs):
    plots = report_plots(report_inputs)
    assert set(plots) == {"risk_histogram", "combined_risk_histogram", "shapley_boxplot", "solidarity_boxplot",
                          "topsis_histograms", "risk_utility_map"}
    assert all(png.startswith(b"\x89PNG") for png in plots.values())


def test_report_is_self_contained_and_escaped(report_inputs):
    page = render_report(report_inputs)
    assert page.startswith("<!DOCTYPE html>")
    # no external resource of any kind
    assert not re.search(r"(src|href)=\"(?!data:)", page)
    assert "http://" not in page and "https://" not in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "Household budget &lt;survey&gt;" in page
    assert page.count('src="data:image/png;base64,') == 6
    for text in ("Headline", "Release checks", "Information loss", "Risk-utility map", "k3_violations",
                 "household_risk", "lambda_arctan", "shapiro_w", "local_suppression"):
        assert text in page, text


def test_report_without_plans_or_contributions(report_inputs):
    minimal = ReportInputs(survey="s", wave="w", n_records=60, keys=["age"], risk_before={"global_risk": 0.2},
                           risk_per_record=report_inputs.risk_per_record[["fk", "risk"]],
                           contributions_global=None, contributions_per_record=None)
    page = render_report(minimal)
    assert page.count("data:image/png") == 1 and "Release checks" not in page


def test_missing_risk_column_raises(report_inputs):
    bad = ReportInputs(survey="s", wave="w", n_records=1, keys=[], risk_before={},
                       risk_per_record=pd.DataFrame({"fk": [1]}), contributions_global=None,
                       contributions_per_record=None)
    with pytest.raises(SDCInputError, match="'risk'"):
        render_report(bad)


@pytest.mark.ui
def test_report_renders_in_headless_chromium(report_inputs, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_report(report_inputs), encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requests = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            assert "wave 2024Q1" in page.title()
            assert page.locator("table").count() >= 7
            headline = page.locator("table").first
            assert headline.locator("tbody tr").count() == 3
            assert "suppression" in headline.inner_text()
            images = page.locator("img")
            assert images.count() == 6
            widths = images.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
            assert all(width > 0 for width in widths), widths
            # only the file itself and its inline data: images are requested
            assert all(url.startswith(("file://", "data:")) for url in requests), requests
        finally:
            browser.close()


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


def test_contributions_before_and_after_each_plan(report_inputs):
    moved = pd.DataFrame(
        {"shapley_before": [0.5, 0.3, 0.2], "shapley_after": [0.0, 0.6, 0.4],
         "solidarity_before": [0.4, 0.3, 0.3], "solidarity_after": [0.2, 0.45, 0.35]},
        index=pd.Index(["age", "sex", "region"], name="variable"),
    )
    plans = dict(report_inputs.plans)
    plans["suppression"] = type(plans["suppression"])(**{**plans["suppression"].__dict__, "contributions": moved})
    inputs = ReportInputs(**{**report_inputs.__dict__, "plans": plans})
    plots = report_plots(inputs)
    assert set(plots) - set(report_plots(report_inputs)) == {"contributions_suppression"}
    assert plots["contributions_suppression"].startswith(b"\x89PNG")
    page = render_report(inputs)
    section = page[page.index("Contributions to the residual risk after each plan"):page.index("Information loss")]
    assert "shapley_after" in section and "<td>0.6000</td>" in section
    assert section.count('src="data:image/png;base64,') == 1
