"""The census grid asset chain as offices publish it (SPEC §8.10, §8.11, §11; Eurostat 2021 practice).

census_microdata (one Parquet file per region under ``$SDC_HOME/census/``, validated; partitioned)
-> census_swapped (targeted record swapping of household geography across every region: the one
step that reads all regions; writes the swapped persons back per region under
``$SDC_HOME/census_swapped/``) -> grid_national_totals (national counts of every figure, read from
every swapped region) and, per region, grid_counts / grid_counts_national (tabulated from the
swapped persons, all 13 figures of the EU 2021 grid) -> the protected tables of the two routes:

* ``cell_key``: grid_cell_key (cell key method, ONS record-key form, p-table D/V/js) ->
  grid_cell_key_loss;
* ``suppression``: grid_suppressed and grid_suppressed_national (primary/secondary suppression of
  both populations consistently, the "distribution" strategy reading the national totals) ->
  grid_loss.

The grid spec (``examples/grid/census_grid.yaml``, :func:`load_grid_spec`) picks the routes and
their parameters; :func:`run_grid_chain` runs the whole chain. Assets are thin: read, call one
engine function, attach headline metadata.
"""


import base64
import contextlib
import json
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pyarrow as arrow
import pyarrow.parquet as pq
import yaml
from dagster import (
    AssetCheckResult,
    AssetKey,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetOut,
    AssetSelection,
    Config,
    DynamicPartitionsDefinition,
    MetadataValue,
    Output,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    asset,
    define_asset_job,
    multi_asset,
    sensor,
)
from dagster_pandera import pandera_schema_to_dagster_type

from sdc_dagster.resources.storage import sdc_home
from sdc_dagster.census import PARQUET_OPTIONS, census_arrow_schema, write_census_by_region
from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import write_atomic
from sdc_dagster.grid_counts import GRID_COUNT_COLUMNS, GRID_VARIABLES, grid_variables_of, tabulate_grid
from sdc_dagster.loss.tables import grid_information_loss, perturbation_loss, secondary_suppression_cost
from sdc_dagster.report.maps import suppression_map_png
from sdc_dagster.risk.tables import (
    difference_table,
    differencing_disclosure,
    disclosing_differences,
    homogeneous_cells,
    resident_size_distribution,
)
from sdc_dagster.protect.cellkey import assign_record_keys, grid_cell_key as perturb_grid
from sdc_dagster.protect.grid import consistent_grid_suppression
from sdc_dagster.protect.ptable import perturbation_table
from sdc_dagster.protect.record_swapping import targeted_record_swap
from sdc_dagster.schemas import validate

GROUP = "grid"
#: 2: tables from the swapped census, all 13 figures of the 2021 grid.
CODE_VERSION = "2"
#: 3: every variable group suppressed, "distribution" reads the national totals.
SUPPRESSION_CODE_VERSION = "3"
#: The routes of protection of the tabulated grid (seed 002: cell key method, or suppression).
ROUTES: tuple[str, ...] = ("cell_key", "suppression")
grid_regions = DynamicPartitionsDefinition(name="grid_regions")

CELL_ID_PATTERN = r"^(\d+(km|m)N\d+E\d+|CRS3035RES\d+mN\d+E\d+)$"

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


def census_dir(home: Path | None = None) -> Path:
    """Where region files live: ``<home>/census/<region>.parquet``."""
    return (home or sdc_home()) / "census"


def swapped_dir(home: Path | None = None) -> Path:
    """Where census_swapped writes the swapped persons: ``<home>/census_swapped/<region>.parquet``."""
    return (home or sdc_home()) / "census_swapped"


def _swapped_file(region: str) -> Path:
    path = swapped_dir() / f"{region}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"region {region!r}: no swapped census at {path}; materialise census_swapped first")
    return path


def prepare_demo_census(home: Path, *, n_persons: int = 100_000, random_state: int = 2021) -> list[str]:
    """Write a small demo census as ``home/census/<region>.parquet``; return the region keys."""
    return write_census_by_region(census_dir(Path(home)), n_persons, random_state=random_state, region_km=10)


def _image(png: bytes, title: str) -> MetadataValue:
    return MetadataValue.md(f"**{title}**\n\n![{title}](data:image/png;base64,{base64.b64encode(png).decode()})")


def _markdown(frame: pd.DataFrame) -> MetadataValue:
    return MetadataValue.md(frame.to_markdown() if len(frame) else "(empty)")


def _region_seed(seed: int, region: str) -> np.random.SeedSequence:
    # Stable per region: the same region gets the same record keys in every run.
    return np.random.SeedSequence([seed, zlib.crc32(region.encode())])


class SuppressionConfig(Config):
    """SPEC §11.2 parameters; "distribution" reads the national totals of the resident population."""

    k: int = 3
    strategy: str = "distribution"
    tie_only: bool = True
    seed: int = 2021


class CellKeyConfig(Config):
    """SPEC §8.11 parameters: p-table D, V, js (sdcTools ptable) and the seed of the record keys."""

    max_deviation: int = 2
    variance: float = 1.05
    threshold: int = 1
    seed: int = 2021


class SwapConfig(Config):
    """SPEC §8.10 parameters (sdcMicro recordSwap): households matched on size, geography region > cell."""

    swaprate: float = 0.05
    k_anonymity: int = 3
    risk_variables: list[str] = ["sex", "age_group"]
    seed: int = 2021


