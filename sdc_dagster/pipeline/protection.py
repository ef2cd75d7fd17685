"""Protection of a wave and its release rules (SPEC §8, §3.1, §3.3, §4.1, §8.1).

:func:`protect` applies a plan; :func:`release_checks` evaluates the release rules on the variant
(a :class:`CheckOutcome` per rule); :func:`protect_variant` does both and returns the
:class:`ProtectedVariant` every later stage receives: data, steps, PRAM matrices, check outcomes
and seed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from sdc_dagster import loss, risk
from sdc_dagster.errors import SDCInputError
from sdc_dagster.pipeline.risk import records_below_l, risk_table
from sdc_dagster.pipeline.variant import (
    ReleasedKeys,
    keys_lost,
    ordinal_orders,
    perturbed,
    released_keys,
    retained_records,
)
from sdc_dagster.protect.plan import PlanResult, apply_plan
from sdc_dagster.releases.categories import category_count_excess
from sdc_dagster.releases.files import release_coding
from sdc_dagster.releases.manifest import Release
from sdc_dagster.report import format_value
from sdc_dagster.spec import SEARCHED_PLAN, Plan, SurveySpec
from sdc_dagster.spec.roles import record_key_like


def wave_plan_names(spec: SurveySpec) -> list[str]:
    """The plans a wave is protected by: the spec's, then the searched plan when the spec searches."""
    return [p.name for p in spec.plans] + ([SEARCHED_PLAN] if spec.search.enabled else [])


def direct_identifiers(spec: SurveySpec) -> list[str]:
    """Variables the spec marks as direct identifiers (removed before release, SPEC §8.1)."""
    return spec.names("direct_identifier")


def record_keys(spec: SurveySpec, protected: pd.DataFrame) -> list[str]:
    """Released columns that are numeric record keys (:func:`~sdc_dagster.spec.roles.record_key_like`:
    whole numbers, distinct on every record, consecutive or of one number of digits), which link every
    record one to one to the original file: any column but the keys (protected and checked by the
    risk rules), the weight, and the record and household ids when the release renumbers them
    (``release.renumber_ids``)."""
    exempt = set(spec.categorical_keys) | set(spec.continuous_keys) | set(spec.names("weight"))
    if spec.release.renumber_ids:
        exempt |= set(spec.names("record_id")) | set(spec.names("household_id"))
    return [str(c) for c in protected.columns if c not in exempt and record_key_like(protected[c])]


def protect(data: pd.DataFrame, spec: SurveySpec, plan: Plan, *, wave: str,
            applied: PlanResult | None = None) -> PlanResult:
    """Apply a protection plan to a copy of the wave, direct identifiers removed first (SPEC §8.1);
    ``applied``: the protection of the plan's first steps, not run again
    (:func:`~sdc_dagster.protect.plan.apply_plan`).

    Every random step is seeded from the plan's ``random_state`` and (survey, wave, plan name, step)
    (:func:`~sdc_dagster.protect.plan.step_seed`), so the order of the plans in the spec changes no
    output. Subsample steps sample whole households and rescale the weight when the spec names them.
    Gower microaggregation steps take the spec's scales of the variables they name (a categorical
    key without ``scale:`` nominal, a continuous key continuous) where the step gives none.
    """
    released = data.drop(columns=[c for c in direct_identifiers(spec) if c in data.columns])
    return apply_plan(
        released,
        list(plan.steps),
        keys=spec.categorical_keys,
        random_state=plan.random_state,
        seed_labels=(spec.survey, str(wave), plan.name),
        household=spec.household_id,
        weight=spec.weight,
        scales=variable_scales(spec),
        applied=applied,
    )


def variable_scales(spec: SurveySpec) -> dict[str, str]:
    """The scale of every variable the spec gives one, a categorical key without ``scale:`` being
    nominal and a continuous key continuous (SPEC §9.1's kinds of variables)."""
    return {**dict.fromkeys(spec.categorical_keys, "nominal"), **dict.fromkeys(spec.continuous_keys, "continuous"),
            **spec.scales}


