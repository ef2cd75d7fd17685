"""Dagster resources: the DuckDB connection and the Parquet storage of asset outputs."""

from resources.duckdb import duckdb_resource
from resources.storage import ParquetIOManager, inputs_dir, landing_dir, releases_dir, reports_dir, sdc_home

__all__ = [
    "ParquetIOManager",
    "duckdb_resource",
    "inputs_dir",
    "landing_dir",
    "releases_dir",
    "reports_dir",
    "sdc_home",
]
