"""The plan search of a wave: the plan that meets the risk target with the least information loss (issue 22).

The stage runs on a wave and its survey spec, framework-free (no Dagster import):

1. **Space** (:mod:`sdc_dagster.search.space`): per categorical key a chain of generalisation
   levels from the data (or the spec's ``hierarchy:``); the nodes of the search are the combinations
   of one level per key (the lattice). A node's plan recodes each key to its level and, when that
   alone leaves records with f_k < k, suppresses key values locally to k-anonymity (SPEC §8.3; the
   keys recoded deepest are suppressed last); continuous keys get one of the candidate steps.
2. **Search.** A node is evaluated by its k-anonymity violations (SPEC §3.1, missing values
   matching any value), its global risk (SPEC §3.3) and its loss (the spec's measure: distance
   measure (1) with arctan distances, SPEC §9.1, or the mean TOPSIS loss, SPEC §10, as
   :func:`sdc_dagster.pipeline.evaluation.headline_loss` computes them). Two properties of the lattice spare
   most of the work:

   * *predictive tagging* (ARX's Flash): a generalisation of a node that is k-anonymous by recoding
     alone is k-anonymous too (merging categories never lowers a sample frequency), and a
     specialisation of one that is not is not either; tagged nodes need no frequency check, and a
     node tagged k-anonymous needs no suppression;
   * *a loss bound*: the distance measure (1) sums partial distances per key, so the loss of a
     node's recodes alone is the sum of per-key figures computed once per level, and suppression
     only adds to it (a suppressed value is as far as any value can be). Nodes are evaluated in the
     order of that bound; once a plan meets the *stricter target* (half the global-risk target) with
     loss L, no node whose bound exceeds L can enter the front, and the search stops.

   * *rolled-up classes* (ARX's roll-up on integer codes, :class:`_RolledCounts`): where no key has
     a missing value, a node's equivalence classes are those of a counted specialisation with each
     key's codes mapped to the coarser level and equal combinations summed, never a pass over the
     records; its k-anonymity and, without suppression, its global risk are read from them, so a
     node that cannot reach the target without suppression, when none is allowed, is settled
     without an evaluation. Where a key has missing values (which match any value, SPEC §2.4) the
     per-node compatible counts are kept. A node needing suppression is always evaluated: with
     missing values matching any value, suppressing every key of k - 1 records makes any file
     k-anonymous, so the records in classes smaller than k bound the suppression local
     suppression needs from above (it changes only those records), never from below, and no count
     rules such a node out.

   * *Flash first* (ARX's Flash on those rolled-up classes, :func:`_flash_node`): before the walk,
     predictive tagging over the whole lattice finds the node of least recode-only loss meeting the
     target by recoding alone (k-anonymity, global risk, l-diversity: monotone along the lattice,
     the global risk proven so only without weights), and, when local suppression is allowed, the
     node of least recode-only loss whose classes smaller than k hold at most
     ``limits.max_suppressed_share`` of the records (ARX's record-suppression predicate, SPEC
     §14.2: the nodes where local suppression can stay within the limit). Both are evaluated
     first, so a plan keeping the detail they found is a candidate however soon the budget ends;
     without suppression the nodes before the first in loss order are proven to miss the target
     and not walked. When no node of the keys' own levels meets the target by recoding alone,
     the wider lattice's (each key's top included) least loss by recoding alone caps the walk:
     a node of a higher recode-only loss cannot beat the plan searched next.

   The search is exhaustive when every node is settled (evaluated, or ruled out by its classes); a
   time budget (``search.budget_seconds``, counted in CPU seconds of the process,
   :func:`~sdc_dagster.search.clock.search_clock`, so that the machine's load does not change the
   plan) stops it early, and the result says so (``exhaustive``,
   ``bound``, and ``loss_bound``: the least loss a node left unevaluated can have). ``proven`` says
   whether the recommended plan is proven the least loss of the lattice's plans meeting the target
   (:func:`_proven`: no node left unevaluated nor candidate left unconfirmed can have less).
3. **Front.** The candidates meeting the target (k-anonymity, global risk, and the constraints the
   node's codes show: l-diversity of the sensitive variables when the spec asks it, SPEC §3.6, and
   the share of each key's values suppressed, ``limits.max_suppressed_share``) that no other beats on
   both global risk and loss, from the least loss up to the least loss meeting the stricter target.
4. **Confirmation.** Front candidates are run as ordinary plans (:func:`sdc_dagster.pipeline.protection.protect`,
   so the release replays them byte for byte) with the continuous keys' ladder
   (:func:`~sdc_dagster.search.space.continuous_steps`, the weakest passing rung of each method, least
   loss first, withholding keys last), until :func:`sdc_dagster.pipeline.protection.release_checks` has no blocking failure; the loss is then
   :func:`sdc_dagster.pipeline.evaluation.headline_loss` of the released variant. The release checks
   include the utility limits (``limits:``: suppression, records changed, the change of means,
   variances and correlations), so a candidate outside them is never confirmed nor recommended.
   The recommended candidate is the
   confirmed one with the least loss (named :data:`SEARCHED_PLAN`); the runner-up the next. When no
   front candidate passes (the linkage through the released keys, say), the rest of the lattice is
   evaluated and the candidates beyond the front are confirmed in loss order.
5. **Wider lattice.** When still no candidate passes, the search runs again in the time left with
   each key's top (its categories released as one, ARX's "*") in its chain and without suppression
   but for Flash's node with few records in classes smaller than k, Flash's nodes walked first (or
   without one the node of every key at its top): a lattice that holds a k-anonymous plan on any
   file of at least k records (a file of fewer is refused before the search). The result says
   "optimal over N plans" only when every node of the space it searched was evaluated
   (:func:`optimality`), else "best of N checked".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import product

import numpy as np
import pandas as pd

from sdc_dagster import risk
from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import digit_key_frequencies
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.keys import category_codes, renumbered_digits
from sdc_dagster.protect.plan import PlanResult
from sdc_dagster.search.front import pareto_front
from sdc_dagster.search.clock import search_clock
from sdc_dagster.search.coding import ClassCounter, KeyCoding
from sdc_dagster.search.flash import Check, Outcome, flash
from sdc_dagster.search.lattice import Lattice
from sdc_dagster.search.space import ContinuousRung, KeyHierarchy, continuous_steps, search_space
from sdc_dagster.protect.suppression import codes_below_l, risk_suppression, suppress_codes_to_k, suppress_codes_to_l
from sdc_dagster.risk.categorical import risk_from_frequencies
from sdc_dagster.spec import SEARCHED_PLAN, Plan, SurveySpec
from sdc_dagster.pipeline.evaluation import headline_loss
from sdc_dagster.pipeline.protection import UTILITY_CHECKS, CheckOutcome, blocking_failures, protect, release_checks
from sdc_dagster.validation import check_records_for_k, weight_values

#: The name of the recommended plan as a protected variant.
#: The seed of searched plans (their random steps, noise and rank swapping, derive theirs from it).
SEARCH_SEED = 20240
#: The lattice is cut (deepest levels first) to at most this many nodes.
MAX_NODES = 200_000
#: Share of the time budget the lattice may use; the rest is for confirming the front.
LATTICE_SHARE = 0.6
#: Share of the time budget the walk of the keys' own levels may use when local suppression is
#: allowed but Flash found no node whose classes smaller than k hold few enough records for the
#: suppression limit (so every node needs much suppression): the rest goes to the wider lattice.
HOPELESS_SHARE = 0.1
#: A node's global risk from its classes is compared with the target with this relative margin: the
#: node is settled above the target without evaluation only when it is clearly above it (the sums of
#: the evaluation may round differently).
RISK_MARGIN = 1e-9
#: The lattice walk reports its progress every this share of the nodes ...
PROGRESS_SHARE = 0.1
#: ... or every this many seconds, whichever comes first.
PROGRESS_SECONDS = 5.0

#: A progress callback of :func:`search_wave`: ``(nodes done, nodes in all, note)``.
Progress = Callable[[int, int, str], None]
#: How :func:`progress_line` begins (``sdc run`` shows the lines of the Dagster log that begin so).
PROGRESS_PREFIX = "plan search: "


def progress_line(done: int, total: int, note: str) -> str:
    """A progress report of :func:`search_wave` as one line of text, for the console and the
    Dagster log: "plan search: 120 of 1,200 nodes (10 %); best so far: ..."."""
    percent = 100.0 * done / total if total else 100.0
    return f"{PROGRESS_PREFIX}{done:,} of {total:,} nodes ({percent:.0f} %); {note}"


@dataclass(frozen=True)
class SearchCandidate:
    """One evaluated plan of the search.

    ``plan``: ordinary spec steps, replayable by :func:`sdc_dagster.protect.plan.apply_plan` with
    ``plan.random_state``; ``plan.description`` says the choices in words. ``global_risk`` (SPEC
    §3.3, 0 without categorical keys), ``k_violations`` (records with f_k < k, SPEC §3.1),
    ``linkage_risk`` (the linkage_risk check's value; NaN before confirmation or without continuous
    keys), ``loss`` (the spec's measure), ``suppressed`` (key values suppressed), ``reaches_target``
    (k-anonymity and the global-risk target), ``checks`` (:func:`sdc_dagster.pipeline.protection.release_checks`
    outcomes after confirmation; empty before), ``levels`` (the level of each categorical key),
    ``protected`` (the confirmed plan's protection, kept for the first of the ranked front only:
    the searched variant is then not protected again), ``l_violations`` (records whose released key
    group is not l-diverse, :func:`_records_below_l`; 0 when the spec asks no l-diversity) and
    ``suppressed_share`` (the largest share of a key's observed values suppressed, bounded by
    ``limits.max_suppressed_share``). ``reaches_target`` asks k-anonymity, the global-risk target,
    l-diversity and the suppression limit: the constraints a node's codes show; the other utility
    limits are release checks of the confirmation.
    """

    plan: Plan
    global_risk: float
    k_violations: int
    linkage_risk: float
    loss: float
    suppressed: int
    reaches_target: bool
    checks: dict[str, CheckOutcome] = field(default_factory=dict)
    levels: tuple[int, ...] = ()
    l_violations: int = 0
    suppressed_share: float = 0.0
    protected: PlanResult | None = field(default=None, repr=False, compare=False)

    @property
    def confirmed(self) -> bool:
        """Whether the release checks ran and no blocking one failed."""
        return bool(self.checks) and not blocking_failures(self.checks)

    @property
    def risk(self) -> float:  # the risk of the front (risk against loss, pareto_front)
        return self.global_risk


@dataclass(frozen=True)
class WaveSearch:
    """The outcome of :func:`search_wave` (module docstring).

    ``candidates``: every evaluated node (of both lattices when the search ran again with the keys'
    tops); ``front``: the Pareto front (global risk against loss) of those meeting the target, those passing the release checks first, each by loss, the confirmed ones
    carrying their checks (when no front candidate passes them, the candidates beyond the front that
    were confirmed join it); ``recommended``: the confirmed candidate of least loss
    (``plan.name == SEARCHED_PLAN``); ``runner_up``: the next;
    ``stricter``: what meeting half the global-risk target costs, ``{"target", "loss", "plan"}``
    (None when no candidate meets it); ``nodes_total``, ``nodes_evaluated``, ``exhaustive``, ``bound``
    (how the search was cut, in words), ``seconds``; ``space``: per key, its levels in words;
    ``loss_bound``: when the walk stopped before the last node (time budget or loss bound;
    lambda-arctan loss), the least loss a node left unevaluated can have (its recode-only loss;
    continuous steps only add to it), NaN otherwise; ``proven``: the recommended plan
    is proven the least loss of the lattice's plans meeting the target (:func:`_proven`).
    """

    candidates: tuple[SearchCandidate, ...]
    front: tuple[SearchCandidate, ...]
    recommended: SearchCandidate | None
    runner_up: SearchCandidate | None
    stricter: dict | None
    nodes_total: int
    nodes_evaluated: int
    exhaustive: bool
    bound: str
    seconds: float
    space: dict[str, list[str]]
    loss_bound: float = float("nan")
    proven: bool = False

    def front_frame(self) -> pd.DataFrame:
        """One row per front candidate: plan, steps (short text), global_risk, k_violations,
        linkage_risk, loss, suppressed, recommended."""
        name = self.recommended.plan.name if self.recommended else None
        rows = [{
            "plan": c.plan.name,
            "steps": "; ".join(_step_text(s) for s in c.plan.steps),
            "global_risk": c.global_risk,
            "k_violations": c.k_violations,
            "linkage_risk": c.linkage_risk,
            "loss": c.loss,
            "suppressed": c.suppressed,
            "recommended": c.plan.name == name,
        } for c in self.front]
        columns = ["plan", "steps", "global_risk", "k_violations", "linkage_risk", "loss", "suppressed", "recommended"]
        return pd.DataFrame(rows, columns=columns)


def _step_text(step: dict) -> str:
    method = step["method"]
    if method == "recode":
        return f"recode {step['variable']} ({len(step['groups'])} merged groups)"
    if method == "local_suppression":
        return f"local suppression k={step['k']}"
    if method == "risk_suppression":
        return f"risk suppression above {step['threshold']:.4g}"
    if method == "diversity_suppression":
        return f"suppression to {step['l']}-diversity"
    if method == "remove_variables":
        return f"{', '.join(step['variables'])} withheld"
    if method in ("top_coding", "bottom_coding"):
        return f"{method.replace('_', ' ')} {step['variable']} at {step['value']:.6g}"
    if method == "interval_recode":
        return f"bands of {step['variable']} ({len(step['breaks']) - 1})"
    extra = ", ".join(f"{k}={v}" for k, v in step.items() if k in ("k", "p", "amount", "base"))
    return f"{method} {extra}".strip()


class _Lattice:
    """The recoded key values of every level and their codes, and the frequency checks of nodes
    (module docstring).

    Per key and level: ``values`` (one value per record, as the level's recode releases it) and
    ``codes`` (their :func:`~sdc_dagster.keys.category_codes` and radix), coded once per search;
    a node's key digits are its levels' codes side by side, exactly what
    :func:`~sdc_dagster.keys.key_digits` gives for the recoded keys."""

    def __init__(self, data: pd.DataFrame, spec: SurveySpec, space: dict[str, KeyHierarchy]):
        self.keys = list(space)
        self.weight = spec.weight if spec.weight in data.columns else None
        self.weights = weight_values(data, self.weight)
        self.index = data.index
        self.values = {}  # key -> [values of level 0, level 1, ...] (arrays, one per record)
        self.codes = {}  # key -> [(codes, radix) of level 0, level 1, ...]
        for key, hierarchy in space.items():
            codes, categories = category_codes(data[key])
            numeric = pd.api.types.is_numeric_dtype(data[key])
            arrays, coded = [], []
            for level in hierarchy.levels:
                mapping = {c: min(g) for g in level.groups for c in g}
                lookup = np.array([np.nan if numeric else None] + [mapping.get(c, c) for c in categories],
                                  dtype=float if numeric else object)
                arrays.append(lookup[codes])
                # category_codes of the recoded values, from the few recoded categories: equal values
                # share a code, numbered by first appearance in the records
                merged, _ = category_codes(pd.Series(lookup))
                level_codes, radix = renumbered_digits(merged[codes][:, None])
                coded.append((level_codes[:, 0], int(radix[0])))
            self.values[key] = arrays
            self.codes[key] = coded
        # the sensitive variables' codes (from 0, -1 missing), when the spec asks l-diversity
        sensitive = [v for v in spec.names("sensitive") if v in data.columns] if spec.risk.l is not None else []
        self.sensitive = {v: category_codes(data[v])[0] - 1 for v in sensitive} if self.keys else {}

    def digits(self, node: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The node's key digits and radices (:func:`~sdc_dagster.keys.key_digits` of its keys)."""
        digits = np.empty((len(self.index), len(self.keys)), dtype=np.int64, order="F")
        radices = np.empty(len(self.keys), dtype=np.int64)
        for j, (key, level) in enumerate(zip(self.keys, node)):
            digits[:, j], radices[j] = self.codes[key][level]
        return digits, radices

    def frequencies(self, digits: np.ndarray, radices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per record (f, F) of keys with these digits, SPEC §2.4 (what ``risk.key_frequencies``
        gives for the keys they code, with the wave's weights)."""
        return digit_key_frequencies(digits, radices, weights=self.weights)

    def released(self, node: tuple[int, ...], digits: np.ndarray) -> dict[str, np.ndarray]:
        """Per key, the node's values with those whose digit is 0 (missing or suppressed) missing:
        what :func:`~sdc_dagster.protect.suppression.apply_suppression` leaves of the recoded keys."""
        out = {}
        for j, (key, level) in enumerate(zip(self.keys, node)):
            values = self.values[key][level]
            suppressed = (digits[:, j] == 0) & (self.codes[key][level][0] > 0)
            if suppressed.any():
                values = values.copy()
                values[suppressed] = np.nan
            out[key] = values
        return out

    def frame(self, node: tuple[int, ...], digits: np.ndarray) -> pd.DataFrame:
        """The node's recoded keys with the suppression of ``digits`` (:meth:`released`) and the
        weight, as a frame."""
        frame = pd.DataFrame(self.released(node, digits), index=self.index)
        if self.weight:
            frame[self.weight] = self.weights
        return frame


class _RolledCounts:
    """The equivalence classes of every node, rolled up from the records counted once
    (:class:`~sdc_dagster.search.coding.ClassCounter`, ARX's roll-up on integer codes) instead of a
    count of the records per node.

    The key codes are those of :class:`_Lattice` (level h of a key as its codes 1..G_h, level 0 the
    categories): each level's codes are a function of the categories' codes, so every node's classes
    are the categories' combinations with each key mapped to its level. A node is rolled up from a
    counted specialisation only when every key's levels nest (each level a merge of the groups of
    every finer one, as a hierarchy is); else from the categories' combinations.

    Only for a wave whose keys have no missing value (:meth:`of`): then a record's frequency
    with missing values matching any value (SPEC §2.4) is its class's count, and the counts are
    exact; with missing values the search keeps its per-node compatible counts."""

    def __init__(self, lattice: _Lattice):
        coded = []
        nested = True
        for key in lattice.keys:
            base = lattice.codes[key][0][0]
            levels, sizes = [], []
            for codes, radix in lattice.codes[key]:
                mapping = np.zeros(lattice.codes[key][0][1], dtype=np.int64)
                mapping[base] = codes - 1
                levels.append(mapping[1:])
                sizes.append(np.ones(radix - 1, dtype=np.int64))
            for finer in range(len(levels)):
                for coarser in range(finer + 1, len(levels)):
                    # nested: equal codes at the finer level have equal codes at the coarser one
                    pairs = np.unique(np.column_stack([levels[finer], levels[coarser]]), axis=0)
                    nested = nested and len(pairs) == len(np.unique(levels[finer]))
            coded.append(KeyCoding(key, base - 1, tuple(levels), tuple(sizes),
                                   tuple(np.arange(len(s)).astype(object) for s in sizes), len(sizes[0])))
        self.n = len(lattice.index)
        self.weighted = lattice.weights is not None
        self.counter = ClassCounter(coded, lattice.weights, cache_cells=10_000_000 if nested else 0)

    @classmethod
    def of(cls, lattice: _Lattice) -> _RolledCounts | None:
        """The rolled-up counts of the lattice's nodes; None when a key has a missing value (or
        there is no key): the per-node compatible counts are kept then."""
        if not lattice.keys or not all((lattice.codes[key][0][0] > 0).all() for key in lattice.keys):
            return None
        return cls(lattice)

    def classes(self, node: tuple[int, ...]):
        """The node's :class:`~sdc_dagster.search.coding.Classes` (counts, summed weights)."""
        return self.counter.classes(np.asarray(node, dtype=np.int64))

    def global_risk(self, classes) -> float:
        """SPEC §3.3's global risk of the node's records as its classes release them (no value
        suppressed): the mean individual risk (SPEC §3.2: 1/f without weights, the approximation on
        (f, F) with them) over the records, each class counting its records."""
        risks = risk_from_frequencies(classes.counts, classes.mass, weighted=self.weighted)
        return float(np.sum(risks * classes.counts) / self.n)


def _node_plan(space: dict[str, KeyHierarchy], node: tuple[int, ...], suppression: list[dict], k: int,
               continuous: ContinuousRung | None, name: str) -> Plan:
    steps, words = [], []
    for (key, hierarchy), level in zip(space.items(), node):
        step = hierarchy.levels[level].step(key)
        if step is not None:
            steps.append(step)
            words.append(f"{key}: {hierarchy.levels[level].words}")
    for step in suppression:
        steps.append(step)
        if step["method"] == "local_suppression":
            words.append(f"local suppression to {step['k']}-anonymity")
        elif step["method"] == "diversity_suppression":
            words.append(f"suppression of the keys of records in key groups that are not {step['l']}-diverse")
        else:
            words.append(f"suppression of key values of records with individual risk above {step['threshold']:.4g}")
    if continuous is not None:
        steps += continuous.steps
        words.append(continuous.words + " (continuous keys)")
    return Plan(name=name, steps=tuple(steps), k=k, random_state=SEARCH_SEED,
                description="searched plan: " + ("; ".join(words) if words else "the keys as they are"))


def _suppression_step(k: int) -> dict:
    """Local suppression to k with the greedy method's default: the fewest suppressions per record,
    ties broken by sdcMicro's importance (keys with fewer categories, as a deeper recoding leaves
    them, kept first). An explicit importance order makes the greedy method honour it
    lexicographically, about 40 times slower on sdcMicro's testdata, for more suppressions."""
    return {"method": "local_suppression", "k": k}


def _level_bounds(data: pd.DataFrame, spec: SurveySpec, lattice: _Lattice) -> list[np.ndarray]:
    """Per key and level, the recode-only loss of that key alone (headline_loss's lambda_arctan,
    SPEC §9.1 eq (1)); the loss of recodes of several keys is their sum (measure (1) is a mean of
    per-value partial distances over the values compared, which recoding does not change).

    Level 0 releases the key as it is: its figure is that of the wave itself, for every key. A
    deeper level changes that key only, so the partial distances of the other columns are not
    computed (``unchanged``)."""
    unchanged_wave = headline_loss(data, data, spec, topsis=False).get("lambda_arctan", np.nan)
    bounds = []
    for key in lattice.keys:
        figures = [unchanged_wave]
        others = [c for c in data.columns if c != key]
        for values in lattice.values[key][1:]:
            protected = data.copy(deep=False)
            protected[key] = values if values.dtype == object else pd.Series(values, index=data.index).astype(
                data[key].dtype if not data[key].isna().any() else float)
            figures.append(headline_loss(data, protected, spec, unchanged=others, topsis=False).get("lambda_arctan",
                                                                                                     np.nan))
        bounds.append(np.asarray(figures) - figures[0])
    return bounds


def _nodes(space: dict[str, KeyHierarchy]) -> np.ndarray:
    counts = [len(h.levels) for h in space.values()]
    if not counts:
        return np.zeros((1, 0), dtype=int)
    return np.array(list(product(*[range(c) for c in counts])), dtype=int).reshape(-1, len(counts))


def _cut_space(space: dict[str, KeyHierarchy]) -> dict[str, KeyHierarchy]:
    """The space with the deepest levels of the keys with most levels dropped until the lattice has at
    most :data:`MAX_NODES` nodes; a key's top (one group, :func:`~sdc_dagster.search.space.withheld_level`)
    is kept while a level below it can go."""
    space = dict(space)
    while np.prod([len(h.levels) for h in space.values()], dtype=float) > MAX_NODES:
        key = max(space, key=lambda k: len(space[k].levels))
        levels = space[key].levels
        top = levels[-1:] if len(levels) > 2 and len(levels[-1].groups) == 1 else ()
        space[key] = replace(space[key], levels=(*levels[:len(levels) - 1 - len(top)], *top))
    return space


def search_wave(
    data: pd.DataFrame,
    spec: SurveySpec,
    *,
    wave: str = "",
    progress: Progress | None = None,
    exhaustive: bool = False,
    withhold: bool = False,
) -> WaveSearch:
    """Search the plans of a wave (module docstring) and return the front and the recommendation.

    Parameters
    ----------
    data : the wave, as the pipeline protects it (not modified).
    spec : the survey spec: keys, risk target (``risk.k``, ``risk.max_global_risk``,
        ``risk.max_linkage_risk``), loss measure and restrictions (``search:``).
    wave : the wave's name; the seed labels of the searched plans' random steps, as the release
        replays them (``(survey, wave, plan name)``).
    progress : a plain callback ``progress(done, total, note)`` (:data:`Progress`) of the lattice
        walk: ``done`` of the ``total`` nodes settled (evaluated, tagged, or, once the loss bound
        stops the walk, all the nodes it rules out) and a note with the best candidate so far
        (its loss and global risk) or the stage the search is in. Called when the walk starts,
        every :data:`PROGRESS_SHARE` of the nodes or :data:`PROGRESS_SECONDS` seconds, whichever
        comes first, when it ends (``done == total`` unless the time budget stopped it) and at each
        later stage with the final count (:func:`progress_line` writes a call as a line). When no
        front candidate passes the release checks, the nodes the bound had settled are walked
        again, reported as their own walk (``done`` of the nodes left).
    exhaustive : evaluate every node of the lattice, without the loss bound (the time budget still
        applies); for checking that the bound loses no front candidate.
    withhold : search the lattice in which every key also has the top of its hierarchy (all its
        categories as one, :func:`~sdc_dagster.search.space.withheld_level`). Without it, when no
        plan of the data's own levels passes the release checks, the search runs again with it in
        the time left, its plans without suppression (a node not k-anonymous by its recodes is
        settled by one frequency check, most by predictive tagging) but for one: when the spec
        allows local suppression, the node of least recode-only loss whose classes smaller than k
        hold at most ``limits.max_suppressed_share`` of the records (found by Flash,
        :func:`_flash_node`) is evaluated with it. The least-loss node meeting the target by
        recoding alone (Flash again) is walked first, or without one the node of every key at its
        top: that lattice holds a
        k-anonymous plan (every key at its top), so the target is out of reach only through the
        global risk of a file of fewer than 1 / max_global_risk records without weights,
        l-diversity or a continuous key's limits.

    Returns
    -------
    :class:`WaveSearch`.

    Raises
    ------
    SDCInputError : a wave of fewer records than ``risk.k``, before any search
        (:func:`~sdc_dagster.validation.check_records_for_k`).
    """
    return _search_wave(data, spec, wave=wave, progress=progress, exhaustive=exhaustive, withhold=withhold,
                        walk_suppression=True)


def _search_wave(data: pd.DataFrame, spec: SurveySpec, *, wave: str, progress: Progress | None, exhaustive: bool,
                 withhold: bool, walk_suppression: bool) -> WaveSearch:
    """:func:`search_wave`; with ``walk_suppression`` False (the search again with each key's top)
    the walk evaluates no node with suppression but those Flash promotes (the node of least
    recode-only loss whose classes smaller than k hold few enough records for the suppression
    limit), even where the spec allows local suppression."""
    check_records_for_k(len(data), spec.risk.k, source=f"{spec.survey} wave {wave}".rstrip())
    start, began = search_clock(), time.perf_counter()  # the budget's clock (CPU), the wall clock reported
    budget = spec.search.budget_seconds
    report = progress or (lambda done, total, note: None)
    k, target = spec.risk.k, spec.risk.max_global_risk
    stricter_target = target / 2
    measure = spec.search.loss
    full_space = search_space(data, spec, withhold=withhold)
    space = _cut_space(full_space)
    lattice = _Lattice(data, spec, space)
    nodes = _nodes(space)
    bounds = _level_bounds(data, spec, lattice)
    lower = np.zeros(len(nodes))
    for i, per_level in enumerate(bounds):
        lower += per_level[nodes[:, i]]
    order = np.lexsort((nodes.sum(axis=1), lower))
    suppress_allowed = "local_suppression" in spec.search.methods
    # whether the walk suppresses: in the search again with each key's top only the nodes Flash promotes do
    walk_suppresses = suppress_allowed and walk_suppression
    plain_spec = replace(spec, search=replace(spec.search, methods=tuple(
        m for m in spec.search.methods if m != "local_suppression")))
    anonymous, not_anonymous = [], []  # nodes checked k-anonymous / not, by recoding alone
    rolled = _RolledCounts.of(lattice)
    settled = 0  # nodes whose classes showed that they cannot reach the target (not evaluated)
    candidates: list[SearchCandidate] = []
    best_stricter = np.inf
    evaluated = tagged = 0
    best: list[SearchCandidate] = []  # the candidate meeting the target with the least loss so far
    counted = [0, len(nodes)]  # nodes settled, of the nodes of the walk (the last reported)

    def say(note: str) -> None:
        report(counted[0], counted[1], note)

    def best_note() -> str:
        if not best:
            return "no candidate meets the risk target yet"
        found = best[0]
        return (f"best so far: {measure} {found.loss:.4g}, global risk {100 * found.global_risk:.3g} % "
                f"({found.plan.description.removeprefix('searched plan: ')})")

    def walk(positions, use_bound: bool) -> tuple[str, int]:
        """Evaluate the nodes at ``positions`` of ``order``: ("bound" | "cap" | "budget" | "done", the
        position where the walk stopped), reporting the nodes settled to ``progress``."""
        nonlocal best_stricter, evaluated, tagged, settled
        first, total = positions.start, len(order) - positions.start
        offset = 0 if first else skipped  # the nodes Flash settled before the walk count as settled
        total += offset
        every, reported = max(1, int(np.ceil(PROGRESS_SHARE * total))), time.perf_counter()
        counted[:] = [offset, total]
        if first:
            say(best_note() + f"; walking the {total:,} nodes the loss bound had ruled out")
        for position in positions:
            done = position - first + offset
            now = time.perf_counter()  # progress lines only
            if done and (done - counted[0] >= every or now - reported >= PROGRESS_SECONDS):
                counted[0], reported = done, now
                say(best_note())
            index = order[position]
            if use_bound and position >= len(promoted) and lower[index] > best_stricter + 1e-12:
                counted[0] = total  # the nodes left cannot beat the stricter target's least loss
                say(best_note() + f"; the other {total - done:,} nodes cannot enter the front (loss bound)")
                return "bound", position
            if use_bound and position >= len(promoted) and lower[index] >= cap:
                counted[0] = total  # the nodes left cannot have less loss than the wider lattice's plan
                say(best_note() + f"; the other {total - done:,} nodes cannot have less loss than {cap:.4g}, the "
                    "least loss meeting the target by recoding alone once each key's top joins the lattice")
                return "cap", position
            if search_clock() - start > walk_share * budget:
                counted[0] = done
                say(best_note() + f"; time budget: {total - done:,} nodes not evaluated")
                return "budget", position
            node, point = tuple(int(x) for x in nodes[index]), nodes[index]
            may_suppress = walk_suppresses or (suppress_allowed and position < len(promoted))
            checked = None  # the node's key digits and their counter, when checked here
            if rolled is not None:
                # the node's classes rolled up from the records counted once (exact: no key is missing)
                classes = rolled.classes(node)
                is_anonymous = not (classes.counts < k).any()
                if not is_anonymous and not may_suppress:
                    settled += 1
                    continue
                if (is_anonymous and not may_suppress and not exhaustive
                        and rolled.global_risk(classes) > target * (1 + RISK_MARGIN)):
                    # k-anonymous, above the risk target, and nothing may be suppressed: the node
                    # cannot reach the target (its classes tell it; no frequency query)
                    settled += 1
                    continue
            elif anonymous and (point >= np.array(anonymous)).all(axis=1).any():
                is_anonymous, tagged = True, tagged + 1
            elif not_anonymous and (point <= np.array(not_anonymous)).all(axis=1).any():
                is_anonymous, tagged = False, tagged + 1
            elif not lattice.keys:
                is_anonymous = True
                anonymous.append(point)
            else:
                # f_k by local suppression's counter (integer counts, exactly those of DuckDB's): a
                # node that is not k-anonymous continues from it, one that is gets F from DuckDB
                digits = lattice.digits(node)
                checked = digits, IncrementalCompatibleCounts(*digits)
                is_anonymous = not (checked[1].record_counts()[0] < k).any()
                (anonymous if is_anonymous else not_anonymous).append(point)
            if not is_anonymous and not may_suppress:
                continue
            candidate = _evaluate(data, spec if may_suppress else plain_spec, lattice, space, node, is_anonymous,
                                  float(lower[index]), checked)
            evaluated += 1
            candidates.append(candidate)
            if candidate.reaches_target and candidate.global_risk <= stricter_target:
                best_stricter = min(best_stricter, candidate.loss)
            if candidate.reaches_target and (not best or candidate.loss < best[0].loss):
                best[:] = [candidate]
        counted[0] = total
        say(best_note())
        return "done", len(order)

    say(f"the lattice of {spec.survey} {wave}".rstrip() + f": {len(nodes):,} nodes over {len(space)} keys")
    # Flash (predictive tagging on classes rolled up from integer codes, :func:`_flash_node`): the
    # least-loss node meeting the target by recoding alone, and with local suppression the
    # least-loss node whose classes smaller than k hold few enough records for the suppression
    # limit; both evaluated first (``promoted``), so that a plan keeping the detail Flash found is a
    # candidate however soon the time budget ends the walk
    flashed, bound_note, promoted, cap, walk_share, skipped = None, "", [], np.inf, LATTICE_SHARE, 0
    flashing = rolled is not None and not exhaustive and measure == "lambda_arctan" and np.isfinite(lower).all()
    proven_flash = lattice.weights is None  # the global risk is monotone along the lattice without weights
    if flashing:
        flashed = _flash_node(lattice, rolled, nodes, lower, spec, LATTICE_SHARE * budget - (search_clock() - start),
                              say)
    if flashed is not None:
        found_note = ("none" if not flashed.value < np.inf else
                      f"{'proven' if flashed.optimal and proven_flash else 'best found'} node "
                      f"{'_'.join(map(str, nodes[flashed.node]))}, loss {flashed.value:.4g}")
        bound_note = (f"Flash checked {flashed.checked:,} of {len(nodes):,} nodes by their rolled-up classes for the "
                      f"least-loss plan meeting the target by recoding alone: {found_note}")
        if flashed.optimal and proven_flash and not walk_suppresses:
            # proven: every node before it in loss order fails the target by recoding alone (all of
            # them when none meets it), and nothing may be suppressed: the walk starts at it
            skipped = int(np.flatnonzero(order == flashed.node)[0]) if flashed.value < np.inf else len(order)
            settled += skipped
            order = order[skipped:]
        elif flashed.value < np.inf:
            promoted.append(flashed.node)
        elif not withhold:
            # no node found meeting the target by recoding alone; the wider lattice (each key's top
            # in its chain, searched next when nothing here passes) has a plan without suppression:
            # a node here whose recode-only loss reaches that plan's loss cannot have less loss
            cap = _wider_cap(data, spec, LATTICE_SHARE * budget - (search_clock() - start), say)
            if cap < np.inf:
                bound_note += (f"; with each key's top in its chain a plan meets the target by recoding alone "
                               f"with loss {cap:.4g}: only nodes of a lower recode-only loss are evaluated")
    if rolled is not None and measure == "lambda_arctan" and np.isfinite(lower).all() and suppress_allowed:
        # also when ``exhaustive``: with each key's top in the lattice this node is the one the walk
        # evaluates with local suppression, so the exhaustive search has it too
        limit = int(spec.limits.max_suppressed_share * len(data))
        suppressible = _flash_node(lattice, rolled, nodes, lower, spec,
                                   LATTICE_SHARE * budget - (search_clock() - start), say, suppressible=limit)
        if (suppressible is not None and suppressible.optimal and not suppressible.value < np.inf and not withhold
                and not exhaustive):
            # proven: every node has more records in classes smaller than k than the limit
            walk_share = min(walk_share, HOPELESS_SHARE)
            bound_note += (f"; every node has more than {limit:,} records (max_suppressed_share of the records) in "
                           f"classes smaller than k: the walk had {walk_share:.0%} of the budget, the rest went to the "
                           "lattice with each key's top")
        if (suppressible is not None and suppressible.value < cap
                and suppressible.node not in promoted):
            promoted.append(suppressible.node)
            bound_note += (f"; the least-loss node whose classes smaller than k hold at most {limit:,} records "
                           f"(max_suppressed_share of the records), node "
                           f"{'_'.join(map(str, nodes[suppressible.node]))}, evaluated first")
    if withhold and not promoted and len(nodes) > 1 and (flashed is None or not flashed.value < np.inf):
        # without a node from Flash, the node of every key at its deepest level (its top) first:
        # k-anonymous whenever the file has k records, it is a candidate however soon the time
        # budget ends the walk
        promoted.append(int(np.flatnonzero((nodes == nodes.max(axis=0)).all(axis=1))[0]))
    if promoted:
        order = np.r_[promoted, order[~np.isin(order, promoted)]]

    def least_left(stop: int) -> float:
        """The least recode-only loss of the nodes from position ``stop`` of the walk on."""
        return float(lower[order[stop:]].min()) if stop < len(order) else np.inf

    outcome, stop = walk(range(len(order)), use_bound=measure == "lambda_arctan" and not exhaustive)
    left = len(order) - stop
    loss_bound = np.nan
    if outcome == "budget":
        bound = (f"time budget: {left:,} of {len(nodes):,} nodes not evaluated after "
                 f"{walk_share * budget:.0f} CPU s (search.budget_seconds {budget:g})")
        if measure == "lambda_arctan":
            # the nodes are walked in the order of their recode-only loss, which suppression only raises
            loss_bound = least_left(stop)
            bound += f"; no node left has a loss below {loss_bound:.4g} (its recode-only loss)"
    elif outcome == "bound":
        bound = (f"loss bound: {left:,} nodes never evaluated, their recode-only loss (a lower bound "
                 f"of their loss) above {best_stricter:.4g}, the least loss meeting the stricter target "
                 f"(global risk <= {stricter_target:g})")
        loss_bound = least_left(stop)
    elif outcome == "cap":
        bound = (f"loss bound: {left:,} nodes never evaluated, their recode-only loss at least {cap:.4g}, the loss "
                 "of the wider lattice's plan")
        loss_bound = least_left(stop)
    else:
        bound = "none: every node evaluated" + (" or settled by its classes" if settled else "")
    if rolled is not None:
        bound += ("; each node's k-anonymity read from its classes, rolled up from the records counted once"
                  + (f"; {settled:,} nodes settled by their classes (not k-anonymous or above the risk target, "
                     "with no suppression allowed)" if settled else ""))
    else:
        bound += f"; {tagged:,} nodes tagged k-anonymous or not without a frequency check (predictive tagging)"
    if bound_note:
        bound += "; " + bound_note
    reaching = [c for c in candidates if c.reaches_target]
    front = pareto_front([c for c in reaching if c.loss <= best_stricter + 1e-12])
    say(f"front of {len(front)} candidates; confirming with the release checks")
    confirmed = _confirm(data, spec, space, front, wave, start, say)
    if not any(c.confirmed for c in confirmed) and search_clock() - start < budget:
        # the front fails a release check (linkage through the keys, say): coarser plans may pass
        before = evaluated
        if outcome == "bound":
            outcome, stop = walk(range(stop, len(order)), use_bound=False)
            left = len(order) - stop
            loss_bound = least_left(stop) if outcome == "budget" else np.nan
        beyond = sorted((c for c in candidates if c.reaches_target and c not in front), key=lambda c: c.loss)
        say(f"no front candidate passes the release checks: {len(beyond)} candidates beyond the front confirmed")
        confirmed += [c for c in _confirm(data, spec, space, beyond, wave, start, say) if c.checks]
        bound += (f"; as no front candidate passed the release checks, {evaluated - before:,} more nodes were then "
                  f"evaluated ({left:,} left unevaluated) and the candidates beyond the front confirmed in loss order")
    ranked, recommended, runner_up = _rank(confirmed)
    unevaluated = np.inf if outcome == "done" else least_left(stop) if measure == "lambda_arctan" else -np.inf
    proven = _proven(recommended, ranked, candidates, unevaluated)
    stricter = None
    meets = [c for c in ranked if c.confirmed and c.global_risk <= stricter_target]
    if meets:
        cheapest = min(meets, key=lambda c: c.loss)
        stricter = {"target": stricter_target, "loss": cheapest.loss, "plan": cheapest.plan.name}
    seconds, spent = time.perf_counter() - began, search_clock() - start
    say(f"done: {evaluated:,} of {len(nodes):,} nodes evaluated in {seconds:.1f} s; the plan is "
        + optimality(evaluated, len(nodes), proven, loss_bound) + _withheld_note(recommended))
    found = WaveSearch(
        candidates=tuple(candidates),
        front=tuple(ranked),
        recommended=recommended,
        runner_up=runner_up,
        stricter=stricter,
        nodes_total=len(nodes),
        nodes_evaluated=evaluated,
        exhaustive=outcome == "done",
        bound=bound,
        seconds=seconds,
        space={key: h.words() for key, h in full_space.items()},
        loss_bound=loss_bound,
        proven=proven,
    )
    left_seconds = budget - spent
    if recommended is not None or withhold or left_seconds <= 0:
        return found
    wider = search_space(data, spec, withhold=True)
    if all(len(wider[key].levels) == len(h.levels) for key, h in full_space.items()):
        return found  # no key has a top to add (none may be recoded, or each has one category)
    say("no plan of the keys' own levels passes the release checks: the search continues with each key's top "
        "(its categories released as one) in the lattice")
    # the wider lattice's plans go without suppression (a node's frequency check is then all its
    # evaluation needs, and the node with every key at its top is k-anonymous), but for the node
    # Flash finds with few records in classes smaller than k (``walk_suppresses``)
    again = _search_wave(data, replace(spec, search=replace(spec.search, budget_seconds=left_seconds)),
                         wave=wave, progress=progress, exhaustive=exhaustive, withhold=True, walk_suppression=False)
    return replace(again, seconds=time.perf_counter() - began, candidates=found.candidates + again.candidates,
                   bound=f"{again.bound}; searched again with each key's top after no plan of the "
                         f"{len(nodes):,} of the keys' own levels passed the release checks")


def _flash_node(lattice: _Lattice, rolled: _RolledCounts, nodes: np.ndarray, lower: np.ndarray,
                spec: SurveySpec, budget_seconds: float, report: Callable[[str], None], *,
                suppressible: int = 0) -> Outcome | None:
    """The node of least recode-only loss (``lower``, SPEC §9.1 measure (1); exact for a node that
    suppresses nothing) among the nodes that pass a check read from their classes; None when no time
    is left. The outcome's ``value`` is inf when no node passes.

    With ``suppressible`` 0 the check is the target by recoding alone: every class of at least
    ``risk.k`` records (SPEC §3.1), the global risk of the classes (SPEC §3.3) at most
    ``risk.max_global_risk`` and, when the spec asks it, every class l-diverse (SPEC §3.6,
    :func:`_records_below_l`). With ``suppressible`` s > 0 it is ARX's k-anonymity with record
    suppression (SPEC §14.2): the classes smaller than k hold at most s records, the ones local
    suppression has to treat; such a node is where local suppression is likely to stay within the
    suppression limit, and only its evaluation (the exact local suppression) tells.

    Found by ARX's Flash (:func:`sdc_dagster.search.flash.flash`; Kohlmayer et al. 2012, "Flash:
    efficient, stable and optimal k-anonymity", PASSAT 2012): each check is monotone along the
    lattice (merging classes never lowers a class's size nor its distinct sensitive values, so the
    records in classes smaller than k never grow; without weights the global risk is the number of
    classes over n, which merging never raises), so one check tags the cone of generalisations of a
    node passing it and the cone of specialisations of one failing it; each node's classes are
    rolled up from a counted specialisation (:class:`_RolledCounts`). With weights the
    Benedetti-Franconi risk is not proven monotone: the node is then the best found, not a proven
    optimum. ``nodes`` are numbered as :class:`~sdc_dagster.search.lattice.Lattice` numbers them
    (first key most significant); ``report(note)`` receives Flash's progress in words."""
    if budget_seconds <= 0 or not len(nodes):
        return None
    k, target = spec.risk.k, spec.risk.max_global_risk
    grid = Lattice(nodes.max(axis=0))

    def check(node: int) -> Check:
        levels = tuple(int(x) for x in nodes[node])
        classes = rolled.classes(levels)
        small = classes.counts < k
        below_k = int(classes.counts[small].sum())
        if below_k > suppressible:
            return Check(False, below_k, None, -np.inf)
        if not suppressible and rolled.global_risk(classes) > target * (1 + RISK_MARGIN):
            return Check(False, 0, None, -np.inf)
        if not suppressible and lattice.sensitive and _records_below_l(lattice, *lattice.digits(levels), spec):
            return Check(False, 0, None, -np.inf)
        # the value is the recode-only loss: exact without suppression, a lower bound with it
        return Check(True, 0, float(lower[node]), -np.inf)

    what = f"at most {suppressible:,} records in classes smaller than k" if suppressible else "the target by recoding alone"

    def progress(done: int, total: int, checked: int, best: float) -> None:
        report(f"Flash: {done:,} of {total:,} nodes settled, {checked:,} checked by their classes; least "
               f"recode-only loss with {what} so far {best:.4g}")

    return flash(grid, check, lower, unsuppressed_value=lambda prior: prior, counted_bounds=False,
                 budget_seconds=budget_seconds, progress=progress)


def _wider_cap(data: pd.DataFrame, spec: SurveySpec, budget_seconds: float, report: Callable[[str], None]) -> float:
    """The loss of :func:`_flash_node` over the wider lattice (each key's top in its chain,
    :func:`~sdc_dagster.search.space.search_space` with ``withhold``): the loss of a plan there that
    meets the target by recoding alone (the least such loss when Flash proves it), whose check was
    computed on that node's own classes; inf when none is found (or a key has a missing value, or no
    time is left)."""
    wider = _cut_space(search_space(data, spec, withhold=True))
    lattice = _Lattice(data, spec, wider)
    rolled = _RolledCounts.of(lattice)
    if rolled is None:
        return np.inf
    nodes = _nodes(wider)
    lower = np.zeros(len(nodes))
    for i, per_level in enumerate(_level_bounds(data, spec, lattice)):
        lower += per_level[nodes[:, i]]
    if not np.isfinite(lower).all():
        return np.inf
    found = _flash_node(lattice, rolled, nodes, lower, spec, budget_seconds, report)
    return found.value if found is not None else np.inf


def _proven(recommended: SearchCandidate | None, ranked: list[SearchCandidate],
            candidates: list[SearchCandidate], unevaluated: float) -> bool:
    """Whether the recommended plan has the least loss of every plan of the lattice meeting the
    target: no node left unevaluated can have less (``unevaluated``, the least recode-only loss of
    those nodes, which suppression and continuous steps only raise; inf when every node was
    settled), and every candidate meeting the target with less loss on its codes (a lower bound of
    its loss once confirmed) was run through the release checks and failed them."""
    if recommended is None or recommended.loss > unevaluated:
        return False
    tried = {c.levels for c in ranked if c.checks}
    return not any(c.reaches_target and c.loss < recommended.loss and c.levels not in tried for c in candidates)


def _risks(f: np.ndarray, F: np.ndarray, weight: str | None, k: int) -> tuple[int, pd.Series]:
    """k-anonymity violations (SPEC §3.1) and individual risks (SPEC §3.2) of keys with key
    frequencies (f, F) (:func:`~sdc_dagster.risk.risk_table`'s ``risk``)."""
    return int(np.count_nonzero(f < k)), pd.Series(risk_from_frequencies(f, F, weighted=weight is not None,
                                                                         weight=weight or "weight"), name="risk")


def _records_below_l(lattice: _Lattice, digits: np.ndarray, radices: np.ndarray, spec: SurveySpec) -> int:
    """Records whose key group (of the keys coded by ``digits``, a suppressed value a value of its
    own, as :func:`~sdc_dagster.risk.l_diversity` groups them) holds fewer than ``risk.l`` distinct
    values of a sensitive variable, or an entropy below log(l) when ``risk.l_diversity`` is
    "entropy" (SPEC §3.6, :func:`~sdc_dagster.protect.suppression.codes_below_l`; exp(entropy) never
    exceeds the distinct count, so the entropy rule implies the distinct one): the blocking
    l-diversity of the release checks. 0 when the spec asks none."""
    if not lattice.sensitive:
        return 0
    return int(codes_below_l(digits, radices, list(lattice.sensitive.values()), l=spec.risk.l,
                             entropy=spec.risk.l_diversity == "entropy").sum())


def _evaluate(data: pd.DataFrame, spec: SurveySpec, lattice: _Lattice, space: dict[str, KeyHierarchy],
              node: tuple[int, ...], is_anonymous: bool, recode_loss: float,
              checked: tuple[tuple[np.ndarray, np.ndarray], IncrementalCompatibleCounts] | None = None
              ) -> SearchCandidate:
    """A node's plan (without continuous step) and its risk and loss on the recoded keys;
    ``checked``: the node's key digits and radices and the counter of local suppression
    (:class:`~sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts`) that checked them, when
    the walk made them (not made again).

    A node that is not k-anonymous by recoding gets local suppression to k; one whose global risk is
    still above the target then gets risk-based suppression (SPEC §8.3) at the individual-risk
    threshold that brings the global risk under the target (sdcMicro's ``measure_threshold``, the
    mu-Argus rule, :func:`sdc_dagster.risk.global_risk_threshold`): without sampling weights a 1 %
    target asks for far more than 3-anonymity (the risk of a record is 1/f_k).

    Everything runs on the keys' codes (:meth:`_Lattice.digits`): local suppression by
    :func:`~sdc_dagster.protect.suppression.suppress_codes_to_k` and the frequencies of the
    suppressed keys by :func:`~sdc_dagster.risk.frequencies.digit_key_frequencies` after the codes are
    renumbered as :func:`~sdc_dagster.keys.key_digits` numbers the released keys (so every count
    is the one the release's own checks compute); without weights, the counts of local
    suppression's counter are those counts already. Only risk-based suppression takes a frame."""
    k, target = spec.risk.k, spec.risk.max_global_risk
    keys = lattice.keys
    suppression: list[dict] = []
    allowed = "local_suppression" in spec.search.methods
    violations, risks, suppressed, digits = 0, pd.Series([0.0]), 0, None
    if keys:
        recoded, radices = checked[0] if checked is not None else lattice.digits(node)
        digits, counter = recoded, checked[1] if checked is not None else None
        if not is_anonymous:
            suppression.append(_suppression_step(k))
            counter = counter or IncrementalCompatibleCounts(recoded, radices)
            digits, method = suppress_codes_to_k(recoded, radices, k=k, counter=counter)
            counter = counter if method == "greedy" else None  # else it does not hold the result
        if counter is not None and lattice.weights is None:
            # without weights F = f, and the counter's whole counts are DuckDB's: not queried again
            f = counter.record_counts()[0]
            violations, risks = _risks(f, f, None, k)
        else:  # in DuckDB, the codes numbered as key_digits numbers the released keys
            violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits) if suppression else
                                                            (digits, radices)), lattice.weight, k)
    threshold = None
    if keys and allowed and violations == 0 and risks.mean() > target:
        # 0 when no risk level brings the global risk under the target (e.g. all risks equal): then
        # no record may keep a risk above the target itself
        threshold = risk.global_risk_threshold(risks, max_global_risk=target).threshold or target
    if threshold:
        step = {"method": "risk_suppression", "threshold": float(threshold),
                **({"weight": lattice.weight} if lattice.weight else {})}
        suppression.append(step)
        frame = risk_suppression(lattice.frame(node, digits), keys, threshold=step["threshold"], weight=lattice.weight)
        digits = np.where(frame[keys].isna().to_numpy(), 0, digits)
        violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits)), lattice.weight, k)
    if keys and allowed and lattice.sensitive:
        # the records of key groups that are not l-diverse lose every key value (ARX's record
        # suppression; the suppression limit bounds how many)
        below = codes_below_l(digits, radices, list(lattice.sensitive.values()), l=spec.risk.l,
                              entropy=spec.risk.l_diversity == "entropy")
        if below.any():
            step = {"method": "diversity_suppression", "sensitive": list(lattice.sensitive), "l": spec.risk.l,
                    **({"entropy": True} if spec.risk.l_diversity == "entropy" else {})}
            suppression.append(step)
            try:  # the pool of suppressed records made l-diverse too
                digits = suppress_codes_to_l(digits, radices, lattice.sensitive, l=spec.risk.l,
                                             entropy=spec.risk.l_diversity == "entropy")
            except SDCInputError:  # l unreachable in the whole file: the node fails the l check
                digits = digits.copy()
                digits[below] = 0
            violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits)), lattice.weight, k)
    changed = []  # the keys the node releases changed: recoded, or with a value suppressed
    below_l, suppressed_share = 0, 0.0
    if keys:
        hidden = (digits == 0) & (recoded > 0)
        suppressed = int(np.count_nonzero(hidden))
        suppressed_share = float((hidden.sum(axis=0) / np.maximum((recoded > 0).sum(axis=0), 1)).max())
        below_l = _records_below_l(lattice, digits, radices, spec)
        changed = [key for key, level, hit in zip(keys, node, hidden.any(axis=0)) if level > 0 or hit]
    if suppressed or spec.search.loss == "topsis":
        released = data.copy(deep=False)
        for key, values in (lattice.released(node, digits) if keys else {}).items():
            if key in changed:
                released[key] = values
        loss = _search_loss(data, released, spec, unchanged=[c for c in data.columns if c not in changed])
    else:
        loss = recode_loss
    global_risk = float(risks.mean())
    plan = _node_plan(space, node, suppression, k, None, "node_" + "_".join(map(str, node)))
    return SearchCandidate(
        plan=plan, global_risk=global_risk, k_violations=violations, linkage_risk=np.nan, loss=float(loss),
        suppressed=suppressed, levels=node, l_violations=below_l, suppressed_share=suppressed_share,
        reaches_target=(violations == 0 and global_risk <= target and below_l == 0
                        and suppressed_share <= spec.limits.max_suppressed_share + 1e-12),
    )


