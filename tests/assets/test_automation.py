"""The landing sensor registers new waves and requests their runs; the schedule catches up."""

import shutil

from dagster import build_schedule_context, build_sensor_context

from assets.automation import build_survey_automation
from sdc_dagster.spec import load_spec


def test_landing_sensor_adds_waves_and_requests_runs(sdc_home, testdata_only_specs, instance):
    spec = load_spec(testdata_only_specs / "testdata.yaml")
    job, sensor, schedule = build_survey_automation(spec)
    folder = sdc_home / "landing" / "testdata"
    folder.mkdir(parents=True)

    result = sensor(build_sensor_context(instance=instance))
    assert result.run_requests == [] and not result.dynamic_partitions_requests

    shutil.copy(testdata_only_specs / "data" / "testdata.csv", folder / "2024.csv")
    (folder / "notes.txt").write_text("not a wave")
    result = sensor(build_sensor_context(instance=instance))
    assert [r.partition_key for r in result.run_requests] == ["2024"]
    assert result.dynamic_partitions_requests[0].partition_keys == ["2024"]
    assert result.dynamic_partitions_requests[0].partitions_def_name == "testdata_waves"

    instance.add_dynamic_partitions("testdata_waves", ["2024"])
    again = sensor(build_sensor_context(instance=instance, cursor=result.cursor))
    assert again.run_requests == [] and not again.dynamic_partitions_requests

    shutil.copy(folder / "2024.csv", folder / "2025.csv")
    second = sensor(build_sensor_context(instance=instance, cursor=result.cursor))
    assert [r.partition_key for r in second.run_requests] == ["2025"]
    assert second.dynamic_partitions_requests[0].partition_keys == ["2025"]

    # The catch-up schedule asks for every registered wave that has not been materialised.
    instance.add_dynamic_partitions("testdata_waves", ["2025"])
    requests = schedule(build_schedule_context(instance=instance))
    assert sorted(r.partition_key for r in requests) == ["2024", "2025"]
