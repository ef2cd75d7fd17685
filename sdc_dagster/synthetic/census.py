"""Synthetic national census on the 1-km grid, shaped like the Polish 2021 census of SPEC §11.4.

The published figures the generator reproduces in shape (S002 Rys. 3): 197,130 inhabited cells,
37,019,327 residents, 3,424 cells with one resident and 4,213 with two; every other cell has three
or more residents, strongly concentrated in towns. Persons live in households of realistic size
(Polish 2021 census shares of 1..6+ person households), carry sex (1 male, 2 female) and age group
(1: < 15, 2: 15–64, 3: 65+), and the further variables of the EU 2021 census grid (SPEC §11.1):

* ``employed`` (1 employed, 0 not): about 70% of persons aged 15-64 and 6% of those 65+;
* ``birth`` (1 in the reporting country, 2 elsewhere in the EU, 3 outside the EU): drawn per
  household (about 1.5% and 2.5% of households born abroad), children of foreign-born households
  mostly born in the country;
* ``residence`` one year before (1 unchanged, 2 moved within the country, 3 moved from outside):
  whole households move (about 8% within the country, 0.6% from abroad; households born abroad
  move in from outside far more often).

and two population flags:

* ``resident``: the usually-resident population (the EU grid definition, SPEC §11.1);
* ``national``: the national definition. Most persons are in both; a small share of residents is
  not counted nationally and a small number of persons counted nationally are not resident (they
  live abroad but keep a household here). The difference of the two grid tables is what the
  differencing table of SPEC §11.4 measures.

Regions are a coarser grid (``region_km`` squares, key ``N<northing/region_km>E<easting/region_km>``)
and serve as the top level of the geographic hierarchy and as Dagster partitions.

Everything is vectorised with numpy. Full scale is written to Parquet cell-chunk by cell-chunk
(:func:`write_census_parquet`, :func:`write_census_by_region`) so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import atomic_path
from sdc_dagster.grid.counts import format_cell_id
from sdc_dagster.validation import check_scalar

#: S002 Rys. 3: inhabited cells, residents, cells with 1 and with 2 residents.
SEED_CELLS = 197_130
SEED_RESIDENTS = 37_019_327
SEED_ONE_RESIDENT_CELLS = 3_424
SEED_TWO_RESIDENT_CELLS = 4_213

#: Shares of households of 1, 2, ..., 6 persons (Polish census 2021 order of magnitude).
HOUSEHOLD_SIZE_SHARES = np.array([0.24, 0.27, 0.20, 0.17, 0.08, 0.04])
#: Age groups 1 (< 15), 2 (15–64), 3 (65+) among all persons and among one-person households.
AGE_SHARES = np.array([0.152, 0.654, 0.194])
AGE_SHARES_LIVING_ALONE = np.array([0.0, 0.58, 0.42])
MALE_SHARE = 0.484
#: Employment rate by age group 1..3.
EMPLOYMENT_RATE = np.array([0.0, 0.70, 0.06])
#: Households by place of birth 1 (reporting country), 2 (other EU), 3 (outside the EU).
BIRTH_SHARES = np.array([0.96, 0.015, 0.025])
#: Share of children (< 15) of households born abroad who were born in the reporting country.
CHILDREN_BORN_HERE = 0.6
#: Households by residence one year before: 1 unchanged, 2 moved within, 3 moved from outside,
#: for native households and for households born abroad.
RESIDENCE_SHARES_NATIVE = np.array([0.916, 0.08, 0.004])
RESIDENCE_SHARES_FOREIGN = np.array([0.76, 0.12, 0.12])
#: Residents not counted in the national definition, and national-only persons per resident.
RESIDENT_ONLY_SHARE = 0.004
NATIONAL_ONLY_RATE = 0.012

#: Lower-left corner (km, ETRS89-LAEA) of the synthetic territory, near Poland's.
ORIGIN_NORTHING_KM = 3000
ORIGIN_EASTING_KM = 4600
#: Share of the territory's cells that are inhabited (Poland: about 197,000 of 312,000).
INHABITED_SHARE = 0.63


def _rng(random_state) -> np.random.Generator:
    return np.random.default_rng(random_state)


def generate_cells(
    n_persons: int,
    *,
    n_cells: int | None = None,
    random_state=None,
    region_km: int = 100,
) -> pd.DataFrame:
    """Inhabited 1-km cells with their number of residents (SPEC §11.4 shape).

    Parameters
    ----------
    n_persons
        Total resident population to distribute.
    n_cells
        Number of inhabited cells; default keeps the seed's ratio of residents per cell.
    random_state
        int seed or numpy Generator.
    region_km
        Side of the square regions (km) grouping cells into the top hierarchy level.

    Returns
    -------
    pandas.DataFrame
        One row per cell, sorted by region then cell id: ``cell_id``, ``region``,
        ``northing_km``, ``easting_km``, ``residents``. Cells with one and with two residents
        keep the seed's shares (3424 and 4213 of 197130 cells).
    """
    rng = _rng(random_state)
    if n_cells is None:
        n_cells = max(1, round(n_persons * SEED_CELLS / SEED_RESIDENTS))
    check_scalar(n_persons, "n_persons", integer=True, low=1)
    check_scalar(n_cells, "n_cells", integer=True, low=1)
    check_scalar(region_km, "region_km", integer=True, low=1)
    n_one = round(n_cells * SEED_ONE_RESIDENT_CELLS / SEED_CELLS)
    n_two = round(n_cells * SEED_TWO_RESIDENT_CELLS / SEED_CELLS)
    n_big = n_cells - n_one - n_two
    spare = n_persons - n_one - 2 * n_two - 3 * n_big
    if spare < 0:
        raise SDCInputError(
            f"n_persons: {n_persons} persons cannot fill {n_cells} cells with the seed's shares of "
            f"1- and 2-resident cells (need at least {n_persons - spare})"
        )
    side = int(np.ceil(np.sqrt(n_cells / INHABITED_SHARE)))
    flat = rng.choice(side * side, size=n_cells, replace=False)
    north = ORIGIN_NORTHING_KM + flat // side
    east = ORIGIN_EASTING_KM + flat % side

    # Settlement pattern: a lognormal cell attractiveness boosted near a few "towns", so that
    # populations are spatially clustered and sparse cells lie away from towns.
    n_towns = max(1, n_cells // 4000)
    towns = rng.choice(n_cells, size=n_towns, replace=False)
    distance = np.full(n_cells, np.inf)
    for t in towns:  # loops over towns (dozens), never over cells
        distance = np.minimum(distance, np.hypot(north - north[t], east - east[t]))
    weight = rng.lognormal(0.0, 1.0, size=n_cells) * (1.0 + 40.0 * np.exp(-distance / 4.0))

    residents = np.empty(n_cells, dtype=np.int64)
    order = np.argsort(weight)  # the least attractive cells hold 1 or 2 residents
    small = order[: n_one + n_two]
    rng.shuffle(small)
    residents[small[:n_one]] = 1
    residents[small[n_one:]] = 2
    big = order[n_one + n_two :]
    if n_big > 0:
        share = weight[big] / weight[big].sum()
        residents[big] = 3 + rng.multinomial(spare, share)
    elif spare > 0:
        raise SDCInputError("n_cells: too few cells to hold the population with 3+ resident cells")

    cells = pd.DataFrame(
        {
            "cell_id": format_cell_id(north, east).to_numpy(),
            "region": _region_keys(north, east, region_km),
            "northing_km": north.astype(np.int64),
            "easting_km": east.astype(np.int64),
            "residents": residents,
        }
    )
    return cells.sort_values(["region", "northing_km", "easting_km"], ignore_index=True)


def _region_keys(north: np.ndarray, east: np.ndarray, region_km: int) -> np.ndarray:
    n_part = pd.Series(north // region_km).astype(str)
    e_part = pd.Series(east // region_km).astype(str)
    return ("N" + n_part + "E" + e_part).to_numpy()


def _categories(draws: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Codes 1..len(shares) from uniform draws by inverse CDF of ``shares``."""
    return (1 + np.searchsorted(np.cumsum(shares)[:-1], draws, side="right")).astype(np.int8)


