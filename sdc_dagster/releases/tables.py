"""The release of a table set (issue 36): its protected tables, a manifest, and the audit's replay.

:func:`release_tables` writes ``<releases>/tables/<set>/<wave>/<run_id>/`` (``<wave>`` is ``file``
for a business file): every protected table in the spec's release formats (:func:`table_files`:
the office's layout with status flags as CSV or Excel), ``spec.yaml``
(the table spec text used) and ``manifest.json`` (last) recording every input with its SHA-256 (the
data snapshot, the survey spec that read a wave, the hierarchy files), the spec's hash, the method
(with ``method: rounding`` its parameters and seed under ``rounding``, with ``method: cell_key`` the
p-table, the seed of the record keys and delta, top_k, epsilon under ``cell_key``),
each table's rules, its published and distinct cells and its suppressions (distinct cells: a
duplicate, :func:`~sdc_dagster.pipeline.tables.duplicate_of`, counts once), the release checks and each file's SHA-256
(:mod:`sdc_dagster.releases.digests`). A set whose blocking checks fail (a primary unprotected, a
pattern failing the intruder's audit) is never released: its run folder holds ``withheld.json``
naming the checks, and no table file. The HTML report (:mod:`sdc_dagster.report.tables`) goes to
``<reports>/tables/<set>/<wave>.html``. With the format ``tau_argus``, tau-Argus's tabular input of
each table (:func:`exchange_files`) goes beside the report, to ``<reports>/tables/<set>/<wave>/<run_id>/``,
never into the release: a ``.tab`` holds every inner cell's value and largest contributions, the
confidential figures the suppressions hide (as the report, which shows every original value, it is
the methodologist's, for continuing in tau-Argus). The manifest records its folder and each file's
SHA-256 under ``exchange``, and the replay checks it too.

:func:`audit_table_release` (``sdc audit tables``) replays a release: the stages of
:mod:`sdc_dagster.pipeline.tables` rerun on the recorded inputs with the stored spec copy, and every
table file must come out byte-identical (:func:`sdc_dagster.releases.replay.verify_grid_release`'s
comparison, which checks the recorded inputs' hashes first).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import sdc_dagster.tables as tables
from sdc_dagster.files import exclusive_lock, write_atomic
from sdc_dagster.names import inside
from sdc_dagster.numerics.decimals import original_decimals
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.pipeline.tables import distinct, read_table_input, run_tables, withheld_because
from sdc_dagster.releases.digests import package_versions, sha256_bytes, snapshot_input, spec_text_sha256
from sdc_dagster.releases.manifest import (MANIFEST, SEQUENCE_LOCK, SPEC_COPY, WITHHELD, Release, manifest_bytes,
                                           read_manifest)
from sdc_dagster.releases.replay import Verification, verify_grid_release
from sdc_dagster.report.tables import render_table_report
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec.tables import TableSetSpec, parse_table_spec
from sdc_dagster.tables.model import Table

#: The folder of the table releases under the releases root.
TABLES = "tables"
#: The wave of a table set read from one business file.
FILE_WAVE = "file"


def _released_table(table: Table, cells: pd.DataFrame) -> Table:
    """The table as released: a rounded set's (``method: rounding``) with its rounded counts."""
    if "published" in cells and "cell_key" not in cells:  # rounded (pipeline.tables.round_tables)
        return replace(table, cells=table.cells.assign(freq=cells["published"].to_numpy()))
    return table


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(p for p in folder.rglob("*") if p.is_file())}


