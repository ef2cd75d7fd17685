"""sdcMicro dUtility IL1 / IL1s / eigen against the golden microaggregation summary."""

import json
from pathlib import Path

import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import d_utility, d_utility_summary

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
COLUMNS = ["expend", "income", "savings"]


def test_golden_dutility_values():
    original = pd.read_csv(SDCMICRO / "testdata.csv")
    aggregated = pd.read_csv(SDCMICRO / "golden" / "d_testdata_mdav3_mx.csv")
    golden = json.loads((SDCMICRO / "golden" / "d_microaggregation_summary.json").read_text())["testdata"]
    result = d_utility_summary(original, aggregated, COLUMNS)
    assert result["IL1"] == pytest.approx(golden["dUtility_IL1"], rel=1e-8)
    assert result["IL1s"] == pytest.approx(golden["dUtility_IL1s"], rel=1e-8)
    assert result["eigen"] == pytest.approx(golden["dUtility_eigen"], rel=1e-8)
    assert result["IL1"] == pytest.approx(golden["sdcObj_utility"]["il1"], rel=1e-8)


def test_zero_original_values_are_dropped_from_il1():
    original = pd.DataFrame({"v": [0.0, 2.0, 4.0]})
    protected = pd.DataFrame({"v": [1.0, 3.0, 4.0]})
    # the x = 0 cell is infinite in R and removed by na.rm; 100·1/2 remains
    assert d_utility(original, protected) == pytest.approx(50.0)
    assert d_utility(original, original.copy(), method="IL1s") == 0.0


def test_bad_method():
    frame = pd.DataFrame({"v": [1.0, 2.0]})
    with pytest.raises(SDCInputError, match="method"):
        d_utility(frame, frame, method="robeigen")
