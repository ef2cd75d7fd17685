"""The plan search's budget is never counted on the wall clock (issue 38: "Search results are
identical run to run"; :mod:`sdc_dagster.search.clock`): a wall clock that runs fast and another
process keeping a core busy do not change the plan. The walk is cut by its nodes' charges
(tests/search/test_parallel.py); a CPU clock that runs fast still ends it, through the guard
(clock.OVERRUN times the walk's share), and the bound says so."""

import itertools
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from sdc_dagster.search import wave as pipeline_search
from sdc_dagster.search.wave import search_wave
from sdc_dagster.search import clock
from sdc_dagster.search import flash as flash_module
from sdc_dagster.search import ladder as ladder_module
from sdc_dagster.search import walk as walk_module
from sdc_dagster.spec import parse_spec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "sdcmicro" / "testdata.csv"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA)


def spec_of(budget_seconds):
    variables = {key: {"role": "categorical_key", "scale": "nominal"} for key in KEYS}
    variables["sampling_weight"] = {"role": "weight"}
    return parse_spec({"survey": "t", "variables": variables, "risk": {"k": 3, "max_global_risk": 0.0008},
                       "search": {"enabled": True, "budget_seconds": budget_seconds}})


def outcome(result):
    """What the search decided: the plans it evaluated, the front and the recommended plan."""
    return ([c.levels for c in result.candidates], [(c.levels, c.loss) for c in result.front],
            result.recommended.plan, result.nodes_evaluated, result.exhaustive, result.proven)


def fast_clock(step):
    """A clock that advances ``step`` seconds at every reading."""
    ticks = itertools.count()
    return lambda: next(ticks) * step


def test_search_clock_is_the_cpu_time_of_the_process():
    start_cpu, start_wall = clock.search_clock(), time.perf_counter()
    time.sleep(0.3)  # wall time passes, hardly any CPU time
    assert clock.search_clock() - start_cpu < 0.1 < time.perf_counter() - start_wall


def test_the_plan_does_not_depend_on_the_wall_clock_nor_on_other_processes(testdata, monkeypatch):
    spec = spec_of(60)
    quiet = search_wave(testdata, spec)
    # the wall clock running 1,000 s at each reading (a budget on it would end the search at once)
    # and another process keeping a core busy while the same wave is searched again
    monkeypatch.setattr(time, "perf_counter", fast_clock(1000.0))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = search_wave(testdata, spec)
    finally:
        busy.kill()
        busy.wait()
    assert outcome(loaded) == outcome(quiet)
    assert "time budget" not in loaded.bound


def test_the_budget_ends_the_search_on_the_cpu_clock(testdata, monkeypatch):
    full = search_wave(testdata, spec_of(60), exhaustive=True)
    # the CPU clock running 10 s at each reading: the 60 s budget ends the walk after a few nodes
    clock = fast_clock(10.0)  # one clock for the search, its walk and the confirmation of the front, as before their split
    monkeypatch.setattr(pipeline_search, "search_clock", clock)
    monkeypatch.setattr(ladder_module, "search_clock", clock)
    monkeypatch.setattr(walk_module, "search_clock", clock)
    monkeypatch.setattr(flash_module, "search_clock", fast_clock(10.0))
    cut = search_wave(testdata, spec_of(60), exhaustive=True)
    assert not cut.exhaustive and "time budget" in cut.bound and "CPU s, 2 times the walk's share" in cut.bound
    assert cut.nodes_evaluated < full.nodes_evaluated == full.nodes_total
