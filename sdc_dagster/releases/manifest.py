"""Release manifests: what produced a protected file, and the proof that it can be produced again.

Every protected output is written as a *release*: ``<releases>/<survey>/<wave>/<plan>/<run_id>/``
holding the safe files (``protected.parquet`` always, and the wave's own format and the spec's
``release.formats``, shuffled and with new ids: :mod:`sdc_dagster.release_files`), ``manifest.json``
and ``spec.yaml`` (the exact spec text used).
A variant that fails a blocking release check is *withheld*: its run folder holds ``withheld.json``
(the same record, naming the failed checks, without an output) and no protected file. A variant that
passes every blocking check is *eligible*; a wave has one *release*, the eligible variant named by
``<releases>/<survey>/<wave>/release.json`` (:func:`publish_wave_release`): the report's
recommendation when the wave's report is written, or the plan a methodologist promotes
(``sdc promote``). The other eligible variants stay as alternatives.
A manifest records the input file and its hash, the spec and its hash, the package versions, every
protection step with its parameters and seed, the headline risk and loss figures, the release
checks, the run id and the previous release of the same wave and plan, and every safe file with its
SHA-256 and how its record order and ids were made. Earlier releases are never overwritten.
:func:`verify_release` recomputes a release from what its manifest records and tells whether every
file is byte-identical.

The census grid is released the same way (:func:`write_grid_release`): ``<releases>/grid/<run_id>/``
holds every protected table of every region as CSV and a manifest with the census files read, the
parameters and seeds of every step and each table's SHA-256; :func:`verify_grid_release` replays
it. Survey and grid share one digest scheme (SHA-256 of the released file's bytes) and one audit
result, :class:`Verification`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pandas as pd

from sdc_dagster.files import write_atomic
from sdc_dagster.names import inside
from sdc_dagster.sources import file_sha256 as sha256_file

MANIFEST = "manifest.json"
WAVE_RELEASE = "release.json"
WITHHELD = "withheld.json"
PROTECTED = "protected.parquet"
SPEC_COPY = "spec.yaml"
PACKAGES = ("sdc-dagster", "dagster", "pandas", "numpy", "duckdb", "pyarrow", "scipy", "pandera")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def spec_text_sha256(data: bytes) -> str:
    """The hash of a spec file's bytes as :func:`sdc_dagster.spec.load_spec` records it in
    ``SurveySpec.spec_hash``: sha256 of the UTF-8 text with newlines read as ``Path.read_text``
    reads them (universal newlines)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return sha256_bytes(text.encode())


def snapshot_input(path: Path, sha256: str, inputs: Path) -> Path:
    """A content-addressed copy ``<inputs>/<sha256><ext>`` of a wave file, so that an audit can
    re-read exactly what a release was made from even after the landing file is replaced."""
    target = Path(inputs) / f"{sha256}{Path(path).suffix.lower()}"
    if not target.is_file():
        write_atomic(target, Path(path).read_bytes())
    return target


def package_versions() -> dict[str, str]:
    """Installed versions of the packages whose code shapes a release."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """:func:`package_versions`, looked up once per process (every release of a run asks; the code
    a process runs is the code it imported, whatever is installed later)."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, "not installed"))
    return tuple(versions)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The canonical Parquet encoding of a protected frame (the bytes a release stores)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / PROTECTED
        frame.to_parquet(path, index=True)
        return path.read_bytes()


@dataclass(frozen=True)
class Release:
    """One written release: its folder and manifest."""

    folder: Path
    manifest: dict

    @property
    def published(self) -> bool:
        """Whether the protected file was released (False: withheld by a blocking check)."""
        return "withheld" not in self.manifest


def release_root(releases: Path, survey: str, wave: str, plan: str) -> Path:
    """``<releases>/<survey>/<wave>/<plan>``, which must lie inside ``releases`` (:func:`~sdc_dagster.names.inside`)."""
    return inside(releases, survey, wave, plan)


def read_manifest(folder: Path) -> dict:
    """The manifest of a release folder, or the record of a withheld variant."""
    folder = Path(folder)
    return json.loads((folder / (MANIFEST if (folder / MANIFEST).is_file() else WITHHELD)).read_text())


def read_matrices(folder: Path) -> dict[str, pd.DataFrame]:
    """The PRAM transition matrices a release recorded: variable -> matrix (rows = from)."""
    manifest = read_manifest(folder)
    return {
        variable: pd.read_parquet(Path(folder) / name).pivot(index="from", columns="to", values="probability")
        for variable, name in manifest.get("pram_matrices", {}).items()
    }


