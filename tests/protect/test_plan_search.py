"""Pareto front of risk against loss and the plans block written from it (SPEC §8, §9.1); the
spec's category hierarchies the plan search uses."""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from sdc_dagster.protect.plan import apply_plan
from sdc_dagster.search.front import front_as_yaml, pareto_front
from sdc_dagster.spec import Plan, SpecError, parse_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "testdata.csv"
EXAMPLE_SPEC = Path(__file__).resolve().parents[2] / "examples" / "testdata.yaml"


def candidate(name, risk, loss, steps=({"method": "local_suppression", "k": 3},)):
    return SimpleNamespace(plan=Plan(name=name, steps=steps, k=3, random_state=0, description=name),
                           risk=risk, global_risk=risk, loss=loss)


def test_pareto_front_of_hand_made_points():
    points = {"a": (1, 5), "b": (2, 3), "c": (3, 3), "d": (2, 4), "e": (4, 1), "f": (1, 5), "g": (5, 1)}
    front = pareto_front([candidate(n, *p) for n, p in points.items()])
    # c is dominated by b (same loss, more risk), d by b, g by e; a and f tie and both stay
    assert [c.plan.name for c in front] == ["e", "b", "a", "f"]
    assert pareto_front([]) == []


def front_as_yaml_names(taken):
    two = [candidate("a", 0.002, 0.01), candidate("b", 0.001, 0.02)]
    return yaml.safe_load(front_as_yaml(two, taken=taken))["plans"]


def test_front_yaml_is_a_runnable_plans_block_without_name_clashes():
    raw = yaml.safe_load(EXAMPLE_SPEC.read_text())
    recode = ({"method": "recode", "variable": "water", "groups": [[5, 6, 7, 9]]}, {"method": "local_suppression", "k": 3})
    block = yaml.safe_load(front_as_yaml([candidate("suppress_k3", 0.002, 0.01), candidate("searched", 0.001, 0.02, recode)],
                                         taken=raw["plans"]))["plans"]
    assert list(block) == ["search_1", "search_2"]
    assert "global risk 0.002, loss 0.01" in block["search_1"]["description"]
    assert list(front_as_yaml_names(["search_1", "p"])) == ["search_2", "search_3"]  # taken names skipped
    raw["plans"].update(block)
    spec = parse_spec(raw)
    testdata = pd.read_csv(DATA)
    plan = spec.plan("search_2")
    assert list(plan.steps) == list(recode) and plan.k == 3
    protected = apply_plan(testdata, plan.steps, keys=spec.categorical_keys, random_state=plan.random_state).data
    assert set(protected["water"].dropna()) <= {1, 2, 3, 4, 5, 8}


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
