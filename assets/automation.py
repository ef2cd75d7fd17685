"""Automation of the survey side: a job per survey, a sensor on the landing folder, a schedule.

* ``<survey>_wave_job`` materialises the whole chain for one wave.
* ``<survey>_landing_sensor`` watches ``<data home>/landing/<survey>/`` (the ``home`` resource,
  :class:`~sdc_dagster.resources.home.SdcHome`): each new wave file adds its
  wave as a partition (a file whose stem is no safe wave id is skipped with a logged warning); runs
  are keyed by the file's content hash (sha256), and a wave whose latest ``raw_microdata``
  materialisation read the same content (e.g. by ``sdc demo``) is not run again, so a touched or
  re-copied file publishes no duplicate release. A file replaced by new content requests a rerun.
* ``<survey>_nightly_catch_up`` requests a run for every registered wave not yet materialised.
"""


import json
from pathlib import Path

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

from sdc_dagster.assets.partitions import materialised_sha256, wave_partitions
from sdc_dagster.names import name_problem
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec import FORMATS, SurveySpec


#: Suffixes read as data when named (``--file``, ``source.path``) but not taken from the landing folder:
#: a ``notes.txt`` beside the waves is a note, not a wave (deliver delimited text as ``.csv``/``.tsv``).
NOT_LANDED = (".txt",)


def wave_files(spec: SurveySpec, landing: Path) -> tuple[dict[str, Path], dict[Path, str]]:
    """Wave id -> path of every readable wave file in the survey's folder of ``landing`` (by its
    suffix, :data:`NOT_LANDED` aside); and each wave file skipped because its stem is not a safe wave
    id (:func:`~sdc_dagster.names.name_problem`) -> why."""
    folder = landing / spec.survey
    if not folder.is_dir():
        return {}, {}
    candidates = [path for path in sorted(folder.iterdir())
                  if path.is_file() and path.suffix.lower() in FORMATS and path.suffix.lower() not in NOT_LANDED]
    problems = {path: name_problem("wave id", path.stem) for path in candidates}
    return ({path.stem: path for path, problem in problems.items() if problem is None},
            {path: problem for path, problem in problems.items() if problem is not None})


def wave_hashes(files: dict[str, Path], seen: dict[str, dict]) -> dict[str, dict]:
    """Wave -> {"stamp": [mtime, size], "sha256": content hash} of each file. A file whose
    modification time and size are those of the previous evaluation (``seen``) keeps its recorded
    hash instead of being read again."""
    state = {}
    for wave, path in files.items():
        stat = path.stat()
        stamp = [stat.st_mtime, stat.st_size]
        before = seen.get(wave)
        unchanged = before is not None and before.get("stamp") == stamp
        state[wave] = {"stamp": stamp, "sha256": before["sha256"] if unchanged else file_sha256(path)}
    return state


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
        description=(
            f"Adds a wave partition for each new file in landing/{spec.survey}/ and requests a run for "
            "each file whose content (sha256) differs from what the wave last materialised."
        ),
    )
    def landing_sensor(context: SensorEvaluationContext, home: SdcHome) -> SensorResult:
        # The cursor: each wave file's stamp and sha256 as of the previous evaluation (older cursors
        # held modification times only, and are read as empty).
        cursor = json.loads(context.cursor) if context.cursor else {}
        seen = {w: file for w, file in cursor.items() if isinstance(file, dict)}
        known = set(context.instance.get_dynamic_partitions(parts.name))
        files, skipped = wave_files(spec, home.landing)
        for path, problem in skipped.items():
            context.log.warning(f"{path}: not added as a wave: {problem}; rename the file")
        state = wave_hashes(files, seen)
        new_waves = sorted(w for w in state if w not in known)
        requests = [
            RunRequest(partition_key=w, run_key=f"{w}@{file['sha256']}")
            for w, file in state.items()
            if seen.get(w, {}).get("sha256") != file["sha256"]
            and materialised_sha256(context.instance, spec, w) != file["sha256"]
        ]
        return SensorResult(
            run_requests=requests,
            dynamic_partitions_requests=[parts.build_add_request(new_waves)] if new_waves else [],
            cursor=json.dumps(state, sort_keys=True),
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
