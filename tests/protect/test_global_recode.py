"""Global recoding into intervals and top/bottom coding (SPEC §8.2) against sdcMicro 5.8.1
``globalRecode`` and ``topBotCoding`` golden outputs (tests/data/sdcmicro/golden_parity, e_* and h_*)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import global_recode, top_bottom_coding

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
PARITY = SDCMICRO / "golden_parity"
SOURCES = {"testdata2$": "testdata2.csv", "CASCrefmicrodata$": "CASCrefmicrodata.csv"}


def _golden_labels(path: Path) -> pd.DataFrame:
    """The label columns as text; empty cells (sdcMicro NA) become None."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.replace({"": None})


def _as_text(result: pd.Series) -> list:
    return [None if pd.isna(v) else str(v) for v in result.astype(object)]


def _number(value):
    return float(value) if isinstance(value, str) else value  # "Inf", "-Inf"


LEVELS = json.loads((PARITY / "e_globalRecode_levels.json").read_text())["cases"]


@pytest.mark.parametrize("case", sorted(LEVELS))
def test_global_recode_matches_sdcmicro_cases(case):
    spec = LEVELS[case]
    source = next(file for prefix, file in SOURCES.items() if prefix in spec["call"])
    variable = case.split("_")[0]
    values = pd.read_csv(SDCMICRO / source)[variable]
    golden_file = "e_testdata2_globalRecode.csv" if source == "testdata2.csv" else "e_CASCref_globalRecode.csv"
    golden = _golden_labels(PARITY / golden_file)[case]

    breaks = spec["breaks_arg"]
    if isinstance(breaks, list):
        kwargs = {"breaks": [_number(b) for b in breaks]}
    else:  # a number of intervals; sdcMicro's default method is "equidistant"
        kwargs = {"breaks": int(breaks), "method": spec.get("method", "equidistant")}
    if "labels_arg" in spec:
        kwargs["labels"] = spec["labels_arg"]
    before = values.copy()
    result = global_recode(values, **kwargs)
    pd.testing.assert_series_equal(values, before)

    assert _as_text(result) == golden.tolist()
    assert [str(c) for c in result.cat.categories] == spec["levels"]
    assert int(result.isna().sum()) == spec["n_NA"]
    counts = result.astype(object).map(str)[result.notna()].value_counts().to_dict()
    assert counts == {k: v for k, v in spec["counts"].items() if v}


TESTDATA_CALLS = {
    "income_breaks": ("income", {"breaks": [0, 1e7, 3e7, 6e7, 1e8, np.inf]}),
    "expend_equidistant_5": ("expend", {"breaks": 5, "method": "equidistant"}),
    "income_equidistant_4": ("income", {"breaks": 4, "method": "equidistant"}),
    "expend_logEqui_5": ("expend", {"breaks": 5, "method": "logEqui"}),
    "income_logEqui_4": ("income", {"breaks": 4, "method": "logEqui"}),
    "expend_equalAmount_5": ("expend", {"breaks": 5, "method": "equalAmount"}),
    "income_equalAmount_4": ("income", {"breaks": 4, "method": "equalAmount"}),
    "age_breaks_labels": ("age", {"breaks": [0, 14, 64, 120], "labels": ["child", "adult", "senior"]}),
}


def test_global_recode_matches_sdcmicro_on_testdata():
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    golden = _golden_labels(PARITY / "e_testdata_globalRecode.csv")
    assert set(golden.columns) - {"row"} == set(TESTDATA_CALLS)
    for column, (variable, kwargs) in TESTDATA_CALLS.items():
        assert _as_text(global_recode(data[variable], **kwargs)) == golden[column].tolist(), column


def test_labels_follow_r_cut_formatting():
    """R: cut(c(5, 15, 25), c(0, 10.5, 20, Inf), dig.lab=8) prints (0,10.5], (10.5,20], (20,Inf];
    with -Inf as well, format() pads the specials to a common width; breaks that differ only after
    8 significant digits are printed with more (formatC digits 9..12)."""
    values = pd.Series([5.0, 15.0, 25.0])
    assert list(global_recode(values, breaks=[0, 10.5, 20, np.inf]).cat.categories) == \
        ["(0,10.5]", "(10.5,20]", "(20,Inf]"]
    assert list(global_recode(values, breaks=[-np.inf, 10, np.inf]).cat.categories) == ["(-Inf,10]", "(10, Inf]"]
    close = global_recode(pd.Series([1.5]), breaks=[1.000000001, 1.000000002, 2])
    assert list(close.cat.categories) == ["(1.000000001,1.000000002]", "(1.000000002,2]"]


