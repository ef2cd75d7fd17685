"""Dagster resources: the data home, the DuckDB connection and the Parquet storage of asset outputs."""

from pathlib import Path

from sdc_dagster.resources.duckdb import duckdb_resource
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.resources.storage import ParquetIOManager, inputs_dir, landing_dir, releases_dir, reports_dir, sdc_home, user_specs_dir


def configured_resources(home: Path | None = None) -> dict:
    """The resources of the code location, every location from the one data home (default
    :func:`sdc_home`): ``home`` (:class:`SdcHome`), ``io_manager`` (:class:`ParquetIOManager` under
    ``<home>/storage``) and ``duckdb``."""
    home = Path(home) if home is not None else sdc_home()
    return {"home": SdcHome(path=str(home)), "io_manager": ParquetIOManager(base_dir=str(home / "storage")),
            "duckdb": duckdb_resource()}


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
