"""The Dagster code location: assembles ``Definitions`` from ``sdc_dagster.assets`` and
``sdc_dagster.resources``.

Survey specs are read from :func:`~sdc_dagster.resources.storage.spec_folders`: the bundled demo
specs and the user's own specs in ``<data home>/specs`` (``sdc init`` writes there), or
``$SDC_SPECS`` instead of both. Each spec gives one survey asset chain partitioned by wave, its checks, job, sensor and
schedule. The census grid chain (partitioned by region) comes from ``sdc_dagster.assets.grid``.
"""

from __future__ import annotations

from pathlib import Path

from dagster import Definitions

from sdc_dagster.assets.automation import build_survey_automation
from sdc_dagster.assets.grid import GRID_ASSETS, GRID_JOBS, GRID_SENSORS
from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.resources import ParquetIOManager, duckdb_resource
from sdc_dagster.resources.storage import spec_folders
from sdc_dagster.spec import SpecError, SurveySpec, load_specs


def survey_specs(folders: list[Path] | None = None) -> list[SurveySpec]:
    """Every spec of ``folders`` (default :func:`spec_folders`); survey names must be unique."""
    specs = [spec for folder in folders or spec_folders() if folder.is_dir() for spec in load_specs(folder)]
    by_name: dict[str, Path | None] = {}
    for spec in specs:
        if spec.survey in by_name:
            raise SpecError(f"survey: {spec.survey!r} is named by two specs ({by_name[spec.survey]} and "
                            f"{spec.spec_path}); rename one", key="survey")
        by_name[spec.survey] = spec.spec_path
    return specs


def build_definitions(spec_folder: Path | None = None) -> Definitions:
    """All survey chains for the specs in ``spec_folder`` (default: :func:`spec_folders`) and the
    census grid chain, with their checks and automation."""
    assets, jobs, sensors, schedules = list(GRID_ASSETS), list(GRID_JOBS), list(GRID_SENSORS), []
    for spec in survey_specs([Path(spec_folder)] if spec_folder else None):
        assets.extend(build_survey_assets(spec).assets)
        job, sensor, schedule = build_survey_automation(spec)
        jobs.append(job)
        sensors.append(sensor)
        schedules.append(schedule)
    return Definitions(
        assets=assets,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources={"io_manager": ParquetIOManager(), "duckdb": duckdb_resource()},
    )


defs = build_definitions()
