"""Dagster resources: the DuckDB connection and the Parquet storage of asset outputs."""

from resources.duckdb import duckdb_resource
from resources.storage import ParquetIOManager, landing_dir, reports_dir, sdc_home

__all__ = ["ParquetIOManager", "duckdb_resource", "landing_dir", "reports_dir", "sdc_home"]
