"""Partitions: survey waves (one dynamic partitions definition per survey), and what the instance
recorded for a partition."""

from __future__ import annotations

from dagster import AssetKey, AssetMaterialization, AssetRecordsFilter, DagsterInstance, DynamicPartitionsDefinition

from sdc_dagster.spec import SurveySpec


def wave_partitions(spec: SurveySpec) -> DynamicPartitionsDefinition:
    """The waves of one survey: a new wave is a new partition key, added by the landing sensor."""
    return DynamicPartitionsDefinition(name=f"{spec.survey}_waves")


def latest_materialization(instance: DagsterInstance, key: AssetKey, partition: str) -> AssetMaterialization | None:
    """The latest materialisation of one partition of an asset, or None."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
    ).records
    return records[0].asset_materialization if records else None


def materialised_sha256(instance: DagsterInstance, spec: SurveySpec, wave: str) -> str | None:
    """The sha256 of the wave file that the wave's latest ``raw_microdata`` materialisation read
    (its data version), or None if the wave was never materialised."""
    materialization = latest_materialization(instance, AssetKey([spec.survey, "raw_microdata"]), wave)
    return materialization.metadata["source_sha256"].value if materialization else None