@asset(
    group_name=GROUP,
    partitions_def=grid_regions,
    code_version=CODE_VERSION,
    dagster_type=pandera_schema_to_dagster_type(census_schema),
    description="Census persons of one region (cell id, sex 1/2, age group 1-3, household), validated.",
)
def census_microdata(context: AssetExecutionContext) -> pd.DataFrame:
    region = context.partition_key
    path = census_dir() / f"{region}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"region {region!r}: no census file at {path}")
    persons = validate(pd.read_parquet(path), census_schema, source=str(path))
    context.add_output_metadata(
        {
            "persons": int(persons["resident"].sum()) if "resident" in persons else len(persons),
            "households": int(persons["household_id"].nunique()),
            "cells": int(persons["cell_id"].nunique()),
        }
    )
    return persons


def _counts_metadata(counts: pd.DataFrame) -> dict:
    sizes = resident_size_distribution(counts)
    return {
        "cells": len(counts),
        "residents": int(counts["total"].sum()),
        "potentially_unsafe_cells": int(sizes.loc["potentially unsafe", "cells"]),
        "size_distribution": _markdown(sizes.round(2)),
    }


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION, deps=["census_swapped"],
       description="Resident population per 1-km cell after record swapping: the 13 figures of the 2021 grid (DuckDB).")
def grid_counts(context: AssetExecutionContext) -> pd.DataFrame:
    counts = tabulate_grid(_swapped_file(context.partition_key), where="resident", with_coordinates=True)
    context.add_output_metadata(_counts_metadata(counts))
    return counts


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION, deps=["census_swapped"],
       description="Population per 1-km cell under the national definition, after record swapping.")
def grid_counts_national(context: AssetExecutionContext) -> pd.DataFrame:
    counts = tabulate_grid(_swapped_file(context.partition_key), where="national", with_coordinates=True)
    context.add_output_metadata(_counts_metadata(counts))
    return counts


@asset(group_name=GROUP, code_version=CODE_VERSION, deps=["census_swapped"],
       description="National count of every grid figure, per population, read from every swapped region: "
       "the reference counts of the \"distribution\" suppression strategy (SPEC §11.2).")
def grid_national_totals(context: AssetExecutionContext) -> pd.DataFrame:
    files = sorted(swapped_dir().glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"grid_national_totals: no swapped region under {swapped_dir()}")
    totals = national_totals(files)
    context.add_output_metadata({"regions": len(files), "totals": _markdown(totals.T)})
    return totals


# Checks run inside their (partitioned) assets: a separate @asset_check would load every
# partition at once, which the per-partition Parquet IO manager does not serve.
NO_SMALL_COUNTS = AssetCheckSpec(
    "no_small_published_counts",
    asset="grid_suppressed",
    description="No published category count in 1..k-1 and no margin with a single hidden count.",
)
NO_SMALL_COUNTS_NATIONAL = AssetCheckSpec(
    "no_small_published_counts",
    asset="grid_suppressed_national",
    description="No published category count in 1..k-1 and no margin with a single hidden count.",
)
CONSISTENT_WITH_RESIDENT = AssetCheckSpec(
    "consistent_with_resident_table",
    asset="grid_suppressed_national",
    description="Same hidden pattern as grid_suppressed on common cells, and no published category "
    "whose resident/national difference is in 1..k-1 (SPEC §11.4 differencing).",
)
CELL_KEY_BOUNDED = AssetCheckSpec(
    "cell_key_bounded",
    asset="grid_cell_key",
    description="Perturbed counts are non-negative, within D of the original, zeros stay zero and no "
    "published count lies in 1..js, in every figure.",
)


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


def _category_columns(table: pd.DataFrame) -> list[str]:
    return [c for v in grid_variables_of(table.columns, published=True) for c in v.columns]


def _hidden_metadata(protected: pd.DataFrame) -> dict:
    hidden = protected[_category_columns(protected)].isna()
    out = {"hidden_counts": int(hidden.to_numpy().sum())}
    for v in grid_variables_of(protected.columns, published=True):
        out[f"cells_with_hidden_{v.prefix}"] = int(hidden[list(v.columns)].any(axis=1).sum())
    return out


@multi_asset(
    name="grid_consistent_suppression",
    outs={
        "grid_suppressed": AssetOut(
            code_version=SUPPRESSION_CODE_VERSION,
            description="Resident grid table after primary (0 < c < k) and secondary suppression, "
            "consistent with the national-definition table; hidden = NA (SPEC §11.2, §11.4).",
        ),
        "grid_suppressed_national": AssetOut(
            code_version=SUPPRESSION_CODE_VERSION,
            description="National-definition grid table, suppressed consistently with grid_suppressed: "
            "same hidden pattern per cell, no disclosing difference published (SPEC §11.2, §11.4).",
        ),
    },
    group_name=GROUP,
    partitions_def=grid_regions,
    check_specs=[NO_SMALL_COUNTS, NO_SMALL_COUNTS_NATIONAL, CONSISTENT_WITH_RESIDENT],
)
def grid_consistent_suppression(
    context: AssetExecutionContext,
    config: SuppressionConfig,
    grid_counts: pd.DataFrame,
    grid_counts_national: pd.DataFrame,
    grid_national_totals: pd.DataFrame,
):
    reference = national_reference_counts(grid_national_totals)
    context.log.info(f"suppression reference counts (national, residents): {reference}")
    resident, national = suppress_region(grid_counts, grid_counts_national, reference, config, context.partition_key)
    differencing = differencing_exposure(grid_counts, grid_counts_national, resident, national, k=config.k)
    yield Output(
        resident,
        output_name="grid_suppressed",
        metadata={**_hidden_metadata(resident), "reference_counts": MetadataValue.json(reference),
                  "suppression": MetadataValue.json(config.model_dump())},
    )
    yield Output(
        national,
        output_name="grid_suppressed_national",
        metadata={**_hidden_metadata(national), "cells_differencing_blocked": differencing["blocked"]},
    )
    yield no_small_published_counts(resident, k=config.k)
    yield no_small_published_counts(national, k=config.k, asset_key="grid_suppressed_national")
    yield consistent_with_resident_table(resident, national, differencing)


