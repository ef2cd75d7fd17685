"""Release manifests: what produced a protected file, and the proof that it can be produced again.

Every protected output is written as a *release*: ``<releases>/<survey>/<wave>/<plan>/<run_id>/``
holding the safe files (``protected.parquet`` always, and the wave's own format and the spec's
``release.formats``, shuffled and with new ids: :mod:`sdc_dagster.releases.files`), ``manifest.json``
and ``spec.yaml`` (the exact spec text used).
A variant that fails a blocking release check is *withheld*: its run folder holds ``withheld.json``
(the same record, naming the failed checks, without an output) and no protected file. A variant that
passes every blocking check is *eligible*; a wave has one *release*, the eligible variant named by
``<releases>/<survey>/<wave>/release.json`` (:mod:`sdc_dagster.releases.wave`).
A manifest records the input file and its hash, the spec and its hash, the package versions, every
protection step with its parameters and seed, the headline risk and loss figures, the release
checks, the run id and the previous release of the same wave and plan, and every safe file with its
SHA-256 (:mod:`sdc_dagster.releases.digests`) and how its record order and ids were made. Earlier
releases are never overwritten. :mod:`sdc_dagster.releases.replay` recomputes a release from what its
manifest records and tells whether every file is byte-identical.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sdc_dagster.files import exclusive_lock, write_atomic
from sdc_dagster.names import inside
from sdc_dagster.releases.categories import step_columns, step_parameters
from sdc_dagster.releases.digests import WaveSnapshot, package_versions, parquet_bytes, sha256_bytes, spec_text_sha256
from sdc_dagster.releases.files import PROTECTED, SafeFiles

MANIFEST = "manifest.json"
#: The lock file of a folder of releases: its sequence number is read and its manifest written under
#: an exclusive lock of it (:func:`~sdc_dagster.files.exclusive_lock`), so that two runs of the same
#: wave at once cannot take the same number after the same previous release.
SEQUENCE_LOCK = ".sequence.lock"
WITHHELD = "withheld.json"
SPEC_COPY = "spec.yaml"


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


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class ReleaseRecord:
    """Everything one release decision of a plan's variant records (:func:`write_release`).

    ``source``: the raw wave read (its snapshot and SHA-256, from ``raw_microdata``); ``spec_path``
    and ``spec_sha256``: the spec file and its hash as loaded (``SurveySpec.spec_hash``);
    ``plan_definition``: the plan's steps, k, seed and description (replayed when the spec does not
    name the plan); ``steps``: the steps as run, with their seeds; ``risk``, ``loss``, ``checks``:
    the headline figures and the release checks' outcomes; ``safe``: the published files
    (:class:`~sdc_dagster.releases.files.SafeFiles`: ``protected.parquet`` among them, their order
    and coding), None for a withheld variant; ``matrices``: the PRAM transition matrices used
    (variable -> forward matrix, rows = original category); ``withheld``: the failed blocking
    checks ({check: why}), None when every blocking check passed."""

    survey: str
    wave: str
    plan: str
    run_id: str
    protected: pd.DataFrame
    source: WaveSnapshot
    spec_path: Path
    spec_sha256: str
    plan_definition: dict
    steps: list[dict]
    risk: dict
    loss: dict
    checks: dict
    safe: SafeFiles | None = None
    matrices: dict[str, pd.DataFrame] = field(default_factory=dict)
    withheld: dict[str, str] | None = None


def write_release(releases: Path, record: ReleaseRecord) -> Release:
    """Write the safe files, the spec text, the PRAM transition matrices and the manifest of a new
    release of ``record`` under ``releases``; the manifest's ``output.categories`` is how the safe
    files code the merged categories (merged categories per variable with their members, released
    code and label, and the perturbed keys, :attr:`~sdc_dagster.releases.files.SafeFiles.categories`).

    A withheld record (``record.withheld``: the failed blocking checks) is not released: no safe
    file is written and the record is ``withheld.json`` (``output`` null, ``withheld`` naming the
    checks), so that no audit or reader takes it for a release. ``sequence`` counts every decision
    of the wave and plan (read and written under the lock ``.<plan>.sequence.lock`` in the wave's folder,
    :data:`SEQUENCE_LOCK`); ``previous_release`` is the
    last published release. A spec file changed
    since it was loaded (its hash is no longer ``record.spec_sha256``) raises, since its copy would
    not be the spec that was used."""
    spec_text = Path(record.spec_path).read_bytes()
    if spec_text_sha256(spec_text) != record.spec_sha256:
        raise RuntimeError(
            f"{record.spec_path} changed since the spec was loaded (its hash is no longer {record.spec_sha256}): "
            "the release would store a spec copy other than the one used; reload the code location and rerun"
        )
    # beside the plan's folder (its wave's folder holds files beside the plans' folders): the plan's
    # folder lists run folders only
    lock = inside(releases, record.survey, record.wave) / f".{record.plan}{SEQUENCE_LOCK}"
    with exclusive_lock(lock):
        return _write_release(releases, record, spec_text)


def _write_release(releases: Path, record: ReleaseRecord, spec_text: bytes) -> Release:
    """:func:`write_release` with the spec's text, under the lock of the wave and plan's releases."""
    survey, wave, plan = record.survey, record.wave, record.plan
    earlier = list_releases(releases, survey, wave, plan)
    previous = read_manifest(earlier[-1]) if earlier else None
    decisions = list_decisions(releases, survey, wave, plan)
    folder = release_root(releases, survey, wave, plan) / record.run_id
    safe = None if record.withheld else record.safe
    if not record.withheld and (safe is None or PROTECTED not in safe.files):
        raise ValueError(f"a release needs {PROTECTED} among its files, got {sorted(safe.files) if safe else []}")
    existed = folder.exists()
    try:
        return _write_release_files(folder, record, safe, spec_text, {
            "survey": survey, "wave": wave, "plan": plan, "run_id": record.run_id,
            "sequence": (read_manifest(decisions[-1])["sequence"] + 1) if decisions else 1,
            "previous_release": previous["run_id"] if previous else None,
            "input": {"file": str(record.source.snapshot), "sha256": record.source.sha256},
            "spec": {"file": str(record.spec_path), "sha256": record.spec_sha256, "copy": SPEC_COPY,
                     "plan": record.plan_definition},
            "packages": package_versions(), "steps": record.steps,
        })
    except BaseException:
        if not existed:  # a run folder is complete or absent (a full disk, say)
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_release_files(folder: Path, record: ReleaseRecord, safe: SafeFiles | None, spec_text: bytes,
                         header: dict) -> Release:
    """The files of :func:`write_release` (``header``: the manifest's fields before ``output``), the
    manifest (or withheld record) last."""
    files = safe.files if safe is not None else {}
    for name, data in files.items():
        write_atomic(folder / name, data)
    write_atomic(folder / SPEC_COPY, spec_text)
    artifacts, artifact_digests = {}, {}
    for variable, matrix in (record.matrices or {}).items():
        name = f"pram_{variable}.parquet"
        long = matrix.rename_axis(index="from", columns="to").stack().rename("probability").reset_index()
        data = parquet_bytes(long)
        write_atomic(folder / name, data)
        artifacts[variable] = name
        artifact_digests[name] = sha256_bytes(data)
    manifest = {
        **header,
        "output": None
        if safe is None
        else {
            "file": PROTECTED,
            "sha256": sha256_bytes(files[PROTECTED]),
            "records": int(len(record.protected)),
            "columns": [str(c) for c in record.protected.columns],
            "files": {name: sha256_bytes(data) for name, data in files.items()},
            "order": safe.order,
            "categories": safe.categories,
            "keys_not_released": [{"variable": variable, "released_as": why}
                                  for variable, why in keys_not_released(record.protected, record.steps).items()],
        },
        "risk": record.risk,
        "loss": record.loss,
        "checks": record.checks,
        "pram_matrices": artifacts,
        "pram_matrices_sha256": artifact_digests,
    }
    if record.withheld:
        manifest["withheld"] = dict(record.withheld)
    name = WITHHELD if record.withheld else MANIFEST
    write_atomic(folder / name, manifest_bytes(manifest))
    return Release(folder=folder, manifest=manifest)


#: How a variable a plan's steps write into is not released (:func:`keys_not_released`).
WITHHELD_VARIABLE, ONE_CATEGORY, ALL_SUPPRESSED = "withheld", "one category", "every value suppressed"


def keys_not_released(protected: pd.DataFrame, steps: Sequence[Mapping]) -> dict[str, str]:
    """``{variable: how}`` for each variable a plan's ``steps`` (as the spec writes them or as run)
    leave without information in the released file ``protected``: ``"withheld"`` (removed by a
    ``remove_variables`` step: not in the file), ``"one category"`` (written into by a step, e.g. a
    global recode to its hierarchy's top, and released with a single distinct value: every record
    reads the same, sdcMicro's and ARX's fully generalised attribute, "*" in ARX) or ``"every value
    suppressed"`` (written into, and no value left). A published file that releases a key so
    carries none of its information, whatever the composite utility says (Hundepool et al. 2012,
    "Statistical Disclosure Control", §3.4 on information loss per variable); the manifest
    records it (``output.keys_not_released``) and the report's decision box names it."""
    removed, written = {}, {}
    for step in steps:
        columns = (step_parameters(step).get("variables") if step.get("method") == "remove_variables"
                   else step_columns(step))
        for column in [columns] if isinstance(columns, str) else list(columns or ()):
            (removed if step.get("method") == "remove_variables" else written)[column] = True
    out = {column: WITHHELD_VARIABLE for column in removed if column not in protected.columns}
    present = [c for c in written if c in protected.columns and c not in out]
    distinct = protected[present].nunique(dropna=True) if present else pd.Series(dtype="int64")
    out.update({column: ONE_CATEGORY if n == 1 else ALL_SUPPRESSED for column, n in distinct.items() if n <= 1})
    return out


def manifest_bytes(manifest: dict) -> bytes:
    """The bytes of a manifest as written: JSON, keys sorted, indented by two, NumPy scalars as
    numbers, sets and tuples as lists, anything else as its text."""
    return json.dumps(manifest, indent=2, sort_keys=True, default=_json_default).encode()


def release_provenance(folder: Path, manifest: dict) -> dict:
    """Where a plan's output comes from, as the report shows it: its seed, run, hashes of the spec,
    input and output, package versions, the path of its manifest (or withheld record) and the
    ``sdc audit`` command that recomputes a released output and compares it byte by byte."""
    released = "withheld" not in manifest
    record = Path(folder) / (MANIFEST if released else WITHHELD)
    command = (f"sdc audit {manifest['wave']} --survey {manifest['survey']} --plan {manifest['plan']} "
               f"--run {manifest['run_id']}")
    return {
        "seed": manifest["spec"]["plan"].get("random_state"),
        "run_id": manifest["run_id"],
        "spec_sha256": manifest["spec"]["sha256"],
        "input_sha256": manifest["input"]["sha256"],
        "output_sha256": manifest["output"]["sha256"] if released else None,
        "packages": dict(manifest.get("packages", {})),
        "record": str(record),
        "audit_command": command if released else None,
    }


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