def _run_folders(releases: Path, survey: str, wave: str, plan: str, records: tuple[str, ...]) -> list[Path]:
    root = release_root(releases, survey, wave, plan)
    folders = [p for p in root.iterdir() if any((p / r).is_file() for r in records)] if root.is_dir() else []
    return sorted(folders, key=lambda p: read_manifest(p)["sequence"])


def list_releases(releases: Path, survey: str, wave: str, plan: str) -> list[Path]:
    """Published release folders of one wave and plan, oldest first (by the manifest's sequence number)."""
    return _run_folders(releases, survey, wave, plan, (MANIFEST,))


def list_decisions(releases: Path, survey: str, wave: str, plan: str) -> list[Path]:
    """Run folders of one wave and plan, released or withheld, oldest first: the last one is the
    outcome of the plan's latest materialisation."""
    return _run_folders(releases, survey, wave, plan, (MANIFEST, WITHHELD))


def write_release(
    releases: Path,
    *,
    survey: str,
    wave: str,
    plan: str,
    run_id: str,
    protected: pd.DataFrame,
    files: dict[str, bytes] | None,
    order: dict | None,
    input_file: Path,
    input_sha256: str,
    spec_path: Path,
    spec_sha256: str,
    plan_definition: dict,
    steps: list[dict],
    risk: dict,
    loss: dict,
    checks: dict,
    matrices: dict[str, pd.DataFrame] | None = None,
    withheld: dict[str, str] | None = None,
    categories: dict | None = None,
) -> Release:
    """Write the safe files (``files``: name -> bytes, :attr:`~sdc_dagster.release_files.SafeFiles.files`,
    ``protected.parquet`` among them; ``order``: how they were cut from ``protected``), the spec
    text, the PRAM transition matrices used (``matrices``: variable -> forward matrix, rows =
    original category) and the manifest of a new release; ``categories``: how the safe files code
    the merged categories (``output.categories``: merged categories per variable with their
    members, released code and label, and the perturbed keys,
    :attr:`~sdc_dagster.release_files.SafeFiles.categories`).

    ``withheld``: the failed blocking checks ({check: why}); when given, the variant is not
    released: no safe file is written and the record is ``withheld.json`` (``output`` null,
    ``withheld`` naming the checks), so that no audit or reader takes it for a release.
    ``sequence`` counts every decision of the wave and plan; ``previous_release`` is the last
    published release. ``spec_sha256`` is the hash of the spec as loaded (``SurveySpec.spec_hash``):
    a spec file changed since then raises, since its copy would not be the spec that was used."""
    earlier = list_releases(releases, survey, wave, plan)
    previous = read_manifest(earlier[-1]) if earlier else None
    decisions = list_decisions(releases, survey, wave, plan)
    folder = release_root(releases, survey, wave, plan) / run_id
    spec_text = Path(spec_path).read_bytes()
    if spec_text_sha256(spec_text) != spec_sha256:
        raise RuntimeError(
            f"{spec_path} changed since the spec was loaded (its hash is no longer {spec_sha256}): the release "
            "would store a spec copy other than the one used; reload the code location and rerun"
        )
    files = {} if withheld else dict(files or {})
    if not withheld and PROTECTED not in files:
        raise ValueError(f"a release needs {PROTECTED} among its files, got {sorted(files)}")
    existed = folder.exists()
    try:
        return _write_release_files(folder, files, spec_text, matrices, withheld, protected, {
            "survey": survey, "wave": wave, "plan": plan, "run_id": run_id,
            "sequence": (read_manifest(decisions[-1])["sequence"] + 1) if decisions else 1,
            "previous_release": previous["run_id"] if previous else None,
            "input": {"file": str(input_file), "sha256": input_sha256},
            "spec": {"file": str(spec_path), "sha256": spec_sha256, "copy": SPEC_COPY, "plan": plan_definition},
            "packages": package_versions(), "steps": steps, "risk": risk, "loss": loss, "checks": checks,
        }, order, categories)
    except BaseException:
        if not existed:  # a run folder is complete or absent (a full disk, say)
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_release_files(folder: Path, files: dict[str, bytes], spec_text: bytes, matrices, withheld,
                         protected: pd.DataFrame, record: dict, order: dict | None,
                         categories: dict | None = None) -> Release:
    """The files of :func:`write_release`, the manifest (or withheld record) last."""
    for name, data in files.items():
        write_atomic(folder / name, data)
    write_atomic(folder / SPEC_COPY, spec_text)
    artifacts, artifact_digests = {}, {}
    for variable, matrix in (matrices or {}).items():
        name = f"pram_{variable}.parquet"
        long = matrix.rename_axis(index="from", columns="to").stack().rename("probability").reset_index()
        data = parquet_bytes(long)
        write_atomic(folder / name, data)
        artifacts[variable] = name
        artifact_digests[name] = sha256_bytes(data)
    manifest = {
        **{key: record[key] for key in ("survey", "wave", "plan", "run_id", "sequence", "previous_release",
                                        "input", "spec", "packages", "steps")},
        "output": None
        if withheld
        else {
            "file": PROTECTED,
            "sha256": sha256_bytes(files[PROTECTED]),
            "records": int(len(protected)),
            "columns": [str(c) for c in protected.columns],
            "files": {name: sha256_bytes(data) for name, data in files.items()},
            "order": order,
            "categories": categories or {"merged": {}, "perturbed_keys": []},
        },
        "risk": record["risk"],
        "loss": record["loss"],
        "checks": record["checks"],
        "pram_matrices": artifacts,
        "pram_matrices_sha256": artifact_digests,
    }
    if withheld:
        manifest["withheld"] = dict(withheld)
    record = WITHHELD if withheld else MANIFEST
    write_atomic(folder / record, json.dumps(manifest, indent=2, sort_keys=True, default=_json_default).encode())
    return Release(folder=folder, manifest=manifest)


