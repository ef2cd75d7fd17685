"""The plan search's budget is spent by deterministic charges, never read from a clock (issue 38:
"Search results are identical run to run and across worker counts"; :mod:`sdc_dagster.search.clock`):
a CPU clock made fast or slow, a wall clock racing and another process keeping a core busy change
no plan, candidate, loss nor wording, whichever stage the budget cuts (the confirmation of the
front, the walk again after the front failed, the search again with each key's top, Flash), with one
worker or two. The CPU clock remains a guard (clock.OVERRUN times a stage's budget), and the result
says when it fired."""

import itertools
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster import search
from sdc_dagster.search import clock
from sdc_dagster.search import flash as flash_module
from sdc_dagster.search import ladder as ladder_module
from sdc_dagster.search import nodes as nodes_module
from sdc_dagster.search import walk as walk_module
from sdc_dagster.search.outcome import search_summary
from sdc_dagster.search.wave import search_wave
from sdc_dagster.spec import parse_spec
from tests.inline_pool import InlinePool

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "sdcmicro" / "testdata.csv"
ADULT = ROOT / "tests" / "data" / "arx_adult"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
#: The modules whose search_clock a fake replaces: the walk's and the confirmation's guards, Flash's.
CLOCKED = (walk_module, flash_module)


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


class CountingClock:
    """A clock that advances ``step`` seconds at every reading and counts its readings."""

    def __init__(self, step):
        self.step, self.readings = step, 0

    def __call__(self):
        self.readings += 1
        return self.readings * self.step


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


# --- the charges, by hand ---------------------------------------------------------------------------------------------

def test_flash_and_plan_run_charges_follow_the_work_not_the_clock():
    """A Flash check: 0.5 ms + combinations x keys x 3e-9 s; a plan run of the confirmation: 0.08 s +
    records x keys x 3e-6 s (clock module: the rates and their measurements)."""
    assert clock.flash_check_charge(1000, 4) == pytest.approx(5e-4 + 1000 * 4 * 3e-9)  # 0.512 ms
    assert clock.flash_check_charge(19_502, 9) == pytest.approx(1.026554e-3)  # ARX's adult file: 1.03 ms
    assert clock.flash_check_charge(10, 0) == pytest.approx(5e-4 + 10 * 3e-9)  # at least one key
    assert clock.plan_run_charge(4580, 9) == pytest.approx(0.08 + 4580 * 9 * 3e-6)  # 0.204 s
    assert clock.plan_run_charge(800, 0) == pytest.approx(0.0824)


# --- each stage the budget cuts: the same result whatever the CPU clock and the workers ------------------------------

def _wave(amounts=False, seed=3, n=800):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({
        "region": rng.choice(np.arange(1, 9), n, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
        "age": rng.integers(1, 12, n),
        "tenure": rng.choice(np.arange(1, 6), n, p=[0.5, 0.25, 0.12, 0.08, 0.05]),
        "sex": rng.integers(1, 3, n),
    })
    if amounts:
        data["income"] = np.round(rng.lognormal(10, 1, n), 2)
    return data


def _spec(budget, workers=1, amounts=False, linkage=None):
    levels = {"region": [[[1, 2], [3, 4], [5, 6], [7, 8]], [[1, 2, 3, 4], [5, 6, 7, 8]]],
              "age": [[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11]], [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11]]],
              "tenure": [[[1, 2], [3, 4, 5]]]}
    variables = {key: {"role": "categorical_key", "scale": "nominal", "hierarchy": {"levels": lv}}
                 for key, lv in levels.items()}
    variables["sex"] = {"role": "categorical_key", "scale": "nominal"}
    if amounts:
        variables["income"] = {"role": "continuous_key", "precision": 0.01}
    risk = {"k": 3, "max_global_risk": 0.2, **({"max_linkage_risk": linkage} if linkage is not None else {})}
    return parse_spec({"survey": "t", "variables": variables, "risk": risk,
                       "limits": {"max_suppressed_share": 0.5},
                       "search": {"enabled": True, "methods": ["recode", "local_suppression"],
                                  "budget_seconds": budget, "workers": workers}})


def _decided(found):
    """Everything a search decides and says: every candidate evaluated, in order, with its loss and
    risk; the front with the checks each confirmation ran; the plan, its loss, the proof, the counts,
    the bound in words, the optimality wording ("optimal over N" / "best of N checked, bound B") and
    the seconds charged on the budget."""
    summary = search_summary(found)
    return repr([[(c.levels, c.loss, c.global_risk, c.suppressed, c.reaches_target) for c in found.candidates],
            [(c.plan.name, c.levels, c.loss, c.global_risk, sorted(c.checks or {}), c.linkage_risk) for c in found.front],
            found.recommended.plan if found.recommended else None, found.recommended.loss if found.recommended else None,
            found.proven, found.exhaustive, found.nodes_evaluated, found.bound, found.loss_bound,
            summary["optimality"], summary["stricter_loss"], found.charged])