def _search_loss(data: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, *,
                 unchanged: Sequence[str] = ()) -> float:
    """The spec's search loss of a variant: :func:`~sdc_dagster.pipeline.evaluation.headline_loss`'s
    ``lambda_arctan`` (a withheld key counted as total loss of it, as there) or ``topsis_mean``, only
    that figure computed (``unchanged``: as there); NaN where it is not applicable."""
    topsis = spec.search.loss == "topsis"
    figures = headline_loss(data, protected, spec, unchanged=unchanged, topsis=topsis)
    return float(figures.get("topsis_mean" if topsis else "lambda_arctan", np.nan))


def _weakest_passing(chain: list, run: Callable, over_budget: Callable[[], bool],
                     finish: Callable) -> SearchCandidate:
    """The weakest step of one method's chain (weakest first) whose plan passes the risk checks (every
    blocking release check but the utility limits, :func:`_passes_risk_checks`), found by bisection
    on the assumption that a stronger step of the same method passes them when a weaker one does (a
    larger microaggregation k, swap window or noise); the strongest step's failing candidate when
    none passes (the middle step's when the time budget ends before the strongest is run). The step
    returned may still fail a utility limit (a stronger one would lose more): then no step of the
    chain passes both, and :func:`_confirm` tries the next method.

    The bisection starts at the middle step: when it passes, the strongest step passes too (by that
    assumption) and is not run; only when it fails is the strongest step run, to learn whether any
    step passes. ``run(step)`` gives an attempt's candidate with its release checks and its protected
    data; ``finish(candidate, protected)`` the candidate with its loss. Only the attempt returned
    needs its loss (the others are superseded), so only its protected data is kept and only it is
    finished."""
    results, kept = {}, {}

    def attempt(i):
        if i not in results:
            results[i], kept[i] = run(chain[i])
        return results[i]

    def keep_only(i):
        for j in [j for j in kept if j != i]:
            del kept[j]

    failing, passing = -1, len(chain) - 1
    if passing > 0:
        middle = (failing + passing) // 2
        if _passes_risk_checks(attempt(middle)):
            passing = middle
        else:
            failing = middle
    if passing == len(chain) - 1:
        if failing >= 0 and over_budget():
            return finish(results[failing], kept[failing])
        kept.clear()  # the failing middle is not returned now
        if not _passes_risk_checks(attempt(passing)):
            return finish(results[passing], kept[passing])
    keep_only(passing)
    while passing - failing > 1 and not over_budget():
        middle = (failing + passing) // 2
        if _passes_risk_checks(attempt(middle)):
            passing = middle
        else:
            failing = middle
        keep_only(passing)
    return finish(results[passing], kept[passing])


