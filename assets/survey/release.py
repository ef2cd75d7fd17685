"""Stage 5 of the survey chain: the release stage. It receives the protected variants and their
evaluation as inputs, writes each plan's release decision and stages the wave's one release
(:func:`sdc_dagster.releases.wave.release_wave`); the report (:mod:`.report`) comes next and, filed,
makes it the wave's release."""

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MetadataValue, Output, asset

from sdc_dagster.assets.checks import release_check_results, release_check_specs
from sdc_dagster.assets.survey.common import code_version, common, ins, plan_ins, variants
from sdc_dagster.pipeline import relaxations
from sdc_dagster.pipeline.evaluation import InformationLoss
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.pipeline.protection import ProtectedVariant
from sdc_dagster.pipeline.report_inputs import WaveEvaluation
from sdc_dagster.releases.wave import WaveRelease, release_wave
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec import SurveySpec


def release_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="release",
        ins={
            **ins(spec, "raw_microdata", "residual_risk", "information_loss"),
            # the plans' variants: data, steps, seeds, checks, matrices
            **plan_ins(spec),
            # the finished search: what it would take, when the wave releases nothing
            **(ins(spec, "plan_search") if spec.search.enabled else {}),
        },
        description=(
            "The wave's release: each plan's decision (its safe files and manifest when it passes every blocking "
            "release check, the withheld record otherwise) and the wave's one release, the plan the report's "
            "decision rule recommends (staged until the report that explains it is filed, then release.json); when "
            "no plan is eligible and the spec searches, what it would take: the closest plans and the cheapest "
            "change of target or scenario that makes one eligible. Its checks are every plan's release checks."
        ),
        # the plans reach it as its inputs (a changed plan changes its variant's data version)
        code_version=code_version(spec.variables, spec.risk, spec.limits, spec.search, spec.release),
        # the release rules of each plan's variant, checked where the release is decided
        check_specs=release_check_specs(spec, AssetKey([spec.survey, "release"])),
        **common(spec),
    )
    def release(context: AssetExecutionContext, home: SdcHome, raw_microdata: RawWave, residual_risk: pd.DataFrame,
                information_loss: InformationLoss, **protected: ProtectedVariant):
        wave = context.partition_key
        searched = protected.pop("plan_search", None)
        wave_variants = variants(spec, protected)
        made = release_wave(home.releases, spec, wave, raw_microdata, wave_variants,
                            WaveEvaluation(residual=residual_risk, loss=information_loss),
                            run_id=context.run_id, search=searched, note=context.log.info)
        withheld = {name: d.manifest["withheld"] for name, d in made.decisions.items() if not d.published}
        for name, failures in withheld.items():
            context.log.warning(f"protected_{name} wave {wave} withheld, no release written: "
                                + "; ".join(f"{check}: {why}" for check, why in failures.items()))
        if made.released is None:
            context.log.warning(f"wave {wave}: no plan passes every blocking check; nothing is released")
        yield Output(made, metadata={
            "released_plan": made.released["plan"] if made.released else "none",
            "recommended_plan": made.recommendation.plan or "none",
            "reason": made.recommendation.reason,
            "decisions": MetadataValue.json({
                name: {"folder": str(d.folder), "previous_release": d.manifest["previous_release"],
                       **({"files": d.manifest["output"]["files"]} if d.published else {"withheld": withheld[name]})}
                for name, d in made.decisions.items()}),
            **({"release": MetadataValue.path(made.released["folder"])} if made.released else {}),
            **({"what_it_would_take": MetadataValue.json(made.advice),
                "what_it_would_take_text": MetadataValue.text("\n".join(relaxations.advice_lines(made.advice)))}
               if made.advice is not None else {}),
        })
        yield from release_check_results(wave_variants, wave_released=made.released is not None)

    return release