def release_check_names(spec: SurveySpec) -> list[str]:
    """The release checks :func:`release_checks` evaluates for a spec's plans, in order: the
    categorical ones only with categorical keys, ``linkage_risk`` only with continuous keys, the
    l-diversity checks only with a sensitive variable and ``risk.l``, and the utility limits of the
    keys the spec has (:func:`checks_not_applicable` says why a check is left out)."""
    names = ["k_anonymity", "global_risk"] if spec.categorical_keys else []
    names += list(L_DIVERSITY_CHECKS) if _l_diversity_applies(spec) else []
    names += ["linkage_risk"] if spec.continuous_keys else []
    names += ["no_direct_identifier"]
    names += ["released_categories"] if spec.categorical_keys else []
    needs = {"categorical": bool(spec.categorical_keys), "continuous": bool(spec.continuous_keys),
             "pairs": len(spec.continuous_keys) >= 2, "keys": bool(spec.categorical_keys or spec.continuous_keys)}
    names += [check for check, kind in UTILITY_CHECKS.items() if needs[kind]]
    return names + (["individual_risk"] if spec.categorical_keys else [])


def checks_not_applicable(spec: SurveySpec) -> dict[str, str]:
    """The release checks left out for a spec, with the reason: {check: why}."""
    reasons = {}
    if not spec.categorical_keys:
        why = "the spec has no categorical key: no key combination can single out a record"
        reasons.update(k_anonymity=why, global_risk=why, individual_risk=why)
        reasons["released_categories"] = "the spec has no categorical key: no released category to compare"
    if not spec.continuous_keys:
        reasons["linkage_risk"] = "the spec has no continuous key: nothing to link on"
    if not _l_diversity_applies(spec):
        reasons["l_diversity"] = ("the spec declares no sensitive variable with risk.l and a categorical key"
                                  if spec.categorical_keys else "the spec has no categorical key to group records by")
    return reasons


def released_categories_check(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec,
                              plan: Plan, released: ReleasedKeys) -> CheckOutcome:
    """The release check ``released_categories`` (SPEC §8.2): in the variant as its safe files code
    it (:func:`~sdc_dagster.releases.files.release_coding`: merged categories with codes of their
    own), no original category of a categorical key counts more records than in ``original``
    (:func:`~sdc_dagster.releases.categories.category_count_excess`). Keys a perturbative step
    changed (PRAM moves records between categories by design) are left out and named in the rule.
    The value lists each breach, ``key = category: original -> released records``; ``released``: the
    keys the variant releases (:attr:`ProtectedVariant.keys`)."""
    coding = release_coding(original, spec, plan)
    perturbed = set(coding.perturbed)
    keys = [k for k in released.categorical if k not in perturbed]
    breaches = category_count_excess(retained_records(original, protected, plan.name), coding.apply(protected), keys)
    rule = "no original category of a categorical key is released with more records than it has"
    if coding.perturbed:
        rule += f" (not checked: {', '.join(coding.perturbed)}, changed by a perturbative step)"
    found = "; ".join(f"{key} = {category!r}: {before} -> {after} records"
                      for key, rows in breaches.items() for category, before, after in rows)
    return CheckOutcome(not breaches, found, rule, True)


def _l_diversity_applies(spec: SurveySpec) -> bool:
    """Whether the l-diversity checks run: a sensitive variable, ``risk.l`` and a categorical key."""
    return bool(spec.categorical_keys and spec.names("sensitive") and spec.risk.l is not None)


#: The l-diversity release checks (SPEC §3.6): distinct l-diversity, and entropy l-diversity.
L_DIVERSITY_CHECKS = ("l_diversity", "entropy_l_diversity")

#: The utility-limit release checks (``limits:``, :class:`~sdc_dagster.spec.UtilityLimits`), with the
#: keys they need: categorical keys, continuous keys, two continuous keys (a correlation) or a key.
UTILITY_CHECKS = {"suppression_limit": "categorical", "records_changed_limit": "categorical",
                  "mean_change_limit": "continuous", "variance_change_limit": "continuous",
                  "correlation_change_limit": "pairs", "keys_not_released_limit": "keys"}

# check -> (the rows of utility_changes it bounds, the limit's name in limits:, the rule's words)
UTILITY_RULES = {
    "suppression_limit": ("suppressed", "max_suppressed_share", "share of each categorical key's values suppressed"),
    "records_changed_limit": ("records changed", "max_records_changed",
                              "share of records with a categorical key value suppressed or perturbed"),
    "mean_change_limit": ("mean", "max_mean_change", "relative change of each continuous key's mean"),
    "variance_change_limit": ("variance", "max_variance_change", "relative change of each continuous key's variance"),
    "correlation_change_limit": ("correlation", "max_correlation_change",
                                 "absolute change of each correlation between continuous keys"),
    "keys_not_released_limit": ("keys not released", "max_keys_not_released",
                                "share of the keys withheld or released as one category"),
}

