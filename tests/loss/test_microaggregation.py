"""SSE/TSS loss of microaggregation, SPEC §9.5, on sdcMicro's MDAV output for testdata."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import within_group_loss

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
COLUMNS = ["expend", "income", "savings"]


def test_mdav_groups_and_decomposition():
    original = pd.read_csv(SDCMICRO / "testdata.csv")[COLUMNS]
    aggregated = pd.read_csv(SDCMICRO / "golden" / "d_testdata_mdav3_mx.csv")[COLUMNS]
    golden = json.loads((SDCMICRO / "golden" / "d_microaggregation_summary.json").read_text())["testdata"]
    result = within_group_loss(original, aggregated, COLUMNS)
    assert result.n_groups == golden["n_groups"]
    assert result.sse + result.ssa == pytest.approx(result.tss, rel=1e-10)
    # MDAV releases the group means, so SSE equals the squared distances to the released values
    assert result.sse == pytest.approx(((original - aggregated) ** 2).to_numpy().sum(), rel=1e-8)
    assert 0 < result.value < 0.01


def test_by_hand_with_explicit_groups():
    original = pd.DataFrame({"v": [1.0, 3.0, 10.0, 14.0]})
    groups = pd.Series(["g", "g", "h", "h"])
    result = within_group_loss(original, original.copy(), ["v"], groups=groups)
    # group means 2 and 12, grand mean 7: SSE = 1+1+4+4, TSS = 36+16+9+49
    assert result.sse == pytest.approx(10.0) and result.tss == pytest.approx(110.0)
    assert result.value == pytest.approx(10 / 110) and result.n_groups == 2


def test_errors():
    frame = pd.DataFrame({"v": [1.0, 1.0]})
    with pytest.raises(SDCInputError, match="TSS = 0"):
        within_group_loss(frame, frame.copy(), ["v"])
    with pytest.raises(SDCInputError, match="NA"):
        within_group_loss(pd.DataFrame({"v": [1.0, np.nan]}), frame, ["v"])
