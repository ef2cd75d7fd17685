"""``risk.interval_risk`` (sdcMicro ``dRisk``), ``risk.interval_risk_rmd`` (``dRiskRMD``) and
``risk.individual_risk`` with ``qual`` (``indivRisk``) against sdcMicro 5.8.1.

Expected values: ``tests/data/sdcmicro/golden_more/m5_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R`` and README). Inputs: sdcMicro's CASCrefmicrodata, Tarragona and testdata, the
noise-added copies ``tests/data/sdcmicro/more/in_m7_*_addnoise*.csv`` and the microaggregated
CASCrefmicrodata of ``m2_casc_deterministic.csv``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.risk import individual_risk
from sdc_dagster.risk import intervals
from sdc_dagster.risk.intervals import interval_risk, interval_risk_rmd

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
DRISK = json.loads((GOLDEN / "m5_dRisk.json").read_text())
VC = ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]


def _pair(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    casc = pd.read_csv(DATA / "CASCrefmicrodata.csv")
    if name == "casc_noise50":
        return casc, pd.read_csv(DATA / "more" / "in_m7_casc_1to5_addnoise50.csv").drop(columns="row")
    if name == "tarr_noise150":
        tarr = pd.read_csv(DATA / "Tarragona.csv")
        return tarr, pd.read_csv(DATA / "more" / "in_m7_tarragona_5to7_addnoise150.csv").drop(columns="row")
    method = name.removeprefix("casc_").removesuffix("3")
    released = pd.read_csv(GOLDEN / "m2_casc_deterministic.csv")
    return casc, released[[f"{method}_mean__{v}" for v in VC]].set_axis(VC, axis=1)


D_RISK = [(p, k) for p in sorted(DRISK) for k in (0.01, 0.05, 0.1, 0.5)]


@pytest.mark.parametrize(("pair", "k"), D_RISK)
def test_interval_risk_agrees_with_sdcmicro(pair, k):
    original, protected = _pair(pair)
    result = interval_risk(original, protected, DRISK[pair]["variables"], k=k)
    assert result.risk == pytest.approx(DRISK[pair][f"dRisk_k{k}"], abs=1e-12)


def test_the_interval_risk_calls_are_not_all_zero():
    assert sum(DRISK[p][f"dRisk_k{k}"] > 0 for p, k in D_RISK) >= 6


D_RISK_RMD = [(p, tag) for p in sorted(DRISK) for tag in DRISK[p] if tag.startswith("dRiskRMD_")]


@pytest.mark.parametrize(("pair", "tag"), D_RISK_RMD)
def test_interval_risk_rmd_agrees_given_sdcmicros_mcd_covariance(pair, tag, monkeypatch):
    """The random part, robustbase ``covMcd`` of the standardised original, is sdcMicro's (recorded
    after the same seed); the rest of RMDID1 / RMDID2 is deterministic."""
    entry = DRISK[pair]
    columns = entry["variables"]
    p = len(columns)
    covariance = np.reshape(entry["covMcd_cov_of_scaled_x"], (p, p), order="F")
    monkeypatch.setattr(intervals, "covmcd", lambda z, random_state: (np.zeros(p), covariance))
    k, k2 = (float(part.lstrip("k2")) for part in tag.removeprefix("dRiskRMD_").split("_"))
    original, protected = _pair(pair)
    result = interval_risk_rmd(original, protected, columns, k=k, k2=k2)
    expected = entry[tag]
    for field in ("risk1", "risk2", "wrisk1", "wrisk2"):
        assert getattr(result, field) == pytest.approx(expected[field], rel=1e-9, abs=1e-12)
    vectors = pd.read_csv(GOLDEN / f"m5_dRiskRMD_riskvec_{pair.split('_')[0]}.csv")
    suffix = tag.removeprefix("dRiskRMD_")
    np.testing.assert_allclose(result.riskvec1.to_numpy(), vectors[f"{pair}_{suffix}_riskvec1"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(result.riskvec2.to_numpy(), vectors[f"{pair}_{suffix}_riskvec2"], rtol=1e-9, atol=1e-12)


INDIV_CALLS = json.loads((GOLDEN / "m5_indivRisk_calls.json").read_text())
KEYS7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
KEYS4 = ["urbrur", "roof", "electcon", "sex"]


@pytest.fixture(scope="module")
def indiv() -> tuple[pd.DataFrame, pd.DataFrame]:
    golden = pd.read_csv(GOLDEN / "m5_indivRisk_qual_testdata.csv")
    data = pd.read_csv(DATA / "testdata.csv").assign(w=golden["w"].to_numpy())
    return data, golden


@pytest.mark.parametrize("column", sorted(INDIV_CALLS))
def test_individual_risk_with_qual_agrees_with_sdcmicro(column, indiv):
    """``qual`` multiplies the risk, above 1 as well (risks above 1 possible, as sdcMicro's
    ``rk * qual``). Where sdcMicro's "exact" formula overflows (pk^(1 - fk) for large fk gives
    Inf / NaN, 326 records here), the project's value is a number in [0, qual]."""
    data, golden = indiv
    keys = KEYS7 if column.startswith("td_k7") else KEYS4
    method = "exact" if "_exact_" in column else "approx"
    qual = float(column.rsplit("qual", 1)[1])
    got = individual_risk(data, keys, weight="w", method=method, qual=qual).to_numpy()
    expected = golden[column].to_numpy()
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-9)
    assert np.isfinite(got[~finite]).all()
    assert ((got[~finite] >= 0) & (got[~finite] <= qual)).all()
    if method == "approx":
        assert finite.all()