#: The ``variable`` of the ``keys not released`` row of :func:`utility_changes` when every key is released.
EVERY_KEY_RELEASED = "none"


def keys_not_released_row(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec) -> tuple:
    """The ``keys not released`` row of :func:`utility_changes` (columns
    :data:`~sdc_dagster.loss.limits.CHANGE_COLUMNS`): ``variable`` the keys the variant carries
    none of (:func:`~sdc_dagster.pipeline.variant.keys_lost`: withheld, or released as one
    category), comma-separated (:data:`EVERY_KEY_RELEASED` when none); ``before`` the spec's keys in
    the original, ``after`` those released with detail; ``change`` their share not released."""
    keys = released_keys(spec, original).quasi_identifiers
    lost = keys_lost(spec, original, protected)
    return ("keys not released", ", ".join(lost) or EVERY_KEY_RELEASED, len(keys), len(keys) - len(lost),
            len(lost) / len(keys) if keys else 0.0)


#: The steps that generalise a categorical key (a value released as its merged category or band is
#: not a changed record for ``records_changed_limit``).
GENERALISING_METHODS = ("recode", "interval_recode", "top_coding", "bottom_coding")


def utility_changes(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec,
                    plan: Plan | None = None, *, released: ReleasedKeys) -> pd.DataFrame:
    """The per-variable utility figures of a variant (:func:`sdc_dagster.loss.limits.utility_changes`)
    on the keys it releases and the original records it releases, with each row's ``limit`` (the
    spec's ``limits:``) and ``used``: |change| / limit (above 1: the limit is exceeded; NaN where the
    change is undefined). Records changed are counted against the original with ``plan``'s
    generalising steps of the categorical keys applied (:data:`GENERALISING_METHODS`): a suppressed
    or perturbed key value is a change, a value released as its merged category is not. With keys,
    one more row, ``keys not released`` (:func:`keys_not_released_row`). ``released``:
    the keys the variant releases (:attr:`ProtectedVariant.keys`)."""
    matched = retained_records(original, protected, "variant")
    steps = [s for s in (plan.steps if plan is not None else ())
             if s["method"] in GENERALISING_METHODS and s.get("variable") in spec.categorical_keys]
    generalised = (apply_plan(matched[spec.categorical_keys], steps, keys=spec.categorical_keys).data
                   if steps else None)
    table = loss.utility_changes(matched, protected, spec.categorical_keys, released.continuous,
                                 generalised=generalised)
    if spec.categorical_keys or spec.continuous_keys:
        table.loc[len(table)] = keys_not_released_row(original, protected, spec)
    limits = {rows: getattr(spec.limits, limit) for rows, limit, _ in UTILITY_RULES.values()}
    table["limit"] = table["measure"].map(limits).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["used"] = np.where(table["limit"] > 0, table["change"].abs() / table["limit"],
                                 np.where(table["change"].abs() > 0, np.inf, 0.0))
    return table


def utility_checks(changes: pd.DataFrame, spec: SurveySpec) -> dict[str, CheckOutcome]:
    """The utility limits of ``limits:`` as blocking release checks, from a variant's
    :func:`utility_changes`: each passes when no row of its measure exceeds the limit; ``value`` is
    the largest absolute change, ``measure`` the variable it concerns, ``figures`` the change of
    every variable. A change that is undefined (an original mean or variance of 0) is not held
    against the limit."""
    checks = {}
    for name in (c for c in release_check_names(spec) if c in UTILITY_CHECKS):
        rows_of, limit_name, words = UTILITY_RULES[name]
        limit = getattr(spec.limits, limit_name)
        # a correlation's change is on its own [-1, 1] scale, the others are shares
        bound = f"{limit:g}" if name == "correlation_change_limit" else format_value(limit, "share")
        rows = changes[changes["measure"] == rows_of]
        sizes = rows["change"].abs()
        worst = sizes.idxmax() if sizes.notna().any() else None
        value = float(sizes[worst]) if worst is not None else 0.0
        checks[name] = CheckOutcome(
            passed=bool(value <= limit + 1e-12), value=value,
            rule=f"{words} at most {bound} (limits.{limit_name})", blocking=True,
            measure=str(rows.loc[worst, "variable"]) if worst is not None else None,
            figures={str(v): (None if np.isnan(c) else float(c)) for v, c in zip(rows["variable"], rows["change"])},
        )
    return checks


