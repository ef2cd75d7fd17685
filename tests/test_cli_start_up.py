"""`sdc run`'s start-up: one survey's chain without the grid chain's modules nor scikit-learn (imported
by the MCD estimate only, issue 38), the cyclic collector
paused while the process builds what lives as long as it does (cli.home.start_up_collection), in
`sdc run` and in `sdc demo`."""

import gc
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdc_dagster.cli.home import start_up_collection

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("enabled", [True, False])
def test_start_up_collection_pauses_then_freezes_then_leaves_the_collector_as_it_was(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with start_up_collection() as started:
            assert not gc.isenabled()
            started()
            assert gc.get_freeze_count() > 0 and gc.isenabled() == enabled
        assert gc.get_freeze_count() == 0 and gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


# `sdc run` up to the run itself, in a fresh interpreter: which modules it imported, how the collector stands.
RUN_UP_TO_THE_JOB = """
import gc, sys
from sdc_dagster.cli import main, run

def materialise(job, instance, survey, wave, source, out, **_):
    print(job.name, gc.isenabled(), gc.get_freeze_count() > 0)
    return 0

run._materialise_wave = materialise
status = main(["--home", sys.argv[1], "run", "testdata", "2024", "--file", sys.argv[2]])
print(status, gc.isenabled(), gc.get_freeze_count(), "sdc_dagster.assets.grid" in sys.modules,
      "sdc_dagster.pipeline.grid" in sys.modules, "sklearn" in sys.modules)
"""


def test_sdc_run_builds_the_survey_job_without_the_grid_chain(tmp_path):
    wave = CHECKOUT / "tests" / "data" / "sdcmicro" / "testdata.csv"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))}
    env.pop("DAGSTER_HOME", None)
    done = subprocess.run([sys.executable, "-c", RUN_UP_TO_THE_JOB, str(tmp_path / "home"), str(wave)],
                          capture_output=True, text=True, env=env, check=True)
    # during the run: collection on, the start-up heap frozen; after it: nothing frozen, no grid module,
    # no scikit-learn
    assert done.stdout.split("\n")[-3:] == ["testdata_wave_job True True", "0 True 0 False False False", ""], \
        done.stderr


def test_sdc_demo_runs_its_waves_with_the_start_up_heap_frozen(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from sdc_dagster.cli import demo

    seen = []

    def run_job(job, instance, **_):
        seen.append((job.name, gc.isenabled(), gc.get_freeze_count() > 0))
        return SimpleNamespace(success=True)

    monkeypatch.setattr(demo, "run_job", run_job)
    monkeypatch.setattr(demo, "wave_summary", lambda survey, wave: "")
    monkeypatch.setattr(demo, "run_grid_demo", lambda defs, instance, out: 0)
    monkeypatch.setattr(demo, "run_table_demo", lambda *args, **kwargs: 0)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("SDC_HOME", raising=False)
    was = gc.isenabled()
    gc.enable()
    try:
        assert demo.run_demo(str(tmp_path / "home"), out=io.StringIO()) == 0
        # every wave ran with the collector on and the start-up heap frozen; afterwards nothing is frozen
        assert seen == [("testdata_wave_job", True, True), ("simulation_wave_job", True, True),
                        ("simulation_wave_job", True, True)]
        assert gc.get_freeze_count() == 0 and gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
