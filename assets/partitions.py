"""Partitions: survey waves (one dynamic partitions definition per survey)."""

from __future__ import annotations

from dagster import DynamicPartitionsDefinition

from sdc_dagster.spec import SurveySpec


def wave_partitions(spec: SurveySpec) -> DynamicPartitionsDefinition:
    """The waves of one survey: a new wave is a new partition key, added by the landing sensor."""
    return DynamicPartitionsDefinition(name=f"{spec.survey}_waves")
