"""The census grid asset chain (SPEC §8.10, §8.11, §11), partitioned by region.

census_microdata (one Parquet file per region under ``$SDC_HOME/census/``, validated) ->
grid_counts, grid_counts_national -> grid_suppressed and grid_suppressed_national (the two
populations suppressed consistently by one engine call, SPEC §11.2, §11.4) and grid_cell_key
(cell key method) -> grid_loss (loss, size distribution, difference table, map).
census_swapped reads every region at once (targeted record swapping across regions) and is not
partitioned.

Assets are thin: read, call one engine function, attach headline metadata.
"""


import base64
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa
from dagster import (
    AssetCheckResult,
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

from resources.storage import sdc_home
from sdc_dagster.census import write_census_by_region
from sdc_dagster.grid_counts import tabulate_grid
from sdc_dagster.loss.tables import (
    difference_table,
    differencing_disclosure,
    disclosing_differences,
    grid_information_loss,
    homogeneous_cells,
    resident_size_distribution,
    secondary_suppression_cost,
    suppression_map_png,
)
from sdc_dagster.protect.cellkey import assign_record_keys, grid_cell_key as cell_key_table, perturbation_table
from sdc_dagster.protect.grid import AGE_COLUMNS, SEX_COLUMNS, consistent_grid_suppression
from sdc_dagster.protect.record_swapping import targeted_record_swap
from sdc_dagster.schemas import validate

GROUP = "grid"
CODE_VERSION = "1"
#: Consistent suppression of both populations (and grid_loss reading both) replaced the single table.
SUPPRESSION_CODE_VERSION = "2"
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
    },
    name="census_microdata",
    strict=False,
)


def census_dir(home: Path | None = None) -> Path:
    """Where region files live: ``<home>/census/<region>.parquet``."""
    return (home or sdc_home()) / "census"


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
    """SPEC §11.2 parameters; reference age counts default to the region's column sums."""

    k: int = 3
    strategy: str = "distribution"
    tie_only: bool = True
    reference_age_1: int = 0
    reference_age_2: int = 0
    reference_age_3: int = 0
    seed: int = 2021


class CellKeyConfig(Config):
    """SPEC §8.11 parameters: maximum deviation D, variance V, seed of the record keys."""

    max_deviation: int = 2
    variance: float = 1.05
    seed: int = 2021


class SwapConfig(Config):
    """SPEC §8.10 parameters (sdcMicro recordSwap)."""

    swaprate: float = 0.05
    k_anonymity: int = 3
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


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description="Resident population per 1-km cell: total, sex_1, sex_2, age_1..age_3 (DuckDB).")
def grid_counts(context: AssetExecutionContext, census_microdata: pd.DataFrame) -> pd.DataFrame:
    counts = tabulate_grid(census_microdata, where="resident", with_coordinates=True)
    context.add_output_metadata(_counts_metadata(counts))
    return counts


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description="Population per 1-km cell under the national definition (for the differencing table).")
def grid_counts_national(context: AssetExecutionContext, census_microdata: pd.DataFrame) -> pd.DataFrame:
    counts = tabulate_grid(census_microdata, where="national", with_coordinates=True)
    context.add_output_metadata(_counts_metadata(counts))
    return counts


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
    description="Perturbed counts are non-negative, within D of the original, and zeros stay zero.",
)


def _hidden_metadata(protected: pd.DataFrame) -> dict:
    hidden = protected[[*SEX_COLUMNS, *AGE_COLUMNS]].isna()
    return {
        "hidden_counts": int(hidden.to_numpy().sum()),
        "cells_with_hidden_sex": int(hidden[list(SEX_COLUMNS)].any(axis=1).sum()),
        "cells_with_hidden_age": int(hidden[list(AGE_COLUMNS)].any(axis=1).sum()),
    }


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
):
    reference = [config.reference_age_1, config.reference_age_2, config.reference_age_3]
    resident, national = consistent_grid_suppression(
        grid_counts,
        grid_counts_national,
        k=config.k,
        strategy=config.strategy,
        reference_counts=reference if sum(reference) > 0 else None,
        tie_only=config.tie_only,
        random_state=_region_seed(config.seed, context.partition_key),
    )
    differencing = differencing_exposure(grid_counts, grid_counts_national, resident, national, k=config.k)
    yield Output(resident, output_name="grid_suppressed", metadata=_hidden_metadata(resident))
    yield Output(
        national,
        output_name="grid_suppressed_national",
        metadata={**_hidden_metadata(national), "cells_differencing_blocked": differencing["blocked"]},
    )
    yield no_small_published_counts(resident, k=config.k)
    yield no_small_published_counts(national, k=config.k, asset_key="grid_suppressed_national")
    yield consistent_with_resident_table(resident, national, differencing)


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION, check_specs=[CELL_KEY_BOUNDED],
       description="Grid table perturbed by the cell key method (SPEC §8.11).")
