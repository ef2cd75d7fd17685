"""Stage 1 of the survey chain: a wave as read and validated, with the snapshot its releases record.

The wave's file is read once (:func:`~sdc_dagster.spec.sources.read_wave`: located, read, missing codes
as NA, validated by the spec's schema) and copied to a content-addressed snapshot
(:func:`~sdc_dagster.releases.digests.snapshot_input`). The later stages receive the snapshot and its
SHA-256 with the data, as one value (:class:`RawWave`), so that a release records the very file its
variant was made from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sdc_dagster.releases.digests import WaveSnapshot, snapshot_input
from sdc_dagster.spec.sources import read_wave
from sdc_dagster.spec import SurveySpec


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class RawWave:
    """One wave as read (``data``, validated, columns in spec order), the format its file was read
    as and where it came from (``source``: the landing file, its snapshot and their SHA-256)."""

    data: pd.DataFrame
    format: str
    source: WaveSnapshot

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python: the data."""
        return {"": self.data}


def ingest_wave(spec: SurveySpec, wave: str, landing: Path, inputs: Path) -> RawWave:
    """Read wave ``wave`` of the survey from ``landing`` and snapshot its file under ``inputs``."""
    read = read_wave(spec, wave, landing)
    return RawWave(data=read.data, format=read.format, source=snapshot_input(read.path, read.sha256, inputs))
