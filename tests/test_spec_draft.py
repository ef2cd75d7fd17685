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
from sdc_dagster.spec_draft import FileContents, draft_roles, draft_spec

CHECKOUT = Path(__file__).resolve().parents[1]
SDCMICRO_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture
def survey_frame() -> pd.DataFrame:
    data = pd.read_csv(CHECKOUT / "examples" / "data" / "testdata.csv")
    data.insert(0, "person_id", np.arange(len(data)) + 1000)
    data["surname"] = [f"N{i:05d}" for i in range(len(data))]
    data.loc[::50, "water"] = 99  # "don't know", declared user-missing in the SPSS file
    return data


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
    assert spec.categorical_keys == SDCMICRO_KEYS
    assert spec.weight == "sampling_weight" and spec.household_id == "ori_hid"
    assert spec.variable("hhcivil").role == "sensitive"
    assert spec.variable("person_id").role == "direct_identifier"
    assert spec.variable("surname").role == "direct_identifier"
    assert spec.variable("roof").scale == "ordinal"  # SPSS measurement level
    assert spec.variable("water").missing_codes == (99,)  # SPSS user-missing code
    assert "1 = urban, 2 = rural" in text  # value labels shown with the categories
    assert set(spec.continuous_keys) == {"age", "expend", "income", "savings"}
    assert spec.source.format == "spss" and spec.plans[0].name == "suppress_k3"
    assert text.count("# guess:") == survey_frame.shape[1]  # every role says why
    assert text.count("# type: ") == survey_frame.shape[1]  # every column states its type
    assert "urbrur: {role: categorical_key, scale: nominal, categories: [1, 2]}\n    # type: integer; label: Urban or rural area" in text
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
    spec, _ = drafted(tmp_path, source)
    assert spec.categorical_keys == SDCMICRO_KEYS
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
