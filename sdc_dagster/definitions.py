"""The Dagster code location: assembles ``Definitions`` from ``sdc_dagster.assets`` and
``sdc_dagster.resources``.

Survey specs are read from :func:`~sdc_dagster.resources.storage.spec_folders`: the bundled demo
specs and the user's own specs in ``<data home>/specs`` (``sdc init`` writes there), or
``$SDC_SPECS`` instead of both. Each spec gives one survey asset chain partitioned by wave, its checks, job, sensor and
schedule; a spec that does not load is skipped with a logged warning. The census grid chain (partitioned by region) comes from ``sdc_dagster.assets.grid``.

``defs`` is built when Dagster loads the code location (``@definitions``), not when this module is
imported: ``sdc run`` imports :func:`build_definitions` and builds one survey's chain only, without
reading every spec or importing the grid chain's modules (about 2 s of a testdata run).
"""

from __future__ import annotations

import logging
from pathlib import Path

from dagster import Definitions, definitions

from sdc_dagster.assets.automation import build_survey_automation
from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.resources import configured_resources
from sdc_dagster.resources.storage import spec_folders
from sdc_dagster.spec import SurveySpec, scan_specs

log = logging.getLogger(__name__)


def survey_specs(folders: list[Path] | None = None) -> list[SurveySpec]:
    """Every spec of ``folders`` (default :func:`spec_folders`) that loads; each one that does not is
    skipped with a logged warning naming the file, the line and the reason, so that one broken spec
    never hides the other surveys in the UI (``sdc`` prints the skipped files itself)."""
    specs, broken = scan_specs(folders or spec_folders())
    for spec in broken:
        log.warning("skipped the survey spec %s", spec.summary())
    return specs


def build_definitions(spec_folder: Path | None = None, *, specs: list[SurveySpec] | None = None,
                      grid: bool = True) -> Definitions:
    """All survey chains for ``specs`` (default: :func:`survey_specs` of ``spec_folder``, else of
    :func:`spec_folders`) and, with ``grid``, the census grid chain, with their checks and automation;
    the data home resource and the IO manager's base directory from the one data-home lookup
    (:func:`~sdc_dagster.resources.configured_resources`).

    ``grid=False`` (``sdc run``: one survey wave) leaves the grid chain and its modules out; a survey
    job is the same job either way (the grid assets are no inputs of a survey asset), so its runs look
    the same in the UI (``tests/assets/test_definitions.py`` compares the job snapshots)."""
    assets, jobs, sensors, schedules = [], [], [], []
    if grid:
        from sdc_dagster.assets.grid import GRID_ASSETS, GRID_JOBS, GRID_SENSORS

        assets, jobs, sensors = list(GRID_ASSETS), list(GRID_JOBS), list(GRID_SENSORS)
    for spec in specs if specs is not None else survey_specs([Path(spec_folder)] if spec_folder else None):
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
        resources=configured_resources(),
    )


@definitions
def defs() -> Definitions:
    """The code location of ``workspace.yaml`` and ``sdc ui``: every survey chain and the grid chain."""
    return build_definitions()
