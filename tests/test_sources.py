"""Reading and validating survey waves: every kind of bad input gives a clear error."""

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from sdc_dagster.classification import classify_variables
from sdc_dagster.errors import SDCInputError
from sdc_dagster.schemas import SchemaViolation
from sdc_dagster.sources import locate_wave_file, read_survey_file
from sdc_dagster.spec import parse_spec
from sdc_dagster.sources import read_wave

SPEC = parse_spec(
    {
        "survey": "toy",
        "missing": [-999],
        "variables": {
            "id": {"role": "record_id"},
            "sex": {"role": "categorical_key", "categories": [1, 2]},
            "region": {"role": "categorical_key"},
            "income": {"role": "continuous_key", "precision": 0.05},
            "w": {"role": "weight"},
        },
    }
)


def toy(n=6):
    return pd.DataFrame(
        {
            "id": np.arange(1, n + 1),
            "sex": [1, 2] * (n // 2),
            "region": [1, 1, 2, 2, 3, 3][:n],
            "income": np.linspace(1000, 2000, n),
            "w": [10.0] * n,
        }
    )


def land(tmp_path: Path, frame: pd.DataFrame, wave="w1", ext="csv") -> Path:
    folder = tmp_path / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{wave}.{ext}"
    if ext == "csv":
        frame.to_csv(path, index=False)
    elif ext == "parquet":
        frame.to_parquet(path)
    elif ext == "sav":
        pyreadstat.write_sav(frame, str(path))
    elif ext == "dta":
        pyreadstat.write_dta(frame, str(path))
    return path


@pytest.mark.parametrize("ext", ["csv", "parquet", "sav", "dta"])
def test_reads_every_format(tmp_path, ext):
    land(tmp_path, toy(), ext=ext)
    wave = read_wave(SPEC, "w1", tmp_path)
    assert len(wave.data) == 6 and list(wave.data["sex"]) == [1, 2] * 3
    assert len(wave.sha256) == 64


def test_missing_codes_become_na(tmp_path):
    frame = toy()
    frame.loc[2, "region"] = -999
    land(tmp_path, frame)
    data = read_wave(SPEC, "w1", tmp_path).data
    assert data["region"].isna().tolist() == [False, False, True, False, False, False]


def test_raw_file_is_not_modified(tmp_path):
    frame = toy()
    frame.loc[2, "region"] = -999
    path = land(tmp_path, frame)
    before = path.read_bytes()
    read_wave(SPEC, "w1", tmp_path)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "mutate, pattern",
    [
        (lambda f: f.drop(columns="region"), r"column 'region' named in the spec is missing"),
        (lambda f: f.assign(w=["x", 1, 1, 1, 1, 1]), r"column 'w' breaks rule 'values must be numeric'.*rows \(1-based\): 1"),
        (lambda f: f.assign(w=[1, 1, -2, 1, 1, 1]), r"column 'w' breaks rule 'weights must be > 0'.*rows \(1-based\): 3"),
        (lambda f: f.assign(w=[1, 1, 1, 0, 1, 1]), r"column 'w' breaks rule 'weights must be > 0'.*rows \(1-based\): 4"),
        (lambda f: f.assign(id=[1, 2, 3, 3, 5, 6]), r"column 'id' breaks rule 'field_uniqueness'"),
        (lambda f: f.assign(sex=[1, 2, 1, 9, 1, 2]), r"column 'sex' breaks rule 'categories must be one of \[1, 2\]'.*rows \(1-based\): 4; values: 9"),
        (lambda f: f.assign(income=["a", 1, 2, 3, 4, 5]), r"column 'income' breaks rule 'values must be numeric'"),
    ],
)
def test_bad_data_names_column_and_rule(tmp_path, mutate, pattern):
    land(tmp_path, mutate(toy()))
    with pytest.raises(SchemaViolation, match=pattern):
        read_wave(SPEC, "w1", tmp_path)


def test_empty_and_unreadable_files(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "empty.csv").write_text("")
    with pytest.raises(SDCInputError, match="empty.csv: the file is empty"):
        read_wave(SPEC, "empty", tmp_path)
    (folder / "header.csv").write_text("id,sex,region,income,w\n")
    with pytest.raises(SDCInputError, match="holds no records"):
        read_wave(SPEC, "header", tmp_path)
    (folder / "broken.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(SDCInputError, match="broken.parquet: cannot be read as parquet"):
        read_wave(SPEC, "broken", tmp_path)
    (folder / "garbled.sav").write_bytes(b"garbage")
    with pytest.raises(SDCInputError, match="garbled.sav: cannot be read as spss"):
        read_wave(SPEC, "garbled", tmp_path)
    (folder / "garbled.csv").write_text("id\n1\n")
    with pytest.raises(SDCInputError, match="two files for one wave"):
        read_wave(SPEC, "garbled", tmp_path)


def test_missing_wave_file(tmp_path):
    with pytest.raises(SDCInputError, match="wave 'w9' of survey 'toy': no file"):
        locate_wave_file(SPEC, "w9", tmp_path)
    with pytest.raises(SDCInputError, match="unknown file type"):
        read_survey_file(tmp_path / "x.xlsx")


def test_classification_suggestions():
    frame = toy(6).assign(name=list("abcdef"), flag=[1, 1, 1, 1, 1, 2])
    table = classify_variables(frame, SPEC).set_index("variable")
    assert table.loc["name", "suggested_role"] == "direct_identifier"
    assert table.loc["name", "role"] == "unspecified"
    assert table.loc["id", "suggested_role"] is None  # the record id is expected to be unique
    assert table.loc["sex", "n_distinct"] == 2 and table.loc["sex", "suggested_scale"] == "nominal"
    assert table.loc["flag", "unique_share"] == pytest.approx(1 / 6)
    many = pd.DataFrame({"v": np.arange(100.0), "sex": [1, 2] * 50, "region": 1, "income": 1.0, "w": 1.0, "id": range(100)})
    assert classify_variables(many, SPEC).set_index("variable").loc["v", "suggested_scale"] == "continuous"
