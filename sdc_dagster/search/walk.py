"""The walk of the plan search's lattice (:func:`sdc_dagster.search.wave.search_wave`, module
docstring there): the nodes in the order of their recode-only loss (SPEC §9.1 measure (1)), Flash's
promoted nodes first, each settled by its rolled-up classes or predictive tagging (ARX's Flash,
Kohlmayer et al. 2012) or evaluated (:func:`~sdc_dagster.search.nodes.evaluate_node`), until the
loss bound, the wider lattice's cap or the time budget stops it, with its progress lines; the
evaluations run ahead in parallel processes where it pays (``search.workers``,
:mod:`sdc_dagster.search.parallel`), the walk taking their candidates in its own order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.search.candidates import SearchCandidate
from sdc_dagster.search.clock import OVERRUN, node_charge, search_clock
from sdc_dagster.search.coded import RISK_MARGIN, CodedLattice, RolledCounts, lattice_nodes, level_bounds
from sdc_dagster.search.flash import Outcome
from sdc_dagster.search.nodes import evaluate_node
from sdc_dagster.search.parallel import AHEAD_PER_WORKER, PAYS_SECONDS, NodePool, planned_workers
from sdc_dagster.search.space import KeyHierarchy
from sdc_dagster.spec import SurveySpec


#: Share of the time budget the lattice may use; the rest is for confirming the front.
LATTICE_SHARE = 0.6

#: The lattice walk reports its progress every this share of the nodes ...
PROGRESS_SHARE = 0.1

#: ... or every this many seconds, whichever comes first.
PROGRESS_SECONDS = 5.0

#: A progress callback of :func:`sdc_dagster.search.wave.search_wave`: ``(nodes done, nodes in all, note)``.
Progress = Callable[[int, int, str], None]

#: The walk's anonymity checks run at most this many positions ahead of it (for the workers).
AHEAD_POSITIONS = 256


@dataclass
class NodeCheck:
    """A node's check before its evaluation (:meth:`LatticeWalk._check`): k-anonymous by recoding
    alone (None: settled, not evaluated), the key digits and counter made for it, whether it may
    suppress, and what the walk records when it visits the node (``effect``: "settled", "tagged",
    "anonymous", "not_anonymous" or "", with the node's level vector ``point``)."""

    node: tuple[int, ...]
    is_anonymous: bool | None
    checked: tuple | None
    may_suppress: bool
    effect: str
    point: np.ndarray

    @property
    def evaluated(self) -> bool:
        """Whether the walk evaluates the node (a candidate)."""
        return self.is_anonymous is not None and (self.is_anonymous or self.may_suppress)


@dataclass
class LatticeWalk:
    """One lattice walk of :func:`sdc_dagster.search.wave.search_wave` and what it has found: the
    lattice (its nodes, their recode-only loss ``lower``, SPEC §9.1 measure (1), and the walk's
    ``order``, least ``lower`` first, Flash's ``promoted`` nodes at the front), the candidates evaluated, the least loss
    meeting the stricter target, and the counts of the progress lines and of the bound."""

    data: pd.DataFrame
    spec: SurveySpec
    space: dict[str, KeyHierarchy]
    lattice: CodedLattice
    rolled: RolledCounts | None
    nodes: np.ndarray
    lower: np.ndarray
    order: np.ndarray
    report: Progress
    exhaustive: bool
    walk_suppresses: bool  # in the search again with each key's top only the nodes Flash promotes suppress
    plain_spec: SurveySpec  # the spec without local suppression, for the nodes that may not suppress
    promoted: list[int] = field(default_factory=list)
    skipped: int = 0  # nodes Flash settled before the walk
    cap: float = np.inf  # the wider lattice's loss by recoding alone: no node from it on can have less
    walk_share: float = LATTICE_SHARE
    candidates: list[SearchCandidate] = field(default_factory=list)
    best: SearchCandidate | None = None  # the candidate meeting the target with the least loss so far
    best_stricter: float = np.inf
    evaluated: int = 0
    tagged: int = 0
    settled: int = 0  # nodes whose classes showed that they cannot reach the target (not evaluated)
    counted: list[int] = field(default_factory=list)  # nodes settled, of the nodes of the walk (the last reported)
    anonymous: list[np.ndarray] = field(default_factory=list)  # nodes checked k-anonymous by recoding alone
    not_anonymous: list[np.ndarray] = field(default_factory=list)  # ... and not
    workers: int = 1  # the processes the walk may evaluate its nodes in (search.workers)
    workers_used: int = 1  # ... and did
    evaluation_seconds: float = 0.0  # CPU seconds of the walk's evaluations in its own process
    worker_seconds: float = 0.0  # CPU seconds of the evaluations workers did for the walk
    charged: float = 0.0  # seconds charged to the nodes visited (clock.node_charge): where the budget cuts
    stage_charged: float = 0.0  # ... and to Flash's checks and the confirmation's plan runs (clock module)
    allowance: float = np.inf  # the charges at which the walk under way stops (walk())
    overrun: bool = False  # the walk was stopped by its CPU seconds (clock.OVERRUN), not by its charges
    clock_stopped: list[str] = field(default_factory=list)  # the other stages the CPU clock's guard stopped
    stage_began: tuple[float, float] = (0.0, 0.0)  # the CPU clock and worker seconds when the stage under way began
    guard_seconds: float = np.inf  # the CPU seconds past which the guard stops the stage under way
    pool: NodePool | None = None
    ahead: dict = field(default_factory=dict)  # position -> (NodeCheck, future of its candidate or None)
    pending: dict = field(default_factory=lambda: {"anonymous": [], "not_anonymous": []})  # checked ahead
    scanned: int = 0  # the first position not checked ahead

    @classmethod
    def of(cls, data: pd.DataFrame, spec: SurveySpec, space: dict[str, KeyHierarchy], report: Progress,
           exhaustive: bool, walk_suppression: bool) -> LatticeWalk:
        """The walk of the (cut) space's lattice in the order of the nodes' recode-only loss, the
        nodes of fewer levels first among equals."""
        lattice = CodedLattice(data, spec, space)
        nodes = lattice_nodes(space)
        lower = np.zeros(len(nodes))
        for i, per_level in enumerate(level_bounds(data, spec, lattice)):
            lower += per_level[nodes[:, i]]
        plain_spec = replace(spec, search=replace(spec.search, methods=tuple(
            m for m in spec.search.methods if m != "local_suppression")))
        return cls(data, spec, space, lattice, RolledCounts.of(lattice), nodes, lower,
                   np.lexsort((nodes.sum(axis=1), lower)), report, exhaustive,
                   walk_suppresses="local_suppression" in spec.search.methods and walk_suppression,
                   plain_spec=plain_spec, counted=[0, len(nodes)],
                   workers=planned_workers(spec.search.workers))

    @property
    def suppress_allowed(self) -> bool:
        return "local_suppression" in self.spec.search.methods

    @property
    def budget(self) -> float:
        return self.spec.search.budget_seconds

    def elapsed(self) -> float:
        """Seconds of the search so far on its budget: the charges of the nodes the walk visited
        (:func:`~sdc_dagster.search.clock.node_charge`), of Flash's checks and of the confirmation's
        plan runs, never a clock (:mod:`sdc_dagster.search.clock`), so that every stage starts from
        the same point run to run and with one worker or several."""
        return self.charged + self.stage_charged

    def charge(self, seconds: float) -> None:
        """Charge a stage's work outside the walk (a plan run of the confirmation,
        :func:`~sdc_dagster.search.clock.plan_run_charge`) on the budget."""
        self.stage_charged += seconds

    def charge_flash(self, outcome: Outcome | None) -> None:
        """Charge Flash's checks (its outcome's ``charged``; nothing when it did not run), and note
        when the CPU clock's guard stopped it."""
        if outcome is not None:
            self.stage_charged += outcome.charged
            if outcome.overrun:
                self.stopped_by_clock("Flash")

    def begin_stage(self, budget: float) -> None:
        """A stage begins (the walk, the confirmation of the front) with ``budget`` seconds to charge:
        its guard (:data:`~sdc_dagster.search.clock.OVERRUN`) stops it once its CPU seconds
        (:meth:`stage_cpu`) pass OVERRUN times that budget. A stage with nothing to charge has no
        guard: its charges stop it after one node or plan run at most."""
        self.stage_began = search_clock(), self.worker_seconds
        self.guard_seconds = OVERRUN * budget if budget > 0 else np.inf

    def stage_cpu(self) -> float:
        """CPU seconds of the stage under way: this process's and those of the evaluations workers did
        for it (:mod:`sdc_dagster.search.parallel`)."""
        began, workers = self.stage_began
        return search_clock() - began + self.worker_seconds - workers

    def clock_over(self, stage: str) -> bool:
        """The guard of the stage under way outside the walk (the confirmation of the front): whether
        its CPU seconds pass :data:`~sdc_dagster.search.clock.OVERRUN` times its budget (:meth:`begin_stage`);
        ``stage`` noted for the result when they do."""
        if self.stage_cpu() > self.guard_seconds:
            self.stopped_by_clock(stage)
            return True
        return False

    def stopped_by_clock(self, stage: str) -> None:
        if stage not in self.clock_stopped:
            self.clock_stopped.append(stage)

    @property
    def stricter_target(self) -> float:
        return self.spec.risk.max_global_risk / 2

    @property
    def bounded(self) -> bool:
        """Whether the loss has per-level bounds (the lambda-arctan measure, every bound finite)."""
        return self.spec.search.loss == "lambda_arctan" and bool(np.isfinite(self.lower).all())

    def say(self, note: str) -> None:
        self.report(self.counted[0], self.counted[1], note)

    def best_note(self) -> str:
        if self.best is None:
            return "no candidate meets the risk target yet"
        found = self.best
        return (f"best so far: {self.spec.search.loss} {found.loss:.4g}, global risk {100 * found.global_risk:.3g} % "
                f"({found.plan.description.removeprefix('searched plan: ')})")

    def least_left(self, stop: int) -> float:
        """The least recode-only loss of the nodes from position ``stop`` of the walk on."""
        return float(self.lower[self.order[stop:]].min()) if stop < len(self.order) else np.inf

    def walk(self, positions: range, use_bound: bool) -> tuple[str, int]:
        """Evaluate the nodes at ``positions`` of ``order``: ("bound" | "cap" | "budget" | "done", the
        position where the walk stopped), reporting the nodes settled to ``progress``."""
        first, total = positions.start, len(self.order) - positions.start
        offset = 0 if first else self.skipped  # the nodes Flash settled before the walk count as settled
        total += offset
        every, reported = max(1, int(np.ceil(PROGRESS_SHARE * total))), time.perf_counter()
        self.counted[:] = [offset, total]
        if first:
            self.say(self.best_note() + f"; walking the {total:,} nodes the loss bound had ruled out")
        # the first walk may be charged its share of the budget; a walk again after the front failed
        # its release checks, what is left of the share and of the budget, fixed when it begins
        self.allowance = self.walk_share * self.budget
        if first:
            self.allowance = self.charged + max(0.0, min(self.allowance - self.charged, self.budget - self.elapsed()))
        self.begin_stage(self.allowance - self.charged)
        try:
            for position in positions:
                done = position - first + offset
                now = time.perf_counter()  # progress lines only
                if done and (done - self.counted[0] >= every or now - reported >= PROGRESS_SECONDS):
                    self.counted[0], reported = done, now
                    self.say(self.best_note())
                stop = self._stop(position, done, total, use_bound)
                if stop:
                    return stop, position
                self._visit(position, positions.stop)
        finally:
            self._close()
        self.counted[0] = total
        self.say(self.best_note())
        return "done", len(self.order)

    def _close(self) -> None:
        """Stop the workers; the checks and evaluations made ahead of the walk are dropped (nothing
        of them was recorded: the walk records a node when it visits it)."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.ahead.clear()
        self.pending = {"anonymous": [], "not_anonymous": []}
        self.scanned = 0

    def _stop(self, position: int, done: int, total: int, use_bound: bool) -> str:
        """Why the walk stops before the node at ``position`` ("bound", "cap", "budget"; "" when it
        goes on): the node and those after it cannot enter the front (their recode-only loss, a
        lower bound of their loss, above the stricter target's least loss), cannot have less loss
        than the wider lattice's plan, or the walk's share of the budget is spent: the charges of
        the nodes visited so far (:func:`~sdc_dagster.search.clock.node_charge`, fixed by the nodes
        and the wave, so the same nodes are taken whatever the timing and the number of workers)
        exceed its ``allowance`` (the first walk: its share; a walk again once the front failed
        the release checks: what is left of the share and of the whole budget when it begins), or,
        the guard of :mod:`sdc_dagster.search.clock`, the walk's CPU seconds (its own process's and
        its workers') pass :data:`~sdc_dagster.search.clock.OVERRUN` times what it had to charge."""
        index = self.order[position]
        past_promoted = use_bound and position >= len(self.promoted)
        if past_promoted and self.lower[index] > self.best_stricter + 1e-12:
            self.counted[0] = total  # the nodes left cannot beat the stricter target's least loss
            self.say(self.best_note() + f"; the other {total - done:,} nodes cannot enter the front (loss bound)")
            return "bound"
        if past_promoted and self.lower[index] >= self.cap:
            self.counted[0] = total  # the nodes left cannot have less loss than the wider lattice's plan
            self.say(self.best_note() + f"; the other {total - done:,} nodes cannot have less loss than "
                     f"{self.cap:.4g}, the least loss meeting the target by recoding alone once each key's top "
                     "joins the lattice")
            return "cap"
        share = self.allowance
        self.overrun = self.charged <= share and self.stage_cpu() > self.guard_seconds
        if self.charged > share or self.overrun:
            self.counted[0] = done
            self.say(self.best_note() + f"; time budget: {total - done:,} nodes not evaluated")
            return "budget"
        return ""

    def _visit(self, position: int, end: int) -> None:
        """Settle the node at ``position``: by its rolled-up classes or predictive tagging when they
        show it cannot reach the target, else evaluate it (:func:`~sdc_dagster.search.nodes.evaluate_node`),
        in this process or, where it pays, by a worker ahead of the walk (:mod:`sdc_dagster.search.parallel`;
        ``end``: the position where the walk ends)."""
        index = self.order[position]
        if self.pool is not None:
            self._fill(position, end)
        ahead = position in self.ahead
        check, future = self.ahead.pop(position) if ahead else (
            self._check(position, self.anonymous, self.not_anonymous), None)
        self._record(check, ahead)
        cells = len(self.data), len(self.lattice.keys)
        self.charged += node_charge(check.effect, False, False, *cells)
        if not check.evaluated:
            return
        self.charged += node_charge("", True, check.may_suppress and not check.is_anonymous, *cells)
        if future is None and self.pool is None and self._pays():
            self._start_pool()
        if future is not None:
            candidate, seconds = future.result()
            self.worker_seconds += seconds
        else:
            began = time.process_time()
            candidate = evaluate_node(self.data, self.spec if check.may_suppress else self.plain_spec, self.lattice,
                                      self.space, check.node, bool(check.is_anonymous), float(self.lower[index]),
                                      check.checked)
            self.evaluation_seconds += time.process_time() - began
        self.evaluated += 1
        self.candidates.append(candidate)
        if candidate.reaches_target and candidate.global_risk <= self.stricter_target:
            self.best_stricter = min(self.best_stricter, candidate.loss)
        if candidate.reaches_target and (self.best is None or candidate.loss < self.best.loss):
            self.best = candidate

    def _start_pool(self) -> None:
        """Start the workers; where the system cannot (no process semaphores, in some sandboxes) the
        walk says so and goes on in this process."""
        try:
            self.pool = NodePool(self.workers, self.data, self.spec, self.plain_spec, self.lattice, self.space)
        except (OSError, ImportError, NotImplementedError) as error:
            self.say(f"the {self.workers} worker processes could not start ({error}): the walk goes on in one process")
            self.workers = 1
            return
        self.workers_used = max(self.workers_used, self.workers)

    def _pays(self) -> bool:
        """Whether to start the workers now: more than one allowed, and with ``search.workers: auto``
        the walk's evaluations have cost :data:`~sdc_dagster.search.parallel.PAYS_SECONDS` CPU seconds."""
        if self.workers <= 1:
            return False
        return self.spec.search.workers != "auto" or self.evaluation_seconds >= PAYS_SECONDS

    def _fill(self, position: int, end: int) -> None:
        """Check the nodes ahead of the walk in its order (at most :data:`AHEAD_POSITIONS`) and hand
        those to evaluate to the workers, until :data:`~sdc_dagster.search.parallel.AHEAD_PER_WORKER`
        evaluations per worker are in flight. A node checked ahead records nothing yet: its check
        assumes the nodes before it recorded (``pending``), as the walk records them in order."""
        scan = max(position, self.scanned)
        flying = sum(future is not None for _, future in self.ahead.values())
        while scan < min(end, position + AHEAD_POSITIONS) and flying < AHEAD_PER_WORKER * self.pool.workers:
            check = self._check(scan, self.anonymous + self.pending["anonymous"],
                                self.not_anonymous + self.pending["not_anonymous"])
            if check.effect in self.pending:
                self.pending[check.effect].append(check.point)
            future = None
            if check.evaluated:
                future = self.pool.submit(check.node, check.may_suppress, bool(check.is_anonymous),
                                          float(self.lower[self.order[scan]]))
                flying += 1
            self.ahead[scan] = (replace(check, checked=None), future)
            scan += 1
        self.scanned = scan

    def _record(self, check: NodeCheck, ahead: bool) -> None:
        """What the walk records of a node it visits (its check's ``effect``); ``ahead``: the node was
        checked ahead of the walk (its level vector leaves ``pending``)."""
        if check.effect == "settled":
            self.settled += 1
        elif check.effect == "tagged":
            self.tagged += 1
        elif check.effect:
            getattr(self, check.effect).append(check.point)
            if ahead:
                self.pending[check.effect].pop(0)

    def _check(self, position: int, anonymous: list[np.ndarray], not_anonymous: list[np.ndarray]) -> NodeCheck:
        """Whether the node at ``position`` is k-anonymous by recoding alone (SPEC §3.1), with the
        node's key digits and their counter when checked here; ``is_anonymous`` None when its classes
        settle it (not k-anonymous, or k-anonymous above the risk target, with nothing to suppress).
        Records nothing (:meth:`_record` does): ``anonymous``, ``not_anonymous`` are the nodes
        checked before it, for predictive tagging."""
        index = self.order[position]
        node, point = tuple(int(x) for x in self.nodes[index]), self.nodes[index]
        may_suppress = self.walk_suppresses or (self.suppress_allowed and position < len(self.promoted))
        k, target, lattice, rolled = self.spec.risk.k, self.spec.risk.max_global_risk, self.lattice, self.rolled
        checked, effect = None, ""  # the node's key digits and their counter, when checked here
        if rolled is not None:
            # the node's classes rolled up from the records counted once (exact: no key is missing)
            classes = rolled.classes(node)
            is_anonymous = not (classes.counts < k).any()
            if not is_anonymous and not may_suppress:
                return NodeCheck(node, None, None, may_suppress, "settled", point)
            if (is_anonymous and not may_suppress and not self.exhaustive
                    and rolled.global_risk(classes) > target * (1 + RISK_MARGIN)):
                # k-anonymous, above the risk target, and nothing may be suppressed: the node
                # cannot reach the target (its classes tell it; no frequency query)
                return NodeCheck(node, None, None, may_suppress, "settled", point)
        elif anonymous and (point >= np.array(anonymous)).all(axis=1).any():
            is_anonymous, effect = True, "tagged"
        elif not_anonymous and (point <= np.array(not_anonymous)).all(axis=1).any():
            is_anonymous, effect = False, "tagged"
        elif not lattice.keys:
            is_anonymous, effect = True, "anonymous"
        else:
            # f_k by local suppression's counter (integer counts, exactly those of DuckDB's): a
            # node that is not k-anonymous continues from it, one that is gets F from DuckDB
            digits = lattice.digits(node)
            checked = digits, IncrementalCompatibleCounts(*digits)
            is_anonymous = not (checked[1].record_counts()[0] < k).any()
            effect = "anonymous" if is_anonymous else "not_anonymous"
        return NodeCheck(node, is_anonymous, checked, may_suppress, effect, point)
