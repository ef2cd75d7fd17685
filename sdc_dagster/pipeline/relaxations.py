"""What it would take: when the plan search recommends no plan, the closest plans and the cheapest
change of target or scenario that makes a plan eligible (issue 38).

A wave's targets are the data owner's choice: the disclosure scenario (which variables an intruder
is assumed to know: the keys), the risk thresholds (k, the global-risk and the record-linkage
targets, l) and the utility limits a release must keep (Hundepool et al. 2012, "Statistical
Disclosure Control", ch. 3: the scenario fixes the keys, the thresholds are set by the agency).
When no plan meets them all, the search's answer "nothing released" is complete but not useful;
this module says what it would take, in two parts, both framework-free:

1. **The closest plans.** Every plan the search ran through the release checks
   (:func:`sdc_dagster.pipeline.protection.release_checks`) and failed, and the plans that failed
   the constraints the search sees on a node's codes (k-anonymity, the global-risk target,
   l-diversity, the suppression limit; the nearest few of them replayed here through the release
   checks, so that every figure is the release's own), each with its *binding checks*: the
   blocking checks it fails, each with the value found, its threshold and how far the value is from
   it in relative terms (:func:`gaps`): (value - threshold) / threshold for a check with a
   threshold (a share or a change), the share of the records concerned for a check that counts
   records (k-anonymity, l-diversity). A plan's distance is the sum of its gaps; a check no change
   of target can pass (a direct identifier released, ``released_categories``, a check that could not
   be evaluated) puts it infinitely far. The nearest :data:`CLOSEST` are reported, by distance,
   then loss.
2. **The cheapest relaxation.** Candidate changes of the target (k lowered one step at a time; the
   global-risk and linkage targets and each utility limit raised to the value the closest plan
   failing only that check needs, rounded up to three significant digits) and of the scenario (each
   key in turn not a key, those the closest plans' binding checks name first; the l of the sensitive
   variables lowered one step at a time, then no l-diversity; then pairs of them: two keys not keys,
   a key not a key and no l-diversity, at most :data:`MAX_PAIRS` of each, for a file where no
   single change helps) are tried *by searching again* on the
   changed spec (``dataclasses.replace`` of the frozen spec), never guessed. The size of a change is
   how much it loosens the one figure it changes, relative to the spec's: k 5 -> 3 loosens by 40 %,
   a suppression limit 10 % -> 12.4 % by 24 %, l 3 -> 2 by 33 %; a key no longer a key, or no
   l-diversity, drops the whole of that assumption and counts 100 %. A closest plan that fails
   several thresholds adds the change of all of them to its values together, its size the sum of
   theirs. Changes are tried smallest first (ties in the order above), a family (one figure, one
   key) no further once a change of it makes a plan eligible; the first :data:`MOST` changes that do
   are reported, each with the plan the search then recommends and its loss. When the search run
   again recommends none but one of the closest plans passes under the change (a raised threshold it
   no longer exceeds, :func:`passes_under`: the search's ladder of continuous steps assumes a
   stronger step loses more, which microaggregation's groups do not always obey), that plan is
   reported, found among the closest.

The relaxed searches run within a time budget (:data:`BUDGET_SHARE` of the spec's
``search.budget_seconds``, each search at most :data:`TRY_SHARE` of it), spent by fixed charges, not
read from a clock (:mod:`sdc_dagster.search.clock`): each closest plan replayed is charged
:func:`~sdc_dagster.search.clock.plan_run_charge`, each search what it charged
(:attr:`WaveSearch.charged <sdc_dagster.search.outcome.WaveSearch>`); changes left untried when it
runs out are listed as such. The order of the tries and every figure are deterministic (the
searches are seeded, their budgets charged), run to run and whatever the machine's load; where the
budget cuts a search short, the result says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.pipeline.protection import (
    L_DIVERSITY_CHECKS,
    UTILITY_CHECKS,
    UTILITY_RULES,
    CheckOutcome,
    blocking_failures,
    protect,
    release_checks,
)
from sdc_dagster.search.candidates import SearchCandidate
from sdc_dagster.search.outcome import WaveSearch
from sdc_dagster.search.wave import PROGRESS_PREFIX, search_wave
from sdc_dagster.search.clock import plan_run_charge
from sdc_dagster.report import format_value, measure_info
from sdc_dagster.spec import SurveySpec, Variables

#: How many closest plans are reported.
CLOSEST = 3
#: How many relaxations that make a plan eligible are reported (the search for them stops there).
MOST = 3
#: Pairs of scenario changes listed at most of each kind (two keys; a key and l), cheapest first:
#: the keys the closest plans' binding checks name come first.
MAX_PAIRS = 6
#: The budget of all relaxed searches, as a share of the spec's ``search.budget_seconds`` (30 s of
#: the default 120 s: on a wave of a few thousand records each relaxed search takes a second or
#: two, so the budget binds on large waves only) ...
BUDGET_SHARE = 0.25
#: ... and of one relaxed search, as a share of that budget.
TRY_SHARE = 0.25
#: A relaxed search is not started with less than this many seconds of the budget left.
MIN_TRY_SECONDS = 0.5

#: The checks with a threshold a relaxation can raise: (where the threshold lives, its attribute,
#: its name in words, whether it is a share).
THRESHOLDS = {
    "global_risk": ("risk", "max_global_risk", "global-risk target", True),
    "linkage_risk": ("risk", "max_linkage_risk", "linkage-risk target", True),
    **{check: ("limits", UTILITY_RULES[check][1], words, check != "correlation_change_limit")
       for check, words in (("suppression_limit", "suppression limit"),
                            ("records_changed_limit", "records-changed limit"),
                            ("mean_change_limit", "mean-change limit"),
                            ("variance_change_limit", "variance-change limit"),
                            ("correlation_change_limit", "correlation-change limit"),
                            ("keys_not_released_limit", "keys-not-released limit"))},
}

#: The release checks whose value counts records (the gap is the share of the records).
COUNT_CHECKS = ("k_anonymity", *L_DIVERSITY_CHECKS)

#: The order of the families of changes among changes of one size.
FAMILY_ORDER = ("k", *THRESHOLDS, "closest", "l", "key")

#: A note of the relaxed searches' progress, one line (the plan-search asset logs it).
Note = Callable[[str], None]


@dataclass(frozen=True)
class Gap:
    """One binding check of a plan: ``check`` (the release check's name), ``value`` found (a number,
    or the text of a check that has none), ``threshold`` (NaN for a check with none), ``relative``
    (how far, module docstring; inf when no change of target passes it), ``variable`` (the
    variable the check names, if any) and ``text`` in words ("linkage risk 68.8 % against 20 %")."""

    check: str
    value: float | str
    threshold: float
    relative: float
    variable: str | None
    text: str

    def record(self) -> dict:
        """The gap as plain JSON values (inf and NaN as None)."""
        return {"check": self.check, "value": _plain(self.value), "threshold": _plain(self.threshold),
                "relative": _plain(self.relative), "variable": self.variable, "text": self.text}


@dataclass(frozen=True)
class ClosestPlan:
    """A plan that comes close: its ``plan`` in words, its ``loss`` (the spec's measure; NaN when not
    computed), its binding checks (``gaps``) and ``distance``, their sum."""

    plan: str
    loss: float
    gaps: tuple[Gap, ...]

    @property
    def distance(self) -> float:
        return float(sum(g.relative for g in self.gaps))

    def record(self) -> dict:
        return {"plan": self.plan, "loss": _plain(self.loss), "distance": _plain(self.distance),
                "gaps": [g.record() for g in self.gaps]}


@dataclass(frozen=True)
class Relaxation:
    """A change of target or scenario (``change`` in words, ``kind``: "target" or "scenario",
    ``family``: the figure or key it changes, ``size``: how much it loosens it, module docstring)
    and, once tried, the plan eligible under it (``plan`` in words, its ``loss``; empty when none)
    and how it was found (``found_by``): "search" (the search run again recommends it) or "closest
    plan <i>" (the search run again recommends none, but the i-th closest plan passes every blocking
    check under the change: :func:`passes_under`). ``spec``: the changed spec."""

    change: str
    kind: str
    family: str
    size: float
    spec: SurveySpec = field(repr=False, compare=False)
    plan: str = ""
    loss: float = float("nan")
    found_by: str = ""

    def record(self) -> dict:
        return {"change": self.change, "kind": self.kind, "size": _plain(self.size), "plan": self.plan,
                "loss": _plain(self.loss), "found_by": self.found_by}


@dataclass(frozen=True)
class WhatItWouldTake:
    """The outcome of :func:`what_it_would_take`: the ``closest`` plans, the ``relaxations`` that make
    a plan eligible (cheapest first), the changes ``tried`` that do not (each with why, in words),
    those ``not_tried`` when the budget ran out, ``seconds`` taken of ``budget_seconds``, the
    ``loss_measure`` the losses are in (a headline loss: ``lambda_arctan`` or ``topsis_mean``), and
    ``search_cut``: empty when the search settled every plan of its space (then no plan of it meets
    the targets, proven), else how its budget cut it (a plan it left unchecked may meet them)."""

    closest: tuple[ClosestPlan, ...]
    relaxations: tuple[Relaxation, ...]
    tried: tuple[str, ...]
    not_tried: tuple[str, ...]
    seconds: float
    budget_seconds: float
    loss_measure: str
    search_cut: str = ""

    def record(self) -> dict:
        """Everything as plain JSON values: what the report, the console and the plan-search asset's
        metadata show (:func:`advice_lines`)."""
        return {"closest": [c.record() for c in self.closest],
                "relaxations": [r.record() for r in self.relaxations],
                "tried": list(self.tried), "not_tried": list(self.not_tried),
                "seconds": round(self.seconds, 2), "budget_seconds": self.budget_seconds,
                "loss_measure": self.loss_measure, "search_cut": self.search_cut}

    def lines(self) -> list[str]:
        """The outcome as lines of text for the console (:func:`advice_lines`)."""
        return advice_lines(self.record())


def _plain(value):
    """A number as JSON has it (inf and NaN as None), a text as it is."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    return value