def publish_wave_release(releases: Path, survey: str, wave: str, plan: str | None, *, reason: str,
                         report: Path | None = None) -> dict | None:
    """Make the latest eligible variant of ``plan`` the wave's one release (``release.json`` in the
    wave's folder: plan, run id, run folder, why, and the wave's report with its SHA-256, ``report``
    or else the one the previous record names); ``plan=None`` withdraws the wave's release (no
    plan is eligible). Raises ValueError when the plan's latest decision is withheld or missing."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    if plan is None:
        target.unlink(missing_ok=True)
        return None
    decisions = list_decisions(releases, survey, wave, plan)
    if not decisions or not (decisions[-1] / MANIFEST).is_file():
        state = "withheld" if decisions else "never materialised"
        raise ValueError(f"plan {plan!r} of wave {wave!r} is {state}: only an eligible plan (every blocking "
                         "check passed) can be the wave's release")
    folder = decisions[-1]
    record = {"survey": survey, "wave": wave, "plan": plan, "run_id": folder.name,
              "folder": str(folder), "reason": reason}
    if report is not None:
        record["report"] = {"file": str(report), "sha256": sha256_file(report)}
    elif (before := wave_release(releases, survey, wave)) and "report" in before:
        record["report"] = before["report"]
    write_atomic(target, json.dumps(record, indent=2, sort_keys=True).encode())
    return record


def wave_release(releases: Path, survey: str, wave: str) -> dict | None:
    """The wave's release record written by :func:`publish_wave_release`, or None."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    return json.loads(target.read_text()) if target.is_file() else None


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


@dataclass(frozen=True)
class Verification:
    """Outcome of an audit of one release; ``files``: each safe file -> ``"ok"`` or what is wrong."""

    manifest: dict
    stored_file_intact: bool
    input_intact: bool
    byte_identical: bool
    detail: str
    spec_copy_intact: bool = True
    files: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.stored_file_intact and self.input_intact and self.spec_copy_intact and self.byte_identical


def released_files(manifest: dict) -> dict[str, str]:
    """The safe files of a release -> their SHA-256 (a release made before safe files were listed
    has its Parquet file only)."""
    output = manifest["output"]
    return dict(output.get("files") or {output["file"]: output["sha256"]})


def _stored_state(path: Path, digest: str) -> str:
    if not path.is_file():
        return "is missing"
    return "ok" if sha256_file(path) == digest else "differs from the hash in its manifest"