def _searched(monkeypatch, data, spec, clock_):
    for module in CLOCKED:
        monkeypatch.setattr(module, "search_clock", clock_)
    return search_wave(data, spec)


def _left_unevaluated(bound):
    """The nodes the walk again after the front failed left unevaluated (the last such walk)."""
    return [int(n) for n in re.findall(r"more nodes were then evaluated \(([\d,]+) left unevaluated\)", bound)][-1]


#: Each stage the budget cuts: (data, spec's budget and options, what shows that the budget cut it).
STAGES = {
    # the front's confirmations run until their charges fill the budget: only the first candidate
    # is confirmed (three with the budget it needs)
    "confirmation": (dict(), dict(budget=0.2, linkage=0.05),
                     lambda found: sum(bool(c.checks) for c in found.front) == 1 and "searched again" not in found.bound),
    # the front fails the linkage check; the walk again stops with nodes left
    "walk again": (dict(amounts=True), dict(budget=2.0, amounts=True, linkage=0.3),
                   lambda found: _left_unevaluated(found.bound) > 0 and "searched again" not in found.bound),
    # no plan of the keys' own levels passes; the search with each key's top is cut in its turn
    "search again with each key's top": (dict(amounts=True), dict(budget=1.2, amounts=True, linkage=0.3),
                                         lambda found: "searched again with each key's top" in found.bound
                                         and _left_unevaluated(found.bound) > 0),
    # Flash stops with the best node it found, not a proven one
    "Flash": (dict(), dict(budget=0.005), lambda found: "best found: " in found.bound),
}


def _stage_budgets(monkeypatch):
    """The budgets the stages of the searches begin with (the walks, the confirmations, Flash): each
    stage's guard is OVERRUN times its own."""
    budgets = []
    begin_stage, flash = walk_module.LatticeWalk.begin_stage, nodes_module.flash

    def recorded_stage(walk, budget):
        budgets.append(budget)
        begin_stage(walk, budget)

    def recorded_flash(*args, budget_seconds=None, **kwargs):
        budgets.append(budget_seconds)
        return flash(*args, budget_seconds=budget_seconds, **kwargs)

    monkeypatch.setattr(walk_module.LatticeWalk, "begin_stage", recorded_stage)
    monkeypatch.setattr(nodes_module, "flash", recorded_flash)
    return budgets


@pytest.mark.parametrize("stage", list(STAGES))
def test_every_stage_the_budget_cuts_gives_the_same_result_whatever_the_cpu_clock_and_the_workers(monkeypatch,
                                                                                                 stage):
    """The same search with the CPU clock slow (a nanosecond a reading) and fast (over the search,
    as many seconds as the least budget a stage began with: below every guard, OVERRUN times a
    stage's budget, and far more than this small wave's work costs), with one worker and two
    (evaluated ahead of the walk): the same candidates, losses, plan, proof, bound and wording,
    while the budget cuts the stage."""
    data_options, spec_options, cut = STAGES[stage]
    data = _wave(**data_options)
    budgets = _stage_budgets(monkeypatch)
    slow = CountingClock(1e-9)
    expected = _decided(found := _searched(monkeypatch, data, _spec(**spec_options), slow))
    assert cut(found), found.bound
    assert "CPU clock" not in found.bound and "CPU s" not in found.bound
    least = min(b for b in budgets if b > 0)
    fast = CountingClock(least / slow.readings)
    assert _decided(_searched(monkeypatch, data, _spec(**spec_options), fast)) == expected
    assert fast.readings == slow.readings and fast() > 0.99 * least
    pools = []
    monkeypatch.setattr(walk_module, "NodePool", lambda *args: pools.append(InlinePool(*args)) or pools[-1])
    for clock_ in (CountingClock(1e-9), CountingClock(least / slow.readings)):
        two = _searched(monkeypatch, data, _spec(**spec_options, workers=2), clock_)
        assert _decided(two) == expected
    assert pools and two.workers == 2


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(60, 400), budget=st.floats(0.002, 1.0),
       amounts=st.booleans(), linkage=st.sampled_from([None, 0.05, 0.3]))
def test_any_budget_cuts_the_same_way_whatever_the_cpu_clock_and_the_workers(monkeypatch, seed, n, budget, amounts,
                                                                              linkage):
    """Invariant: on random waves, budgets and targets, whatever stage the budget cuts, the search
    decides and says the same with the CPU clock slow and fast (below every stage's guard) and with
    one worker or two."""
    data = _wave(amounts=amounts, seed=seed, n=n)
    spec_options = dict(budget=budget, amounts=amounts, linkage=linkage)
    budgets = _stage_budgets(monkeypatch)
    slow = CountingClock(1e-12)
    expected = _decided(_searched(monkeypatch, data, _spec(**spec_options), slow))
    least = min([b for b in budgets if b > 0] or [budget])
    assert _decided(_searched(monkeypatch, data, _spec(**spec_options), CountingClock(least / slow.readings))) == expected
    monkeypatch.setattr(walk_module, "NodePool", InlinePool)
    assert _decided(_searched(monkeypatch, data, _spec(**spec_options, workers=2), CountingClock(1e-12))) == expected


