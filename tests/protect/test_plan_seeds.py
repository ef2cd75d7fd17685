"""Seeds of random steps (SPEC §8): a plan's output depends on its own seed and identity (survey,
wave, plan name, step), never on the order of the plans in the spec; the RMD interval risk is seeded
by default."""

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from sdc_dagster.pipeline import protection
from sdc_dagster.risk import interval_risk_rmd
from sdc_dagster.spec import parse_spec

DATA = Path(__file__).parents[1] / "data" / "sdcmicro"
VARIABLES = {
    "urbrur": {"role": "categorical_key", "scale": "nominal"},
    "sex": {"role": "categorical_key", "scale": "nominal"},
    "water": {"role": "categorical_key", "scale": "nominal"},
    "expend": {"role": "continuous_key", "precision": 0.01},
    "income": {"role": "continuous_key", "precision": 0.01},
    "ori_hid": {"role": "household_id"},
    "sampling_weight": {"role": "weight"},
}
PLANS = {
    "noisy": {"steps": [{"method": "noise", "columns": ["income"], "amount": 0.2}]},
    "pram_then_swap": {"steps": [{"method": "pram", "variable": "water", "retention": 0.8},
                                 {"method": "rank_swap", "columns": ["expend"], "p": 5}]},
    "sampled": {"steps": [{"method": "subsample", "fraction": 0.5}]},
}


def spec_with_plans(order):
    raw = {"survey": "testdata", "title": "t", "source": {"path": "x.csv"}, "variables": VARIABLES,
           "plans": {name: PLANS[name] for name in order}}
    return parse_spec(yaml.safe_load(yaml.safe_dump(raw)))


def test_reordering_plans_changes_no_output():
    data = pd.read_csv(DATA / "testdata.csv").head(600)
    first = spec_with_plans(["noisy", "pram_then_swap", "sampled"])
    second = spec_with_plans(["sampled", "noisy", "pram_then_swap"])
    for name in PLANS:
        a = protection.protect(data, first, first.plan(name), wave="2024")
        b = protection.protect(data, second, second.plan(name), wave="2024")
        pd.testing.assert_frame_equal(a.data, b.data)
        assert [s["random_state"] for s in a.steps] == [s["random_state"] for s in b.steps]
    # the wave is part of a step's identity: another wave draws other noise
    other = protection.protect(data, first, first.plan("noisy"), wave="2025")
    assert not other.data["income"].equals(protection.protect(data, first, first.plan("noisy"), wave="2024").data["income"])


def test_subsample_step_takes_household_and_weight_from_the_spec():
    data = pd.read_csv(DATA / "testdata.csv").head(600)
    spec = spec_with_plans(["sampled"])
    result = protection.protect(data, spec, spec.plan("sampled"), wave="2024")
    kept = result.data["ori_hid"].unique()
    households = data["ori_hid"].nunique()
    assert len(kept) == round(0.5 * households)
    assert len(result.data) == data["ori_hid"].isin(kept).sum()
    np.testing.assert_allclose(result.data["sampling_weight"],
                               data.loc[result.data.index, "sampling_weight"] * households / len(kept))
    assert result.steps[0]["parameters"]["household"] == "ori_hid"


def test_interval_risk_rmd_is_seeded_by_default():
    rng = np.random.default_rng(3)
    original = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    protected = original + rng.normal(scale=0.05, size=(200, 3))
    a = interval_risk_rmd(original, protected, list("abc"))
    b = interval_risk_rmd(original, protected, list("abc"))
    assert a.risk1 == b.risk1 and a.riskvec1.equals(b.riskvec1) and a.at_risk2.equals(b.at_risk2)
