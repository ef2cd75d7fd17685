"""Plan search (SPEC §3.1, §3.3, §8, §9.1): every front member reaches the risk target, no member is
dominated, every other candidate reaching the target is dominated, and the front runs as a spec."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.plan import apply_plan
from sdc_dagster.protect.plan_search import (
    PlanCandidate,
    candidate_plans,
    front_as_yaml,
    pareto_front,
    search_plans,
    search_plans_for_spec,
)
from sdc_dagster.risk.categorical import global_risk, k_anonymity_violations
from sdc_dagster.spec import Plan, SpecError, parse_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "testdata.csv"
EXAMPLE_SPEC = Path(__file__).resolve().parents[2] / "examples" / "testdata.yaml"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
# Category hierarchies of testdata's keys: rare codes merged first, then broader groups.
HIERARCHIES = {
    "water": [[[5, 6, 7, 9]], [[1, 2], [3, 4], [5, 6, 7, 9]]],
    "roof": [[[4, 5, 6, 9]]],
    "relat": [[[4, 5, 6, 7, 8, 9]]],
}
K = 3
# Between the lowest and the highest global risk of the space on testdata, so the target binds.
MAX_GLOBAL_RISK = 0.0005


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA)


@pytest.fixture(scope="module")
def result(testdata):
    return search_plans(
        testdata, KEYS, HIERARCHIES, k=K, max_global_risk=MAX_GLOBAL_RISK, importances=(None, KEYS),
        weight="sampling_weight",
    )


def dominates(a: PlanCandidate, b: PlanCandidate) -> bool:
    return a.risk <= b.risk and a.loss <= b.loss and (a.risk < b.risk or a.loss < b.loss)


def test_space_is_the_product_of_the_choices(result):
    # water 3 levels x roof 2 x relat 2 x 2 importance orders x 1 k
    assert len(result.candidates) == 24
    assert not all(c.reaches_target for c in result.candidates)  # the global-risk target binds
    assert result.front


def test_every_front_member_reaches_the_target_when_rerun(testdata, result):
    before = testdata.copy()
    for candidate in result.front:
        protected = apply_plan(testdata, candidate.plan.steps, keys=KEYS, random_state=candidate.plan.random_state).data
        assert k_anonymity_violations(protected, KEYS, K) == 0
        risk = global_risk(protected, KEYS, weight="sampling_weight")["risk"]
        assert risk <= MAX_GLOBAL_RISK and risk == pytest.approx(candidate.risk, rel=1e-12)
    pd.testing.assert_frame_equal(testdata, before)


def test_no_front_member_is_dominated_and_the_rest_are(result):
    reaching = [c for c in result.candidates if c.reaches_target]
    front_names = {c.plan.name for c in result.front}
    for candidate in reaching:
        dominated = any(dominates(other, candidate) for other in reaching)
        assert dominated == (candidate.plan.name not in front_names), candidate.plan.name
    assert [c.loss for c in result.front] == sorted(c.loss for c in result.front)


def test_pareto_front_of_hand_made_points():
    def candidate(name, risk, loss):
        plan = Plan(name=name, steps=({"method": "local_suppression", "k": 3},), k=3, random_state=0)
        return PlanCandidate(plan, risk, 0, loss, 0, True)

    points = {"a": (1, 5), "b": (2, 3), "c": (3, 3), "d": (2, 4), "e": (4, 1), "f": (1, 5), "g": (5, 1)}
    front = pareto_front([candidate(n, *p) for n, p in points.items()])
    # c is dominated by b (same loss, more risk), d by b, g by e; a and f tie and both stay
    assert [c.plan.name for c in front] == ["e", "b", "a", "f"]
    assert pareto_front([]) == []


def test_front_yaml_is_a_runnable_plans_block(testdata, result):
    raw = yaml.safe_load(EXAMPLE_SPEC.read_text())
    raw["plans"] = yaml.safe_load(front_as_yaml(result))["plans"]
    spec = parse_spec(raw)
    assert [p.name for p in spec.plans] == [c.plan.name for c in result.front]
    for plan, candidate in zip(spec.plans, result.front):
        assert list(plan.steps) == list(candidate.plan.steps) and plan.k == K
        first = apply_plan(testdata, plan.steps, keys=KEYS, random_state=plan.random_state).data
        second = apply_plan(testdata, candidate.plan.steps, keys=KEYS, random_state=candidate.plan.random_state).data
        pd.testing.assert_frame_equal(first, second)


def test_candidate_plans_and_input_errors(testdata):
    plans = candidate_plans(KEYS, {"roof": [[[4, 5, 6, 9]]]}, k=3, k_values=(3, 5))
    assert [p.steps for p in plans] == [
        ({"method": "local_suppression", "k": 3},),
        ({"method": "local_suppression", "k": 5},),
        ({"method": "recode", "variable": "roof", "groups": [[4, 5, 6, 9]]}, {"method": "local_suppression", "k": 3}),
        ({"method": "recode", "variable": "roof", "groups": [[4, 5, 6, 9]]}, {"method": "local_suppression", "k": 5}),
    ]
    with pytest.raises(SDCInputError, match="k_values"):
        candidate_plans(KEYS, {}, k=3, k_values=(2,))
    with pytest.raises(SDCInputError, match="hierarchies: 'age'"):
        search_plans(testdata, KEYS, {"age": [[[1, 2]]]})
    with pytest.raises(SDCInputError, match=r"hierarchies.roof\[0\]"):
        search_plans(testdata, KEYS, {"roof": ["4"]})
    with pytest.raises(SDCInputError, match="max_global_risk"):
        search_plans(testdata, KEYS, {}, max_global_risk=2)
    # without weights every record is its own population: mean 1/f_k is far above 1%, so no plan
    # reaches the target and the front is empty
    unweighted = search_plans(testdata, KEYS, {}, k=2, max_global_risk=0.01)
    assert len(unweighted.candidates) == 1 and unweighted.front == ()
    assert unweighted.candidates[0].k_violations == 0 and unweighted.candidates[0].risk > 0.01


def test_the_spec_carries_the_hierarchies_and_the_target(testdata, result):
    raw = yaml.safe_load(EXAMPLE_SPEC.read_text())
    for variable, levels in HIERARCHIES.items():
        raw["variables"][variable]["hierarchy"] = levels
    raw["risk"]["max_global_risk"] = MAX_GLOBAL_RISK
    spec = parse_spec(raw)
    assert spec.hierarchies == HIERARCHIES
    from_spec = search_plans_for_spec(testdata, spec, importances=(None, KEYS))

    def front(found):  # recodes of different keys commute: the spec lists them in variable order
        return sorted((c.risk, c.loss, sorted(map(repr, c.plan.steps))) for c in found.front)

    assert front(from_spec) == front(result)
    assert all(c.k_violations == 0 and c.risk <= MAX_GLOBAL_RISK for c in from_spec.front)


@pytest.mark.parametrize(
    ("hierarchy", "role", "message"),
    [
        ([[[1, 2], [2, 3]]], "categorical_key", "each category in one group at most"),
        ([[1, 2]], "categorical_key", "a list of groups"),
        ([[[1, 7]]], "categorical_key", "categories of the variable"),
        ([[[1, 2]]], "other", "only on a categorical_key"),
    ],
)
def test_bad_hierarchy_is_a_spec_error(hierarchy, role, message):
    raw = {"survey": "s", "variables": {"v": {"role": role, "scale": "nominal", "categories": [1, 2, 3],
                                               "hierarchy": hierarchy}}}
    with pytest.raises(SpecError, match=message):
        parse_spec(raw)
