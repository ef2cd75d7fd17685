"""The landing sensor registers new waves and requests their runs; the schedule catches up."""

import hashlib
import json
import os
import shutil

import pandas as pd
from dagster import AssetKey, build_schedule_context, build_sensor_context

from sdc_dagster.assets.automation import build_survey_automation
from sdc_dagster.definitions import build_definitions
from sdc_dagster.resources import SdcHome
from sdc_dagster.spec import load_spec


def test_landing_sensor_adds_waves_and_requests_runs(sdc_home, testdata_only_specs, instance):
    spec = load_spec(testdata_only_specs / "testdata.yaml")
    job, sensor, schedule = build_survey_automation(spec)
    folder = sdc_home / "landing" / "testdata"
    folder.mkdir(parents=True)

    result = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}))
    assert result.run_requests == [] and not result.dynamic_partitions_requests

    shutil.copy(testdata_only_specs / "data" / "testdata.csv", folder / "2024.csv")
    (folder / "notes.txt").write_text("not a wave")
    result = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}))
    assert [r.partition_key for r in result.run_requests] == ["2024"]
    assert result.dynamic_partitions_requests[0].partition_keys == ["2024"]
    assert result.dynamic_partitions_requests[0].partitions_def_name == "testdata_waves"

    instance.add_dynamic_partitions("testdata_waves", ["2024"])
    again = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}, cursor=result.cursor))
    assert again.run_requests == [] and not again.dynamic_partitions_requests

    shutil.copy(folder / "2024.csv", folder / "2025.csv")
    second = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}, cursor=result.cursor))
    assert [r.partition_key for r in second.run_requests] == ["2025"]
    assert second.dynamic_partitions_requests[0].partition_keys == ["2025"]

    # The catch-up schedule asks for every registered wave that has not been materialised.
    instance.add_dynamic_partitions("testdata_waves", ["2025"])
    requests = schedule(build_schedule_context(instance=instance))
    assert sorted(r.partition_key for r in requests) == ["2024", "2025"]


def test_landing_sensor_skips_content_already_materialised(sdc_home, testdata_only_specs, instance):
    """`sdc demo` materialises a wave before the sensor has seen its file: the sensor must not run it
    again, nor after the file is touched or copied again with the same content; new content runs."""
    spec = load_spec(testdata_only_specs / "testdata.yaml")
    job, sensor, _ = build_survey_automation(spec)
    folder = sdc_home / "landing" / "testdata"
    folder.mkdir(parents=True)
    wave_file = folder / "2024.csv"
    shutil.copy(testdata_only_specs / "data" / "testdata.csv", wave_file)
    content_hash = hashlib.sha256(wave_file.read_bytes()).hexdigest()

    # What `sdc demo` does: register the wave and materialise it in-process.
    instance.add_dynamic_partitions("testdata_waves", ["2024"])
    defs = build_definitions(testdata_only_specs)
    assert defs.resolve_job_def("testdata_wave_job").execute_in_process(
        partition_key="2024", instance=instance, asset_selection=[AssetKey(["testdata", "raw_microdata"])]
    ).success

    first = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}))
    assert first.run_requests == [] and not first.dynamic_partitions_requests
    assert json.loads(first.cursor)["2024"]["sha256"] == content_hash

    # Touched and copied again: same content, new modification time.
    os.utime(wave_file, (wave_file.stat().st_atime, wave_file.stat().st_mtime + 60))
    assert sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}, cursor=first.cursor)).run_requests == []
    shutil.copy(testdata_only_specs / "data" / "testdata.csv", wave_file)
    assert sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))})).run_requests == []

    # New content: one run, keyed by the new hash.
    data = pd.read_csv(wave_file)
    data.iloc[:-1].to_csv(wave_file, index=False)
    new_hash = hashlib.sha256(wave_file.read_bytes()).hexdigest()
    changed = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(sdc_home))}, cursor=first.cursor))
    assert [(r.partition_key, r.run_key) for r in changed.run_requests] == [("2024", f"2024@{new_hash}")]
