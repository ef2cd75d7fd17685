"""Młodak's combined risk (SPEC §5): hand-computed examples, bounds and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import combined_risk, global_combined_risk, neighbourhood_counts
from sdc_dagster.risk.combined import prepare_combined


@pytest.fixture
def hand_data():
    # A: frequencies 3,3,3,2,2,1.  X (p = 0.05): 100,101,102 see each other (eta = 2); 150, 200 and 0
    # see nobody.  Y (p = 0.03): -10 and -10.2 see each other only (eta = 1); the three 5s see
    # two others; -3 sees nobody.  With k = 2: w_X = 0,0,0,1,1,1 and w_Y = 1,1,0,0,0,1.
    return pd.DataFrame(
        {
            "A": [1, 1, 1, 2, 2, 3],
            "X": [100.0, 101.0, 102.0, 150.0, 200.0, 0.0],
            "Y": [-10.0, -10.2, 5.0, 5.0, 5.0, -3.0],
            "w": [10.0, 20.0, 30.0, 5.0, 5.0, 2.0],
        },
        index=list("abcdef"),
    )


PRECISION = {"X": 0.05, "Y": 0.03}


def test_neighbourhood_counts_by_hand(hand_data):
    np.testing.assert_array_equal(neighbourhood_counts(hand_data["X"], 0.05), [2, 2, 2, 0, 0, 0])
    np.testing.assert_array_equal(neighbourhood_counts(hand_data["Y"], 0.03), [1, 1, 2, 2, 2, 0])
    # closed interval, exact in binary: at p = 0.5 the interval of 4 is [2, 6] and holds 2 and 6;
    # that of 2 is [1, 3] (nobody), that of 6 is [3, 9] (holds 4); 0 only matches 0; -4 -> [-6, -2]
    np.testing.assert_array_equal(
        neighbourhood_counts([2.0, 4.0, 6.0, 0.0, 0.0, -4.0, -6.0], 0.5), [0, 2, 1, 1, 1, 1, 1]
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([-50.0, -10.0, -9.9, -0.5, 0.0, 0.5, 1.0, 1.04, 9.0, 10.0, 10.5, 11.0, np.nan]), min_size=1, max_size=40),
    st.sampled_from([0.01, 0.05, 0.1, 0.5, 0.99]),
)
def test_neighbourhood_counts_match_pairwise_definition(values, p):
    """Pairwise count; a missing value (SPEC §5.8) is in no interval and has no count (NaN)."""
    x = np.array(values)
    before = x.copy()
    lo, hi = np.minimum((1 - p) * x, (1 + p) * x), np.maximum((1 - p) * x, (1 + p) * x)
    expected = ((x[None, :] >= lo[:, None]) & (x[None, :] <= hi[:, None])).sum(axis=1) - 1.0
    expected[np.isnan(x)] = np.nan
    np.testing.assert_array_equal(neighbourhood_counts(x, p), expected)
    np.testing.assert_array_equal(x, before)


def test_combined_risk_by_hand(hand_data):
    before = hand_data.copy()
    out = combined_risk(hand_data, ["A"], ["X", "Y"], PRECISION, k=2)
    assert list(out.columns) == ["categorical", "continuous", "risk"]
    assert out.index.equals(hand_data.index)
    np.testing.assert_allclose(out["categorical"], [1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2, 1])
    np.testing.assert_allclose(out["continuous"], [0.5, 0.5, 0, 0.5, 0.5, 1])
    np.testing.assert_allclose(out["risk"], [5 / 12, 5 / 12, 1 / 6, 1 / 2, 1 / 2, 1])
    assert global_combined_risk(hand_data, ["A"], ["X", "Y"], PRECISION, k=2) == pytest.approx(
        (5 / 12 + 5 / 12 + 1 / 6 + 1 / 2 + 1 / 2 + 1) / 6
    )
    pd.testing.assert_frame_equal(hand_data, before)


def test_weighted_combined_risk_by_hand(hand_data):
    # F^: A=1 -> 60, A=2 -> 10, A=3 -> 2.  f/(f + F(f-1)): 3/123, 2/12, 1/1.  Weights >= 1: w* = w.
    out = combined_risk(hand_data, ["A"], ["X", "Y"], PRECISION, k=2, weight="w")
    first = np.array([3 / 123, 3 / 123, 3 / 123, 1 / 6, 1 / 6, 1.0])
    np.testing.assert_allclose(out["categorical"], first)
    np.testing.assert_allclose(out["risk"], 0.5 * (first + np.array([0.5, 0.5, 0, 0.5, 0.5, 1])))
    # omega = 0.6: floor(0.6·eta) < 2 for every eta <= 3, so every value is unsafe.
    out = combined_risk(hand_data, ["A"], ["X", "Y"], PRECISION, k=2, weight="w", omega=0.6)
    np.testing.assert_allclose(out["continuous"], 1.0)
    # omega as a column: record "c" has omega 0.6 (eta_X = 2 -> floor(1.2) = 1 < 2 -> unsafe).
    data = hand_data.assign(om=[1.0, 1.0, 0.6, 1.0, 1.0, 1.0])
    out = combined_risk(data, ["A"], ["X", "Y"], PRECISION, k=2, weight="w", omega="om")
    np.testing.assert_allclose(out["continuous"], [0.5, 0.5, 1.0, 0.5, 0.5, 1])


def test_weights_equal_to_one_give_census_measure(hand_data):
    data = hand_data.assign(w=1.0)
    np.testing.assert_allclose(
        combined_risk(data, ["A"], ["X", "Y"], PRECISION, k=2, weight="w")["risk"],
        combined_risk(data, ["A"], ["X", "Y"], PRECISION, k=2)["risk"],
    )


def test_edge_cases_h_equals_m_and_h_zero(hand_data):
    """OPEN of SPEC §5.5: the risk is the average of the components that exist."""
    only_cat = combined_risk(hand_data, ["A"], [], {}, k=2)
    np.testing.assert_allclose(only_cat["risk"], [1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2, 1])
    assert only_cat["continuous"].isna().all()
    only_cont = combined_risk(hand_data, [], ["X", "Y"], PRECISION, k=2)
    np.testing.assert_allclose(only_cont["risk"], [0.5, 0.5, 0, 0.5, 0.5, 1])
    assert only_cont["categorical"].isna().all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
            st.lists(st.floats(-100, 100, allow_nan=False), min_size=n, max_size=n),
            st.lists(st.floats(0.05, 500, allow_nan=False), min_size=n, max_size=n),
        )
    ),
    st.integers(1, 5),
)
def test_risk_in_unit_interval(columns, k):
    a, x, w = columns
    data = pd.DataFrame({"A": a, "X": x, "w": w})
    for weight in (None, "w"):
        out = combined_risk(data, ["A"], ["X"], {"X": 0.1}, k=k, weight=weight)
        for col in out.columns:
            assert ((out[col] >= 0) & (out[col] <= 1)).all()


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(categorical=["A", "missing"]), "'missing'"),
        (dict(precision={"X": 0.05}), "'Y'"),
        (dict(precision={"X": 0.05, "Y": 0.0}), "'Y'.*precision"),
        (dict(k=0), "k"),
        (dict(k=2.5), "k"),
        (dict(weight="bad_w"), "'bad_w'"),
        (dict(continuous=["X", "Yinf"], precision={"X": 0.05, "Yinf": 0.05}), "'Yinf'.*infinite"),
        (dict(continuous=["X", "S"], precision={"X": 0.05, "S": 0.05}), "'S'.*numeric"),
        (dict(categorical=["A", "X"]), "'X'.*both"),
    ],
)
def test_bad_input_names_the_column(hand_data, change, match):
    data = hand_data.assign(bad_w=[1.0, -1.0, 1.0, 1.0, 1.0, 1.0], Yinf=[1.0, np.inf, 1, 1, 1, 1], S=list("uvwxyz"))
    args = dict(categorical=["A"], continuous=["X", "Y"], precision=PRECISION, k=2) | change
    with pytest.raises(SDCInputError, match=match):
        combined_risk(data, args.pop("categorical"), args.pop("continuous"), args.pop("precision"), **args)


# --- missing values (SPEC §5.8) ---------------------------------------------------------------------

NA_GOLDEN = json.loads((Path(__file__).parents[1] / "data" / "missing" / "combined_risk_na.json").read_text())


def _golden_frame(case):
    return pd.DataFrame({c: pd.array(v, dtype="Float64") for c, v in case["data"].items()})


@pytest.mark.parametrize("case", NA_GOLDEN["cases"], ids=lambda c: f"h{len(c['categorical'])}_c{len(c['continuous'])}")
def test_missing_values_match_independent_brute_force(case):
    """Every f, unsafe flag and r_i of the brute-force file (tests/data/missing, SPEC §5.8)."""
    data = _golden_frame(case)
    before = data.copy()
    expected = case["expected"]
    setup = prepare_combined(data, case["categorical"], case["continuous"], case["precision"], k=case["k"])
    np.testing.assert_array_equal(setup.frequency, expected["f"])
    np.testing.assert_array_equal(
        setup.unsafe_continuous, np.array(expected["unsafe_continuous"], dtype=bool).reshape(len(data), -1)
    )
    out = combined_risk(data, case["categorical"], case["continuous"], case["precision"], k=case["k"])
    np.testing.assert_allclose(out["categorical"], 1.0 / np.array(expected["f"]), rtol=1e-12)
    if expected["risk"] is None:  # h = m is OPEN in SPEC §5.5 (module docstring: r_i = 1/f_i)
        assert not case["continuous"]
    else:
        np.testing.assert_allclose(out["risk"], expected["risk"], rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(data, before)


def test_spec_5_8_worked_example_frequencies():
    """SPEC §5.8 EXPECTED: (1,1), (1,1), (1,NA), (2,NA), (NA,NA) with k = 3."""
    data = pd.DataFrame({"a": [1, 1, 1, 2, None], "b": [1, 1, None, None, None]})
    np.testing.assert_array_equal(prepare_combined(data, ["a", "b"], [], {}, k=3).frequency, [4, 4, 4, 2, 5])
    np.testing.assert_array_equal(prepare_combined(data, ["a"], [], {}, k=3).frequency, [4, 4, 4, 2, 5])
    np.testing.assert_array_equal(prepare_combined(data, ["b"], [], {}, k=3).frequency, [5, 5, 5, 5, 5])
    np.testing.assert_allclose(combined_risk(data, ["a", "b"], [], {})["risk"], [1 / 4, 1 / 4, 1 / 4, 1 / 2, 1 / 5])


def test_missing_values_by_hand():
    # A: (1), (1), (NA), (2): f = 3, 3, 4, 2; F (weights 1, 2, 4, 8) = 7, 7, 15, 12.
    # X (p = 0.05): 100, 104, NA, 109 -> eta 1, 2, NA, 1 (NA in nobody's interval); k = 2:
    # w = 1, 0, 0 (missing: safe), 1; the denominator stays m - h = 1.
    data = pd.DataFrame({"A": [1, 1, None, 2], "X": [100.0, 104.0, None, 109.0], "w": [1.0, 2.0, 4.0, 8.0]})
    eta = neighbourhood_counts(data["X"], 0.05)
    np.testing.assert_array_equal(eta, [1, 2, np.nan, 1])
    out = combined_risk(data, ["A"], ["X"], {"X": 0.05}, k=2)
    np.testing.assert_allclose(out["categorical"], [1 / 3, 1 / 3, 1 / 4, 1 / 2])
    np.testing.assert_allclose(out["continuous"], [1, 0, 0, 1])
    np.testing.assert_allclose(out["risk"], [2 / 3, 1 / 6, 1 / 8, 3 / 4])
    weighted = combined_risk(data, ["A"], ["X"], {"X": 0.05}, k=2, weight="w")
    f, F = np.array([3, 3, 4, 2.0]), np.array([7, 7, 15, 12.0])
    np.testing.assert_allclose(weighted["categorical"], f / (f + F * (f - 1)))


def _pairwise_frequency(values: np.ndarray) -> np.ndarray:
    """Oracle: records compatible with each record (NaN = wildcard, symmetric), O(n^2)."""
    same = (values[:, None, :] == values[None, :, :]) | np.isnan(values)[:, None, :] | np.isnan(values)[None, :, :]
    return same.all(axis=2).sum(axis=1)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 25).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan]), min_size=3, max_size=3), min_size=n, max_size=n),
            st.lists(st.sampled_from([np.nan, -5.0, 0.0, 1.0, 1.04, 10.0, 10.3, 11.0]), min_size=n, max_size=n),
        )
    ),
    st.integers(1, 4),
)
def test_missing_values_property(columns, k):
    """f_i agrees with a pairwise count; eta counts observed values only; r_i in [0, 1]."""
    cats, x = np.array(columns[0], dtype=float), np.array(columns[1])
    data = pd.DataFrame({"A": cats[:, 0], "B": cats[:, 1], "C": cats[:, 2], "X": x})
    setup = prepare_combined(data, ["A", "B", "C"], ["X"], {"X": 0.05}, k=k)
    np.testing.assert_array_equal(setup.frequency, _pairwise_frequency(cats))
    lo, hi = np.minimum(0.95 * x, 1.05 * x), np.maximum(0.95 * x, 1.05 * x)
    eta = ((x[None, :] >= lo[:, None]) & (x[None, :] <= hi[:, None])).sum(axis=1) - 1
    np.testing.assert_array_equal(setup.unsafe_continuous[:, 0], ~np.isnan(x) & (eta < k))
    out = combined_risk(data, ["A", "B", "C"], ["X"], {"X": 0.05}, k=k)
    assert ((out["risk"] >= 0) & (out["risk"] <= 1)).all()