def suppress_region(
    counts: pd.DataFrame, national: pd.DataFrame, reference: dict[str, int], config: SuppressionConfig, region: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The suppression route of one region (the asset's and the audit's one computation)."""
    return consistent_grid_suppression(
        counts,
        national,
        k=config.k,
        strategy=config.strategy,
        reference_counts=reference,
        tie_only=config.tie_only,
        random_state=_region_seed(config.seed, region),
    )


#: Person columns the cell key route reads.
CELL_KEY_COLUMNS = ["person_id", "cell_id", "resident", *(v.column for v in GRID_VARIABLES)]


def cell_key_region(persons: pd.DataFrame, config: CellKeyConfig):
    """The cell key route of one region's swapped persons: (perturbed table, p-table)."""
    persons = persons.assign(
        record_key=assign_record_keys(persons, n_key=255, first=0, id_column="person_id", random_state=config.seed)
    )
    table = perturbation_table(config.max_deviation, config.variance, threshold=config.threshold)
    return perturb_grid(persons, ptable=table, where="resident"), table


def swap_census(persons: pd.DataFrame, config: SwapConfig):
    """Targeted record swapping of every region's persons (households matched on size; region > cell)."""
    return targeted_record_swap(
        persons,
        hid="household_id",
        hierarchy=["region", "cell_id"],
        similar=[["household_size"]],
        risk_variables=list(config.risk_variables),
        swaprate=config.swaprate,
        k_anonymity=config.k_anonymity,
        random_state=config.seed,
    )


def national_reference_counts(grid_national_totals: pd.DataFrame) -> dict[str, int]:
    """Reference counts of the "distribution" strategy: the national resident count of every category."""
    resident = grid_national_totals.loc["resident"]
    return {c: int(resident[c]) for c in resident.index if c != "total"}


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION, check_specs=[CELL_KEY_BOUNDED],
       deps=["census_swapped"],
       description="Resident grid table (13 figures) of the swapped census perturbed by the cell key method "
       "(ONS record keys 0..255 hashed from the person id, p-table D/V/js; SPEC §8.11).")
def grid_cell_key(context: AssetExecutionContext, config: CellKeyConfig):
    perturbed, table = cell_key_region(pd.read_parquet(_swapped_file(context.partition_key), columns=CELL_KEY_COLUMNS),
                                       config)
    deviation = perturbed["total"] - perturbed["total_original"]
    yield Output(
        perturbed,
        metadata={
            "cells": len(perturbed),
            "share_of_totals_changed": float((deviation != 0).mean()) if len(perturbed) else 0.0,
            "mean_absolute_deviation_total": float(deviation.abs().mean()) if len(perturbed) else 0.0,
            "cell_key": MetadataValue.json(config.model_dump()),
            "ptable_rows": _markdown(table.to_frame().round(4)),
        },
    )
    yield cell_key_bounded(perturbed, max_deviation=config.max_deviation, threshold=config.threshold)


def _original_and_perturbed(grid_cell_key: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    names = [c for c in GRID_COUNT_COLUMNS if c in grid_cell_key.columns]
    original = grid_cell_key[[f"{c}_original" for c in names]].set_axis(names, axis=1)
    return original, grid_cell_key[names]


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description="Loss of the cell key route per variable: deviations, share changed, SPEC §9.1 distances.")
def grid_cell_key_loss(context: AssetExecutionContext, grid_cell_key: pd.DataFrame) -> pd.DataFrame:
    loss = perturbation_loss(*_original_and_perturbed(grid_cell_key))
    context.add_output_metadata(
        {
            **{f"{v}_mean_absolute_deviation": float(loss.loc[v, "mean_absolute_deviation"]) for v in loss.index},
            **{f"{v}_share_changed": float(loss.loc[v, "share_changed"]) for v in loss.index},
            "loss": _markdown(loss.round(4)),
        }
    )
    return loss


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=SUPPRESSION_CODE_VERSION,
       description="Loss of the suppressed grid (SPEC §11.3-11.4, §9.10), difference table and map.")
