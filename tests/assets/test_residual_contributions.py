"""residual_contributions on a wave with missing key values (SPEC §5.8), against the independent
brute-force golden file of the contribution games (tests/data/missing/combined_risk_na.json)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import load_spec

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "missing" / "combined_risk_na.json"
WAVE = "na"


@pytest.mark.parametrize("case_number", [0, 2])
def test_contributions_after_a_plan_that_keeps_the_keys_match_the_golden_games(
    sdc_home, tmp_path, instance, case_number
):
    case = json.loads(GOLDEN.read_text())["cases"][case_number]
    keys, continuous = case["categorical"], case["continuous"]
    data = pd.DataFrame(case["data"])
    data["note"] = range(len(data))  # a non-key column the plan removes
    variables = {c: {"role": "categorical_key", "scale": "nominal"} for c in keys}
    variables.update({c: {"role": "continuous_key", "precision": case["precision"][c]} for c in continuous})
    variables["note"] = {"role": "other", "scale": "continuous"}
    spec_path = tmp_path / "na.yaml"
    spec_path.write_text(yaml.safe_dump({
        "survey": "na",
        "title": "golden games with missing values",
        "source": {"format": "csv"},
        "variables": variables,
        "risk": {"k": case["k"], "max_global_risk": 1.0, "individual_risk_threshold": 1.0},
        "plans": {
            # The keys are released as they are, so the games after the plan are the golden ones.
            "drop_note": {"description": "remove a non-key column", "k": 1,
                          "steps": [{"method": "remove_variables", "variables": ["note"]}]},
        },
    }, sort_keys=False))
    spec = load_spec(spec_path)
    landing = sdc_home / "landing" / "na"
    landing.mkdir(parents=True)
    data.to_csv(landing / f"{WAVE}.csv", index=False)
    instance.add_dynamic_partitions("na_waves", [WAVE])

    result = materialize(
        build_survey_assets(spec).assets,
        partition_key=WAVE,
        instance=instance,
        resources=configured_resources(),
        raise_on_error=False,
    )
    # where the case has continuous keys the plan releases them unchanged (linkage risk 1): it is
    # withheld and the run fails on the report's blocking wave_released check only, after every
    # asset materialised
    materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert {"residual_contributions", "sdc_report"} <= materialized
    (check,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "wave_released"]
    assert check.passed == bool(result.success) == (not continuous)
    table = result.asset_value(AssetKey(["na", "residual_contributions"])).xs("drop_note", level="variant")
    assert data[keys].isna().any().any()  # the wave carries NA in its keys
    for value in ("shapley", "solidarity"):
        golden = pd.Series(case["expected"][value]["global"], index=[*keys, *continuous])
        assert table[f"{value}_after"].to_numpy() == pytest.approx(golden[table.index].to_numpy(), abs=1e-9)
        assert table[f"{value}_before"].to_numpy() == pytest.approx(golden[table.index].to_numpy(), abs=1e-9)
    report = (sdc_home / "reports" / "na" / f"{WAVE}.html").read_text()
    assert "Contributions to the residual risk after each plan" in report
    assert "shapley_after" in report
