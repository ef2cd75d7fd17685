"""The Dagster code location: assembles ``Definitions`` from ``assets/`` and ``resources/``.

Survey specs are read from ``$SDC_SPECS`` (default: the checkout's ``examples/`` folder); each
spec gives one survey asset chain partitioned by wave, its checks, job, sensor and schedule.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import Definitions

from assets.automation import build_survey_automation
from assets.checks import build_survey_checks
from assets.survey import build_survey_assets
from resources import ParquetIOManager, duckdb_resource
from sdc_dagster.spec import load_specs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def specs_dir() -> Path:
    """Where the survey specs are read from: ``$SDC_SPECS`` or ``<checkout>/examples``."""
    return Path(os.environ.get("SDC_SPECS") or EXAMPLES)


def build_definitions(spec_folder: Path | None = None) -> Definitions:
    """All survey chains for the specs in ``spec_folder``, with their checks and automation."""
    assets, checks, jobs, sensors, schedules = [], [], [], [], []
    for spec in load_specs(spec_folder or specs_dir()):
        assets.extend(build_survey_assets(spec).assets)
        checks.extend(build_survey_checks(spec))
        job, sensor, schedule = build_survey_automation(spec)
        jobs.append(job)
        sensors.append(sensor)
        schedules.append(schedule)
    return Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources={"io_manager": ParquetIOManager(), "duckdb": duckdb_resource()},
    )


defs = build_definitions()