def grid_cell_key(context: AssetExecutionContext, config: CellKeyConfig, census_microdata: pd.DataFrame):
    residents = census_microdata[census_microdata["resident"]] if "resident" in census_microdata else census_microdata
    residents = residents.assign(
        record_key=assign_record_keys(residents, random_state=_region_seed(config.seed, context.partition_key))
    )
    table = perturbation_table(config.max_deviation, config.variance)
    perturbed = cell_key_table(residents, record_key_col="record_key", ptable=table)
    deviation = perturbed["total"] - perturbed["total_original"]
    yield Output(
        perturbed,
        metadata={
            "cells": len(perturbed),
            "share_of_totals_changed": float((deviation != 0).mean()) if len(perturbed) else 0.0,
            "mean_absolute_deviation_total": float(deviation.abs().mean()) if len(perturbed) else 0.0,
            "ptable": _markdown(table.to_frame().round(4)),
        },
    )
    yield cell_key_bounded(perturbed, max_deviation=config.max_deviation)


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
            "sex_absolute_loss": int(loss.loc["sex", "absolute_loss"]),
            "sex_relative_loss_pct": float(loss.loc["sex", "relative_loss_pct"]),
            "age_absolute_loss": int(loss.loc["age", "absolute_loss"]),
            "age_relative_loss_pct": float(loss.loc["age", "relative_loss_pct"]),
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
    description="Resident persons of every region after targeted record swapping of household "
    "geography (region > cell; SPEC §8.10). Reads all region files at once.",
)
def census_swapped(context: AssetExecutionContext, config: SwapConfig) -> pd.DataFrame:
    regions = sorted(context.instance.get_dynamic_partitions(grid_regions.name))
    files = [census_dir() / f"{r}.parquet" for r in regions]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"census_swapped: region files missing: {', '.join(missing)}")
    persons = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    persons = persons[persons["resident"]].reset_index(drop=True)
    for col in ("cell_id", "region"):
        persons[col] = persons[col].astype(str)
    result = targeted_record_swap(
        persons,
        hid="household_id",
        hierarchy=["region", "cell_id"],
        similar=[["household_size"]],
        risk_variables=["sex", "age_group"],
        swaprate=config.swaprate,
        k_anonymity=config.k_anonymity,
        random_state=config.seed,
    )
    context.add_output_metadata(
        {
            "regions": len(regions),
            "persons": len(persons),
            "households": int(result.swapped_with.size),
            "swapped_households": result.n_swapped_households,
            "risky_households": result.n_risky_households,
            "unmatched_households": result.n_unmatched_households,
        }
    )
    return result.data


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
    cols = [*SEX_COLUMNS, *AGE_COLUMNS]
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
    cols = [*SEX_COLUMNS, *AGE_COLUMNS]
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
    """No published category count in 1..k-1 and no margin with exactly one hidden count."""
    small = 0
    single_hidden = 0
    for cols in (SEX_COLUMNS, AGE_COLUMNS):
        values = grid_suppressed[list(cols)]
        numeric = values.to_numpy(dtype="float64", na_value=np.nan)
        small += int(((numeric > 0) & (numeric < k)).sum())
        single_hidden += int((values.isna().sum(axis=1) == 1).sum())
    return AssetCheckResult(
        asset_key=asset_key,
        check_name=NO_SMALL_COUNTS.name,
        passed=small == 0 and single_hidden == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={"published_counts_below_k": small, "margins_with_one_hidden_count": single_hidden},
    )


def cell_key_bounded(grid_cell_key: pd.DataFrame, *, max_deviation: int) -> AssetCheckResult:
    """Perturbed counts are non-negative, within D of the original, and zeros stay zero."""
    bad = 0
    for col in ("total", *SEX_COLUMNS, *AGE_COLUMNS):
        original = grid_cell_key[f"{col}_original"]
        perturbed = grid_cell_key[col]
        off = (perturbed < 0) | ((perturbed - original).abs() > max_deviation) | ((original == 0) & (perturbed != 0))
        bad += int(off.sum())
    return AssetCheckResult(
        check_name=CELL_KEY_BOUNDED.name,
        passed=bad == 0,
        metadata={"violations": bad, "max_deviation": max_deviation},
    )


grid_region_job = define_asset_job(
    "grid_region_job",
    selection=AssetSelection.assets(
        census_microdata, grid_counts, grid_counts_national, grid_consistent_suppression, grid_cell_key, grid_loss
    ),
    partitions_def=grid_regions,
)


@sensor(job=grid_region_job, minimum_interval_seconds=60,
        description="Adds a grid_regions partition for every new $SDC_HOME/census/<region>.parquet and runs it.")
def grid_region_sensor(context: SensorEvaluationContext) -> SensorResult:
    known = set(context.instance.get_dynamic_partitions(grid_regions.name))
    found = sorted(p.stem for p in census_dir().glob("*.parquet")) if census_dir().is_dir() else []
    new = [r for r in found if r not in known]
    return SensorResult(
        run_requests=[RunRequest(partition_key=r, run_key=f"grid-{r}") for r in new],
        dynamic_partitions_requests=[grid_regions.build_add_request(new)] if new else [],
    )


census_swap_job = define_asset_job(
    "census_swap_job",
    selection=AssetSelection.assets(census_swapped),
    description="Targeted record swapping across every region (after the regions' runs).",
)

#: grid_consistent_suppression is one definition producing grid_suppressed and grid_suppressed_national.
GRID_ASSETS = [
    census_microdata,
    grid_counts,
    grid_counts_national,
    grid_consistent_suppression,
    grid_cell_key,
    grid_loss,
    census_swapped,
]
#: The grid checks are declared on their assets (check_specs).
GRID_JOBS = [grid_region_job, census_swap_job]
GRID_SENSORS = [grid_region_sensor]
