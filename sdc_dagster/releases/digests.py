"""The digests of a release: SHA-256 of every released and input file, the canonical bytes that are
hashed, the content-addressed snapshot of the wave read, and the package versions a manifest records.

A release is reproducible when its audit recomputes the same bytes (:mod:`sdc_dagster.releases.replay`),
so every file is hashed as written: SHA-256 of the file's bytes (FIPS 180-4; a file on disk by
:func:`sdc_dagster.spec.sources.file_sha256`, the data version of a raw wave), a spec by its text with
universal newlines (the hash :func:`sdc_dagster.spec.load_spec` records).
"""

from __future__ import annotations

import functools
import hashlib
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd

from sdc_dagster.files import write_atomic

#: The packages whose code shapes a release (their versions go into every manifest).
PACKAGES = ("sdc-dagster", "dagster", "pandas", "numpy", "duckdb", "pyarrow", "scipy", "pandera")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def spec_text_sha256(data: bytes) -> str:
    """The hash of a spec file's bytes as :func:`sdc_dagster.spec.load_spec` records it in
    ``SurveySpec.spec_hash``: sha256 of the UTF-8 text with newlines read as ``Path.read_text``
    reads them (universal newlines)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return sha256_bytes(text.encode())


@dataclass(frozen=True)
class WaveSnapshot:
    """The raw wave a release is made from, as ``raw_microdata`` read it: the landing file
    (``file``), its content-addressed copy (``snapshot``, what a manifest records and an audit
    re-reads) and their SHA-256."""

    file: Path
    snapshot: Path
    sha256: str


def snapshot_input(path: Path, sha256: str, inputs: Path) -> WaveSnapshot:
    """A content-addressed copy ``<inputs>/<sha256><ext>`` of a wave file, so that an audit can
    re-read exactly what a release was made from even after the landing file is replaced."""
    target = Path(inputs) / f"{sha256}{Path(path).suffix.lower()}"
    if not target.is_file():
        write_atomic(target, Path(path).read_bytes())
    return WaveSnapshot(file=Path(path), snapshot=target, sha256=sha256)


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
        path = Path(tmp) / "protected.parquet"
        frame.to_parquet(path, index=True)
        return path.read_bytes()


def table_bytes(frame: pd.DataFrame) -> bytes:
    """The canonical CSV text of a published grid table (the bytes a grid release stores and its
    audit recomputes): no index, ``\\n`` line ends, hidden counts as empty fields."""
    return frame.to_csv(index=False, lineterminator="\n").encode()
