"""Several waves materialised at the same time, each run with the multiprocess executor (every step
in its own process), as the daemon launches them: all succeed and store what serial runs store.

Before the DuckDB resource became in-memory per connection, a step that opened the shared database
file while another process held it waited (Dagster's backoff, about 100 s) and then failed with
DuckDB's "Could not set lock on file". Short queries rarely overlap on small test waves, so the test
keeps a connection of the resource open in another process for as long as the runs last, as a long
frequency query on a large wave does.
"""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance

from sdc_dagster.definitions import build_definitions

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]

WAVES = ("w0", "w1", "w2")
# The stages that query DuckDB, with what they read.
SELECTION = ("raw_microdata", "variable_classification", "key_frequencies", "risk_scores")

# One run launched as its own process: the code location is loaded from this worktree's
# sdc_dagster.definitions (PYTHONPATH), and so is every step process the executor starts.
RUN_ONE_WAVE = """
import sys
from dagster import AssetKey, DagsterInstance, execute_job
from dagster._core.definitions.reconstruct import ReconstructableRepository

wave, checkout, *selection = sys.argv[1:]
job = ReconstructableRepository.for_module(
    "sdc_dagster.definitions", "defs", working_directory=checkout
).get_reconstructable_job("testdata_wave_job")
with DagsterInstance.get() as instance:
    result = execute_job(
        job,
        instance,
        tags={"dagster/partition": wave},
        asset_selection=[AssetKey(["testdata", name]) for name in selection],
        run_config={"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}},
    )
    sys.exit(0 if result.success else 1)
"""

# Another process holding a connection of the same resource until its stdin closes.
HOLD_A_CONNECTION = """
import sys
from sdc_dagster.resources import duckdb_resource

with duckdb_resource().get_connection() as con:
    con.execute("select 1").fetchall()
    print("connection open", flush=True)
    sys.stdin.read()
"""


def land_waves(home, source):
    """Three different waves: every third record of sdcMicro's testdata, offsets 0, 1, 2."""
    data = pd.read_csv(source)
    folder = home / "landing" / "testdata"
    folder.mkdir(parents=True, exist_ok=True)
    for offset, wave in enumerate(WAVES):
        data.iloc[offset::3].to_csv(folder / f"{wave}.csv", index=False)


def stored(home, wave):
    return {name: pd.read_parquet(home / "storage" / "testdata" / name / f"{wave}.parquet") for name in SELECTION}


def test_three_waves_at_once_with_the_multiprocess_executor(tmp_path, testdata_only_specs, monkeypatch):
    source = testdata_only_specs / "data" / "testdata.csv"
    concurrent_home, dagster_home = tmp_path / "concurrent", tmp_path / "dagster"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    land_waves(concurrent_home, source)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]),
        "SDC_HOME": str(concurrent_home),
        "SDC_SPECS": str(testdata_only_specs),
        "DAGSTER_HOME": str(dagster_home),
    }
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    with DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("testdata_waves", list(WAVES))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_CONNECTION], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "connection open"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", RUN_ONE_WAVE, wave, str(CHECKOUT), *SELECTION],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for wave in WAVES
    ]
    try:
        logs = [run.communicate(timeout=900)[0] for run in runs]
    finally:
        holder.communicate("", timeout=60)
        for run in runs:
            if run.poll() is None:
                run.kill()
    for wave, run, log in zip(WAVES, runs, logs):
        assert run.returncode == 0, f"wave {wave} failed:\n{log[-4000:]}"
        assert "Could not set lock" not in log

    with DagsterInstance.get() as instance:
        for wave in WAVES:
            records = instance.fetch_materializations(
                AssetKey(["testdata", "key_frequencies"]), limit=10
            ).records
            assert wave in {r.partition_key for r in records}
        # Every step of each run ran in its own process: the multiprocess executor was used.
        for run in instance.get_runs():
            starts = [e for e in instance.all_logs(run.run_id) if e.dagster_event and e.dagster_event.event_type_value == "STEP_START"]
            assert len({e.dagster_event.pid for e in starts}) == len(SELECTION)

    # The same waves run one after the other, in-process, in a fresh home.
    serial_home = tmp_path / "serial"
    land_waves(serial_home, source)
    monkeypatch.setenv("SDC_HOME", str(serial_home))
    defs = build_definitions(testdata_only_specs)
    with DagsterInstance.ephemeral() as serial:
        serial.add_dynamic_partitions("testdata_waves", list(WAVES))
        job = defs.resolve_job_def("testdata_wave_job")
        for wave in WAVES:
            assert job.execute_in_process(
                partition_key=wave,
                instance=serial,
                asset_selection=[AssetKey(["testdata", name]) for name in SELECTION],
            ).success
    for wave in WAVES:
        concurrent, serial_outputs = stored(concurrent_home, wave), stored(serial_home, wave)
        for name in SELECTION:
            pd.testing.assert_frame_equal(concurrent[name], serial_outputs[name], check_exact=True)
    # The waves differ, so equal outputs are not one wave's output stored three times.
    assert not stored(serial_home, "w0")["key_frequencies"].equals(stored(serial_home, "w1")["key_frequencies"])
