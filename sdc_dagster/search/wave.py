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

   * *rolled-up classes* (ARX's roll-up on integer codes,
     :class:`~sdc_dagster.search.coded.RolledCounts`): where no key has
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

   * *Flash first* (ARX's Flash on those rolled-up classes,
     :func:`~sdc_dagster.search.nodes.flash_node`): before the walk,
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
   time budget (``search.budget_seconds``) stops it early, and the result says so (``exhaustive``,
   ``bound``, and ``loss_bound``: the least loss a node left unevaluated can have). ``proven`` says
   whether the recommended plan is proven the least loss of the lattice's plans meeting the target
   (:func:`_proven`: no node left unevaluated nor candidate left unconfirmed can have less).
   The budget is spent by fixed charges, never by reading a clock (:mod:`sdc_dagster.search.clock`):
   per node the walk visits (:func:`~sdc_dagster.search.clock.node_charge`: the wave's records and
   keys times a rate for what the walk does to the node), per node Flash checks
   (:func:`~sdc_dagster.search.clock.flash_check_charge`) and per plan the confirmation runs
   (:func:`~sdc_dagster.search.clock.plan_run_charge`), so a search the budget cuts takes the same
   nodes and runs the same plans run to run and with any number of worker processes, the walk
   again after the front failed and the search again with each key's top included (their budgets
   are what the charges left). The CPU seconds of the process stop a stage only as a guard
   (:data:`~sdc_dagster.search.clock.OVERRUN` times its budget), and ``bound`` then says so.
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
   (:func:`~sdc_dagster.search.outcome.optimality`), else "best of N checked".
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from sdc_dagster.search.front import pareto_front
from sdc_dagster.search.clock import OVERRUN
from sdc_dagster.search.flash import Outcome
from sdc_dagster.search.space import KeyHierarchy, search_space
from sdc_dagster.spec import SEARCHED_PLAN, SurveySpec
from sdc_dagster.validation import check_records_for_k
from sdc_dagster.search.candidates import SearchCandidate, withheld_note
from sdc_dagster.search.coded import cut_space
from sdc_dagster.search.ladder import confirm_front
from sdc_dagster.search.nodes import flash_node, wider_cap
from sdc_dagster.search.outcome import WaveSearch, optimality
from sdc_dagster.search.walk import LATTICE_SHARE, LatticeWalk, Progress


#: Share of the time budget the walk of the keys' own levels may use when local suppression is
#: allowed but Flash found no node whose classes smaller than k hold few enough records for the
#: suppression limit (so every node needs much suppression): the rest goes to the wider lattice.
HOPELESS_SHARE = 0.1

#: Losses closer than this are equal (sums of the same per-value distances in another order).
LOSS_TIE = 1e-12

#: How :func:`progress_line` begins (``sdc run`` shows the lines of the Dagster log that begin so).
PROGRESS_PREFIX = "plan search: "