def l_diversity_checks(protected: pd.DataFrame, spec: SurveySpec, released: ReleasedKeys) -> dict[str, CheckOutcome]:
    """Distinct and entropy l-diversity of the spec's sensitive variables within the released key
    groups (SPEC §3.6, :func:`sdc_dagster.risk.l_diversity`, sdcMicro's ``ldiversity`` scores: a
    record's group is the records its released key matches, a suppressed value matching any value as
    for k-anonymity, SPEC §2.4): ``l_diversity``
    fails when a record's group holds fewer than ``risk.l`` distinct values of a sensitive variable
    (blocking); ``entropy_l_diversity`` when exp(entropy) of a group is below l (blocking when
    ``risk.l_diversity`` is "entropy", a warning otherwise). ``value``: the records below l, summed
    over the sensitive variables; ``figures``: the count of each. ``released``: the keys the variant
    releases (:attr:`ProtectedVariant.keys`)."""
    l, measure = spec.risk.l, spec.risk.l_diversity
    figures = records_below_l(protected, spec, released.categorical)
    counts = {"distinct": {}, "entropy": {}}
    for name, value in figures.items():
        kind = "entropy" if name.endswith("_records_below_entropy_l") else "distinct"
        counts[kind][name.removesuffix("_records_below_entropy_l").removesuffix("_records_below_l")] = float(value)
    checks = {}
    for name, kind in zip(L_DIVERSITY_CHECKS, ("distinct", "entropy")):
        found = int(sum(counts[kind].values()))
        rule = (f"every record's key group holds at least l={l} distinct values of each sensitive variable"
                if kind == "distinct" else
                f"every record's key group has an entropy of each sensitive variable of at least log({l})")
        checks[name] = CheckOutcome(passed=found == 0, value=found, rule=rule,
                                    blocking=kind == "distinct" or measure == "entropy",
                                    figures=dict(counts[kind]))
    return checks




@dataclass(frozen=True)
class CheckOutcome:
    """The outcome of one release check (:func:`release_checks`).

    ``passed``; ``value``: the figure found (a count, a share, the released identifier columns, or
    ``"not evaluated: ..."`` when the check could not be made); ``rule`` in words; ``blocking``:
    a variant failing a blocking check is withheld, a failed non-blocking one is a warning;
    ``measure``: which linkage gives the value (``linkage_risk``) or which variable (the utility
    limits); ``figures``: every linkage share behind it (``linkage_risk``, :func:`linkage_figures`,
    which residual risk reuses), the change of every variable (the utility limits) or the records
    below l of every sensitive variable (l-diversity); None for NaN.
    """

    passed: bool
    value: Any
    rule: str
    blocking: bool
    measure: str | None = None
    figures: dict[str, float | None] | None = None

    def record(self) -> dict:
        """The outcome as a release manifest records it (JSON: ``passed``, ``value``, ``rule``,
        ``blocking``, and ``measure`` and ``figures`` when the check has them)."""
        record = {"passed": self.passed, "value": self.value, "rule": self.rule, "blocking": self.blocking}
        if self.measure is not None:
            record["measure"] = self.measure
        if self.figures is not None:
            record["figures"] = dict(self.figures)
        return record

    @classmethod
    def of_record(cls, record: dict) -> CheckOutcome:
        """An outcome read back from a manifest's record (recorded without ``blocking``: blocking)."""
        return cls(passed=bool(record["passed"]), value=record["value"], rule=record["rule"],
                   blocking=bool(record.get("blocking", True)), measure=record.get("measure"),
                   figures=record.get("figures"))

    def explained(self, name: str) -> str:
        """Why check ``name`` failed: its rule, the value found and, where the check names it, the
        measure that gave the value. A risk share is written in % ("2.43 %"), another number to 4
        significant digits, a count or a text as it is."""
        value = self.value
        if isinstance(value, (float, np.floating)):
            value = format_value(value, "share") if name in SHARE_CHECKS else f"{float(value):.4g}"
        if self.measure:
            return f"{self.rule} (found: {value}, {self.measure})"
        return f"{self.rule} (found: {value})"


