"""Tabulation of census persons into 1-km grid counts, and grid cell identifiers (SPEC §11.1).

The published grid table has one row per inhabited cell with the 13 figures of the EU 2021 census
grid dataset (Commission Implementing Regulation (EU) 2018/1799, SPEC §11.1): the total population;
sex (``sex_1`` male, ``sex_2`` female); age group (``age_1`` under 15, ``age_2`` 15-64, ``age_3`` 65
and over); employed persons (``employed``); place of birth (``birth_1`` in the reporting country,
``birth_2`` elsewhere in the EU, ``birth_3`` outside the EU); usual residence one year before
(``residence_1`` unchanged, ``residence_2`` moved within the country, ``residence_3`` moved from
outside). :data:`GRID_VARIABLES` is the one registry of these variables (person column, codes,
published columns) that tabulation, suppression, the cell key method and the loss measures read.
The group-by runs in DuckDB, either over a pandas frame or directly over Parquet files, so the 37
million person records of a national census are never materialised in Python.

Cell identifiers follow the GEOSTAT / INSPIRE conventions for the ETRS89-LAEA (EPSG:3035) grid:
short form ``1kmN3120E5012`` (resolution, then northing and easting in units of the resolution)
and long form ``CRS3035RES1000mN3120000E5012000`` (metres).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns



@dataclass(frozen=True)
class GridVariable:
    """One variable of the census grid: its person column, codes and published count columns.

    Attributes
    ----------
    column
        Person-level column in the census microdata.
    prefix
        Prefix of the published count columns (``<prefix>_<code>``).
    codes
        Every valid code of the person column.
    published
        Codes whose counts are published. When they are all the codes the variable is a complete
        margin (its counts add up to the total, so one hidden count could be recovered from the
        others: secondary suppression applies); ``employed`` publishes only code 1 and its column
        is named by the prefix alone.
    """

    column: str
    prefix: str
    codes: tuple[int, ...]
    published: tuple[int, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """Published count columns."""
        if len(self.published) == 1:
            return (self.prefix,)
        return tuple(f"{self.prefix}_{code}" for code in self.published)

    @property
    def complete_margin(self) -> bool:
        """Whether the published counts add up to the total."""
        return set(self.published) == set(self.codes)


#: The variables of the EU 2021 census grid (SPEC §11.1), in publication order.
GRID_VARIABLES: tuple[GridVariable, ...] = (
    GridVariable("sex", "sex", (1, 2), (1, 2)),
    GridVariable("age_group", "age", (1, 2, 3), (1, 2, 3)),
    GridVariable("employed", "employed", (0, 1), (1,)),
    GridVariable("birth", "birth", (1, 2, 3), (1, 2, 3)),
    GridVariable("residence", "residence", (1, 2, 3), (1, 2, 3)),
)
#: Sex and age group: the two variables every grid table has (the 2011 GEOSTAT subset).
REQUIRED_GRID_VARIABLES: tuple[str, ...] = ("sex", "age_group")
#: The 13 published figures per cell.
GRID_COUNT_COLUMNS: tuple[str, ...] = ("total", *(c for v in GRID_VARIABLES for c in v.columns))


def grid_variables_of(columns, *, published: bool = False) -> tuple[GridVariable, ...]:
    """The grid variables present in ``columns`` (person columns, or count columns if ``published``).

    Sex and age group are required; the other variables are used when present.

    Raises
    ------
    SDCInputError
        When sex or age group is missing.
    """
    present = set(columns)
    found = tuple(
        v for v in GRID_VARIABLES if (set(v.columns) <= present if published else v.column in present)
    )
    names = {v.column for v in found}
    for name in REQUIRED_GRID_VARIABLES:
        if name not in names:
            variable = next(v for v in GRID_VARIABLES if v.column == name)
            what = f"count columns {list(variable.columns)}" if published else f"column {name!r}"
            raise SDCInputError(f"grid table: {what} missing; sex and age group are always published")
    return found

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
    variables: Sequence[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Grid counts per inhabited cell: total and the categories of every grid variable (SPEC §11.1).

    Parameters
    ----------
    source
        Person records: a pandas frame, or Parquet file path(s) / glob(s) read by DuckDB.
    cell, sex, age_group
        Column names: cell id, sex coded 1 (male) / 2 (female), age group coded 1 (< 15),
        2 (15–64), 3 (65+). The other variables of :data:`GRID_VARIABLES` are read from their
        own column names (``employed`` 0/1, ``birth`` 1-3, ``residence`` 1-3).
    where
        Optional SQL predicate selecting the population (e.g. ``"resident"`` for the resident
        population or ``"national"`` for the national definition).
    with_coordinates
        Add ``northing_km`` and ``easting_km`` parsed from the cell id.
    variables
        Person columns of the grid variables to tabulate (``GridVariable.column`` names). Default:
        every grid variable present in the source (sex and age group are required).
    con
        DuckDB connection to use (default: a fresh in-memory database).

    Returns
    -------
    pandas.DataFrame
        One row per inhabited cell, sorted by cell id, with the cell id column (as text, whatever
        its input type: categorical and Parquet dictionary columns give the same table) and int64
        count columns ``total`` then the published columns of each variable (all 13 figures of
        :data:`GRID_COUNT_COLUMNS` when the source has every variable), plus coordinates if asked.

    Raises
    ------
    SDCInputError
        When a column is missing or a code is outside its variable's codes.
    """
    db = con if con is not None else duckdb.connect()
    registered = None
    renamed = {"sex": sex, "age_group": age_group}
    if isinstance(source, pd.DataFrame):
        require_columns(source, [cell, sex, age_group], role="census column")
        registered = "sdc_grid_persons"
        db.register(registered, source)
        relation = registered
        available = set(source.columns)
    else:
        paths = [source] if isinstance(source, str | Path) else list(source)
        if not paths:
            raise SDCInputError("source: no Parquet file given")
        listing = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
        relation = f"read_parquet([{listing}])"
        available = {column[0] for column in db.execute(f"SELECT * FROM {relation} LIMIT 0").description}
        for col in (cell, sex, age_group):
            if col not in available:
                raise SDCInputError(f"census column {col!r} is not in the Parquet data")
    person_column = {v.column: renamed.get(v.column, v.column) for v in GRID_VARIABLES}
    if variables is None:
        chosen = [v for v in GRID_VARIABLES if person_column[v.column] in available]
    else:
        unknown = [name for name in variables if name not in person_column]
        if unknown:
            raise SDCInputError(
                f"variables: {unknown[0]!r} is not a grid variable (one of {list(person_column)})"
            )
        chosen = [v for v in GRID_VARIABLES if v.column in variables or v.column in REQUIRED_GRID_VARIABLES]
        missing = [person_column[v.column] for v in chosen if person_column[v.column] not in available]
        if missing:
            raise SDCInputError(f"census column {missing[0]!r} is not in the data")
    figures = ["count(*) AS total"]
    checks = []
    for v in chosen:
        col = _quote(person_column[v.column])
        figures += [
            f"count(*) FILTER (WHERE {col} = {code}) AS {_quote(name)}" for code, name in zip(v.published, v.columns)
        ]
        valid = ", ".join(str(code) for code in v.codes)
        checks.append(f"count(*) FILTER (WHERE {col} IS NULL OR {col} NOT IN ({valid})) AS {_quote('bad_' + v.column)}")
    filter_sql = f"WHERE {where}" if where else ""
    c = _quote(cell)
    try:
        counts = db.execute(
            f"""
            SELECT CAST({c} AS VARCHAR) AS cell_key, {", ".join(figures + checks)}
            FROM {relation} {filter_sql}
            GROUP BY cell_key ORDER BY cell_key
            """
        ).df()
    finally:
        if registered is not None:
            db.unregister(registered)
    if counts["cell_key"].isna().any():
        raise SDCInputError(f"column {cell!r}: cell id must not be missing")
    for v in chosen:
        bad = int(counts[f"bad_{v.column}"].sum())
        if bad > 0:
            raise SDCInputError(
                f"column {person_column[v.column]!r}: {v.column} must be one of {list(v.codes)} (found {bad} other)"
            )
    count_columns = ["total", *(name for v in chosen for name in v.columns)]
    out = counts[["cell_key", *count_columns]].rename(columns={"cell_key": cell})
    for col in count_columns:
        out[col] = out[col].astype(np.int64)
    if with_coordinates:
        coords = parse_cell_id(out[cell])
        out["northing_km"] = coords["northing_km"].to_numpy()
        out["easting_km"] = coords["easting_km"].to_numpy()
    return out