def progress_line(done: int, total: int, note: str) -> str:
    """A progress report of :func:`search_wave` as one line of text, for the console and the
    Dagster log: "plan search: 120 of 1,200 nodes (10 %); best so far: ..."."""
    percent = 100.0 * done / total if total else 100.0
    return f"{PROGRESS_PREFIX}{done:,} of {total:,} nodes ({percent:.0f} %); {note}"


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
    progress : a plain callback ``progress(done, total, note)`` (:data:`~sdc_dagster.search.walk.Progress`) of the lattice
        walk: ``done`` of the ``total`` nodes settled (evaluated, tagged, or, once the loss bound
        stops the walk, all the nodes it rules out) and a note with the best candidate so far
        (its loss and global risk) or the stage the search is in. Called when the walk starts,
        every :data:`~sdc_dagster.search.walk.PROGRESS_SHARE` of the nodes or :data:`~sdc_dagster.search.walk.PROGRESS_SECONDS` seconds, whichever
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
        :func:`~sdc_dagster.search.nodes.flash_node`) is evaluated with it. The least-loss node meeting the target by
        recoding alone (Flash again) is walked first, or without one the node of every key at its
        top: that lattice holds a
        k-anonymous plan (every key at its top), so the target is out of reach only through the
        global risk of a file of fewer than 1 / max_global_risk records without weights,
        l-diversity or a continuous key's limits.

    Returns
    -------
    :class:`~sdc_dagster.search.outcome.WaveSearch`.

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
    began = time.perf_counter()  # the wall clock, reported only
    full_space = search_space(data, spec, withhold=withhold)
    space = cut_space(full_space)
    w = LatticeWalk.of(data, spec, space, progress or (lambda done, total, note: None), exhaustive, walk_suppression)
    w.say(f"the lattice of {spec.survey} {wave}".rstrip() + f": {len(w.nodes):,} nodes over {len(space)} keys")
    bound_note = _flash_first(w, withhold)
    outcome, stop = w.walk(range(len(w.order)), use_bound=spec.search.loss == "lambda_arctan" and not exhaustive)
    bound, loss_bound = _bound_words(w, outcome, stop, bound_note)
    confirmed, outcome, stop, bound, loss_bound = _confirm_walked(w, outcome, stop, bound, loss_bound, wave)
    found, spent = _result(w, confirmed, outcome, stop, bound, loss_bound, full_space, began)
    left_seconds = w.budget - spent
    if withhold or left_seconds <= 0:
        return found
    if found.recommended is None:
        return _search_wider(w, found, full_space, wave=wave, progress=progress, left_seconds=left_seconds, began=began)
    return _exhaustive_against_wider(w, found, full_space, wave=wave, progress=progress, left_seconds=left_seconds,
                                     began=began)


def _exhaustive_against_wider(w: LatticeWalk, found: WaveSearch, full_space: dict[str, KeyHierarchy], *,
                              wave: str, progress: Progress | None, left_seconds: float, began: float) -> WaveSearch:
    """The search that evaluates every node (``exhaustive``) weighed as the walk is: when no node of
    the keys' own levels meets the target by recoding alone, the walk is capped at the wider
    lattice's least loss by recoding alone (:func:`_flash_by_recoding`, each key's top in its chain),
    so a plan of the keys' own levels costlier than that cap is never its answer and the wider
    lattice's plan is. Evaluating every node, the same plan of the wider lattice competes: searched
    when the recommended plan's loss exceeds the cap, and the lesser loss recommended. ``found``
    when the walk was not exhaustive (its cap already did this) or a plan meets the target by
    recoding alone."""
    if not w.exhaustive or any(c.reaches_target and c.suppressed == 0 for c in found.candidates):
        return found
    cap, flashed = wider_cap(w.data, w.spec, LATTICE_SHARE * left_seconds, w.say)
    if flashed is not None:  # Flash's checks, charged
        left_seconds -= flashed.charged
        found = replace(found, charged=found.charged + flashed.charged)
    if not found.recommended.loss > cap + LOSS_TIE or left_seconds <= 0:
        return found
    wider = _search_wider(w, found, full_space, wave=wave, progress=progress, left_seconds=left_seconds, began=began)
    if wider.recommended is None or not wider.recommended.loss < found.recommended.loss - LOSS_TIE:
        return found
    return wider


