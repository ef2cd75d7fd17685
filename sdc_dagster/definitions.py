"""The Dagster code location: assembles ``Definitions`` from ``assets/`` and ``resources/``.

Survey specs are read from ``$SDC_SPECS`` (default: the checkout's ``examples/`` folder); each
spec gives one survey asset chain partitioned by wave, its checks, job, sensor and schedule. The
census grid chain (partitioned by region) comes from ``assets/grid.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import Definitions

from assets.automation import build_survey_automation
from assets.grid import GRID_ASSETS, GRID_JOBS, GRID_SENSORS
from assets.survey import build_survey_assets
from resources import ParquetIOManager, duckdb_resource
from sdc_dagster.spec import load_specs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def specs_dir() -> Path:
    """Where the survey specs are read from: ``$SDC_SPECS`` or ``<checkout>/examples``."""
    return Path(os.environ.get("SDC_SPECS") or EXAMPLES)


def build_definitions(spec_folder: Path | None = None) -> Definitions:
    """All survey chains for the specs in ``spec_folder`` and the census grid chain, with their
    checks and automation."""
    assets, jobs, sensors, schedules = list(GRID_ASSETS), list(GRID_JOBS), list(GRID_SENSORS), []
    for spec in load_specs(spec_folder or specs_dir()):
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
