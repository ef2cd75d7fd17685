"""Stage 3 of the survey chain: one protected variant per plan, and the plan search with its
searched variant. Each protected asset returns a :class:`~sdc_dagster.pipeline.protection.ProtectedVariant`
(data, steps, PRAM matrices, check outcomes, seed, release decision) that the later stages receive."""

from dataclasses import replace

from dagster import AssetExecutionContext, AssetsDefinition, MetadataValue, Output, asset

from sdc_dagster.assets.checks import release_check_results, release_check_specs
from sdc_dagster.assets.survey.common import code_version, common, ins, protected_key, table_markdown
from sdc_dagster.pipeline import protection, relaxations, search
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.releases import wave as releases
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.schemas import microdata_schema, validate
from sdc_dagster.spec import Plan, SurveySpec


def protected_asset(spec: SurveySpec, plan: Plan) -> AssetsDefinition:
    @asset(
        name=f"protected_{plan.name}",
        ins=ins(spec, "raw_microdata"),
        description=(
            f"Protected variant by plan {plan.name!r}: {plan.description}. Eligible for release only "
            "if its blocking release checks pass; otherwise withheld (kept here for evaluation only)."
        ),
        code_version=code_version(spec.variables, spec.risk, plan, spec.release),
        check_specs=release_check_specs(spec, plan, protected_key(spec, plan.name)),
        **common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: RawWave, home: SdcHome):
        yield from _protect_and_record(context, spec, plan, raw_microdata, home)

    return protected


def _protect_and_record(context: AssetExecutionContext, spec: SurveySpec, plan: Plan, raw_microdata: RawWave,
                        home: SdcHome, searched: search.PlanSearch | None = None):
    """Apply ``plan`` to the wave, run the release checks (unless the plan search ``searched`` did
    both already) and write the plan's decision (an eligible release, or the withheld record): the
    body of every protected asset."""
    wave = context.partition_key
    variant = protection.protect_variant(raw_microdata.data, spec, plan, wave=wave,
                                         checks=searched.checks if searched else None,
                                         protected=searched.protected if searched else None)
    validate(variant.data, microdata_schema(spec, protected=True), source=f"protected_{plan.name}")
    variant = releases.record_release(home.releases, variant, spec, raw_microdata.data, run_id=context.run_id,
                                      source=raw_microdata.source)
    failures, release = variant.withheld_because, variant.release
    if failures:
        context.log.warning(
            f"protected_{plan.name} wave {wave} withheld, no release written: "
            + "; ".join(f"{name}: {why}" for name, why in failures.items())
        )
    outcomes = variant.checks
    yield Output(
        variant,
        metadata={
            "plan": plan.name,
            "random_state": variant.seed,
            "steps": MetadataValue.json(variant.steps),
            "records": len(variant.data),
            **{f"check_{name}": bool(c.passed) for name, c in outcomes.items()},
            **releases.release_risk(variant),
            **({"linkage_measure": outcomes["linkage_risk"].measure} if "linkage_risk" in outcomes else {}),
            "checks_not_applicable": MetadataValue.json(protection.checks_not_applicable(spec)),
            "eligible": release.published,
            "withheld_because": MetadataValue.json(failures),
            "warnings": MetadataValue.json(protection.release_warnings(outcomes)),
            "release": MetadataValue.path(str(release.folder)),
            "release_files": ", ".join(release.manifest["output"]["files"]) if release.published else "none (withheld)",
            "previous_release": release.manifest["previous_release"] or "none",
            "manifest": MetadataValue.json(release.manifest),
        },
    )
    yield from release_check_results(outcomes)


def plan_search_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="plan_search",
        ins=ins(spec, "raw_microdata"),
        description=(
            "Search of the protection plans generated from the wave (recodings, local suppression, "
            "microaggregation, noise): the front of risk against information loss and the recommended "
            "candidate, which protected_searched materialises; when no plan passes every blocking check, what it "
            "would take: the closest plans and the cheapest change of target or scenario that makes one eligible."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search),
        **common(spec),
    )
    def plan_search(context: AssetExecutionContext, raw_microdata: RawWave):
        found = search.search_wave(raw_microdata.data, spec, wave=context.partition_key,
                                   progress=lambda done, total, note: context.log.info(
                                       search.progress_line(done, total, note)))
        outcome = search.plan_search(found, spec)
        # nothing recommended: the closest plans and the cheapest change that makes one eligible
        advice = relaxations.what_it_would_take(raw_microdata.data, spec, found, wave=context.partition_key,
                                                note=context.log.info)
        if advice is not None:
            outcome = replace(outcome, advice=advice.record())
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
            **({"what_it_would_take": MetadataValue.json(outcome.advice),
                "what_it_would_take_text": MetadataValue.text("\n".join(relaxations.advice_lines(outcome.advice)))}
               if outcome.advice is not None else {}),
        })
        return outcome

    return plan_search


def protected_searched_asset(spec: SurveySpec) -> AssetsDefinition:
    # the check specs need the plan's k only: the steps are the search's, known when it has run
    plan = Plan(name=search.SEARCHED_PLAN, steps=(), k=spec.risk.k, random_state=0)

    @asset(
        name=f"protected_{plan.name}",
        ins=ins(spec, "raw_microdata", "plan_search"),
        description=(
            "Protected variant by the plan the search recommends (plan_search), through the same release "
            "checks, manifest and audit as every spec plan; its steps and seed are in its manifest."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search, spec.release),
        check_specs=release_check_specs(spec, plan, protected_key(spec, plan.name)),
        **common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: RawWave, plan_search: search.PlanSearch,
                  home: SdcHome):
        # the search protected and checked this very plan (same name, seeds and wave)
        yield from _protect_and_record(context, spec, plan_search.plan, raw_microdata, home, plan_search)

    return protected
