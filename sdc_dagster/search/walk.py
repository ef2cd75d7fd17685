"""The walk of the plan search's lattice (:func:`sdc_dagster.search.wave.search_wave`, module
docstring there): the nodes in the order of their recode-only loss (SPEC §9.1 measure (1)), Flash's
promoted nodes first, each settled by its rolled-up classes or predictive tagging (ARX's Flash,
Kohlmayer et al. 2012) or evaluated (:func:`~sdc_dagster.search.nodes.evaluate_node`), until the
loss bound, the wider lattice's cap or the time budget stops it, with its progress lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.search.candidates import SearchCandidate
from sdc_dagster.search.clock import search_clock
from sdc_dagster.search.coded import RISK_MARGIN, CodedLattice, RolledCounts, lattice_nodes, level_bounds
from sdc_dagster.search.nodes import evaluate_node
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
    start: float  # the budget's clock (CPU) when the search began
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

    @classmethod
    def of(cls, data: pd.DataFrame, spec: SurveySpec, space: dict[str, KeyHierarchy], report: Progress,
           start: float, exhaustive: bool, walk_suppression: bool) -> LatticeWalk:
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
                   np.lexsort((nodes.sum(axis=1), lower)), report, start, exhaustive,
                   walk_suppresses="local_suppression" in spec.search.methods and walk_suppression,
                   plain_spec=plain_spec, counted=[0, len(nodes)])

    @property
    def suppress_allowed(self) -> bool:
        return "local_suppression" in self.spec.search.methods

    @property
    def budget(self) -> float:
        return self.spec.search.budget_seconds

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
        for position in positions:
            done = position - first + offset
            now = time.perf_counter()  # progress lines only
            if done and (done - self.counted[0] >= every or now - reported >= PROGRESS_SECONDS):
                self.counted[0], reported = done, now
                self.say(self.best_note())
            stop = self._stop(position, done, total, use_bound)
            if stop:
                return stop, position
            self._visit(position)
        self.counted[0] = total
        self.say(self.best_note())
        return "done", len(self.order)

    def _stop(self, position: int, done: int, total: int, use_bound: bool) -> str:
        """Why the walk stops before the node at ``position`` ("bound", "cap", "budget"; "" when it
        goes on): the node and those after it cannot enter the front (their recode-only loss, a
        lower bound of their loss, above the stricter target's least loss), cannot have less loss
        than the wider lattice's plan, or the walk's share of the time budget is spent."""
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
        if search_clock() - self.start > self.walk_share * self.budget:
            self.counted[0] = done
            self.say(self.best_note() + f"; time budget: {total - done:,} nodes not evaluated")
            return "budget"
        return ""

    def _visit(self, position: int) -> None:
        """Settle the node at ``position``: by its rolled-up classes or predictive tagging when they
        show it cannot reach the target, else evaluate it (:func:`~sdc_dagster.search.nodes.evaluate_node`)."""
        index = self.order[position]
        node, point = tuple(int(x) for x in self.nodes[index]), self.nodes[index]
        may_suppress = self.walk_suppresses or (self.suppress_allowed and position < len(self.promoted))
        is_anonymous, checked = self._anonymity(node, point, may_suppress)
        if is_anonymous is None or (not is_anonymous and not may_suppress):
            return
        candidate = evaluate_node(self.data, self.spec if may_suppress else self.plain_spec, self.lattice,
                                  self.space, node, is_anonymous, float(self.lower[index]), checked)
        self.evaluated += 1
        self.candidates.append(candidate)
        if candidate.reaches_target and candidate.global_risk <= self.stricter_target:
            self.best_stricter = min(self.best_stricter, candidate.loss)
        if candidate.reaches_target and (self.best is None or candidate.loss < self.best.loss):
            self.best = candidate

    def _anonymity(self, node: tuple[int, ...], point: np.ndarray, may_suppress: bool):
        """Whether the node is k-anonymous by recoding alone (SPEC §3.1), and the node's key digits
        and their counter when checked here; None when its classes settle it (not k-anonymous, or
        k-anonymous above the risk target, with nothing to suppress)."""
        k, target, lattice, rolled = self.spec.risk.k, self.spec.risk.max_global_risk, self.lattice, self.rolled
        checked = None  # the node's key digits and their counter, when checked here
        if rolled is not None:
            # the node's classes rolled up from the records counted once (exact: no key is missing)
            classes = rolled.classes(node)
            is_anonymous = not (classes.counts < k).any()
            if not is_anonymous and not may_suppress:
                self.settled += 1
                return None, None
            if (is_anonymous and not may_suppress and not self.exhaustive
                    and rolled.global_risk(classes) > target * (1 + RISK_MARGIN)):
                # k-anonymous, above the risk target, and nothing may be suppressed: the node
                # cannot reach the target (its classes tell it; no frequency query)
                self.settled += 1
                return None, None
        elif self.anonymous and (point >= np.array(self.anonymous)).all(axis=1).any():
            is_anonymous, self.tagged = True, self.tagged + 1
        elif self.not_anonymous and (point <= np.array(self.not_anonymous)).all(axis=1).any():
            is_anonymous, self.tagged = False, self.tagged + 1
        elif not lattice.keys:
            is_anonymous = True
            self.anonymous.append(point)
        else:
            # f_k by local suppression's counter (integer counts, exactly those of DuckDB's): a
            # node that is not k-anonymous continues from it, one that is gets F from DuckDB
            digits = lattice.digits(node)
            checked = digits, IncrementalCompatibleCounts(*digits)
            is_anonymous = not (checked[1].record_counts()[0] < k).any()
            (self.anonymous if is_anonymous else self.not_anonymous).append(point)
        return is_anonymous, checked
