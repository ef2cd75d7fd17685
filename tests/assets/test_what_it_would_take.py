"""The plan_search asset says what it would take when the search recommends no plan (issue 38): its
metadata carries the record and the text of sdc_dagster.pipeline.relaxations, its Dagster log the
relaxed searches, and its value (PlanSearch.advice) the record the report renders."""

import pandas as pd
import pytest
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.pipeline.search import PROGRESS_PREFIX
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import parse_spec

WAVE = "2024"


@pytest.mark.slow
def test_plan_search_metadata_says_what_it_would_take(sdc_home, instance):
    # 23 records in seven combinations of 3 or 4 (tests/test_relaxations.py works the figures out by
    # hand): 5-anonymity needs a suppressed value, 1 of 23 is above the 4 % limit; 3-anonymity needs none
    rows = [(sex, region) for sex in ("m", "f") for region, n in (("r1", 3), ("r2", 3), ("r3", 4)) for _ in range(n)]
    data = pd.DataFrame(rows + [("m", "r4")] * 3, columns=["sex", "region"])
    spec = parse_spec({"survey": "two_keys", "variables": {"sex": {"role": "categorical_key", "scale": "nominal"},
                                                           "region": {"role": "categorical_key", "scale": "nominal"}},
                       "risk": {"k": 5, "max_global_risk": 0.5},
                       "limits": {"max_suppressed_share": 0.04, "max_records_changed": 0.9},
                       "search": {"enabled": True, "budget_seconds": 60, "methods": ["local_suppression"]}})
    landing = sdc_home / "landing" / "two_keys"
    landing.mkdir(parents=True)
    data.to_csv(landing / f"{WAVE}.csv", index=False)
    instance.add_dynamic_partitions("two_keys_waves", [WAVE])
    result = materialize(build_survey_assets(spec).assets, partition_key=WAVE, instance=instance,
                         resources=configured_resources(),
                         selection=[AssetKey(["two_keys", "raw_microdata"]), AssetKey(["two_keys", "plan_search"])])
    assert result.success
    metadata = instance.get_latest_materialization_event(
        AssetKey(["two_keys", "plan_search"])).asset_materialization.metadata
    record = metadata["what_it_would_take"].value
    assert [r["change"] for r in record["relaxations"]][:2] == ["k = 3 instead of 5", "region not a key"]
    assert record["closest"][0]["gaps"][0]["text"] == "region: 26.1 % suppressed against the 4 % limit"
    assert "    k = 3 instead of 5: releases the keys as they are, with a loss of 0" in \
        metadata["what_it_would_take_text"].value.splitlines()
    assert result.output_for_node("two_keys__plan_search", "result").advice == record
    lines = [entry.user_message for entry in instance.all_logs(result.run_id)
             if entry.dagster_event is None and entry.user_message.startswith(PROGRESS_PREFIX + "what it would take")]
    assert lines[-1].endswith("suppression limit 26.1 % instead of 4 %: releases local suppression to 5-anonymity, "
                              "with a loss of 0.1304")