def table_files(spec: TableSetSpec, tabulated: dict[str, Table], audited: dict[str, pd.DataFrame]) -> dict[str, bytes]:
    """The released files of a table set (file name -> bytes), in the publishable formats of
    ``release.formats``: ``<table>.csv`` and ``<table>.xlsx``, the office's layout with tau-Argus's
    status letters (:func:`sdc_dagster.tables.published_table`, :func:`sdc_dagster.tables.write_published`:
    a suppressed cell's value blank). A rounded set (``method: rounding``) releases its rounded counts
    (``published``) in the same layouts, every cell safe (``S``, or ``Z`` for a count rounded to 0);
    a set of the cell key method (``method: cell_key``) likewise its perturbed counts or values.
    tau-Argus's files are no release file: :func:`exchange_files`."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, cells in audited.items():
            table = _released_table(tabulated[name], cells)
            if "cell_key" in cells:  # perturbed (cell_key_tables): none suppressed
                layout = perturbed_layout(table, cells)
            elif "published" in cells:  # rounded: the rounded counts, none suppressed
                layout = tables.published_table(table, cells["suppressed"], primary=cells["suppressed"])
            else:
                layout = tables.published_table(table, cells["suppressed"], primary=cells["primary"])
            for fmt in ("csv", "xlsx"):
                if fmt in spec.formats:
                    tables.write_published(layout, folder / f"{name}.{fmt}", fmt=fmt)
        return _folder_bytes(folder)


def exchange_files(spec: TableSetSpec, tabulated: dict[str, Table], audited: dict[str, pd.DataFrame]) -> dict[str, bytes]:
    """With ``tau_argus`` in ``release.formats``, each table as tau-Argus's tabular input (file name ->
    bytes): ``tau_argus/<table>.tab`` with its ``.rda``, ``.hrc`` and ``.hst``
    (:func:`sdc_dagster.tables.write_tau_argus`: the suppressed cells as a priori unsafe, for a
    methodologist to continue in tau-Argus); else none. Confidential: a ``.tab`` line holds an inner
    cell's value and its largest contributions, suppressed or not (the tau-Argus manual's tabular
    input), so :func:`release_tables` writes these files beside the report, never into the release."""
    if "tau_argus" not in spec.formats:
        return {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, cells in audited.items():
            tables.write_tau_argus(_released_table(tabulated[name], cells), folder / "tau_argus", name,
                                   suppressed=cells["suppressed"])
        return _folder_bytes(folder)


def exchange_folder(reports: Path, name: str, wave: str, run_id: str) -> Path:
    """Where a run's tau-Argus files go (:func:`exchange_files`): ``<reports>/tables/<set>/<wave>/<run_id>``,
    beside the wave's report."""
    return inside(reports, TABLES, name, wave, run_id)


def perturbed_layout(table: Table, cells: pd.DataFrame) -> pd.DataFrame:
    """The office's layout of a table of the cell key method (:func:`sdc_dagster.pipeline.tables.cell_key_tables`):
    :func:`sdc_dagster.tables.published_table` of the original table, nothing suppressed (its codes
    and status letters, ``S`` or ``Z``), with ``value`` the ``published`` figures: whole counts, or
    values at the decimals of the input's contributions (:func:`~sdc_dagster.numerics.decimals.original_decimals`;
    as summed when they have more). The perturbed table is not additive, so it is not itself a
    :class:`~sdc_dagster.tables.Table` (whose cells are the sums of its inner cells)."""
    layout = tables.published_table(table, cells["suppressed"], primary=cells["suppressed"])
    figures = pd.array(cells["published"].to_numpy(dtype=np.float64), dtype="Float64")
    decimals = original_decimals(table.contributions["value"].to_numpy(dtype=np.float64)) if table.magnitude else 0
    layout["value"] = (figures if decimals is None else figures.round(decimals).astype("Int64") if decimals == 0
                       else figures.round(decimals))
    return layout


def release_folder(releases: Path, name: str, wave: str) -> Path:
    return inside(releases, TABLES, name, wave)


def list_table_releases(releases: Path, name: str, wave: str, *, withheld: bool = False) -> list[Path]:
    """Run folders of one table set and wave, oldest first: released ones (and withheld ones with ``withheld``)."""
    root = release_folder(releases, name, wave)
    records = (MANIFEST, WITHHELD) if withheld else (MANIFEST,)
    folders = [p for p in root.iterdir() if any((p / r).is_file() for r in records)] if root.is_dir() else []
    return sorted(folders, key=lambda p: read_manifest(p)["sequence"])


def table_inputs(spec: TableSetSpec, data_file: Path, sha256: str, survey_spec: Path | None = None, *,
                 snapshots: Path | None = None) -> dict[str, dict]:
    """The inputs a table release records, each ``{file, sha256}``: ``data`` (the snapshot read),
    ``survey_spec`` (the survey spec that read a wave), ``hierarchy:<dimension>`` (an ``.hrc`` file;
    with ``snapshots``, the inputs folder, its content-addressed copy there, as the data's
    (:func:`~sdc_dagster.releases.digests.snapshot_input`), ``source`` naming the file read, so that
    the replay reads the hierarchy the release was made with after the file is edited for the next)
    and, for tau-Argus input, ``tau_argus:rda``, ``tau_argus:tab``, ``tau_argus:<dimension>`` (its
    ``.hrc``) and ``tau_argus:apriori`` (its ``.hst``): the files the replay reads again; with
    ``snapshots``, copies of them (:func:`_tau_argus_snapshot`) with ``source`` naming each file read."""
    inputs = {"data": {"file": str(data_file), "sha256": sha256}}
    if survey_spec is not None:
        inputs["survey_spec"] = {"file": str(survey_spec), "sha256": file_sha256(Path(survey_spec))}
    for name, dimension in spec.dimensions.items():
        if dimension.file is not None:
            digest = file_sha256(dimension.file)
            inputs[f"hierarchy:{name}"] = {"file": str(dimension.file), "sha256": digest} if snapshots is None else {
                "file": str(snapshot_input(dimension.file, digest, snapshots).snapshot), "sha256": digest,
                "source": str(dimension.file)}
    rda = spec.source.tau_argus
    if rda is not None:  # the metadata and hierarchies the replay reads again
        from sdc_dagster.datafiles.argus import read_rda, resolve_beside

        from sdc_dagster.pipeline.tables import input_file

        files = {"tau_argus:rda": rda, "tau_argus:tab": input_file(spec),
                 **({"tau_argus:apriori": spec.source.apriori} if spec.source.apriori is not None else {})}
        files.update({f"tau_argus:{v.name}": resolve_beside(rda.parent, v.hierarchy)
                      for v in read_rda(rda).variables if v.hierarchy})
        inputs.update(_tau_argus_snapshot(rda, files, snapshots))
    return inputs


