"""Asset checks guarding the release rules (SPEC §3.1, §3.3, §4.1, §8.1).

The release stage (``<survey>/release``) decides which plan may be released, and its checks are
the release rules of every plan's variant: for each plan (``<plan>__<check>``), the protected
variant is k-anonymous for the plan's k and its global risk is under the spec's threshold (with
categorical keys), its record-linkage risk is under the spec's ``max_linkage_risk`` (with
continuous keys), it carries no direct identifier, its safe files release no original category
with more records than it had (with categorical keys, SPEC §8.2), its key groups are l-diverse (a
spec with a sensitive variable and ``risk.l``) and it stays within the utility limits
(``limits:``). These are blocking: a variant failing one is withheld, the release stage writes its
withheld record and no release. A failure has severity ERROR when the wave releases nothing, WARN
when another plan is the wave's release (the asset is the wave's release: the lineage then shows it
with a warning, a withheld alternative, not as failed) (Dagster's own ``blocking`` flag is not used,
because it would also skip the report that explains the failure, so the UI labels these checks
"non-blocking": their descriptions and the metadata say "withholds the variant" rather than
"blocking"). A record above the individual-risk threshold is a warning (severity WARN). For the
original wave the global risk is checked against the same threshold on ``risk_scores`` (a
warning: it is what protection must fix), and the report carries the wave's decision
(``wave_released``).

The outcomes are computed with each variant (:func:`sdc_dagster.pipeline.protection.release_checks`,
which the plan search runs too) and reported as ``check_specs`` of the release stage, in the step
that makes the decision, so that a check of one wave reads that wave only.
"""

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey, MetadataValue

from sdc_dagster.pipeline.protection import (
    UTILITY_RULES,
    CheckOutcome,
    ProtectedVariant,
    release_check_names,
    wave_plan_names,
)
from sdc_dagster.report.references import citation_text
from sdc_dagster.spec import SEARCHED_PLAN, Plan, SurveySpec


def release_check_name(plan: str, check: str) -> str:
    """The name of release check ``check`` of plan ``plan``'s variant among the release stage's checks."""
    return f"{plan}__{check}"


def _descriptions(spec: SurveySpec, plan: Plan) -> dict[str, str]:
    """What each release check of ``plan`` withholds, as the UI describes it."""
    return {
        "k_anonymity": (f"withholds the variant unless every record's key is shared by at least {plan.k} records "
                        f"(fk >= k; {citation_text('3.1')})"),
        "global_risk": (f"withholds the variant unless its global risk <= {spec.risk.max_global_risk} "
                        f"({citation_text('3.3')})"),
        "linkage_risk": (f"withholds the variant unless at most {spec.risk.max_linkage_risk} of the records are linked "
                         f"to their own original by the best distance-based record linkage ({citation_text('4.1')})"),
        "no_direct_identifier": ("withholds the variant unless no direct identifier column, and no numeric record "
                                 f"key unchanged, is released ({citation_text('8.1')})"),
        "released_categories": ("withholds the variant unless no original category of a categorical key is released "
                                "with more records than it has: merged categories get codes and labels of their own "
                                f"(keys a perturbative step changed excepted; {citation_text('8.2')})"),
        "individual_risk": (f"warning: no record with individual risk > {spec.risk.individual_risk_threshold} "
                            f"({citation_text('3.2')})"),
        "l_diversity": (f"withholds the variant unless every record's key group holds at least l={spec.risk.l} distinct "
                        f"values of each sensitive variable (distinct l-diversity; {citation_text('3.6')})"),
        "entropy_l_diversity": (("withholds the variant unless" if spec.risk.l_diversity == "entropy" else "warning:")
                                + f" every key group's entropy of each sensitive variable is at least log({spec.risk.l})"
                                f" (entropy l-diversity; {citation_text('3.6')})"),
        **{name: f"withholds the variant unless the {words} is at most {getattr(spec.limits, limit)} (limits.{limit})"
           for name, (_, limit, words) in UTILITY_RULES.items()},
    }


def release_check_specs(spec: SurveySpec, asset: AssetKey) -> list[AssetCheckSpec]:
    """The release checks of every plan's variant (the spec's plans, then the searched plan when the
    spec searches), as checks of the release stage ``asset``: the outcomes of
    :func:`sdc_dagster.pipeline.protection.release_checks`, named by
    :func:`sdc_dagster.pipeline.protection.release_check_names` after the plan
    (:func:`release_check_name`)."""
    specs = []
    for name in wave_plan_names(spec):
        # the searched plan's steps are the search's, known when it has run; its k is the spec's
        plan = Plan(name=name, steps=(), k=spec.risk.k, random_state=0) if name == SEARCHED_PLAN else spec.plan(name)
        descriptions = _descriptions(spec, plan)
        specs += [AssetCheckSpec(name=release_check_name(name, check), asset=asset,
                                 description=f"protected_{name}: {descriptions[check]}")
                  for check in release_check_names(spec)]
    return specs


def release_check_results(variants: dict[str, ProtectedVariant], *, wave_released: bool) -> list[AssetCheckResult]:
    """Check results of :func:`release_check_specs` from each plan's variant (plan name -> variant):
    its :func:`sdc_dagster.pipeline.protection.release_checks` outcomes; a blocking check's severity
    ERROR only when the wave releases nothing (``wave_released`` False; module docstring)."""
    return [_check_result(plan, name, outcome, error=outcome.blocking and not wave_released)
            for plan, variant in variants.items() for name, outcome in variant.checks.items()]


def _check_result(plan: str, name: str, outcome: CheckOutcome, *, error: bool) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=release_check_name(plan, name),
        passed=bool(outcome.passed),
        severity=AssetCheckSeverity.ERROR if error else AssetCheckSeverity.WARN,
        metadata={
            "plan": plan,
            "value": outcome.value,
            "rule": outcome.rule,
            "withholds_variant": outcome.blocking,
            **({"measure": outcome.measure} if outcome.measure is not None else {}),
            **({"figures": MetadataValue.json(outcome.figures)} if outcome.figures is not None else {}),
        },
    )


def original_risk_check_spec(spec: SurveySpec, asset: AssetKey) -> AssetCheckSpec:
    return AssetCheckSpec(
        name="global_risk_before_protection",
        asset=asset,
        description=f"global risk of the unprotected wave <= {spec.risk.max_global_risk} ({citation_text('3.3')})",
    )


def original_risk_check_result(spec: SurveySpec, global_risk: float) -> AssetCheckResult:
    return AssetCheckResult(
        check_name="global_risk_before_protection",
        passed=global_risk <= spec.risk.max_global_risk,
        severity=AssetCheckSeverity.WARN,
        metadata={"global_risk": global_risk, "threshold": spec.risk.max_global_risk},
    )


def wave_release_check_spec(asset: AssetKey) -> AssetCheckSpec:
    """The wave's release decision, on the report: blocking, so that a wave whose every plan was
    withheld fails its run in the UI (the report is still written: the check runs after it)."""
    return AssetCheckSpec(
        name="wave_released", asset=asset, blocking=True,
        description="blocking: one plan of the wave passes every blocking release check and is released",
    )


def wave_release_check_result(spec: SurveySpec, plans: dict, released: dict | None) -> AssetCheckResult:
    """Passed when the wave has a release (the recommended plan); otherwise names every plan's
    failed blocking checks."""
    withheld = {name: plan.withheld_because for name, plan in plans.items() if not plan.releasable}
    return AssetCheckResult(
        check_name="wave_released",
        passed=released is not None,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "released_plan": released["plan"] if released else "none",
            "withheld": MetadataValue.json(withheld),
        },
    )
