"""Drafting a survey spec from a data file (`sdc init`): roles, labels, measures, user-missing codes.

The reference for the guessed roles is the setup sdcMicro's own documentation uses for its testdata
(keys urbrur, roof, walls, water, electcon, relat, sex; weight sampling_weight; household ori_hid;
hhcivil as the sensitive variable of its l-diversity example), which examples/testdata.yaml follows.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec import load_spec
from sdc_dagster.spec.draft import draft_spec
from sdc_dagster.spec.reading import FileContents
from sdc_dagster.spec.roles import draft_roles

CHECKOUT = Path(__file__).resolve().parents[1]
SDCMICRO_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture
def survey_frame() -> pd.DataFrame:
    data = pd.read_csv(CHECKOUT / "examples" / "data" / "testdata.csv")
    data.insert(0, "person_id", np.arange(len(data)) + 1000)
    data["surname"] = [f"N{i:05d}" for i in range(len(data))]
    data.loc[::50, "water"] = 99  # "don't know", declared user-missing in the SPSS file
    return data


def key_candidates(spec, text: str) -> list[str]:
    """The categorical keys and the key candidates the key cap left out (their guess says "candidate key
    beyond the cap", a draft decision to confirm: test_draft_key_cap.py), in the spec's order."""
    capped = set(spec.report.draft_decisions and [d.split(": ", 1)[0] for d in spec.report.draft_decisions
                                                  if "candidate key beyond the cap" in d])
    return [v.name for v in spec.variables if v.role == "categorical_key" or v.name in capped]


def loaded(tmp_path, text: str):
    """The drafted spec through ``load_spec``. ``risk.max_linkage_risk`` is checked here and left out of
    what ``load_spec`` reads: spec.py learns that key on the branch that adds the linkage-risk check."""
    raw = yaml.safe_load(text)
    if raw["variables"] and any(v["role"] == "continuous_key" for v in raw["variables"].values()):
        assert raw["risk"].pop("max_linkage_risk") == 0.2
    spec_file = tmp_path / "draft.yaml"
    spec_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    return load_spec(spec_file)


def drafted(tmp_path, source) -> object:
    text = draft_spec(source, "household_survey")
    return loaded(tmp_path, text), text


def test_spss_labels_measures_and_user_missing(tmp_path, survey_frame):
    source = tmp_path / "wave.sav"
    pyreadstat.write_sav(
        survey_frame, str(source),
        variable_value_labels={"urbrur": {1: "urban", 2: "rural"}, "water": {99: "don't know"}},
        missing_ranges={"water": [99]},
        variable_measure={"urbrur": "nominal", "roof": "ordinal", "income": "scale"},
        column_labels={"urbrur": "Urban or rural area"},
    )
    spec, text = drafted(tmp_path, source)
    # age in whole years is an ordinal categorical key, never a continuous one (issue 34)
    assert key_candidates(spec, text) == SDCMICRO_KEYS + ["age"] and spec.variable("age").scale == "ordinal"
    assert spec.weight == "sampling_weight" and spec.household_id == "ori_hid"
    assert spec.variable("hhcivil").role == "sensitive"
    assert spec.variable("person_id").role == "direct_identifier"
    assert spec.variable("surname").role == "direct_identifier"
    assert spec.variable("roof").scale == "ordinal"  # SPSS measurement level
    assert spec.variable("water").missing_codes == (99,)  # SPSS user-missing code
    assert "1 = urban, 2 = rural" in text  # value labels shown with the categories
    assert set(spec.continuous_keys) == {"expend", "income", "savings"}
    assert spec.source.format == "spss" and [p.name for p in spec.plans] == ["suppress_k3"]
    # the amounts are microaggregated within the released key combinations (the linkage check)
    assert spec.plan("suppress_k3").steps == (
        {"method": "local_suppression", "k": 3},
        {"method": "microaggregation", "columns": ["expend", "income", "savings"], "k": 5,
         "strata": spec.categorical_keys})
    assert "max_linkage_risk: 0.2         # share of released records that the best record linkage an" in text
    assert text.count("# guess:") == survey_frame.shape[1]  # every role says why
    assert text.count("# type: ") == survey_frame.shape[1]  # every column states its type
    assert ("urbrur: {role: categorical_key, scale: nominal, categories: [1, 2]}\n"
            "    # type: integer; label: Urban or rural area") in text
    assert "  surname: {role: direct_identifier}\n    # type: text\n" in text


@pytest.mark.parametrize("suffix", [".dta", ".csv", ".parquet"])
def test_other_formats_give_the_same_roles(tmp_path, survey_frame, suffix):
    source = tmp_path / f"wave{suffix}"
    if suffix == ".dta":
        pyreadstat.write_dta(survey_frame, str(source), variable_value_labels={"sex": {1: "male", 2: "female"}})
    elif suffix == ".csv":
        survey_frame.to_csv(source, index=False)
    else:
        survey_frame.to_parquet(source)
    spec, text = drafted(tmp_path, source)
    assert key_candidates(spec, text) == SDCMICRO_KEYS + ["age"]
    assert (spec.weight, spec.household_id) == ("sampling_weight", "ori_hid")


def roles(frame: pd.DataFrame, **metadata) -> dict[str, str]:
    contents = FileContents(frame, metadata.get("value_labels", {}), {}, {}, "csv", metadata.get("column_labels", {}))
    return {v.name: v.role for v in draft_roles(contents)}


def test_one_weight_and_one_household_id():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"hh_id": np.repeat(np.arange(50), 2), "hid2": np.repeat(np.arange(50), 2),
                          "region": np.repeat(rng.integers(1, 5, 50), 2), "weight": np.linspace(1, 2, 100),
                          "wgt_household": np.linspace(2, 3, 100)})
    assert roles(frame) == {"hh_id": "household_id", "hid2": "other", "region": "categorical_key",
                            "weight": "weight", "wgt_household": "other"}