def check_records(checks: dict[str, CheckOutcome]) -> dict[str, dict]:
    """Outcomes as a release manifest records them (:meth:`CheckOutcome.record`)."""
    return {name: outcome.record() for name, outcome in checks.items()}


def release_checks(
    protected: pd.DataFrame, spec: SurveySpec, plan: Plan, *, original: pd.DataFrame | None = None,
    released: ReleasedKeys | None = None, utility: pd.DataFrame | None = None,
) -> dict[str, CheckOutcome]:
    """The release rules for a protected variant: ``{check: CheckOutcome}``, for the checks of
    :func:`release_check_names`.

    Blocking rules (a variant failing one is not released):

    * ``k_anonymity``: no record with fk < k for the plan's k (SPEC §3.1, missing values matching
      any value, §2.4);
    * ``global_risk``: global risk (SPEC §3.3) at most ``risk.max_global_risk``;
    * ``linkage_risk`` (a spec with continuous keys): the share of released records that
      distance-based record linkage (SPEC §4.1) links to their own original, the largest over the
      variants an intruder can choose from (:func:`linkage_figures`), at most
      ``risk.max_linkage_risk``; the outcome also names the variant (``measure``) and carries every
      share (``figures``, which residual risk reuses). Needs ``original``, the wave the variant was
      protected from;
    * ``no_direct_identifier``: no column the spec marks as a direct identifier (SPEC §8.1), and no
      numeric record key released unchanged (:func:`record_keys`);
    * ``released_categories`` (a spec with categorical keys): no original category of a key counts
      more records in the released files than in ``original`` (:func:`released_categories_check`,
      SPEC §8.2). Needs ``original``.

    * ``l_diversity`` (a spec with a sensitive variable and ``risk.l``): no record whose released key
      group holds fewer than l distinct values of a sensitive variable (SPEC §3.6);
      ``entropy_l_diversity`` the same with entropy l-diversity, blocking when ``risk.l_diversity``
      is "entropy", else a warning (:func:`l_diversity_checks`);
    * the utility limits of ``limits:`` (:func:`utility_checks`): ``suppression_limit``,
      ``records_changed_limit`` (with categorical keys), ``mean_change_limit``,
      ``variance_change_limit`` (with continuous keys), ``correlation_change_limit`` (with two),
      ``keys_not_released_limit`` (the share of the keys withheld or released as one category,
      :func:`keys_not_released_row`; its ``measure`` names them).

    Warning (reported, not blocking):

    * ``individual_risk``: no record whose individual risk exceeds ``risk.individual_risk_threshold``
      (count of records above a threshold, SPEC §3.3).

    Without categorical keys k-anonymity, global and individual risk do not apply (no key
    combination singles out a record) and are left out (:func:`checks_not_applicable`); the
    continuous keys' linkage risk is then the blocking risk rule. Where sdcMicro's ``dRisk``
    (``interval_risk``, SPEC §4.2) asks whether each original value lies within k·sd of its
    released value, ``linkage_risk`` asks whether the intruder's nearest released record is the
    person's own: the measure of re-identification that a threshold can bound.

    A check that cannot be evaluated on the variant (its risk cannot be computed, e.g. a weight the
    plan left missing) fails, its value saying ``not evaluated:`` and why, so that nothing is
    released on a check nobody could make.

    ``utility``: the variant's :func:`utility_changes` when the caller has computed them already
    (:func:`protect_variant` keeps them for the report), so that they are not computed twice.
    """
    if original is None:
        raise ValueError("release_checks: original is required (the utility limits compare the variant with it)")
    checks: dict[str, CheckOutcome] = {}
    released = released_keys(spec, protected) if released is None else released
    threshold = spec.risk.individual_risk_threshold
    if spec.categorical_keys:
        rules = {
            "k_anonymity": (f"every record's key is shared by at least k={plan.k} records", True),
            "global_risk": (f"global risk <= {spec.risk.max_global_risk}", True),
            "individual_risk": (f"no record with individual risk > {threshold}", False),
        }
        try:
            table = risk_table(protected, released.categorical, weight=released.weight)
            violations = int((table["fk"] < plan.k).sum())
            global_risk = risk.summarise_risk(table)["risk"]
            risky = int(risk.risk_above_threshold(table["risk"], threshold))
            outcomes = {"k_anonymity": (violations == 0, violations),
                        "global_risk": (global_risk <= spec.risk.max_global_risk, global_risk),
                        "individual_risk": (risky == 0, risky)}
        except SDCInputError as exc:
            outcomes = dict.fromkeys(rules, (False, f"not evaluated: {exc}"))
        for name, (rule, blocking) in rules.items():
            checks[name] = CheckOutcome(bool(outcomes[name][0]), outcomes[name][1], rule, blocking)
    if spec.continuous_keys:
        rule = (f"record linkage risk (largest share of records linked to their own original) <= "
                f"{spec.risk.max_linkage_risk}")
        try:
            figures = linkage_figures(original, protected, spec, plan.name, released=released)
        except SDCInputError as exc:
            checks["linkage_risk"] = CheckOutcome(False, f"not evaluated: {exc}", rule, True)
        else:
            value = figures["linkage_risk"]
            checks["linkage_risk"] = CheckOutcome(
                passed=bool(value <= spec.risk.max_linkage_risk),
                value=value,
                rule=rule,
                blocking=True,
                measure=_linkage_measure(figures),
                figures={name: (None if np.isnan(v) else v) for name, v in figures.items()},
            )
    identifiers = [c for c in direct_identifiers(spec) if c in protected.columns] + record_keys(spec, protected)
    checks["no_direct_identifier"] = CheckOutcome(not identifiers, ", ".join(identifiers),
                                                  "no direct identifier column, and no numeric record key unchanged, "
                                                  "is released", True)
    if spec.categorical_keys:
        checks["released_categories"] = released_categories_check(original, protected, spec, plan, released)
    if _l_diversity_applies(spec):
        checks.update(l_diversity_checks(protected, spec, released))
    try:
        changes = utility_changes(original, protected, spec, plan, released=released) if utility is None else utility
        checks.update(utility_checks(changes, spec))
    except SDCInputError as exc:
        checks.update({name: CheckOutcome(False, f"not evaluated: {exc}", UTILITY_RULES[name][2], True)
                       for name in release_check_names(spec) if name in UTILITY_CHECKS})
    order = release_check_names(spec)
    return {name: checks[name] for name in order if name in checks}


