"""Survey spec parsing: the examples load, and every wrong spec names its key and what was expected."""

from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.noise import NOISE_METHODS
from sdc_dagster.protect.plan import PLAN_METHODS, plan_problems, validate_plan
from sdc_dagster.spec.schemas import SchemaViolation, microdata_schema, validate
from sdc_dagster.spec import SpecError, load_spec, load_specs, parse_spec
from sdc_dagster.spec.survey import ROLES

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
        # continuous keys only: valid, but local suppression has no categorical key to suppress
        ({"variables": {"a": {"role": "other"}}}, "plans.p.steps[0]: local_suppression suppresses categorical key"),
        ({"variables": {"a": {"role": "other"}, "x": {"role": "other"}}},
         "at least one categorical_key or continuous_key variable"),
        ({"risk": {"max_linkage_risk": 1.5}}, "risk.max_linkage_risk: must be a number in [0, 1], got 1.5"),
        ({"variables": {"a": {"role": "categorical_key", "colour": 1}}}, "variables.a.colour: unknown key"),
        ({"risk": {"k": 0}}, "risk.k: must be an integer >= 1, got 0"),
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
        # a name that is no variable of the spec is reported at the parameter naming it (issue 34)
        ([{"method": "recode", "variable": "nope", "mapping": {1: 2}}],
         r"plans.p.steps\[0\].variable names 'nope', which is not a variable of the spec \(the variables: a, x, w\)"),
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
    # The unknown name is reported on the line naming it, 13 (in a plan given as a bare list of steps).
    assert str(err.value).startswith("s.yaml:13: plans.listed.steps[1].variable names 'nope', which is not a "
                                     "variable of the spec (the variables: a, b, x)\n")
    mapped_only = SPEC_WITH_PLANS.replace("      variable: nope", "      variable: b")
    mapped_only = mapped_only.replace("- {method: recode, variable: a,", "- {method: recode, variable: absent,")
    with pytest.raises(SpecError, match=r"^s.yaml:18: plans.mapped.steps\[0\].variable names 'absent'"):
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


# --- Every independent error in one pass ----------------------------------------------------------

THREE_ERRORS = """\
plans:
  p:
    - {method: local_suppression, k: 3}
    - {method: shred}
survey: s
variables:
  a: {role: categorical_key}
  x:
    role: continuous_key
    precision: 7
risk: {k: 3, kk: 1}
"""


def located(error: SpecError) -> list[tuple[int, str]]:
    """(line, rest of the message) of each error of a load_spec SpecError ``s.yaml:<line>: ...``."""
    out = []
    for message in (str(e) for e in error.errors):
        name, line, rest = message.split(":", 2)
        assert name == "s.yaml"
        out.append((int(line), rest.strip()))
    return out


def test_three_independent_errors_are_reported_at_once_in_line_order(tmp_path):
    # Found in the order variables (line 10), risk (11), plans (4); reported by line.
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, THREE_ERRORS))
    assert located(err.value) == [
        (4, "plans.p.steps: step 1: unknown method 'shred' (expected one of " + ", ".join(sorted(PLAN_METHODS)) + ")"),
        (10, "variables.x.precision: expected a number in (0, 1)"),
        (11, "risk.kk: unknown key; expected one of "
             "['individual_risk_threshold', 'k', 'l', 'l_diversity', 'max_global_risk', 'max_linkage_risk', "
             "'model_risk', 'population_size', 'population_uniqueness', 'recursive_c']; did you mean 'k'?"),
    ]
    # The library's message lists them all, one per line; its key is the first one's.
    assert str(err.value).splitlines() == [str(e) for e in err.value.errors]
    assert err.value.key == "plans.p.steps[1]"


def test_parse_spec_raises_one_error_listing_every_problem():
    raw = minimal(risk={"l": 0}, plans={"p": [{"method": "shred"}], "q": {"steps": [{"k": 3}], "k": 0}})
    raw["variables"]["x"] = {"role": "continuous_key", "precision": 2}
    with pytest.raises(SpecError) as err:
        parse_spec(raw)
    assert [e.key for e in err.value.errors] == [
        "variables.x.precision", "risk.l", "plans.p.steps[0]", "plans.q.k", "plans.q.steps[0].method",
    ]