def _household_sizes(n_persons_total: int, rng: np.random.Generator) -> np.ndarray:
    """A stream of household sizes whose sum reaches ``n_persons_total``."""
    mean = float((np.arange(1, 7) * HOUSEHOLD_SIZE_SHARES).sum())
    sizes = rng.choice(np.arange(1, 7), size=int(n_persons_total / mean * 1.05) + 16, p=HOUSEHOLD_SIZE_SHARES)
    while sizes.sum() < n_persons_total:
        sizes = np.concatenate([sizes, rng.choice(np.arange(1, 7), size=1024, p=HOUSEHOLD_SIZE_SHARES)])
    return sizes


def generate_persons(
    cells: pd.DataFrame,
    *,
    random_state=None,
    first_household_id: int = 0,
    first_person_id: int = 0,
) -> pd.DataFrame:
    """Person records for the given cells (one chunk of the census).

    Households never cross a cell boundary: the stream of household sizes is cut at every cell
    boundary (a household reaching over it is truncated), so cells with 1 or 2 residents hold
    one-person or two-person households.

    Returns
    -------
    pandas.DataFrame
        ``person_id``, ``household_id``, ``cell_id`` and ``region`` (categorical), ``sex``,
        ``age_group``, ``employed``, ``birth``, ``residence`` (int8), ``household_size`` (resident members, int16), ``resident`` and
        ``national`` (bool). National-only persons are extra rows in existing households.
    """
    rng = _rng(random_state)
    residents = cells["residents"].to_numpy(dtype=np.int64)
    n = int(residents.sum())
    cell_end = np.cumsum(residents)
    hh_end = np.cumsum(_household_sizes(n, rng))
    breaks = np.union1d(cell_end, hh_end[hh_end < n])
    person = np.arange(n, dtype=np.int64)
    household = np.searchsorted(breaks, person, side="right")
    cell_index = np.repeat(np.arange(len(cells)), residents)
    household_size = np.bincount(household)[household]

    alone = household_size == 1
    age_draw = rng.random(n)
    age = np.where(
        alone,
        1 + (age_draw >= AGE_SHARES_LIVING_ALONE[0]) + (age_draw >= AGE_SHARES_LIVING_ALONE[:2].sum()),
        1 + (age_draw >= AGE_SHARES[0]) + (age_draw >= AGE_SHARES[:2].sum()),
    ).astype(np.int8)
    sex = np.where(rng.random(n) < MALE_SHARE, 1, 2).astype(np.int8)
    national = rng.random(n) >= RESIDENT_ONLY_SHARE

    # National-only persons join randomly chosen households (and so their cells).
    n_extra = int(rng.binomial(n, NATIONAL_ONLY_RATE)) if n else 0
    host = rng.integers(0, n, size=n_extra) if n_extra else np.empty(0, dtype=np.int64)
    extra_age = (1 + (rng.random(n_extra) >= 0.05) + (rng.random(n_extra) >= 0.9)).astype(np.int8)
    extra_sex = np.where(rng.random(n_extra) < 0.55, 1, 2).astype(np.int8)

    # Further grid variables (drawn after the others, so sex and age are those of earlier versions).
    all_household = np.concatenate([household, household[host]])
    all_age = np.concatenate([age, extra_age])
    n_households = int(household.max()) + 1 if n else 0
    household_birth = _categories(rng.random(n_households), BIRTH_SHARES)
    birth = household_birth[all_household]
    child_here = (all_age == 1) & (rng.random(n + n_extra) < CHILDREN_BORN_HERE)
    birth = np.where(child_here, 1, birth).astype(np.int8)
    move_draw = rng.random(n_households)
    household_residence = np.where(
        household_birth == 1,
        _categories(move_draw, RESIDENCE_SHARES_NATIVE),
        _categories(move_draw, RESIDENCE_SHARES_FOREIGN),
    )
    residence = household_residence[all_household].astype(np.int8)
    employed = (rng.random(n + n_extra) < EMPLOYMENT_RATE[all_age - 1]).astype(np.int8)

    all_cell = np.concatenate([cell_index, cell_index[host]])
    cell_codes = pd.Categorical.from_codes(all_cell.astype(np.int32), categories=pd.Index(cells["cell_id"]))
    regions = pd.Index(pd.unique(cells["region"]))
    region_codes = regions.get_indexer(cells["region"].to_numpy())[all_cell].astype(np.int32)
    frame = pd.DataFrame(
        {
            "person_id": first_person_id + np.arange(n + n_extra, dtype=np.int64),
            "household_id": first_household_id + all_household.astype(np.int64),
            "cell_id": cell_codes,
            "region": pd.Categorical.from_codes(region_codes, categories=regions),
            "sex": np.concatenate([sex, extra_sex]),
            "age_group": all_age,
            "employed": employed,
            "birth": birth,
            "residence": residence,
            "household_size": np.concatenate([household_size, household_size[host]]).astype(np.int16),
            "resident": np.concatenate([np.ones(n, dtype=bool), np.zeros(n_extra, dtype=bool)]),
            "national": np.concatenate([national, np.ones(n_extra, dtype=bool)]),
        }
    )
    return frame


