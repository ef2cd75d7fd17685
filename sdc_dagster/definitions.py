"""The Dagster code location: assembles ``Definitions`` from ``sdc_dagster.assets`` and
``sdc_dagster.resources``.

Survey specs are read from :func:`~sdc_dagster.resources.storage.spec_folders`: the bundled demo
specs and the user's own specs in ``<data home>/specs`` (``sdc init`` writes there), or
``$SDC_SPECS`` instead of both. Each spec gives one survey asset chain partitioned by wave, its checks, job, sensor and
schedule; a spec that does not load is skipped with a logged warning. Each table spec
(:func:`~sdc_dagster.resources.storage.table_spec_folders`) gives one table chain
(:mod:`sdc_dagster.assets.tables`) and its job. The census grid chain (partitioned by region) comes from ``sdc_dagster.assets.grid``;
its per-region job on Dask (:func:`grid_region_dask_job`) is assembled here too.

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
from sdc_dagster.resources.storage import spec_folders, table_spec_folders
from sdc_dagster.spec import SpecError, SurveySpec, scan_specs
from sdc_dagster.spec.tables import TableSetSpec

log = logging.getLogger(__name__)

#: The per-region grid job whose steps run on Dask (:func:`grid_region_dask_job`).
GRID_DASK_JOB = "grid_region_dask_job"


def survey_specs(folders: list[Path] | None = None) -> list[SurveySpec]:
    """Every spec of ``folders`` (default :func:`spec_folders`) that loads; each one that does not is
    skipped with a logged warning naming the file, the line and the reason, so that one broken spec
    never hides the other surveys in the UI (``sdc`` prints the skipped files itself)."""
    specs, broken = scan_specs(folders or spec_folders())
    for spec in broken:
        log.warning("skipped the survey spec %s", spec.summary())
    return specs


def table_specs(folders: list[Path] | None = None) -> list[TableSetSpec]:
    """Every table spec of ``folders`` (default :func:`table_spec_folders`) that loads; each one
    that does not is skipped with a logged warning naming the file, the line and the reason, and so
    is a spec whose set name (``tables:``, its asset keys) an earlier file already gave: two chains
    of one name would stop the whole code location from loading (Dagster's duplicate asset keys),
    hiding every survey and table in the UI."""
    from sdc_dagster.spec.tables import load_table_spec, table_spec_files

    loaded: dict[str, TableSetSpec] = {}
    for path in table_spec_files(folders or table_spec_folders()):
        try:
            spec = load_table_spec(path)
        except SpecError as error:
            log.warning("skipped the table spec %s: %s", path, " ".join(str(error).split()))
            continue
        if spec.name in loaded:
            log.warning("skipped the table spec %s: its set name %r is already that of %s (rename its 'tables:')",
                        path, spec.name, loaded[spec.name].spec_path)
            continue
        loaded[spec.name] = spec
    return list(loaded.values())


def build_definitions(spec_folder: Path | None = None, *, specs: list[SurveySpec] | None = None,
                      grid: bool = True, dask: bool = False,
                      tables: list[TableSetSpec] | None = None) -> Definitions:
    """All survey chains for ``specs`` (default: :func:`survey_specs` of ``spec_folder``, else of
    :func:`spec_folders`) and, with ``grid``, the census grid chain, with their checks and automation;
    the data home resource and the IO manager's base directory from the one data-home lookup, and
    the grid spec resource (:func:`~sdc_dagster.resources.configured_resources`).

    ``dask`` (with ``grid``) adds ``grid_region_dask_job``: every route of one region, its steps on a
    Dask cluster (:func:`~sdc_dagster.assets.grid.dask_executor.region_dask_executor`); left out of
    the code location by default, so that loading it does not import Dask (about 1 s).

    ``grid=False`` (``sdc run``: one survey wave) leaves the grid chain and its modules out; a survey
    job is the same job either way (the grid assets are no inputs of a survey asset), so its runs look
    the same in the UI (``tests/assets/test_definitions.py`` compares the job snapshots).

    ``tables``: the table sets (:mod:`sdc_dagster.spec.tables`) whose chains to add (default: those
    of :func:`table_specs` when the surveys are found too, none when ``specs`` is given); a set read
    from a survey that is not among the surveys is skipped with a logged warning."""
    assets, jobs, sensors, schedules = [], [], [], []
    if grid:
        from sdc_dagster.assets.grid import GRID_ASSETS, GRID_JOBS, GRID_SENSORS, region_job

        assets, jobs, sensors = list(GRID_ASSETS), list(GRID_JOBS), list(GRID_SENSORS)
        if dask:
            from sdc_dagster.assets.grid.dask_executor import region_dask_executor
            from sdc_dagster.spec.grid import ROUTES

            jobs.append(region_job(ROUTES, name=GRID_DASK_JOB, executor_def=region_dask_executor()))
    surveys = specs if specs is not None else survey_specs([Path(spec_folder)] if spec_folder else None)
    for spec in surveys:
        assets.extend(build_survey_assets(spec).assets)
        job, sensor, schedule = build_survey_automation(spec)
        jobs.append(job)
        sensors.append(sensor)
        schedules.append(schedule)
    by_name = {spec.survey: spec for spec in surveys}
    for table_set in tables if tables is not None else (table_specs() if specs is None else []):
        if table_set.source.survey is not None and table_set.source.survey not in by_name:
            log.warning("skipped the table spec %s: its survey %r has no spec", table_set.spec_path,
                        table_set.source.survey)
            continue
        from sdc_dagster.assets.tables import build_table_assets

        chain = build_table_assets(table_set, by_name.get(table_set.source.survey))
        assets.extend(chain.assets)
        jobs.append(chain.job)
    return Definitions(
        assets=assets,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources=configured_resources(),
    )


def grid_region_dask_job():
    """The per-region grid job on Dask (``grid_region_dask_job``), importable by path for Dask worker
    processes (``reconstructable(grid_region_dask_job)``): the grid chain's definitions without the
    surveys. Past one machine the regions run on an existing Dask cluster: launch the job per region
    with run config ``execution: {config: {cluster: {existing: {address: "<scheduler>:8786"}}}}`` (or
    ``cluster: {local: {n_workers: 2}}`` for a local cluster) and the tag ``dagster/partition``. Dask
    workers must share the data home's file system (census files, swapped regions, the Parquet IO
    manager's store) and import this package."""
    return build_definitions(specs=[], dask=True).resolve_job_def(GRID_DASK_JOB)


@definitions
def defs() -> Definitions:
    """The code location of ``workspace.yaml`` and ``sdc ui``: every survey chain and the grid chain."""
    return build_definitions()