def _passes_risk_checks(candidate: SearchCandidate) -> bool:
    """Whether a candidate's release checks ran and none failed but the utility limits: what a
    stronger step of one method keeps passing. The utility limits go the other way (a stronger step
    loses more), so the weakest step passing the risk checks is the one that can also pass them."""
    return bool(candidate.checks) and not set(blocking_failures(candidate.checks)) - set(UTILITY_CHECKS)


def _confirm(data, spec, space, front, wave, start, say):
    """Run front candidates as plans with the continuous keys' ladder (module docstring; per chain
    the weakest rung that passes, :func:`_weakest_passing`, the chains in the order of
    :func:`~sdc_dagster.search.space.continuous_steps`; when only the linkage check fails, local
    suppression to a larger k with microaggregation, :func:`_stronger_suppressions`; withholding
    continuous keys last) through the release checks, in loss
    order, until the recommendation, the runner-up and the cheapest candidate meeting the stricter
    target are certain (a candidate's loss before the continuous step is a lower bound of its loss
    after it), or the time budget ends.

    Every candidate runs under the name :data:`SEARCHED_PLAN`: the seeds of random steps derive from
    the plan's name, so the recommended plan is checked exactly as it will be released. The attempts
    of one candidate differ in their last step (the continuous one) only: its recodes and suppression
    are protected once, and each attempt continues from them (``protect``'s ``applied``)."""
    rungs = continuous_steps(data, spec)
    chains = [[r for r in rungs if r.method == m] for m in dict.fromkeys(r.method for r in rungs)]
    # withholding a key is the last resort, after stronger suppression of the categorical keys
    withholding = [c for c in chains if c[0].method == "remove_variables"]
    ordinary = [c for c in chains if c[0].method != "remove_variables"] or ([] if withholding else [[None]])
    aggregating = [c for c in chains if c[0].method.startswith("microaggregation")] or ordinary
    confirmed, passed = [], []
    stricter_target = spec.risk.max_global_risk / 2
    stricter_done = False

    last_run = [0.0]  # CPU seconds of the last plan run: the next is not started unless twice that fits the budget

    def over_budget() -> bool:
        return search_clock() - start + 2 * last_run[0] > spec.search.budget_seconds

    def finish(candidate: SearchCandidate, protected: PlanResult) -> SearchCandidate:
        return replace(candidate, loss=_search_loss(data, protected.data, spec), protected=protected)

    for candidate in front:
        needed = len(passed) < 2 or candidate.loss <= passed[1].loss
        if over_budget() or (not needed and (stricter_done or candidate.global_risk > stricter_target)):
            confirmed.append(candidate)  # cannot be recommended, runner-up nor the stricter plan, or no time
            continue
        suppression = [s for s in candidate.plan.steps
                       if s["method"] in ("local_suppression", "risk_suppression", "diversity_suppression")]
        prefixes = {}  # the candidate's protection without its continuous step, of the ladder tried now

        def run(option, candidate=candidate, suppression=suppression, prefixes=prefixes):
            began = search_clock()
            plan = _node_plan(space, candidate.levels, suppression, spec.risk.k, option, SEARCHED_PLAN)
            applied = None
            if option is not None:  # the attempts differ in the continuous step, the plan's last
                ladder = json.dumps(suppression)
                if ladder not in prefixes:  # a ladder is not tried again once the next one is
                    prefixes.clear()
                    prefixes[ladder] = protect(data, spec, replace(plan, steps=plan.steps[:-len(option.steps)]),
                                               wave=wave)
                applied = prefixes[ladder]
            protected = protect(data, spec, plan, wave=wave, applied=applied)
            checks = release_checks(protected.data, spec, plan, original=data)
            linkage = checks["linkage_risk"].value if "linkage_risk" in checks else np.nan
            found = checks["global_risk"].value if "global_risk" in checks else None
            last_run[0] = search_clock() - began
            return replace(candidate, plan=plan, checks=checks,
                           linkage_risk=float(linkage) if isinstance(linkage, (int, float)) else np.nan,
                           global_risk=float(found) if isinstance(found, (int, float)) else candidate.global_risk
                           ), protected

        def climb(chains, ladder=suppression, run=run):
            """The first chain's weakest rung that confirms (the last attempt's candidate when none)."""
            result = candidate
            for chain in chains:
                if over_budget():
                    break
                result = _weakest_passing(chain, lambda option: run(option, suppression=ladder), over_budget, finish)
                if result.confirmed:
                    break
            return result

        result = climb(ordinary)
        for stronger in ([] if result.confirmed else _stronger_suppressions(spec, result, len(data))):
            # records alone in their released key combination keep their amounts whatever the
            # continuous step, and Gower linkage finds them through the keys: suppress to a larger k
            # (with microaggregation) before any key is withheld
            if over_budget():
                break
            result = climb(aggregating, [stronger, *(s for s in suppression if s["method"] != "local_suppression")])
            if result.confirmed:
                break
        if not result.confirmed and withholding and not over_budget():
            result = climb(withholding)
        failures = blocking_failures(result.checks) if result.checks else {"not run": "time budget"}
        say(f"{candidate.plan.name}: " + (f"passes the release checks, loss {result.loss:.4g}{_withheld_note(result)}"
                                          if result.confirmed else f"fails {', '.join(failures)}"))
        confirmed.append(result)
        if result.confirmed:
            passed = sorted(passed + [result], key=lambda c: c.loss)
            stricter_done = stricter_done or result.global_risk <= stricter_target
    return confirmed


