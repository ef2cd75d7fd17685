"""Automation of the survey side: a job per survey, a sensor on the landing folder, a schedule.

* ``<survey>_wave_job`` materialises the whole chain for one wave.
* ``<survey>_landing_sensor`` watches ``$SDC_HOME/landing/<survey>/``: each new wave file adds its
  wave as a partition and requests a run; a file replaced by a new version requests a rerun.
* ``<survey>_nightly_catch_up`` requests a run for every registered wave not yet materialised.
"""


import json
import re

from dagster import (
    AssetKey,
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
    sensor,
)

from assets.partitions import wave_partitions
from resources.storage import landing_dir
from sdc_dagster.spec import FORMATS, SurveySpec

WAVE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def wave_files(spec: SurveySpec) -> dict[str, float]:
    """Wave name -> modification time of every readable wave file in the survey's landing folder."""
    folder = landing_dir() / spec.survey
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix.lower() in FORMATS and WAVE_NAME.match(path.stem):
            found[path.stem] = path.stat().st_mtime
    return found


def build_survey_automation(spec: SurveySpec):
    """(job, sensor, schedule) for one survey."""
    parts = wave_partitions(spec)
    job = define_asset_job(
        name=f"{spec.survey}_wave_job",
        selection=AssetSelection.groups(spec.survey),
        partitions_def=parts,
        description=f"Materialise the whole SDC chain of {spec.survey} for one wave.",
    )

    @sensor(
        name=f"{spec.survey}_landing_sensor",
        job=job,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description=f"Adds a wave partition and requests its run for each new file in landing/{spec.survey}/.",
    )
    def landing_sensor(context: SensorEvaluationContext) -> SensorResult:
        seen = json.loads(context.cursor) if context.cursor else {}
        known = set(context.instance.get_dynamic_partitions(parts.name))
        files = wave_files(spec)
        new_waves = sorted(w for w in files if w not in known)
        requests = [
            RunRequest(partition_key=w, run_key=f"{w}@{mtime}")
            for w, mtime in files.items()
            if seen.get(w) != mtime
        ]
        return SensorResult(
            run_requests=requests,
            dynamic_partitions_requests=[parts.build_add_request(new_waves)] if new_waves else [],
            cursor=json.dumps(files, sort_keys=True),
        )

    @schedule(
        name=f"{spec.survey}_nightly_catch_up",
        job=job,
        cron_schedule="0 2 * * *",
        default_status=DefaultScheduleStatus.STOPPED,
        description="Each night, run every registered wave whose raw_microdata has not been materialised.",
    )
    def nightly_catch_up(context: ScheduleEvaluationContext):
        waves = context.instance.get_dynamic_partitions(parts.name)
        done = context.instance.get_materialized_partitions(AssetKey([spec.survey, "raw_microdata"]))
        return [RunRequest(partition_key=w, run_key=None) for w in waves if w not in done]

    return job, landing_sensor, nightly_catch_up
