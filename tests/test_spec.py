"""Survey spec parsing: the examples load, and every wrong spec names its key and what was expected."""

from pathlib import Path

import pytest
import yaml

from sdc_dagster.spec import SpecError, load_spec, load_specs, parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def minimal(**overrides):
    raw = {
        "survey": "s",
        "variables": {
            "a": {"role": "categorical_key"},
            "x": {"role": "continuous_key", "precision": 0.05},
            "w": {"role": "weight"},
        },
        "plans": {"p": [{"method": "local_suppression", "k": 3}]},
    }
    raw.update(overrides)
    return raw


def test_examples_load():
    specs = {s.survey: s for s in load_specs(EXAMPLES)}
    assert set(specs) == {"testdata", "simulation"}
    t = specs["testdata"]
    assert t.categorical_keys == ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    assert t.continuous_keys == ["expend", "income", "savings"]
    assert t.weight == "sampling_weight" and t.household_id == "ori_hid"
    assert [p.name for p in t.plans] == ["suppress_k3", "recode_suppress", "perturb"]
    assert t.spec_hash and len(t.spec_hash) == 64


def test_defaults_and_plan_forms():
    spec = parse_spec(minimal())
    assert spec.variable("a").scale == "nominal"
    assert spec.precision == {"x": 0.05}
    assert spec.plan("p").k == spec.risk.k == 3
    assert spec.plan("p").steps[0]["method"] == "local_suppression"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"variables": {"a": {"role": "quasi"}}}, "variables.a.role: expected one of"),
        ({"variables": {"a": {"scale": "nominal"}}}, "variables.a.role: expected one of"),
        ({"variables": {"a": {"role": "categorical_key", "scale": "ratio"}}}, "variables.a.scale"),
        ({"variables": {"a": {"role": "categorical_key", "scale": "ordinal"}}}, "variables.a.order"),
        ({"variables": {"x": {"role": "continuous_key"}}}, "variables.x.precision"),
        ({"variables": {"x": {"role": "continuous_key", "precision": 2}}}, "variables.x.precision: expected a number in (0, 1)"),
        ({"variables": {"a": {"role": "other"}}}, "at least one categorical_key"),
        ({"variables": {"a": {"role": "categorical_key", "colour": 1}}}, "variables.a.colour: unknown key"),
        ({"risk": {"k": 0}}, "risk.k: expected a positive integer"),
        ({"risk": {"max_global_risk": 3}}, "risk.max_global_risk"),
        ({"risk": {"kk": 3}}, "risk.kk: unknown key"),
        ({"plans": {"p": []}}, "plans.p.steps: expected a non-empty list"),
        ({"plans": {"p": [{"k": 3}]}}, "plans.p.steps[0].method"),
        ({"plans": {"bad name": [{"method": "x"}]}}, "plans.bad name"),
        ({"survey": "has space"}, "survey: expected a name"),
        ({"source": {"format": "xlsx"}}, "source.format"),
        ({"extra": 1}, "spec.extra: unknown key"),
    ],
)
def test_wrong_spec_names_key(change, message):
    raw = minimal()
    for key, value in change.items():
        if key == "variables" and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    with pytest.raises(SpecError) as err:
        parse_spec(raw)
    assert message in str(err.value)


def test_two_weights_rejected():
    raw = minimal()
    raw["variables"]["w2"] = {"role": "weight"}
    with pytest.raises(SpecError, match=r"variables \(weight\): expected at most one weight"):
        parse_spec(raw)


def test_load_spec_file_errors(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("survey: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump(minimal(variables={"a": {"role": "nonsense"}})))
    # safe_dump sorts the keys: plans (lines 1-4), survey (5), variables (6), a (7), role (8).
    with pytest.raises(SpecError, match=r"wrong.yaml:8: variables.a.role"):
        load_spec(wrong)


def test_duplicate_survey_names(tmp_path):
    for name in ("one.yaml", "two.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(minimal()))
    with pytest.raises(SpecError, match="named by two specs"):
        load_specs(tmp_path)


@pytest.mark.parametrize(
    "steps, message",
    [
        ([{"method": "shred"}], r"plans.p.steps: step 0: unknown method 'shred'"),
        ([{"method": "local_suppression", "kk": 3}], r"plans.p.steps: step 0 \(local_suppression\): unknown parameter 'kk'"),
        ([{"method": "recode", "variable": "nope", "mapping": {1: 2}}], r"plans.p.steps: step 0 \(recode\).*'nope'"),
    ],
)
def test_plan_steps_are_validated(steps, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(minimal(plans={"p": steps}))
