"""Issue 38: the plan search's nodes evaluated in parallel processes give the same result as one
process, run after run (``search.workers``, sdc_dagster.search.parallel)."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.spec import SpecError
from sdc_dagster.search import parallel
from sdc_dagster.search.outcome import search_summary
from sdc_dagster.search.wave import search_wave
from sdc_dagster.spec import parse_spec
from tests.inline_pool import InlinePool


def _wave(seed: int = 3, n: int = 800) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(np.arange(1, 9), n, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
        "age": rng.integers(1, 12, n),
        "tenure": rng.choice(np.arange(1, 6), n, p=[0.5, 0.25, 0.12, 0.08, 0.05]),
        "sex": rng.integers(1, 3, n),
    })


def _spec(workers, methods=("recode", "local_suppression")):
    levels = {"region": [[[1, 2], [3, 4], [5, 6], [7, 8]], [[1, 2, 3, 4], [5, 6, 7, 8]]],
              "age": [[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11]], [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11]]],
              "tenure": [[[1, 2], [3, 4, 5]]]}
    variables = {key: {"role": "categorical_key", "scale": "nominal", "hierarchy": {"levels": lv}}
                 for key, lv in levels.items()}
    variables["sex"] = {"role": "categorical_key", "scale": "nominal"}
    return parse_spec({"survey": "t", "variables": variables, "risk": {"k": 3, "max_global_risk": 0.2},
                       "limits": {"max_suppressed_share": 0.5},
                       "search": {"enabled": True, "methods": list(methods), "budget_seconds": 600,
                                  "workers": workers}})


def _figures(found):
    """Everything a search decides: every candidate evaluated, in order, and the recommendation."""
    return ([(c.levels, c.loss, c.global_risk, c.suppressed, c.reaches_target) for c in found.candidates],
            found.recommended.plan if found.recommended else None, found.recommended.loss if found.recommended else None,
            found.proven, found.exhaustive, found.nodes_evaluated, found.bound, found.loss_bound)


@pytest.mark.slow
@pytest.mark.parametrize("missing", [0.0, 0.05], ids=["rolled-up classes", "missing values, tagging"])
def test_one_and_two_workers_find_the_same_plans_losses_and_proof_run_after_run(missing):
    """With missing key values the walk checks its nodes by their compatible counts and predictive
    tagging (its records of checked nodes made ahead of it for the workers), else by rolled-up
    classes."""
    data = _wave(n=800 if not missing else 400)
    data["tenure"] = data["tenure"].astype("Float64").mask(np.random.default_rng(1).random(len(data)) < missing)
    serial = search_wave(data, _spec(1))
    # a walk of several evaluations stopped by its loss bound (the workers evaluate nodes past the
    # stop, which the walk discards), its optimum proven
    assert serial.workers == 1 and 4 < serial.nodes_evaluated < serial.nodes_total
    assert serial.bound.startswith("loss bound") and serial.recommended is not None and serial.proven
    expected = _figures(serial)
    for _ in range(2):
        found = search_wave(data, _spec(2))
        assert found.workers == 2 and search_summary(found)["workers"] == 2
        assert _figures(found) == expected


def test_auto_stays_serial_on_a_small_file(monkeypatch):
    """``workers: auto`` starts no process while the walk's evaluations cost less than PAYS_SECONDS
    (a small file's whole search does), even with several cores."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    found = search_wave(_wave(n=200), _spec("auto"))
    assert found.nodes_evaluated > 0 and found.workers == 1
    assert search_summary(found)["workers"] == 1


def test_workers_option_is_parsed_and_checked():
    assert _spec("auto").search.workers == "auto"
    assert _spec(3).search.workers == 3
    assert parse_spec({"survey": "t", "variables": {"a": {"role": "categorical_key"}},
                       "search": {"enabled": True}}).search.workers == "auto"
    for wrong in (0, 1.5, "many", True):
        with pytest.raises(SpecError, match=r"search\.workers"):
            _spec(wrong)


def test_planned_workers_reads_the_option(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cores", lambda: 6)
    assert parallel.planned_workers("auto") == 6
    assert parallel.planned_workers(1) == 1
    assert parallel.planned_workers(4) == 4


@pytest.mark.slow
def test_auto_starts_the_workers_once_the_evaluations_have_cost_their_start_up(monkeypatch):
    """``workers: auto`` evaluates serially until the walk's evaluations have cost PAYS_SECONDS CPU
    seconds, then in parallel, with the plan of the serial search."""
    from sdc_dagster.search import walk

    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(walk, "PAYS_SECONDS", 0.0)
    found = search_wave(_wave(), _spec("auto"))
    assert found.workers == 2
    assert _figures(found) == _figures(search_wave(_wave(), _spec(1)))


def test_the_budget_counts_the_nodes_charges_not_the_cpu_seconds_of_the_workers():
    """The walk's share of the budget is spent by the charges of the nodes it visits (clock.node_charge),
    wherever they were evaluated: CPU seconds that workers report (here 500 s) do not stop it below
    the guard (clock.OVERRUN times its share), charges past its share do, before the next node."""
    from sdc_dagster.search.clock import search_clock
    from sdc_dagster.search.space import search_space
    from sdc_dagster.search.walk import LatticeWalk

    data, spec = _wave(), _spec(1)  # budget 600 s: the walk's share is 360 s, its guard 720 CPU s
    space = search_space(data, spec)
    walk = LatticeWalk.of(data, spec, space, lambda *_: None, False, True)
    walk.worker_seconds = 500.0
    assert walk._stop(0, 0, len(walk.order), use_bound=False) == ""
    walk.charged = 360.5
    outcome, position = walk.walk(range(len(walk.order)), use_bound=True)
    assert (outcome, position, walk.evaluated, walk.overrun) == ("budget", 0, 0, False)


def test_node_charges_follow_the_work_not_the_clock():
    """A node's charge (clock.node_charge): records x keys x the rate of what the walk does to it;
    nothing for a node tagged or settled by its rolled-up classes."""
    from sdc_dagster.search import clock

    cells = 1000 * 4
    assert clock.node_charge("tagged", False, False, 1000, 4) == 0.0
    assert clock.node_charge("settled", False, False, 1000, 4) == 0.0
    assert clock.node_charge("", True, False, 1000, 4) == pytest.approx(cells * clock.PLAIN_SECONDS_PER_CELL)
    assert clock.node_charge("", True, True, 1000, 4) == pytest.approx(cells * clock.SUPPRESSION_SECONDS_PER_CELL)
    assert clock.node_charge("not_anonymous", True, True, 1000, 4) == pytest.approx(
        cells * (clock.CHECK_SECONDS_PER_CELL + clock.SUPPRESSION_SECONDS_PER_CELL))
    assert clock.node_charge("anonymous", False, False, 1000, 0) == pytest.approx(1000 * clock.CHECK_SECONDS_PER_CELL)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(30, 300), k=st.integers(2, 5),
       missing=st.sampled_from([0.0, 0.1]), suppress=st.booleans(), workers=st.integers(2, 4))
def test_walking_ahead_for_workers_changes_nothing(monkeypatch, seed, n, k, missing, suppress, workers):
    """Invariant: the walk with workers (checks and evaluations made ahead of it, taken in its own
    order, those past its stop discarded) records exactly what the serial walk records: the same
    candidates in the same order, plan, loss, proof, bound and counts."""
    from sdc_dagster.search import walk

    pools = []
    monkeypatch.setattr(walk, "NodePool", lambda *args: pools.append(InlinePool(*args)) or pools[-1])
    data = _wave(seed, n)
    data["tenure"] = data["tenure"].astype("Float64").mask(np.random.default_rng(seed).random(n) < missing)
    methods = ("recode", "local_suppression") if suppress else ("recode",)

    def spec(w):
        return dataclasses.replace(_spec(w, methods), risk=dataclasses.replace(_spec(w, methods).risk, k=k))

    serial = search_wave(data, spec(1))
    parallel_walk = search_wave(data, spec(workers))
    assert _figures(parallel_walk) == _figures(serial)
    assert parallel_walk.workers == (workers if pools else 1)


def test_workers_that_cannot_start_leave_the_walk_serial_and_say_so(monkeypatch):
    """Where the system cannot start processes (no semaphores, in some sandboxes), the walk says so
    on its progress and finds the serial plan."""
    from sdc_dagster.search import walk

    def refused(*args):
        raise OSError("[Errno 38] Function not implemented")

    monkeypatch.setattr(walk, "NodePool", refused)
    lines = []
    found = search_wave(_wave(), _spec(2), progress=lambda done, total, note: lines.append(note))
    assert found.workers == 1
    assert any("the 2 worker processes could not start ([Errno 38] Function not implemented)" in line for line in lines)
    assert _figures(found) == _figures(search_wave(_wave(), _spec(1)))


def _cut_by_the_budget(monkeypatch):
    """A search the budget cuts: each node evaluated with local suppression charged 2 s
    (clock.SUPPRESSION_SECONDS_PER_CELL on the 800 records x 4 keys), the budget 3 s (the walk's
    share 1.8 s; what the first such node leaves, about a CPU second, confirms the front of a wave
    this small)."""
    from sdc_dagster.search import clock

    monkeypatch.setattr(clock, "SUPPRESSION_SECONDS_PER_CELL", 2.0 / (800 * 4))
    return lambda workers: dataclasses.replace(_spec(workers), search=dataclasses.replace(
        _spec(workers).search, budget_seconds=3.0))


def _cut_figures(found):
    """What a budget-cut search says as well: its plans, losses, proof and the "best of N checked,
    bound B" line."""
    from sdc_dagster.search.outcome import optimality

    return _figures(found), optimality(found.nodes_evaluated, found.nodes_total, found.proven, found.loss_bound)


class _SlowInlinePool(InlinePool):
    """An inline pool whose workers report 40 CPU seconds per evaluation: the old budget, counted on
    the CPU seconds of the evaluations, stopped such a walk after a node or two."""

    def submit(self, node, may_suppress, is_anonymous, recode_loss):
        future = super().submit(node, may_suppress, is_anonymous, recode_loss)
        candidate, _ = future.result()
        future._result = (candidate, 40.0)
        return future


def test_a_search_cut_by_its_budget_is_the_same_with_one_worker_or_several(monkeypatch):
    """Issue 38, "identical across worker counts": the budget cuts the walk at the same node whatever
    the workers' CPU seconds (charges, clock.node_charge): the same candidates, losses, bound and
    "best of N checked, bound B" with 1, 2 and 3 workers."""
    from sdc_dagster.search import walk

    spec = _cut_by_the_budget(monkeypatch)
    monkeypatch.setattr(walk, "NodePool", lambda *args: _SlowInlinePool(*args))
    data = _wave()
    serial = search_wave(data, spec(1))
    # cut by the budget once a node with suppression was charged its 2 s (the walk's share 1.8 s)
    assert not serial.exhaustive and serial.bound.startswith("time budget") and serial.recommended is not None
    assert "2 s charged to the nodes visited, over the walk's share of 1.8 s" in serial.bound
    words = _cut_figures(serial)
    assert words[1] == "best of 2 checked (of 18 plans, bound 0)"
    for workers in (2, 3):
        found = search_wave(data, spec(workers))
        assert found.workers == workers
        assert _cut_figures(found) == words


@pytest.mark.slow
def test_a_search_cut_by_its_budget_is_the_same_in_worker_processes_run_after_run(monkeypatch):
    """The same with real worker processes (spawned, their start-up and CPU seconds as they come),
    twice: the nodes taken before the budget's cut do not depend on the timing."""
    spec = _cut_by_the_budget(monkeypatch)
    data = _wave()
    serial = search_wave(data, spec(1))
    assert serial.bound.startswith("time budget") and serial.nodes_evaluated == 2
    for _ in range(2):
        found = search_wave(data, spec(2))
        assert found.workers == 2
        assert _cut_figures(found) == _cut_figures(serial)