def test_lowest_break_excluded_for_vector_included_for_number():
    values = pd.Series([0.0, 1.0, 2.0, np.nan], name="v")
    explicit = global_recode(values, breaks=[0, 1, 2])
    assert _as_text(explicit) == [None, "(0,1]", "(1,2]", None]
    counted = global_recode(values, breaks=2, method="equidistant")  # seq(-1, 3, length 3) = -1, 1, 3
    assert _as_text(counted) == ["[-1,1]", "[-1,1]", "(1,3]", None]
    assert counted.name == "v" and counted.cat.ordered
    assert _as_text(global_recode(values, breaks=2.0, method="equidistant")) == _as_text(counted)


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.floats(1.0, 1e9, allow_nan=False), min_size=2, max_size=40),
    n=st.integers(2, 6),
    method=st.sampled_from(["equidistant", "logEqui"]),
)
def test_every_value_falls_in_exactly_one_ordered_interval(values, n, method):
    series = pd.Series(values)
    result = global_recode(series, breaks=n, method=method)
    assert result.notna().all()  # the computed breaks cover min - 1 .. max + 1
    codes = result.cat.codes.to_numpy()
    order = np.argsort(series.to_numpy(), kind="stable")
    assert (np.diff(codes[order]) >= 0).all()  # larger values never get a lower interval


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"breaks": 3}, "method"),
        ({"breaks": [1, 2], "method": "equidistant"}, "number of intervals"),
        ({"breaks": [1, 1, 2]}, "distinct"),
        ({"breaks": 0, "method": "equidistant"}, "the number of intervals: must be an integer >= 1, got 0"),
        ({"breaks": [0, 1, 5], "labels": ["a"]}, "labels"),
        ({"breaks": 2, "method": "median"}, "method"),
        ({"breaks": 3, "method": "equalAmount"}, "tied"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    values = pd.Series([1.0, 1.0, 1.0, 1.0, 2.0], name="x")
    with pytest.raises(SDCInputError, match=message):
        global_recode(values, **kwargs)


def test_non_numeric_and_log_of_non_positive_rejected():
    with pytest.raises(SDCInputError, match="'s'"):
        global_recode(pd.Series(["a", "b"], name="s"), breaks=[0, 1])
    with pytest.raises(SDCInputError, match="logEqui"):
        global_recode(pd.Series([0.0, 3.0], name="z"), breaks=2, method="logEqui")


# --- topBotCoding ---------------------------------------------------------------------------

TOP_BOTTOM_CALLS = {
    "top_8e7_repl_9e7": ("top", 8e7, 9e7),
    "top_8e7_repl_8e7": ("top", 8e7, 8e7),
    "top_94400000_repl_NA": ("top", 94400000, None),
    "bottom_1e7_repl_5e6": ("bottom", 1e7, 5e6),
    "bottom_26300000_repl_26300000": ("bottom", 26300000, 26300000),
    "bottom_26300000_repl_NA": ("bottom", 26300000, None),
}


@pytest.mark.parametrize("column", sorted(TOP_BOTTOM_CALLS))
def test_top_bottom_coding_matches_sdcmicro(column):
    golden = pd.read_csv(PARITY / "h_testdata2_topBotCoding_income.csv")
    summary = json.loads((PARITY / "h_topBotCoding_summary.json").read_text())[column]
    kind, value, replacement = TOP_BOTTOM_CALLS[column]
    data = pd.read_csv(SDCMICRO / "testdata2.csv")
    np.testing.assert_array_equal(data["income"].to_numpy(), golden["income"].to_numpy())
    coded = top_bottom_coding(data, "income", value, replacement, kind=kind)["income"]
    expected = golden[column].to_numpy(dtype="float64")
    np.testing.assert_array_equal(coded.to_numpy(dtype="float64", na_value=np.nan), expected)
    changed = coded.isna() | (coded.astype("float64") != data["income"])
    assert int(changed.sum()) == summary["n_changed"]
    assert int((data["income"] == value).sum()) == summary["n_equal_to_value"]


def test_top_bottom_coding_matches_sdcmicro_on_testdata():
    golden = pd.read_csv(PARITY / "h_testdata_topBotCoding_expend.csv")
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    top = top_bottom_coding(data, "expend", 1e8, 1.2e8, kind="top")["expend"]
    bottom = top_bottom_coding(data, "expend", 5e6, 2.5e6, kind="bottom")["expend"]
    np.testing.assert_array_equal(top.to_numpy(dtype="float64"), golden["top"].to_numpy(dtype="float64"))
    np.testing.assert_array_equal(bottom.to_numpy(dtype="float64"), golden["bottom"].to_numpy(dtype="float64"))


def test_missing_replacement_keeps_integer_column_nullable():
    data = pd.DataFrame({"v": [1, 5, 9]})
    coded = top_bottom_coding(data, "v", 5, None, kind="top")
    assert str(coded["v"].dtype) == "Int64"
    assert coded["v"].tolist() == [1, 5, pd.NA]
    assert data["v"].tolist() == [1, 5, 9]
