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
    global_risk_threshold,
    household_risk,
    individual_risk,
    k_anonymity_violations,
    key_frequencies,
    risk_above_threshold,
    risk_table,
    summarise_risk,
)
from sdc_dagster.risk.categorical import (
    exact_risk,
    household_risk_from_individual,
    risk_from_frequencies,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "sdcmicro" / "golden"
SDCMICRO = GOLDEN.parent
PARITY = SDCMICRO / "golden_parity"
# sdcMicro's "exact" risk sums an alternating series in powers p^(-f); its printed values carry that
# rounding (about 1e-13 relative, see exact_risk), so they are compared at 2e-12, not to the last digit.
EXACT_RTOL = 2e-12
PARITY_RTOL = 1e-13
# some golden_parity CSV rows are printed with 16 decimal places (e.g. 0.0004010736432912)
PRINTED_ATOL = 1e-16
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


# --- sdcMicro parity: indivRisk(method=, qual=) and measure_risk(max_global_risk=) ------------

def _testdata2_frame(golden: pd.DataFrame, *, keys: list[str] | None = None, weight: str | None = None) -> pd.DataFrame:
    data = pd.read_csv(SDCMICRO / "testdata2.csv")
    if keys is not None:  # suppressed keys from the golden file (empty = NA)
        data[keys] = golden[keys].to_numpy()
    if weight is not None:
        data[weight] = golden[weight].to_numpy()
    return data


PER_RECORD_CASES = {
    # golden file: (data builder, keys, weight column)
    "f_testdata2_risk_per_record.csv": (lambda g: _testdata2_frame(g), TESTDATA_KEYS, "sampling_weight"),
    "f_testdata2_w2_risk_per_record.csv": (lambda g: _testdata2_frame(g, weight="w2"), TESTDATA_KEYS, "w2"),
    "f_testdata2_4keys_w2_risk_per_record.csv": (
        lambda g: _testdata2_frame(g, weight="w2"), ["urbrur", "roof", "electcon", "sex"], "w2"),
    "f_testdata2_suppressed_risk_per_record.csv": (
        lambda g: _testdata2_frame(g, keys=TESTDATA_KEYS), TESTDATA_KEYS, "sampling_weight"),
    "f_francdat_risk_per_record.csv": (lambda g: pd.read_csv(SDCMICRO / "francdat.csv"), FRANCDAT_KEYS, "w"),
}


@pytest.mark.parametrize("name", sorted(PER_RECORD_CASES))
def test_indivrisk_methods_and_qual_match_sdcmicro(name):
    golden = pd.read_csv(PARITY / name)
    build, keys, weight = PER_RECORD_CASES[name]
    data = build(golden)
    freq = key_frequencies(data, keys, weight=weight)
    np.testing.assert_array_equal(freq["fk"].to_numpy(), golden["fk"].to_numpy())
    np.testing.assert_allclose(freq["Fk"].to_numpy(), golden["Fk"].to_numpy(), rtol=PARITY_RTOL)
    for column, method, qual, rtol in [
        ("risk_approx", "approx", 1.0, PARITY_RTOL),
        ("risk_approx_qual", "approx", 0.8, PARITY_RTOL),
        ("risk_exact", "exact", 1.0, EXACT_RTOL),
        ("risk_exact_qual", "exact", 0.8, EXACT_RTOL),
    ]:
        risk = individual_risk(data, keys, weight=weight, method=method, qual=qual)
        np.testing.assert_allclose(risk.to_numpy(), golden[column].to_numpy(), rtol=rtol, atol=PRINTED_ATOL,
                                   err_msg=column)
    np.testing.assert_allclose(individual_risk(data, keys).to_numpy(), golden["risk_survey_false"].to_numpy(),
                               rtol=PARITY_RTOL, atol=PRINTED_ATOL)


@pytest.fixture(scope="module")
def testdata_varied_weight(testdata) -> pd.DataFrame:
    """make_golden_parity_testdata.R: w = sampling_weight * (1 + (row mod 7) / 10), row 1-based."""
    row = np.arange(1, len(testdata) + 1)
    return testdata.assign(w=testdata["sampling_weight"] * (1 + (row % 7) / 10))


def test_indivrisk_on_testdata_matches_sdcmicro_where_sdcmicro_is_finite(testdata_varied_weight):
    golden = pd.read_csv(PARITY / "f_testdata_indivRisk_weighted.csv")
    data = testdata_varied_weight
    np.testing.assert_allclose(data["w"].to_numpy(), golden["w"].to_numpy(), rtol=1e-15)
    freq = key_frequencies(data, TESTDATA_KEYS, weight="w")
    np.testing.assert_array_equal(freq["fk"].to_numpy(), golden["fk"].to_numpy())
    # the golden file is printed with at most 15 significant digits and 16 decimal places
    np.testing.assert_allclose(freq["Fk"].to_numpy(), golden["Fk"].to_numpy(), rtol=1e-14)
    approx = individual_risk(data, TESTDATA_KEYS, weight="w")
    np.testing.assert_allclose(approx.to_numpy(), golden["approx"].to_numpy(), rtol=1e-14, atol=PRINTED_ATOL)
    qual = individual_risk(data, TESTDATA_KEYS, weight="w", qual=0.9)
    np.testing.assert_allclose(qual.to_numpy(), golden["qual_0_9"].to_numpy(), rtol=1e-14, atol=PRINTED_ATOL)

    exact = individual_risk(data, TESTDATA_KEYS, weight="w", method="exact").to_numpy()
    finite = golden["exact"].notna().to_numpy()
    np.testing.assert_allclose(exact[finite], golden["exact"].to_numpy()[finite], rtol=EXACT_RTOL,
                               atol=PRINTED_ATOL)
    # sdcMicro overflows (NaN) for the 326 records with fk >= 150; there the value is checked against
    # the definition E(1/F | f) under the negative binomial, summed directly with scipy
    assert (~finite).sum() == 326 and golden.loc[~finite, "fk"].min() == 150
    assert np.isfinite(exact).all()
    from scipy.stats import nbinom

    for f, F in golden.loc[~finite, ["fk", "Fk"]].drop_duplicates().itertuples(index=False):
        p = f / F
        extra = np.arange(0, 200_000)
        expected = float(np.sum(nbinom.pmf(extra, f, p) / (f + extra)))
        got = exact[(golden["fk"].to_numpy() == f) & (golden["Fk"].to_numpy() == F)]
        np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_measure_risk_global_figures_with_varied_weights(testdata_varied_weight):
    golden = json.loads((PARITY / "f_testdata_measure_risk_threshold.json").read_text())
    result = global_risk(testdata_varied_weight, TESTDATA_KEYS, weight="w")
    assert result["risk"] == pytest.approx(golden["global_risk"], rel=1e-14)
    assert result["expected_reidentifications"] == pytest.approx(golden["global_risk_ER"], rel=1e-14)


GLOBAL_CASES = {
    "testdata2": "f_testdata2_risk_per_record.csv",
    "testdata2_w2": "f_testdata2_w2_risk_per_record.csv",
    "testdata2_4keys_w2": "f_testdata2_4keys_w2_risk_per_record.csv",
    "testdata2_suppressed": "f_testdata2_suppressed_risk_per_record.csv",
    "francdat": "f_francdat_risk_per_record.csv",
}


@pytest.mark.parametrize("case", sorted(GLOBAL_CASES))
def test_global_risk_threshold_matches_measure_risk(case):
    golden = json.loads((PARITY / "f_risk_global.json").read_text())[case]
    per_record = pd.read_csv(PARITY / GLOBAL_CASES[case])
    build, keys, weight = PER_RECORD_CASES[GLOBAL_CASES[case]]
    risk = individual_risk(build(per_record), keys, weight=weight)
    assert golden["by_max_global_risk"]
    for call in golden["by_max_global_risk"]:
        result = global_risk_threshold(risk, max_global_risk=call["max_global_risk"])
        assert result.global_risk == pytest.approx(call["global_risk"], rel=1e-14)
        expected = call["global_threshold"]
        if expected is None:
            assert result.threshold is None and len(result.records) == 0
        else:
            assert result.threshold == pytest.approx(expected, rel=1e-14, abs=0)
            assert result.records.equals(risk.index[risk.to_numpy() > result.threshold])


def test_global_risk_threshold_worked_example():
    """Hand computation of the mu-Argus rule: risks 0.5, 0.3, 0.3, 0.1, 0.1 (sum 1.3), target 0.15,
    ER = 0.75. Level 0.3: 0.3 + 0.3 + 0.1 + 0.1 + 0.3·1 = 1.1 >= 0.75; level 0.1: 0.2 + 0.1·3 = 0.5 < 0.75,
    so the threshold is 0.1 and the three records above it are to be treated."""
    risk = pd.Series([0.1, 0.5, 0.3, 0.1, 0.3], index=list("abcde"))
    result = global_risk_threshold(risk, max_global_risk=0.15)
    assert result.threshold == 0.1
    assert list(result.records) == ["b", "c", "e"]
    assert result.global_risk == pytest.approx(0.26)
    assert global_risk_threshold(risk, max_global_risk=0.3).threshold is None  # 0.26 < 0.3 already
    assert global_risk_threshold(pd.Series([0.2, 0.2]), max_global_risk=0.1).threshold == 0.0


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), target=st.floats(0.01, 0.99))
def test_treating_the_named_records_brings_the_global_risk_below_target(values, target):
    risk = pd.Series(values)
    result = global_risk_threshold(risk, max_global_risk=target)
    if result.threshold is None:
        assert risk.sum() < target * len(risk)
        return
    capped = np.minimum(risk.to_numpy(), result.threshold)
    assert list(result.records) == list(np.flatnonzero(risk.to_numpy() > result.threshold))
    if result.threshold > 0:  # a level was found: capping the records above it reaches the target
        assert capped.sum() < target * len(risk) * (1 + 1e-12)


