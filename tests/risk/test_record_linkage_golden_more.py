"""``risk.record_linkage_risk`` against sdcMicro 5.8.1's ``recordLinkage`` (global distance-based record
linkage: daisy distances, Hungarian one-to-one assignment, ``n_best``, weights, ``tol``).

Expected values: ``tests/data/sdcmicro/golden_more/m6_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R`` and README). Input: CASCrefmicrodata's first 300 records and columns 1-5 and the
noise-added copy ``tests/data/sdcmicro/more/in_m7_recordlinkage_casc300_addnoise50.csv``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.risk import record_linkage_risk

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
LINKAGE = json.loads((GOLDEN / "m6_recordLinkage.json").read_text())
WEIGHTS = [3, 1, 1, 2, 0.5]


@pytest.fixture(scope="module")
def files() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    protected = pd.read_csv(DATA / "more" / "in_m7_recordlinkage_casc300_addnoise50.csv").drop(columns="row")
    original = pd.read_csv(DATA / "CASCrefmicrodata.csv").iloc[:300][protected.columns]
    return original, protected, pd.read_csv(GOLDEN / "m6_recordLinkage_matches.csv")


@pytest.mark.parametrize("name", sorted(LINKAGE))
def test_one_to_one_linkage_agrees_with_sdcmicro(name, files):
    """Same correct links, the same partner for every record (1-based ``y_row`` per original record in
    sdcMicro, the original's position per protected record here) and the same ``n_best``. sdcMicro's
    daisy ignores weights for purely numeric data (``manhattan_w`` equals ``manhattan``): the project
    is called without weights there, as its documentation says."""
    original, protected, matches = files
    entry = LINKAGE[name]
    distance = name.split("_")[0]
    tol = 0.002 if name.endswith("_tol") else float(np.sqrt(np.finfo(float).eps))
    weights = WEIGHTS if name.endswith("_w") and distance == "gower" else None
    result = record_linkage_risk(original, protected, list(protected.columns), distance=distance,
                                 assignment="one_to_one", standardise=False, weights=weights,
                                 count_best=True, tol=tol)
    assert round(result.risk * len(original)) == entry["correct_matches"]
    assert result.risk == pytest.approx(entry["correct_match_rate"], rel=1e-12)
    partner_of_original = np.empty(len(original), dtype=np.int64)
    partner_of_original[result.partner.to_numpy()] = np.arange(len(protected))
    np.testing.assert_array_equal(partner_of_original + 1, matches[f"{name}__y_row"].to_numpy())
    np.testing.assert_array_equal(result.n_best.to_numpy(dtype=np.int64), matches[f"{name}__n_best"].to_numpy())