def _share(value: float) -> str:
    return format_value(value, "share")


def _threshold_text(check: str, value: float) -> str:
    return _share(value) if THRESHOLDS[check][3] else f"{value:g}"


def threshold_of(spec: SurveySpec, check: str) -> float:
    """The threshold of a check of :data:`THRESHOLDS` in ``spec`` (``risk.max_global_risk``, ...)."""
    section, attribute, _, _ = THRESHOLDS[check]
    return float(getattr(getattr(spec, section), attribute))


def gaps(checks: dict[str, CheckOutcome], spec: SurveySpec, records: int) -> list[Gap]:
    """The binding checks of a plan: one :class:`Gap` per failed blocking check of its release-check
    outcomes ``checks`` on a wave of ``records`` records, in the checks' order (module docstring:
    relative gap (value - threshold) / threshold for a threshold, the share of the records for a
    count, inf where no change of target passes the check)."""
    found = []
    for name in blocking_failures(checks):
        outcome = checks[name]
        value, variable = outcome.value, outcome.measure if name in UTILITY_CHECKS else None
        numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if numeric and name in COUNT_CHECKS:
            count = int(value)
            if name == "k_anonymity":
                text = f"{count:,} records in key combinations of fewer than k = {spec.risk.k} records"
            elif name == "l_diversity":
                text = (f"{count:,} records in key groups with fewer than l = {spec.risk.l} distinct values of a "
                        "sensitive variable")
            else:
                text = (f"{count:,} records in key groups whose entropy of a sensitive variable is below "
                        f"log(l), l = {spec.risk.l}")
            found.append(Gap(name, count, 0.0, count / max(records, 1), None, text))
        elif numeric and name in THRESHOLDS:
            value, threshold = float(value), threshold_of(spec, name)
            relative = (value - threshold) / threshold if threshold > 0 else math.inf
            found.append(Gap(name, value, threshold, relative, variable, _gap_text(name, value, threshold, variable)))
        else:
            found.append(Gap(name, value if isinstance(value, str) else _plain(value), float("nan"), math.inf,
                             variable, f"{name}: {outcome.explained(name)}"))
    return found