def test_exact_equals_approx_for_one_and_two_and_agrees_for_large_frequencies():
    fk = np.array([1.0, 2.0, 1.0, 2.0])
    Fk = np.array([7.0, 9.0, 1.5, 2.5])
    np.testing.assert_allclose(exact_risk(fk, Fk), risk_from_frequencies(fk, Fk, weighted=True), rtol=1e-13)
    # f = 3, F = 4 (p >= 1/2, the series branch): E(1/F) by the definition, summed in closed steps
    from scipy.stats import nbinom

    for f, F in [(3, 4), (3, 5), (40, 60), (7, 700)]:
        extra = np.arange(0, 400_000)
        expected = float(np.sum(nbinom.pmf(extra, f, f / F) / (f + extra)))
        assert exact_risk(np.array([float(f)]), np.array([float(F)]))[0] == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"method": "median"}, "method"), ({"qual": 0.0}, "qual"), ({"qual": -1.0}, "qual"), ({"qual": np.inf}, "qual"),
     ({"qual": True}, "qual")],
)
def test_bad_method_or_qual_rejected(kwargs, message):
    data = pd.DataFrame({"a": [1, 1, 2], "w": [5.0, 5.0, 3.0]})
    with pytest.raises(SDCInputError, match=message):
        individual_risk(data, ["a"], weight="w", **kwargs)


