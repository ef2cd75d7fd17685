"""The census grid release and its audit replay (SPEC §8.10, §8.11, §11).

:func:`release_grid` writes the release (:func:`sdc_dagster.lineage.write_grid_release`: every
protected table, the census files read, the parameters and seeds of every step) and the HTML grid
report. :func:`replay_grid_release` recomputes every table of a release from its census files with
the same step functions as the assets (:mod:`sdc_dagster.pipeline.grid`), in a scratch folder;
:func:`audit_grid_release` compares the two byte for byte (``sdc audit grid``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from sdc_dagster import lineage
from sdc_dagster.files import write_atomic
from sdc_dagster.spec.grid import GridSpec, parse_grid_spec
from sdc_dagster.pipeline.grid import (
    cell_key_persons,
    cell_key_region,
    national_reference_counts,
    national_totals,
    suppress_region,
    tabulate_region,
)
from sdc_dagster.pipeline.grid_swap import swap_regions, swapped_region_file
from sdc_dagster.report.grid import render_grid_report

#: The protected tables of each route, as released and as the audit recomputes them.
ROUTE_TABLES = {"cell_key": ("grid_cell_key",), "suppression": ("grid_suppressed", "grid_suppressed_national")}


def release_grid(
    releases: Path,
    reports: Path,
    run_id: str,
    *,
    routes: Sequence[str],
    parameters: dict[str, dict],
    census_files: dict[str, Path],
    tables: dict[str, dict[str, pd.DataFrame]],
    counts: pd.DataFrame,
    national: pd.DataFrame,
    households: pd.DataFrame,
) -> tuple[lineage.Release, Path]:
    """Write the grid release of ``run_id`` and its report ``<reports>/grid/<run_id>.html``.

    ``parameters``: the parameters every step ran with (``swap`` and one per route, as the grid
    spec names them); ``census_files``: region -> census file read; ``tables``: region -> table
    name -> protected table; ``counts`` / ``national``: the tabulated grid of every region, both
    populations; ``households``: the swapped households (cell before and after)."""
    record = {
        "kind": "census_grid",
        "regions": sorted(census_files),
        "routes": list(routes),
        "parameters": parameters,
        "seeds": {step: values["seed"] for step, values in parameters.items()},
        "swap_rate": parameters["swap"]["swaprate"],
        "swapped_households": int(len(households)),
    }
    release = lineage.write_grid_release(releases, run_id, tables, census_files, record)

    def joined(name: str) -> pd.DataFrame | None:
        frames = [named[name] for named in tables.values() if name in named]
        return pd.concat(frames, ignore_index=True) if frames else None

    page = render_grid_report(
        counts,
        title=f"Census grid release ({len(census_files)} regions)",
        suppressed=joined("grid_suppressed"),
        perturbed=joined("grid_cell_key"),
        national=national,
        swapped_households=households.groupby("cell_after").size(),
        parameters={f"{step}.{k}": v for step, values in parameters.items() for k, v in values.items()},
    )
    report = Path(reports) / "grid" / f"{run_id}.html"
    write_atomic(report, page)
    return release, report


def protect_region(path: Path, region: str, spec: GridSpec, reference: dict[str, int]) -> dict[str, pd.DataFrame]:
    """The protected tables of one region's swapped persons by every route of ``spec``."""
    tables = {}
    if "cell_key" in spec.routes:
        tables["grid_cell_key"] = cell_key_region(cell_key_persons(path), spec.cell_key)[0]
    if "suppression" in spec.routes:
        tables["grid_suppressed"], tables["grid_suppressed_national"] = suppress_region(
            tabulate_region(path, "resident"), tabulate_region(path, "national"), reference, spec.suppression, region)
    return tables


def replay_grid_release(manifest: dict) -> dict[str, bytes]:
    """Every table file of a grid release recomputed from its census files: file -> bytes.

    The national swap, the national totals and every region's routes run as in the assets, with
    the manifest's parameters, in a scratch folder."""
    spec = parse_grid_spec({"routes": manifest["routes"], **manifest["parameters"]}, source="grid release manifest")
    regions = list(manifest["regions"])
    files = [Path(manifest["inputs"][region]["file"]) for region in regions]
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        swapped = swap_regions(files, regions, Path(scratch), spec.swap)
        paths = {region: swapped_region_file(swapped.summary, region) for region in regions}
        reference = national_reference_counts(national_totals(sorted(paths.values())))
        for region in regions:
            for name, frame in protect_region(paths[region], region, spec, reference).items():
                out[f"{region}/{name}.csv"] = lineage.table_bytes(frame)
    return out


def audit_grid_release(releases: Path, *, run: str | None = None) -> lineage.Verification | None:
    """Verify the latest grid release (or run ``run``'s) by replaying it; None when there is none."""
    folders = [f for f in lineage.list_grid_releases(releases) if run is None or f.name == run]
    return lineage.verify_grid_release(folders[-1], replay_grid_release) if folders else None