#: One-to-one linkage (an O(n^3) assignment, scipy's linear_sum_assignment) runs in the wave chain on
#: at most this many compared records; above it the nearest-record linkages, which cost O(n log n),
#: stand for the intruder and the one-to-one shares are NaN. The assignment is slowest where the
#: released amounts lie far from their originals (noise and rank swapping): on such a variant of
#: sdcMicro's testdata it took 1.8 s at 1,500 records, 4.3 s at 2,000 and 39 s at 3,932 (issue 23),
#: and the wave chain runs it for every plan and every candidate the plan search confirms.
#: risk.MAX_ONE_TO_ONE_LINKAGE is the engine's memory bound.
ONE_TO_ONE_RECORDS = 1_500


# The linkage shares the linkage_risk check takes the largest of, with the intruder each stands for:
# every linkage with its ties broken at random. The shares that break ties in the intruder's favour
# (between the identical released records of one microaggregation group, one-to-one; between
# identical or equally near originals, nearest: integer ages and years, categories) are not among
# them: no intruder can tell which of t equally near records is the unit, so they would credit him
# with links he cannot make; they are reported as upper bounds in residual_risk.
LINKAGE_CHECK_MEASURES = {
    "record_linkage_expected_risk": "Euclidean, nearest original, ties at random",
    "record_linkage_mahalanobis_expected_risk": "Mahalanobis, nearest original, ties at random",
    "record_linkage_gower_expected_risk": "Gower with the released categorical keys, nearest original, ties at random",
    "record_linkage_one_to_one_expected_risk": "Euclidean, one-to-one, ties at random",
}

# residual_risk column -> (distance, assignment, reported figure) of risk.record_linkage_risk
_LINKAGE_VARIANTS = {
    "record_linkage_risk": ("euclidean", "nearest", "risk"),
    "record_linkage_expected_risk": ("euclidean", "nearest", "expected_risk"),
    "record_linkage_mahalanobis_risk": ("mahalanobis", "nearest", "risk"),
    "record_linkage_mahalanobis_expected_risk": ("mahalanobis", "nearest", "expected_risk"),
    "record_linkage_gower_risk": ("gower", "nearest", "risk"),
    "record_linkage_gower_expected_risk": ("gower", "nearest", "expected_risk"),
    "record_linkage_one_to_one_risk": ("euclidean", "one_to_one", "risk"),
    "record_linkage_one_to_one_expected_risk": ("euclidean", "one_to_one", "expected_risk"),
}


