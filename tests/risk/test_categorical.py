"""Individual, global and household risk and k-anonymity (SPEC §2.5, §3.1–§3.5) against the SDC
Practice Guide's worked example and sdcMicro 5.8.1 golden outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import (
    global_risk,
    household_risk,
    individual_risk,
    k_anonymity_violations,
    key_frequencies,
    risk_above_threshold,
    risk_table,
    summarise_risk,
)
from sdc_dagster.risk.categorical import (
    household_risk_from_individual,
    risk_from_frequencies,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "golden"
SDCMICRO = GOLDEN.parent
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
FRANCDAT_KEYS = ["Key1", "Key2", "Key3", "Key4"]
RTOL = 1e-8

TABLE_7_1_KEYS = ["area", "gender", "education", "labour_status"]


@pytest.fixture
def table_7_1() -> pd.DataFrame:
    """SPEC §2.5: SDC Practice Guide Table 7.1."""
    rows = [
        ("urban", "female", "secondary incomplete", "employed", 180),
        ("urban", "female", "secondary incomplete", "employed", 180),
        ("urban", "female", "primary incomplete", "not in labour force", 215),
        ("urban", "male", "secondary complete", "employed", 76),
        ("rural", "female", "secondary complete", "unemployed", 186),
        ("urban", "male", "secondary complete", "employed", 76),
        ("urban", "female", "primary complete", "not in labour force", 180),
        ("urban", "male", "post-secondary", "unemployed", 215),
        ("urban", "female", "secondary incomplete", "not in labour force", 186),
        ("urban", "female", "secondary incomplete", "not in labour force", 76),
    ]
    return pd.DataFrame(rows, columns=[*TABLE_7_1_KEYS, "w"])


@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    return pd.read_csv(SDCMICRO / "testdata.csv")


@pytest.fixture(scope="module")
def francdat() -> pd.DataFrame:
    return pd.read_csv(SDCMICRO / "francdat.csv")


# --- SPEC §2.5 / §3 worked example (Practice Guide Table 7.1) -------------------------------

def test_table_7_1_frequencies(table_7_1):
    freq = key_frequencies(table_7_1, TABLE_7_1_KEYS, weight="w")
    assert freq["fk"].tolist() == [2, 2, 1, 2, 1, 2, 1, 1, 2, 2]
    assert freq["Fk"].tolist() == [360, 360, 215, 152, 186, 152, 180, 215, 262, 262]
    assert table_7_1[TABLE_7_1_KEYS].drop_duplicates().shape[0] == 7
    assert int((freq["fk"] == 1).sum()) == 4
    assert freq.index[freq["fk"] == 1].tolist() == [2, 4, 6, 7]  # records 3, 5, 7, 8


def test_table_7_1_individual_risk_to_printed_precision(table_7_1):
    risk = individual_risk(table_7_1, TABLE_7_1_KEYS, weight="w")
    printed = [0.0054, 0.0054, 0.0251, 0.0126, 0.0282, 0.0126, 0.029, 0.0251, 0.0074, 0.0074]
    assert risk.round(4).tolist() == printed
    assert round(risk.iloc[6], 5) == 0.02901  # SPEC: "0.029 is 0.02901"


def test_table_7_1_global_risk_and_counts(table_7_1):
    result = global_risk(table_7_1, TABLE_7_1_KEYS, weight="w")
    assert round(result["risk"], 5) == 0.01582
    assert round(result["risk"], 7) == 0.0158235
    assert round(result["expected_reidentifications"], 4) == 0.1582
    assert k_anonymity_violations(table_7_1, TABLE_7_1_KEYS, 2) == 4
    assert k_anonymity_violations(table_7_1, TABLE_7_1_KEYS, 3) == 10
    assert risk_above_threshold(individual_risk(table_7_1, TABLE_7_1_KEYS, weight="w"), 0.05) == 0


def test_household_risk_worked_example():
    # SPEC §3.5: members 0.02, 0.03, 0.03 -> 0.078 (exact 0.077918)
    hier = household_risk_from_individual(np.array([0.02, 0.03, 0.03, 0.5]), np.array([7, 7, 7, 8]))
    assert round(hier[0], 6) == 0.077918
    assert round(hier[0], 3) == 0.078
    assert hier[1] == hier[2] == hier[0]
    assert hier[3] == 0.5


def test_household_risk_from_data_is_at_least_each_members_risk(table_7_1):
    data = table_7_1.assign(hh=[1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    risk = individual_risk(data, TABLE_7_1_KEYS, weight="w")
    hier = household_risk(data, TABLE_7_1_KEYS, "hh", weight="w")
    assert hier.tolist() == pytest.approx(
        (1 - (1 - risk).groupby(data["hh"]).transform("prod")).tolist(), rel=1e-12
    )
    assert (hier >= risk - 1e-15).all()


# --- sdcMicro golden outputs --------------------------------------------------------------

def test_testdata_per_record_matches_sdcmicro(testdata):
    golden = pd.read_csv(GOLDEN / "a_testdata_risk_per_record.csv")
    freq = key_frequencies(testdata, TESTDATA_KEYS, weight="sampling_weight")
    np.testing.assert_array_equal(freq["fk"].to_numpy(), golden["fk"].to_numpy())
    np.testing.assert_allclose(freq["Fk"].to_numpy(), golden["Fk"].to_numpy(), rtol=RTOL)
    risk = individual_risk(testdata, TESTDATA_KEYS, weight="sampling_weight")
    np.testing.assert_allclose(risk.to_numpy(), golden["risk"].to_numpy(), rtol=RTOL)
    hier = household_risk(testdata, TESTDATA_KEYS, "ori_hid", weight="sampling_weight")
    np.testing.assert_allclose(hier.to_numpy(), golden["hier_risk"].to_numpy(), rtol=RTOL)


def test_risk_table_is_one_pass_of_the_same_measures(testdata):
    golden = pd.read_csv(GOLDEN / "a_testdata_risk_per_record.csv")
    table = risk_table(testdata, TESTDATA_KEYS, weight="sampling_weight", household="ori_hid")
    np.testing.assert_array_equal(table["fk"].to_numpy(), golden["fk"].to_numpy())
    np.testing.assert_allclose(table["Fk"].to_numpy(), golden["Fk"].to_numpy(), rtol=RTOL)
    np.testing.assert_allclose(table["risk"].to_numpy(), golden["risk"].to_numpy(), rtol=RTOL)
    np.testing.assert_allclose(table["household_risk"].to_numpy(), golden["hier_risk"].to_numpy(), rtol=RTOL)
    summary = json.loads((GOLDEN / "a_testdata_risk_global.json").read_text())["global"]
    figures = summarise_risk(table)
    assert figures["risk"] == pytest.approx(summary["risk"], rel=RTOL)
    assert figures["household_expected_reidentifications"] == pytest.approx(summary["hier_risk_ER"], rel=RTOL)


def test_testdata_variants_match_sdcmicro(testdata):
    golden = pd.read_csv(GOLDEN / "a_testdata_risk_per_record_variants.csv")
    np.testing.assert_allclose(
        individual_risk(testdata, TESTDATA_KEYS, weight="sampling_weight").to_numpy(),
        golden["risk_no_hhid"].to_numpy(), rtol=RTOL,
    )
    freq = key_frequencies(testdata, TESTDATA_KEYS)
    np.testing.assert_array_equal(freq["fk"].to_numpy(), golden["fk_noweights"].to_numpy())
    np.testing.assert_array_equal(freq["Fk"].to_numpy(), golden["Fk_noweights"].to_numpy())
    np.testing.assert_allclose(
        individual_risk(testdata, TESTDATA_KEYS).to_numpy(), golden["risk_noweights"].to_numpy(), rtol=RTOL
    )


def test_testdata_global_figures_match_sdcmicro(testdata):
    golden = json.loads((GOLDEN / "a_testdata_risk_global.json").read_text())
    result = global_risk(testdata, TESTDATA_KEYS, weight="sampling_weight", household="ori_hid")
    assert result["risk"] == pytest.approx(golden["global"]["risk"], rel=RTOL)
    assert result["expected_reidentifications"] == pytest.approx(golden["global"]["risk_ER"], rel=RTOL)
    assert result["household_risk"] == pytest.approx(golden["global"]["hier_risk"], rel=RTOL)
    assert result["household_expected_reidentifications"] == pytest.approx(golden["global"]["hier_risk_ER"], rel=RTOL)

    no_hh = global_risk(testdata, TESTDATA_KEYS, weight="sampling_weight")
    assert set(no_hh) == {"risk", "expected_reidentifications"}
    assert no_hh["risk"] == pytest.approx(golden["variant_no_hhid"]["global"]["risk"], rel=RTOL)

    unweighted = global_risk(testdata, TESTDATA_KEYS)
    assert unweighted["risk"] == pytest.approx(golden["variant_no_weights"]["global"]["risk"], rel=RTOL)
    assert unweighted["expected_reidentifications"] == pytest.approx(
        golden["variant_no_weights"]["global"]["risk_ER"], rel=RTOL
    )

    for k in (2, 3, 5):
        assert k_anonymity_violations(testdata, TESTDATA_KEYS, k) == golden["kAnon_violations"][f"k{k}_unweighted_fk_lt_k"]
    freq = key_frequencies(testdata, TESTDATA_KEYS)
    assert int((freq["fk"] == 1).sum()) == golden["n_sample_uniques_fk1"]
    assert testdata[TESTDATA_KEYS].drop_duplicates().shape[0] == golden["n_distinct_key_combinations"]
    weighted = individual_risk(testdata, TESTDATA_KEYS, weight="sampling_weight")
    assert weighted.max() == pytest.approx(golden["max_risk"], rel=RTOL)


@pytest.mark.parametrize("variant", ["weighted", "unweighted"])
def test_francdat_matches_sdcmicro(francdat, variant):
    summary = json.loads((GOLDEN / "c_francdat_summary.json").read_text())[variant]
    golden = pd.read_csv(GOLDEN / f"c_francdat_{variant}.csv")
    weight = "w" if variant == "weighted" else None
    freq = key_frequencies(francdat, FRANCDAT_KEYS, weight=weight)
    np.testing.assert_array_equal(freq["fk"].to_numpy(), golden["fk"].to_numpy())
    np.testing.assert_allclose(freq["Fk"].to_numpy(), golden["Fk"].to_numpy(), rtol=RTOL)
    risk = individual_risk(francdat, FRANCDAT_KEYS, weight=weight)
    np.testing.assert_allclose(risk.to_numpy(), golden["indivRisk_rk"].to_numpy(), rtol=RTOL)
    np.testing.assert_allclose(risk.to_numpy(), golden["mr_risk"].to_numpy(), rtol=RTOL)
    result = global_risk(francdat, FRANCDAT_KEYS, weight=weight)
    assert result["risk"] == pytest.approx(summary["global_risk"], rel=RTOL)
    assert result["expected_reidentifications"] == pytest.approx(summary["global_risk_ER"], rel=RTOL)
    assert int((freq["fk"] == 1).sum()) == summary["n_sample_uniques"]


# --- formula branches ----------------------------------------------------------------------

def test_risk_branches_follow_sdcmicro_indivrisk_approx():
    fk = np.array([1.0, 2.0, 5.0, 3.0, 1.5])
    Fk = np.array([10.0, 10.0, 20.0, 3.0, 10.0])
    risk = risk_from_frequencies(fk, Fk, weighted=True)
    p = fk / Fk
    assert risk[0] == pytest.approx(p[0] / (1 - p[0]) * np.log(1 / p[0]), rel=1e-14)
    assert risk[1] == pytest.approx(p[1] / (1 - p[1]) - (p[1] / (1 - p[1])) ** 2 * np.log(1 / p[1]), rel=1e-14)
    assert risk[2] == pytest.approx(p[2] / (fk[2] - (1 - p[2])), rel=1e-14)
    assert risk[3] == pytest.approx(1 / 3, rel=1e-14)  # f == F
    assert risk[4] == 0.0  # fractional 1 < f < 2 falls through sdcMicro's branches
    assert risk_from_frequencies(fk, Fk, weighted=False).tolist() == pytest.approx((1 / fk).tolist())


def test_population_frequency_below_sample_frequency_rejected():
    data = pd.DataFrame({"a": [1, 1, 2], "w": [0.5, 0.5, 3.0]})
    with pytest.raises(SDCInputError, match="weight 'w'"):
        individual_risk(data, ["a"], weight="w")


def test_risk_above_relative_threshold_counts_above_quantile():
    risk = pd.Series([0.1, 0.2, 0.3, 0.4, 0.5])
    assert risk_above_threshold(risk, 0.75, relative=True) == 1  # upper quartile 0.4
    assert risk_above_threshold(risk, 0.25) == 3
    assert risk_above_threshold(risk, 0.3) == 2  # strictly above
    with pytest.raises(SDCInputError, match="threshold"):
        risk_above_threshold(risk, 1.5, relative=True)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda d: individual_risk(d, ["a", "zz"]), "'zz'"),
        (lambda d: individual_risk(d, []), "empty"),
        (lambda d: individual_risk(d, ["a"], weight="t"), "'t'"),
        (lambda d: global_risk(d, ["a"], weight="bad"), "'bad'"),
        (lambda d: global_risk(d, ["a"], household="hh_na"), "'hh_na'"),
        (lambda d: household_risk(d, ["a"], "nope"), "'nope'"),
        (lambda d: k_anonymity_violations(d, ["a"], 0), "k"),
        (lambda d: k_anonymity_violations(d, ["zz"], 2), "'zz'"),
    ],
)
def test_bad_input_raises_naming_column(call, message):
    data = pd.DataFrame({"a": [1, 2], "t": ["x", "y"], "bad": [1.0, 0.0], "hh_na": [1, None]})
    with pytest.raises(SDCInputError, match=message):
        call(data)


def test_inputs_not_modified(table_7_1):
    before = table_7_1.copy()
    global_risk(table_7_1.assign(hh=1), TABLE_7_1_KEYS, weight="w", household="hh")
    pd.testing.assert_frame_equal(table_7_1, before)


# --- properties -------------------------------------------------------------------------

keyed_frames = st.builds(
    lambda n, seed, na: _random_frame(n, seed, na),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    na=st.sampled_from([0.0, 0.2]),
)


def _random_frame(n: int, seed: int, na: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({f"k{j}": rng.integers(0, 3, n).astype(float) for j in range(3)})
    data = data.mask(rng.random(data.shape) < na)
    data["w"] = rng.uniform(1.0, 50.0, n)
    data["hh"] = rng.integers(0, max(n // 3, 1), n)
    return data


@settings(max_examples=60, deadline=None)
@given(data=keyed_frames, alpha=st.sampled_from([0.0, 0.5, 1.0]))
def test_risks_lie_in_unit_interval_for_weights_at_least_one(data, alpha):
    keys = ["k0", "k1", "k2"]
    for weight in ("w", None):
        risk = individual_risk(data, keys, weight=weight, alpha=alpha)
        assert ((risk >= 0) & (risk <= 1)).all()
    hier = household_risk(data, keys, "hh", weight="w", alpha=alpha)
    assert ((hier >= 0) & (hier <= 1)).all()
    result = global_risk(data, keys, weight="w", household="hh", alpha=alpha)
    assert 0 <= result["risk"] <= result["household_risk"] + 1e-12 <= 1 + 1e-12


@settings(max_examples=40, deadline=None)
@given(data=keyed_frames)
def test_k_anonymity_violations_non_decreasing_in_k(data):
    counts = [k_anonymity_violations(data, ["k0", "k1", "k2"], k) for k in (1, 2, 3, 5, 8)]
    assert counts[0] == 0
    assert all(a <= b for a, b in zip(counts, counts[1:]))
    assert counts[-1] <= len(data)


def test_risk_table_reuses_given_frequencies(testdata):
    freq = key_frequencies(testdata, TESTDATA_KEYS, weight="sampling_weight")
    reused = risk_table(testdata, TESTDATA_KEYS, weight="sampling_weight", household="ori_hid", frequencies=freq)
    fresh = risk_table(testdata, TESTDATA_KEYS, weight="sampling_weight", household="ori_hid")
    pd.testing.assert_frame_equal(reused, fresh)