def _tau_argus_snapshot(rda: Path, files: dict[str, Path], snapshots: Path | None) -> dict[str, dict]:
    """Each tau-Argus file of a release recorded ``{file, sha256}``; with ``snapshots`` (the inputs
    folder) copied into ``<snapshots>/tau_argus/<digest of the set>/`` under its name relative to the
    ``.rda``'s folder, which is how the ``.rda`` names its ``.hrc`` files and how the ``.tab`` is found
    beside it, and recorded with ``source`` the file read: editing them for the next release leaves
    the last one's replay intact, as a business file's and a dimension's ``.hrc`` snapshots do
    (:func:`~sdc_dagster.releases.digests.snapshot_input`). A file outside the ``.rda``'s folder
    (an absolute ``.hrc`` path in the ``.rda``) is recorded where it is."""
    digests = {key: file_sha256(path) for key, path in files.items()}
    if snapshots is None:
        return {key: {"file": str(path), "sha256": digests[key]} for key, path in files.items()}
    folder = Path(snapshots) / "tau_argus" / sha256_bytes("".join(f"{k}={d}\n" for k, d in sorted(digests.items())).encode())
    recorded = {}
    for key, path in files.items():
        try:
            copy = folder / Path(path).resolve().relative_to(rda.parent.resolve())
        except ValueError:
            recorded[key] = {"file": str(path), "sha256": digests[key]}
            continue
        if not copy.is_file():
            write_atomic(copy, Path(path).read_bytes())
        recorded[key] = {"file": str(copy), "sha256": digests[key], "source": str(path)}
    return recorded