def test_a_yaml_syntax_error_is_one_error(tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, THREE_ERRORS + "  broken: [unclosed\n"))
    assert len(err.value.errors) == 1 and "not valid YAML" in str(err.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        # Not a mapping: nothing else can be checked.
        ("- survey: s\n", ["s.yaml: spec: expected a mapping, got list"]),
        # A missing section stops the pass; what was found before it (line 3) is kept, the plans are
        # not checked (their step 0 names no known column only because no variable is known).
        ("survey: s\nsource:\n  colour: 1\nplans:\n  p: [{method: pram, variable: a, retention: 0.8}]\n",
         ["s.yaml:3: source.colour: unknown key; expected one of ['format', 'metadata', 'options', 'path']",
          "s.yaml: variables: expected a mapping of column name to role"]),
    ],
)
def test_errors_that_make_later_checks_meaningless_stop_the_pass(tmp_path, text, expected):
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert [str(e) for e in err.value.errors] == expected


def test_an_error_does_not_cascade_into_errors_of_what_depends_on_it(tmp_path):
    # The only categorical key has a wrong role: no "at least one categorical_key", and the steps
    # naming it still find the column. The failing recode (unknown parameter) ends the category
    # check of 'b', so step 2's codes (which that recode might have produced) are not blamed.
    text = """\
survey: s
variables:
  a: {role: categorical_kye}
  b: {role: sensitive, categories: [1, 2]}
risk: {k: 0}
plans:
  p:
    - {method: pram, variable: a, retention: 0.8}
    - {method: recode, variable: b, mapping: {1: 9}, colour: 1}
    - {method: recode, variable: b, mapping: {9: 1}}
"""
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert [line for line, _ in located(err.value)] == [3, 5, 9]
    assert "variables.a.role: expected one of" in str(err.value.errors[0])
    assert "risk.k: must be an integer >= 1" in str(err.value.errors[1])  # p has no k of its own: not blamed
    assert "step 1 (recode): unknown parameter 'colour'" in str(err.value.errors[2])


def test_every_problem_of_a_step_and_of_a_plan_is_listed():
    steps = [
        {"method": "recode", "variabel": "a", "mapping": [1]},
        {"method": "local_suppression", "k": 3},
        {"method": "noise", "columns": ["gone"], "kind": "romm"},
    ]
    assert plan_problems(steps, columns=["a", "x"]) == [
        (0, "step 0 (recode): unknown parameter 'variabel' (expected some of variable, mapping, groups, names)"),
        (0, "step 0 (recode): missing parameter 'variable'"),
        (0, "step 0 (recode): parameter 'mapping' must be a mapping, got [1]"),
        (2, "step 2 (noise): parameter 'columns' names column 'gone', which is not in the data"),
        (2, "step 2 (noise): parameter 'kind' must be one of " + ", ".join(repr(m) for m in NOISE_METHODS)
            + ", got 'romm'"),
    ]
    with pytest.raises(SDCInputError) as err:
        validate_plan(steps, columns=["a", "x"])
    assert str(err.value) == "; ".join(message for _, message in plan_problems(steps, columns=["a", "x"]))


# Independent errors, each on a line of its own: (YAML line, the key path its message starts with).
VARIABLE_ERRORS = [
    ("  e{i}: {{role: categorical_key, colour: 1}}", "variables.e{i}.colour: unknown key"),
    ("  e{i}: {{role: continuous_key, precision: 7}}", "variables.e{i}.precision: expected a number in (0, 1)"),
    ("  e{i}: {{role: quasi}}", "variables.e{i}.role: expected one of"),
    ("  e{i}: {{role: sensitive, categories: [1, 1]}}", "variables.e{i}.categories: expected distinct values"),
]
STEP_ERRORS = [
    ("    - {{method: shred}}", "plans.p.steps: step {i}: unknown method 'shred'"),
    ("    - {{method: pram, variable: nope, retention: 0.8}}", "plans.p.steps[{i}].variable names 'nope'"),
    ("    - {{method: local_suppression, k: three}}", "plans.p.steps: step {i} (local_suppression): parameter 'k'"),
]


