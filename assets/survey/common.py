"""What every survey asset shares: key prefix, group and wave partitions, inputs by name, code
versions, Dagster types of the shared schemas, and metadata rendering."""

import hashlib

import pandas as pd
from dagster import AssetIn, AssetKey, MetadataValue
from dagster_pandera import pandera_schema_to_dagster_type

import sdc_dagster
from sdc_dagster.assets.partitions import wave_partitions
from sdc_dagster.pipeline.protection import ProtectedVariant, wave_plan_names
from sdc_dagster.report.plots import image_uri
from sdc_dagster.spec.schemas import classification_schema, key_frequencies_schema
from sdc_dagster.spec import SurveySpec

CODE_VERSION = "1"


def code_version(*spec_parts) -> str:
    """The code version of an asset: the engine version plus a hash of the spec parts it reads, so
    that a changed spec marks exactly the assets that depend on the changed part stale."""
    digest = hashlib.sha256(repr(spec_parts).encode()).hexdigest()[:12]
    return f"{sdc_dagster.__version__}.{CODE_VERSION}-{digest}"


# Shared schemas become one Dagster type each: type names must be unique across the code location.
CLASSIFICATION_TYPE = pandera_schema_to_dagster_type(classification_schema)
KEY_FREQUENCIES_TYPE = pandera_schema_to_dagster_type(key_frequencies_schema)


def image_markdown(image: bytes, title: str) -> MetadataValue:
    """A chart (SVG of sdc_dagster.report.plots, or PNG) as Markdown metadata, so the Dagster UI
    shows it inline."""
    return MetadataValue.md(f"**{title}**\n\n![{title}]({image_uri(image)})")


def table_markdown(frame: pd.DataFrame) -> MetadataValue:
    return MetadataValue.md(frame.to_markdown() if len(frame) else "(empty)")


def protected_key(spec: SurveySpec, plan_name: str) -> AssetKey:
    return AssetKey([spec.survey, f"protected_{plan_name}"])


def common(spec: SurveySpec) -> dict:
    """Key prefix, group and wave partitions shared by every asset of the survey."""
    return dict(key_prefix=[spec.survey], group_name=spec.survey, partitions_def=wave_partitions(spec))


def ins(spec: SurveySpec, *names: str) -> dict[str, AssetIn]:
    return {n: AssetIn(key=AssetKey([spec.survey, n])) for n in names}


def plan_ins(spec: SurveySpec) -> dict[str, AssetIn]:
    """Every plan's protected variant (the spec's plans, then the searched plan when the spec
    searches) as an input named ``protected_<plan>``."""
    return {f"protected_{name}": AssetIn(key=protected_key(spec, name)) for name in wave_plan_names(spec)}


def variants(spec: SurveySpec, protected: dict[str, ProtectedVariant]) -> dict[str, ProtectedVariant]:
    """Plan name -> protected variant, in plan order, from inputs named ``protected_<plan>``."""
    return {name: protected[f"protected_{name}"] for name in wave_plan_names(spec)}
