"""Grid assets, release stage: the release manifest and the grid report of every region's tables.

grid_release writes ``<releases>/grid/<run_id>/`` (every protected table, the census files read,
parameters and seeds; replayed by ``sdc audit grid``) and the HTML grid report, through
:func:`sdc_dagster.pipeline.grid_release.release_grid`.
"""

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, AssetSelection, Config, MetadataValue, asset, define_asset_job

from sdc_dagster.grid_spec import ROUTES
from sdc_dagster.pipeline.grid import census_dir
from sdc_dagster.pipeline.grid_release import ROUTE_TABLES, release_grid
from sdc_dagster.resources.storage import releases_dir, reports_dir, sdc_home, stored_output
from sdc_dagster.assets.grid.census import CODE_VERSION, GROUP, grid_regions


class GridReleaseConfig(Config):
    """Which routes the release holds (the grid spec's ``routes``)."""

    routes: list[str] = list(ROUTES)


def _latest_json(instance, key: str, name: str) -> dict:
    """The parameters an asset recorded at its latest materialisation (what the release ran with)."""
    event = instance.get_latest_materialization_event(AssetKey(key))
    if event is None or name not in event.asset_materialization.metadata:
        raise FileNotFoundError(f"grid_release: {key} has no recorded {name!r}; run the chain first")
    return dict(event.asset_materialization.metadata[name].value)


# The per-region tables are dependencies read back per region (stored_output): an unpartitioned
# asset loading every partition of its inputs at once is not served by the per-partition IO manager.
@asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    deps=["grid_counts", "grid_counts_national", "grid_cell_key", "grid_suppressed", "grid_suppressed_national"],
    description="The grid release: every protected table, manifest (swap rate, p-table, seeds, digests; "
    "replayed by `sdc audit grid`) and the HTML grid report (map with layers, loss per route, differencing).",
)
def grid_release(context: AssetExecutionContext, config: GridReleaseConfig,
                 census_swapped: dict[str, pd.DataFrame]) -> pd.DataFrame:
    routes = [r for r in ROUTES if r in config.routes]
    regions = sorted(context.instance.get_dynamic_partitions(grid_regions.name))
    parameters = {"swap": _latest_json(context.instance, "census_swapped", "swap")}
    if "cell_key" in routes:
        parameters["cell_key"] = _latest_json(context.instance, "grid_cell_key", "cell_key")
    if "suppression" in routes:
        parameters["suppression"] = _latest_json(context.instance, "grid_suppressed", "suppression")
    tables = {r: {name: stored_output([name], r) for route in routes for name in ROUTE_TABLES[route]}
              for r in regions}
    release, report = release_grid(
        releases_dir(), reports_dir(), context.run_id,
        routes=routes,
        parameters=parameters,
        census_files={r: census_dir(sdc_home()) / f"{r}.parquet" for r in regions},
        tables=tables,
        counts=pd.concat([stored_output(["grid_counts"], r) for r in regions], ignore_index=True),
        national=pd.concat([stored_output(["grid_counts_national"], r) for r in regions], ignore_index=True),
        households=census_swapped["households"],
    )
    manifest = release.manifest
    context.add_output_metadata(
        {"manifest": str(release.folder / "manifest.json"), "report": str(report), "routes": ", ".join(routes),
         "seeds": MetadataValue.json(manifest["seeds"])}
    )
    return pd.DataFrame([{"file": name, "sha256": digest} for name, digest in manifest["files"].items()],
                        columns=["file", "sha256"])


grid_release_job = define_asset_job(
    "grid_release_job",
    selection=AssetSelection.assets(grid_release),
    description="After every region's routes: the release manifest and the grid report.",
)