def linkage_figures(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, name: str, *,
                    released: ReleasedKeys) -> dict[str, float]:
    """Every record-linkage share of a variant (SPEC §4.1) and ``linkage_risk``, the largest of the
    shares of :data:`LINKAGE_CHECK_MEASURES`: the best linkage an intruder can choose.

    Linkage uses every continuous key the variant releases (one released unchanged links as well as
    any) on the records it releases (:func:`~sdc_dagster.pipeline.variant.retained_records`); Gower
    adds the categorical keys it releases. The shares are those of
    :func:`~sdc_dagster.pipeline.evaluation.residual_risk`: ``record_linkage_risk`` (Euclidean,
    nearest original, ties for the intruder), ``record_linkage_expected_risk`` (the same, ties at
    random) and the other variants of :func:`_record_linkage_variants`, NaN where a variant
    does not apply. A variant in which no continuous key changed has ``linkage_risk`` 1
    (every released record is its own original) and no share computed; one that releases no
    continuous key has ``linkage_risk`` 0 (nothing to link on). ``released``: the keys the variant
    releases (:attr:`ProtectedVariant.keys`).
    """
    matched = retained_records(original, protected, name)
    continuous = released.continuous
    changed = perturbed(matched, protected, continuous)
    if not continuous or not changed:
        return {**dict.fromkeys(_LINKAGE_VARIANTS, np.nan), "linkage_risk": 1.0 if continuous else 0.0}
    figures = _record_linkage_variants(matched, protected, continuous, released.categorical, spec)
    checked = [figures[m] for m in LINKAGE_CHECK_MEASURES if not np.isnan(figures[m])]
    return {**figures, "linkage_risk": max(checked)}


def _linkage_measure(figures: dict[str, float]) -> str:
    """Which linkage gives the ``linkage_risk`` of :func:`linkage_figures`, in words."""
    for measure, label in LINKAGE_CHECK_MEASURES.items():
        if figures[measure] == figures["linkage_risk"]:
            return label
    if figures["linkage_risk"] == 1.0:
        return "no continuous key changed: every released record is its own original"
    return "no continuous key released"


#: Release checks whose value is a share (of the records, of a key's values, or a relative change),
#: written in % in their outcome.
SHARE_CHECKS = ("global_risk", "linkage_risk", "suppression_limit", "records_changed_limit", "mean_change_limit",
                "variance_change_limit", "keys_not_released_limit")


def blocking_failures(checks: dict[str, CheckOutcome]) -> dict[str, str]:
    """The failed blocking checks of :func:`release_checks` outcomes: {check: why}. A variant with
    any is withheld."""
    return {name: c.explained(name) for name, c in checks.items() if not c.passed and c.blocking}


def release_warnings(checks: dict[str, CheckOutcome]) -> dict[str, str]:
    """The failed non-blocking checks of :func:`release_checks` outcomes: {check: why}."""
    return {name: c.explained(name) for name, c in checks.items() if not c.passed and not c.blocking}