def grid_loss(
    context: AssetExecutionContext,
    grid_counts: pd.DataFrame,
    grid_suppressed: pd.DataFrame,
    grid_counts_national: pd.DataFrame,
    grid_suppressed_national: pd.DataFrame,
) -> dict[str, pd.DataFrame]:
    loss = grid_information_loss(grid_counts, grid_suppressed)
    sizes = resident_size_distribution(grid_counts)
    costs = pd.DataFrame(
        {
            cost: secondary_suppression_cost(grid_counts, grid_suppressed, cost=cost)
            for cost in ("equal", "persons")
        }
    )
    differences = difference_table(grid_counts, grid_counts_national)
    flat_differences = differences.copy()
    flat_differences.columns = [f"{d:+d}_{measure}" for d, measure in differences.columns]
    disclosing = differencing_disclosure(grid_counts, grid_counts_national)["discloses"]
    differencing = differencing_exposure(grid_counts, grid_counts_national, grid_suppressed, grid_suppressed_national)
    homogeneous = homogeneous_cells(grid_counts)["any"]
    png = suppression_map_png(grid_suppressed, title=f"Hidden categories, region {context.partition_key}")
    context.add_output_metadata(
        {
            **{f"{v}_absolute_loss": int(loss.loc[v, "absolute_loss"]) for v in loss.index},
            **{f"{v}_relative_loss_pct": float(loss.loc[v, "relative_loss_pct"]) for v in loss.index},
            "secondary_suppressions": int(costs["equal"].sum()),
            "homogeneous_cells_open_item_4": int(homogeneous.sum()),
            "cells_disclosed_by_differencing": int(disclosing.sum()),
            "cells_differencing_blocked": differencing["blocked"],
            "cells_differencing_blocked_beyond_primary": differencing["blocked_beyond_primary"],
            "cells_still_disclosed_by_differencing": differencing["still_disclosed"],
            "loss": _markdown(loss),
            "difference_table": _markdown(flat_differences.round(2)),
            "map": _image(png, "Cells with hidden categories"),
        }
    )
    return {
        "loss": loss,
        "size_distribution": sizes,
        "secondary_costs": costs,
        "differences": flat_differences,
    }


@asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    deps=[census_microdata],
    description="Targeted record swapping of household geography (region > cell) across every region "
    "(SPEC §8.10); the swapped persons are written back per region under $SDC_HOME/census_swapped/, "
    "the output is the per-region summary and the swapped households (cell before and after).",
)
def census_swapped(context: AssetExecutionContext, config: SwapConfig) -> dict[str, pd.DataFrame]:
    regions = sorted(context.instance.get_dynamic_partitions(grid_regions.name))
    files = [census_dir() / f"{r}.parquet" for r in regions]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"census_swapped: region files missing: {', '.join(missing)}")
    persons = read_census_files(files)
    result = swap_census(persons, config)
    summary = write_swapped_regions(swapped_dir(), persons, result.data, result.swapped_with, regions)
    context.add_output_metadata(
        {
            "regions": len(regions),
            "persons": len(persons),
            "households": int(result.swapped_with.size),
            "swapped_households": result.n_swapped_households,
            "swap_rate_realised": result.n_swapped_households / max(1, int(result.swapped_with.size)),
            "risky_households": result.n_risky_households,
            "unmatched_households": result.n_unmatched_households,
            "swap": MetadataValue.json(config.model_dump()),
        }
    )
    return {"summary": summary, "households": swapped_households(result.data, persons, result.swapped_with)}


