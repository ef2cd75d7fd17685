"""Issue 37: the model-based risks (sdcMicro modRisk) and ARX's population-uniqueness estimates as the
spec's risk measures (``risk.model_risk``, ``risk.population_size``, ``risk.population_uniqueness``):
validated with the key named, computed by the residual risk of every variant, described in the report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.pipeline.evaluation import residual_risk
from sdc_dagster.report.measures import measure_info
from sdc_dagster.report.references import citation_text
from sdc_dagster.risk import formula_on_keys, model_risk
from sdc_dagster.spec import ModelRiskOptions, SpecError, parse_spec


def spec_with(risk: dict, **variables):
    return parse_spec({"survey": "t", "risk": risk,
                       "variables": variables or {"a": {"role": "categorical_key"}}})


@pytest.mark.parametrize(("risk", "message"), [
    ({"model_risk": {"method": "loglinear"}},
     "risk.model_risk.method: must be one of 'default', 'CE', 'PML', 'weightedLLM', 'IPF', got 'loglinear'"),
    ({"model_risk": {"bound": 0}}, "risk.model_risk.bound: must be a number > 0, got 0"),
    ({"model_risk": {"formula": "~ a"}}, "risk.model_risk.formula: formula '~ a': key variable 'b' is not in the model"),
    ({"model_risk": {"formula": "~ a + b + c"}}, "risk.model_risk.formula: formula '~ a + b + c': 'c' is not one of the key"),
    ({"model_risk": {"formula": "~ a*b", "method": "IPF"}}, "risk.model_risk.formula: method 'IPF' fits main effects only"),
    ({"model_risk": {"formula": ""}}, "risk.model_risk.formula: expected an R model formula"),
    ({"model_risk": {"colour": 1}}, "risk.model_risk.colour: unknown key"),
    ({"model_risk": "CE"}, "risk.model_risk: expected a mapping"),
    ({"population_size": 0}, "risk.population_size: must be an integer >= 1, got 0"),
    ({"population_size": 10.5}, "risk.population_size: must be an integer >= 1, got 10.5"),
    ({"population_uniqueness": ["arx"]}, "risk.population_uniqueness: expected a list of distinct estimates"),
    ({"population_uniqueness": ["snb", "snb"]}, "risk.population_uniqueness: expected a list of distinct estimates"),
])
def test_spec_names_the_key_of_a_bad_risk_measure_option(risk, message):
    with pytest.raises(SpecError) as error:
        spec_with(risk, a={"role": "categorical_key"}, b={"role": "categorical_key"})
    assert message in str(error.value)


def test_spec_reads_the_risk_measure_options():
    spec = spec_with({"model_risk": {"method": "CE", "formula": "~ a*b", "bound": 5}, "population_size": 1000,
                      "population_uniqueness": ["snb", "pitman"]},
                     a={"role": "categorical_key"}, b={"role": "categorical_key"})
    assert spec.risk.model_risk == ModelRiskOptions(method="CE", formula="~ a*b", bound=5)
    assert (spec.risk.population_size, spec.risk.population_uniqueness) == (1000, ("snb", "pitman"))
    default = spec_with({})
    assert default.risk.model_risk == ModelRiskOptions("default", None, math.inf)
    assert (default.risk.population_size, default.risk.population_uniqueness) == (None, ("dankar",))


def test_formula_on_the_released_keys_by_hand():
    assert formula_on_keys("~ a*b + c", ["a", "b", "c"], ["a", "c"]) == "~a + c"
    assert formula_on_keys("~ a + b + c + b:c", ["a", "b", "c"], ["b", "c"]) == "~b + c + b:c"
    assert formula_on_keys(None, ["a", "b"], ["a"]) is None


# --- the residual risk computes them as the spec asks -------------------------------------------

def test_population_uniques_of_the_spec_by_hand():
    """Classes of sizes 1, 1, 2 (n = 4) in N = 8: Zayatz's estimate 28/11 (worked out in
    tests/risk/test_population_uniqueness.py::test_zayatz_by_hand). N from risk.population_size, or
    from the weights (2 each: N = 8); no N, no column; N below the records, blank."""
    data = pd.DataFrame({"a": ["x", "y", "z", "z"], "w": [2.0] * 4})
    sized = spec_with({"population_size": 8, "population_uniqueness": ["zayatz", "dankar"]},
                      a={"role": "categorical_key"})
    table = residual_risk(data.drop(columns="w"), {}, sized)
    assert table.loc["original", "population_uniques_zayatz"] == pytest.approx(28 / 11, rel=1e-12)
    assert "population_uniques_dankar" in table.columns
    weighted = spec_with({"population_uniqueness": ["zayatz"]}, a={"role": "categorical_key"}, w={"role": "weight"})
    assert residual_risk(data, {}, weighted).loc["original", "population_uniques_zayatz"] == pytest.approx(28 / 11)
    assert not any(c.startswith("population_uniques") for c in residual_risk(data[["a"]], {}, spec_with({})).columns)
    small = spec_with({"population_size": 3, "population_uniqueness": ["zayatz"]}, a={"role": "categorical_key"})
    assert np.isnan(residual_risk(data[["a"]], {}, small).loc["original", "population_uniques_zayatz"])
    off = spec_with({"population_size": 8, "population_uniqueness": []}, a={"role": "categorical_key"})
    assert not any(c.startswith("population_uniques") for c in residual_risk(data[["a"]], {}, off).columns)


def test_population_uniques_default_to_dankar_from_the_weights():
    rng = np.random.default_rng(5)
    data = pd.DataFrame({"a": rng.integers(0, 6, 300), "b": rng.integers(0, 5, 300), "w": np.full(300, 40.0)})
    spec = spec_with({}, a={"role": "categorical_key"}, b={"role": "categorical_key"}, w={"role": "weight"})
    table = residual_risk(data, {}, spec)
    # f = 300 / 12,000 = 2.5 % <= 10 %: Dankar's rule takes Pitman's estimate where it has one, else Zayatz's
    value = table.loc["original", "population_uniques_dankar"]
    assert np.isfinite(value) and 0 <= value <= 12_000


def test_model_risk_follows_the_spec_and_the_released_keys():
    """The residual risk fits the spec's method, formula and bound (the engine's modRisk is tested by
    hand and against sdcMicro in tests/risk/test_model_risk.py; here: that the spec reaches it). A
    variant without key b is fitted with the formula's terms of a alone."""
    rng = np.random.default_rng(11)
    data = pd.DataFrame({"a": rng.integers(0, 25, 300), "b": rng.integers(0, 8, 300), "w": rng.uniform(5, 50, 300)})
    spec = spec_with({"model_risk": {"method": "CE", "formula": "~ a*b", "bound": 3}},
                     a={"role": "categorical_key"}, b={"role": "categorical_key"}, w={"role": "weight"})
    table = residual_risk(data, {"without_b": data.drop(columns="b")}, spec)
    full = model_risk(data, ["a", "b"], weight="w", method="CE", formula="~ a*b", bound=3)
    assert table.loc["original", "model_risk_gr1"] == pytest.approx(full["gr1"], rel=1e-12)
    assert table.loc["original", "model_risk_gr2"] == pytest.approx(full["gr2"], rel=1e-12)
    main = model_risk(data, ["a", "b"], weight="w")
    assert full["gr1"] > 0 and main["gr1"] > 0
    assert table.loc["original", "model_risk_gr1"] != pytest.approx(main["gr1"])  # not the default fit
    alone = model_risk(data, ["a"], weight="w", method="CE", formula="~a", bound=3)
    assert table.loc["without_b", "model_risk_gr1"] == pytest.approx(alone["gr1"], rel=1e-12)