def _flash_first(w: LatticeWalk, withhold: bool) -> str:
    """Flash before the walk (module docstring; predictive tagging on classes rolled up from integer
    codes, :func:`~sdc_dagster.search.nodes.flash_node`): the least-loss node meeting the target by
    recoding alone, and with local suppression the least-loss node whose classes smaller than k
    hold few enough records for the suppression limit; both evaluated first (``promoted``), so
    that a plan keeping the detail Flash found is a candidate however soon the time budget ends the
    walk. Sets the walk's promoted and skipped nodes, its cap and its share of the budget; returns
    what Flash found, in words."""
    flashed, bound_note, nodes = None, "", w.nodes
    if w.rolled is not None and not w.exhaustive and w.bounded:
        flashed = flash_node(w.lattice, w.rolled, nodes, w.lower, w.spec,
                             LATTICE_SHARE * w.budget - w.elapsed(), w.say)
        w.charge_flash(flashed)
    if flashed is not None:
        bound_note = _flash_by_recoding(w, flashed, withhold)
    if w.rolled is not None and w.bounded and w.suppress_allowed:
        bound_note += _flash_suppressible(w, withhold)
    if withhold and not w.promoted and len(nodes) > 1 and (flashed is None or not flashed.value < np.inf):
        # without a node from Flash, the node of every key at its deepest level (its top) first:
        # k-anonymous whenever the file has k records, it is a candidate however soon the time
        # budget ends the walk
        w.promoted.append(int(np.flatnonzero((nodes == nodes.max(axis=0)).all(axis=1))[0]))
    if w.promoted:
        w.order = np.r_[w.promoted, w.order[~np.isin(w.order, w.promoted)]]
    return bound_note


def _flash_by_recoding(w: LatticeWalk, flashed: Outcome, withhold: bool) -> str:
    """The walk after Flash's least-loss node meeting the target by recoding alone: started at it
    when Flash proves it and nothing may be suppressed (the global risk is monotone along the
    lattice only without weights), else the node promoted; without one, the walk capped at the
    wider lattice's loss by recoding alone (:func:`~sdc_dagster.search.nodes.wider_cap`)."""
    proven_flash = w.lattice.weights is None  # the global risk is monotone along the lattice without weights
    found_note = ("none" if not flashed.value < np.inf else
                  f"{'proven' if flashed.optimal and proven_flash else 'best found'}: {_node_words(w, flashed.node)}, "
                  f"loss {flashed.value:.4g}")
    bound_note = (f"Flash checked {flashed.checked:,} of {len(w.nodes):,} plans by the counts of their key "
                  f"combinations (summed up from finer levels, not recounted) for the least-loss plan meeting the "
                  f"target by recoding alone: {found_note}")
    if flashed.optimal and proven_flash and not w.walk_suppresses:
        # proven: every node of a lower recode-only loss fails the target by recoding alone (all of
        # them when none meets it), and nothing may be suppressed: the walk starts at the first node
        # of Flash's loss. Not at Flash's node itself: among nodes of equal loss Flash breaks ties by
        # node number, the walk by fewer levels, and a node of equal loss may have less risk (a
        # front point); ties are common where keys released as one category each lose all their values
        w.skipped = int(np.searchsorted(w.lower[w.order], flashed.value, side="left"))
        w.settled += w.skipped
        w.order = w.order[w.skipped:]
    elif flashed.value < np.inf:
        w.promoted.append(flashed.node)
    elif not withhold:
        # no node found meeting the target by recoding alone; the wider lattice (each key's top
        # in its chain, searched next when nothing here passes) has a plan without suppression:
        # a node here whose recode-only loss reaches that plan's loss cannot have less loss
        w.cap, capped = wider_cap(w.data, w.spec, LATTICE_SHARE * w.budget - w.elapsed(), w.say)
        w.charge_flash(capped)
        if w.cap < np.inf:
            bound_note += (f"; with each key's top in its chain a plan meets the target by recoding alone "
                           f"with loss {w.cap:.4g}: only nodes of a lower recode-only loss are evaluated")
    return bound_note


