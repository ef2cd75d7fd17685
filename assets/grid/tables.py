"""Grid assets, tables stage: tabulation of the swapped census and the two routes of protection.

census_swapped -> grid_national_totals and, per region, grid_counts / grid_counts_national (the 13
figures of the EU 2021 grid) -> ``cell_key``: grid_cell_key -> grid_cell_key_loss;
``suppression``: grid_suppressed and grid_suppressed_national -> grid_loss. Each asset calls one
function of :mod:`sdc_dagster.pipeline.grid` / :mod:`sdc_dagster.pipeline.grid_checks`.
"""

import base64

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetOut,
    AssetSelection,
    MetadataValue,
    Output,
    asset,
    define_asset_job,
    multi_asset,
)

from sdc_dagster.report.maps import suppression_map_png
from sdc_dagster.risk.tables import resident_size_distribution
from sdc_dagster.pipeline.grid import (
    cell_key_persons,
    cell_key_region,
    national_reference_counts,
    national_totals,
    suppress_region,
    tabulate_region,
)
from sdc_dagster.pipeline.grid_checks import (
    cell_key_bounded,
    cell_key_loss,
    consistent_with_resident_table,
    differencing_exposure,
    hidden_counts,
    no_small_published_counts,
    suppression_loss,
)
from sdc_dagster.pipeline.grid_swap import swapped_region_file
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.assets.grid.census import CODE_VERSION, GROUP, grid_regions
from sdc_dagster.report.references import citation_text
from sdc_dagster.resources.grid import GridSpecResource
from sdc_dagster.spec.grid import ROUTES, spec_parameters

#: 3: every variable group suppressed, "distribution" reads the national totals.
SUPPRESSION_CODE_VERSION = "3"


def _markdown(frame: pd.DataFrame) -> MetadataValue:
    return MetadataValue.md(frame.to_markdown() if len(frame) else "(empty)")


def _image(png: bytes, title: str) -> MetadataValue:
    return MetadataValue.md(f"**{title}**\n\n![{title}](data:image/png;base64,{base64.b64encode(png).decode()})")


def _check_result(name: str, outcome: CheckOutcome, asset_key: str) -> AssetCheckResult:
    """The asset check ``name`` of a grid rule's outcome: its value, rule and figures as metadata."""
    return AssetCheckResult(
        asset_key=asset_key, check_name=name, passed=bool(outcome.passed),
        severity=AssetCheckSeverity.ERROR if outcome.blocking else AssetCheckSeverity.WARN,
        metadata={"value": outcome.value, "rule": outcome.rule, **(outcome.figures or {})},
    )


