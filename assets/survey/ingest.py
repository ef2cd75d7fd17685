"""Stage 1 of the survey chain: reading a wave and classifying its variables."""

from dagster import AssetExecutionContext, AssetsDefinition, DataVersion, Output, asset

from sdc_dagster.assets.survey.common import CLASSIFICATION_TYPE, code_version, common, ins, table_markdown
from sdc_dagster.spec.classification import classify_variables
from sdc_dagster.pipeline.ingest import RawWave, ingest_wave
from sdc_dagster.pipeline.risk import keys_from_classification
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.schemas import classification_schema, validate
from sdc_dagster.spec import SurveySpec


def raw_microdata_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="raw_microdata",
        description=(f"{spec.title}: one wave as read from the landing folder, validated by the spec's schema, "
                     "with the snapshot of its file and their SHA-256 (what its releases record)."),
        code_version=code_version(spec.source, spec.variables),
        **common(spec),
    )
    def raw_microdata(context: AssetExecutionContext, home: SdcHome):
        wave = ingest_wave(spec, context.partition_key, home.landing, home.inputs)
        return Output(
            wave,
            data_version=DataVersion(wave.source.sha256),
            metadata={
                "records": len(wave.data),
                "columns": len(wave.data.columns),
                "source_file": str(wave.source.file),
                "source_format": wave.format,
                "source_snapshot": str(wave.source.snapshot),
                "source_sha256": wave.source.sha256,
                "spec_sha256": spec.spec_hash,
            },
        )

    return raw_microdata


def variable_classification_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="variable_classification",
        ins=ins(spec, "raw_microdata"),
        description="Each column's role and scale from the spec, with data-driven suggestions.",
        dagster_type=CLASSIFICATION_TYPE,
        code_version=code_version(spec.variables),
        **common(spec),
    )
    def variable_classification(context: AssetExecutionContext, raw_microdata: RawWave):
        table = validate(classify_variables(raw_microdata.data, spec), classification_schema, source="variable_classification")
        flagged = table.loc[table["suggested_role"] == "direct_identifier", "variable"].tolist()
        context.add_output_metadata(
            {
                "categorical_keys": ", ".join(keys_from_classification(table, "categorical_key")),
                "continuous_keys": ", ".join(keys_from_classification(table, "continuous_key")),
                "likely_direct_identifiers": ", ".join(flagged) or "none",
                "table": table_markdown(table.set_index("variable")),
            }
        )
        return table

    return variable_classification