def _flash_suppressible(w: LatticeWalk, withhold: bool) -> str:
    """Flash's least-loss node whose classes smaller than k hold at most ``limits.max_suppressed_share``
    of the records (ARX's record suppression, SPEC §14.2), promoted; when Flash proves there is none,
    the walk gets :data:`HOPELESS_SHARE` of the budget. Also when ``exhaustive``: with each key's top
    in the lattice this node is the one the walk evaluates with local suppression, so the
    exhaustive search has it too. Returns what Flash found, in words ("" or "; ...")."""
    bound_note = ""
    limit = int(w.spec.limits.max_suppressed_share * len(w.data))
    suppressible = flash_node(w.lattice, w.rolled, w.nodes, w.lower, w.spec,
                              LATTICE_SHARE * w.budget - w.elapsed(), w.say, suppressible=limit)
    w.charge_flash(suppressible)
    if (suppressible is not None and suppressible.optimal and not suppressible.value < np.inf and not withhold
            and not w.exhaustive):
        # proven: every node has more records in classes smaller than k than the limit
        w.walk_share = min(w.walk_share, HOPELESS_SHARE)
        bound_note += (f"; every node has more than {limit:,} records (max_suppressed_share of the records) in "
                       f"classes smaller than k: the walk had {w.walk_share:.0%} of the budget, the rest went to the "
                       "lattice with each key's top")
    if (suppressible is not None and suppressible.value < w.cap
            and suppressible.node not in w.promoted):
        w.promoted.append(suppressible.node)
        bound_note += (f"; the least-loss node whose classes smaller than k hold at most {limit:,} records "
                       f"(max_suppressed_share of the records), {_node_words(w, suppressible.node)}, evaluated first")
    return bound_note


def _node_words(w: LatticeWalk, node: int) -> str:
    """A node of the lattice in the report's words: the keys it recodes and to which level of their
    chain (the search space's table lists each level in words), never its internal id."""
    recoded = [f"{key} at level {int(level)}" for key, level in zip(w.lattice.keys, w.nodes[node]) if level]
    return "the plan with " + ", ".join(recoded) if recoded else "the plan recoding no key"


def _bound_words(w: LatticeWalk, outcome: str, stop: int, bound_note: str) -> tuple[str, float]:
    """How the walk was cut, in words (``WaveSearch.bound``), and the least loss a node left
    unevaluated can have (``loss_bound``: its recode-only loss, which suppression only raises; NaN
    when every node was settled or the loss has no per-level bound)."""
    left, nodes, budget, measure = len(w.order) - stop, len(w.nodes), w.budget, w.spec.search.loss
    loss_bound = np.nan
    if outcome == "budget":
        bound = (f"time budget: {left:,} of {nodes:,} nodes not evaluated after "
                 + (f"{w.guard_seconds:.3g} CPU s, {OVERRUN:g} times the walk's share of the "
                    f"budget (search.budget_seconds {budget:g}), more than the nodes were charged"
                    if w.overrun else
                    f"{w.charged:.3g} s charged to the nodes visited, over the walk's share of {w.allowance:.3g} s "
                    f"(search.budget_seconds {budget:g}; a node's charge is fixed by the records, the keys and "
                    "what the walk does to it, so the same nodes are taken whatever the timing and the workers)"))
        if measure == "lambda_arctan":
            # the nodes are walked in the order of their recode-only loss, which suppression only raises
            loss_bound = w.least_left(stop)
            bound += f"; no node left has a loss below {loss_bound:.4g} (its recode-only loss)"
    elif outcome == "bound":
        bound = (f"loss bound: {left:,} nodes never evaluated, their recode-only loss (a lower bound "
                 f"of their loss) above {w.best_stricter:.4g}, the least loss meeting the stricter target "
                 f"(global risk <= {w.stricter_target:g})")
        loss_bound = w.least_left(stop)
    elif outcome == "cap":
        bound = (f"loss bound: {left:,} nodes never evaluated, their recode-only loss at least {w.cap:.4g}, the "
                 "loss of the wider lattice's plan")
        loss_bound = w.least_left(stop)
    else:
        bound = "none: every node evaluated" + (" or settled by its classes" if w.settled else "")
    if w.rolled is not None:
        bound += ("; each node's k-anonymity read from its classes, rolled up from the records counted once"
                  + (f"; {w.settled:,} nodes settled by their classes (not k-anonymous or above the risk target, "
                     "with no suppression allowed)" if w.settled else ""))
    else:
        bound += f"; {w.tagged:,} nodes tagged k-anonymous or not without a frequency check (predictive tagging)"
    bound += _priced_words(w.candidates)
    if bound_note:
        bound += "; " + bound_note
    return bound, loss_bound


