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

from sdc_dagster import lineage, risk
from sdc_dagster.errors import SDCInputError
from sdc_dagster.pipeline.risk import risk_table
from sdc_dagster.pipeline.variant import ordinal_orders, perturbed, released_keys, retained_records
from sdc_dagster.protect.plan import PlanResult, apply_plan
from sdc_dagster.release_files import release_coding
from sdc_dagster.released_categories import category_count_excess
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
        applied=applied,
    )


def release_check_names(spec: SurveySpec) -> list[str]:
    """The release checks :func:`release_checks` evaluates for a spec's plans, in order: the
    categorical ones only with categorical keys, ``linkage_risk`` only with continuous keys
    (:func:`checks_not_applicable` says why a check is left out)."""
    names = ["k_anonymity", "global_risk"] if spec.categorical_keys else []
    names += ["linkage_risk"] if spec.continuous_keys else []
    names += ["no_direct_identifier"]
    return names + (["released_categories", "individual_risk"] if spec.categorical_keys else [])


def checks_not_applicable(spec: SurveySpec) -> dict[str, str]:
    """The release checks left out for a spec, with the reason: {check: why}."""
    reasons = {}
    if not spec.categorical_keys:
        why = "the spec has no categorical key: no key combination can single out a record"
        reasons.update(k_anonymity=why, global_risk=why, individual_risk=why)
        reasons["released_categories"] = "the spec has no categorical key: no released category to compare"
    if not spec.continuous_keys:
        reasons["linkage_risk"] = "the spec has no continuous key: nothing to link on"
    return reasons


def released_categories_check(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec,
                              plan: Plan) -> CheckOutcome:
    """The release check ``released_categories`` (SPEC §8.2): in the variant as its safe files code
    it (:func:`~sdc_dagster.release_files.release_coding`: merged categories with codes of their
    own), no original category of a categorical key counts more records than in ``original``
    (:func:`~sdc_dagster.released_categories.category_count_excess`). Keys a perturbative step
    changed (PRAM moves records between categories by design) are left out and named in the rule.
    The value lists each breach, ``key = category: original -> released records``."""
    coding = release_coding(original, spec, plan)
    perturbed = set(coding.perturbed)
    keys = [k for k in released_keys(spec, protected).categorical if k not in perturbed]
    breaches = category_count_excess(retained_records(original, protected, plan.name), coding.apply(protected), keys)
    rule = "no original category of a categorical key is released with more records than it has"
    if coding.perturbed:
        rule += f" (not checked: {', '.join(coding.perturbed)}, changed by a perturbative step)"
    found = "; ".join(f"{key} = {category!r}: {before} -> {after} records"
                      for key, rows in breaches.items() for category, before, after in rows)
    return CheckOutcome(not breaches, found, rule, True)




@dataclass(frozen=True)
class CheckOutcome:
    """The outcome of one release check (:func:`release_checks`).

    ``passed``; ``value``: the figure found (a count, a share, the released identifier columns, or
    ``"not evaluated: ..."`` when the check could not be made); ``rule`` in words; ``blocking``:
    a variant failing a blocking check is withheld, a failed non-blocking one is a warning;
    ``measure``: which linkage gives the value (``linkage_risk`` only); ``figures``: every linkage
    share behind it (:func:`linkage_figures`, None for NaN), which residual risk reuses.
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
    protected: pd.DataFrame, spec: SurveySpec, plan: Plan, *, original: pd.DataFrame | None = None
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
    """
    checks: dict[str, CheckOutcome] = {}
    released = released_keys(spec, protected)
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
        if original is None:
            raise ValueError("release_checks: original is required for a spec with continuous keys (linkage_risk)")
        rule = (f"record linkage risk (largest share of records linked to their own original) <= "
                f"{spec.risk.max_linkage_risk}")
        try:
            figures = linkage_figures(original, protected, spec, plan.name)
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
        if original is None:
            raise ValueError("release_checks: original is required for a spec with categorical keys "
                             "(released_categories)")
        checks["released_categories"] = released_categories_check(original, protected, spec, plan)
    if spec.categorical_keys:  # the warning last, as before
        checks["individual_risk"] = checks.pop("individual_risk")
    return checks


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