def test_unreadable_inputs_name_the_file(tmp_path):
    with pytest.raises(SDCInputError, match="notes.txt"):
        draft_spec(tmp_path / "notes.txt", "s")
    with pytest.raises(SDCInputError, match="survey name"):
        draft_spec(CHECKOUT / "examples" / "data" / "testdata.csv", "1bad")


def eu_silc_like(households: int = 300, seed: int = 3) -> pd.DataFrame:
    """A personal file in EU-SILC's variable codes (Eurostat, DOC 065): household PX030, person
    PB030 = household * 100 + person number, weights RB050/DB090, the demographic variables, twenty
    income components PY..G/HY..G and the totals HY010/HY020/HX090, the constant year and country."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 6, households)
    hid = np.repeat(np.arange(1, households + 1) * 7 + 1000, size)
    n = len(hid)
    person = np.concatenate([np.arange(1, s + 1) for s in size])
    frame = pd.DataFrame({"PB010": 2024, "PB020": "PL", "PB030": hid * 100 + person, "PX030": hid,
                          "RB050": rng.uniform(200, 900, n).round(2),
                          "DB090": np.repeat(rng.uniform(300, 800, households), size),
                          "DB040": np.repeat(rng.choice(["PL21", "PL22", "PL41", "PL91"], households), size),
                          "DB100": np.repeat(rng.integers(1, 4, households), size),
                          "PB140": rng.integers(1930, 2008, n), "PB150": rng.integers(1, 3, n),
                          "PB190": rng.integers(1, 6, n), "PB220A": rng.choice(["PL", "EU", "OTH"], n),
                          "PE040": rng.choice([0, 100, 200, 344, 354, 450, 500, 600, 700, 800], n),
                          "PL051": rng.integers(11, 97, n), "PL111": rng.choice(list("ABCDEFGHIJ"), n),
                          "HX040": np.repeat(size, size)})
    for code in ["PY010G", "PY020G", "PY035G", "PY050G", "PY080G", "PY090G", "PY100G", "PY110G", "PY120G",
                 "PY130G", "PY140G", "HY040G", "HY050G", "HY060G", "HY070G", "HY080G", "HY090G", "HY110G",
                 "HY120G", "HY130G"]:
        frame[code] = (rng.lognormal(8, 1, n) * (rng.random(n) < 0.6)).round(2)
    frame["HY010"] = frame.filter(like="Y").sum(axis=1).round(2)
    # disposable income: the gross less taxes at each household's own rate (an exact 0.8 * HY010 would
    # be a rescaled copy of the key HY010, dropped by the draft as such)
    frame["HY020"] = (frame["HY010"] * rng.uniform(0.7, 0.9, n)).round(2)
    frame["HX090"] = (frame["HY020"] / frame["HX040"]).round(2)
    return frame


def test_eu_silc_codes(tmp_path):
    frame = eu_silc_like()
    labels = {"RB050": "Personal cross-sectional weight", "DB090": "Household cross-sectional weight"}
    source = tmp_path / "silc.sav"
    pyreadstat.write_sav(frame, str(source), column_labels=[labels.get(c, c) for c in frame.columns])
    assert "PB010" not in labels
    spec, text = drafted(tmp_path, source)
    assert spec.weight == "RB050" and spec.household_id == "PX030"  # the person's weight, not DB090
    assert spec.variable("PB030").role == "direct_identifier"  # person id, unique per record
    assert {"PB010", "PB020"} <= set(spec.names("other"))  # constant year and country
    assert "  PB010: {role: other}\n    # type: integer; label: PB010\n    # guess: constant: carries no information" \
        in text
    # one per scenario group in turn, by priority: the year of birth (whole years: an ordinal
    # categorical key) and the household size come first; economic activity (PL111) is the ninth
    # group and the second regional variable (DB100) a second turn: both left out by the cap of 8.
    # The 890 records hold 6 keys at groups of 5 (the continuous keys microaggregated within each key
    # combination): education (PE040) and occupation (PL051) come after the sixth and are left out
    # with the reason (key_cap: with education, 15.5 % of the records fall in key combinations too
    # small for groups of 5, against the 10 % suppression limit)
    assert spec.categorical_keys == ["DB040", "PB140", "PB150", "PB190", "PB220A", "HX040"]
    assert spec.variable("PB140").scale == "ordinal" and spec.variable("HX040").scale == "ordinal"
    assert spec.variable("DB100").role == "other" and spec.variable("PL111").role == "other"
    assert spec.variable("PE040").role == "other" and spec.variable("PL051").role == "other"
    assert "candidate key beyond the cap of 6 for 890 records at groups of 5" in text
    assert "at most 8 categorical keys" in text
    # the totals, then the first component; the other nineteen components are not keys, each saying why
    assert spec.continuous_keys == ["PY010G", "HY010", "HY020", "HX090"]
    assert spec.variable("PY050G").role == "other"
    assert text.count("continuous keys (HY010, HY020, HX090, PY010G)") == 19
    assert ("- {method: microaggregation, columns: [PY010G, HY010, HY020, HX090], k: 5, "
            "strata: [DB040, PB140, PB150, PB190, PB220A, HX040]}") in text


def test_lfs_codes_and_labels(tmp_path):
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({"HHNUM": np.repeat(np.arange(200), 2), "HHSEQNUM": np.tile([1, 2], 200),
                          "COEFF": rng.uniform(0.5, 3.0, n) * 100, "SEX": rng.integers(1, 3, n),
                          "YEARBIR": rng.integers(1940, 2008, n), "AGE": rng.choice(np.arange(15, 90, 5), n),
                          "REGION": np.repeat(rng.integers(1, 17, 200), 2), "COUNTRYB": rng.integers(1, 4, n),
                          "NATIONAL": rng.integers(1, 4, n), "MARSTAT": rng.integers(1, 5, n),
                          "HATLEV1D": rng.integers(1, 4, n), "ISCO4D": rng.integers(1000, 9999, n),
                          "NACE3D": rng.integers(10, 99, n), "HHNBPERS": 2, "HWUSUAL": rng.integers(1, 60, n),
                          "Q17": rng.integers(1, 6, n)})
    source = tmp_path / "lfs.dta"
    pyreadstat.write_dta(frame, str(source), variable_value_labels={"Q17": {1: "very good", 5: "very bad"}})
    spec, text = drafted(tmp_path, source)
    assert spec.weight == "COEFF" and spec.household_id == "HHNUM"
    assert spec.variable("HHSEQNUM").role == "other" and "person number within the household 'HHNUM'" in text
    assert spec.variable("HHNBPERS").role == "other"  # constant in this file
    # ISCO codes are categories however many; the year of birth in whole years is an ordinal categorical
    # key, never a continuous one (issue 34); AGE (a second age variable, in 5-year classes) and NATIONAL
    # (a second citizenship variable) are second turns of their groups, left out by the cap of 8
    assert key_candidates(spec, text) == ["SEX", "YEARBIR", "REGION", "COUNTRYB", "MARSTAT", "HATLEV1D", "ISCO4D",
                                          "NACE3D"]
    assert spec.variable("YEARBIR").scale == "ordinal" and spec.variable("YEARBIR").categories[:2] == (1940, 1941)
    assert spec.variable("NATIONAL").role == "other" and spec.variable("AGE").role == "other"
    assert spec.continuous_keys == []
    assert spec.variable("HWUSUAL").role == "other"  # hours worked: neither a scenario variable nor an amount
    # a labelled variable outside the scenario is not a key, and says why it could be one
    assert spec.variable("Q17").role == "other" and spec.variable("Q17").categories == (1, 2, 3, 4, 5)
    assert "value labels: could be a categorical key if an intruder knows it" in text


def test_business_file_with_only_amounts(tmp_path):
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"firm_id": np.arange(n) * 3 + 11, "turnover": rng.lognormal(12, 1, n).round(),
                          "employees_cost": rng.lognormal(10, 1, n).round(), "profit": rng.normal(1e5, 3e4, n).round(),
                          "assets": rng.lognormal(13, 1, n).round(), "sector_code": "C"})
    source = tmp_path / "business.csv"
    frame.to_csv(source, index=False)
    raw = yaml.safe_load(draft_spec(source, "business"))
    assert {name: v["role"] for name, v in raw["variables"].items()} == {
        "firm_id": "direct_identifier", "turnover": "continuous_key", "employees_cost": "continuous_key",
        "profit": "continuous_key", "assets": "continuous_key", "sector_code": "other"}
    assert raw["risk"]["max_linkage_risk"] == 0.2
    assert raw["plans"] == {"microaggregate_k5": {
        "description": "MDAV microaggregation of the continuous keys in groups of at least 5",
        "steps": [{"method": "microaggregation", "columns": ["turnover", "employees_cost", "profit", "assets"],
                   "k": 5}]}}


def test_weights_by_shape_label_and_not_by_name_alone():
    rng = np.random.default_rng(6)
    n = 200
    frame = pd.DataFrame({"factor": rng.uniform(50, 150, n), "w": rng.uniform(0.1, 0.9, n),
                          "wgt_neg": rng.normal(0, 1, n), "sex": rng.integers(1, 3, n)})
    drafted_roles = roles(frame)
    assert drafted_roles["factor"] == "weight"  # weakly named, sums to about 100 times the records
    assert drafted_roles["w"] == "other" and drafted_roles["wgt_neg"] == "other"  # small; not positive
    labelled = pd.DataFrame({"V17": np.full(n, 250.0), "weight": rng.uniform(50, 90, n), "sex": frame["sex"]})
    drafted_roles = roles(labelled, column_labels={"V17": "Grossing-up factor", "weight": "Body weight in kg"})
    assert drafted_roles == {"V17": "weight", "weight": "other", "sex": "categorical_key"}  # constant, still the weight


def test_measurements_without_scenario_variables_still_get_keys():
    """A file of measurements (no person variable, no amount) gets keys from its candidates, saying why,
    so that `sdc init` -> `sdc check` -> `sdc run` works on it unedited; yes/no columns are categories."""
    rng = np.random.default_rng(7)
    n = 120
    frame = pd.DataFrame({"station": rng.integers(1, 6, n), "flag": rng.random(n) < 0.5, "depth": rng.normal(50, 9, n),
                          "magnitude": rng.normal(4, 0.4, n), "lmagnitude": rng.normal(1.4, 0.1, n)})
    contents = FileContents(frame, {}, {}, {}, "csv")
    drafted = {v.name: v for v in draft_roles(contents)}
    assert {name: v.role for name, v in drafted.items()} == {
        "station": "categorical_key", "flag": "categorical_key", "depth": "continuous_key",
        "magnitude": "continuous_key", "lmagnitude": "other"}
    assert "No variable of the disclosure scenario" in drafted["station"].reason
    assert drafted["flag"].categories == (False, True) and "yes/no values" in drafted["flag"].reason
    assert "derived from 'magnitude'" in drafted["lmagnitude"].reason


def test_a_weight_with_zeros_is_not_the_weight(tmp_path):
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"weight": np.r_[0.0, rng.uniform(10, 90, 99)], "sex": rng.integers(1, 3, 100)})
    drafted = {v.name: v for v in draft_roles(FileContents(frame, {}, {}, {}, "csv"))}
    assert drafted["weight"].role == "other" and "1 of its values are 0 or negative" in drafted["weight"].reason


def test_household_words_in_a_scenario_variable_do_not_make_a_household_id():
    rng = np.random.default_rng(9)
    households = np.repeat(np.arange(60), 3)
    region = np.repeat(rng.integers(1, 5, 60), 3)
    frame = pd.DataFrame({"hh_region": region, "regional_rate": np.choose(region - 1, [4.1, 5.2, 6.3, 7.4]),
                          "hh_nr": households, "hh_size": 3 - (rng.random(180) < 0.1), "sex": rng.integers(1, 3, 180)})
    # regional_rate has one value per region: a copy of the key hh_region, removed before release
    assert roles(frame) == {"hh_region": "categorical_key", "regional_rate": "direct_identifier",
                            "hh_nr": "household_id", "hh_size": "categorical_key", "sex": "categorical_key"}


def test_casc_reference_file_names():
    """The variables of sdcMicro's CASCrefmicrodata (all continuous, a final weight): the weight, the
    two totals first among four continuous keys, the other amounts ``other``."""
    rng = np.random.default_rng(10)
    names = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX", "TAXINC", "POTHVAL", "INTVAL",
             "PEARNVAL", "FICA", "WSALVAL", "ERNVAL"]
    frame = pd.DataFrame({name: rng.lognormal(9, 1, 300).round(1) for name in names})
    drafted = {v.name: v for v in draft_roles(FileContents(frame, {}, {}, {}, "csv"))}
    assert drafted["AFNLWGT"].role == "weight"
    keys = [name for name, v in drafted.items() if v.role == "continuous_key"]
    assert keys == ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL"]
    assert {v.role for name, v in drafted.items() if name not in ("AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL")} \
        == {"other"}
    assert "continuous keys (AGI, PTOTVAL, EMCONTRB, FEDTAX)" in drafted["WSALVAL"].reason


def test_relative_weights_and_body_weight_are_not_the_risk_weight(tmp_path):
    """Issue 21's corpus: the European Social Survey's dweight/pspwght (mean 1, values below 1) and
    a youth survey's body 'weight' (kg, missing for some) are not grossing-up weights; the
    grossing-up weight beside them is."""
    rng = np.random.default_rng(21)
    n = 300
    body = rng.uniform(40, 110, n)
    body[::17] = np.nan
    frame = pd.DataFrame({
        "design_weight": rng.uniform(0.95, 1.05, n), "poststrat_weight": rng.uniform(0.2, 4.0, n),
        "weight": body, "sex": rng.integers(1, 3, n), "age": rng.integers(18, 90, n),
    })
    source = tmp_path / "ess.csv"
    frame.to_csv(source, index=False)
    raw = yaml.safe_load(draft_spec(source, "ess"))
    roles = {name: v["role"] for name, v in raw["variables"].items()}
    assert roles["design_weight"] == roles["poststrat_weight"] == roles["weight"] == "other"
    assert "weight" not in roles.values()
    text = draft_spec(source, "ess2")
    assert "values are below 1" in text and "missing on 18 records" in text
    frame["gross"] = rng.uniform(200, 900, n)
    frame = frame.rename(columns={"gross": "grossing_weight"})
    frame.to_csv(source, index=False)
    raw = yaml.safe_load(draft_spec(source, "ess"))
    assert raw["variables"]["grossing_weight"]["role"] == "weight"


def test_a_household_id_is_known_for_every_record_and_groups_few_records(tmp_path):
    """Corpus surprises (issue 21): a school id missing for some pupils (AER STAR's schoolid1) and a
    yes/no flag named like a person id (MplsStops' personSearch) are not household ids."""
    rng = np.random.default_rng(8)
    n = 3000
    school = rng.integers(1, 80, n).astype(float)
    school[::7] = np.nan
    frame = pd.DataFrame({
        "schoolid": school, "personSearch": rng.choice(["YES", "NO"], n),
        "sex": rng.integers(1, 3, n), "age": rng.integers(5, 9, n),
    })
    frame["system"] = frame["schoolid"] % 5  # constant within each school
    source = tmp_path / "star.csv"
    frame.to_csv(source, index=False)
    raw = yaml.safe_load(draft_spec(source, "star"))
    roles = {name: v["role"] for name, v in raw["variables"].items()}
    assert "household_id" not in roles.values()
    assert roles["schoolid"] == "other" and "missing on 429 records" in draft_spec(source, "star2")


def test_business_names_ids_and_amounts(tmp_path):
    """sdcMicro's EIA layout (issue 21's new-user trial): the utility's name is a direct identifier
    although each utility has twelve monthly records, its id is never a key, and revenues and sales
    are amounts."""
    rng = np.random.default_rng(9)
    utilities = 40
    frame = pd.DataFrame({
        "UTILITYID": np.repeat(np.arange(1000, 1000 + utilities), 12),
        "UTILNAME": np.repeat([f"Power Company {i}" for i in range(utilities)], 12),
        "MONTH": np.tile(np.arange(1, 13), utilities),
        "RESREVENUE": rng.lognormal(8, 1, 12 * utilities), "TOTSALES": rng.lognormal(10, 1, 12 * utilities),
    })
    source = tmp_path / "eia.csv"
    frame.to_csv(source, index=False)
    roles = {name: v["role"] for name, v in yaml.safe_load(draft_spec(source, "eia"))["variables"].items()}
    assert roles["UTILNAME"] == "direct_identifier"
    assert roles["UTILITYID"] not in ("categorical_key", "continuous_key")
    assert roles["RESREVENUE"] == roles["TOTSALES"] == "continuous_key"


def test_arx_hierarchy_files_beside_the_data_give_the_keys_their_hierarchies(tmp_path):
    # ARX's census-income example ships its hierarchies beside the data as adult_hierarchy_<column>.csv;
    # the draft took none of them and drafted "Other (n categories)" merges for education instead
    arx = CHECKOUT / "tests" / "data" / "arx_adult"
    # the whole file: in its first 3,000 records education is beyond the key cap at the hierarchies' levels
    (tmp_path / "adult.csv").write_bytes((arx / "adult.csv").read_bytes())
    for hierarchy in arx.glob("adult_hierarchy_*.csv"):
        (tmp_path / hierarchy.name.replace("education", "Education")).write_bytes(hierarchy.read_bytes())
    text = draft_spec(tmp_path / "adult.csv", "adult")
    raw = yaml.safe_load(text)
    assert Path(raw["variables"]["education"]["hierarchy"]["file"]).name == "adult_hierarchy_Education.csv"
    assert Path(raw["variables"]["age"]["hierarchy"]["file"]).name == "adult_hierarchy_age.csv"
    assert "ARX's hierarchy file adult_hierarchy_age.csv beside the data" in text
    # the sensitive salary class keeps its role; its comment says how to use its file
    assert raw["variables"]["salary-class"]["role"] == "sensitive" and "hierarchy" not in raw["variables"]["salary-class"]
    assert "make salary-class a categorical_key to generalise along it" in text
    spec = loaded(tmp_path, text)
    education = next(v for v in spec.variables if v.name == "education").hierarchy
    # the file's second column: Bachelors -> Undergraduate, 11th -> High School; the third: Higher/Secondary education
    first, second = education.levels[0], education.levels[1]
    assert "Undergraduate" in first.names and "High School" in first.names
    assert set(second.names) == {"Higher education", "Secondary education", "Primary education"}
    assert spec.survey == "adult"
    # another data file in the same folder takes none of them
    (tmp_path / "census.csv").write_bytes((tmp_path / "adult.csv").read_bytes())
    assert "hierarchy: {file" not in draft_spec(tmp_path / "census.csv", "census")