@given(
    variables=st.lists(st.sampled_from([None, *VARIABLE_ERRORS]), max_size=6),
    steps=st.lists(st.sampled_from([None, *STEP_ERRORS]), min_size=1, max_size=6),
    plans_first=st.booleans(),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_independent_error_is_reported_with_its_line(tmp_path, variables, steps, plans_first):
    """Property: a spec with any set of independent errors gets exactly those, each with the line it
    is on (counted here from the text written), in line order."""
    variable_lines = [("  k: {role: categorical_key}", None)] + [
        ("  e{i}: {{role: sensitive}}".format(i=i), None) if error is None
        else (error[0].format(i=i), error[1].format(i=i))
        for i, error in enumerate(variables)
    ]
    step_lines = [
        ("    - {method: local_suppression, k: 3}", None) if error is None
        else (error[0].format(i=i), error[1].format(i=i))
        for i, error in enumerate(steps)
    ]
    variable_block = [("variables:", None), *variable_lines]
    plan_block = [("plans:", None), ("  p:", None), *step_lines]
    document = [("survey: s", None), *(plan_block + variable_block if plans_first else variable_block + plan_block)]
    text = "".join(line + "\n" for line, _ in document)
    expected = [(number, message) for number, (_, message) in enumerate(document, start=1) if message]
    if not expected:
        assert load_spec(write(tmp_path, text)).plan("p").steps
        return
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    found = located(err.value)
    assert [line for line, _ in found] == [line for line, _ in expected]
    assert all(message.startswith(start) for (_, message), (_, start) in zip(found, expected))


def test_report_section_names_who_signs_the_report(tmp_path):
    """``report:`` (optional) pre-fills the sign-off block of the report; each name is text, an
    unknown key or a name that is not text is an error at its line."""
    assert parse_spec(minimal()).report.prepared_by == "" and parse_spec(minimal()).report.reviewed_by == ""
    named = parse_spec(minimal(report={"prepared_by": " A. Nowak ", "reviewed_by": "B. Kowal"})).report
    assert (named.prepared_by, named.reviewed_by) == ("A. Nowak", "B. Kowal")
    assert parse_spec(minimal(report={"reviewed_by": "B. Kowal"})).report.prepared_by == ""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(minimal(report={"prepared_by": 7, "signed_by": "C"}), sort_keys=False))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    lines = {line.split(": ", 1)[1].split(":")[0]: line.split(":")[1] for line in str(err.value).splitlines()}
    written = path.read_text().splitlines()
    assert set(lines) == {"report.prepared_by", "report.signed_by"}
    assert "prepared_by: 7" in written[int(lines["report.prepared_by"]) - 1]
    assert "signed_by: C" in written[int(lines["report.signed_by"]) - 1]
    assert "expected a name (non-empty text)" in str(err.value) and "unknown key" in str(err.value)


TYPOS = """\
survey: s
variables:
  age: {role: categorical_key}
  occupation: {role: categorical_kye}
  income: {role: continuous_key, precision: 0.01}
serach: {enabled: true}
search:
  keep: [age, ocupation]
plans:
  p:
    steps:
      - {method: local_suppression, k: 3}
      - method: microaggregation
        columns: [income]
        k: 5
        strata:
          - age
          - occupaton
"""


def test_an_unknown_name_is_reported_at_its_line_with_the_closest_known_name(tmp_path):
    # issue 34: a misspelt variable in a step's strata was reported as "parameter 'strata' names
    # column 'occupation', which is not in the data" at the step, with no suggestion
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, TYPOS))
    assert [str(e) for e in err.value.errors] == [
        "s.yaml:4: variables.occupation.role: expected one of " + str(list(ROLES))
        + ", got 'categorical_kye'; did you mean 'categorical_key'?",
        "s.yaml:6: spec.serach: unknown key; expected one of ['limits', 'missing', 'plans', 'release', 'report', "
        "'risk', 'search', 'source', 'survey', 'title', 'variables']; did you mean 'search'?",
        "s.yaml:8: search.keep names 'ocupation', which is not a variable of the spec; did you mean 'occupation'? "
        "(or, if 'ocupation' is the data's column, the misspelt name is variables.occupation)",
        "s.yaml:18: plans.p.steps[1].strata names 'occupaton', which is not a variable of the spec; "
        "did you mean 'occupation'? (or, if 'occupaton' is the data's column, the misspelt name is "
        "variables.occupation)",
    ]


def test_a_spec_variable_missing_from_the_data_names_the_closest_column(tmp_path):
    spec = parse_spec(minimal())
    frame = pd.DataFrame({"A": [1, 2], "x": [1.0, 2.0], "w": [1.0, 1.0]})
    with pytest.raises(SchemaViolation) as err:
        validate(frame, microdata_schema(spec), source="d.csv")
    assert "column 'a' named in the spec is missing from the data; did you mean 'A'?" in err.value.problems


def test_a_step_naming_an_unknown_variable_still_reports_its_other_problems():
    with pytest.raises(SpecError) as err:
        parse_spec(minimal(plans={"p": [{"method": "microaggregation", "columns": ["xx"], "k": 5, "colour": 1}]}))
    first, second = [str(e) for e in err.value.errors]
    assert first == ("plans.p.steps[0].columns names 'xx', which is not a variable of the spec; did you mean 'x'? "
                     "(or, if 'xx' is the data's column, the misspelt name is variables.x)")
    assert second.startswith("plans.p.steps: step 0 (microaggregation): unknown parameter 'colour'")
    assert [e.key for e in err.value.errors] == ["plans.p.steps[0].columns[0]", "plans.p.steps[0]"]
