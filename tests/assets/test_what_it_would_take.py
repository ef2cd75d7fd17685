"""The release stage says what it would take when the wave releases nothing (issues 35, 38): its
metadata carries the record and the text of sdc_dagster.pipeline.relaxations, its Dagster log the
relaxed searches, and its value (WaveRelease.advice) the record the report renders. When a plan of
the spec is released, the relaxed searches are not run at all."""

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.search.wave import PROGRESS_PREFIX
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import load_spec

WAVE = "2024"

# 23 records in seven combinations of 3 or 4 (tests/test_relaxations.py works the figures out by
# hand): 5-anonymity needs a suppressed value, 1 of 23 is above the 4 % limit; 3-anonymity needs none
ROWS = [(sex, region) for sex in ("m", "f") for region, n in (("r1", 3), ("r2", 3), ("r3", 4)) for _ in range(n)]
DATA = pd.DataFrame(ROWS + [("m", "r4")] * 3, columns=["sex", "region"])
SPEC = {"survey": "two_keys", "variables": {"sex": {"role": "categorical_key", "scale": "nominal"},
                                            "region": {"role": "categorical_key", "scale": "nominal"}},
        "risk": {"k": 5, "max_global_risk": 0.5},
        "limits": {"max_suppressed_share": 0.04, "max_records_changed": 0.9},
        "search": {"enabled": True, "budget_seconds": 60, "methods": ["local_suppression"]}}


def run_chain(spec: dict, home, instance):
    """The whole chain of ``spec`` (written as a spec file: a release copies it) on :data:`DATA`."""
    (home / "specs").mkdir(parents=True)
    (home / "specs" / "two_keys.yaml").write_text(yaml.safe_dump(spec))
    spec = load_spec(home / "specs" / "two_keys.yaml")
    landing = home / "landing" / "two_keys"
    landing.mkdir(parents=True)
    DATA.to_csv(landing / f"{WAVE}.csv", index=False)
    instance.add_dynamic_partitions("two_keys_waves", [WAVE])
    result = materialize(build_survey_assets(spec).assets, partition_key=WAVE, instance=instance,
                         resources=configured_resources(), raise_on_error=False)
    relaxed = [entry.user_message for entry in instance.all_logs(result.run_id)
               if entry.dagster_event is None and entry.user_message.startswith(PROGRESS_PREFIX + "what it would take")]
    metadata = instance.get_latest_materialization_event(AssetKey(["two_keys", "release"])).asset_materialization.metadata
    return result, metadata, relaxed


@pytest.mark.slow
def test_release_metadata_says_what_it_would_take(sdc_home, instance):
    result, metadata, relaxed = run_chain(SPEC, sdc_home, instance)
    record = metadata["what_it_would_take"].value
    assert metadata["released_plan"].value == "none"
    assert [r["change"] for r in record["relaxations"]][:2] == ["k = 3 instead of 5", "region not a key"]
    assert record["closest"][0]["gaps"][0]["text"] == "region: 26.1 % suppressed against the 4 % limit"
    assert "    k = 3 instead of 5: releases the keys as they are, with a loss of 0" in \
        metadata["what_it_would_take_text"].value.splitlines()
    assert result.output_for_node("two_keys__release", "result").advice == record
    assert result.output_for_node("two_keys__plan_search", "result").advice is None  # the search only searched
    assert relaxed[-1].endswith("suppression limit 26.1 % instead of 4 %: releases local suppression to 5-anonymity, "
                                "with a loss of 0.1304")
    # the report renders the record: its section names the cheapest change
    report = (sdc_home / "reports" / "two_keys" / f"{WAVE}.html").read_text()
    assert "k = 3 instead of 5" in report


@pytest.mark.slow
def test_no_relaxed_search_when_a_spec_plan_is_released(sdc_home, instance):
    # region merged into one category: sex alone keys the records, 13 m and 10 f, 5-anonymous
    # without a suppression, global risk (1/13 * 13 + 1/10 * 10) / 23 = 2/23 < 0.5: eligible,
    # while the search (local suppression only) still recommends no plan
    one_region = {"r1": "r1", "r2": "r1", "r3": "r1", "r4": "r1"}
    spec = {**SPEC, "plans": {"one_region": {"steps": [{"method": "recode", "variable": "region", "mapping": one_region}]}}}
    result, metadata, relaxed = run_chain(spec, sdc_home, instance)
    assert result.success
    assert metadata["released_plan"].value == "one_region"
    assert "what_it_would_take" not in metadata and relaxed == []
    assert result.output_for_node("two_keys__release", "result").advice is None
    assert result.output_for_node("two_keys__protected_searched", "result").withheld_because  # recommends none
