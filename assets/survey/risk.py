"""Stage 2 of the survey chain: the risk of the original wave (key frequencies, risk scores,
contributions)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MetadataValue, Output, asset
from dagster_duckdb import DuckDBResource

from sdc_dagster.assets.checks import original_risk_check_result, original_risk_check_spec
from sdc_dagster.assets.survey.common import (
    KEY_FREQUENCIES_TYPE,
    code_version,
    common,
    image_markdown,
    ins,
    table_markdown,
)
from sdc_dagster.pipeline import risk
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.report.content import suda_summary
from sdc_dagster.report.plots import boxplot_svg, histogram_svg
from sdc_dagster.spec.schemas import key_frequencies_schema, risk_scores_schema, validate
from sdc_dagster.spec import SurveySpec
from sdc_dagster.report.references import citation_text


def key_frequencies_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="key_frequencies",
        ins=ins(spec, "raw_microdata", "variable_classification"),
        description=f"fk and Fk of every record's key ({citation_text('2')}), computed in DuckDB.",
        dagster_type=KEY_FREQUENCIES_TYPE,
        code_version=code_version(spec.variables),
        **common(spec),
    )
    def key_frequencies(
        context: AssetExecutionContext,
        raw_microdata: RawWave,
        variable_classification: pd.DataFrame,
        duckdb: DuckDBResource,
    ):
        keys = risk.keys_from_classification(variable_classification, "categorical_key")
        with duckdb.get_connection() as con:
            table = risk.key_frequencies(raw_microdata.data, keys, weight=spec.weight, con=con)
        validate(table, key_frequencies_schema, source="key_frequencies")
        if not keys:  # continuous keys only: every record shares the empty key (fk = n)
            context.add_output_metadata({"keys": "none: the spec has no categorical key"})
            return table
        context.add_output_metadata(
            {
                "keys": ", ".join(keys),
                "distinct_keys": int(raw_microdata.data[keys].drop_duplicates().shape[0]),
                "sample_uniques": int((table["fk"] == 1).sum()),
                f"k{spec.risk.k}_violations": int((table["fk"] < spec.risk.k).sum()),
            }
        )
        return table

    return key_frequencies


def risk_scores_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="risk_scores",
        ins=ins(spec, "raw_microdata", "key_frequencies"),
        description=(f"Per-record disclosure risk ({citation_text('3.2')}; {citation_text('5')}) with the wave's "
                     "global figures as metadata."),
        code_version=code_version(spec.variables, spec.risk),
        check_specs=[original_risk_check_spec(spec, AssetKey([spec.survey, "risk_scores"]))] if spec.categorical_keys else [],
        **common(spec),
    )
    def risk_scores(
        context: AssetExecutionContext, raw_microdata: RawWave, key_frequencies: pd.DataFrame, duckdb: DuckDBResource
    ):
        with duckdb.get_connection() as con:
            scores = risk.risk_scores(raw_microdata.data, spec, con=con, frequencies=key_frequencies)
        validate(scores.table, risk_scores_schema, source="risk_scores")
        metadata = {name: float(v) if isinstance(v, float) else v for name, v in scores.figures.items()}
        metadata["measure_notes"] = MetadataValue.json([vars(n) for n in scores.notes])
        if not spec.categorical_keys:  # continuous keys only: the combined measure's continuous part
            metadata["combined_risk_histogram"] = image_markdown(
                histogram_svg(scores.table["combined_risk"], "combined risk"), f"Combined risk (continuous keys; {citation_text('5')})"
            )
            yield Output(scores, metadata=metadata)
            return
        metadata["unsafe_combinations"] = table_markdown(scores.unsafe_by_variable)
        suda = suda_summary(scores.table)  # SUDA2's DIS-SUDA intervals, as sdcMicro's print.suda2 counts them
        if suda is not None:
            metadata["suda"] = table_markdown(suda.round(4))
            metadata["records_with_special_uniques"] = int((scores.table["suda_score"] > 0).sum())
        metadata["risk_histogram"] = image_markdown(
            histogram_svg(scores.table["risk"], "individual risk"), "Individual re-identification risk"
        )
        yield Output(scores, metadata=metadata)
        yield original_risk_check_result(spec, float(scores.figures["risk"]))

    return risk_scores


def risk_contributions_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="risk_contributions",
        ins=ins(spec, "raw_microdata", "risk_scores"),
        description=("Each quasi-identifier's share of each record's risk: Shapley and solidarity values "
                     f"({citation_text('6')})."),
        code_version=code_version(spec.variables, spec.risk),
        **common(spec),
    )
    def risk_contributions(context: AssetExecutionContext, raw_microdata: RawWave, risk_scores: risk.RiskScores):
        # the games reuse the combined measure's set-up the risk stage built
        found = risk.risk_contributions(raw_microdata.data, spec, setup=risk_scores.combined)
        if found.global_.empty:
            context.add_output_metadata({"measure_notes": table_markdown(risk.measure_notes_frame(found.notes))})
            return found
        per_record = found.per_record
        context.add_output_metadata(
            {
                "global_contributions": table_markdown(found.global_.round(4)),
                "shapley_boxplot": image_markdown(
                    boxplot_svg(per_record.filter(like="shapley_").rename(columns=lambda c: c[8:]), "Shapley values"),
                    "Shapley values per variable",
                ),
                "solidarity_boxplot": image_markdown(
                    boxplot_svg(per_record.filter(like="solidarity_").rename(columns=lambda c: c[11:]), "Solidarity values"),
                    "Solidarity values per variable",
                ),
            }
        )
        return found

    return risk_contributions
