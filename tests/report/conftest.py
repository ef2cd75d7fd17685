"""Synthetic report inputs: a small wave with two protection plans."""

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import sync_playwright

from sdc_dagster.report import PlanSummary, ReportInputs
from sdc_dagster.report.formats import chromium_executable

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture
def open_in_chromium():
    """``open(path, width=1280) -> (page, problems, requests)``: a local HTML file in headless Chromium,
    with the console errors and page errors it raised and every URL it requested."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)

        def open_page(path, width=1280):
            page = browser.new_page(viewport={"width": width, "height": 900})
            problems, requests = [], []
            page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            return page, problems, requests

        try:
            yield open_page
        finally:
            browser.close()


@pytest.fixture
def report_inputs() -> ReportInputs:
    rng = np.random.default_rng(7)
    n = 60
    fk = rng.integers(1, 6, size=n)
    risk_per_record = pd.DataFrame({"fk": fk, "risk": 1.0 / fk, "combined_risk": rng.uniform(0, 1, n)})
    variables = ["age", "sex", "region"]
    shapley = pd.DataFrame(rng.normal(0.1, 0.05, (n, 3)), columns=variables)
    solidarity = pd.DataFrame(rng.normal(0.08, 0.03, (n, 3)), columns=variables)
    global_contributions = pd.DataFrame({"shapley": shapley.mean(), "solidarity": solidarity.mean()})
    risk_before = {"global_risk": 0.31, "expected_reidentifications": 18.6, "k2_violations": 12,
                   "k3_violations": 25, "k5_violations": 40, "household_risk": 0.45}
    suppression = PlanSummary(
        steps=[{"method": "local_suppression", "k": 3}],
        residual_risk={"global_risk": 0.05, "expected_reidentifications": 3.0, "k2_violations": 0,
                       "k3_violations": 0, "k5_violations": 9, "household_risk": 0.12},
        loss={"lambda_arctan": 0.12, "mean_abs": 0.0, "ebil_sex": 3.4},
        topsis=pd.Series(rng.beta(2, 5, n), name="topsis"),
        checks={"k_anonymity_3": True, "global_risk_below_0.1": True, "no_direct_identifier": True},
        releasable=True,
    )
    pram = PlanSummary(
        steps=[{"method": "recode", "variable": "age", "width": 10}, {"method": "pram", "variable": "sex"}],
        residual_risk={"global_risk": 0.18, "expected_reidentifications": 10.8, "k2_violations": 4,
                       "k3_violations": 11, "k5_violations": 22, "household_risk": 0.30},
        loss={"lambda_arctan": 0.2, "mean_abs": 0.4, "<script>": 1.0},
        topsis=pd.Series(rng.beta(5, 2, n), name="topsis"),
        checks={"k_anonymity_3": False, "global_risk_below_0.1": False, "no_direct_identifier": True},
        releasable=False,
    )
    return ReportInputs(survey="Household budget <survey>", wave="2024Q1", n_records=n, keys=variables,
                        risk_before=risk_before, risk_per_record=risk_per_record,
                        contributions_global=global_contributions,
                        contributions_per_record={"shapley": shapley, "solidarity": solidarity},
                        plans={"suppression": suppression, "recode+pram": pram})


@pytest.fixture
def full_report_inputs(report_inputs) -> ReportInputs:
    """The synthetic inputs with every section filled: thresholds, contributions after each plan,
    PRAM matrices, provenance, suppressions, unsafe combinations and distributions, and a wide
    plan name that must not push the page sideways."""
    rng = np.random.default_rng(11)
    n = report_inputs.n_records
    variables = report_inputs.keys
    moved = pd.DataFrame(
        {"shapley_before": [0.5, 0.3, 0.2], "shapley_after": [0.0, 0.6, 0.4],
         "solidarity_before": [0.4, 0.3, 0.3], "solidarity_after": [0.2, 0.45, 0.35]},
        index=pd.Index(variables, name="variable"),
    )
    matrix = pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], index=["f", "m"], columns=["f", "m"])
    provenance = {"seed": 42, "run_id": "run-1", "spec_sha256": "a" * 64, "input_sha256": "b" * 64,
                  "output_sha256": "c" * 64, "packages": {"pandas": "2.3.3", "sdc-dagster": "0.1.0"},
                  "record": "/tmp/releases/s/w/suppression/run-1/manifest.json",
                  "audit_command": "sdc audit 2024Q1 --survey s --plan suppression --run run-1"}
    plans = dict(report_inputs.plans)
    plans["suppression"] = PlanSummary(**{**plans["suppression"].__dict__, "contributions": moved,
                                          "provenance": provenance,
                                          "steps": [{"method": "local_suppression", "parameters": {"k": 3, "keys": variables},
                                                     "random_state": None, "records_before": n, "records_after": n,
                                                     "values_changed": {"age": 4}, "values_suppressed": {"age": 4},
                                                     "columns_removed": []}]})
    plans["recode+pram"] = PlanSummary(**{**plans["recode+pram"].__dict__, "pram_matrices": {"sex": matrix},
                                          "withheld_because": {"k_anonymity": "fk >= 3 (found: 11)"}})
    wide_name = "plan_with_a_rather_long_name_that_keeps_going_and_going"
    plans[wide_name] = PlanSummary(**{**plans["suppression"].__dict__, "provenance": {}})
    original = pd.DataFrame({"age": rng.integers(20, 70, n).astype(float), "sex": rng.choice(["f", "m"], n),
                             "region": rng.choice(list("abcd"), n)})
    after = original.assign(age=original["age"].where(rng.uniform(size=n) > 0.1).round(-1))
    distributions = {"age": {"original": original["age"], "suppression": after["age"], wide_name: after["age"]},
                     "sex": {"original": original["sex"], "recode+pram": original["sex"].sample(frac=1, random_state=1)
                             .set_axis(original.index)}}
    suppressions = pd.DataFrame({"suppression": [4, 0, 0], "recode+pram": [0, 0, 0], wide_name: [4, 0, 0]},
                                index=pd.Index(variables, name="variable"))
    by_variable = pd.DataFrame({"dim_1": [1, 0, 0], "dim_2": [3, 1, 2], "dim_3": [9, 9, 9]},
                               index=pd.Index(variables, name="variable"))
    by_category = pd.DataFrame({"variable": ["age", "sex"], "category": ["68", "f"], "frequency": [1, 31],
                                "dim_1": [1, 0], "dim_2": [2, 1], "dim_3": [5, 4]})
    return ReportInputs(**{**report_inputs.__dict__, "plans": plans, "k": 3, "risk_threshold": 0.05,
                           "max_global_risk": 0.1, "suppressions": suppressions, "unsafe_by_variable": by_variable,
                           "unsafe_by_category": by_category, "distributions": distributions, "continuous": ["age"]})