def _cell_chunks(cells: pd.DataFrame, chunk_persons: int, *, by_region: bool) -> Iterator[pd.DataFrame]:
    """Consecutive blocks of cells holding at most about ``chunk_persons`` residents each."""
    groups = cells.groupby("region", sort=False) if by_region else [(None, cells)]
    for _, group in groups:
        block = np.cumsum(group["residents"].to_numpy()) // max(1, chunk_persons)
        for _, part in group.groupby(block, sort=True):
            yield part


def _iter_person_chunks(
    cells: pd.DataFrame, rng: np.random.Generator, chunk_persons: int, *, by_region: bool
) -> Iterator[pd.DataFrame]:
    next_household = 0
    next_person = 0
    for part in _cell_chunks(cells, chunk_persons, by_region=by_region):
        persons = generate_persons(
            part, random_state=rng, first_household_id=next_household, first_person_id=next_person
        )
        next_household = int(persons["household_id"].max()) + 1
        next_person = int(persons["person_id"].max()) + 1
        yield persons


def generate_census(
    n_persons: int,
    *,
    n_cells: int | None = None,
    random_state=None,
    region_km: int = 100,
    chunk_persons: int = 2_000_000,
) -> pd.DataFrame:
    """A synthetic census of about ``n_persons`` residents on ``n_cells`` inhabited 1-km cells.

    Parameters
    ----------
    n_persons, n_cells, region_km
        As in :func:`generate_cells`.
    random_state
        int seed or numpy Generator; the same seed gives the same census.
    chunk_persons
        Persons generated per chunk (also the chunking of :func:`write_census_parquet`).

    Returns
    -------
    pandas.DataFrame
        Person records (see :func:`generate_persons`), households numbered from 0.

    References
    ----------
    SPEC §11.1, §11.4 (S002 Rys. 3).
    """
    rng = _rng(random_state)
    cells = generate_cells(n_persons, n_cells=n_cells, random_state=rng, region_km=region_km)
    chunks = list(_iter_person_chunks(cells, rng, chunk_persons, by_region=False))
    out = pd.concat(chunks, ignore_index=True)
    # pd.concat turns categoricals with different categories into object; restore the codes.
    out["cell_id"] = pd.Categorical(out["cell_id"], categories=pd.Index(cells["cell_id"]))
    out["region"] = pd.Categorical(out["region"], categories=pd.Index(pd.unique(cells["region"])))
    return out