# --- the report describes them and cites their sources ------------------------------------------

@pytest.mark.parametrize("model", ["dankar", "pitman", "zayatz", "snb"])
def test_report_describes_each_population_uniqueness_measure(model):
    info = measure_info(f"population_uniques_{model}")
    assert info.group == "Disclosure risk" and info.kind == "expected" and "(ARX)" in info.label
    cited = citation_text(info.spec)
    assert cited.startswith("Dankar et al. 2012; Hoshino 2001; Zayatz 1991; Chen & Keller-McNulty 1998; "
                            "Haas & Stokes 1998; Skinner & Shlomo 2008")


def test_a_spec_file_names_the_line_of_a_bad_risk_measure_and_a_bad_step_option(tmp_path):
    from sdc_dagster.spec import load_spec

    path = tmp_path / "bad.yaml"
    path.write_text("survey: t\nvariables:\n  a: {role: categorical_key}\n  b: {role: categorical_key}\n"
                    "  x: {role: continuous_key, precision: 0.1}\nrisk:\n  model_risk:\n    method: IPF\n"
                    "    formula: \"~ a*b\"\nplans:\n  p:\n    - {method: mv_top_coding, columns: [x], alpha: 2}\n")
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(error.value).splitlines() == [
        "bad.yaml:9: risk.model_risk.formula: method 'IPF' fits main effects only (as sdcMicro's modRisk); use "
        "method 'default' for a model with interactions",
        "bad.yaml:12: plans.p.steps: step 0 (mv_top_coding): alpha: must be a number in (0, 1), got 2",
    ]
