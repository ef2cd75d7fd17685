"""Tabulation of census persons into 1-km grid counts, and grid cell identifiers (SPEC §11.1).

The published grid table has one row per inhabited cell: the total resident population and the
marginal counts of sex (``sex_1``, ``sex_2``) and age group (``age_1``..``age_3``). The group-by runs
in DuckDB, either over a pandas frame or directly over Parquet files, so the 37 million person
records of a national census are never materialised in Python.

Cell identifiers follow the GEOSTAT / INSPIRE conventions for the ETRS89-LAEA (EPSG:3035) grid:
short form ``1kmN3120E5012`` (resolution, then northing and easting in units of the resolution)
and long form ``CRS3035RES1000mN3120000E5012000`` (metres).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

GRID_COUNT_COLUMNS: tuple[str, ...] = ("total", "sex_1", "sex_2", "age_1", "age_2", "age_3")

_SHORT_ID = r"^(?P<res>\d+)(?P<unit>km|m)N(?P<n>\d+)E(?P<e>\d+)$"
_LONG_ID = r"^CRS3035RES(?P<res>\d+)(?P<unit>m)N(?P<n>\d+)E(?P<e>\d+)$"


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def parse_cell_id(cell_ids) -> pd.DataFrame:
    """Northing and easting (km, lower-left corner) and resolution (m) of GEOSTAT/INSPIRE cell ids.

    Parameters
    ----------
    cell_ids
        Series (or sequence) of ids such as ``1kmN3120E5012``, ``100mN31200E50120`` or
        ``CRS3035RES1000mN3120000E5012000``.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``cell_ids`` with float columns ``northing_km``, ``easting_km`` and integer
        ``resolution_m``.

    References
    ----------
    SPEC §11.1; INSPIRE Data Specification on Geographical Grid Systems (cell code), GEOSTAT 2011.
    """
    ids = cell_ids if isinstance(cell_ids, pd.Series) else pd.Series(list(cell_ids))
    text = ids.astype("string")
    short = text.str.extract(_SHORT_ID)
    long = text.str.extract(_LONG_ID)
    parts = short.where(short["res"].notna(), long)
    bad = parts["res"].isna()
    if bad.any():
        first = ids[bad.to_numpy()].iloc[0]
        raise SDCInputError(
            f"cell id {first!r}: not a GEOSTAT/INSPIRE grid cell id (expected e.g. '1kmN3120E5012' "
            "or 'CRS3035RES1000mN3120000E5012000')"
        )
    res_value = parts["res"].astype("int64").to_numpy()
    unit_m = np.where(parts["unit"].to_numpy() == "km", 1000, 1)
    resolution_m = res_value * unit_m
    is_long = short["res"].isna().to_numpy()
    # Short ids count in units of the resolution; long ids are in metres.
    scale_m = np.where(is_long, 1, resolution_m)
    northing = parts["n"].astype("int64").to_numpy() * scale_m / 1000.0
    easting = parts["e"].astype("int64").to_numpy() * scale_m / 1000.0
    return pd.DataFrame(
        {"northing_km": northing, "easting_km": easting, "resolution_m": resolution_m.astype(np.int64)},
        index=ids.index,
    )


def format_cell_id(northing_km, easting_km) -> pd.Series:
    """GEOSTAT short ids ``1kmN<northing>E<easting>`` of 1-km cells from integer km coordinates."""
    north = np.asarray(northing_km)
    east = np.asarray(easting_km)
    if north.shape != east.shape:
        raise SDCInputError("northing_km and easting_km: must have the same length")
    if (north < 0).any() or (east < 0).any():
        raise SDCInputError("northing_km / easting_km: coordinates must be non-negative")
    north_s = pd.Series(north.astype(np.int64)).astype(str)
    east_s = pd.Series(east.astype(np.int64)).astype(str)
    index = northing_km.index if isinstance(northing_km, pd.Series) else None
    out = "1kmN" + north_s + "E" + east_s
    if index is not None:
        out.index = index
    return out


def tabulate_grid(
    source: pd.DataFrame | str | Path | Sequence[str | Path],
    *,
    cell: str = "cell_id",
    sex: str = "sex",
    age_group: str = "age_group",
    where: str | None = None,
    with_coordinates: bool = False,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Grid counts per inhabited cell: total, sex_1, sex_2, age_1, age_2, age_3 (SPEC §11.1).

    Parameters
    ----------
    source
        Person records: a pandas frame, or Parquet file path(s) / glob(s) read by DuckDB.
    cell, sex, age_group
        Column names: cell id, sex coded 1 (male) / 2 (female), age group coded 1 (< 15),
        2 (15–64), 3 (65+).
    where
        Optional SQL predicate selecting the population (e.g. ``"resident"`` for the resident
        population or ``"national"`` for the national definition).
    with_coordinates
        Add ``northing_km`` and ``easting_km`` parsed from the cell id.
    con
        DuckDB connection to use (default: a fresh in-memory database).

    Returns
    -------
    pandas.DataFrame
        One row per inhabited cell, sorted by cell id, with the cell id column (as text, whatever
        its input type: categorical and Parquet dictionary columns give the same table) and int64
        count columns (plus coordinates if asked).

    Raises
    ------
    SDCInputError
        When a column is missing or a sex / age group code is outside its categories.
    """
    db = con if con is not None else duckdb.connect()
    registered = None
    if isinstance(source, pd.DataFrame):
        require_columns(source, [cell, sex, age_group], role="census column")
        registered = "sdc_grid_persons"
        db.register(registered, source)
        relation = registered
    else:
        paths = [source] if isinstance(source, str | Path) else list(source)
        if not paths:
            raise SDCInputError("source: no Parquet file given")
        listing = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
        relation = f"read_parquet([{listing}])"
        columns = set(db.execute(f"SELECT * FROM {relation} LIMIT 0").df().columns)
        for col in (cell, sex, age_group):
            if col not in columns:
                raise SDCInputError(f"census column {col!r} is not in the Parquet data")
    c, s, a = _quote(cell), _quote(sex), _quote(age_group)
    filter_sql = f"WHERE {where}" if where else ""
    try:
        counts = db.execute(
            f"""
            SELECT CAST({c} AS VARCHAR) AS cell_key,
                   count(*) AS total,
                   count(*) FILTER (WHERE {s} = 1) AS sex_1,
                   count(*) FILTER (WHERE {s} = 2) AS sex_2,
                   count(*) FILTER (WHERE {a} = 1) AS age_1,
                   count(*) FILTER (WHERE {a} = 2) AS age_2,
                   count(*) FILTER (WHERE {a} = 3) AS age_3,
                   count(*) FILTER (WHERE {s} IS NULL OR {s} NOT IN (1, 2)) AS bad_sex,
                   count(*) FILTER (WHERE {a} IS NULL OR {a} NOT IN (1, 2, 3)) AS bad_age
            FROM {relation} {filter_sql}
            GROUP BY cell_key ORDER BY cell_key
            """
        ).df()
    finally:
        if registered is not None:
            db.unregister(registered)
    if counts["cell_key"].isna().any():
        raise SDCInputError(f"column {cell!r}: cell id must not be missing")
    if counts["bad_sex"].sum() > 0:
        raise SDCInputError(f"column {sex!r}: sex must be 1 or 2 (found {int(counts['bad_sex'].sum())} other)")
    if counts["bad_age"].sum() > 0:
        raise SDCInputError(
            f"column {age_group!r}: age group must be 1, 2 or 3 (found {int(counts['bad_age'].sum())} other)"
        )
    out = counts.drop(columns=["bad_sex", "bad_age"]).rename(columns={"cell_key": cell})
    for col in GRID_COUNT_COLUMNS:
        out[col] = out[col].astype(np.int64)
    if with_coordinates:
        coords = parse_cell_id(out[cell])
        out["northing_km"] = coords["northing_km"].to_numpy()
        out["easting_km"] = coords["easting_km"].to_numpy()
    return out