def _counts(context: AssetExecutionContext, census_swapped: dict[str, pd.DataFrame], population: str) -> pd.DataFrame:
    counts = tabulate_region(swapped_region_file(census_swapped["summary"], context.partition_key), population)
    sizes = resident_size_distribution(counts)
    context.add_output_metadata({
        "cells": len(counts),
        "residents": int(counts["total"].sum()),
        "potentially_unsafe_cells": int(sizes.loc["potentially unsafe", "cells"]),
        "size_distribution": _markdown(sizes.round(2)),
    })
    return counts


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description="Resident population per 1-km cell after record swapping: the 13 figures of the 2021 grid (DuckDB).")
def grid_counts(context: AssetExecutionContext, census_swapped: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return _counts(context, census_swapped, "resident")


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description="Population per 1-km cell under the national definition, after record swapping.")
def grid_counts_national(context: AssetExecutionContext, census_swapped: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return _counts(context, census_swapped, "national")


@asset(group_name=GROUP, code_version=CODE_VERSION,
       description="National count of every grid figure, per population, read from every swapped region: "
       "the reference counts of the \"distribution\" suppression strategy.")
def grid_national_totals(context: AssetExecutionContext, census_swapped: dict[str, pd.DataFrame]) -> pd.DataFrame:
    summary = census_swapped["summary"]
    totals = national_totals(sorted(swapped_region_file(summary, r) for r in summary.index))
    context.add_output_metadata({"regions": len(summary), "totals": _markdown(totals.T)})
    return totals


# Checks run inside their (partitioned) assets, in the step that made the region's tables, so that a
# check of one region reads that region's tables only and loads nothing again.
NO_SMALL_COUNTS_DESCRIPTION = "No published category count in 1..k-1 and no margin with a single hidden count."


@multi_asset(
    name="grid_consistent_suppression",
    outs={
        "grid_suppressed": AssetOut(
            code_version=SUPPRESSION_CODE_VERSION,
            description="Resident grid table after primary (0 < c < k) and secondary suppression, "
            "consistent with the national-definition table; hidden = NA.",
        ),
        "grid_suppressed_national": AssetOut(
            code_version=SUPPRESSION_CODE_VERSION,
            description="National-definition grid table, suppressed consistently with grid_suppressed: "
            "same hidden pattern per cell, no disclosing difference published.",
        ),
    },
    group_name=GROUP,
    partitions_def=grid_regions,
    check_specs=[
        AssetCheckSpec("no_small_published_counts", asset="grid_suppressed", description=NO_SMALL_COUNTS_DESCRIPTION),
        AssetCheckSpec("no_small_published_counts", asset="grid_suppressed_national",
                       description=NO_SMALL_COUNTS_DESCRIPTION),
        AssetCheckSpec("consistent_with_resident_table", asset="grid_suppressed_national",
                       description="Same hidden pattern as grid_suppressed on common cells, and no published "
                       "category whose resident/national difference is in 1..k-1 (disclosure by differencing)."),
    ],
)
def grid_consistent_suppression(
    context: AssetExecutionContext,
    grid_spec: GridSpecResource,
    grid_counts: pd.DataFrame,
    grid_counts_national: pd.DataFrame,
    grid_national_totals: pd.DataFrame,
):
    spec = grid_spec.spec().suppression
    reference = national_reference_counts(grid_national_totals)
    context.log.info(f"suppression reference counts (national, residents): {reference}")
    resident, national = suppress_region(grid_counts, grid_counts_national, reference, spec, context.partition_key)
    differencing = differencing_exposure(grid_counts, grid_counts_national, resident, national, k=spec.k)
    yield Output(resident, output_name="grid_suppressed",
                 metadata={**hidden_counts(resident), "reference_counts": MetadataValue.json(reference),
                           "suppression": MetadataValue.json(spec_parameters(spec))})
    yield Output(national, output_name="grid_suppressed_national",
                 metadata={**hidden_counts(national), "cells_differencing_blocked": differencing["blocked"]})
    yield _check_result("no_small_published_counts", no_small_published_counts(resident, k=spec.k), "grid_suppressed")
    yield _check_result("no_small_published_counts", no_small_published_counts(national, k=spec.k),
                        "grid_suppressed_national")
    yield _check_result("consistent_with_resident_table",
                        consistent_with_resident_table(resident, national, differencing), "grid_suppressed_national")


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       check_specs=[AssetCheckSpec(
           "cell_key_bounded", asset="grid_cell_key",
           description="Perturbed counts are non-negative, within D of the original, zeros stay zero and no "
           "published count lies in 1..js, in every figure.")],
       description="Resident grid table (13 figures) of the swapped census perturbed by the cell key method "
       "(ONS record keys 0..255 hashed from the person id, p-table D/V/js).")
def grid_cell_key(context: AssetExecutionContext, grid_spec: GridSpecResource,
                  census_swapped: dict[str, pd.DataFrame]):
    spec = grid_spec.spec().cell_key
    path = swapped_region_file(census_swapped["summary"], context.partition_key)
    perturbed, table = cell_key_region(cell_key_persons(path), spec)
    deviation = perturbed["total"] - perturbed["total_original"]
    yield Output(
        perturbed,
        metadata={
            "cells": len(perturbed),
            "share_of_totals_changed": float((deviation != 0).mean()) if len(perturbed) else 0.0,
            "mean_absolute_deviation_total": float(deviation.abs().mean()) if len(perturbed) else 0.0,
            "cell_key": MetadataValue.json(spec_parameters(spec)),
            "ptable_rows": _markdown(table.to_frame().round(4)),
        },
    )
    yield _check_result("cell_key_bounded",
                        cell_key_bounded(perturbed, max_deviation=spec.max_deviation, threshold=spec.threshold),
                        "grid_cell_key")


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=CODE_VERSION,
       description=("Loss of the cell key route per variable: deviations, share changed, distances "
                    f"({citation_text('9.1')})."))