def _gap_text(check: str, value: float, threshold: float, variable: str | None) -> str:
    """A threshold's gap in words: "linkage risk 68.8 % against 20 %", "age: 12.4 % suppressed
    against the 10 % limit"."""
    found, limit = _threshold_text(check, value), _threshold_text(check, threshold)
    named = f"{variable}: " if variable else ""
    return {
        "global_risk": f"global risk {found} against {limit}",
        "linkage_risk": f"linkage risk {found} against {limit}",
        "suppression_limit": f"{named}{found} suppressed against the {limit} limit",
        "records_changed_limit": f"{found} of the records changed against the {limit} limit",
        "mean_change_limit": f"{named}mean changed by {found} against the {limit} limit",
        "variance_change_limit": f"{named}variance changed by {found} against the {limit} limit",
        "correlation_change_limit": f"{named}correlation changed by {found} against the {limit} limit",
        "keys_not_released_limit": f"{found} of the keys not released ({variable}) against the {limit} limit",
    }[check]


def _node_distance(candidate: SearchCandidate, spec: SurveySpec, records: int) -> float:
    """How far a node the search did not run through the release checks is from the constraints it
    shows on its codes (k-anonymity, global risk, l-diversity, suppression share, share of the keys
    not released): the sum of the relative gaps of :func:`gaps`, from the node's own figures (which
    its release checks repeat)."""
    target, limit = spec.risk.max_global_risk, spec.limits.max_suppressed_share
    distance = (candidate.k_violations + candidate.l_violations) / max(records, 1)
    distance += max(candidate.global_risk - target, 0.0) / target if target > 0 else 0.0
    distance += max(candidate.suppressed_share - limit, 0.0) / limit if limit > 0 else 0.0
    lost, keys_limit = candidate.keys_not_released_share, spec.limits.max_keys_not_released
    distance += max(lost - keys_limit, 0.0) / keys_limit if keys_limit > 0 else (math.inf if lost > 0 else 0.0)
    return distance