def _priced_words(candidates: list[SearchCandidate]) -> str:
    """How the walk's local suppression was priced, in words ("" when no node needed it): exactly
    from each node's classes (:mod:`~sdc_dagster.search.pricing`), or run on the records (more keys
    than the greedy prices alone)."""
    by_classes = sum(c.suppression_priced == "classes" for c in candidates)
    by_records = sum(c.suppression_priced == "records" for c in candidates)
    words = []
    if by_classes:
        words.append(f"local suppression of {by_classes:,} nodes priced exactly from their classes (frequency tables)")
    if by_records:
        words.append(f"local suppression of {by_records:,} nodes run on the records (more than 8 keys: sdcMicro's "
                     "algorithm visits records one by one, so the classes give only a bound)")
    return "".join("; " + w for w in words)


def _confirm_walked(w: LatticeWalk, outcome: str, stop: int, bound: str, loss_bound: float,
                    wave: str) -> tuple[list[SearchCandidate], str, int, str, float]:
    """The front of the walk's candidates meeting the target (:func:`~sdc_dagster.search.front.pareto_front`,
    up to the stricter target's least loss) confirmed (:func:`~sdc_dagster.search.ladder.confirm_front`);
    when none passes the release checks (linkage through the keys, say) and time is left, the nodes
    the loss bound ruled out are walked and the candidates beyond the front confirmed in loss order.
    Returns (confirmed, the walk's outcome, its stop, bound, loss_bound) as they are then."""
    front = pareto_front([c for c in w.candidates if c.reaches_target and c.loss <= w.best_stricter + 1e-12])
    w.say(f"front of {len(front)} candidates; confirming with the release checks")
    w.begin_stage(w.budget - w.elapsed())
    confirmed = confirm_front(w.data, w.spec, w.space, front, wave, w, w.say)
    if not any(c.confirmed for c in confirmed) and w.elapsed() < w.budget:
        # the front fails a release check (linkage through the keys, say): coarser plans may pass
        before = w.evaluated
        if outcome == "bound":
            outcome, stop = w.walk(range(stop, len(w.order)), use_bound=False)
            if w.overrun:
                w.stopped_by_clock("the walk again")
            loss_bound = w.least_left(stop) if outcome == "budget" else np.nan
        beyond = sorted((c for c in w.candidates if c.reaches_target and c not in front), key=lambda c: c.loss)
        w.say(f"no front candidate passes the release checks: {len(beyond)} candidates beyond the front confirmed")
        w.begin_stage(w.budget - w.elapsed())
        confirmed += [c for c in confirm_front(w.data, w.spec, w.space, beyond, wave, w, w.say) if c.checks]
        bound += (f"; as no front candidate passed the release checks, {w.evaluated - before:,} more nodes were then "
                  f"evaluated ({len(w.order) - stop:,} left unevaluated) and the candidates beyond the front "
                  "confirmed in loss order")
    if w.clock_stopped:
        bound += (f"; the CPU clock's guard stopped {' and '.join(w.clock_stopped)} (its CPU seconds past {OVERRUN:g} "
                  "times its budget, more than its work was charged: not the same cut run to run)")
    return confirmed, outcome, stop, bound, loss_bound


