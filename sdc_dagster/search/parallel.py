"""The lattice walk's nodes evaluated in parallel processes (issue 38; ``search.workers``).

Where it pays. A worker is a new Python process (the ``spawn`` start method: the search's process
may hold DuckDB's threads, which a ``fork`` would copy in an undefined state) that imports the
package and receives the wave, the spec and the coded lattice once: about 2 CPU seconds per worker
on the machine this was measured on (2.1 s to import :mod:`sdc_dagster.search.nodes`, 2 cores,
``benchmarks/plan_search.py``). A node's evaluation costs from a few milliseconds (a node
k-anonymous by recoding, on a small file) to about a second (local suppression of ARX's adult
file, 30,162 records: 46 nodes in 36 CPU s). So with ``workers: auto`` the walk stays serial until
its evaluations have cost :data:`PAYS_SECONDS` CPU seconds (twice a worker's start-up: the rule of
renting until the rent has paid the purchase, which never costs more than twice the better of
the two choices made in hindsight), then evaluates ahead in :func:`usable_cores` processes.
Small files are settled long before: they stay serial. The checks of
:func:`~sdc_dagster.search.optimal_generalisation` (a node's classes rolled up and compared with
k, about a millisecond each: 601 checks in 0.5 CPU s on the adult file, k = 5, 5 % suppression)
never pay a worker's start-up: that search stays serial.

Identical results for every number of workers. The walk settles its nodes in the same order
whatever the number of workers: a worker only evaluates nodes ahead of the walk
(:func:`~sdc_dagster.search.nodes.evaluate_node`, a pure function of the node), and the walk takes
their candidates in its own order, applying its stop rules (loss bound, cap) to each as the serial
walk does; candidates evaluated past the point where the walk stops are discarded. The nodes'
anonymity checks (rolled-up classes, predictive tagging) stay in the walk's process, in order.
The budget cuts the walk at the same node serial or parallel: each node visited is charged a fixed
number of seconds (:func:`~sdc_dagster.search.clock.node_charge`, from the wave's size and what the
walk does to the node, not from the time it took in whichever process), and the walk stops before
the first node at which the charges exceed its share; a search cut by its budget thus evaluates the
same nodes and says "best of N checked, bound B" with the same N and B for every number of workers,
and a search that proves its optimum (stopped by its loss bound or with every node settled) gives
the same plans, losses and proof. The CPU seconds workers spend on the walk's evaluations
(:attr:`~sdc_dagster.search.walk.LatticeWalk.worker_seconds`) count only in the walk's guard
against charges far below the real cost (:data:`~sdc_dagster.search.clock.OVERRUN`).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor

import pandas as pd

from sdc_dagster.search.coded import CodedLattice
from sdc_dagster.search.nodes import evaluate_node
from sdc_dagster.search.space import KeyHierarchy
from sdc_dagster.spec import SurveySpec

#: CPU seconds of serial evaluations after which ``workers: auto`` starts the workers (twice the
#: measured start-up of one, module docstring).
PAYS_SECONDS = 4.0

#: Evaluations in flight per worker: enough that a worker never waits for the walk.
AHEAD_PER_WORKER = 2

_STATE: dict = {}


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def planned_workers(option: int | str) -> int:
    """The processes the walk may use for ``search.workers``: the number given, or with ``"auto"``
    :func:`usable_cores` (1: serial)."""
    return usable_cores() if option == "auto" else int(option)


def _start(data: pd.DataFrame, specs: tuple[SurveySpec, SurveySpec], lattice: CodedLattice,
           space: dict[str, KeyHierarchy]) -> None:
    _STATE.update(data=data, specs=specs, lattice=lattice, space=space)


def _evaluate(node: tuple[int, ...], may_suppress: bool, is_anonymous: bool, recode_loss: float):
    """One node's candidate in a worker, and the CPU seconds it took there."""
    began = time.process_time()
    spec = _STATE["specs"][0 if may_suppress else 1]
    candidate = evaluate_node(_STATE["data"], spec, _STATE["lattice"], _STATE["space"], node, is_anonymous,
                              recode_loss)
    return candidate, time.process_time() - began


class NodePool:
    """``workers`` processes evaluating nodes of one lattice (module docstring): ``spec`` for the
    nodes that may suppress, ``plain_spec`` for the others."""

    def __init__(self, workers: int, data: pd.DataFrame, spec: SurveySpec, plain_spec: SurveySpec,
                 lattice: CodedLattice, space: dict[str, KeyHierarchy]):
        self.workers = workers
        self.executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_start, initargs=(data, (spec, plain_spec), lattice, space))

    def submit(self, node: tuple[int, ...], may_suppress: bool, is_anonymous: bool, recode_loss: float) -> Future:
        """The future (candidate, worker CPU seconds) of one node's evaluation."""
        return self.executor.submit(_evaluate, node, may_suppress, is_anonymous, recode_loss)

    def close(self) -> None:
        """Stop the workers; evaluations not started are cancelled."""
        self.executor.shutdown(wait=True, cancel_futures=True)