#: The release checks of the continuous keys: a plan replayed without its continuous step does not
#: show them (the search adds that step only to the plans that meet the categorical constraints).
CONTINUOUS_CHECKS = ("linkage_risk", *(c for c, kind in UTILITY_CHECKS.items() if kind in ("continuous", "pairs")))


def _replayed(data: pd.DataFrame, spec: SurveySpec, candidate: SearchCandidate, wave: str) -> SearchCandidate:
    """A node the search evaluated on its codes only, with the release checks of its plan as the
    release runs them (:func:`~sdc_dagster.pipeline.protection.release_checks`); without the checks
    of the continuous keys (:data:`CONTINUOUS_CHECKS`), which its plan has no step for yet."""
    try:
        protected = protect(data, spec, candidate.plan, wave=wave)
        checks = release_checks(protected.data, spec, candidate.plan, original=data)
    except SDCInputError:  # a plan that cannot run on the wave has no binding check to report
        return candidate
    return replace(candidate, checks={n: c for n, c in checks.items() if n not in CONTINUOUS_CHECKS})


def closest_candidates(data: pd.DataFrame, spec: SurveySpec, found: WaveSearch, *, wave: str = ""
                       ) -> list[SearchCandidate]:
    """The candidates of a search whose binding checks are known, for :func:`closest_plans`: those it
    ran through the release checks and that fail them, and the :data:`CLOSEST` nodes nearest the
    constraints among those that failed them on their codes (:func:`_node_distance`), replayed
    through the release checks (:func:`_replayed`). Nodes that met the constraints but that the
    time budget left unconfirmed are not among them, nor a node whose plan cannot run on the wave
    (an input error of its steps): their binding check is unknown."""
    records = len(data)
    checked = [c for c in found.front if c.checks and not c.confirmed]
    missed = sorted((c for c in found.candidates if not c.reaches_target),
                    key=lambda c: (_node_distance(c, spec, records), _loss_key(c.loss), c.plan.description))
    replayed = [_replayed(data, spec, c, wave) for c in missed[:CLOSEST]]
    return checked + [c for c in replayed if c.checks]


