"""Synthetic report inputs: a small wave with two protection plans."""

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.report import PlanSummary, ReportInputs


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
