"""The census grid assets by stage (SPEC §8.10, §8.11, §11): :mod:`.census` (region files, national
swap), :mod:`.tables` (tabulation, cell key and suppression routes, loss), :mod:`.release`
(manifest and report); :mod:`.dask_executor` runs a region's steps on Dask. The engine they call
is :mod:`sdc_dagster.pipeline.grid`; locations come from the ``home`` resource
(:class:`~sdc_dagster.resources.home.SdcHome`) and the routes and parameters from the ``grid_spec``
resource (:class:`~sdc_dagster.resources.grid.GridSpecResource`, the spec :mod:`sdc_dagster.spec.grid`).
"""

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
    region_job,
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


__all__ = ["GRID_ASSETS", "GRID_JOBS", "GRID_SENSORS", "grid_regions", "region_job",
           "region_job_name"]