def grid_cell_key_loss(context: AssetExecutionContext, grid_cell_key: pd.DataFrame) -> pd.DataFrame:
    loss = cell_key_loss(grid_cell_key)
    context.add_output_metadata(
        {
            **{f"{v}_mean_absolute_deviation": float(loss.loc[v, "mean_absolute_deviation"]) for v in loss.index},
            **{f"{v}_share_changed": float(loss.loc[v, "share_changed"]) for v in loss.index},
            "loss": _markdown(loss.round(4)),
        }
    )
    return loss


@asset(group_name=GROUP, partitions_def=grid_regions, code_version=SUPPRESSION_CODE_VERSION,
       description="Loss of the suppressed grid, difference table and map.")
def grid_loss(
    context: AssetExecutionContext,
    grid_counts: pd.DataFrame,
    grid_suppressed: pd.DataFrame,
    grid_counts_national: pd.DataFrame,
    grid_suppressed_national: pd.DataFrame,
) -> dict[str, pd.DataFrame]:
    result = suppression_loss(grid_counts, grid_suppressed, grid_counts_national, grid_suppressed_national)
    loss = result.tables["loss"]
    png = suppression_map_png(grid_suppressed, title=f"Hidden categories, region {context.partition_key}")
    context.add_output_metadata(
        {
            **{f"{v}_absolute_loss": int(loss.loc[v, "absolute_loss"]) for v in loss.index},
            **{f"{v}_relative_loss_pct": float(loss.loc[v, "relative_loss_pct"]) for v in loss.index},
            "secondary_suppressions": int(result.tables["secondary_costs"]["equal"].sum()),
            "homogeneous_cells_open_item_4": result.homogeneous_cells,
            "cells_disclosed_by_differencing": result.cells_disclosed_by_differencing,
            "cells_differencing_blocked": result.differencing["blocked"],
            "cells_differencing_blocked_beyond_primary": result.differencing["blocked_beyond_primary"],
            "cells_still_disclosed_by_differencing": result.differencing["still_disclosed"],
            "loss": _markdown(loss),
            "difference_table": _markdown(result.tables["differences"].round(2)),
            "map": _image(png, "Cells with hidden categories"),
        }
    )
    return result.tables


#: Per-region assets of each route (grid_counts and grid_counts_national are shared).
ROUTE_ASSETS = {
    "cell_key": ["grid_cell_key", "grid_cell_key_loss"],
    "suppression": ["grid_suppressed", "grid_suppressed_national", "grid_loss"],
}


def region_job_name(routes) -> str:
    """The per-region job of a choice of routes: ``grid_region_job`` for every route, else ``grid_<route>_job``."""
    routes = tuple(r for r in ROUTES if r in routes)
    return "grid_region_job" if routes == ROUTES else f"grid_{routes[0]}_job"


def region_job(routes, *, name: str | None = None, executor_def=None):
    """The per-region job of a choice of routes (named :func:`region_job_name` unless ``name`` is
    given): grid_counts, grid_counts_national and every asset of the routes, on ``executor_def``
    (default: the code location's)."""
    keys = ["grid_counts", "grid_counts_national", *(k for r in ROUTES if r in routes for k in ROUTE_ASSETS[r])]
    return define_asset_job(
        name or region_job_name(routes),
        selection=AssetSelection.assets(*keys),
        partitions_def=grid_regions,
        executor_def=executor_def,
        description=f"Tabulate one region of the swapped census and protect it by: {', '.join(routes)}.",
    )


#: One per-region job per choice of routes (the grid spec's ``routes``).
ROUTE_JOBS = [region_job(routes) for routes in (ROUTES, ("cell_key",), ("suppression",))]