def read_census_files(files: Sequence[Path]) -> pd.DataFrame:
    """Persons of several region files in one frame; cell and region stay categorical (one dictionary)."""
    table = arrow.concat_tables([pq.read_table(f) for f in files]).unify_dictionaries()
    # Arrow buffers are released column by column as pandas takes them over (peak: one copy, not two).
    return table.to_pandas(self_destruct=True, split_blocks=True)


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
    """
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
        pq.write_table(part.cast(census_arrow_schema()), folder / f"{region}.parquet", **PARQUET_OPTIONS)
    return summary


def differencing_exposure(
    resident: pd.DataFrame,
    national: pd.DataFrame,
    resident_protected: pd.DataFrame,
    national_protected: pd.DataFrame,
    *,
    k: int = 3,
) -> dict[str, int]:
    """Cells whose resident/national difference discloses persons (SPEC §11.4), by outcome.

    A category difference in 1..k-1 (``disclosing_differences``) is readable when the category is
    known in both tables: published, or 0 because the cell is absent (uninhabited) there.

    * ``blocked``: disclosing cells where no disclosing category is readable any more;
    * ``blocked_beyond_primary``: of those, cells in both tables with a disclosing category whose
      two counts are both outside 1..k-1 (the primary rule alone would have published it);
    * ``still_disclosed``: disclosing cells with a readable disclosing category (0 when protected
      consistently).
    """
    cols = _category_columns(resident)
    cells = pd.Index(resident["cell_id"]).union(pd.Index(national["cell_id"]))

    def aligned(frame: pd.DataFrame, fill):
        return frame.set_index("cell_id")[cols].reindex(cells, fill_value=fill)

    res, nat = aligned(resident, 0).to_numpy(np.int64), aligned(national, 0).to_numpy(np.int64)
    in_res = cells.isin(resident["cell_id"])[:, None]
    in_nat = cells.isin(national["cell_id"])[:, None]
    known_res = aligned(resident_protected.assign(**{c: resident_protected[c].notna() for c in cols}), True)
    known_nat = aligned(national_protected.assign(**{c: national_protected[c].notna() for c in cols}), True)
    disclosing = disclosing_differences(res, nat, k=k)
    readable = disclosing & known_res.to_numpy(bool) & known_nat.to_numpy(bool)
    flagged = disclosing.any(axis=1)
    still = readable.any(axis=1)
    safe_counts = ~((res > 0) & (res < k)) & ~((nat > 0) & (nat < k))
    beyond = (disclosing & safe_counts & in_res & in_nat).any(axis=1)
    return {
        "blocked": int((flagged & ~still).sum()),
        "blocked_beyond_primary": int((beyond & ~still).sum()),
        "still_disclosed": int(still.sum()),
    }


def consistent_with_resident_table(
    resident_protected: pd.DataFrame, national_protected: pd.DataFrame, differencing: dict[str, int]
) -> AssetCheckResult:
    """Same hidden pattern on the cells of both tables, and no disclosing difference published."""
    cols = _category_columns(resident_protected)
    res = resident_protected.set_index("cell_id")[cols].isna()
    nat = national_protected.set_index("cell_id")[cols].isna()
    common = res.index.intersection(nat.index)
    differing = int((res.loc[common].to_numpy() != nat.loc[common].to_numpy()).any(axis=1).sum())
    return AssetCheckResult(
        asset_key="grid_suppressed_national",
        check_name=CONSISTENT_WITH_RESIDENT.name,
        passed=differing == 0 and differencing["still_disclosed"] == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "common_cells": len(common),
            "cells_with_different_patterns": differing,
            "cells_still_disclosed_by_differencing": differencing["still_disclosed"],
            "cells_differencing_blocked": differencing["blocked"],
        },
    )


def no_small_published_counts(
    grid_suppressed: pd.DataFrame, *, k: int = 3, asset_key: str = "grid_suppressed"
) -> AssetCheckResult:
    """No published count in 1..k-1 in any grid variable and no complete margin with exactly one hidden count."""
    small = 0
    single_hidden = 0
    for variable in grid_variables_of(grid_suppressed.columns, published=True):
        values = grid_suppressed[list(variable.columns)]
        numeric = values.to_numpy(dtype="float64", na_value=np.nan)
        small += int(((numeric > 0) & (numeric < k)).sum())
        if variable.complete_margin:
            single_hidden += int((values.isna().sum(axis=1) == 1).sum())
    return AssetCheckResult(
        asset_key=asset_key,
        check_name=NO_SMALL_COUNTS.name,
        passed=small == 0 and single_hidden == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={"published_counts_below_k": small, "margins_with_one_hidden_count": single_hidden},
    )


def cell_key_bounded(grid_cell_key: pd.DataFrame, *, max_deviation: int, threshold: int = 0) -> AssetCheckResult:
    """In every figure: perturbed counts non-negative, within D of the original, zeros stay zero, none in 1..js."""
    bad = 0
    small = 0
    original, perturbed = _original_and_perturbed(grid_cell_key)
    for col in original.columns:
        before, after = original[col], perturbed[col]
        off = (after < 0) | ((after - before).abs() > max_deviation) | ((before == 0) & (after != 0))
        bad += int(off.sum())
        small += int(((after >= 1) & (after <= threshold)).sum())
    return AssetCheckResult(
        check_name=CELL_KEY_BOUNDED.name,
        passed=bad == 0 and small == 0,
        metadata={"violations": bad, "published_counts_in_1_to_js": small, "max_deviation": max_deviation,
                  "figures": len(original.columns)},
    )


#: Per-region assets of each route (grid_counts and grid_counts_national are shared).
ROUTE_ASSETS = {
    "cell_key": ["grid_cell_key", "grid_cell_key_loss"],
    "suppression": ["grid_suppressed", "grid_suppressed_national", "grid_loss"],
}

census_region_job = define_asset_job(
    "census_region_job",
    selection=AssetSelection.assets(census_microdata),
    partitions_def=grid_regions,
    description="Validate one region's census file (before the national swap).",
)

census_swap_job = define_asset_job(
    "census_swap_job",
    selection=AssetSelection.assets(census_swapped, grid_national_totals),
    description="Targeted record swapping across every region, then the national totals.",
)


def _region_job(name: str, routes: Sequence[str]):
    keys = ["grid_counts", "grid_counts_national", *(k for r in routes for k in ROUTE_ASSETS[r])]
    return define_asset_job(
        name,
        selection=AssetSelection.assets(*keys),
        partitions_def=grid_regions,
        description=f"Tabulate one region of the swapped census and protect it by: {', '.join(routes)}.",
    )


#: One per-region job per choice of routes (the grid spec's ``routes``).
ROUTE_JOBS = {
    ("cell_key", "suppression"): _region_job("grid_region_job", ROUTES),
    ("cell_key",): _region_job("grid_cell_key_job", ["cell_key"]),
    ("suppression",): _region_job("grid_suppression_job", ["suppression"]),
}
grid_region_job = ROUTE_JOBS[ROUTES]


@sensor(job=census_region_job, minimum_interval_seconds=60,
        description="Adds a grid_regions partition for every new $SDC_HOME/census/<region>.parquet and validates it.")
def grid_region_sensor(context: SensorEvaluationContext) -> SensorResult:
    known = set(context.instance.get_dynamic_partitions(grid_regions.name))
    found = sorted(p.stem for p in census_dir().glob("*.parquet")) if census_dir().is_dir() else []
    new = [r for r in found if r not in known]
    return SensorResult(
        run_requests=[RunRequest(partition_key=r, run_key=f"grid-{r}") for r in new],
        dynamic_partitions_requests=[grid_regions.build_add_request(new)] if new else [],
    )


def load_grid_spec(path: str | Path) -> tuple[tuple[str, ...], dict]:
    """The routes and the Dagster run config of a grid spec (YAML; ``examples/grid/census_grid.yaml``).

    Keys: ``routes`` (a list of ``cell_key`` / ``suppression``), ``swap`` (:class:`SwapConfig`
    fields), ``cell_key`` (:class:`CellKeyConfig`), ``suppression`` (:class:`SuppressionConfig`).
    Returns the routes in canonical order and the run config of every step (one config for all
    jobs of the chain; each job reads its own steps).
    """
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise SDCInputError(f"grid spec {path}: expected a mapping")
    unknown = set(raw) - {"routes", "swap", "cell_key", "suppression"}
    if unknown:
        raise SDCInputError(f"grid spec {path}: unknown key {sorted(unknown)[0]!r}")
    routes = raw.get("routes", list(ROUTES))
    if not isinstance(routes, list) or not routes or any(r not in ROUTES for r in routes):
        raise SDCInputError(f"grid spec {path}, key 'routes': a non-empty list of {list(ROUTES)}, got {routes!r}")
    sections = {"swap": (SwapConfig, "census_swapped"), "cell_key": (CellKeyConfig, "grid_cell_key"),
                "suppression": (SuppressionConfig, "grid_consistent_suppression")}
    ops = {}
    for key, (config_class, op) in sections.items():
        values = raw.get(key) or {}
        fields = set(config_class.model_fields)
        bad = set(values) - fields
        if bad:
            raise SDCInputError(f"grid spec {path}, section {key!r}: unknown parameter {sorted(bad)[0]!r}")
        ops[op] = {"config": config_class(**values).model_dump()}
    return tuple(r for r in ROUTES if r in routes), {"ops": ops}


def run_grid_chain(instance, regions: Sequence[str], *, routes: Sequence[str] = ROUTES, run_config: dict | None = None,
                   resources: dict | None = None) -> dict[str, bool]:
    """Run the composed chain in process: validate every region, swap nationally, then each region's routes.

    Returns the success of every run, keyed ``census:<region>``, ``swap``, ``grid:<region>`` and
    ``release`` (the manifest and report, when everything before succeeded).
    """
    from dagster import Definitions

    routes = tuple(r for r in ROUTES if r in routes)
    jobs = [census_region_job, census_swap_job, ROUTE_JOBS[routes], grid_release_job]
    defs = Definitions(assets=GRID_ASSETS, jobs=jobs, resources=resources or {})
    config = run_config or {}
    outcome = {}

    def config_for(job_name: str, **ops_config) -> dict:
        """The run config for one job: the ops it has, and the rest (e.g. loggers) as given."""
        ops = set(defs.resolve_job_def(job_name).graph.node_dict)
        own = {k: v for k, v in config.get("ops", {}).items() if k in ops}
        return {**{k: v for k, v in config.items() if k != "ops"}, "ops": {**own, **ops_config}}

    for region in regions:
        result = defs.resolve_job_def(census_region_job.name).execute_in_process(
            partition_key=region, instance=instance, raise_on_error=False,
            run_config=config_for(census_region_job.name))
        outcome[f"census:{region}"] = result.success
    swap = defs.resolve_job_def(census_swap_job.name).execute_in_process(
        instance=instance, raise_on_error=False, run_config=config_for(census_swap_job.name))
    outcome["swap"] = swap.success
    if not swap.success:
        return outcome
    job = defs.resolve_job_def(ROUTE_JOBS[routes].name)
    for region in regions:
        result = job.execute_in_process(partition_key=region, instance=instance, raise_on_error=False,
                                        run_config=config_for(job.name))
        outcome[f"grid:{region}"] = result.success
    if all(outcome.values()):
        release = defs.resolve_job_def(grid_release_job.name).execute_in_process(
            instance=instance, raise_on_error=False,
            run_config=config_for(grid_release_job.name, grid_release={"config": {"routes": list(routes)}}))
        outcome["release"] = release.success
    return outcome


#: The protected tables of each route, as released and as the audit recomputes them.
ROUTE_TABLES = {"cell_key": ("grid_cell_key",), "suppression": ("grid_suppressed", "grid_suppressed_national")}


class GridReleaseConfig(Config):
    """Which routes the release holds (the grid spec's ``routes``)."""

    routes: list[str] = list(ROUTES)


def table_digest(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's canonical CSV text (the byte-for-byte identity the audit compares)."""
    import hashlib

    return hashlib.sha256(frame.to_csv(index=False, lineterminator="\n").encode()).hexdigest()


def file_digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _latest_json(instance, key: str, name: str) -> dict:
    event = instance.get_latest_materialization_event(AssetKey(key))
    if event is None or name not in event.asset_materialization.metadata:
        raise FileNotFoundError(f"grid_release: {key} has no recorded {name!r}; run the chain first")
    return dict(event.asset_materialization.metadata[name].value)


@asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    deps=["census_swapped", "grid_national_totals", "grid_counts", "grid_counts_national", "grid_cell_key",
          "grid_suppressed", "grid_suppressed_national"],
    description="The grid release: manifest (swap rate, p-table, seeds, digests of every protected table; "
    "replayed by `sdc audit grid`) and the HTML grid report (map with layers, loss per route, differencing).",
)
def grid_release(context: AssetExecutionContext, config: GridReleaseConfig) -> pd.DataFrame:
    from sdc_dagster.resources.storage import releases_dir, reports_dir, stored_output

    routes = [r for r in ROUTES if r in config.routes]
    regions = sorted(context.instance.get_dynamic_partitions(grid_regions.name))
    parameters = {"swap": _latest_json(context.instance, "census_swapped", "swap")}
    if "cell_key" in routes:
        parameters["cell_key"] = _latest_json(context.instance, "grid_cell_key", "cell_key")
    if "suppression" in routes:
        parameters["suppression"] = _latest_json(context.instance, "grid_suppressed", "suppression")
    rows, tables = [], {}
    for region in regions:
        for route in routes:
            for name in ROUTE_TABLES[route]:
                frame = stored_output([name], region)
                tables.setdefault(name, []).append(frame)
                rows.append({"region": region, "table": name, "sha256": table_digest(frame)})
    digests = pd.DataFrame(rows, columns=["region", "table", "sha256"])
    swapped = stored_output(["census_swapped"], "all")
    counts = pd.concat([stored_output(["grid_counts"], r) for r in regions], ignore_index=True)
    national = pd.concat([stored_output(["grid_counts_national"], r) for r in regions], ignore_index=True)
    manifest = {
        "kind": "census_grid",
        "run_id": context.run_id,
        "regions": regions,
        "routes": routes,
        "parameters": parameters,
        "seeds": {step: values["seed"] for step, values in parameters.items()},
        "swap_rate": parameters["swap"]["swaprate"],
        "swapped_households": int(len(swapped["households"])),
        "census_files": {r: file_digest(census_dir() / f"{r}.parquet") for r in regions},
        "tables": {r: {t: d for t, d in zip(g["table"], g["sha256"])} for r, g in digests.groupby("region")},
    }
    release = releases_dir() / "grid" / context.run_id
    release.mkdir(parents=True, exist_ok=True)
    write_atomic(release / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    from sdc_dagster.report.grid import render_grid_report

    received = swapped["households"].groupby("cell_after").size()
    page = render_grid_report(
        counts,
        title=f"Census grid release ({len(regions)} regions)",
        suppressed=pd.concat(tables["grid_suppressed"], ignore_index=True) if "grid_suppressed" in tables else None,
        perturbed=pd.concat(tables["grid_cell_key"], ignore_index=True) if "grid_cell_key" in tables else None,
        national=national,
        swapped_households=received,
        parameters={f"{step}.{k}": v for step, values in parameters.items() for k, v in values.items()},
    )
    report = reports_dir() / "grid" / f"{context.run_id}.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(report, page)
    context.add_output_metadata(
        {"manifest": str(release / "manifest.json"), "report": str(report), "routes": ", ".join(routes),
         "seeds": MetadataValue.json(manifest["seeds"])}
    )
    return digests


def replay_grid_release(manifest: dict, *, home: Path | None = None) -> dict[str, dict[str, bool]]:
    """Recompute every table of a grid release from the census files; per region and table, equal or not.

    The same step functions as the assets (swap_census, write_swapped_regions, national_totals,
    tabulate_grid, cell_key_region, suppress_region) with the manifest's parameters, in a scratch
    folder; equality is of :func:`table_digest`, i.e. byte for byte on the published table.
    """
    import tempfile

    regions = list(manifest["regions"])
    files = [census_dir(home) / f"{r}.parquet" for r in regions]
    for region, path in zip(regions, files):
        if not path.is_file() or file_digest(path) != manifest["census_files"][region]:
            raise SDCInputError(f"grid audit: census file of region {region!r} missing or changed since the release")
    parameters = manifest["parameters"]
    persons = read_census_files(files)
    result = swap_census(persons, SwapConfig(**parameters["swap"]))
    outcome: dict[str, dict[str, bool]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_swapped_regions(folder, persons, result.data, result.swapped_with, regions)
        totals = national_totals(sorted(folder.glob("*.parquet")))
        for region in regions:
            path = folder / f"{region}.parquet"
            tables = {}
            if "cell_key" in manifest["routes"]:
                tables["grid_cell_key"] = cell_key_region(pd.read_parquet(path, columns=CELL_KEY_COLUMNS),
                                                          CellKeyConfig(**parameters["cell_key"]))[0]
            if "suppression" in manifest["routes"]:
                counts = tabulate_grid(path, where="resident", with_coordinates=True)
                national = tabulate_grid(path, where="national", with_coordinates=True)
                tables["grid_suppressed"], tables["grid_suppressed_national"] = suppress_region(
                    counts, national, national_reference_counts(totals), SuppressionConfig(**parameters["suppression"]),
                    region)
            outcome[region] = {
                name: table_digest(frame) == manifest["tables"][region][name] for name, frame in tables.items()
            }
    return outcome


def run_grid_audit(*, run: str | None = None, out=None) -> int:
    """``sdc audit grid``: print the latest (or run ``run``'s) grid manifest and replay it; 0 if identical."""
    import sys

    from sdc_dagster.resources.storage import releases_dir

    out = out or sys.stdout
    root = releases_dir() / "grid"
    manifests = sorted(root.glob("*/manifest.json"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    if run is not None:
        manifests = [p for p in manifests if p.parent.name == run]
    if not manifests:
        print(f"no grid release under {root}" + (f" for run {run}" if run else ""), file=out)
        return 2
    manifest = json.loads(manifests[-1].read_text())
    print(json.dumps(manifest, indent=2, sort_keys=True), file=out)
    outcome = replay_grid_release(manifest)
    differing = [f"{r}/{t}" for r, tables in outcome.items() for t, same in tables.items() if not same]
    verdict = "PASSED" if not differing else "FAILED"
    detail = "every table byte-identical" if not differing else "differs: " + ", ".join(differing)
    print(f"audit {verdict}: grid release {manifest['run_id']}: {detail}", file=out, flush=True)
    return 0 if not differing else 1


class _SerializedRun:
    """A DagsterRun as serdes text: Dask's task parser walks tuples (a DagsterRun is one) and fails on
    the ``KeyRangesPartitionsSubset`` record of runs of dynamically partitioned jobs."""

    def __init__(self, text: str):
        self.text = text


def _run_step_on_dask(dependencies, recon_job, run: _SerializedRun, run_config, step_keys, instance_ref, known_state):
    """Worker side: the dagster-dask step function, with the run deserialised first."""
    from dagster._core.storage.dagster_run import DagsterRun
    from dagster._serdes import deserialize_value
    from dagster_dask.executor import query_on_dask_worker

    dagster_run = deserialize_value(run.text, DagsterRun)
    return query_on_dask_worker(dependencies, recon_job, dagster_run, run_config, step_keys, instance_ref, known_state)


def region_dask_executor():
    """dagster-dask's executor (same config: ``cluster: {existing: {address}}`` or ``{local: {...}}``) for
    the region jobs: steps are submitted exactly as dagster-dask does, with the run passed serialised
    (dagster-dask 0.29 cannot submit runs of dynamically partitioned jobs to Dask otherwise)."""
    import dask.distributed
    from dagster import executor, multiple_process_executor_requirements
    from dagster._serdes import serialize_value
    from dagster_dask.executor import DaskExecutor, dask_executor, get_dask_resource_requirements

    class RegionDaskExecutor(DaskExecutor):
        def execute(self, plan_context, execution_plan):
            if self.cluster_type not in ("existing", "local"):
                raise SDCInputError(f"region Dask executor: cluster must be 'existing' or 'local', got {self.cluster_type!r}")
            run = _SerializedRun(serialize_value(plan_context.dagster_run))
            with contextlib.ExitStack() as stack:
                if self.cluster_type == "existing":
                    cluster = self.cluster_configuration["address"]
                else:  # a local cluster lives for this run only
                    cluster = stack.enter_context(dask.distributed.LocalCluster(**self.build_dict(plan_context.job_name)))
                client = stack.enter_context(dask.distributed.Client(cluster))
                futures = {}
                for level in execution_plan.get_steps_to_execute_by_level():
                    for step in level:
                        needs = [futures[key] for inp in step.step_inputs for key in inp.dependency_keys]
                        futures[step.key] = client.submit(
                            _run_step_on_dask, needs, plan_context.reconstructable_job, run, plan_context.run_config,
                            [step.key], plan_context.instance.get_ref(), execution_plan.known_state,
                            key=f"{plan_context.job_name}.{step.key}", resources=get_dask_resource_requirements(step.tags),
                        )
                for _, events in dask.distributed.as_completed(list(futures.values()), with_results=True):
                    yield from events

    @executor(name="dask", config_schema=dask_executor.config_schema,
              requirements=multiple_process_executor_requirements())
    def region_dask(init_context):
        ((cluster_type, configuration),) = init_context.executor_config["cluster"].items()
        return RegionDaskExecutor(cluster_type, configuration)

    return region_dask


def grid_dask_definitions(routes: Sequence[str] = ROUTES):
    """Definitions whose per-region job (``grid_region_dask_job``) runs its steps on Dask (``dagster-dask``).

    Past one machine the regions run on an existing Dask cluster: launch the job per region with
    run config ``execution: {config: {cluster: {existing: {address: "<scheduler>:8786"}}}}`` (or
    ``cluster: {local: {n_workers: 2}}`` for a local cluster). Dask workers must share the
    ``$SDC_HOME`` file system (census files, swapped regions, Parquet IO manager) and import this
    checkout.
    """
    from dagster import Definitions

    from sdc_dagster.resources.storage import ParquetIOManager

    routes = tuple(r for r in ROUTES if r in routes)
    keys = ["grid_counts", "grid_counts_national", *(k for r in routes for k in ROUTE_ASSETS[r])]
    job = define_asset_job("grid_region_dask_job", selection=AssetSelection.assets(*keys),
                           partitions_def=grid_regions, executor_def=region_dask_executor())
    return Definitions(assets=GRID_ASSETS, jobs=[job], resources={"io_manager": ParquetIOManager()})


def grid_region_dask_job():
    """The Dask per-region job, importable by path (``reconstructable``) for Dask worker processes."""
    return grid_dask_definitions().resolve_job_def("grid_region_dask_job")


#: grid_consistent_suppression is one definition producing grid_suppressed and grid_suppressed_national.
GRID_ASSETS = [
    census_microdata,
    census_swapped,
    grid_national_totals,
    grid_counts,
    grid_counts_national,
    grid_consistent_suppression,
    grid_cell_key,
    grid_cell_key_loss,
    grid_loss,
    grid_release,
]
#: The grid checks are declared on their assets (check_specs).
grid_release_job = define_asset_job(
    "grid_release_job",
    selection=AssetSelection.assets(grid_release),
    description="After every region's routes: the release manifest and the grid report.",
)
GRID_JOBS = [census_region_job, census_swap_job, *ROUTE_JOBS.values(), grid_release_job]
GRID_SENSORS = [grid_region_sensor]
