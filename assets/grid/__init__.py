"""The census grid assets by stage (SPEC §8.10, §8.11, §11): :mod:`.census` (region files, national
swap), :mod:`.tables` (tabulation, cell key and suppression routes, loss), :mod:`.release`
(manifest and report); :mod:`.dask_executor` runs a region's steps on Dask. The engine they call
is :mod:`sdc_dagster.pipeline.grid`, the spec :mod:`sdc_dagster.grid_spec`.
"""

from sdc_dagster.grid_spec import GridSpec, spec_parameters
from sdc_dagster.assets.grid.census import (
    census_microdata,
    census_region_job,
    census_swap_job,
    census_swapped,
    grid_region_sensor,
    grid_regions,
)
from sdc_dagster.assets.grid.release import grid_release, grid_release_job
from sdc_dagster.assets.grid.tables import (
    ROUTE_JOBS,
    grid_cell_key,
    grid_cell_key_loss,
    grid_consistent_suppression,
    grid_counts,
    grid_counts_national,
    grid_loss,
    grid_national_totals,
    region_job_name,
)

#: grid_consistent_suppression is one definition producing grid_suppressed and grid_suppressed_national.
GRID_ASSETS = [
    census_microdata,
    census_swapped,
    grid_national_totals,
    grid_counts,
    grid_counts_national,
    grid_consistent_suppression,
    grid_cell_key,
    grid_cell_key_loss,
    grid_loss,
    grid_release,
]
#: The grid checks are declared on their assets (check_specs).
GRID_JOBS = [census_region_job, census_swap_job, *ROUTE_JOBS, grid_release_job]
GRID_SENSORS = [grid_region_sensor]


def grid_run_config(spec: GridSpec) -> dict:
    """The Dagster run config of a grid spec: each step's op config (one config for every job of the
    chain, each job reads its own steps) and the routes of the release."""
    return {"ops": {
        "census_swapped": {"config": spec_parameters(spec.swap)},
        "grid_cell_key": {"config": spec_parameters(spec.cell_key)},
        "grid_consistent_suppression": {"config": spec_parameters(spec.suppression)},
        "grid_release": {"config": {"routes": list(spec.routes)}},
    }}


__all__ = ["GRID_ASSETS", "GRID_JOBS", "GRID_SENSORS", "grid_regions", "grid_run_config", "region_job_name"]