def _record_linkage_variants(
    original: pd.DataFrame, protected: pd.DataFrame, continuous: list[str], keys: list[str], spec: SurveySpec
) -> dict[str, float]:
    """Linked shares of the record-linkage variants of SPEC §4.1 on the released continuous keys
    ``continuous`` (those :func:`linkage_figures` links on, at least one; the Mahalanobis share is
    NaN when they have a singular covariance, and the one-to-one shares when more than
    :data:`ONE_TO_ONE_RECORDS` records are compared). Gower links on them and ``keys``, the categorical
    keys the variant releases (spec scales, nominal when none is given, and ordinal orders).

    The shares are all a check reads: the linkages report no partners (``partners=False``, so that
    Gower's search of a record stops at the first original nearer than its own, issue 38).
    The linkages run on two threads, the Gower linkage (the longest) beside the others: their k-d
    tree queries and array operations release the GIL (on the 100k wave 1.2 s -> 0.9 s per variant).
    An error is raised as the linkages would raise it one after the other (Euclidean first)."""
    figures = dict.fromkeys(_LINKAGE_VARIANTS, np.nan)
    compared = int((original[continuous].notna().all(axis=1) & protected[continuous].notna().all(axis=1)).sum())
    key_scales = {k: spec.scales.get(k, "nominal") for k in keys}
    gower = {"scales": key_scales, "categories": ordinal_orders(spec, key_scales)}
    runs = list(dict.fromkeys((distance, assignment) for distance, assignment, _ in _LINKAGE_VARIANTS.values()
                              if assignment == "nearest" or compared <= ONE_TO_ONE_RECORDS))

    def link(distance: str, assignment: str) -> risk.RecordLinkageRisk | None:
        columns, options = (continuous + keys, gower) if distance == "gower" else (continuous, {})
        try:
            return risk.record_linkage_risk(original, protected, columns, distance=distance, assignment=assignment,
                                            partners=False, **options)
        except SDCInputError:  # the inputs passed the Euclidean linkage: a singular covariance
            if distance != "mahalanobis":
                raise
            return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {run: pool.submit(link, *run) for run in sorted(runs, key=lambda run: run[0] != "gower")}
        results = {run: futures[run].result() for run in runs}
    for column, (distance, assignment, figure) in _LINKAGE_VARIANTS.items():
        if results.get((distance, assignment)) is not None:
            figures[column] = float(getattr(results[distance, assignment], figure))
    return figures


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class ProtectedVariant:
    """One plan's protected variant of a wave, as every later stage receives it.

    ``data``: the variant in the wave's order and index (residual risk and loss compare it record by
    record); ``steps``: the record of each step with its seed (:func:`protect`); ``matrices``: the
    PRAM transition matrix of each variable a PRAM step changed; ``checks``: the release checks
    (:func:`release_checks`); ``keys``: the quasi-identifiers and design columns it still releases
    (:func:`~sdc_dagster.pipeline.variant.released_keys`, derived once, where the variant is made);
    ``utility``: its per-variable utility figures (:func:`utility_changes`), computed once with its
    release checks and shown by the report (issue 38: on 1,000,000 records 0.4 CPU s a variant), None
    where they were not (the plan search's checks taken over) or cannot be computed;
    ``release``: the release decision written for it (its folder and
    manifest, :func:`sdc_dagster.releases.wave.record_release`), None until then.
    """

    plan: Plan
    wave: str
    data: pd.DataFrame
    steps: list[dict]
    matrices: dict[str, pd.DataFrame]
    checks: dict[str, CheckOutcome]
    keys: ReleasedKeys
    utility: pd.DataFrame | None = None
    release: Release | None = None

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def seed(self) -> int | None:
        """The plan's seed, from which every step seed and the published order derive."""
        return self.plan.random_state

    @property
    def withheld_because(self) -> dict[str, str]:
        """The failed blocking checks (:func:`blocking_failures`): empty when eligible for release."""
        return blocking_failures(self.checks)

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python: the data."""
        return {"": self.data}

    def recorded(self, release: Release) -> ProtectedVariant:
        """This variant with the release decision written for it."""
        return replace(self, release=release)


def protect_variant(
    data: pd.DataFrame,
    spec: SurveySpec,
    plan: Plan,
    *,
    wave: str,
    checks: dict[str, CheckOutcome] | None = None,
    protected: PlanResult | None = None,
) -> ProtectedVariant:
    """Protect the wave by ``plan`` (:func:`protect`) and run the release checks on the variant
    (:func:`release_checks`). ``checks`` and ``protected``: the outcomes already evaluated on, and
    the protection already made of, exactly this plan and wave (the plan search confirms its
    recommended plan under the searched plan's name and seeds), so that they are not made twice.
    Without ``checks`` the variant keeps the utility figures its checks were made from
    (:attr:`ProtectedVariant.utility`)."""
    result = protect(data, spec, plan, wave=str(wave)) if protected is None else protected
    keys = released_keys(spec, result.data)
    utility = None
    if checks is None:
        try:
            utility = utility_changes(data, result.data, spec, plan, released=keys)
        except SDCInputError:  # release_checks says why in the utility limits' outcomes
            utility = None
        checks = release_checks(result.data, spec, plan, original=data, released=keys, utility=utility)
    matrices = {key.split(":", 1)[1]: m for key, m in result.artifacts.items() if key.startswith("pram:")}
    return ProtectedVariant(plan=plan, wave=str(wave), data=result.data, steps=result.steps, matrices=matrices,
                            checks=dict(checks), keys=keys, utility=utility)
