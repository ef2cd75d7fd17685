"""``protect.rank_swap`` with ``p=0`` against sdcMicro 5.8.1's ``rankSwap(..., P = 0)``: no value is
swapped and only the top and bottom coding act, with sdcMicro's single-precision record counts.

Expected values: ``tests/data/sdcmicro/golden_more/m8_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R``, README and ``m8_rankSwap_calls.json``). Input: CASCrefmicrodata's AGI, EMCONTRB,
FEDTAX, PTOTVAL, STATETAX, and the same with missing values (AGI in every 7th record, FEDTAX in every
11th from the 3rd).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.protect import rank_swap

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
CALLS = json.loads((GOLDEN / "m8_rankSwap_calls.json").read_text())["calls"]
VC = ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]


def _input(name: str) -> pd.DataFrame:
    data = pd.read_csv(DATA / "CASCrefmicrodata.csv")[VC].astype(float)
    if name.startswith("cascna"):
        data.loc[np.arange(6, len(data), 7), "AGI"] = np.nan
        data.loc[np.arange(2, len(data), 11), "FEDTAX"] = np.nan
    return data


@pytest.mark.parametrize("name", sorted(CALLS))
def test_rank_swap_with_p_zero_agrees_with_sdcmicro(name):
    top = float(name.split("_t")[1].split("_")[0])
    bottom = float(name.split("_b")[1])
    expected = pd.read_csv(GOLDEN / "m8_rankSwap_P0.csv")[[f"{name}__{v}" for v in VC]].to_numpy()
    out = rank_swap(_input(name), VC, p=0, top_percent=top, bottom_percent=bottom, random_state=1)
    np.testing.assert_allclose(out[VC].to_numpy(), expected, rtol=1e-12, atol=0)


def test_five_percent_of_1080_codes_53_records_as_sdcmicro():
    """5 * 0.01f * 1080 = 53.99999... in single precision: 53 records are top coded, not 54."""
    expected = pd.read_csv(GOLDEN / "m8_rankSwap_P0.csv")["casc_t5_b5__AGI"].to_numpy()
    original = _input("casc")["AGI"].to_numpy()
    top_value = expected.max()
    assert int((expected == top_value).sum()) == 53
    assert top_value == pytest.approx(np.sort(original)[-53:].mean(), rel=1e-12)
