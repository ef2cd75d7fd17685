"""Global recoding (SPEC §8.2) and sdcMicro topBotCoding golden output (tests/data/sdcmicro/golden)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.plan import apply_plan
from sdc_dagster.protect.recode import absent_categories
from sdc_dagster.protect import bottom_coding, interval_recode, merge_mapping, recode, top_bottom_coding, top_coding

GOLDEN = Path(__file__).parents[1] / "data" / "sdcmicro" / "golden"
DATA = Path(__file__).parents[1] / "data" / "sdcmicro"


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA / "testdata.csv")


def test_top_and_bottom_coding_match_sdcmicro_golden(testdata):
    golden = pd.read_csv(GOLDEN / "d_testdata_topBotCoding.csv")
    summary = json.loads((GOLDEN / "d_topBotCoding_summary.json").read_text())
    before = testdata.copy()
    top = top_coding(testdata, "income", 9e7, 9.5e7)
    bottom = bottom_coding(testdata, "savings", 1e5, 5e4)
    pd.testing.assert_frame_equal(testdata, before)
    np.testing.assert_allclose(top["income"], golden["income_top"], rtol=1e-8)
    np.testing.assert_allclose(bottom["savings"], golden["savings_bottom"], rtol=1e-8)
    t, b = summary["income_top_9e7_repl_9.5e7"], summary["savings_bottom_1e5_repl_5e4"]
    assert int((top["income"] != testdata["income"]).sum()) == t["n_changed"] == 440
    assert int((bottom["savings"] != testdata["savings"]).sum()) == b["n_changed"] == 46
    assert top["income"].sum() == pytest.approx(t["sum_after"], rel=1e-10)
    assert bottom["savings"].mean() == pytest.approx(b["mean_after"], rel=1e-10)


def test_top_coding_is_strict_as_sdcmicro():
    # sdcMicro codes x > value (top) and x < value (bottom); a value equal to the limit is kept.
    frame = pd.DataFrame({"x": [1, 5, 6, 10]})
    assert top_bottom_coding(frame, "x", 5, 5, kind="top")["x"].tolist() == [1, 5, 5, 5]
    assert top_bottom_coding(frame, "x", 5, 0, kind="bottom")["x"].tolist() == [0, 5, 6, 10]
    with pytest.raises(SDCInputError, match="kind"):
        top_bottom_coding(frame, "x", 5, 5, kind="middle")


def test_merged_category_gets_smallest_code_spec_example():
    # SPEC §8.2: 8 categories, merging 2+3 and 6+7 gives codes 1, 2, 4, 5, 6, 8.
    frame = pd.DataFrame({"edu": np.arange(1, 9)})
    out = recode(frame, "edu", groups=[[2, 3], [6, 7]])
    assert sorted(out["edu"].unique().tolist()) == [1, 2, 4, 5, 6, 8]
    assert out["edu"].tolist() == [1, 2, 2, 4, 5, 6, 6, 8]
    assert merge_mapping([[3, 2]]) == {3: 2, 2: 2}


def test_recode_mapping_keeps_other_codes_and_missing(testdata):
    out = recode(testdata, "water", {7: 5, 8: 5, 9: 5})
    assert not out["water"].isin([7, 8, 9]).any()
    untouched = ~testdata["water"].isin([7, 8, 9])
    assert (out.loc[untouched, "water"] == testdata.loc[untouched, "water"]).all()
    assert out["water"].dtype == testdata["water"].dtype
    frame = pd.DataFrame({"c": ["a", None, "b"]})
    assert recode(frame, "c", {"a": "b"})["c"].tolist()[0::2] == ["b", "b"]
    with pytest.raises(SDCInputError, match="exactly one"):
        recode(testdata, "water")


def test_interval_recode_codes_intervals_and_rejects_values_outside():
    frame = pd.DataFrame({"income": [0.0, 10.0, 10.5, 25.0, np.nan]})
    out = interval_recode(frame, "income", [0, 10, 20, 30])
    assert out["income"].tolist()[:4] == [1, 1, 2, 3] and pd.isna(out["income"].iloc[4])
    left = interval_recode(frame, "income", [0, 10, 20, 30], right=False, labels=["low", "mid", "high"])
    assert left["income"].tolist()[:4] == ["low", "mid", "mid", "high"]
    with pytest.raises(SDCInputError, match="outside"):
        interval_recode(frame, "income", [1, 10, 30])
    with pytest.raises(SDCInputError, match="labels"):
        interval_recode(frame, "income", [0, 10, 30], labels=["a"])
    with pytest.raises(SDCInputError, match="numeric"):
        interval_recode(pd.DataFrame({"s": ["a"]}), "s", [0, 1])


def test_recoding_absent_categories_is_a_recorded_no_op():
    # A valid wave in which categories 5, 6 and 9 of "water" do not occur: the step recodes what
    # occurs (7 -> 5) and records the categories it had nothing to do for.
    wave = pd.DataFrame({"water": [1, 2, 7, 7, 3, 1], "sex": [1, 2, 1, 2, 1, 2]})
    before = wave.copy()
    step = {"method": "recode", "variable": "water", "mapping": {5: 1, 6: 1, 9: 1, 7: 5}}
    result = apply_plan(wave, [step], keys=["water", "sex"], random_state=1)
    pd.testing.assert_frame_equal(wave, before)
    assert result.data["water"].tolist() == [1, 2, 5, 5, 3, 1]
    record = result.steps[0]
    assert record["categories_absent"] == [5, 6, 9]
    assert record["values_changed"] == {"water": 2}

    only_absent = apply_plan(wave, [{"method": "recode", "variable": "water", "mapping": {5: 1, 6: 1, 9: 1}}],
                             keys=["water"], random_state=1)
    pd.testing.assert_frame_equal(only_absent.data, wave)
    assert only_absent.steps[0]["categories_absent"] == [5, 6, 9]
    assert only_absent.steps[0]["values_changed"] == {}


def test_absent_categories_compares_values_not_types():
    frame = pd.DataFrame({"x": [1.0, 2.0, np.nan, 5.0], "s": ["a", "b", None, "a"]})
    assert absent_categories(frame, "x", {5: 1, 6: 1, 9: 1}) == [6, 9]  # 5 occurs as 5.0
    assert absent_categories(frame, "x", groups=[[2, 3], [6, 7]]) == [3, 6, 7]
    assert absent_categories(frame, "x", {"5": 1}) == ["5"]  # the text "5" is not the number 5
    assert absent_categories(frame, "s", {"a": "b", "c": "b"}) == ["c"]
    assert recode(frame, "x", {6: 1}).equals(frame)
