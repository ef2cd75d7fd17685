"""Grid assets, release stage: the release manifest and the grid report of every region's tables.

grid_release receives every region's tables as inputs (the IO manager loads an unpartitioned
asset's partitioned input as region -> table, :class:`~sdc_dagster.resources.storage.ParquetIOManager`)
and the parameters it records from the grid spec resource, and writes ``<releases>/grid/<run_id>/``
(every protected table, the census files read, parameters and seeds; replayed by ``sdc audit grid``)
and the HTML grid report, through :func:`sdc_dagster.releases.grid.release_grid`.
"""

import pandas as pd
from dagster import AssetExecutionContext, AssetSelection, MetadataValue, asset, define_asset_job

from sdc_dagster.pipeline.grid import census_dir
from sdc_dagster.releases.grid import ROUTE_TABLES, release_grid
from sdc_dagster.resources.grid import GridSpecResource
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.grid import release_parameters
from sdc_dagster.assets.grid.census import CODE_VERSION, GROUP
from sdc_dagster.assets.grid.tables import region_job_name

#: A route's per-region table as the release receives it: region -> table of the regions stored (None:
#: none is, the route never ran).
RegionTables = dict[str, pd.DataFrame] | None


def route_tables(routes, regions: list[str], loaded: dict[str, RegionTables]) -> dict[str, dict[str, pd.DataFrame]]:
    """Region -> table name -> protected table of every route of the spec, regions in the order of
    ``regions``, from the loaded inputs (table name -> region -> table, the regions stored);
    FileNotFoundError naming the route, the table and the regions it has not run for."""
    tables = {region: {} for region in regions}
    for route in routes:
        for name in ROUTE_TABLES[route]:
            stored = loaded[name] or {}
            missing = [region for region in regions if region not in stored]
            if missing:
                raise FileNotFoundError(f"grid_release: route {route!r} of the grid spec has no {name} of region(s) "
                                        f"{', '.join(missing)}; run {region_job_name(routes)} for them first")
            for region in regions:
                tables[region][name] = stored[region]
    return tables


@asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    description="The grid release: every protected table, manifest (swap rate, p-table, seeds, digests; "
    "replayed by `sdc audit grid`) and the HTML grid report (map with layers, loss per route, differencing).",
)
def grid_release(
    context: AssetExecutionContext,
    home: SdcHome,
    grid_spec: GridSpecResource,
    census_swapped: dict[str, pd.DataFrame],
    grid_counts: dict[str, pd.DataFrame],
    grid_counts_national: dict[str, pd.DataFrame],
    grid_cell_key: RegionTables,
    grid_suppressed: RegionTables,
    grid_suppressed_national: RegionTables,
) -> pd.DataFrame:
    spec = grid_spec.spec()
    regions = sorted(grid_counts)
    if not regions:
        raise FileNotFoundError("grid_release: no grid region; add census files and run the chain first")
    tables = route_tables(spec.routes, regions, {"grid_cell_key": grid_cell_key, "grid_suppressed": grid_suppressed,
                                                 "grid_suppressed_national": grid_suppressed_national})
    release, report = release_grid(
        home.releases, home.reports, context.run_id,
        routes=list(spec.routes),
        parameters=release_parameters(spec),
        census_files={r: census_dir(home.root) / f"{r}.parquet" for r in regions},
        tables=tables,
        counts=pd.concat([grid_counts[r] for r in regions], ignore_index=True),
        national=pd.concat([grid_counts_national[r] for r in regions], ignore_index=True),
        households=census_swapped["households"],
    )
    manifest = release.manifest
    context.add_output_metadata(
        {"manifest": str(release.folder / "manifest.json"), "report": str(report), "routes": ", ".join(spec.routes),
         "seeds": MetadataValue.json(manifest["seeds"])}
    )
    return pd.DataFrame([{"file": name, "sha256": digest} for name, digest in manifest["files"].items()],
                        columns=["file", "sha256"])


grid_release_job = define_asset_job(
    "grid_release_job",
    selection=AssetSelection.assets(grid_release),
    description="After every region's routes: the release manifest and the grid report.",
)
