"""Grid assets, census stage: the region files (partitions) and the national swap (SPEC §8.10).

census_microdata (one region's persons, validated; partitioned by region) -> census_swapped
(targeted record swapping across every region, :func:`sdc_dagster.pipeline.grid_swap.swap_regions`).
"""

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetSelection,
    DynamicPartitionsDefinition,
    MetadataValue,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    asset,
    define_asset_job,
    sensor,
)
from dagster_pandera import pandera_schema_to_dagster_type

from sdc_dagster.pipeline.grid import census_dir, census_files, census_schema, read_region_census, swapped_dir
from sdc_dagster.pipeline.grid_swap import swap_regions
from sdc_dagster.resources.grid import GridSpecResource
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.grid import spec_parameters

GROUP = "grid"
#: 2: tables from the swapped census, all 13 figures of the 2021 grid.
CODE_VERSION = "2"
grid_regions = DynamicPartitionsDefinition(name="grid_regions")


@asset(
    group_name=GROUP,
    partitions_def=grid_regions,
    code_version=CODE_VERSION,
    dagster_type=pandera_schema_to_dagster_type(census_schema),
    description="Census persons of one region (cell id, sex 1/2, age group 1-3, household), validated.",
)
def census_microdata(context: AssetExecutionContext, home: SdcHome) -> pd.DataFrame:
    persons = read_region_census(home.root, context.partition_key)
    context.add_output_metadata(
        {
            "persons": int(persons["resident"].sum()) if "resident" in persons else len(persons),
            "households": int(persons["household_id"].nunique()),
            "cells": int(persons["cell_id"].nunique()),
        }
    )
    return persons


# census_microdata is a dependency, not an input: the swap reads every region's file at once with
# Arrow (cell and region categorical with one dictionary, one copy at the peak), where the IO manager
# would hand over one pandas frame per region (every region in memory twice while they are joined).
@asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    deps=[census_microdata],
    description="Targeted record swapping of household geography (region > cell) across every region: "
    "the per-region summary (with the file of the region's swapped persons, under "
    "<data home>/census_swapped/) and the swapped households (cell before and after).",
)
def census_swapped(context: AssetExecutionContext, home: SdcHome,
                   grid_spec: GridSpecResource) -> dict[str, pd.DataFrame]:
    spec = grid_spec.spec().swap
    regions = sorted(context.instance.get_dynamic_partitions(grid_regions.name))
    swapped = swap_regions(census_files(home.root, regions), regions, swapped_dir(home.root), spec)
    context.add_output_metadata(
        {
            "regions": len(regions),
            "persons": swapped.persons,
            "households": swapped.household_count,
            "swapped_households": swapped.swapped_household_count,
            "swap_rate_realised": swapped.swapped_household_count / max(1, swapped.household_count),
            "risky_households": swapped.risky_household_count,
            "unmatched_households": swapped.unmatched_household_count,
            "swap": MetadataValue.json(spec_parameters(spec)),
        }
    )
    return {"summary": swapped.summary, "households": swapped.households}


census_region_job = define_asset_job(
    "census_region_job",
    selection=AssetSelection.assets(census_microdata),
    partitions_def=grid_regions,
    description="Validate one region's census file (before the national swap).",
)

census_swap_job = define_asset_job(
    "census_swap_job",
    selection=AssetSelection.assets(census_swapped, "grid_national_totals"),
    description="Targeted record swapping across every region, then the national totals.",
)


@sensor(job=census_region_job, minimum_interval_seconds=60,
        description="Adds a grid_regions partition for every new <data home>/census/<region>.parquet and validates it.")
def grid_region_sensor(context: SensorEvaluationContext, home: SdcHome) -> SensorResult:
    known = set(context.instance.get_dynamic_partitions(grid_regions.name))
    folder = census_dir(home.root)
    found = sorted(p.stem for p in folder.glob("*.parquet")) if folder.is_dir() else []
    new = [r for r in found if r not in known]
    return SensorResult(
        run_requests=[RunRequest(partition_key=r, run_key=f"grid-{r}") for r in new],
        dynamic_partitions_requests=[grid_regions.build_add_request(new)] if new else [],
    )
