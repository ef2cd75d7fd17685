"""Safe files of a release: the office's formats with their labels, a shuffled record order and
new ids, and an audit that verifies every file byte for byte."""

import dataclasses
import io
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from sdc_dagster.pipeline import protection
from sdc_dagster.releases import files as release_files
from sdc_dagster.releases.digests import WaveSnapshot
from sdc_dagster.releases.manifest import ReleaseRecord, write_release
from sdc_dagster.releases.replay import recompute_release, verify_release
from sdc_dagster.spec import SpecError, load_spec, parse_spec
from sdc_dagster.spec.sources import file_sha256, read_wave_file

N_HOUSEHOLDS = 300
SPEC = {
    "survey": "lfs",
    "variables": {
        "pid": {"role": "record_id"},
        "hid": {"role": "household_id"},
        "sex": {"role": "categorical_key", "categories": [1, 2]},
        "agegr": {"role": "categorical_key", "missing": [99]},
        "tag": {"role": "other"},
    },
    "release": {"formats": ["stata", "csv"]},
    "plans": {"recode_age": {"steps": [{"method": "recode", "variable": "agegr", "mapping": {5: 4}}]}},
}


def wave() -> pd.DataFrame:
    """Households 1..300 of four persons, persons 1..1200 in file order, as offices number them;
    ``tag`` tells which source record a released row is."""
    n = 4 * N_HOUSEHOLDS
    rows = np.arange(n)
    agegr = (rows * 7 % 5 + 1).astype(float)
    agegr[::97] = 99.0
    return pd.DataFrame({"pid": rows + 1, "hid": rows // 4 + 1, "sex": (rows % 2 + 1).astype(float),
                         "agegr": agegr, "tag": rows * 10})


def write_sav(path: Path) -> Path:
    pyreadstat.write_sav(
        wave(), str(path),
        column_labels={"sex": "Sex of the person", "agegr": "Age group (5 classes)"},
        variable_value_labels={"sex": {1.0: "male", 2.0: "female"},
                               "agegr": {4.0: "45-64", 5.0: "65+", 99.0: "refused"}},
        missing_ranges={"agegr": [99.0]},
        variable_measure={"sex": "nominal", "agegr": "ordinal"},
    )
    return path


@pytest.fixture
def survey_files(tmp_path):
    spec_path = tmp_path / "lfs.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return load_spec(spec_path), write_sav(tmp_path / "2024.sav")


def released(spec, source, plan="recode_age"):
    """The safe files of a plan's output on ``source``, as the protected asset computes them."""
    data = read_wave_file(spec, source)
    protected = protection.protect(data, spec, spec.plan(plan), wave="2024").data
    return protected, release_files.safe_files(protected, spec, spec.plan(plan), wave="2024", source=source,
                                               original=data)


def read_back(tmp_path, safe, name):
    path = tmp_path / name
    path.write_bytes(safe.files[name])
    reader = {".sav": pyreadstat.read_sav, ".dta": pyreadstat.read_dta}[path.suffix]
    return reader(str(path), user_missing=True)


def test_a_sav_wave_is_released_as_sav_parquet_and_the_formats_the_spec_asks_for(survey_files):
    spec, source = survey_files
    _, safe = released(spec, source)
    assert list(safe.files) == ["protected.sav", "protected.parquet", "protected.dta", "protected.csv",
                                "value_labels.csv"]


def test_released_sav_and_dta_keep_variable_labels_value_labels_and_missing_codes(survey_files, tmp_path):
    spec, source = survey_files
    _, safe = released(spec, source)
    data, meta = read_back(tmp_path, safe, "protected.sav")
    assert meta.column_names_to_labels["sex"] == "Sex of the person"
    assert meta.column_names_to_labels["agegr"] == "Age group (5 classes)"
    # the plan merged 65+ into 45-64 (mapping 5 -> 4): the merged category is not released as
    # "45-64" (issue 34) but under the first free code above the categories 1..5, labelled by both
    # members; the labels of 4 and 5 are dropped (no released record has them)
    assert meta.variable_value_labels == {"sex": {1.0: "male", 2.0: "female"},
                                          "agegr": {6.0: "45-64, 65+", 99.0: "refused"}}
    assert meta.missing_ranges == {"agegr": [{"lo": 99.0, "hi": 99.0}]}
    assert meta.variable_measure["sex"] == "nominal" and meta.variable_measure["agegr"] == "ordinal"
    # missing codes were read as missing and stay missing
    assert set(data["agegr"].dropna()) == {1.0, 2.0, 3.0, 6.0}
    assert data["agegr"].isna().sum() == len(range(0, 4 * N_HOUSEHOLDS, 97))

    _, stata = read_back(tmp_path, safe, "protected.dta")
    assert stata.column_names_to_labels["agegr"] == "Age group (5 classes)"
    assert stata.variable_value_labels["sex"] == {1: "male", 2: "female"}


