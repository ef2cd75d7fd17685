"""The DuckDB database that backs frequency queries: a local file under the data home."""

from __future__ import annotations

from dagster_duckdb import DuckDBResource

from resources.storage import sdc_home


def duckdb_resource() -> DuckDBResource:
    """A :class:`DuckDBResource` on ``$SDC_HOME/sdc.duckdb`` (created on first use)."""
    home = sdc_home()
    home.mkdir(parents=True, exist_ok=True)
    return DuckDBResource(database=str(home / "sdc.duckdb"))
