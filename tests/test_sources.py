"""Reading and validating survey waves: every kind of bad input gives a clear error."""

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from sdc_dagster.spec.classification import classify_variables
from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec.schemas import SchemaViolation
from sdc_dagster.spec.sources import file_format, locate_wave_file, read_survey_file
from sdc_dagster.spec import parse_spec
from sdc_dagster.spec.sources import read_wave

TOY = {
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
SPEC = parse_spec(TOY)


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
    with pytest.raises(SDCInputError, match="x.foo: unknown file type '.foo'"):
        read_survey_file(tmp_path / "x.foo")


def test_classification_suggestions():
    frame = toy(6).assign(name=list("abcdef"), flag=[1, 1, 1, 1, 1, 2])
    table = classify_variables(frame, SPEC).set_index("variable")
    assert table.loc["name", "suggested_role"] == "direct_identifier"
    assert table.loc["name", "role"] == "unspecified"
    assert table.loc["id", "suggested_role"] is None  # the record id is expected to be unique
    assert table.loc["sex", "n_distinct"] == 2 and table.loc["sex", "suggested_scale"] == "nominal"
    assert table.loc["flag", "unique_share"] == pytest.approx(1 / 6)
    women = classify_variables(toy(6).assign(sex=2.0), SPEC).set_index("variable")
    assert women.loc["sex", "note"] == "listed categories absent from this wave: [1]"
    assert table.loc["sex", "note"] == ""
    many = pd.DataFrame({"v": np.arange(100.0), "sex": [1, 2] * 50, "region": 1, "income": 1.0, "w": 1.0, "id": range(100)})
    assert classify_variables(many, SPEC).set_index("variable").loc["v", "suggested_scale"] == "continuous"


# --- Deliveries in any format, whatever the spec's source.format ------------------------------------

CSV_SPEC = parse_spec({**TOY, "source": {"format": "csv", "options": {"sep": ";"}}})


@pytest.mark.parametrize("ext", ["sav", "zsav", "dta", "xpt", "parquet"])
def test_wave_is_read_by_its_extension_not_the_spec_format(tmp_path, ext):
    # The spec says csv (with a csv-only option); a .sav/.dta/... delivery is still read by its
    # extension (it used to fail with a UnicodeDecodeError from the CSV reader).
    folder = tmp_path / "toy"
    folder.mkdir()
    path = folder / f"w1.{ext}"
    frame = toy()
    if ext in ("sav", "zsav"):
        pyreadstat.write_sav(frame, str(path), compress=ext == "zsav")
    elif ext == "dta":
        pyreadstat.write_dta(frame, str(path))
    elif ext == "xpt":
        pyreadstat.write_xport(frame, str(path))
    else:
        frame.to_parquet(path)
    wave = read_wave(CSV_SPEC, "w1", tmp_path)
    assert wave.format == {"sav": "spss", "zsav": "spss", "dta": "stata", "xpt": "xport", "parquet": "parquet"}[ext]
    assert wave.data["sex"].tolist() == [1, 2] * 3
    assert wave.data["income"].tolist() == pytest.approx(np.linspace(1000, 2000, 6).tolist())


def test_spec_options_apply_to_the_spec_format(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    toy().to_csv(folder / "w1.csv", sep=";", index=False)
    assert read_wave(CSV_SPEC, "w1", tmp_path).data["w"].tolist() == [10.0] * 6


def test_file_without_extension_is_read_in_the_spec_format(tmp_path):
    toy().to_csv(tmp_path / "delivery_w1", sep=";", index=False)
    source = {"format": "csv", "options": {"sep": ";"}, "path": "delivery_{wave}"}
    spec = parse_spec({**TOY, "source": source}, spec_path=tmp_path / "toy.yaml")
    wave = read_wave(spec, "w1", tmp_path / "landing")
    assert wave.format == "csv" and len(wave.data) == 6
    assert file_format(Path("x.SAV")) == "spss" and file_format(Path("x.sas7bdat")) == "sas"
    with pytest.raises(SDCInputError, match=r"x: unknown file type '\(no extension\)'.*source.format"):
        file_format(Path("x"))


def test_read_errors_name_file_and_format(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "w1.dta").write_bytes(b"not stata")
    with pytest.raises(SDCInputError, match=r"w1.dta: cannot be read as stata"):
        read_wave(CSV_SPEC, "w1", tmp_path)
    (folder / "w2.sas7bdat").write_bytes(b"not sas")
    with pytest.raises(SDCInputError, match=r"w2.sas7bdat: cannot be read as sas"):
        read_wave(CSV_SPEC, "w2", tmp_path)
    # issue 34: a Latin-1 (Windows-1252) file is read in its encoding, no longer refused
    # (three records: a file of fewer records than the spec's k = 3 is refused, issue 38)
    (folder / "w3.csv").write_bytes("id;sex;region;income;w\n1;1;Zürich;1;1\n2;2;Zürich;1;1\n3;1;Genève;1;1\n"
                                    .encode("latin-1"))
    assert read_wave(CSV_SPEC, "w3", tmp_path).data["region"].tolist() == ["Zürich", "Zürich", "Genève"]
    with pytest.raises(SDCInputError, match=r"w3.csv: unknown encoding 'klingon' in source.options.encoding"):
        read_survey_file(folder / "w3.csv", options={"encoding": "klingon"})
    (folder / "w4.csv").write_text("")
    with pytest.raises(SDCInputError, match=r"w4.csv: the file is empty \(read as csv\)"):
        read_wave(CSV_SPEC, "w4", tmp_path)


# --- Values as the file wrote them --------------------------------------------------------------------


def test_weight_given_as_text_names_rule_text_and_row(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "w1.csv").write_text("id,sex,region,income,w\n1,1,1,1000,10\n2,2,1,1100,n/a\n3,1,2,1200,-999\n4,2,2,1300,10\n")
    with pytest.raises(SchemaViolation) as err:
        read_wave(SPEC, "w1", tmp_path)
    message = str(err.value)
    assert "column 'w' breaks rule 'not_nullable'; first offending rows (1-based): 2, 3" in message
    assert "values: nan (file text 'n/a'), nan (file text '-999')" in message


def test_unparseable_numbers_are_reported_once_with_their_text(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    # One bad cell makes the CSV reader keep the whole column as text; only that cell is reported.
    (folder / "w1.csv").write_text(
        "id,sex,region,income,w\n1,1,1,1000,10\n2,2,1,1100,ten\n3,x,2,12OO,10\n4,2,2,1300,10\n"
    )
    with pytest.raises(SchemaViolation) as err:
        read_wave(SPEC, "w1", tmp_path)
    message = str(err.value)
    assert "column 'w' breaks rule 'values must be numeric'; first offending rows (1-based): 2; values: 'ten'" in message
    assert "column 'sex' breaks rule 'values must be numeric'; first offending rows (1-based): 3; values: 'x'" in message
    assert "column 'income' breaks rule 'values must be numeric'; first offending rows (1-based): 3; values: '12OO'" in message
    assert "categories must be one of" not in message and "weights must be > 0" not in message


def test_numeric_text_that_parses_becomes_numbers(tmp_path):
    frame = toy().astype({"w": str, "sex": str})  # a delivery that stored numbers as text
    land(tmp_path, frame, ext="parquet")
    data = read_wave(SPEC, "w1", tmp_path).data
    assert data["w"].dtype == "float64" and data["w"].tolist() == [10.0] * 6
    assert data["sex"].tolist() == [1, 2] * 3
    assert data["region"].tolist() == [1, 1, 2, 2, 3, 3]


# --- Key columns, categories, column order --------------------------------------------------------------


@pytest.mark.parametrize("column, value", [("region", -999), ("region", np.nan), ("income", -999)])
def test_entirely_missing_key_is_rejected(tmp_path, column, value):
    land(tmp_path, toy().assign(**{column: value}))
    with pytest.raises(SchemaViolation, match=rf"column '{column}' breaks rule 'not entirely missing'"):
        read_wave(SPEC, "w1", tmp_path)


def test_all_broken_rules_are_reported_together(tmp_path):
    land(tmp_path, toy().assign(region=-999, w=[1, 1, 0, 1, 1, 1]))
    with pytest.raises(SchemaViolation) as err:
        read_wave(SPEC, "w1", tmp_path)
    assert "column 'region' breaks rule 'not entirely missing'" in str(err.value)
    assert "column 'w' breaks rule 'weights must be > 0'; first offending rows (1-based): 3" in str(err.value)


def test_categories_are_a_rule_absent_categories_and_new_codes_are_valid(tmp_path):
    # sex lists [1, 2]: a wave of women only is valid; region lists nothing: wave 2 brings code 7.
    land(tmp_path, toy().assign(sex=2), wave="w1")
    land(tmp_path, toy().assign(region=[1, 1, 2, 2, 7, 7]), wave="w2")
    assert read_wave(SPEC, "w1", tmp_path).data["sex"].eq(2).all()
    assert read_wave(SPEC, "w2", tmp_path).data["region"].max() == 7


def test_reordered_columns_give_the_same_frame_and_bytes(tmp_path):
    frame = toy().assign(note=list("abcdef"), extra=1.5)
    land(tmp_path, frame, wave="w1")
    land(tmp_path, frame[["w", "extra", "income", "note", "region", "id", "sex"]], wave="w2")
    first, second = read_wave(SPEC, "w1", tmp_path).data, read_wave(SPEC, "w2", tmp_path).data
    assert list(first.columns) == ["id", "sex", "region", "income", "w", "extra", "note"]
    pd.testing.assert_frame_equal(first, second)
    first.to_parquet(tmp_path / "a.parquet")
    second.to_parquet(tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()