def linkage_figures(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, name: str) -> dict[str, float]:
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
    continuous key has ``linkage_risk`` 0 (nothing to link on).
    """
    matched = retained_records(original, protected, name)
    released = released_keys(spec, protected).continuous
    changed = perturbed(matched, protected, released)
    if not released or not changed:
        return {**dict.fromkeys(_LINKAGE_VARIANTS, np.nan), "linkage_risk": 1.0 if released else 0.0}
    figures = _record_linkage_variants(matched, protected, released, spec)
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


#: Release checks whose value is a share of the records (a risk), written in % in their outcome.
SHARE_CHECKS = ("global_risk", "linkage_risk")


def blocking_failures(checks: dict[str, CheckOutcome]) -> dict[str, str]:
    """The failed blocking checks of :func:`release_checks` outcomes: {check: why}. A variant with
    any is withheld."""
    return {name: c.explained(name) for name, c in checks.items() if not c.passed and c.blocking}


def release_warnings(checks: dict[str, CheckOutcome]) -> dict[str, str]:
    """The failed non-blocking checks of :func:`release_checks` outcomes: {check: why}."""
    return {name: c.explained(name) for name, c in checks.items() if not c.passed and not c.blocking}


def _record_linkage_variants(
    original: pd.DataFrame, protected: pd.DataFrame, continuous: list[str], spec: SurveySpec
) -> dict[str, float]:
    """Linked shares of the record-linkage variants of SPEC §4.1 on the released continuous keys
    ``continuous`` (those :func:`linkage_figures` links on, at least one; the Mahalanobis share is
    NaN when they have a singular covariance, and the one-to-one shares when more than
    :data:`ONE_TO_ONE_RECORDS` records are compared). Gower links on them and the categorical keys the
    variant releases (spec scales, nominal when none is given, and ordinal orders).

    The linkages run on two threads, the Gower linkage (the longest) beside the others: their k-d
    tree queries and array operations release the GIL (on the 100k wave 1.2 s -> 0.9 s per variant).
    An error is raised as the linkages would raise it one after the other (Euclidean first)."""
    figures = dict.fromkeys(_LINKAGE_VARIANTS, np.nan)
    compared = int((original[continuous].notna().all(axis=1) & protected[continuous].notna().all(axis=1)).sum())
    keys = released_keys(spec, protected).categorical
    key_scales = {k: spec.scales.get(k, "nominal") for k in keys}
    gower = {"scales": key_scales, "categories": ordinal_orders(spec, key_scales)}
    runs = list(dict.fromkeys((distance, assignment) for distance, assignment, _ in _LINKAGE_VARIANTS.values()
                              if assignment == "nearest" or compared <= ONE_TO_ONE_RECORDS))

    def link(distance: str, assignment: str) -> risk.RecordLinkageRisk | None:
        columns, options = (continuous + keys, gower) if distance == "gower" else (continuous, {})
        try:
            return risk.record_linkage_risk(original, protected, columns, distance=distance, assignment=assignment,
                                            **options)
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
    (:func:`release_checks`); ``release``: the release decision written for it (its folder and
    manifest, :func:`sdc_dagster.pipeline.audit.record_release`), None until then.
    """

    plan: Plan
    wave: str
    data: pd.DataFrame
    steps: list[dict]
    matrices: dict[str, pd.DataFrame]
    checks: dict[str, CheckOutcome]
    release: lineage.Release | None = None

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

    def recorded(self, release: lineage.Release) -> ProtectedVariant:
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
    recommended plan under the searched plan's name and seeds), so that they are not made twice."""
    result = protect(data, spec, plan, wave=str(wave)) if protected is None else protected
    if checks is None:
        checks = release_checks(result.data, spec, plan, original=data)
    matrices = {key.split(":", 1)[1]: m for key, m in result.artifacts.items() if key.startswith("pram:")}
    return ProtectedVariant(plan=plan, wave=str(wave), data=result.data, steps=result.steps, matrices=matrices,
                            checks=dict(checks))
