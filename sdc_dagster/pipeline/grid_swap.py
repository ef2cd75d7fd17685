"""The national swap of the census grid chain (SPEC §8.10): targeted record swapping of household
geography across every region, and the swapped persons written back per region.

The one step of the chain that reads all regions (:func:`swap_regions`); every later step reads one
region's swapped persons (:func:`swapped_region_file`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as arrow
import pyarrow.parquet as pq

from sdc_dagster.synthetic.census import PARQUET_OPTIONS, census_arrow_schema
from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import atomic_path
from sdc_dagster.spec.grid import SwapSpec
from sdc_dagster.protect.record_swapping import targeted_record_swap


def read_census_files(files: Sequence[Path]) -> pd.DataFrame:
    """Persons of several region files in one frame; cell and region stay categorical (one dictionary)."""
    table = arrow.concat_tables([pq.read_table(f) for f in files]).unify_dictionaries()
    # Arrow buffers are released column by column as pandas takes them over (peak: one copy, not two).
    return table.to_pandas(self_destruct=True, split_blocks=True)


def swap_census(persons: pd.DataFrame, spec: SwapSpec):
    """Targeted record swapping of every region's persons (SPEC §8.10; households matched on size;
    geography region > cell); :func:`~sdc_dagster.protect.record_swapping.targeted_record_swap`'s result."""
    return targeted_record_swap(
        persons,
        hid="household_id",
        hierarchy=["region", "cell_id"],
        similar=[["household_size"]],
        risk_variables=list(spec.risk_variables),
        swaprate=spec.swaprate,
        k_anonymity=spec.k_anonymity,
        random_state=spec.seed,
    )


def swapped_households(swapped: pd.DataFrame, persons: pd.DataFrame, swapped_with: pd.Series) -> pd.DataFrame:
    """One row per swapped household: its id, partner, and region / cell before and after the swap."""
    first = ~swapped["household_id"].duplicated().to_numpy()
    partner = swapped["household_id"].map(swapped_with).to_numpy()
    moved = (partner != swapped["household_id"].to_numpy()) & first
    # Rows selected before the text conversion: only the swapped households become strings.
    return pd.DataFrame(
        {
            "household_id": swapped["household_id"].to_numpy()[moved],
            "swapped_with": partner[moved],
            "region_before": persons["region"][moved].astype(str).to_numpy(),
            "cell_before": persons["cell_id"][moved].astype(str).to_numpy(),
            "region_after": swapped["region"][moved].astype(str).to_numpy(),
            "cell_after": swapped["cell_id"][moved].astype(str).to_numpy(),
        }
    )


def _region_positions(region: pd.Series, names: pd.Index) -> np.ndarray:
    """Position of each person's region in ``names`` (-1 if absent); categoricals via their categories."""
    if not isinstance(region.dtype, pd.CategoricalDtype):
        return names.get_indexer(region.astype(str))
    codes = region.cat.codes.to_numpy()
    positions = names.get_indexer(region.cat.categories.astype(str))
    return np.where(codes >= 0, positions[codes], -1)


def write_swapped_regions(
    folder: Path, persons: pd.DataFrame, swapped: pd.DataFrame, swapped_with: pd.Series, regions: Sequence[str]
) -> pd.DataFrame:
    """Write ``swapped`` to ``<folder>/<region>.parquet`` by its (new) region; per-region summary.

    The summary has, per region, resident persons and households before and after the swap
    (equal: donors are matched on household size, the number of resident members) and the
    households that came in by swapping. Vectorised over persons (region codes, one stable sort).
    Each file is written to a temporary file and moved into place (:func:`~sdc_dagster.files.atomic_path`).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = pd.Index(list(regions))
    before = _region_positions(persons["region"], names)
    after = _region_positions(swapped["region"], names)
    household = swapped["household_id"].to_numpy()
    moved = household != swapped["household_id"].map(swapped_with).to_numpy() if len(swapped) else np.zeros(0, bool)
    resident = swapped["resident"].to_numpy(dtype=bool)
    first = ~pd.Series(household).duplicated().to_numpy()
    first_resident = ~pd.Series(np.where(resident, household, -1)).duplicated().to_numpy() & resident
    n = len(names)
    summary = pd.DataFrame(
        {
            "persons_before": np.bincount(before[resident], minlength=n),
            "households_before": np.bincount(before[first_resident], minlength=n),
            "persons_after": np.bincount(after[resident], minlength=n),
            "households_after": np.bincount(after[first_resident], minlength=n),
            "households_swapped_in": np.bincount(after[first & moved], minlength=n),
        },
        index=pd.Index(names, name="region"),
    ).astype(np.int64)
    order = np.argsort(after, kind="stable")
    bounds = np.searchsorted(after[order], np.arange(n + 1))
    for j, region in enumerate(names):  # one file per region (dozens), never per record
        # Converted region by region: only one region's copy is held beside the national frame.
        part = arrow.Table.from_pandas(swapped.iloc[order[bounds[j]:bounds[j + 1]]], preserve_index=False)
        with atomic_path(folder / f"{region}.parquet") as temporary:
            pq.write_table(part.cast(census_arrow_schema()), temporary, **PARQUET_OPTIONS)
    return summary


@dataclass(frozen=True)
class SwappedCensus:
    """The national swap: ``summary`` (per region: persons and households before/after, households
    swapped in, ``file`` = the region's swapped persons), ``households`` (one row per swapped
    household, :func:`swapped_households`) and the headline counts of the swap."""

    summary: pd.DataFrame
    households: pd.DataFrame
    persons: int
    household_count: int
    swapped_household_count: int
    risky_household_count: int
    unmatched_household_count: int


def swap_regions(files: Sequence[Path], regions: Sequence[str], folder: Path, spec: SwapSpec) -> SwappedCensus:
    """Read every region's census file, swap (:func:`swap_census`), write the swapped regions to ``folder``."""
    persons = read_census_files(files)
    result = swap_census(persons, spec)
    summary = write_swapped_regions(folder, persons, result.data, result.swapped_with, regions)
    summary["file"] = [str(Path(folder) / f"{r}.parquet") for r in summary.index]
    return SwappedCensus(
        summary=summary,
        households=swapped_households(result.data, persons, result.swapped_with),
        persons=len(persons),
        household_count=int(result.swapped_with.size),
        swapped_household_count=result.n_swapped_households,
        risky_household_count=result.n_risky_households,
        unmatched_household_count=result.n_unmatched_households,
    )


def swapped_region_file(summary: pd.DataFrame, region: str) -> Path:
    """The swapped persons of ``region`` named by a swap summary (:attr:`SwappedCensus.summary`)."""
    if region not in summary.index:
        raise SDCInputError(f"region {region!r} was not in the national swap (regions: "
                            f"{', '.join(map(str, summary.index))}); swap the census again")
    path = Path(summary.loc[region, "file"])
    if not path.is_file():
        raise FileNotFoundError(f"region {region!r}: no swapped census at {path}; swap the census again")
    return path