def _loss_key(loss: float) -> float:
    return math.inf if math.isnan(loss) else loss


def _words(candidate: SearchCandidate) -> str:
    return candidate.plan.description.removeprefix("searched plan: ")


def closest_plans(candidates: list[SearchCandidate], spec: SurveySpec, records: int) -> list[ClosestPlan]:
    """The :data:`CLOSEST` plans of ``candidates`` (each with its release checks) nearest to passing:
    by distance (the sum of their relative gaps, :func:`gaps`), then loss, then their words; each
    plan once."""
    plans = {}
    for candidate in candidates:
        plan = ClosestPlan(_words(candidate), float(candidate.loss), tuple(gaps(candidate.checks, spec, records)))
        if plan.gaps and plan.plan not in plans:
            plans[plan.plan] = plan
    ranked = sorted(plans.values(), key=lambda p: (p.distance, _loss_key(p.loss), p.plan))
    return ranked[:CLOSEST]


def _rounded_up(value: float) -> float:
    """``value`` rounded up to three significant digits (0.688453 -> 0.689), never below it (the
    linkage check compares without tolerance: 0.15000000000000002 -> 0.151, not 0.15)."""
    if not math.isfinite(value) or value <= 0:
        return value
    decimals = 2 - math.floor(math.log10(value))
    step = 10.0 ** -decimals
    rounded = round(math.ceil(value / step - 1e-9) * step, decimals + 1)
    return rounded if rounded >= value else round(rounded + step, decimals + 1)


