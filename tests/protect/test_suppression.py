"""Local suppression (SPEC §8.3) checked with an independent brute-force NA-aware fk (SPEC §2.4)
and against sdcMicro's suppression totals on testdata (tests/data/sdcmicro, golden k=3 summary)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import local_suppression, risk_suppression, suppression_counts
from sdc_dagster.protect.suppression import _CompatibleCounter, _key_codes

DATA = Path(__file__).parents[1] / "data" / "sdcmicro"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
# sdcMicro 5.8.1 localSuppression(sdcObj, k) totals on testdata, default importance (brief + golden k=3).
SDCMICRO_TOTALS = {2: 157, 3: 293, 5: 500}


def brute_force_fk(frame: pd.DataFrame, keys, weight=None):
    """NA-aware fk (and Fk) by comparing every pair of records: NA matches any value (SPEC §2.4)."""
    values = numeric_keys(frame, keys)
    missing = np.isnan(values)
    compatible = ((values[:, None, :] == values[None, :, :]) | missing[:, None, :] | missing[None, :, :]).all(axis=2)
    fk = compatible.sum(axis=1)
    if weight is None:
        return fk
    return fk, compatible @ frame[weight].to_numpy(dtype="float64")


def numeric_keys(frame, keys):
    """Keys as float codes with NaN for missing (pd.factorize makes string keys comparable)."""
    codes = np.column_stack([pd.factorize(frame[k])[0] for k in keys]).astype("float64")
    codes[codes < 0] = np.nan
    return codes


def chunked_fk(frame: pd.DataFrame, keys):
    """brute_force_fk over the distinct keys (weighted by their counts), for larger data."""
    values = numeric_keys(frame, keys)
    filled = np.where(np.isnan(values), -1.0, values)
    distinct, inverse, counts = np.unique(filled, axis=0, return_inverse=True, return_counts=True)
    distinct[distinct < 0] = np.nan
    missing = np.isnan(distinct)
    compatible = (
        (distinct[:, None, :] == distinct[None, :, :]) | missing[:, None, :] | missing[None, :, :]
    ).all(axis=2)
    return (compatible @ counts)[inverse.ravel()]


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA / "testdata.csv")


def test_spec_table_7_2_missing_value_matches_any_value():
    # SPEC §2.4 EXPECTED: (M, usc, emp), (M, usi, emp), (M, NA, emp) -> f = 2, 2, 3.
    frame = pd.DataFrame(
        {"sex": ["M", "M", "M"], "education": ["usc", "usi", None], "status": ["emp", "emp", "emp"]}
    )
    codes, cards = _key_codes(frame, list(frame.columns))
    fk, _ = _CompatibleCounter(codes, cards).counts(codes)
    assert fk.tolist() == [2, 2, 3]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_testdata_reaches_k_anonymity_with_no_more_suppressions_than_sdcmicro(testdata, k):
    before = testdata.copy()
    protected = local_suppression(testdata, KEYS, k=k)
    pd.testing.assert_frame_equal(testdata, before)  # input untouched
    assert protected.index.equals(testdata.index)
    assert (chunked_fk(protected, KEYS) >= k).all()
    counts = suppression_counts(testdata, protected, KEYS)
    assert 0 < counts.sum() <= SDCMICRO_TOTALS[k]
    # suppression only: every other value is released unchanged
    kept = protected[KEYS].notna().to_numpy()
    released = protected[KEYS].astype("float64").to_numpy()
    assert np.array_equal(released[kept], testdata[KEYS].to_numpy(dtype="float64")[kept])
    assert protected.drop(columns=KEYS).equals(testdata.drop(columns=KEYS))


def test_testdata_k3_compared_with_sdcmicro_per_key(testdata):
    golden = json.loads((DATA / "golden" / "d_testdata_localSuppression_k3_summary.json").read_text())["k3"]
    protected = local_suppression(testdata, KEYS, k=3)
    ours = suppression_counts(testdata, protected, KEYS)
    assert golden["total"] == SDCMICRO_TOTALS[3] == sum(golden["suppressions_per_key"].values())
    assert ours.sum() <= golden["total"]
    # Same default importance as sdcMicro: most-categories key (relat) carries most suppressions,
    # and the binary key sex is never needed.
    assert ours.idxmax() == max(golden["suppressions_per_key"], key=golden["suppressions_per_key"].get) == "relat"
    assert ours["sex"] == golden["suppressions_per_key"]["sex"] == 0


def test_importance_moves_suppressions_to_less_important_keys(testdata):
    keep_relat = ["relat", "sex", "urbrur", "walls", "electcon", "roof", "water"]
    default = suppression_counts(testdata, local_suppression(testdata, KEYS, k=3), KEYS)
    protected = local_suppression(testdata, KEYS, k=3, importance=keep_relat)
    custom = suppression_counts(testdata, protected, KEYS)
    assert (chunked_fk(protected, KEYS) >= 3).all()
    assert custom["relat"] < default["relat"]
    assert custom["water"] > default["water"]


def test_existing_missing_values_are_respected_and_counted_as_wildcards():
    frame = pd.DataFrame(
        {"a": [1, 1, 1, 2, 2, np.nan, 3], "b": [1, 1, 2, 2, 2, 1, 3], "c": ["x", "x", "y", "y", "y", "x", "z"]}
    )
    out = local_suppression(frame, ["a", "b", "c"], k=2)
    assert (brute_force_fk(out, ["a", "b", "c"]) >= 2).all()
    assert np.isnan(out.loc[5, "a"])  # already missing stays missing


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=40).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.tuples(
                    st.one_of(st.none(), st.integers(0, 3)),
                    st.one_of(st.none(), st.integers(0, 2)),
                    st.integers(0, 4),
                ),
                min_size=n,
                max_size=n,
            ),
            st.integers(min_value=1, max_value=min(n, 5)),
        )
    )
)
def test_property_k_anonymity_holds_after_suppression(case):
    rows, k = case
    frame = pd.DataFrame(rows, columns=["a", "b", "c"], dtype="float64")
    before = frame.copy()
    out = local_suppression(frame, ["a", "b", "c"], k=k)
    pd.testing.assert_frame_equal(frame, before)
    assert (brute_force_fk(out, ["a", "b", "c"]) >= k).all()
    # values are only ever removed, never changed
    kept = out.notna().to_numpy()
    assert np.array_equal(out.to_numpy()[kept], frame.to_numpy()[kept])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.integers(0, 2)), st.integers(1, 9)),
        min_size=1,
        max_size=30,
    )
)
def test_property_compatible_counts_match_brute_force(rows):
    frame = pd.DataFrame(rows, columns=["a", "b", "w"], dtype="float64")
    codes, cards = _key_codes(frame, ["a", "b"])
    counter = _CompatibleCounter(codes, cards, frame["w"].to_numpy())
    fk, Fk = counter.counts(codes)
    expected_fk, expected_Fk = brute_force_fk(frame, ["a", "b"], weight="w")
    assert fk.tolist() == expected_fk.tolist()
    np.testing.assert_allclose(Fk, expected_Fk)
    # after suppressing in the counter, counts follow the changed data
    counter.suppress(np.array([0]), 1)
    changed = frame.copy()
    changed.loc[0, "a"] = np.nan
    fk, Fk = counter.counts(counter.current)
    expected_fk, expected_Fk = brute_force_fk(changed, ["a", "b"], weight="w")
    assert fk.tolist() == expected_fk.tolist()
    np.testing.assert_allclose(Fk, expected_Fk)


def test_bad_input_names_the_parameter():
    frame = pd.DataFrame({"a": [1, 1, 2], "b": [1, 1, 1]})
    with pytest.raises(SDCInputError, match="'zz'"):
        local_suppression(frame, ["a", "zz"], k=2)
    with pytest.raises(SDCInputError, match="k:"):
        local_suppression(frame, ["a", "b"], k=0)
    with pytest.raises(SDCInputError, match="k:"):
        local_suppression(frame, ["a", "b"], k=4)
    with pytest.raises(SDCInputError, match="importance"):
        local_suppression(frame, ["a", "b"], k=2, importance=["a"])


def test_risk_suppression_brings_individual_risk_below_threshold(testdata):
    protected = risk_suppression(testdata, KEYS, threshold=0.2)
    fk = chunked_fk(protected, KEYS)
    assert (1.0 / fk <= 0.2).all()
    before = 1.0 / chunked_fk(testdata, KEYS)
    assert suppression_counts(testdata, protected, KEYS).sum() <= int((before > 0.2).sum()) * len(KEYS)


def test_risk_suppression_weighted_uses_sdcmicro_approx_risk():
    # francdat with weights: sdcMicro's golden individual risks; suppress until every risk <= 0.05.
    francdat = pd.read_csv(DATA / "francdat.csv")
    keys = ["Key1", "Key2", "Key3", "Key4"]
    protected = risk_suppression(francdat, keys, threshold=0.05, weight="w")
    fk, Fk = brute_force_fk(protected, keys, weight="w")
    p = fk / Fk
    odds = p / (1 - p)
    risk = np.where(
        fk == Fk,
        1 / fk,
        np.where(fk == 1, odds * np.log(1 / p), np.where(fk == 2, odds - odds**2 * np.log(1 / p), p / (fk - (1 - p)))),
    )
    assert (risk <= 0.05).all()
    assert protected[keys].isna().to_numpy().sum() > 0


def test_risk_suppression_with_callable_risk():
    frame = pd.DataFrame({"a": [1, 1, 2, 3], "b": [1, 1, 1, 1]})

    def one_over_fk(data, keys):
        return pd.Series(1.0 / brute_force_fk(data, keys), index=data.index)

    protected = risk_suppression(frame, ["a", "b"], one_over_fk, threshold=0.5)
    assert (one_over_fk(protected, ["a", "b"]) <= 0.5).all()


def test_suppression_counts_per_key():
    original = pd.DataFrame({"a": [1, np.nan, 3], "b": [1, 2, 3]})
    protected = pd.DataFrame({"a": [np.nan, np.nan, 3], "b": [np.nan, np.nan, 3]})
    counts = suppression_counts(original, protected, ["a", "b"])
    assert counts.to_dict() == {"a": 1, "b": 2}