def test_qual_above_one_scales_the_risk_as_sdcmicro():
    """sdcMicro's indivRisk ends with ``rk <- rk * qual`` for any qual (R/indivRisk.R): a qual above 1 is
    accepted and scales the risk up, past 1 where it goes (issue 37: qual above 1 was refused)."""
    data = pd.DataFrame({"a": [1, 1, 2], "w": [5.0, 5.0, 3.0]})
    # Hand computation: records 1, 2: f = 2, F = 10, p = 0.2, odds p/(1-p) = 0.25,
    #   r = 0.25 - 0.25^2 ln 5 = 0.25 - 0.0625 * 1.6094379124341003 = 0.14941013047286873;
    # record 3: f = 1, F = 3, p = 1/3, odds 0.5, r = 0.5 ln 3 = 0.5493061443340549. Times qual = 1.5:
    risk = individual_risk(data, ["a"], weight="w", qual=1.5)
    np.testing.assert_allclose(risk.to_numpy(), [0.2241151957093031, 0.2241151957093031, 0.8239592165010823],
                               rtol=1e-14)
    # without weights 1/f times qual: the sample unique gets risk 2
    np.testing.assert_allclose(individual_risk(data, ["a"], qual=2.0).to_numpy(), [1.0, 1.0, 2.0], rtol=0)
    # on sdcMicro's golden output (f_testdata2_risk_per_record.csv, qual = 1), qual = 1.25 is 1.25 times it
    golden = pd.read_csv(PARITY / "f_testdata2_risk_per_record.csv")
    data = _testdata2_frame(golden)
    for column, method in [("risk_approx", "approx"), ("risk_exact", "exact")]:
        scaled = individual_risk(data, TESTDATA_KEYS, weight="sampling_weight", method=method, qual=1.25)
        np.testing.assert_allclose(scaled.to_numpy(), 1.25 * golden[column].to_numpy(), rtol=EXACT_RTOL,
                                   atol=1.25 * PRINTED_ATOL, err_msg=column)


