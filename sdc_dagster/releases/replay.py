"""Replaying a release (``sdc audit``): recompute its files from what its manifest records and compare
them byte for byte with the stored ones (SPEC §8, lineage).

A survey release is recomputed from its input snapshot, the spec copy it stored and the plan it
records (:func:`recompute_release`, checked by :func:`verify_release`); a grid release from its census
files with the same step functions as the assets, in a scratch folder (:func:`replay_grid_release`,
checked by :func:`verify_grid_release`; :func:`audit_grid_release` for ``sdc audit grid``). Every
stored file is checked against its SHA-256 first (:mod:`sdc_dagster.releases.digests`); survey and grid
share one audit result, :class:`Verification`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sdc_dagster.pipeline.grid import national_reference_counts, national_totals
from sdc_dagster.pipeline.grid_swap import swap_regions, swapped_region_file
from sdc_dagster.pipeline.protection import protect
from sdc_dagster.releases.digests import spec_text_sha256, table_bytes
from sdc_dagster.releases.files import safe_files
from sdc_dagster.releases.grid import list_grid_releases, protect_region
from sdc_dagster.releases.manifest import SPEC_COPY, read_manifest
from sdc_dagster.spec.sources import file_sha256, read_wave_file
from sdc_dagster.spec import Plan, load_spec
from sdc_dagster.spec.grid import parse_grid_spec


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
    return "ok" if file_sha256(path) == digest else "differs from the hash in its manifest"


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
    input_ok = input_file.is_file() and file_sha256(input_file) == manifest["input"]["sha256"]
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


def recompute_release(input_file: Path, spec_copy: Path, manifest: dict) -> dict[str, bytes]:
    """Recompute a release's safe files (file name -> bytes, :func:`~sdc_dagster.releases.files.safe_files`)
    from what its manifest records: the input snapshot, the spec text used, the wave and the plan
    (whose seed is in the spec; step seeds and the published order's seed derive from it, the
    survey, the wave and the plan name)."""
    spec = load_spec(spec_copy)
    data = read_wave_file(spec, input_file)
    recorded = manifest["spec"]["plan"]
    # the searched plan is not in the spec: it is replayed from the steps and seed its manifest records
    plan = spec.plan(manifest["plan"]) if manifest["plan"] in {p.name for p in spec.plans} else Plan(
        name=manifest["plan"], steps=tuple(recorded["steps"]), k=recorded["k"],
        random_state=recorded["random_state"], description=recorded.get("description", ""))
    protected = protect(data, spec, plan, wave=manifest["wave"]).data
    return safe_files(protected, spec, plan, wave=manifest["wave"], source=input_file, original=data).files


def verify_grid_release(folder: Path, recompute, *, inputs: str = "the census file of region(s)") -> Verification:
    """Check a grid release: every stored table file still has its recorded hash, every input census
    file still has its own, and ``recompute(manifest) -> {file: bytes}`` reproduces every table file
    exactly (the recomputation writes nothing to the release). ``detail`` names the files that fail
    (``inputs``: how it names the manifest's inputs; a table set's release is checked the same way,
    :mod:`sdc_dagster.releases.tables`)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    expected = dict(manifest["files"])
    status = {name: _stored_state(folder / name, digest) for name, digest in expected.items()}
    changed = [region for region, source in manifest["inputs"].items()
               if not Path(source["file"]).is_file() or file_sha256(Path(source["file"])) != source["sha256"]]
    if changed:
        damaged = any(state != "ok" for state in status.values())
        return Verification(manifest, not damaged, False, False,
                            f"{inputs} {', '.join(changed)} is missing or changed", files=status)
    return _compared(folder, manifest, expected, recompute(manifest), status)


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
                out[f"{region}/{name}.csv"] = table_bytes(frame)
    return out


def audit_grid_release(releases: Path, *, run: str | None = None) -> Verification | None:
    """Verify the latest grid release (or run ``run``'s) by replaying it; None when there is none."""
    folders = [f for f in list_grid_releases(releases) if run is None or f.name == run]
    return verify_grid_release(folders[-1], replay_grid_release) if folders else None
