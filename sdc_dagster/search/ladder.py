"""The confirmation of the plan search's front (:func:`sdc_dagster.search.wave.search_wave`): each
candidate run as an ordinary plan (:func:`sdc_dagster.pipeline.protection.protect`) with the
continuous keys' ladder (:func:`~sdc_dagster.search.space.continuous_steps`: per method the weakest
passing rung, :func:`weakest_passing`; stronger local suppression when only the linkage check
fails; withholding keys last) through :func:`sdc_dagster.pipeline.protection.release_checks`
(:func:`confirm_front`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sdc_dagster.protect.plan import PlanResult
from sdc_dagster.search.clock import plan_run_charge
from sdc_dagster.search.space import continuous_steps
from sdc_dagster.spec import SEARCHED_PLAN, SurveySpec
from sdc_dagster.pipeline.protection import UTILITY_CHECKS, blocking_failures, protect, release_checks
from sdc_dagster.search.candidates import SearchCandidate, node_plan, search_loss, suppression_step, withheld_note


def weakest_passing(chain: list, run: Callable, over_budget: Callable[[], bool],
                     finish: Callable) -> SearchCandidate:
    """The weakest step of one method's chain (weakest first) whose plan passes the risk checks (every
    blocking release check but the utility limits, :func:`_passes_risk_checks`), found by bisection
    on the assumption that a stronger step of the same method passes them when a weaker one does (a
    larger microaggregation k, swap window or noise); the strongest step's failing candidate when
    none passes (the middle step's when the time budget ends before the strongest is run). The step
    returned may still fail a utility limit (a stronger one would lose more): then no step of the
    chain passes both, and :func:`confirm_front` tries the next method.

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


def confirm_front(data, spec, space, front, wave, account, say):
    """Run front candidates as plans with the continuous keys' ladder (module docstring; per chain
    the weakest rung that passes, :func:`weakest_passing`, the chains in the order of
    :func:`~sdc_dagster.search.space.continuous_steps`; when only the linkage check fails, local
    suppression to a larger k with microaggregation, :func:`stronger_suppressions`; withholding
    continuous keys last) through the release checks, in loss
    order, until the recommendation, the runner-up and the cheapest candidate meeting the stricter
    target are certain (a candidate's loss before the continuous step is a lower bound of its loss
    after it), or the time budget ends.

    Every candidate runs under the name :data:`SEARCHED_PLAN`: the seeds of random steps derive from
    the plan's name, so the recommended plan is checked exactly as it will be released. The attempts
    of one candidate differ in their last step (the continuous one) only: its recodes and suppression
    are protected once, and each attempt continues from them (``protect``'s ``applied``).

    ``account``: the search's budget (:class:`~sdc_dagster.search.walk.LatticeWalk`: ``elapsed()``,
    the seconds charged so far; ``charge(seconds)``; ``clock_over(stage)``, the CPU clock's guard).
    Each plan run (protected, its release checks, its loss) is charged
    :func:`~sdc_dagster.search.clock.plan_run_charge` of the wave's records and keys, and a run is
    started only when its charge fits in what is left of ``search.budget_seconds``: the same plans
    are run whatever the timing (:mod:`sdc_dagster.search.clock`)."""
    rungs = continuous_steps(data, spec)
    chains = [[r for r in rungs if r.method == m] for m in dict.fromkeys(r.method for r in rungs)]
    # withholding a key is the last resort, after stronger suppression of the categorical keys
    withholding = [c for c in chains if c[0].method == "remove_variables"]
    ordinary = [c for c in chains if c[0].method != "remove_variables"] or ([] if withholding else [[None]])
    aggregating = [c for c in chains if c[0].method.startswith("microaggregation")] or ordinary
    confirmed, passed = [], []
    stricter_target = spec.risk.max_global_risk / 2
    stricter_done = False

    run_seconds = plan_run_charge(len(data), len(spec.categorical_keys) + len(spec.continuous_keys))

    def over_budget() -> bool:  # the next plan run's charge does not fit, or the guard
        return (account.elapsed() + run_seconds > spec.search.budget_seconds
                or account.clock_over("the confirmation of the front"))

    def finish(candidate: SearchCandidate, protected: PlanResult) -> SearchCandidate:
        return replace(candidate, loss=search_loss(data, protected.data, spec), protected=protected)

    for candidate in front:
        needed = len(passed) < 2 or candidate.loss <= passed[1].loss
        if over_budget() or (not needed and (stricter_done or candidate.global_risk > stricter_target)):
            confirmed.append(candidate)  # cannot be recommended, runner-up nor the stricter plan, or no time
            continue
        suppression = [s for s in candidate.plan.steps
                       if s["method"] in ("local_suppression", "risk_suppression", "diversity_suppression")]
        prefixes = {}  # the candidate's protection without its continuous step, of the ladder tried now

        def run(option, candidate=candidate, suppression=suppression, prefixes=prefixes):
            account.charge(run_seconds)
            plan = node_plan(space, candidate.levels, suppression, spec.risk.k, option, SEARCHED_PLAN)
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
                result = weakest_passing(chain, lambda option: run(option, suppression=ladder), over_budget, finish)
                if result.confirmed:
                    break
            return result

        result = climb(ordinary)
        for stronger in ([] if result.confirmed else stronger_suppressions(spec, result, len(data))):
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
        # the plan in words, as the progress lines name the best so far (never the node's internal name)
        say(f"{candidate.plan.description or candidate.plan.name}: "
            + (f"passes the release checks, loss {result.loss:.4g}{withheld_note(result)}"
                                          if result.confirmed else f"fails {', '.join(failures)}"))
        confirmed.append(result)
        if result.confirmed:
            passed = sorted(passed + [result], key=lambda c: c.loss)
            stricter_done = stricter_done or result.global_risk <= stricter_target
    return confirmed

#: The local-suppression k tried, as multiples of the target k, when a candidate fails the linkage
#: check only (:func:`stronger_suppressions`).
SUPPRESSION_LADDER = (2, 3, 4)


def stronger_suppressions(spec: SurveySpec, result: SearchCandidate, records: int) -> list[dict]:
    """Local suppression to 2k, 3k, 4k (:data:`SUPPRESSION_LADDER`), never beyond the ``records`` of
    the wave (n-anonymity, every key suppressed, is the most a file of n records allows), for a
    candidate whose only failed blocking risk check is ``linkage_risk`` (utility limits aside) on a
    spec with categorical keys and local suppression allowed; nothing otherwise."""
    failed = set(blocking_failures(result.checks)) - set(UTILITY_CHECKS) if result.checks else set()
    if failed != {"linkage_risk"} or not spec.categorical_keys or "local_suppression" not in spec.search.methods:
        return []
    ks = dict.fromkeys(min(factor * spec.risk.k, records) for factor in SUPPRESSION_LADDER)
    return [suppression_step(k) for k in ks if k > spec.risk.k]
