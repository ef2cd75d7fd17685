"""Stage 4 of the survey chain: residual risk, residual contributions and information loss of every
protected variant, each received as an asset input (data, linkage shares of its checks, PRAM
matrices)."""

from dagster import AssetExecutionContext, AssetsDefinition, asset

from sdc_dagster.assets.survey.common import (
    code_version,
    common,
    ins,
    plan_ins,
    table_markdown,
    variants,
)
from sdc_dagster.pipeline import evaluation
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.pipeline.protection import ProtectedVariant
from sdc_dagster.pipeline.risk import Contributions, RiskScores, measure_notes_frame
from sdc_dagster.spec import SurveySpec
from sdc_dagster.report.references import citation_text


def residual_risk_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="residual_risk",
        ins={**ins(spec, "raw_microdata", "risk_scores"), **plan_ins(spec)},
        description="Every risk measure recomputed on each protected variant, next to the original.",
        code_version=code_version(spec.variables, spec.risk),
        **common(spec),
    )
    def residual_risk(context: AssetExecutionContext, raw_microdata: RawWave, risk_scores: RiskScores,
                      **protected: ProtectedVariant):
        wave_variants = variants(spec, protected)
        # the linkage shares the protected assets computed for their linkage_risk check
        linkage = {name: v.checks["linkage_risk"].figures for name, v in wave_variants.items()
                   if "linkage_risk" in v.checks and v.checks["linkage_risk"].figures is not None}
        table = evaluation.residual_risk(raw_microdata.data, {name: v.data for name, v in wave_variants.items()}, spec,
                                         linkage=linkage, original_risk=risk_scores,
                                         keys={name: v.keys for name, v in wave_variants.items()})
        context.add_output_metadata({"table": table_markdown(table.round(6))})
        return table

    return residual_risk


def residual_contributions_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="residual_contributions",
        ins={**ins(spec, "risk_contributions"), **plan_ins(spec)},
        description=(
            "Shapley and solidarity contributions of each quasi-identifier recomputed on each protected "
            f"variant ({citation_text('6')}), next to the original's: how each plan moved every variable's share."
        ),
        code_version=code_version(spec.variables, spec.risk),
        **common(spec),
    )
    def residual_contributions(context: AssetExecutionContext, risk_contributions: Contributions,
                               **protected: ProtectedVariant):
        wave_variants = variants(spec, protected)
        table = evaluation.residual_contributions(risk_contributions.global_,
                                                  {name: v.data for name, v in wave_variants.items()}, spec,
                                                  keys={name: v.keys for name, v in wave_variants.items()})
        # the numbers; their charts are drawn once, by sdc_report (its contributions_<plan> metadata)
        context.add_output_metadata({
            f"contributions_{plan}": table_markdown(table.xs(plan, level="variant").round(4))
            for plan in wave_variants if plan in table.index.get_level_values("variant")
        })
        return table

    return residual_contributions


def information_loss_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="information_loss",
        ins={**ins(spec, "raw_microdata"), **plan_ins(spec)},
        description=(f"Information loss of each protected variant ({citation_text('9.1')}; {citation_text('9.4')}) "
                     f"and per-record TOPSIS loss ({citation_text('10')})."),
        code_version=code_version(spec.variables),
        **common(spec),
    )
    def information_loss(context: AssetExecutionContext, raw_microdata: RawWave, **protected: ProtectedVariant):
        wave_variants = variants(spec, protected)
        loss = evaluation.information_loss(
            raw_microdata.data, {name: v.data for name, v in wave_variants.items()}, spec,
            matrices={name: v.matrices for name, v in wave_variants.items()},
            keys={name: v.keys for name, v in wave_variants.items()},
        )
        context.add_output_metadata({"summary": table_markdown(loss.summary.round(6)),
                                     "measure_notes": table_markdown(measure_notes_frame(loss.notes))})
        return loss

    return information_loss
