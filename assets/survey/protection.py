"""Stage 3 of the survey chain: one protected variant per plan, and the plan search with its
searched variant. Each protected asset returns a :class:`~sdc_dagster.pipeline.protection.ProtectedVariant`
(data, steps, PRAM matrices, check outcomes, seed) that the later stages receive; it writes no file:
the release stage (:mod:`.release`) writes each plan's release decision and reports the release
checks as its asset checks."""

from dagster import AssetExecutionContext, AssetsDefinition, MetadataValue, Output, asset

from sdc_dagster.assets.survey.common import code_version, common, ins, table_markdown
from sdc_dagster.pipeline import protection
from sdc_dagster.search import outcome as search_outcome
from sdc_dagster.search import wave as search
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.releases.wave import release_risk
from sdc_dagster.spec.schemas import microdata_schema, validate
from sdc_dagster.spec import Plan, SurveySpec


def protected_asset(spec: SurveySpec, plan: Plan) -> AssetsDefinition:
    @asset(
        name=f"protected_{plan.name}",
        ins=ins(spec, "raw_microdata"),
        description=(
            f"Protected variant by plan {plan.name!r}: {plan.description}, with the outcomes of its release checks. "
            "Eligible for release only if its blocking release checks pass; otherwise withheld (the release stage "
            "reports the checks as its own and writes the withheld record; the variant is kept here for evaluation "
            "only)."
        ),
        code_version=code_version(spec.variables, spec.risk, plan, spec.release),
        **common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: RawWave):
        return _protect_and_check(context, spec, plan, raw_microdata)

    return protected


def _protect_and_check(context: AssetExecutionContext, spec: SurveySpec, plan: Plan, raw_microdata: RawWave,
                       searched: search_outcome.PlanSearch | None = None):
    """Apply ``plan`` to the wave and run the release checks (unless the plan search ``searched`` did
    both already): the body of every protected asset, which returns the variant with its figures
    (the release stage reports its checks' results)."""
    wave = context.partition_key
    variant = protection.protect_variant(raw_microdata.data, spec, plan, wave=wave,
                                         checks=searched.checks if searched else None,
                                         protected=searched.protected if searched else None)
    validate(variant.data, microdata_schema(spec, protected=True), source=f"protected_{plan.name}")
    failures = variant.withheld_because
    if failures:
        context.log.warning(
            f"protected_{plan.name} wave {wave} fails blocking checks, the release stage withholds it: "
            + "; ".join(f"{name}: {why}" for name, why in failures.items())
        )
    outcomes = variant.checks
    return Output(
        variant,
        metadata={
            "plan": plan.name,
            "random_state": variant.seed,
            "steps": MetadataValue.json(variant.steps),
            "records": len(variant.data),
            **{f"check_{name}": bool(c.passed) for name, c in outcomes.items()},
            **release_risk(variant),
            **({"linkage_measure": outcomes["linkage_risk"].measure} if "linkage_risk" in outcomes else {}),
            "checks_not_applicable": MetadataValue.json(protection.checks_not_applicable(spec)),
            "eligible": not failures,
            "withheld_because": MetadataValue.json(failures),
            "warnings": MetadataValue.json(protection.release_warnings(outcomes)),
        },
    )


def plan_search_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="plan_search",
        ins=ins(spec, "raw_microdata"),
        description=(
            "Search of the protection plans generated from the wave (recodings, local suppression, "
            "microaggregation, noise): the front of risk against information loss and the recommended "
            "candidate, which protected_searched materialises. When the wave releases nothing, the release stage "
            "asks it what it would take."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search),
        **common(spec),
    )
    def plan_search(context: AssetExecutionContext, raw_microdata: RawWave):
        found = search.search_wave(raw_microdata.data, spec, wave=context.partition_key,
                                   progress=lambda done, total, note: context.log.info(
                                       search.progress_line(done, total, note)))
        outcome = search_outcome.plan_search(found, spec)
        context.add_output_metadata({
            "front": table_markdown(outcome.front),
            "recommended": outcome.plan.description,
            "nodes_evaluated": found.nodes_evaluated,
            "nodes_total": found.nodes_total,
            "exhaustive": found.exhaustive,
            "bound": found.bound,
            "seconds": round(found.seconds, 2),
            "random_state": outcome.plan.random_state,
            "steps": MetadataValue.json(list(outcome.plan.steps)),
        })
        return outcome

    return plan_search


def protected_searched_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name=f"protected_{search.SEARCHED_PLAN}",
        ins=ins(spec, "raw_microdata", "plan_search"),
        description=(
            "Protected variant by the plan the search recommends (plan_search), through the same release "
            "checks, release stage, manifest and audit as every spec plan; its steps and seed are in its manifest."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search, spec.release),
        **common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: RawWave, plan_search: search_outcome.PlanSearch):
        # the search protected and checked this very plan (same name, seeds and wave)
        return _protect_and_check(context, spec, plan_search.plan, raw_microdata, plan_search)

    return protected