def test_released_files_carry_no_write_time(survey_files, tmp_path):
    """readstat stamps the write time; the release pins it, so a recomputation is byte-identical."""
    spec, source = survey_files
    _, first = released(spec, source)
    for name in ("protected.sav", "protected.dta"):
        assert read_back(tmp_path, first, name)[1].creation_time == datetime(1970, 1, 1)
    _, again = released(spec, source)
    assert again.files == first.files


def test_no_released_record_sits_at_its_original_position_more_often_than_chance(survey_files):
    spec, source = survey_files
    protected, safe = released(spec, source)
    out = pd.read_parquet(io.BytesIO(safe.files["protected.parquet"]))
    assert out.index.equals(pd.RangeIndex(len(protected)))
    assert sorted(out["tag"]) == sorted(protected["tag"])
    # Households are shuffled, then their persons: about one household of 300 stays in place
    # (Poisson(1)), and a quarter of its persons; 20 records in place is far beyond chance.
    at_original_position = int((out["tag"].to_numpy() == protected["tag"].to_numpy()).sum())
    assert at_original_position <= 20
    assert safe.order["shuffled"] is True
    assert safe.order["seed"] == release_files.order_seed(spec, spec.plan("recode_age"), "2024")


def test_nothing_links_back_through_an_id(survey_files):
    spec, source = survey_files
    protected, safe = released(spec, source)
    out = pd.read_parquet(io.BytesIO(safe.files["protected.parquet"]))
    original = protected.set_index("tag").loc[out["tag"]]
    # record ids are the new sequence 1..n in the published order
    assert out["pid"].tolist() == list(range(1, len(out) + 1))
    # households: the same new number for all records of one old household and only for them,
    # numbered 1..H in published order, each household's records adjacent
    pairs = pd.DataFrame({"old": original["hid"].to_numpy(), "new": out["hid"].to_numpy()}).drop_duplicates()
    assert len(pairs) == pairs["old"].nunique() == pairs["new"].nunique() == N_HOUSEHOLDS
    assert pairs["new"].tolist() == list(range(1, N_HOUSEHOLDS + 1))
    assert (out["hid"].diff().dropna().isin([0, 1])).all()
    # the original ids were 1..n and 1..H as well: an equal id is a record left in place by chance
    assert int((out["pid"].to_numpy() == original["pid"].to_numpy()).sum()) <= 20
    assert int((pairs["old"] == pairs["new"]).sum()) <= 5
    assert safe.order["renumbered_ids"] == ["pid", "hid"]


def test_the_spec_can_keep_order_and_ids(tmp_path):
    spec_path = tmp_path / "lfs.yaml"
    spec_path.write_text(yaml.safe_dump({**SPEC, "release": {"shuffle": False, "renumber_ids": False}}))
    spec = load_spec(spec_path)
    source = tmp_path / "2024.csv"
    wave().to_csv(source, index=False)
    protected, safe = released(spec, source)
    assert list(safe.files) == ["protected.csv", "protected.parquet", "value_labels.csv"]
    out = pd.read_csv(io.BytesIO(safe.files["protected.csv"]))
    assert out["pid"].tolist() == protected["pid"].tolist() == list(range(1, 4 * N_HOUSEHOLDS + 1))
    assert safe.order == {"shuffled": False, "seed": None, "renumbered_ids": [],
                          "csv": {"sep": ",", "decimal": ".", "encoding": "utf-8"}}


