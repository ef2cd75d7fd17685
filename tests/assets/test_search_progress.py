"""The plan search's progress in the Dagster log: the plan_search asset passes the engine a plain
callback that writes each report as a log line (nodes settled of the lattice, best so far)."""

import re
import shutil

import pytest
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.search.wave import PROGRESS_PREFIX
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import load_spec

WAVE = "2024"


@pytest.mark.slow
def test_plan_search_logs_its_progress(sdc_home, testdata_only_specs, instance):
    spec = load_spec(testdata_only_specs / "testdata.yaml")
    landing = sdc_home / "landing" / "testdata"
    landing.mkdir(parents=True)
    shutil.copy(testdata_only_specs / "data" / "testdata.csv", landing / f"{WAVE}.csv")
    instance.add_dynamic_partitions("testdata_waves", [WAVE])
    assets = build_survey_assets(spec).assets
    result = materialize(assets, partition_key=WAVE, instance=instance, resources=configured_resources(),
                         selection=[AssetKey(["testdata", "raw_microdata"]), AssetKey(["testdata", "plan_search"])])
    assert result.success
    lines = [entry.user_message for entry in instance.all_logs(result.run_id)
             if entry.dagster_event is None and entry.user_message.startswith(PROGRESS_PREFIX)]
    counts = [tuple(int(n.replace(",", "")) for n in re.match(r"plan search: ([\d,]+) of ([\d,]+) nodes", line).groups())
              for line in lines]
    total = counts[0][1]
    assert total > 1 and all(t == total for _, t in counts)
    done = [d for d, _ in counts]
    assert done == sorted(done) and done[0] == 0 and total in done  # from none to every node settled
    assert any("best so far: lambda_arctan" in line for line in lines)
    materialization = instance.get_latest_materialization_event(AssetKey(["testdata", "plan_search"]))
    assert materialization.asset_materialization.metadata["nodes_total"].value == total