def relaxations(spec: SurveySpec, candidates: list[SearchCandidate], closest: list[ClosestPlan]) -> list[Relaxation]:
    """The changes of target and scenario to try, smallest first (module docstring).

    ``candidates``: the plans with their release checks (:func:`closest_candidates`); a threshold is
    raised to the least value among the plans whose only failed blocking check it is, or, when no
    plan fails it alone, to the value of the closest plan that fails it; a threshold no plan fails is
    not raised. A closest plan whose binding checks are all thresholds, two or more, adds the change
    of all of them to its values together (its size the sum of theirs): a change under which that
    plan itself passes."""
    found: list[Relaxation] = []
    k = spec.risk.k
    if spec.categorical_keys:
        found += [Relaxation(f"k = {lower} instead of {k}", "target", "k", (k - lower) / k,
                             replace(spec, risk=replace(spec.risk, k=lower))) for lower in range(k - 1, 1, -1)]
    for check, (section, attribute, words, _) in THRESHOLDS.items():
        alone = [float(c.checks[check].value) for c in candidates
                 if set(blocking_failures(c.checks)) == {check} and _numeric(c.checks[check].value)]
        near = [g.value for plan in closest for g in plan.gaps if g.check == check and _numeric(g.value)]
        needed = min(alone) if alone else (min(near) if near else None)
        old = threshold_of(spec, check)
        if needed is None or needed <= old:
            continue
        new = _rounded_up(needed)
        changed = replace(getattr(spec, section), **{attribute: new})
        found.append(Relaxation(f"{words} {_threshold_text(check, new)} instead of {_threshold_text(check, old)}",
                                "target", check, (new - old) / old if old > 0 else math.inf,
                                replace(spec, **{section: changed})))
    for i, plan in enumerate(closest, 1):
        # a plan failing several thresholds passes when all of them are raised to its values together
        if len(plan.gaps) < 2 or not all(g.check in THRESHOLDS and math.isfinite(g.relative) for g in plan.gaps):
            continue
        changed, words, size = spec, [], 0.0
        for check in dict.fromkeys(g.check for g in plan.gaps):
            section, attribute, name, _ = THRESHOLDS[check]
            old, new = threshold_of(spec, check), _rounded_up(max(g.value for g in plan.gaps if g.check == check))
            changed = replace(changed, **{section: replace(getattr(changed, section), **{attribute: new})})
            words.append(f"{name} {_threshold_text(check, new)} instead of {_threshold_text(check, old)}")
            size += (new - old) / old
        found.append(Relaxation(" and ".join(words), "target", f"closest {i}", size, changed))
    l = spec.risk.l
    if l is not None and spec.names("sensitive") and spec.categorical_keys:
        found += [Relaxation(f"l = {lower} instead of {l}", "scenario", "l", (l - lower) / l,
                             replace(spec, risk=replace(spec.risk, l=lower))) for lower in range(l - 1, 1, -1)]
        found.append(Relaxation(f"no l-diversity instead of l = {l}", "scenario", "l", 1.0,
                                replace(spec, risk=replace(spec.risk, l=None))))
    keys = [*spec.categorical_keys, *spec.continuous_keys]
    if len(keys) > 1:  # with one key, "no key" is no scenario left to protect against
        # among the keys, those the closest plans' binding checks name first (a suppressed key, a
        # continuous key whose mean or variance moved, the two of a correlation; the continuous keys
        # when the linkage risk binds), in the order of the plans and their checks
        named = []
        for g in (g for plan in closest for g in plan.gaps):
            if g.check == "linkage_risk":
                named += spec.continuous_keys
            elif g.check == "keys_not_released_limit":  # the keys not released, comma-separated
                named += [key for key in keys if key in g.variable.split(", ")]
            elif g.variable:
                named += [key for key in keys if key == g.variable or key in g.variable.split("–")]
        ranks = {key: i for i, key in enumerate(dict.fromkeys(named))}
        ranked = sorted(keys, key=lambda key: (ranks.get(key, len(ranks)), key))
        for key in ranked:
            found.append(Relaxation(f"{key} not a key", "scenario", f"key {key}", 1.0, _without_keys(spec, [key])))
        # two changes of the scenario together, tried after every single one (their size the sum of
        # theirs): two keys not keys (while a key is left), a key not a key and no l-diversity
        if len(keys) > 2:
            found += [Relaxation(f"{a} and {b} not keys", "scenario", f"key {a}+key {b}", 2.0,
                                 _without_keys(spec, [a, b]))
                      for i, a in enumerate(ranked) for b in ranked[i + 1:]][:MAX_PAIRS]
        if l is not None and spec.names("sensitive") and spec.categorical_keys:
            unconstrained = replace(spec, risk=replace(spec.risk, l=None))
            found += [Relaxation(f"{key} not a key and no l-diversity instead of l = {l}", "scenario",
                                 f"key {key}+l", 2.0, _without_keys(unconstrained, [key]))
                      for key in ranked][:MAX_PAIRS]
    first = {}
    for relaxation in found:  # two closest plans that need the same change: tried once
        first.setdefault(relaxation.change, relaxation)
    found = list(first.values())
    order = {family: i for i, family in enumerate(FAMILY_ORDER)}
    # sizes rounded: (30 % - 25 %) / 25 % is 0.2 as k 5 -> 4 is, not 0.19999999999999996; among
    # changes of one size and family, the order they were listed in (stable sort)
    return sorted(found, key=lambda r: (round(r.size, 9), order[r.family.split(" ")[0]]))


def _without_keys(spec: SurveySpec, keys: list[str]) -> SurveySpec:
    """``spec`` with ``keys`` no longer keys (role ``other``, out of ``search.keep``)."""
    variables = Variables(replace(v, role="other") if v.name in keys else v for v in spec.variables)
    return replace(spec, variables=variables, search=replace(spec.search, keep=tuple(k for k in spec.search.keep
                                                                                   if k not in keys)))