#: The local-suppression k tried, as multiples of the target k, when a candidate fails the linkage
#: check only (:func:`_stronger_suppressions`).
SUPPRESSION_LADDER = (2, 3, 4)


def _stronger_suppressions(spec: SurveySpec, result: SearchCandidate, records: int) -> list[dict]:
    """Local suppression to 2k, 3k, 4k (:data:`SUPPRESSION_LADDER`), never beyond the ``records`` of
    the wave (n-anonymity, every key suppressed, is the most a file of n records allows), for a
    candidate whose only failed blocking risk check is ``linkage_risk`` (utility limits aside) on a
    spec with categorical keys and local suppression allowed; nothing otherwise."""
    failed = set(blocking_failures(result.checks)) - set(UTILITY_CHECKS) if result.checks else set()
    if failed != {"linkage_risk"} or not spec.categorical_keys or "local_suppression" not in spec.search.methods:
        return []
    ks = dict.fromkeys(min(factor * spec.risk.k, records) for factor in SUPPRESSION_LADDER)
    return [_suppression_step(k) for k in ks if k > spec.risk.k]


def _rank(confirmed: list[SearchCandidate]) -> tuple[list[SearchCandidate], SearchCandidate | None,
                                                     SearchCandidate | None]:
    """The candidates passing the release checks first (by loss), then the others; the first passing
    one is named :data:`SEARCHED_PLAN`, the others ``searched_2``, ...; (all, recommended, runner-up)."""
    ranked = sorted(confirmed, key=lambda c: (not c.confirmed, c.loss))
    ranked = [replace(c, plan=replace(c.plan, name=SEARCHED_PLAN if i == 0 and c.confirmed else f"{SEARCHED_PLAN}_{i + 1}"),
                      protected=c.protected if i == 0 else None)  # only the plan released may be needed
              for i, c in enumerate(ranked)]
    passing = [c for c in ranked if c.confirmed]
    return ranked, (passing[0] if passing else None), (passing[1] if len(passing) > 1 else None)