def verify_release(folder: Path, recompute) -> Verification:
    """Check a release: every stored safe file and PRAM matrix still has its recorded hash, the input file and the
    stored spec copy still have theirs, and ``recompute(input_file, spec_copy, manifest) -> {file:
    bytes}`` reproduces every stored file exactly (the recomputation runs in memory, nothing is
    written to the release). The spec copy is what the recomputation reads, so it is hashed itself
    rather than trusting the hash recorded when the spec was loaded. ``detail`` names the files
    that fail."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    expected = released_files(manifest)
    # the PRAM matrices a release records are verified by their digests (they are what the
    # information loss read; the recomputation checks the protected files they produced)
    recorded = {**expected, **manifest.get("pram_matrices_sha256", {})}
    status = {name: _stored_state(folder / name, digest) for name, digest in recorded.items()}
    damaged = {name: state for name, state in status.items() if state != "ok"}
    input_file = Path(manifest["input"]["file"])
    input_ok = input_file.is_file() and sha256_file(input_file) == manifest["input"]["sha256"]
    if not input_ok:
        return Verification(manifest, not damaged, False, False, f"input file {input_file} is missing or changed",
                            files=status)
    spec_copy = folder / manifest["spec"]["copy"]
    spec_ok = spec_copy.is_file() and spec_text_sha256(spec_copy.read_bytes()) == manifest["spec"]["sha256"]
    if not spec_ok:
        return Verification(
            manifest, not damaged, True, False,
            f"the stored spec copy {spec_copy} is missing or differs from the spec hash in its manifest "
            "(edited or damaged)",
            spec_copy_intact=False, files=status,
        )
    recomputed = recompute(input_file, folder / SPEC_COPY, manifest)
    return _compared(folder, manifest, expected, recomputed, status)


def _compared(folder: Path, manifest: dict, expected: dict[str, str], recomputed: dict[str, bytes],
              status: dict[str, str]) -> Verification:
    """The verdict of an audit whose inputs are intact: the stored files' states (``status``) and
    the recomputed bytes compared with every released file."""
    damaged = {name: state for name, state in status.items() if state != "ok"}
    differing = [
        name for name in sorted(set(expected) | set(recomputed))
        if name not in expected or name not in recomputed or not (folder / name).is_file()
        or recomputed[name] != (folder / name).read_bytes()
    ]
    for name in differing:
        if status.get(name, "ok") == "ok":
            status[name] = "differs from its recomputation" if name in expected else "is recomputed but not released"
    if damaged:
        detail = "; ".join(f"the released file {name} {state}" for name, state in damaged.items()) \
            + " (edited or damaged)"
    elif differing:
        detail = f"the recomputed output differs from the released file ({', '.join(differing)})"
    else:
        detail = f"recomputed output is byte-identical to the release ({', '.join(expected)})"
    return Verification(manifest, not damaged, True, not differing, detail, files=status)


# --- Census grid releases ------------------------------------------------------------------------
#: The folder of the grid releases under the releases root (``<releases>/grid/<run_id>/``).
GRID = "grid"


def table_bytes(frame: pd.DataFrame) -> bytes:
    """The canonical CSV text of a published grid table (the bytes a grid release stores and its
    audit recomputes): no index, ``\\n`` line ends, hidden counts as empty fields."""
    return frame.to_csv(index=False, lineterminator="\n").encode()


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
    table file with its SHA-256."""
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
        "inputs": {region: {"file": str(path), "sha256": sha256_file(path)} for region, path in inputs.items()},
        "files": {name: sha256_bytes(data) for name, data in files.items()},
    }
    existed = folder.exists()
    try:
        for name, data in files.items():
            write_atomic(folder / name, data)
        write_atomic(folder / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True, default=_json_default))
    except BaseException:
        if not existed:  # a run folder is complete or absent
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return Release(folder=folder, manifest=manifest)


def verify_grid_release(folder: Path, recompute) -> Verification:
    """Check a grid release: every stored table file still has its recorded hash, every input census
    file still has its own, and ``recompute(manifest) -> {file: bytes}`` reproduces every table file
    exactly (the recomputation writes nothing to the release). ``detail`` names the files that fail."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    expected = dict(manifest["files"])
    status = {name: _stored_state(folder / name, digest) for name, digest in expected.items()}
    changed = [region for region, source in manifest["inputs"].items()
               if not Path(source["file"]).is_file() or sha256_file(Path(source["file"])) != source["sha256"]]
    if changed:
        damaged = any(state != "ok" for state in status.values())
        return Verification(manifest, not damaged, False, False,
                            f"the census file of region(s) {', '.join(changed)} is missing or changed", files=status)
    return _compared(folder, manifest, expected, recompute(manifest), status)
