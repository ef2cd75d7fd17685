"""``protect.mv_top_coding`` and ``protect.microaggregation_gower`` against sdcMicro 5.8.1's
``mvTopCoding`` and ``microaggrGower``.

Expected values: ``tests/data/sdcmicro/golden_more/m4_*`` and ``m3_*`` (sdcMicro 5.8.1, R 4.2.2; the
calls in that folder's ``calls.R`` and README, each call's text in the JSON files). Inputs: sdcMicro's
CASCrefmicrodata and Tarragona, and ``tests/data/sdcmicro/more/in_m3_gower_testdata200.csv``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.protect import mv_top_coding
from sdc_dagster.protect.microaggregation import microaggregation_gower

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
MV = json.loads((GOLDEN / "m4_mvTopCoding.json").read_text())
SOURCES = {"casc": "CASCrefmicrodata.csv", "tarr": "Tarragona.csv"}


def _mv_case(name: str, kind: str):
    entry = MV[name]
    source = "casc" if name.startswith("casc") else "tarr"
    data = pd.read_csv(DATA / SOURCES[source])
    golden = pd.read_csv(GOLDEN / f"m4_mvTopCoding_{source}.csv")
    columns = entry["variables"]
    return entry, data, columns, golden[[f"{name}_{kind}__{c}" for c in columns]].to_numpy()


def _released(out: pd.DataFrame, columns: list[str], entry: dict) -> np.ndarray:
    """The project's values as sdcMicro stores them: sdcMicro writes the pulled values into the
    columns of a data.table made from the input, and an integer input column keeps integers (the
    value truncated towards zero)."""
    values = out[columns].to_numpy(dtype=float)
    return np.trunc(values) if entry["integer_input"] else values


@pytest.mark.parametrize("name", sorted(MV))
def test_robust_mv_top_coding_agrees_given_sdcmicros_mcd_estimate(name):
    entry, data, columns, expected = _mv_case(name, "robust")
    p = len(columns)
    out = mv_top_coding(data, columns, alpha=entry["alpha"], center=entry["covMcd_center"],
                        covariance=np.reshape(entry["covMcd_cov"], (p, p), order="F"))
    np.testing.assert_allclose(_released(out, columns, entry), expected, rtol=1e-9, atol=1e-6)
    changed = (out[columns].to_numpy(dtype=float) != data[columns].to_numpy(dtype=float)).any(axis=1)
    assert int(changed.sum()) == entry["pulled_robust"]


@pytest.mark.parametrize("name", sorted(MV))
def test_classical_mv_top_coding_agrees_with_sdcmicro(name):
    """sdcMicro has no classical option: the call passes the classical distances and centre
    (``maha=mahalanobis(x, colMeans(x), cov(x)), center=colMeans(x)``)."""
    entry, data, columns, expected = _mv_case(name, "classical")
    out = mv_top_coding(data, columns, alpha=entry["alpha"], estimator="classical")
    np.testing.assert_allclose(_released(out, columns, entry), expected, rtol=1e-9, atol=1e-6)
    changed = (out[columns].to_numpy(dtype=float) != data[columns].to_numpy(dtype=float)).any(axis=1)
    assert int(changed.sum()) == entry["pulled_classical"]


def test_own_robust_estimate_reproduces_sdcmicro_on_tarragona():
    """On Tarragona the project's own reweighted MCD (consistency and small-sample factors as
    robustbase ``covMcd``) finds sdcMicro's estimate: the result agrees without passing it."""
    entry, data, columns, expected = _mv_case("tarrdbl_a025", "robust")
    out = mv_top_coding(data, columns, alpha=entry["alpha"], estimator="robust")
    np.testing.assert_allclose(out[columns].to_numpy(dtype=float), expected, rtol=1e-9, atol=1e-6)


GOWER_CALLS = json.loads((GOLDEN / "m3_gower_calls.json").read_text())
NOMINAL = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]  # factors in sdcMicro's call
AGGREGATED = ["age", "expend", "income", "savings"]


@pytest.mark.parametrize("name", sorted(GOWER_CALLS))
def test_gower_microaggregation_agrees_with_sdcmicro(name):
    """Continuous variables replaced by the mean over each record's 3 nearest records (sdcMicro's
    data.frame method does not pass ``aggr`` on, so the call with ``aggr=5`` uses 3 as well)."""
    call = GOWER_CALLS[name]
    data = pd.read_csv(DATA / "more" / "in_m3_gower_testdata200.csv")
    distance = re.findall(r'"(\w+)"', call.split("dist_var=")[1].split(")")[0])
    scales = {c: "nominal" for c in NOMINAL if c in distance}
    if call.startswith("microaggrGower(g200o,"):  # walls and water ordered factors
        scales.update({c: "ordinal" for c in ("walls", "water") if c in distance})
    weights = re.search(r"weights=c\(([^)]*)\)", call)
    weights = [float(t) for t in weights.group(1).split(",")] if weights else None
    out = microaggregation_gower(data, AGGREGATED, k=3, distance_columns=distance, scales=scales, weights=weights)
    expected = pd.read_csv(GOLDEN / "m3_gower_testdata200.csv")[[f"{name}__{c}" for c in AGGREGATED]].to_numpy()
    np.testing.assert_allclose(out[AGGREGATED].to_numpy(dtype=float), expected, rtol=1e-9, atol=1e-9)


def test_ordinal_step_uses_the_last_level_label_as_sdcmicro():
    """Levels "1", "3", "4", "7" of an ordinal variable: sdcMicro's step between neighbouring levels is
    1 / (7 - 1), not 1 / (4 - 1) (it passes the last label, 7, as the number of levels). Record A
    ("3", x = 0) is 1/6 (ordinal) from B ("4", 0) and 1/4 (x's range is 1) from C ("3", 0.25); the
    Gower distances, halved by the two weights, are 1/12 and 1/8: B is A's nearest other record and
    A's mean over its 2 nearest (itself, B) is 0. With a step of 1/3 it would be C and 0.125."""
    data = pd.DataFrame({
        "o": pd.Categorical(["3", "4", "3", "1"], categories=["1", "3", "4", "7"], ordered=True),
        "x": [0.0, 0.0, 0.25, 1.0],
    })
    out = microaggregation_gower(data, ["x"], k=2, distance_columns=["o", "x"])
    assert out["x"].iloc[0] == 0.0