def release_tables(releases: Path, reports: Path, run_id: str, spec: TableSetSpec, wave: str,
                   tabulated: dict[str, Table], audited: dict[str, pd.DataFrame], checks: dict[str, CheckOutcome],
                   inputs: dict[str, dict]) -> tuple[Release, Path]:
    """Write the release of ``run_id`` (module text) and its report; withheld when a blocking check
    of ``checks`` (:func:`sdc_dagster.pipeline.tables.table_checks`) failed. ``inputs``:
    :func:`table_inputs`. A spec file changed since it was loaded raises (its copy would not be the
    spec that was used)."""
    spec_text = Path(spec.spec_path).read_bytes()
    if spec_text_sha256(spec_text) != spec.spec_sha256:
        raise RuntimeError(f"{spec.spec_path} changed since the table spec was loaded; reload and rerun")
    withheld = withheld_because(checks)
    files = {} if withheld else table_files(spec, tabulated, audited)
    exchange = {} if withheld else exchange_files(spec, tabulated, audited)
    # the sequence number is read and the manifest written under one lock: two runs of a set and wave at
    # once (two sdc table run) would otherwise both take the same number after the same previous release
    with exclusive_lock(release_folder(releases, spec.name, wave) / SEQUENCE_LOCK):
        decisions = list_table_releases(releases, spec.name, wave, withheld=True)
        earlier = list_table_releases(releases, spec.name, wave)
        folder = release_folder(releases, spec.name, wave) / run_id
        exchange_to = exchange_folder(reports, spec.name, wave, run_id)
        manifest = {
            "kind": "tables",
            "tables": spec.name,
            "wave": wave,
            "run_id": run_id,
            "sequence": (read_manifest(decisions[-1])["sequence"] + 1) if decisions else 1,
            "previous_release": earlier[-1].name if earlier else None,
            "packages": package_versions(),
            "inputs": inputs,
            "spec": {"file": str(spec.spec_path), "sha256": spec.spec_sha256, "copy": SPEC_COPY},
            "method": spec.method,
            **({"rounding": {**{k: v for k, v in spec.rounding.items() if k != "random_state"},
                             "seed": spec.rounding["random_state"]}}
               if spec.method == "rounding" else {"cell_key": dict(spec.cell_key)} if spec.method == "cell_key"
               else {"cost": spec.cost}),
            "published": {
                name: {"dimensions": list(spec.published[name].dimensions), "rules": list(spec.published[name].rules),
                       "dominance_tie": spec.published[name].dominance_tie,
                       "frozen": {state: list(c) for state, c in spec.published[name].frozen.items()},
                       "cells": int(len(cells)),
                       "distinct_cells": int(len(distinct(cells))),
                       "primary": int(distinct(cells)["primary"].sum()),
                       "secondary": int((distinct(cells)["status"] == "secondary").sum()),
                       **({status: int((distinct(cells)["status"] == status).sum())
                           for status in ("rounded", "perturbed") if "published" in cells
                           and (status == "perturbed") == ("cell_key" in cells)}),
                       "linked_with": next(g for g in spec.linked() if name in g),
                       **({"optimality": cells.attrs["optimality"]} if "optimality" in cells.attrs else {})}
                for name, cells in audited.items()},
            "checks": {name: outcome.record() for name, outcome in checks.items()},
            "files": {name: sha256_bytes(data) for name, data in files.items()},
        }
        if exchange:  # confidential, beside the report (exchange_files)
            manifest["exchange"] = {"folder": str(exchange_to),
                                    "files": {name: sha256_bytes(data) for name, data in exchange.items()}}
        if withheld:
            manifest["withheld"] = withheld
        existed = folder.exists()
        try:
            for name, data in files.items():
                write_atomic(folder / name, data)
            for name, data in exchange.items():
                write_atomic(exchange_to / name, data)
            write_atomic(folder / SPEC_COPY, spec_text)
            write_atomic(folder / (WITHHELD if withheld else MANIFEST), manifest_bytes(manifest))
        except BaseException:
            if not existed:  # a run folder is complete or absent
                shutil.rmtree(folder, ignore_errors=True)
                shutil.rmtree(exchange_to, ignore_errors=True)
            raise
    release = Release(folder=folder, manifest=manifest)
    state = f"withheld ({', '.join(withheld)})" if withheld else f"released: {folder}"
    page = render_table_report(
        f"Tables {spec.name}" + (f": {spec.title}" if spec.title else "") + f", {wave}",
        audited, {n: list(t.dimensions) for n, t in spec.published.items()}, manifest["checks"],
        {"run": run_id, "spec": f"{spec.spec_path} (SHA-256 {spec.spec_sha256})",
         "input": f"{inputs['data']['file']} (SHA-256 {inputs['data']['sha256']})",
         "method": (f"small-count rounding (PLS) to base {spec.rounding['round_base']}, seed "
                    f"{spec.rounding['random_state']}" if spec.method == "rounding" else
                    f"cell key method, p-table D = {spec.cell_key['max_deviation']}, V = {spec.cell_key['variance']}, "
                    f"js = {spec.cell_key['threshold']}, delta = {spec.cell_key['delta']}, top_k = "
                    f"{spec.cell_key['top_k']}, record keys drawn with seed {spec.cell_key['seed']}"
                    if spec.method == "cell_key" else f"{spec.method}, cost by {spec.cost}"
                    + "".join(sorted({f"; {cells.attrs['optimality']}" for cells in audited.values()
                                      if "optimality" in cells.attrs}))),
         "release": state,
         **({"tau-Argus": f"{exchange_to} (confidential: every inner cell's value and largest contributions)"}
            if exchange else {}),
         "audit": "" if withheld else f"sdc audit tables --survey {spec.name} --run {run_id}"})
    report = inside(reports, TABLES, spec.name) / f"{wave}.html"
    write_atomic(report, page.encode())
    return release, report


