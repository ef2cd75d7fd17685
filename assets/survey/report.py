"""Stage 6 of the survey chain: the wave's release report, written after the release stage
(:mod:`.release`) and filed with the wave's release."""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MaterializeResult, MetadataValue, asset

from sdc_dagster.assets.checks import wave_release_check_result, wave_release_check_spec
from sdc_dagster.assets.survey.common import (
    code_version,
    common,
    image_markdown,
    ins,
    plan_ins,
    table_markdown,
    variants,
)
from sdc_dagster.pipeline.evaluation import InformationLoss
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.pipeline.protection import ProtectedVariant
from sdc_dagster.pipeline.report_inputs import DATA_FILE_TAG, WaveEvaluation, report_inputs, run_info
from sdc_dagster.pipeline.risk import Contributions, RiskScores
from sdc_dagster.releases.wave import WaveRelease, file_report
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.report import headline_table, report_plots, write_report
from sdc_dagster.spec import SurveySpec


def sdc_report_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="sdc_report",
        ins={
            **ins(
                spec,
                "raw_microdata",
                "risk_scores",
                "risk_contributions",
                "residual_risk",
                "residual_contributions",
                "information_loss",
                # each plan's release decision, the wave's release, the search and what it would take
                "release",
            ),
            # the plans' variants: steps, seeds, checks, matrices, suppressions
            **plan_ins(spec),
        },
        description=(
            "One self-contained HTML report per wave (header with the run, data and software digests; table of "
            "contents; decision first; sign-off block; references), its JSON figures, and the survey's index of "
            "waves; the report is filed with the wave's release (release.json names it with its SHA-256)."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.plans, spec.report),  # report: names its signers
        check_specs=[wave_release_check_spec(AssetKey([spec.survey, "sdc_report"]))],
        **common(spec),
    )
    def sdc_report(
        context: AssetExecutionContext,
        home: SdcHome,
        raw_microdata: RawWave,
        risk_scores: RiskScores,
        risk_contributions: Contributions,
        residual_risk: pd.DataFrame,
        residual_contributions: pd.DataFrame,
        information_loss: InformationLoss,
        release: WaveRelease,
        **protected: ProtectedVariant,
    ) -> MaterializeResult:
        wave = context.partition_key
        evaluated = WaveEvaluation(residual=residual_risk, loss=information_loss,
                                   residual_contributions=residual_contributions)
        source = raw_microdata.source
        record = context.instance.get_run_record_by_id(context.run_id)
        started = record.start_time or record.create_timestamp.timestamp()  # the run's, not this render's
        run = run_info(spec, context.run_id, started, wave, source.file, source.sha256,
                       given_file=context.run.tags.get(DATA_FILE_TAG))
        inputs = report_inputs(spec, wave, raw_microdata.data, risk_scores, risk_contributions, evaluated,
                               release.recorded(variants(spec, protected)), search=release.search,
                               source=source.snapshot, run=run)
        plans = inputs.plans
        plots = report_plots(inputs)  # drawn once: in the report and in the metadata
        paths = {}

        def write() -> Path:
            paths.update(write_report(inputs, home.reports / spec.survey, plots))
            return paths["html"]

        # the release stage's choice becomes the wave's release with the report that explains it
        released = file_report(home.releases, spec.survey, wave, write, run_id=release.run_id)
        headline = headline_table(inputs)
        return MaterializeResult(
            check_results=[wave_release_check_result(spec, plans, released)],
            metadata={
                "released_plan": released["plan"] if released else "none",
                "report": MetadataValue.path(str(paths["html"])),
                "report_json": MetadataValue.path(str(paths["json"])),
                "index": MetadataValue.path(str(paths["index"])),
                "recommended_plan": release.recommendation.plan or "none",
                "headline": table_markdown(headline),
                "releasable_plans": ", ".join(n for n, p in plans.items() if p.releasable) or "none",
                **{name: image_markdown(png, name.replace("_", " ")) for name, png in plots.items()},
            }
        )

    return sdc_report
