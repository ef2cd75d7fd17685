"""The recommendation rule, the Pareto front and the number formatting of the report (expected
values written by hand)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.report.decision import pareto_optimal, recommend_plan
from sdc_dagster.report.measures import GROUPS, KINDS, format_measure, format_value, measure_info


def _points(rows):
    return pd.DataFrame(rows, columns=["plan", "risk", "loss", "releasable"]).set_index("plan")


def test_recommends_least_loss_among_passing_plans():
    points = _points([("a", 0.01, 0.30, True), ("b", 0.02, 0.10, True), ("c", 0.001, 0.05, False),
                      ("d", 0.03, 0.20, True)])
    result = recommend_plan(points)
    assert result.plan == "b"
    assert result.pareto == ["a", "b"]  # d is dominated by b; c fails its checks
    assert "c" in result.reason and "failed blocking checks" in result.reason


def test_no_plan_passes():
    result = recommend_plan(_points([("a", 0.01, 0.3, False), ("b", 0.02, 0.1, False)]))
    assert result.plan is None and result.pareto == []
    assert "No plan passes" in result.reason


def test_two_plans_tie_on_risk_and_loss_first_in_spec_wins():
    result = recommend_plan(_points([("z", 0.01, 0.2, True), ("y", 0.01, 0.2, True), ("x", 0.02, 0.3, True)]))
    assert result.plan == "z" and result.tied == ["z", "y"] and result.pareto == ["z", "y"]
    assert "tied" in result.reason


def test_tie_in_loss_goes_to_lower_risk():
    assert recommend_plan(_points([("a", 0.02, 0.2, True), ("b", 0.01, 0.2, True)])).plan == "b"


def test_plan_without_figures_is_not_comparable():
    points = _points([("a", np.nan, 0.1, True), ("b", 0.02, 0.2, True)])
    assert list(pareto_optimal(points)) == [False, True]
    assert recommend_plan(points).plan == "b"
    assert recommend_plan(_points([("a", np.nan, 0.1, True)])).plan is None


def test_missing_column_is_named():
    with pytest.raises(SDCInputError, match="releasable"):
        recommend_plan(pd.DataFrame({"risk": [0.1], "loss": [0.1]}, index=["a"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans()), min_size=1, max_size=8))
def test_recommendation_is_eligible_pareto_and_undominated(rows):
    points = pd.DataFrame(rows, columns=["risk", "loss", "releasable"], index=[f"p{i}" for i in range(len(rows))])
    result = recommend_plan(points)
    eligible = points[points["releasable"]]
    if eligible.empty:
        assert result.plan is None
        return
    assert result.plan in eligible.index and result.plan in result.pareto
    chosen = eligible.loc[result.plan]
    assert chosen["loss"] == eligible["loss"].min()
    # no eligible plan dominates the recommendation
    assert not ((eligible["risk"] <= chosen["risk"]) & (eligible["loss"] <= chosen["loss"])
                & ((eligible["risk"] < chosen["risk"]) | (eligible["loss"] < chosen["loss"]))).any()


@pytest.mark.parametrize(("value", "kind", "text"), [
    (12.0, "count", "12"),
    (4580, "count", "4,580"),
    (0, "count", "0"),
    (0.000546, "share", "0.0546 %"),
    (0.25, "share", "25 %"),
    (0.0024, "share", "0.24 %"),
    (1.0, "share", "100 %"),
    (10.7783, "expected", "10.8"),
    (0.12345, "index", "0.123"),
    (3.4, "index", "3.4"),
    (5.2e24, "scale", "5.2 × 10²⁴"),
    (1.234e-7, "index", "1.23 × 10⁻⁷"),
    (123456.0, "scale", "1.23 × 10⁵"),
    (6.25e-17, "share", "≈ 0 %"),
    (-2.0e-13, "index", "≈ 0"),
    (float("nan"), "share", "–"),
    (None, "count", "–"),
])
def test_format_value_by_kind(value, kind, text):
    assert format_value(value, kind) == text


def test_format_value_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        format_value(1.0, "percentage")


def test_scale_dependent_measure_shows_its_relative_form():
    figures = {"moment_covariance_squared": 5.2e24, "moment_covariance_relative": 0.031}
    assert format_measure("moment_covariance_squared", figures) == "5.2 × 10²⁴ (relative: 3.1 %)"
    assert format_measure("k3_violations", {"k3_violations": 0.0}) == "0"


def test_every_known_measure_is_described():
    names = ["global_risk", "expected_reidentifications", "k3_violations", "lambda_arctan", "topsis_mean",
             "moment_covariance_squared", "moment_inverse_correlation_raw", "ebil_sex", "cramers_v_change_mean",
             "dUtility_IL1", "sse_tss", "income_records_below_l", "interval_risk", "rank_interval_disclosure"]
    for name in names:
        info = measure_info(name)
        assert info.meaning != "not described" and info.group in GROUPS and info.kind in KINDS, name
        assert info.spec.startswith("§"), name
    assert measure_info("ebil_sex").label == "EBIL of sex"
    assert measure_info("brand_new_risk").meaning == "not described"