# sdcMicro's tests/testthat/test_indivRisk.R: keys A, B, C (R's column-wise array), weights; qual = 2
SDCMICRO_INDIVRISK = pd.DataFrame({
    "A": [2, 3, 2, 2, 3, 3, 1, 2], "B": [3, 3, 3, 3, 3, 3, 4, 3], "C": [1, 3, 1, 2, 1, 1, 1, 1],
    "weight": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51],
})


@pytest.mark.parametrize(
    ("missing", "method", "expected"),
    [
        (False, "approx", [0.02739726, 0.17158258, 0.02739726, 0.35415167, 0.03755767, 0.03755767, 0.07863251, 0.02739726]),
        (False, "exact", [0.02710594, 0.17158258, 0.02710594, 0.35415167, 0.03755767, 0.03755767, 0.07863251, 0.02710594]),
        (True, "approx", [0.02739726, 0.17158258, 0.02110818, 0.06493222, 0.01967213, 0.01967213, 0.07863251, 0.01194743]),
        (True, "exact", [0.02710594, 0.17158258, 0.02100978, 0.06493222, 0.01951378, 0.01951378, 0.07863251, 0.01192510]),
    ],
)
def test_sdcmicro_indivrisk_tests_with_qual_two(missing, method, expected):
    """sdcMicro's own expectations for indivRisk(fr, method=, qual = 2) (printed to 8 digits), without and with
    missing key values (A[8], C[3], C[7] missing in its second data set)."""
    data = SDCMICRO_INDIVRISK.astype({"A": float, "C": float})
    if missing:
        data.loc[7, "A"] = np.nan
        data.loc[[2, 6], "C"] = np.nan
    risk = individual_risk(data, ["A", "B", "C"], weight="weight", method=method, qual=2)
    np.testing.assert_allclose(risk.to_numpy(), expected, rtol=5e-7, atol=5e-9)
    # unweighted, qual = 2: 2 / fk (sdcMicro: 0.66667, 2, 0.66667, 2, 1, 1, 2, 0.66667 without missing values;
    # 0.66667, 2, 0.5, 1, 0.66667, 0.66667, 2, 0.4 with them)
    unweighted = [0.66667, 2, 0.5, 1, 0.66667, 0.66667, 2, 0.4] if missing else [0.66667, 2, 0.66667, 2, 1, 1, 2, 0.66667]
    np.testing.assert_allclose(individual_risk(data, ["A", "B", "C"], qual=2).round(5).to_numpy(), unweighted, rtol=0)


def test_exact_rejects_fractional_frequencies():
    data = pd.DataFrame({"a": [1.0, np.nan, 2.0], "b": [1.0, 1.0, np.nan], "w": [5.0, 5.0, 3.0]})
    with pytest.raises(SDCInputError, match="exact"):
        individual_risk(data, ["a", "b"], weight="w", method="exact", alpha=0.5)
    with pytest.raises(SDCInputError, match="max_global_risk"):
        global_risk_threshold(pd.Series([0.1]), max_global_risk=1.0)


@settings(max_examples=200, deadline=None)
@given(f=st.integers(1, 400), extra=st.floats(0.0, 1e5, allow_nan=False), qual=st.floats(0.05, 5.0))
def test_exact_risk_lies_between_one_over_F_and_one_over_f(f, extra, qual):
    """E(1/F | f) with F >= f: at most 1/f; by Jensen at least 1/E(F | f) = p/f = 1/F (the model's F)."""
    F = f + extra
    risk = exact_risk(np.array([float(f)]), np.array([F]))[0]
    assert 1.0 / F * (1 - 1e-12) <= risk <= 1.0 / f * (1 + 1e-12)
    scaled = risk_from_frequencies(np.array([float(f)]), np.array([F]), weighted=True, method="exact", qual=qual)[0]
    assert scaled == pytest.approx(qual * risk, rel=1e-15)
