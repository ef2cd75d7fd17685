"""The DuckDB connection that backs frequency queries: a private in-memory database per connection.

The frequency queries read DataFrames handed to them and return their results to Python; nothing is
stored in the database between queries. A file-backed database would be locked by the first process
that opens it, so that two runs executed at the same time (two waves, two grid regions, each step in
its own process under the multiprocess executor) fail with DuckDB's "Could not set lock on file".
An in-memory database belongs to its connection and is never shared.
"""

from __future__ import annotations

from dagster_duckdb import DuckDBResource

IN_MEMORY = ":memory:"


def duckdb_resource() -> DuckDBResource:
    """A :class:`DuckDBResource` whose every ``get_connection()`` opens its own in-memory database."""
    return DuckDBResource(database=IN_MEMORY)
