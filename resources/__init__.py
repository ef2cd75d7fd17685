"""Dagster resources: the DuckDB connection and the Parquet storage of asset outputs."""

from sdc_dagster.resources.duckdb import duckdb_resource
from sdc_dagster.resources.storage import ParquetIOManager, inputs_dir, landing_dir, releases_dir, reports_dir, sdc_home, user_specs_dir

__all__ = [
    "ParquetIOManager",
    "duckdb_resource",
    "inputs_dir",
    "landing_dir",
    "releases_dir",
    "reports_dir",
    "sdc_home",
    "user_specs_dir",
]