def _result(w: LatticeWalk, confirmed: list[SearchCandidate], outcome: str, stop: int, bound: str, loss_bound: float,
            full_space: dict[str, KeyHierarchy], began: float) -> tuple[WaveSearch, float]:
    """The search's outcome from its confirmed candidates (ranked, :func:`_rank`; proven,
    :func:`_proven`; what the stricter target costs), said in the last progress line, and the CPU
    seconds spent."""
    ranked, recommended, runner_up = _rank(confirmed)
    measure, stricter_target, nodes = w.spec.search.loss, w.stricter_target, len(w.nodes)
    unevaluated = np.inf if outcome == "done" else w.least_left(stop) if measure == "lambda_arctan" else -np.inf
    proven = _proven(recommended, ranked, w.candidates, unevaluated)
    stricter = None
    meets = [c for c in ranked if c.confirmed and c.global_risk <= stricter_target]
    if meets:
        cheapest = min(meets, key=lambda c: c.loss)
        stricter = {"target": stricter_target, "loss": cheapest.loss, "plan": cheapest.plan.name}
    seconds, spent = time.perf_counter() - began, w.elapsed()
    w.say(f"done: {w.evaluated:,} of {nodes:,} nodes evaluated in {seconds:.1f} s; the plan is "
          + optimality(w.evaluated, nodes, proven, loss_bound) + withheld_note(recommended))
    return WaveSearch(
        candidates=tuple(w.candidates),
        front=tuple(ranked),
        recommended=recommended,
        runner_up=runner_up,
        stricter=stricter,
        nodes_total=nodes,
        nodes_evaluated=w.evaluated,
        exhaustive=outcome == "done",
        bound=bound,
        seconds=seconds,
        space={key: h.words() for key, h in full_space.items()},
        loss_bound=loss_bound,
        proven=proven,
        workers=w.workers_used,
        charged=spent,
    ), spent


def _search_wider(w: LatticeWalk, found: WaveSearch, full_space: dict[str, KeyHierarchy], *, wave: str,
                  progress: Progress | None, left_seconds: float, began: float) -> WaveSearch:
    """The search again in the time left with each key's top in its chain (module docstring, step 5),
    when no plan of the keys' own levels passes the release checks; ``found`` when no key has a top
    to add (none may be recoded, or each has one category)."""
    data, spec = w.data, w.spec
    wider = search_space(data, spec, withhold=True)
    if all(len(wider[key].levels) == len(h.levels) for key, h in full_space.items()):
        return found  # no key has a top to add (none may be recoded, or each has one category)
    w.say("no plan of the keys' own levels passes the release checks: the search continues with each key's top "
          "(its categories released as one) in the lattice")
    # the wider lattice's plans go without suppression (a node's frequency check is then all its
    # evaluation needs, and the node with every key at its top is k-anonymous), but for the node
    # Flash finds with few records in classes smaller than k (``walk_suppresses``)
    again = _search_wave(data, replace(spec, search=replace(spec.search, budget_seconds=left_seconds)),
                         wave=wave, progress=progress, exhaustive=w.exhaustive, withhold=True, walk_suppression=False)
    own = (f"no plan of the {len(w.nodes):,} of the keys' own levels passed the release checks" if found.exhaustive
           else f"the budget stopped the walk of the keys' own levels at {found.nodes_evaluated:,} of "
                f"{len(w.nodes):,} nodes evaluated, none passing the release checks")
    # exhaustive only when both walks settled every node: the wider one evaluates the keys' own
    # levels without suppression, so it does not settle what the first walk left unevaluated
    return replace(again, seconds=time.perf_counter() - began, candidates=found.candidates + again.candidates,
                   workers=max(found.workers, again.workers), exhaustive=found.exhaustive and again.exhaustive,
                   bound=f"{again.bound}; searched again with each key's top after {own}",
                   charged=found.charged + again.charged)


def _proven(recommended: SearchCandidate | None, ranked: list[SearchCandidate],
            candidates: list[SearchCandidate], unevaluated: float) -> bool:
    """Whether the recommended plan has the least loss of every plan of the lattice meeting the
    target: no node left unevaluated can have less (``unevaluated``, the least recode-only loss of
    those nodes, which suppression and continuous steps only raise; inf when every node was
    settled), and every candidate meeting the target with less loss on its codes (a lower bound of
    its loss once confirmed) was run through the release checks and failed them. Losses within
    :data:`LOSS_TIE` are equal: a node's loss summed on its codes and the same plan's loss measured on
    the released file differ in the last bits, and a node of equal loss left out of the front (more
    risk) has no less loss than the recommended plan."""
    if recommended is None or recommended.loss > unevaluated + LOSS_TIE:
        return False
    tried = {c.levels for c in ranked if c.checks}
    return not any(c.reaches_target and c.loss < recommended.loss - LOSS_TIE and c.levels not in tried
                   for c in candidates)


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
