"""Dagster resources: the data home, the DuckDB connection, the Parquet storage of asset outputs and
the census grid spec."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sdc_dagster.resources.duckdb import duckdb_resource
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.resources.storage import (ParquetIOManager, bundled_examples, inputs_dir, landing_dir, releases_dir,
                                           reports_dir, sdc_home, user_specs_dir)

if TYPE_CHECKING:
    from sdc_dagster.spec.grid import GridSpec


def configured_resources(home: Path | None = None, grid_spec: GridSpec | None = None) -> dict:
    """The resources of the code location, every location from the one data home (default
    :func:`sdc_home`): ``home`` (:class:`SdcHome`), ``io_manager`` (:class:`ParquetIOManager` under
    ``<home>/storage``), ``duckdb`` and ``grid_spec``
    (:class:`~sdc_dagster.resources.grid.GridSpecResource`: ``grid_spec``, by default the bundled
    ``examples/grid/census_grid.yaml``)."""
    # imported here: the spec package is not needed to find the data home (every `sdc` command does)
    from sdc_dagster.resources.grid import GridSpecResource

    home = Path(home) if home is not None else sdc_home()
    grid = (GridSpecResource.of(grid_spec) if grid_spec is not None
            else GridSpecResource(path=str(bundled_examples() / "grid" / "census_grid.yaml")))
    return {"home": SdcHome(path=str(home)), "io_manager": ParquetIOManager(base_dir=str(home / "storage")),
            "duckdb": duckdb_resource(), "grid_spec": grid}


__all__ = [
    "ParquetIOManager",
    "SdcHome",
    "configured_resources",
    "duckdb_resource",
    "inputs_dir",
    "landing_dir",
    "releases_dir",
    "reports_dir",
    "sdc_home",
    "user_specs_dir",
]