def recompute_table_release(folder: Path, manifest: dict) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The table files and the tau-Argus files (:func:`exchange_files`) of a release recomputed from
    what its manifest records: the stored spec copy
    (paths in it relative to the spec's recorded place), the data snapshot (read through the survey
    spec recorded for a wave, else as the business file was; tau-Argus input from its recorded
    ``.rda``, ``.tab`` and ``.hrc``, whose digests the audit checks first)."""
    copy = Path(folder) / manifest["spec"]["copy"]
    text = copy.read_bytes().decode("utf-8")
    spec = parse_table_spec(yaml.safe_load(text), spec_path=Path(manifest["spec"]["file"]), text=text, recorded=True)
    recorded = manifest["inputs"]
    spec = replace(spec, dimensions={  # each .hrc as recorded (its snapshot; the audit checked its digest)
        name: replace(d, file=Path(recorded[f"hierarchy:{name}"]["file"])) if f"hierarchy:{name}" in recorded else d
        for name, d in spec.dimensions.items()})
    if "source" in recorded.get("tau_argus:rda", {}):  # tau-Argus input from its snapshot
        apriori = recorded.get("tau_argus:apriori")
        spec = replace(spec, source=replace(spec.source, tau_argus=Path(recorded["tau_argus:rda"]["file"]),
                                            apriori=Path(apriori["file"]) if apriori else spec.source.apriori))
    data_file = Path(manifest["inputs"]["data"]["file"])
    if spec.source.survey is not None:
        from sdc_dagster.spec.sources import read_wave_file
        from sdc_dagster.spec import load_spec

        data = read_wave_file(load_spec(manifest["inputs"]["survey_spec"]["file"]), data_file)
    else:  # the business file's snapshot; tau-Argus input from its recorded files (verified by digest)
        data = read_table_input(spec, data_file)
    tabulated, audited = run_tables(spec, data, source=str(data_file))
    return table_files(spec, tabulated, audited), exchange_files(spec, tabulated, audited)


def verify_table_release(folder: Path) -> Verification:
    """Check a table release: the stored spec copy still has its hash, every recorded input and
    table file theirs, and the replay (:func:`recompute_table_release`) reproduces every table file."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    copy = folder / manifest["spec"]["copy"]
    if not copy.is_file() or spec_text_sha256(copy.read_bytes()) != manifest["spec"]["sha256"]:
        return Verification(manifest, True, True, False, f"the stored spec copy {copy} is missing or differs from "
                            "the spec hash in its manifest (edited or damaged)", spec_copy_intact=False)
    recomputed: dict[str, dict[str, bytes]] = {}

    def public(recorded: dict) -> dict[str, bytes]:
        recomputed["files"], recomputed["exchange"] = recompute_table_release(folder, recorded)
        if any(name.startswith("tau_argus/") for name in recorded["files"]):  # released before the files moved
            return {**recomputed["files"], **recomputed.pop("exchange")}
        return recomputed["files"]

    verdict = verify_grid_release(folder, public, inputs="the recorded input(s)")
    recorded = manifest.get("exchange")
    if not recorded or "exchange" not in recomputed:  # none written, or the inputs failed first
        return verdict
    return _exchange_verified(verdict, Path(recorded["folder"]), recorded["files"], recomputed["exchange"])


def _exchange_verified(verdict: Verification, where: Path, expected: dict[str, str],
                       recomputed: dict[str, bytes]) -> Verification:
    """``verdict`` with the tau-Argus files of the release (:func:`exchange_files`, in ``where``)
    checked too: each still has its recorded SHA-256 and equals its recomputation."""
    status = dict(verdict.files)
    damaged, differing = [], []
    for name in sorted(set(expected) | set(recomputed)):
        path = where / name
        shown = str(path)
        if name not in expected:
            status[shown] = "is recomputed but not recorded"
            differing.append(shown)
        elif not path.is_file() or file_sha256(path) != expected[name]:
            status[shown] = "is missing" if not path.is_file() else "differs from the hash in its manifest"
            damaged.append(shown)
        elif name not in recomputed or recomputed[name] != path.read_bytes():
            status[shown] = "differs from its recomputation"
            differing.append(shown)
        else:
            status[shown] = "ok"
    detail = verdict.detail
    if damaged:
        detail = "; ".join(f"the tau-Argus file {n} {status[n]}" for n in damaged) + " (edited or damaged)"
    elif differing and verdict.ok:
        detail = f"the recomputed tau-Argus files differ ({', '.join(differing)})"
    elif verdict.ok:
        detail += f"; the tau-Argus files in {where} too"
    return replace(verdict, files=status, stored_file_intact=verdict.stored_file_intact and not damaged,
                   byte_identical=verdict.byte_identical and not differing, detail=detail)


def audit_table_release(releases: Path, name: str, *, wave: str | None = None,
                        run: str | None = None) -> Verification | None:
    """Verify the latest release of table set ``name`` (of ``wave``, default every wave's latest
    run; or run ``run``'s) by replaying it; None when there is none."""
    root = inside(releases, TABLES, name)
    waves = [wave] if wave else sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    folders = [f for w in waves for f in list_table_releases(releases, name, w) if run is None or f.name == run]
    if not folders:
        return None
    return verify_table_release(max(folders, key=lambda f: f.stat().st_mtime) if run is None else folders[-1])