def test_a_larger_budget_lifts_each_cut():
    """The cuts above are the budget's: with ten minutes each stage runs to its end."""
    for data_options, spec_options, cut in STAGES.values():
        assert not cut(search_wave(_wave(**data_options), _spec(**{**spec_options, "budget": 600})))


@pytest.fixture(scope="module")
def adult_sample():
    keys = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
            "salary-class"]
    data = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str).iloc[::3]
    hierarchies = {key: pd.read_csv(ADULT / f"adult_hierarchy_{key}.csv", sep=";", header=None, dtype=str,
                                    keep_default_na=False) for key in keys}
    return data, hierarchies


def test_optimal_generalisation_cut_by_its_budget_is_the_same_whatever_the_cpu_clock(adult_sample, monkeypatch):
    """search.optimal_generalisation under a budget of 0.05 s: about fifty checks charged (a tenth of
    what proves the optimum), the same best, checks and bound with the CPU clock slow and fast."""
    data, hierarchies = adult_sample

    def cut(clock_):
        monkeypatch.setattr(flash_module, "search_clock", clock_)
        found = search.optimal_generalisation(data, hierarchies, k=3, max_suppressed_records=0.02, budget_seconds=0.05)
        return (found.levels, found.loss, found.suppressed, found.nodes_checked, found.optimal, found.bound,
                found.summary, found.clock_stopped)

    slow = CountingClock(1e-9)
    expected = cut(slow)
    assert expected[3] > 10 and not expected[4] and not expected[7]
    assert expected[6].startswith(f"best of {expected[3]:,} checked of 12,960 transformations") and "bound" in expected[6]
    assert cut(CountingClock(0.5 * 0.05 / slow.readings)) == expected
    proven = search.optimal_generalisation(data, hierarchies, k=3, max_suppressed_records=0.02)
    assert proven.optimal and proven.nodes_checked > 5 * expected[3]


# --- the guard: a CPU clock far past the charges stops a stage, and the result says so --------------------------------

def test_the_cpu_clock_still_stops_the_walk_past_its_guard(testdata, monkeypatch):
    full = search_wave(testdata, spec_of(60), exhaustive=True)
    # the CPU clock running 10 s at each reading: the walk's guard (2 x its share of 60 s) ends it after a few nodes
    monkeypatch.setattr(walk_module, "search_clock", fast_clock(10.0))
    monkeypatch.setattr(flash_module, "search_clock", fast_clock(10.0))
    cut = search_wave(testdata, spec_of(60), exhaustive=True)
    assert not cut.exhaustive and "time budget" in cut.bound and "72 CPU s, 2 times the walk's share" in cut.bound
    assert cut.nodes_evaluated < full.nodes_evaluated == full.nodes_total


def test_the_cpu_clock_stops_the_confirmation_past_its_guard_and_the_bound_says_so(monkeypatch):
    """Each plan run of the confirmation taking 100 CPU s (against its charge of 0.08 s): past twice the
    budget (2 x 60 s) the next run is not started, and the bound names the stage the guard stopped."""
    unhurried = search_wave(_wave(), _spec(60, linkage=0.05))
    now = [0.0]
    for module in CLOCKED:
        monkeypatch.setattr(module, "search_clock", lambda: now[0])
    protect = ladder_module.protect

    def slow_protect(*args, **kwargs):
        now[0] += 100.0
        return protect(*args, **kwargs)

    monkeypatch.setattr(ladder_module, "protect", slow_protect)
    found = search_wave(_wave(), _spec(60, linkage=0.05))
    assert "the CPU clock's guard stopped the confirmation of the front" in found.bound
    assert sum(bool(c.checks) for c in found.front) == 2  # 100 s, then 200 s > 120 s: no third run
    assert sum(bool(c.checks) for c in unhurried.front) == 3 and "CPU clock" not in unhurried.bound


def test_the_cpu_clock_stops_optimal_generalisation_past_its_guard_and_the_summary_says_so(adult_sample,
                                                                                           monkeypatch):
    data, hierarchies = adult_sample
    monkeypatch.setattr(flash_module, "search_clock", fast_clock(10.0))  # far past 2 x 5 s at the second reading
    found = search.optimal_generalisation(data, hierarchies, k=3, max_suppressed_records=0.02, budget_seconds=5)
    assert found.clock_stopped and not found.optimal
    assert "stopped by the CPU clock's guard" in found.summary
    assert not search.optimal_generalisation(data, hierarchies, k=3, max_suppressed_records=0.02).clock_stopped