@pytest.mark.parametrize("release, message", [
    ({"formats": ["xlsx"]}, "release.formats: expected a list of formats from"),
    ({"shuffle": "yes"}, "release.shuffle: must be true or false, got 'yes'"),
    ({"renumber": True}, "release.renumber: unknown key"),
])
def test_a_wrong_release_section_is_a_spec_error_naming_the_key(release, message):
    with pytest.raises(SpecError, match=message):
        parse_spec({**SPEC, "release": release})


def test_audit_verifies_every_file_and_names_a_flipped_byte(survey_files, tmp_path):
    spec, source = survey_files
    protected, safe = released(spec, source)
    release = write_release(tmp_path / "releases", ReleaseRecord(
        survey="lfs", wave="2024", plan="recode_age", run_id="r1", protected=protected,
        source=WaveSnapshot(file=source, snapshot=source, sha256=file_sha256(source)),
        spec_path=spec.spec_path, spec_sha256=spec.spec_hash, plan_definition={}, steps=[], risk={}, loss={},
        checks={}, safe=safe,
    ))
    assert sorted(release.manifest["output"]["files"]) == sorted(safe.files)
    assert release.manifest["output"]["order"]["seed"] == safe.order["seed"]
    verification = verify_release(release.folder, recompute_release)
    assert verification.ok, verification.detail
    assert verification.files == dict.fromkeys(safe.files, "ok")

    for name in ("protected.sav", "protected.csv"):
        path = release.folder / name
        intact = path.read_bytes()
        flipped = bytearray(intact)
        flipped[len(flipped) // 2] ^= 0x01
        path.write_bytes(bytes(flipped))
        verification = verify_release(release.folder, recompute_release)
        assert not verification.ok
        assert verification.detail == (
            f"the released file {name} differs from the hash in its manifest (edited or damaged)"
        )
        assert verification.files[name] == "differs from the hash in its manifest"
        path.write_bytes(intact)
    assert verify_release(release.folder, recompute_release).ok


def test_the_manifest_names_the_keys_the_release_leaves_without_information(tmp_path):
    # issue 34: testdata2.dta released 6 of 8 keys as one category and dropped 3 keys under a
    # reassuring headline; the manifest says which keys carry nothing, and how
    from sdc_dagster.releases.manifest import keys_not_released
    from sdc_dagster.report.content import not_released_words

    plan = {"steps": [{"method": "recode", "variable": "agegr", "mapping": {2: 1, 3: 1, 4: 1, 5: 1}},
                      {"method": "remove_variables", "variables": ["sex"]}]}
    spec_path = tmp_path / "lfs.yaml"
    spec_path.write_text(yaml.safe_dump({**SPEC, "plans": {"flat": plan}}, sort_keys=False))
    spec, source = load_spec(spec_path), write_sav(tmp_path / "2024.sav")
    data = read_wave_file(spec, source)
    variant = protection.protect(data, spec, spec.plan("flat"), wave="2024")
    safe = release_files.safe_files(variant.data, spec, spec.plan("flat"), wave="2024", source=source, original=data)
    release = write_release(tmp_path / "releases", ReleaseRecord(
        survey="lfs", wave="2024", plan="flat", run_id="r1", protected=variant.data,
        source=WaveSnapshot(file=source, snapshot=source, sha256=file_sha256(source)),
        spec_path=spec.spec_path, spec_sha256=spec.spec_hash, plan_definition={}, steps=variant.steps, risk={},
        loss={}, checks={}, safe=safe,
    ))
    # agegr 1..5 all recoded to 1 (99 is its missing code): one category; sex removed
    assert release.manifest["output"]["keys_not_released"] == [
        {"variable": "sex", "released_as": "withheld"}, {"variable": "agegr", "released_as": "one category"}]
    # sdc run's console line under "released plan flat", read from the manifest
    from sdc_dagster.cli.run import not_released_line
    assert not_released_line(release.folder) == "not released: sex: withheld; agegr: released as one category"
    # the plan as the spec writes it gives the same; a key some of whose values survive is released
    assert keys_not_released(variant.data, plan["steps"]) == {"sex": "withheld", "agegr": "one category"}
    kept = [{"method": "recode", "variable": "agegr", "mapping": {5: 4}}]
    assert keys_not_released(data, kept) == {}
    # every value suppressed
    assert keys_not_released(pd.DataFrame({"agegr": [np.nan, np.nan]}), kept) == {"agegr": "every value suppressed"}
    assert not_released_words({"age": "one category", "region": "one category", "income": "withheld",
                               "savings": "withheld"}) == "age, region: released as one category; income, savings: withheld"
    assert not_released_words({"region": "one category"}) == "region: released as one category"
    assert not_released_words({}) == ""


def test_a_csv_wave_is_released_in_its_own_dialect(tmp_path):
    # offices' spreadsheets export ';'-separated text with decimal commas in Windows-1252; the release
    # came back ','-separated UTF-8 with decimal points, which the same spreadsheet reads as one column
    data = wave()
    data["income"] = data["tag"] / 8  # 0, 1.25, 2.5, ...
    data["town"] = np.where(data["pid"] % 3 == 0, "Cádiz", "Other")
    source = tmp_path / "2024.csv"
    source.write_bytes(data.to_csv(index=False, sep=";", decimal=",").encode("windows-1252"))
    raw = {**SPEC, "source": {"options": {"sep": ";", "decimal": ",", "encoding": "windows-1252"}},
           "variables": {**SPEC["variables"], "income": {"role": "other"}, "town": {"role": "other"}},
           "release": {"shuffle": False, "renumber_ids": False}}
    spec_path = tmp_path / "lfs.yaml"
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    spec = load_spec(spec_path)
    _, safe = released(spec, source)
    text = safe.files["protected.csv"]
    assert b"C\xe1diz" in text  # á in Windows-1252
    lines = text.decode("windows-1252").splitlines()
    assert lines[0] == "pid;hid;sex;agegr;tag;income;town"
    # record 2 (row 1): sex 2.0 (a float in the wave, "2,0" in its file), agegr 1 * 7 % 5 + 1 = 3, tag 10, income 1.25
    assert lines[2] == "2;1;2,0;3;10;1,25;Other"
    assert lines[3].endswith(";2,5;Cádiz")
    assert safe.order["csv"] == {"sep": ";", "decimal": ",", "encoding": "windows-1252"}
    assert safe.files["value_labels.csv"].decode("windows-1252").splitlines()[0] == "variable;code;label"
    # text the wave's encoding cannot hold: a merged band's en dash is not in ISO-8859-1
    latin = dataclasses.replace(spec, source=dataclasses.replace(spec.source, options={"encoding": "latin-1"}))
    bands = pd.DataFrame({"age": ["17 – 30", "31 – 45"]})
    assert release_files.csv_dialect(latin, "csv", [bands]) == {"sep": ",", "decimal": ".", "encoding": "utf-8-sig"}
    assert release_files.csv_dialect(latin, "csv", [bands.replace("–", "-", regex=True)])["encoding"] == "latin-1"


def test_two_releases_of_one_wave_and_plan_at_once_take_successive_numbers(survey_files, tmp_path, monkeypatch):
    # two runs of the same wave at once both became sequence 1 with no previous release (the race found
    # for table releases); the listing is slowed so that, unlocked, both threads read no earlier release
    from sdc_dagster.releases import manifest as releasing
    from tests.concurrency import at_once_with_slow_listing

    spec, source = survey_files
    protected, safe = released(spec, source)

    def run(run_id):
        write_release(tmp_path / "releases", ReleaseRecord(
            survey="lfs", wave="2024", plan="recode_age", run_id=run_id, protected=protected,
            source=WaveSnapshot(file=source, snapshot=source, sha256=file_sha256(source)),
            spec_path=spec.spec_path, spec_sha256=spec.spec_hash, plan_definition={}, steps=[], risk={}, loss={},
            checks={}, safe=safe))

    listed = at_once_with_slow_listing(monkeypatch, releasing, "list_decisions",
                                       [lambda: run("r1"), lambda: run("r2")])
    manifests = [releasing.read_manifest(f) for f in listed(tmp_path / "releases", "lfs", "2024", "recode_age")]
    assert [m["sequence"] for m in manifests] == [1, 2]
    assert manifests[1]["previous_release"] == manifests[0]["run_id"]