def _arrow_table(persons: pd.DataFrame) -> pa.Table:
    # Strings dictionary-encoded with a fixed index type, so every chunk shares one schema.
    return pa.Table.from_pandas(persons, preserve_index=False).cast(census_arrow_schema())


#: How census person files are written: lz4, dictionaries only for the text columns (writes about
#: four times faster than the pyarrow defaults at a similar size; read by DuckDB and pandas alike).
PARQUET_OPTIONS = {"compression": "lz4", "use_dictionary": ["cell_id", "region"], "write_statistics": False}


def census_arrow_schema() -> pa.Schema:
    """Arrow schema of census person files written by this module."""
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            ("person_id", pa.int64()),
            ("household_id", pa.int64()),
            ("cell_id", text),
            ("region", text),
            ("sex", pa.int8()),
            ("age_group", pa.int8()),
            ("employed", pa.int8()),
            ("birth", pa.int8()),
            ("residence", pa.int8()),
            ("household_size", pa.int16()),
            ("resident", pa.bool_()),
            ("national", pa.bool_()),
        ]
    )


def write_census_parquet(
    path: str | Path,
    n_persons: int,
    *,
    n_cells: int | None = None,
    random_state=None,
    region_km: int = 100,
    chunk_persons: int = 2_000_000,
) -> Path:
    """Write a synthetic census to one Parquet file, chunk by chunk (bounded memory at 37 million).

    Same content as :func:`generate_census` with the same arguments. Returns the path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = _rng(random_state)
    cells = generate_cells(n_persons, n_cells=n_cells, random_state=rng, region_km=region_km)
    with pq.ParquetWriter(path, census_arrow_schema(), **PARQUET_OPTIONS) as writer:
        for persons in _iter_person_chunks(cells, rng, chunk_persons, by_region=False):
            writer.write_table(_arrow_table(persons))
    return path


def write_census_by_region(
    directory: str | Path,
    n_persons: int,
    *,
    n_cells: int | None = None,
    random_state=None,
    region_km: int = 100,
    chunk_persons: int = 2_000_000,
) -> list[str]:
    """Write one Parquet file ``<directory>/<region>.parquet`` per region; return the region keys.

    Household and person ids are unique across all regions. The regions are streamed to temporary
    files (:func:`sdc_dagster.files.atomic_path`), each moved into place once complete, so that an
    interrupted write leaves no cut region file.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = _rng(random_state)
    cells = generate_cells(n_persons, n_cells=n_cells, random_state=rng, region_km=region_km)
    writers: dict[str, pq.ParquetWriter] = {}
    with ExitStack() as files:
        for persons in _iter_person_chunks(cells, rng, chunk_persons, by_region=True):
            region = str(persons["region"].iloc[0])
            if region not in writers:
                temporary = files.enter_context(atomic_path(directory / f"{region}.parquet"))
                writers[region] = pq.ParquetWriter(temporary, census_arrow_schema(), **PARQUET_OPTIONS)
                files.callback(writers[region].close)  # closed before its file is moved into place
            writers[region].write_table(_arrow_table(persons))
    return list(writers)
