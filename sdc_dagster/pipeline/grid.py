"""The census grid chain as offices publish it (SPEC §8.10, §8.11, §11; Eurostat 2021 practice).

Region census files (``<home>/census/<region>.parquet``) -> targeted record swapping of household
geography across every region (:mod:`sdc_dagster.pipeline.grid_swap`, the one step that reads all
regions; the swapped persons are written back per region) -> national totals of
every figure (:func:`national_totals`) and, per region, the tabulated grid
(:func:`~sdc_dagster.grid.counts.tabulate_grid`) -> the protected tables of the two routes of the
grid spec: the cell key method (:func:`cell_key_region`) and consistent primary/secondary
suppression of both populations (:func:`suppress_region`). The assets and the audit replay
(:mod:`sdc_dagster.releases.grid`, :mod:`sdc_dagster.releases.replay`) call these same functions.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa

from sdc_dagster.synthetic.census import write_census_by_region
from sdc_dagster.grid.counts import GRID_VARIABLES, tabulate_grid
from sdc_dagster.spec.grid import CellKeySpec, SuppressionSpec
from sdc_dagster.protect.cellkey import assign_record_keys, grid_cell_key
from sdc_dagster.protect.ptable import perturbation_table
from sdc_dagster.protect.grid import consistent_grid_suppression
from sdc_dagster.spec.schemas import validate

CELL_ID_PATTERN = r"^(\d+(km|m)N\d+E\d+|CRS3035RES\d+mN\d+E\d+)$"

#: The census persons of a region as the chain reads them (SPEC §11.1 variables, GEOSTAT cell ids).
census_schema = pa.DataFrameSchema(
    {
        "cell_id": pa.Column(
            checks=pa.Check(
                lambda s: s.astype("string").str.fullmatch(CELL_ID_PATTERN).fillna(False),
                error="cell id must be a GEOSTAT/INSPIRE grid id like 1kmN3120E5012",
            ),
            nullable=False,
        ),
        "sex": pa.Column(checks=pa.Check.isin([1, 2]), nullable=False),
        "age_group": pa.Column(checks=pa.Check.isin([1, 2, 3]), nullable=False),
        "household_id": pa.Column(nullable=False),
        "employed": pa.Column(checks=pa.Check.isin([0, 1]), nullable=False, required=False),
        "birth": pa.Column(checks=pa.Check.isin([1, 2, 3]), nullable=False, required=False),
        "residence": pa.Column(checks=pa.Check.isin([1, 2, 3]), nullable=False, required=False),
    },
    name="census grid microdata",  # a space: no survey's "<survey>_microdata" type can take this name
    strict=False,
)

#: Person columns the cell key route reads.
CELL_KEY_COLUMNS = ["person_id", "cell_id", "resident", *(v.column for v in GRID_VARIABLES)]


def census_dir(home: Path) -> Path:
    """Where region files live: ``<home>/census/<region>.parquet``."""
    return Path(home) / "census"


def swapped_dir(home: Path) -> Path:
    """Where the swapped persons are written: ``<home>/census_swapped/<region>.parquet``."""
    return Path(home) / "census_swapped"


def census_files(home: Path, regions: Sequence[str]) -> list[Path]:
    """The census file of every region; FileNotFoundError naming the missing ones."""
    files = [census_dir(home) / f"{r}.parquet" for r in regions]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"census region files missing: {', '.join(missing)}")
    return files


def read_region_census(home: Path, region: str) -> pd.DataFrame:
    """One region's census persons, validated (:data:`census_schema`)."""
    path = census_dir(home) / f"{region}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"region {region!r}: no census file at {path}")
    return validate(pd.read_parquet(path), census_schema, source=str(path))


def prepare_demo_census(home: Path, *, n_persons: int = 100_000, random_state: int = 2021) -> list[str]:
    """Write a small demo census as ``home/census/<region>.parquet``; return the region keys."""
    return write_census_by_region(census_dir(Path(home)), n_persons, random_state=random_state, region_km=10)


def region_seed(seed: int, region: str) -> np.random.SeedSequence:
    """The seed of one region's random draws: stable, so a region gets the same draws in every run."""
    return np.random.SeedSequence([seed, zlib.crc32(region.encode())])


def tabulate_region(path: Path, population: str) -> pd.DataFrame:
    """The 13 figures of one region's swapped persons per 1-km cell, for the ``resident`` or
    ``national`` population, with cell coordinates (SPEC §11.1)."""
    return tabulate_grid(path, where=population, with_coordinates=True)


def national_totals(files: Sequence[Path]) -> pd.DataFrame:
    """National count of every figure per population (rows ``resident``, ``national``) over region files."""
    rows = {}
    for population in ("resident", "national"):
        # DuckDB over every region file, grouped by the population flag: the "true" group is the population.
        by_flag = tabulate_grid(list(files), cell=population)
        flagged = by_flag[by_flag[population].str.lower() == "true"].drop(columns=population)
        rows[population] = flagged.sum() if len(flagged) else pd.Series(0, index=flagged.columns)
    totals = pd.DataFrame.from_dict(rows, orient="index").astype(np.int64)
    totals.index.name = "population"
    return totals


def national_reference_counts(totals: pd.DataFrame) -> dict[str, int]:
    """Reference counts of the "distribution" strategy (SPEC §11.2): the national resident count of
    every category."""
    resident = totals.loc["resident"]
    return {c: int(resident[c]) for c in resident.index if c != "total"}


def suppress_region(
    counts: pd.DataFrame, national: pd.DataFrame, reference: dict[str, int], spec: SuppressionSpec, region: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The suppression route of one region (SPEC §11.2, §11.4): both populations' tables, suppressed
    consistently, the draws seeded per region (:func:`region_seed`)."""
    return consistent_grid_suppression(
        counts,
        national,
        k=spec.k,
        strategy=spec.strategy,
        reference_counts=reference,
        tie_only=spec.tie_only,
        random_state=region_seed(spec.seed, region),
    )


def cell_key_region(persons: pd.DataFrame, spec: CellKeySpec) -> tuple[pd.DataFrame, pd.Series]:
    """The cell key route of one region's swapped persons (SPEC §8.11, ONS record-key form):
    (perturbed resident table, p-table)."""
    persons = persons.assign(
        record_key=assign_record_keys(persons, n_key=255, first=0, id_column="person_id", random_state=spec.seed)
    )
    table = perturbation_table(spec.max_deviation, spec.variance, threshold=spec.threshold)
    return grid_cell_key(persons, ptable=table, where="resident"), table


def cell_key_persons(path: Path) -> pd.DataFrame:
    """The columns of a region's swapped persons that the cell key route reads."""
    return pd.read_parquet(path, columns=CELL_KEY_COLUMNS)
