"""Stage 1's value: the wave with the snapshot and digest its releases record (pipeline/ingest)."""

import hashlib
import pickle

import pandas as pd

from sdc_dagster.pipeline.ingest import ingest_wave
from sdc_dagster.spec import parse_spec

SPEC = parse_spec({"survey": "toy", "variables": {"id": {"role": "record_id"}, "sex": {"role": "categorical_key"}}})
TEXT = b"id,sex\n1,1\n2,2\n3,1\n4,2\n5,1\n6,2\n"


def test_a_wave_carries_its_snapshot_and_the_sha256_of_the_file_read(tmp_path):
    landing, inputs = tmp_path / "landing", tmp_path / "inputs"
    (landing / "toy").mkdir(parents=True)
    (landing / "toy" / "w1.csv").write_bytes(TEXT)
    wave = ingest_wave(SPEC, "w1", landing, inputs)
    digest = hashlib.sha256(TEXT).hexdigest()
    assert wave.source.file == landing / "toy" / "w1.csv"
    assert wave.source.sha256 == digest
    # content-addressed: the landing file may be replaced later
    assert wave.source.snapshot == inputs / f"{digest}.csv"
    assert wave.source.snapshot.read_bytes() == TEXT
    assert wave.format == "csv"
    assert wave.data["sex"].tolist() == [1, 2, 1, 2, 1, 2]
    # the IO manager stores the data as Parquet beside the whole value
    assert list(wave.stored_frames()) == [""] and wave.stored_frames()[""] is wave.data
    assert pickle.loads(pickle.dumps(wave)).source == wave.source


def test_a_replaced_landing_file_gets_a_snapshot_of_its_own(tmp_path):
    landing, inputs = tmp_path / "landing", tmp_path / "inputs"
    (landing / "toy").mkdir(parents=True)
    (landing / "toy" / "w1.csv").write_bytes(TEXT)
    first = ingest_wave(SPEC, "w1", landing, inputs)
    (landing / "toy" / "w1.csv").write_bytes(TEXT.replace(b"6,2", b"6,1"))
    second = ingest_wave(SPEC, "w1", landing, inputs)
    assert first.source.snapshot != second.source.snapshot
    assert first.source.snapshot.read_bytes() == TEXT  # the first release's input is still there
    assert pd.read_csv(second.source.snapshot)["sex"].tolist() == [1, 2, 1, 2, 1, 1]
