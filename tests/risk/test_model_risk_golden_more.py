"""``risk.model_risk`` against sdcMicro 5.8.1's ``modRisk`` on testdata's keys with an age band.

Expected values: ``tests/data/sdcmicro/golden_more/m1_modrisk.json``, written by sdcMicro 5.8.1 under
R 4.2.2 (the calls are in that folder's ``calls.R`` and README). Input:
``tests/data/sdcmicro/more/in_m1_modrisk_testdata.csv``. sdcMicro's data.frame method hands a numeric
column to ``glm`` as a numeric predictor: the calls on the data as read (``m1``) are compared with
``numeric=`` those keys, the calls on the data with urbrur, water, sex as factors (``m1f``) without.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from sdc_dagster.risk import model_risk

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = json.loads((DATA / "golden_more" / "m1_modrisk.json").read_text())
INPUT = pd.read_csv(DATA / "more" / "in_m1_modrisk_testdata.csv")
CODED = ("urbrur", "water", "sex")  # integer-coded keys: numeric predictors in sdcMicro's m1 calls


def _value(x) -> float:
    return math.nan if x in ("NaN", None) else float(x)


def _run(entry: dict) -> dict:
    keys = list(dict.fromkeys(re.findall(r"[A-Za-z_]+", entry["formula"])))
    as_read = entry["call"].startswith("modRisk(m1,")
    # "IPF" fits table margins, where every key is a category (MASS loglm on an xtabs table)
    numeric = [k for k in CODED if k in keys] if as_read and entry["method"] != "IPF" else []
    bound = math.inf if entry["bound"] == "Inf" else float(entry["bound"])
    return model_risk(INPUT, keys, weight=entry["weights"], formula=entry["formula"], method=entry["method"],
                      bound=bound, numeric=numeric)


FINITE = sorted(name for name, e in GOLDEN.items()
                if "error" not in e and math.isfinite(_value(e["gr1"])) and math.isfinite(_value(e["gr2"]))
                and not (e["method"] == "IPF" and "age_band" in e["formula"]))
NOT_FINITE = sorted(name for name, e in GOLDEN.items()
                    if "error" not in e and not (math.isfinite(_value(e["gr1"])) and math.isfinite(_value(e["gr2"]))))


def test_the_golden_file_covers_every_method_interactions_and_bounds():
    methods = {GOLDEN[n]["method"] for n in FINITE}
    assert methods == {"default", "CE", "PML", "weightedLLM", "IPF"}
    assert any(":" in GOLDEN[n]["formula"] or "*" in GOLDEN[n]["formula"] for n in FINITE)
    assert {GOLDEN[n]["bound"] for n in FINITE} >= {"Inf", 1, 2, 5}
    assert len(FINITE) == 48


@pytest.mark.parametrize("name", FINITE)
def test_gr1_and_gr2_agree_with_sdcmicro(name):
    entry = GOLDEN[name]
    result = _run(entry)
    assert result["gr1"] == pytest.approx(_value(entry["gr1"]), rel=1e-6, abs=1e-15)
    assert result["gr2"] == pytest.approx(_value(entry["gr2"]), rel=1e-6, abs=1e-15)


@pytest.mark.parametrize("name", NOT_FINITE)
def test_where_sdcmicro_gives_nan_the_risk_is_a_number(name):
    """sdcMicro sums ``as.numeric(f == 1) * risk`` over every counted cell, so a cell of f_k > 1 whose
    risk is 0/0 (1/w summing to 1) or exp(+large) = Inf (1/w summing above 1) turns gr1 and gr2 into
    NaN; the project sums the sample uniques only (a documented deviation of ``model_risk``). The same
    models with ``bound`` 1 or 2 (uniques only) agree above."""
    result = _run(GOLDEN[name])
    assert math.isfinite(result["gr1"]) and math.isfinite(result["gr2"])
    assert 0.0 <= result["gr1"] <= 1.0 and 0.0 <= result["gr2"] <= 1.0


def test_ipf_with_a_text_key_is_zero_in_sdcmicro_and_computed_here():
    """sdcMicro's IPF branch converts the fitted table's key columns with ``as.numeric``: a text key
    (age_band "00-14", ...) becomes NA, no cell is matched and gr1 = gr2 = 0. The project keeps the
    cells; the same fit equals the "default" method's (IPF and the Poisson GLM of main effects share
    their maximum-likelihood fit, Bishop, Fienberg & Holland 1975 §3.3)."""
    for weights in ("sampling_weight", "household_weights"):
        entry = GOLDEN[f"num_IPF_{weights}"]
        assert (_value(entry["gr1"]), _value(entry["gr2"])) == (0.0, 0.0)
        ipf = _run(entry)
        keys = ["urbrur", "water", "sex", "age_band"]
        default = model_risk(INPUT, keys, weight=weights, method="default")
        assert ipf["gr1"] == pytest.approx(default["gr1"], rel=1e-6)
        assert ipf["gr2"] == pytest.approx(default["gr2"], rel=1e-6)
        assert ipf["gr1"] > 0.0

