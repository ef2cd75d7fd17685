"""The census grid release (SPEC §8.10, §8.11, §11).

:func:`release_grid` writes the release (:func:`write_grid_release`: ``<releases>/grid/<run_id>/``
holding every protected table of every region as CSV and a manifest with the census files read, the
parameters and seeds of every step and each table's SHA-256) and the HTML grid report.
:func:`protect_region` is the route step the assets and the audit replay
(:func:`sdc_dagster.releases.replay.replay_grid_release`) share. Survey and grid share one digest
scheme (SHA-256 of the released file's bytes, :mod:`sdc_dagster.releases.digests`) and one audit
result (:class:`~sdc_dagster.releases.replay.Verification`).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from sdc_dagster.files import exclusive_lock, write_atomic
from sdc_dagster.names import inside
from sdc_dagster.pipeline.grid import cell_key_persons, cell_key_region, suppress_region, tabulate_region
from sdc_dagster.releases.digests import package_versions, sha256_bytes, table_bytes
from sdc_dagster.releases.manifest import MANIFEST, SEQUENCE_LOCK, Release, manifest_bytes, read_manifest
from sdc_dagster.report.grid import render_grid_report
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec.grid import GridSpec

#: The protected tables of each route, as released and as the audit recomputes them.
ROUTE_TABLES = {"cell_key": ("grid_cell_key",), "suppression": ("grid_suppressed", "grid_suppressed_national")}
#: The folder of the grid releases under the releases root (``<releases>/grid/<run_id>/``).
GRID = "grid"


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
) -> tuple[Release, Path]:
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
    release = write_grid_release(releases, run_id, tables, census_files, record)

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


def list_grid_releases(releases: Path) -> list[Path]:
    """Grid release folders, oldest first (by the manifest's sequence number)."""
    root = Path(releases) / GRID
    folders = [p for p in root.iterdir() if (p / MANIFEST).is_file()] if root.is_dir() else []
    return sorted(folders, key=lambda p: read_manifest(p)["sequence"])


def write_grid_release(releases: Path, run_id: str, tables: dict[str, dict[str, pd.DataFrame]],
                       inputs: dict[str, Path], record: dict) -> Release:
    """Write a grid release ``<releases>/grid/<run_id>/``: every protected table as
    ``<region>/<table>.csv`` (:func:`table_bytes`) and ``manifest.json`` (last) with ``record``
    (routes, parameters, seeds, ...), the run id, sequence and previous release, the package
    versions, each input census file (``inputs``: region -> file) with its SHA-256, and each
    table file with its SHA-256. The sequence number is read and the release written under
    :data:`~sdc_dagster.releases.manifest.SEQUENCE_LOCK` of the grid releases."""
    with exclusive_lock(Path(releases) / GRID / SEQUENCE_LOCK):
        return _write_grid_release(releases, run_id, tables, inputs, record)


def _write_grid_release(releases: Path, run_id: str, tables: dict[str, dict[str, pd.DataFrame]],
                        inputs: dict[str, Path], record: dict) -> Release:
    earlier = list_grid_releases(releases)
    folder = inside(releases, GRID, run_id)
    files = {f"{region}/{name}.csv": table_bytes(frame) for region, named in tables.items()
             for name, frame in named.items()}
    manifest = {
        **record,
        "run_id": run_id,
        "sequence": (read_manifest(earlier[-1])["sequence"] + 1) if earlier else 1,
        "previous_release": earlier[-1].name if earlier else None,
        "packages": package_versions(),
        "inputs": {region: {"file": str(path), "sha256": file_sha256(path)} for region, path in inputs.items()},
        "files": {name: sha256_bytes(data) for name, data in files.items()},
    }
    existed = folder.exists()
    try:
        for name, data in files.items():
            write_atomic(folder / name, data)
        write_atomic(folder / MANIFEST, manifest_bytes(manifest))
    except BaseException:
        if not existed:  # a run folder is complete or absent
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return Release(folder=folder, manifest=manifest)