def _chosen(found: WaveSearch) -> SearchCandidate | None:  # plan_to_release says which
    fallback = found.front[:1] or sorted(found.candidates, key=lambda c: (c.global_risk, c.loss))[:1]
    return found.recommended or (fallback[0] if fallback else None)


def plan_to_release(found: WaveSearch, spec: SurveySpec) -> Plan:
    """The plan the pipeline materialises as the searched variant (``protected_searched``), named
    :data:`SEARCHED_PLAN`: the recommended candidate; when none passes the release checks, the
    front's first (the least loss meeting the target) or else the evaluated candidate of least
    global risk, so that its release checks say why it is withheld; with no candidate, no step."""
    chosen = _chosen(found)
    if chosen is None:
        return Plan(name=SEARCHED_PLAN, steps=(), k=spec.risk.k, random_state=SEARCH_SEED,
                    description="plan search: no candidate evaluated within the budget")
    return replace(chosen.plan, name=SEARCHED_PLAN)


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class PlanSearch:
    """A wave's search as the pipeline passes it on: ``front`` (:meth:`WaveSearch.front_frame`),
    ``summary`` (:func:`search_summary`), the ``plan`` to release (:func:`plan_to_release`) and its
    release checks when the search ran them (None otherwise): candidates are confirmed under the
    name :data:`SEARCHED_PLAN`, whose seeds the released plan keeps; ``protected``: the plan's
    protection when the search made it (None otherwise), so that it is not made again; ``found``:
    the finished search, which the release stage asks what it would take when the wave releases
    nothing (:func:`sdc_dagster.pipeline.relaxations.what_it_would_take`); ``advice``: that answer
    (:meth:`sdc_dagster.pipeline.relaxations.WhatItWouldTake.record`), set by the release stage,
    None otherwise."""

    front: pd.DataFrame
    summary: dict
    plan: Plan
    checks: dict[str, CheckOutcome] | None
    protected: PlanResult | None = None
    advice: dict | None = None
    found: WaveSearch | None = field(default=None, repr=False)

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python."""
        plan = {**vars(self.plan), "steps": json.dumps(list(self.plan.steps))}
        return {"front": self.front, "summary": pd.DataFrame([self.summary]), "plan": pd.DataFrame([plan])}


def plan_search(found: WaveSearch, spec: SurveySpec) -> PlanSearch:  # the PlanSearch of a finished search
    chosen = _chosen(found)
    checks = dict(chosen.checks) if chosen is not None and chosen.checks else None
    return PlanSearch(front=found.front_frame(), summary=search_summary(found), plan=plan_to_release(found, spec),
                      checks=checks, protected=chosen.protected if chosen is not None else None, found=found)


def optimality(nodes_evaluated: int, nodes_total: int, exhaustive: bool, loss_bound: float = float("nan")) -> str:
    """Whether the searched plan is proven best over the space, in words: "optimal over N plans" when
    the search proved it (``exhaustive``: :attr:`WaveSearch.proven`), else "best of N checked" (of
    the space's ``nodes_total``), with the least loss a plan left unchecked can have when known
    (``loss_bound``, "bound B"): a plan the search did not evaluate might have been better."""
    if exhaustive:
        return f"optimal over {nodes_total:,} plans"
    bound = "" if np.isnan(loss_bound) else f", bound {loss_bound:.4g}"
    return f"best of {nodes_evaluated:,} checked (of {nodes_total:,} plans{bound})"


def withheld_keys(candidate: SearchCandidate | None) -> list[str]:
    """The keys a candidate's plan does not release at all (its ``remove_variables`` steps: the
    continuous ladder's last rung)."""
    if candidate is None:
        return []
    return [key for step in candidate.plan.steps if step["method"] == "remove_variables" for key in step["variables"]]


def _withheld_note(candidate: SearchCandidate | None) -> str:
    """"; income, assets, debts not released" when the plan withholds keys, else ""."""
    keys = withheld_keys(candidate)
    return f"; {', '.join(keys)} not released" if keys else ""


def search_summary(found: WaveSearch) -> dict:
    """The search in figures, as the report and the asset's metadata show it: nodes evaluated of the
    lattice, exhaustive or how it was cut (``bound``), whether its plan is proven optimal in words
    (``optimality``, :func:`optimality`), seconds, the recommended plan and the
    runner-up in words with their loss, the keys the recommended plan does not release at all
    (``withheld``, :func:`withheld_keys` joined by ", "; "" when it releases every key), and what half the global-risk target would cost in loss
    (``stricter_target``, ``stricter_loss``; NaN when no evaluated plan meets it)."""
    def described(candidate: SearchCandidate | None) -> tuple[str, float]:
        return (candidate.plan.description, candidate.loss) if candidate else ("", float("nan"))

    recommended, recommended_loss = described(found.recommended)
    runner_up, runner_up_loss = described(found.runner_up)
    stricter = found.stricter or {}
    return {"nodes_evaluated": found.nodes_evaluated, "nodes_total": found.nodes_total,
            "exhaustive": found.exhaustive, "bound": found.bound, "seconds": found.seconds,
            "optimality": optimality(found.nodes_evaluated, found.nodes_total, found.proven, found.loss_bound),
            "loss_bound": found.loss_bound,
            "recommended": recommended, "recommended_loss": recommended_loss,
            "runner_up": runner_up, "runner_up_loss": runner_up_loss,
            "withheld": ", ".join(withheld_keys(found.recommended)),
            "stricter_target": float(stricter.get("target", float("nan"))),
            "stricter_loss": float(stricter.get("loss", float("nan")))}
