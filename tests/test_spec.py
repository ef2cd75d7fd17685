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


SPEC_WITH_PLANS = """\
survey: s
variables:
  a: {role: categorical_key, categories: [1, 2, 5, 6, 7, 9]}
  b: {role: categorical_key}
  x:
    role: continuous_key
    precision: 0.05
plans:
  listed:
    - method: local_suppression
      k: 3
    - method: recode
      variable: nope
      mapping: {1: 2}
  mapped:
    k: 2
    steps:
      - {method: recode, variable: a, mapping: {5: 1, 6: 1, 9: 1}}
      - method: recode
        variable: a
        mapping: {1: 2, "7": 2}
"""


def write(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_step_naming_an_unknown_column_is_a_spec_error_with_its_line(tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, SPEC_WITH_PLANS))
    # The failing step starts on line 12 (a plan given as a bare list of steps).
    assert str(err.value).startswith("s.yaml:12: plans.listed.steps: step 1 (recode)")
    assert "'nope'" in str(err.value)
    mapped_only = SPEC_WITH_PLANS.replace("      variable: nope", "      variable: b")
    mapped_only = mapped_only.replace("- {method: recode, variable: a,", "- {method: recode, variable: absent,")
    with pytest.raises(SpecError, match=r"^s.yaml:18: plans.mapped.steps: step 0 \(recode\).*'absent'"):
        load_spec(write(tmp_path, mapped_only))


def test_recode_of_an_unlisted_category_is_a_spec_error_with_its_line(tmp_path):
    # "7" (text) is not the listed category 7; 1 is listed, and 5, 6, 9 need not occur in a wave.
    text = SPEC_WITH_PLANS.replace("      variable: nope", "      variable: b")
    with pytest.raises(SpecError, match=r"^s.yaml:21: plans.mapped.steps\[1\].mapping: expected categories of 'a'.*got '7'"):
        load_spec(write(tmp_path, text))
    spec = load_spec(write(tmp_path, text.replace('"7": 2', "7: 2")))
    assert spec.plan("mapped").steps[1]["mapping"] == {1: 2, 7: 2}


def test_variable_errors_carry_their_line(tmp_path):
    text = "survey: s\nvariables:\n  a: {role: categorical_key}\n  x:\n    role: continuous_key\n    precision: 7\n"
    with pytest.raises(SpecError, match=r"^s.yaml:6: variables.x.precision: expected a number in \(0, 1\)"):
        load_spec(write(tmp_path, text))
    with pytest.raises(SpecError, match=r"^s.yaml:3: variables.a.colour: unknown key"):
        load_spec(write(tmp_path, text.replace("{role: categorical_key}", "{role: categorical_key, colour: 1}")))


def test_ordinal_order_is_the_variables_categories_by_name():
    spec = parse_spec(
        minimal(variables={
            "edu": {"role": "categorical_key", "scale": "ordinal", "order": ["none", "primary", "secondary", "tertiary"]},
            "a": {"role": "categorical_key", "categories": [2, 1]},
        })
    )
    assert spec.variables["edu"].categories == ("none", "primary", "secondary", "tertiary")
    assert spec.variables["edu"] is spec.variable("edu") is spec.variables[0]
    assert spec.variables["a"].categories == (2, 1) and spec.scales["edu"] == "ordinal"
    assert [v.name for v in spec.variables] == ["edu", "a"]
    with pytest.raises(KeyError):
        spec.variables["absent"]
    both = {"role": "categorical_key", "scale": "ordinal", "order": [3, 1, 2], "categories": [1, 2, 3]}
    assert parse_spec(minimal(variables={"edu": both})).variables["edu"].categories == (3, 1, 2)
    with pytest.raises(SpecError, match="variables.edu.order: expected the same categories"):
        parse_spec(minimal(variables={"edu": {**both, "categories": [1, 2, 4]}}))