def _families(family: str) -> set[str]:
    """The families a change belongs to: one, or both of a pair ("key a+key b" -> key a, key b)."""
    return set(family.split("+"))


def passes_under(plan: ClosestPlan, spec: SurveySpec) -> bool:
    """Whether a closest plan passes every blocking check under a spec whose thresholds are those of
    the spec it was checked with, some raised: each of its binding checks is a threshold
    (:data:`THRESHOLDS`) its value no longer exceeds. Exact without running the plan again: raising
    a threshold changes no check's value and fails no check that passed."""
    return all(g.check in THRESHOLDS and _numeric(g.value) and g.value <= threshold_of(spec, g.check) + 1e-12
               for g in plan.gaps)


def _numeric(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(value)


def what_it_would_take(
    data: pd.DataFrame,
    spec: SurveySpec,
    found: WaveSearch,
    *,
    wave: str = "",
    budget_seconds: float | None = None,
    note: Note | None = None,
    search: Callable[..., WaveSearch] = search_wave,
) -> WhatItWouldTake | None:
    """What it would take for a search that recommends no plan to release one (module docstring):
    the closest plans with their binding checks, and the cheapest changes of target or scenario under
    which a new search recommends a plan. None when ``found`` recommends a plan.

    Parameters
    ----------
    data, spec, wave : the wave, its spec and name, as ``found`` was searched.
    found : the finished search (:func:`~sdc_dagster.search.wave.search_wave`).
    budget_seconds : the budget of the relaxed searches; default :data:`BUDGET_SHARE` of the spec's
        ``search.budget_seconds``. Each relaxed search runs with at most :data:`TRY_SHARE` of it as
        its own ``search.budget_seconds``.
    note : called with a line per relaxed search (its outcome), for the console and the Dagster log.
    search : the search run on each relaxed spec (``search(data, spec, wave=wave)``).
    """
    if found.recommended is not None:
        return None
    began = time.perf_counter()  # the wall clock, reported only
    say = note or (lambda line: None)
    budget = BUDGET_SHARE * spec.search.budget_seconds if budget_seconds is None else float(budget_seconds)
    records = len(data)
    candidates = closest_candidates(data, spec, found, wave=wave)
    # the budget's charges: each closest plan replayed (closest_candidates), then each search's
    spent = plan_run_charge(records, len(spec.categorical_keys) + len(spec.continuous_keys)) * min(
        CLOSEST, sum(not c.reaches_target for c in found.candidates))
    closest = closest_plans(candidates, spec, records)
    for i, plan in enumerate(closest, 1):
        say(f"{PROGRESS_PREFIX}what it would take: closest plan {i} fails "
            + "; ".join(g.text for g in plan.gaps) + f" (the plan: {plan.plan})")
    options = relaxations(spec, candidates, closest)
    eligible, tried, not_tried, settled = [], [], [], set()
    for position, option in enumerate(options):
        if len(eligible) >= MOST:
            break
        if _families(option.family) & settled:  # a pair holding a change that makes a plan eligible alone
            continue
        left = budget - spent
        if left < MIN_TRY_SECONDS:
            not_tried = [o.change for o in options[position:] if o.family not in settled]
            break
        seconds = min(left, max(TRY_SHARE * budget, MIN_TRY_SECONDS))
        relaxed = replace(option.spec, search=replace(option.spec.search, budget_seconds=seconds))
        try:
            result = search(data, relaxed, wave=wave)
            spent += result.charged
        except SDCInputError as exc:
            tried.append(f"{option.change}: the search cannot run ({exc})")
            say(f"{PROGRESS_PREFIX}what it would take: {tried[-1]}")
            continue
        passing = next((i for i, plan in enumerate(closest, 1) if passes_under(plan, option.spec)), None)
        if result.recommended is not None:
            eligible.append(replace(option, plan=_words(result.recommended), loss=float(result.recommended.loss),
                                    found_by="search"))
        elif passing is not None:  # the search's own ladder misses a plan it had checked
            eligible.append(replace(option, plan=closest[passing - 1].plan, loss=closest[passing - 1].loss,
                                    found_by=f"closest plan {passing}"))
        else:
            tried.append(f"{option.change}: no plan passes every blocking check"
                         + ("" if result.exhaustive else f" within {seconds:.3g} s"))
            say(f"{PROGRESS_PREFIX}what it would take: {tried[-1]}")
            continue
        settled |= _families(option.family)
        say(f"{PROGRESS_PREFIX}what it would take: " + relaxation_text(eligible[-1].record()))
    return WhatItWouldTake(closest=tuple(closest), relaxations=tuple(eligible), tried=tuple(tried),
                           not_tried=tuple(not_tried), seconds=time.perf_counter() - began,
                           budget_seconds=budget,
                           loss_measure="topsis_mean" if spec.search.loss == "topsis" else "lambda_arctan",
                           search_cut=search_cut(found, spec))


def search_cut(found: WaveSearch, spec: SurveySpec) -> str:
    """How a search that recommends no plan was cut, in words ("" when it settled every plan of its
    space: then none of them meets the targets): the plans it evaluated and how it stopped
    (:attr:`WaveSearch.bound`; its time budget, ``search.budget_seconds``, or a loss bound)."""
    if found.exhaustive:
        return ""
    return (f"it stopped after {found.nodes_evaluated:,} plans evaluated, its budget {spec.search.budget_seconds:g} s "
            f"(search.budget_seconds), {found.bound}: a plan it did not check may meet the targets")


def advice_lines(record: dict) -> list[str]:
    """A :meth:`WhatItWouldTake.record` as lines of text for the console: the closest plans with
    their binding checks, the changes that make a plan eligible (cheapest first) with the plan and
    its loss, the changes tried in vain, and those the budget left untried."""
    label = measure_info(record["loss_measure"]).label
    lines = ["what it would take:"]
    if record.get("search_cut"):
        lines.append(f"  not proven: {record['search_cut']}")
    if record["closest"]:
        lines.append("  the closest plans and the checks they fail:")
        for i, plan in enumerate(record["closest"], 1):
            lines += [f"    {i}. {plan['plan']}", "       fails " + "; ".join(g["text"] for g in plan["gaps"])]
    else:
        lines.append("  no plan was run through the release checks")
    if record["relaxations"]:
        lines.append(f"  the cheapest changes that make a plan eligible (loss: {label}):")
        lines += [f"    {relaxation_text(r)}" for r in record["relaxations"]]
    else:
        lines.append("  no change tried makes a plan eligible")
    if record["tried"]:
        lines.append("  tried in vain: " + "; ".join(record["tried"]))
    if record["not_tried"]:
        lines.append(f"  the budget of {record['budget_seconds']:.3g} s ran out; not tried: "
                     + ", ".join(record["not_tried"]))
    return lines


def relaxation_text(relaxation: dict) -> str:
    """A relaxation that makes a plan eligible (:meth:`Relaxation.record`) in words: "k = 3 instead
    of 5: releases <plan>, with a loss of 0.0123"; one found among the closest plans: "...: closest
    plan 1 passes every blocking check (<plan>, loss 0.0123); the search run again does not find it:
    name it among the spec's plans"."""
    loss = _loss_text(relaxation["loss"])
    if relaxation["found_by"] == "search":
        return f"{relaxation['change']}: releases {relaxation['plan']}, with a loss of {loss}"
    return (f"{relaxation['change']}: {relaxation['found_by']} passes every blocking check ({relaxation['plan']}, "
            f"loss {loss}); the search run again does not find it: name it among the spec's plans")


def _loss_text(loss: float | None) -> str:
    return "not computed" if loss is None else f"{loss:.4g}"
