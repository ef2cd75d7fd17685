"""Issue 34, "loss kept in bounds": the utility limits (``limits:``) and l-diversity as blocking release
checks, the plan search treating them as constraints, and the report naming the worst losses.

Every expected figure is computed by hand in the comment next to it."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster import loss
from sdc_dagster.pipeline import protection
from sdc_dagster.search import wave as search
from sdc_dagster.search.candidates import SearchCandidate
from sdc_dagster.search.ladder import weakest_passing
from sdc_dagster.search.outcome import plan_to_release
from sdc_dagster.pipeline.variant import released_keys
from sdc_dagster.protect.suppression import diversity_suppression
from sdc_dagster.report import PlanSummary, ReportInputs
from sdc_dagster.report.content import binding_limits, categories_merged, suda_summary, worst_losses
from sdc_dagster.report.html import render_report
from sdc_dagster.spec import Plan, SpecError, UtilityLimits, parse_spec
from sdc_dagster.spec.draft import draft_spec
from sdc_dagster.spec.files import load_spec

# --- the measures, by hand -------------------------------------------------------------------------

# 10 records, key "age" observed in 9 (one missing in the original), key "edu" in 10.
ORIGINAL = pd.DataFrame({
    "age": [20, 30, 40, 50, 60, 20, 30, 40, None, 70],
    "edu": [1, 1, 2, 2, 3, 3, 1, 2, 3, 1],
    "income": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0],
    "spend": [5.0, 9.0, 16.0, 20.0, 26.0, 29.0, 36.0, 41.0, 44.0, 50.0],
})


def released_variant():
    released = ORIGINAL.copy()
    released.loc[[0, 1], "age"] = np.nan  # 2 of the 9 observed ages suppressed: 2/9
    released.loc[5, "edu"] = 1  # one education recoded: records changed {0, 1, 5} = 3/10
    released["income"] = released["income"] * 1.1  # mean 55 -> 60.5 (+10 %), variance x 1.21 (+21 %)
    released["spend"] = released["spend"][::-1].to_numpy()  # reversed: the correlation with income flips sign
    return released


def test_suppressed_shares_and_records_changed_by_hand():
    released = released_variant()
    shares = loss.suppressed_shares(ORIGINAL, released, ["age", "edu"])
    assert shares["age"] == pytest.approx(2 / 9)  # the missing original age is not counted as observed
    assert shares["edu"] == 0.0
    assert loss.records_changed_share(ORIGINAL, released, ["age", "edu"]) == pytest.approx(3 / 10)


def test_utility_changes_of_means_variances_and_correlations_by_hand():
    released = released_variant()
    table = loss.utility_changes(ORIGINAL, released, ["age", "edu"], ["income", "spend"]).set_index(
        ["measure", "variable"])
    assert table.loc[("mean", "income"), "change"] == pytest.approx(0.1)
    assert table.loc[("mean", "spend"), "change"] == pytest.approx(0.0, abs=1e-12)  # reversed: same values
    assert table.loc[("variance", "income"), "change"] == pytest.approx(0.21)  # 1.1 squared
    assert table.loc[("variance", "spend"), "change"] == pytest.approx(0.0, abs=1e-12)
    r = np.corrcoef(ORIGINAL["income"], ORIGINAL["spend"])[0, 1]
    r_star = np.corrcoef(ORIGINAL["income"], ORIGINAL["spend"][::-1])[0, 1]
    row = table.loc[("correlation", "income–spend")]
    assert (row["before"], row["after"], row["change"]) == pytest.approx((r, r_star, r_star - r))
    assert r > 0.99 and r_star < -0.99



def test_a_subsample_is_compared_with_the_originals_it_releases_and_a_full_release_without_a_copy(monkeypatch):
    """The originals a release is compared with (loss.limits._released_originals): the records of its
    index labels, in its order; the original itself (no copy) when it releases every record in
    order, and the figures the same either way. Records 9, 3, 0 released, in that order: incomes
    110, 44, 11 against 100, 40, 10 (+10 % each, mean 50 -> 55); age of record 0 suppressed: 1 of
    the 3 observed ages (records 9, 3, 0 all observe it)."""
    from sdc_dagster.loss import limits

    released = released_variant()
    assert limits._released_originals(ORIGINAL, released) is ORIGINAL
    subsample = released.loc[[9, 3, 0]]
    table = loss.utility_changes(ORIGINAL, subsample, ["age", "edu"], ["income"]).set_index(["measure", "variable"])
    assert (table.loc[("mean", "income"), "before"], table.loc[("mean", "income"), "after"]) == pytest.approx((50.0, 55.0))
    assert table.loc[("suppressed", "age"), "change"] == pytest.approx(1 / 3)
    # a full release: the same table as through an explicit copy of the originals in its order
    full = loss.utility_changes(ORIGINAL, released, ["age", "edu"], ["income", "spend"])
    monkeypatch.setattr(limits, "_released_originals", lambda original, protected, columns=None: (
        original.loc[protected.index] if columns is None else original.loc[protected.index, list(columns)]))
    pd.testing.assert_frame_equal(full, loss.utility_changes(ORIGINAL, released, ["age", "edu"], ["income", "spend"]))

SPEC = {
    "survey": "limits",
    "variables": {"age": {"role": "categorical_key"}, "edu": {"role": "categorical_key"},
                  "income": {"role": "continuous_key", "precision": 0.1},
                  "spend": {"role": "continuous_key", "precision": 0.1}},
    "risk": {"k": 1, "max_global_risk": 1.0, "max_linkage_risk": 1.0},
    "plans": {"p": [{"method": "local_suppression", "k": 1}]},
}


def test_a_spec_without_limits_gets_the_defaults_and_a_wrong_limit_is_a_spec_error_at_its_line(tmp_path):
    assert parse_spec(SPEC).limits == UtilityLimits(max_suppressed_share=0.1, max_records_changed=0.25,
                                                    max_mean_change=0.05, max_variance_change=0.2,
                                                    max_correlation_change=0.1, max_keys_not_released=0.5)
    assert parse_spec({**SPEC, "limits": {"max_mean_change": 0.2}}).limits.max_mean_change == 0.2
    path = tmp_path / "limits.yaml"
    path.write_text("survey: limits\nvariables:\n  age: {role: categorical_key}\nlimits:\n"
                    "  max_suppressed_share: 1.5\n  max_varience_change: 0.3\n  max_keys_not_released: 2\n")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert "limits.max_suppressed_share: must be a number in [0, 1], got 1.5" in text
    assert "limits.max_varience_change: unknown key" in text
    assert "limits.max_keys_not_released: must be a number in [0, 1], got 2" in text  # a share, not a count
    assert [e.key for e in err.value.errors] == ["limits.max_suppressed_share", "limits.max_varience_change",
                                                 "limits.max_keys_not_released"]


def test_each_limit_is_a_blocking_check_naming_the_variable_and_the_value():
    spec = parse_spec(SPEC)
    checks = protection.release_checks(released_variant(), spec, spec.plans[0], original=ORIGINAL)
    expected = {  # check: (passed, value, variable)
        "suppression_limit": (False, 2 / 9, "age"),  # 22 % > 10 %
        "records_changed_limit": (False, 3 / 10, "categorical keys"),  # 30 % > 25 %
        "mean_change_limit": (False, 0.1, "income"),  # 10 % > 5 %
        "variance_change_limit": (False, 0.21, "income"),  # 21 % > 20 %
    }
    for name, (passed, value, variable) in expected.items():
        assert (checks[name].passed, checks[name].measure, checks[name].blocking) == (passed, variable, True)
        assert checks[name].value == pytest.approx(value)
    correlation = checks["correlation_change_limit"]
    assert not correlation.passed and correlation.measure == "income–spend" and correlation.value > 1.9
    assert correlation.rule == "absolute change of each correlation between continuous keys at most 0.1 " \
                               "(limits.max_correlation_change)"
    failures = protection.blocking_failures(checks)
    # the education moved from 3 to 1 with no recode step also gives category 1 a record it did not
    # have (4 -> 5): released_categories fails beside the limits
    assert set(failures) == {"suppression_limit", "records_changed_limit", "mean_change_limit",
                             "variance_change_limit", "correlation_change_limit", "released_categories"}
    assert "share of each categorical key's values suppressed at most 10 % (limits.max_suppressed_share) " \
           "(found: 22.2 %, age)" == failures["suppression_limit"]
    # the same variant within looser limits passes them all (released_categories is no limit)
    loose = parse_spec({**SPEC, "limits": {"max_suppressed_share": 0.25, "max_records_changed": 0.3,
                                           "max_mean_change": 0.1,
                                           "max_variance_change": 0.25, "max_correlation_change": 2}})
    assert set(protection.blocking_failures(
        protection.release_checks(released_variant(), loose, loose.plans[0], original=ORIGINAL))) == {
        "released_categories"}


def test_a_variant_keeps_the_utility_figures_of_its_checks_and_the_report_shows_them():
    """Issue 38: the figures are computed once, with the release checks, and the report reads them from
    the variant. Local suppression to k = 1 changes nothing: every change is 0 and every limit holds;
    checks given figures use them (a variance change of 21 % written in fails the 20 % limit although
    the data did not change)."""
    from sdc_dagster.pipeline.report_inputs import _utility_or_none

    spec = parse_spec(SPEC)
    variant = protection.protect_variant(ORIGINAL, spec, spec.plans[0], wave="2024")
    assert list(variant.utility["variable"]) == ["age", "edu", "categorical keys", "income", "spend", "income",
                                                 "spend", "income–spend", "none"]  # no key withheld
    assert (variant.utility["change"] == 0).all()
    assert not set(protection.blocking_failures(variant.checks)) & set(protection.UTILITY_CHECKS)
    assert _utility_or_none(ORIGINAL, variant, spec) is variant.utility
    written = variant.utility.copy()
    written.loc[(written["measure"] == "variance") & (written["variable"] == "income"), "change"] = 0.21
    checks = protection.release_checks(variant.data, spec, spec.plans[0], original=ORIGINAL, utility=written)
    assert (checks["variance_change_limit"].passed, checks["variance_change_limit"].measure) == (False, "income")
    assert checks["variance_change_limit"].value == pytest.approx(0.21)
    # a variant made with the plan search's checks keeps none, and the report computes them
    taken = protection.protect_variant(ORIGINAL, spec, spec.plans[0], wave="2024", checks=variant.checks)
    assert taken.utility is None
    assert (_utility_or_none(ORIGINAL, taken, spec)["change"] == 0).all()


def test_a_value_released_as_its_merged_category_is_not_a_changed_record():
    """The plan recodes edu 3 into 1 (records 4, 5, 8) and PRAM-like changes record 0's edu 1 -> 2:
    against the original generalised by the recode only record 0 changed (1 of 10)."""
    spec = parse_spec(SPEC)
    plan = Plan(name="p", steps=({"method": "recode", "variable": "edu", "mapping": {3: 1}},), k=1, random_state=1)
    released = ORIGINAL.copy()
    released["edu"] = released["edu"].replace({3: 1})
    released.loc[0, "edu"] = 2
    table = protection.utility_changes(ORIGINAL, released, spec, plan, released=released_keys(spec, released)).set_index("measure")
    assert table.loc["records changed", "change"] == pytest.approx(1 / 10)
    # without the plan every recoded record counts: 0, 4, 5, 8
    assert protection.utility_changes(ORIGINAL, released, spec, released=released_keys(spec, released)).set_index("measure").loc[
        "records changed", "change"] == pytest.approx(4 / 10)


# --- l-diversity ----------------------------------------------------------------------------------

# Key groups by (a, b): {0, 1, 2} = (1, 1) with health x, x, y: 2 distinct, entropy exp(-(2/3 ln 2/3 +
# 1/3 ln 1/3)) = 1.89; {3, 4} = (1, 2) with z, z: 1 distinct; {5} = (2, 1) with y: 1 distinct;
# {6, 7} = (2, 2) with x and a missing value: 2 distinct (sdcMicro counts a missing value as one more
# when the group has others), entropy 2.
DIVERSE = pd.DataFrame({"a": [1, 1, 1, 1, 1, 2, 2, 2], "b": [1, 1, 1, 2, 2, 1, 2, 2],
                        "health": ["x", "x", "y", "z", "z", "y", "x", None]})
L_SPEC = {"survey": "ldiv", "variables": {"a": {"role": "categorical_key"}, "b": {"role": "categorical_key"},
                                          "health": {"role": "sensitive"}},
          "risk": {"k": 1, "max_global_risk": 1.0, "l": 2},
          "plans": {"p": [{"method": "local_suppression", "k": 1}]}}


def test_l_diversity_is_a_blocking_check_counting_the_records_below_l_by_hand():
    spec = parse_spec(L_SPEC)
    checks = protection.release_checks(DIVERSE, spec, spec.plans[0], original=DIVERSE)
    assert (checks["l_diversity"].passed, checks["l_diversity"].value, checks["l_diversity"].blocking) == (False, 3, True)
    # entropy below 2: the 3 records of the first group (1.89) and the 3 with one value (entropy 1)
    entropy = checks["entropy_l_diversity"]
    assert (entropy.passed, entropy.value, entropy.blocking) == (False, 6, False)
    assert "l_diversity" in protection.blocking_failures(checks)
    strict = parse_spec({**L_SPEC, "risk": {**L_SPEC["risk"], "l_diversity": "entropy"}})
    assert protection.release_checks(DIVERSE, strict, strict.plans[0], original=DIVERSE)["entropy_l_diversity"].blocking
    # without risk.l (or without a sensitive variable) there is no l-diversity check, and the report says why
    undeclared = parse_spec({**L_SPEC, "risk": {"k": 1, "max_global_risk": 1.0}})
    assert "l_diversity" not in protection.release_checks(DIVERSE, undeclared, undeclared.plans[0], original=DIVERSE)
    assert "risk.l" in protection.checks_not_applicable(undeclared)["l_diversity"]


def test_a_wrong_l_diversity_measure_is_a_spec_error():
    with pytest.raises(SpecError, match=r"risk.l_diversity: must be one of 'distinct', 'entropy', got 'recursive'"):
        parse_spec({**L_SPEC, "risk": {**L_SPEC["risk"], "l_diversity": "recursive"}})


# --- the plan search treats the limits as constraints ----------------------------------------------

def test_the_search_never_recommends_a_plan_outside_the_limits():
    """40 records: key "rare" has 36 records in category 0 and 4 singletons; key "g" two halves. With
    k = 2 singletons of "rare" must be suppressed (2 of 40 = 5 % at least: the two suppressed values
    match any value, SPEC §2.4) or merged. A suppression limit of 4 % forbids the suppression, so the
    recommended plan recodes "rare" instead; with a limit of
    0 % and recoding forbidden too, nothing is recommended and the released plan is withheld by the
    suppression limit."""
    data = pd.DataFrame({"rare": [0] * 36 + [1, 2, 3, 4], "g": [1, 2] * 20})
    raw = {"survey": "constrained", "variables": {"rare": {"role": "categorical_key"}, "g": {"role": "categorical_key"}},
           "risk": {"k": 2, "max_global_risk": 1.0}, "search": {"enabled": True},
           "plans": {"p": [{"method": "local_suppression", "k": 2}]}}
    free = search.search_wave(data, parse_spec({**raw, "limits": {"max_suppressed_share": 1.0}}), wave="1")
    assert free.recommended is not None and free.recommended.suppressed_share == 0.05  # least loss: suppress
    spec = parse_spec({**raw, "limits": {"max_suppressed_share": 0.04}})
    found = search.search_wave(data, spec, wave="1")
    assert found.recommended is not None
    assert found.recommended.suppressed_share == 0 and found.recommended.levels == (1, 0)
    assert found.recommended.checks["suppression_limit"].passed
    assert all(c.suppressed_share <= 0.04 for c in found.candidates if c.reaches_target)
    stuck = parse_spec({**raw, "limits": {"max_suppressed_share": 0.0},
                        "search": {"enabled": True, "methods": ["local_suppression"]}})
    none = search.search_wave(data, stuck, wave="1")
    assert none.recommended is None
    plan = plan_to_release(none, stuck)
    variant = protection.protect_variant(data, stuck, plan, wave="1")
    assert "suppression_limit" in variant.withheld_because


def test_diversity_suppression_suppresses_the_keys_of_the_groups_below_l_by_hand():
    """DIVERSE's groups (a, b) = (1, 2) and (2, 1) hold one health value each (records 3, 4, 5): their
    keys are suppressed and the three form one group holding z and y, 2-diverse; the others are kept."""
    released = diversity_suppression(DIVERSE, ["a", "b"], "health", l=2)
    assert released[["a", "b"]].isna().all(axis=1).tolist() == [False] * 3 + [True] * 3 + [False] * 2
    assert released.loc[[0, 1, 2, 6, 7], ["a", "b"]].astype(int).equals(DIVERSE.loc[[0, 1, 2, 6, 7], ["a", "b"]])
    spec = parse_spec(L_SPEC)
    assert protection.release_checks(released, spec, spec.plans[0], original=DIVERSE)["l_diversity"].passed
    # entropy l-diversity 2 asks more: only the group (2, 2), entropy exactly 2, keeps its keys
    strict = diversity_suppression(DIVERSE, ["a", "b"], "health", l=2, entropy=True)
    assert strict[["a", "b"]].isna().all(axis=1).tolist() == [True] * 6 + [False] * 2


def test_the_search_requires_l_diversity_of_its_nodes():
    """Key "a" alone: each of its 4 values holds one health value (1-diverse); merged two by two
    ({1, 2} and {3, 4}, the spec's hierarchy) each group holds two. With l = 2 the node that keeps
    "a" as it is reaches l-diversity only by suppressing every key value (beyond the suppression
    limit), and the recommended plan merges."""
    data = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 4, 4] * 3, "health": ["x", "x", "y", "y"] * 6})  # 1, 3: x; 2, 4: y
    raw = {"survey": "ldiv", "variables": {"a": {"role": "categorical_key", "categories": [1, 2, 3, 4],
                                                 "hierarchy": [[[1, 2], [3, 4]]]},
                                           "health": {"role": "sensitive"}},
           "risk": {"k": 2, "max_global_risk": 1.0, "l": 2}, "search": {"enabled": True},
           "plans": {"p": [{"method": "local_suppression", "k": 2}]}}
    found = search.search_wave(data, parse_spec(raw), wave="1")
    assert all(c.suppressed_share == 1.0 and not c.reaches_target for c in found.candidates if c.levels == (0,))
    assert found.recommended is not None and found.recommended.checks["l_diversity"].passed
    assert found.recommended.levels != (0,)


# --- the report -------------------------------------------------------------------------------------

def _utility(rows):
    table = pd.DataFrame(rows, columns=["measure", "variable", "before", "after", "change", "limit"])
    table["used"] = table["change"].abs() / table["limit"]
    return table


def _inputs(plans):
    n = 10
    risk_per_record = pd.DataFrame({"fk": [3.0] * n, "risk": [1 / 3] * n})
    return ReportInputs(survey="s", wave="1", n_records=n, keys=["age"], risk_before={"global_risk": 0.3},
                        risk_per_record=risk_per_record, contributions_global=None, contributions_per_record=None,
                        plans=plans)


def _plan(utility, releasable=True, lambda_arctan=0.1):
    return PlanSummary(steps=[], residual_risk={"global_risk": 0.01}, loss={"lambda_arctan": lambda_arctan,
                                                                             "moment_variance_arctan": 1.0},
                       topsis=pd.Series([0.1, 0.2, 0.3]), checks={"suppression_limit": releasable},
                       releasable=releasable, utility=utility,
                       withheld_because={} if releasable else {"suppression_limit": "too much"})


def test_the_decision_box_names_the_worst_losses_in_words():
    utility = _utility([
        ("suppressed", "age", 100, 88, 0.12, 0.10),  # 1.2 of its limit: first
        ("suppressed", "edu", 100, 99, 0.01, 0.10),  # 0.1: fourth, left out
        ("mean", "savings", 50.0, 54.0, 0.08, 0.05),  # 1.6: the worst
        ("correlation", "income–expenditure", 0.71, 0.52, -0.19, 0.1),  # 1.9 times
        ("variance", "income", 4.0, 4.0, 0.0, 0.2),  # no loss: never named
    ])
    assert worst_losses(utility) == ["correlation income–expenditure 0.71 → 0.52", "mean of savings +8 %",
                                     "age: 12 % suppressed"]
    html = render_report(_inputs({"chosen": _plan(utility)}))
    assert ("Largest losses of chosen (against the utility limits): correlation income–expenditure 0.71 → 0.52; "
            "mean of savings +8 %; age: 12 % suppressed.") in html


def test_the_decision_box_names_the_keys_the_plan_does_not_release():
    # issue 34: testdata2.dta released keys as one category and dropped others under "utility 0.822"
    from dataclasses import replace

    utility = _utility([("suppressed", "age", 100, 88, 0.12, 0.10)])
    plan = replace(_plan(utility), keys_not_released={"age": "one category", "region": "one category",
                                                      "income": "withheld", "savings": "withheld"})
    html = render_report(_inputs({"chosen": plan}))
    box = html[html.index('<div class="decision">'):html.index("</div>", html.index('<div class="decision">'))]
    assert "Not released by chosen: age, region: released as one category; income, savings: withheld.</p>" in box
    assert "Largest losses of chosen (against the utility limits): age: 12 % suppressed." in box
    # every key released: no such sentence
    assert "Not released by" not in render_report(_inputs({"chosen": _plan(utility)}))


def test_the_decision_box_names_the_keys_released_in_fewer_categories():
    # issue 34, a new user's pass on ISLR's Wage: the searched plan banded age's 61 values into 3
    # bands and merged race's 4 categories into 2, while "Largest losses" named only 0.3 % suppressed
    from dataclasses import replace

    age = pd.Series([18, 19, 25, 33, 47, 61, 61, 70, 18, 25])  # 7 ages: 18, 19, 25, 33, 47, 61, 70
    bands = pd.Series(["[18,40]"] * 4 + ["(40,60]", "(60,80]", "(60,80]", "(60,80]", None, "[18,40]"])  # 3 bands
    race = pd.Series([1, 2, 3, 4, 1, 1, 1, 2, 1, 1])  # 4 categories
    merged = pd.Series([1, 5, 5, 5, 1, 1, 1, 5, 1, 1])  # 2: "Other (2, 3, 4)"
    edu = pd.Series([1, 2, 1, 2, 1, 2, 1, 2, 1, None])  # suppressed, not merged: 2 categories kept
    utility = _utility([("suppressed", "age", 10, 9, 0.1, 0.10)])
    plan = replace(_plan(utility), keys_not_released={"region": "one category"})
    inputs = dataclasses.replace(
        _inputs({"chosen": plan}), keys=["age", "race", "edu", "region"],
        distributions={"age": {"original": age, "chosen": bands}, "race": {"original": race, "chosen": merged},
                       "edu": {"original": edu.fillna(2), "chosen": edu},
                       "region": {"original": race, "chosen": pd.Series(["all"] * 10)}})
    # by hand: age 7 -> 3 (3/7 kept: first), race 4 -> 2 (half kept); region is not released
    assert categories_merged(inputs, "chosen") == ["age: 7 categories released as 3",
                                                   "race: 4 categories released as 2"]
    html = render_report(inputs)
    box = html[html.index('<div class="decision">'):html.index("</div>", html.index('<div class="decision">'))]
    assert ("Categories merged by chosen: age: 7 categories released as 3; race: 4 categories released as 2.</p>"
            in box)
    assert "Not released by chosen: region: released as one category.</p>" in box
    assert "Categories merged by" not in render_report(_inputs({"chosen": _plan(utility)}))


def test_with_no_plan_releasable_the_decision_says_which_limit_binds_and_by_how_much():
    first = _utility([("suppressed", "age", 100, 60, 0.4, 0.1), ("variance", "income", 4.0, 5.0, 0.25, 0.2)])
    second = _utility([("suppressed", "age", 100, 85, 0.15, 0.1), ("variance", "income", 4.0, 4.1, 0.025, 0.2)])
    inputs = _inputs({"a": _plan(first, releasable=False), "b": _plan(second, releasable=False)})
    # the suppression limit binds in both (b comes closest, 15 % = 1.5 times 10 %); the variance only in a
    assert binding_limits(inputs) == ["age: 15 % suppressed against at most 10 % (1.5 times the limit) in b, the "
                                      "closest plan"]
    assert "Utility limits no plan meets: age: 15 % suppressed against at most 10 %" in render_report(inputs)


def test_a_measure_with_one_value_for_every_plan_is_flagged():
    html = render_report(_inputs({"a": _plan(None), "b": _plan(None, lambda_arctan=0.2)}))
    row = html[html.index("<code>moment_variance_arctan</code>"):][:1500]
    assert "same for every plan: does not discriminate between them" in row
    other = html[html.index("<code>lambda_arctan</code>"):][:1500]
    assert "does not discriminate" not in other.split("</tr>")[0]


def test_suda_summary_counts_the_records_per_dis_suda_interval():
    table = pd.DataFrame({"suda_score": [0.0, 0.0, 2.0, 4.0, 6.0], "suda_dis_score": [0.0, 0.0, 0.05, 0.15, 0.8]})
    summary = suda_summary(table)
    assert summary["records"].to_dict() == {"= 0": 2, "(0, 0.1]": 1, "(0.1, 0.2]": 1, "(0.2, 0.3]": 0,
                                            "(0.3, 0.4]": 0, "(0.4, 0.5]": 0, "(0.5, 0.6]": 0, "(0.6, 0.7]": 0,
                                            "> 0.7": 1}
    assert summary.loc["(0.1, 0.2]", "records in this interval or above"] == 2  # 0.15 and 0.8
    assert summary.loc["(0.1, 0.2]", "SUDA score, max"] == 4.0
    assert suda_summary(pd.DataFrame({"risk": [0.1]})) is None


def test_the_draft_writes_the_limits_with_their_reasons(tmp_path):
    path = tmp_path / "wave.csv"
    pd.DataFrame({"region": list("abcab") * 4, "income": np.linspace(1000.5, 9000.25, 20)}).to_csv(path, index=False)
    text = draft_spec(path, "drafted")
    block = text[text.index("limits:"):]
    for line in ("max_suppressed_share: 0.1", "max_records_changed: 0.25", "max_mean_change: 0.05",
                 "max_variance_change: 0.2", "max_correlation_change: 0.1", "max_keys_not_released: 0.5"):
        assert line in block
    assert block.count("#") >= 6  # a reason beside each
    assert parse_spec(__import__("yaml").safe_load(text)).limits == UtilityLimits()


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.tuples(st.sampled_from([1, 2, 3, None]), st.sampled_from([1, 2, None]),
                                 st.booleans(), st.booleans()), min_size=1, max_size=30))
def test_shares_follow_their_definition_record_by_record(values):
    """Suppression share = values observed and then missing / values observed, per key; records
    changed = records with any key suppressed, counted one by one; both in [0, 1], and a record with
    a suppressed key is a changed record."""
    original = pd.DataFrame([(a, b) for a, b, _, _ in values], columns=["a", "b"], dtype="float")
    released = original.copy()
    released.loc[[hide for hide, (_, _, h, _) in enumerate(values) if h], "a"] = np.nan
    released.loc[[hide for hide, (_, _, _, h) in enumerate(values) if h], "b"] = np.nan
    shares = loss.suppressed_shares(original, released, ["a", "b"])
    for key, position in (("a", 2), ("b", 3)):
        observed = [v for v in values if v[position - 2] is not None]
        hidden = [v for v in observed if v[position]]
        assert shares[key] == pytest.approx(len(hidden) / len(observed) if observed else 0.0)
    changed = sum(1 for a, b, ha, hb in values if (a is not None and ha) or (b is not None and hb))
    share = loss.records_changed_share(original, released, ["a", "b"])
    assert share == pytest.approx(changed / len(values))
    observed = original.notna().sum()
    assert 0.0 <= share <= 1.0
    assert all(share >= shares[key] * observed[key] / len(values) - 1e-12 for key in ("a", "b"))


def test_the_bisection_over_a_method_finds_the_weakest_step_within_risk_and_utility():
    """Steps 0..5 of one method, stronger with each: the risk checks pass from step 3 on (a stronger
    step keeps passing them), the variance limit fails from step 4 on (a stronger step loses more).
    Only step 3 passes both, and the bisection finds it; the old rule (bisect on every check) ran
    the strongest step, saw it fail the variance limit and gave up on the method."""
    def outcome(passed):
        return protection.CheckOutcome(passed=passed, value=0.0, rule="r", blocking=True)

    def run(step):
        checks = {"linkage_risk": outcome(step >= 3), "variance_change_limit": outcome(step < 4)}
        candidate = SearchCandidate(plan=Plan(name="searched", steps=(), k=1, random_state=1), global_risk=0.0,
                                           k_violations=0, linkage_risk=0.0, loss=float(step), suppressed=0,
                                           reaches_target=True, checks=checks)
        return candidate, step

    found = weakest_passing(list(range(6)), run, lambda: False, lambda candidate, protected: candidate)
    assert found.loss == 3 and found.confirmed


def test_the_search_reaches_l_diversity_by_suppression_within_the_limit_and_the_release_replays_it():
    """Key "a": values 1 and 2 (20 records each, health x and y alternating) are 2-diverse; values 3
    (x, x) and 4 (y, y) are not. Suppressing the keys of those 4 records (4 / 44 = 9.1 % of "a", within
    the 10 % limit) puts them in one group holding x and y: the unrecoded node reaches the target,
    and its plan, run as the release runs it, passes the l-diversity check with the same 4 values
    suppressed."""
    data = pd.DataFrame({"a": [1, 2] * 20 + [3, 3, 4, 4],
                         "health": ["x", "x", "y", "y"] * 10 + ["x", "x", "y", "y"]})
    raw = {"survey": "ldiv", "variables": {"a": {"role": "categorical_key"}, "health": {"role": "sensitive"}},
           "risk": {"k": 2, "max_global_risk": 1.0, "l": 2},
           "search": {"enabled": True, "methods": ["local_suppression"]},  # (merging 3 and 4 would do too)
           "plans": {"p": [{"method": "local_suppression", "k": 2}]}}
    spec = parse_spec(raw)
    found = search.search_wave(data, spec, wave="1")
    chosen = found.recommended
    assert chosen is not None and chosen.levels == (0,) and chosen.suppressed == 4
    assert {"method": "diversity_suppression", "sensitive": ["health"], "l": 2} in chosen.plan.steps
    released = protection.protect(data, spec, chosen.plan, wave="1").data
    assert released["a"].isna().tolist() == [False] * 40 + [True] * 4
    assert protection.release_checks(released, spec, chosen.plan, original=data)["l_diversity"].passed


def test_the_search_suppresses_the_records_below_l_and_they_match_every_group():
    """Key "a": values 1 and 2 (30 records each, health x and y alternating) and 5 (x, y) are
    2-diverse; 3 (x, x) and 4 (x, x) are not. Their 4 records lose "a" (4 / 66 = 6.1 %, within the
    10 % limit). A missing key value matches any value, for l as for k (SPEC §2.4, issue 34): with
    one key variable the 4 suppressed records match every record and see the whole file's x and y,
    so every record of the release is 2-diverse. (Before issue 34 the suppressed records were a group
    of their own, {x, x, x, x}, and group 5 had to join them: 6 records lost "a".)"""
    data = pd.DataFrame({"a": [1, 2] * 30 + [3, 3, 4, 4, 5, 5],
                         "health": ["x", "x", "y", "y"] * 15 + ["x", "x", "x", "x", "x", "y"]})
    raw = {"survey": "ldiv", "variables": {"a": {"role": "categorical_key"}, "health": {"role": "sensitive"}},
           "risk": {"k": 2, "max_global_risk": 1.0, "l": 2},
           "search": {"enabled": True, "methods": ["local_suppression"]},
           "plans": {"p": [{"method": "local_suppression", "k": 2}]}}
    spec = parse_spec(raw)
    chosen = search.search_wave(data, spec, wave="1").recommended
    assert chosen is not None and chosen.levels == (0,) and chosen.suppressed == 4
    released = protection.protect(data, spec, chosen.plan, wave="1").data
    assert released["a"].isna().tolist() == [False] * 60 + [True] * 4 + [False] * 2
    assert protection.release_checks(released, spec, chosen.plan, original=data)["l_diversity"].passed


# --- keys not released (issues 34, 38) -------------------------------------------------------------

FOUR_KEYS = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2], "b": [1, 1, 2, 2, 3, 3], "c": [1, 2, 3, 1, 2, 3],
                          "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
FOUR_KEYS_SPEC = {"survey": "lost", "risk": {"k": 1, "max_global_risk": 1.0, "max_linkage_risk": 1.0},
                  "variables": {**{key: {"role": "categorical_key"} for key in "abc"},
                                "x": {"role": "continuous_key", "precision": 0.1}},
                  "plans": {"p": [{"method": "local_suppression", "k": 1}]}}


def test_the_share_of_keys_not_released_is_a_blocking_check_naming_them():
    """4 keys (a, b, c categorical, x continuous). a and b released as one category and x withheld:
    3 of 4 keys not released, 75 % > 50 %; a alone: 25 %, within the limit."""
    spec = parse_spec(FOUR_KEYS_SPEC)
    lost = FOUR_KEYS.assign(a=1, b=7).drop(columns="x")
    check = protection.release_checks(lost, spec, spec.plans[0], original=FOUR_KEYS)["keys_not_released_limit"]
    assert (check.passed, check.value, check.measure, check.blocking) == (False, 0.75, "a, b, x", True)
    assert check.explained("keys_not_released_limit") == (
        "share of the keys withheld or released as one category at most 50 % (limits.max_keys_not_released) "
        "(found: 75 %, a, b, x)")
    one = protection.release_checks(FOUR_KEYS.assign(a=2), spec, spec.plans[0], original=FOUR_KEYS)
    assert one["keys_not_released_limit"].passed and one["keys_not_released_limit"].value == 0.25
    # every value of c suppressed is one category too (nothing of it left): 2 of 4, at the limit
    gone = protection.release_checks(FOUR_KEYS.assign(a=2, c=np.nan), spec, spec.plans[0], original=FOUR_KEYS)
    assert gone["keys_not_released_limit"].passed and gone["keys_not_released_limit"].measure == "a, c"
    # a spec can raise the limit: with 1 a release of no key passes it
    loose = parse_spec({**FOUR_KEYS_SPEC, "limits": {"max_keys_not_released": 1}})
    assert protection.release_checks(lost, loose, loose.plans[0], original=FOUR_KEYS)["keys_not_released_limit"].passed
    # the decision box's words for the row
    table = protection.utility_changes(FOUR_KEYS, lost, spec, spec.plans[0], released=released_keys(spec, lost))
    row = table.set_index("measure").loc["keys not released"]
    assert (row["variable"], row["before"], row["after"], row["change"]) == ("a, b, x", 4, 1, 0.75)
    # (with no recode step in the plan, every record's a counts as changed too: 100 % of records)
    assert worst_losses(table) == ["100 % of records with a categorical key suppressed or perturbed",
                                   "3 of 4 keys not released (75 %): a, b, x"]


def test_the_search_never_recommends_a_plan_releasing_most_keys_as_one_category():
    """12 records, keys a, b, c with every combination unique (a: 1..12, b and c: 2 and 3 groups of
    consecutive records): k = 12 is met by recoding alone only with a, b and c each at its top (one
    category): 3 of 3 keys not released, beyond the default 50 %. The search recommends nothing and
    the plan of every key at its top is withheld by keys_not_released_limit; with the limit at 1 the
    search recommends that plan, loss 1 (every value lost)."""
    data = pd.DataFrame({"a": range(1, 13), "b": [1] * 6 + [2] * 6, "c": [1] * 4 + [2] * 4 + [3] * 4})
    raw = {"survey": "tops", "variables": {key: {"role": "categorical_key", "scale": "nominal"} for key in "abc"},
           "risk": {"k": 12, "max_global_risk": 1.0}, "search": {"enabled": True, "methods": ["recode"]}}
    spec = parse_spec(raw)
    found = search.search_wave(data, spec, wave="1")
    assert found.recommended is None
    assert all(c.keys_not_released_share <= 0.5 for c in found.candidates if c.reaches_target)
    tops = [c for c in found.candidates if c.keys_not_released_share == 1.0]
    assert tops and not any(c.reaches_target for c in tops) and tops[0].k_violations == 0
    plan = plan_to_release(found, spec)
    assert "keys_not_released_limit" in protection.protect_variant(data, spec, plan, wave="1").withheld_because
    loose = parse_spec({**raw, "limits": {"max_keys_not_released": 1}})
    allowed = search.search_wave(data, loose, wave="1")
    assert allowed.recommended is not None and allowed.recommended.loss == 1.0
    assert allowed.recommended.checks["keys_not_released_limit"].passed
