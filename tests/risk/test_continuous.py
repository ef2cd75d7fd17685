"""Continuous-variable risk measures (SPEC §4): sdcMicro dRisk golden values and hand examples."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import interval_risk, interval_risk_rmd, outlier_flags, record_linkage_risk
from sdc_dagster.numerics.robust import covmcd

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
NUMERIC = ["expend", "income", "savings"]


@pytest.fixture(scope="module")
def testdata_and_mdav():
    original = pd.read_csv(DATA / "testdata.csv")
    protected = pd.read_csv(DATA / "golden" / "d_testdata_mdav3_mx.csv")
    return original, protected


@pytest.mark.parametrize("k", [0.01, 0.05, 0.1])
def test_interval_risk_matches_sdcmicro_drisk(testdata_and_mdav, k):
    original, protected = testdata_and_mdav
    golden = json.loads((DATA / "golden" / "d_microaggregation_summary.json").read_text())["testdata"]
    result = interval_risk(original, protected, NUMERIC, k=k)
    assert result.risk == pytest.approx(golden[f"dRisk_k{k}"], rel=1e-8)
    assert result.at_risk.index.equals(protected.index)
    assert result.at_risk.mean() == pytest.approx(result.risk)


def test_interval_risk_by_hand():
    # sd of protected column = 1 (values 0,1,2 → sd 1); k = 0.5 → half-width 0.5.
    protected = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [0.0, 1.0, 2.0]})
    original = pd.DataFrame({"a": [0.5, 1.6, 2.0], "b": [0.0, 1.0, 3.0]})
    # record 0: 0.5 on the bound (inside) and exact; record 1: a outside; record 2: b outside
    result = interval_risk(original, protected, ["a", "b"], k=0.5)
    assert result.at_risk.tolist() == [True, False, False]
    assert result.risk == pytest.approx(1 / 3)


def test_record_linkage_by_hand():
    original = pd.DataFrame({"x": [0.0, 10.0, 20.0, 30.0], "y": [0.0, 0.0, 0.0, 0.0]})
    # record 0 moves close to record 1's original; the others stay nearest to their own
    protected = pd.DataFrame({"x": [9.0, 11.0, 19.0, 35.0], "y": [0.0, 0.0, 0.0, 0.0]}, index=[5, 6, 7, 8])
    result = record_linkage_risk(original, protected, ["x", "y"])
    assert result.linked.tolist() == [False, True, True, True]
    assert result.linked.index.equals(protected.index)
    assert result.risk == pytest.approx(0.75)
    # a tie with another original counts as a correct link (worst case)
    tie = record_linkage_risk(original, pd.DataFrame({"x": [5.0, 10, 20, 30], "y": [0.0] * 4}), ["x", "y"])
    assert tie.linked.tolist() == [True, True, True, True]


def test_record_linkage_on_microaggregated_testdata(testdata_and_mdav):
    original, protected = testdata_and_mdav
    same = record_linkage_risk(original, original, NUMERIC)
    assert same.risk == 1.0
    masked = record_linkage_risk(original, protected, NUMERIC)
    assert 0.0 < masked.risk < 1.0


def test_mcd_is_robust_and_consistent():
    rng = np.random.default_rng(11)
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    clean = rng.multivariate_normal([0, 0], cov, size=2000)
    location, estimate = covmcd(clean, random_state=1)
    np.testing.assert_allclose(estimate, cov, atol=0.15)
    np.testing.assert_allclose(location, [0, 0], atol=0.1)
    dirty = clean.copy()
    dirty[:200] = rng.normal(30, 1, size=(200, 2))  # 10% gross outliers
    location, robust = covmcd(dirty, random_state=1)
    np.testing.assert_allclose(location, [0, 0], atol=0.15)  # the outliers at (30, 30) do not pull it
    # The shape is recovered; the scale is inflated by the consistency factor of the reweighting
    # step, which (as in robustbase) uses the retained share 0.9·0.975 instead of 0.975:
    # c(0.8775)/c(0.975) = 1.415/1.104 = 1.28 for p = 2.
    np.testing.assert_allclose(robust / robust[0, 0], cov / cov[0, 0], atol=0.1)
    assert 1.1 < robust[0, 0] < 1.5
    assert np.cov(dirty, rowvar=False)[0, 0] > 50  # the classical estimate breaks down
    np.testing.assert_array_equal(robust, covmcd(dirty, random_state=1)[1])


def test_interval_risk_rmd_semantics():
    rng = np.random.default_rng(5)
    original = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    same = interval_risk_rmd(original, original, list("abc"), random_state=0)
    # identical data: every value sits inside its own open interval (rmd > 0), and no two
    # protected records coincide, so RMDID2 keeps those whose nearest neighbour is beyond k2
    assert same.risk1 == 1.0 and same.at_risk1.all()
    assert same.wrisk1 == pytest.approx(300 * same.riskvec1.sum() / 300)
    duplicated = pd.concat([original, original], ignore_index=True)
    dup = interval_risk_rmd(duplicated, duplicated, list("abc"), random_state=0)
    assert dup.risk1 == 1.0 and dup.risk2 == 0.0  # each record has a twin at distance 0 <= k2
    far = interval_risk_rmd(original, original + 5.0 * rng.normal(size=(300, 3)), list("abc"), random_state=0)
    assert far.risk1 < 0.2
    assert (far.at_risk2 <= far.at_risk1).all()
    assert ((far.riskvec1 > 0) == far.at_risk1).all()


def test_outlier_flags_by_hand():
    data = pd.DataFrame({"x": np.arange(1.0, 11.0), "y": np.arange(10.0, 0.0, -1.0)})
    flags = outlier_flags(data, ["x", "y"], percentile=90)  # 90th percentile (type 7) = 9.1
    assert flags["x"].tolist() == [False] * 9 + [True]
    assert flags["y"].tolist() == [True] + [False] * 9
    assert flags.index.equals(data.index)


def test_bad_input():
    a = pd.DataFrame({"x": [1.0, 2.0, np.inf]})
    b = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(SDCInputError, match="'x'.*infinite"):
        interval_risk(a, b, ["x"])
    with pytest.raises(SDCInputError, match="rows"):
        record_linkage_risk(b, b.iloc[:2], ["x"])
    with pytest.raises(SDCInputError, match="'nope'"):
        outlier_flags(b, ["nope"])
    with pytest.raises(SDCInputError, match="percentile"):
        outlier_flags(b, ["x"], percentile=120)


def test_interval_risk_with_missing_values_by_hand():
    # sd over the observed protected values: 15.8219 (column a) and 0.76376 (column b); k = 0.05.
    original = pd.DataFrame({"a": [10.0, 20, 30, 40], "b": [1.0, np.nan, 3, 4]})
    protected = pd.DataFrame({"a": [10.0, 20, np.nan, 41], "b": [1.5, 2, 3, np.nan]})
    result = interval_risk(original, protected, ["a", "b"], k=0.05)
    # record 1: b outside; 2: b missing in the original, a inside; 3: a missing, b inside; 4: a outside
    assert result.at_risk.tolist() == [False, True, True, False]
    assert result.risk == 0.5


def test_record_linkage_with_missing_values_by_hand():
    original = pd.DataFrame({"a": [0.0, 10, 20, 30], "b": [0.0, 10, 20, np.nan]})
    protected = pd.DataFrame({"a": [1.0, 14, 14.5, 30], "b": [1.0, 14, 14.5, 30]})
    result = record_linkage_risk(original, protected, ["a", "b"])
    # record 3 lies nearer record 2's original; record 4 is not observed in the original file
    assert result.linked.tolist() == [True, True, False, False]
    assert result.compared == 3 and result.risk == 0.5


# --- record linkage: Mahalanobis and Gower distances, one-to-one assignment (SPEC §4.1) ---------------

# Five originals with sample covariance S = [[2.5, 1.5], [1.5, 2.5]] (mean 0, n - 1 = 4), so
# S^-1 = [[2.5, -1.5], [-1.5, 2.5]] / 4 and both standard deviations are sqrt(2.5).
FIVE = pd.DataFrame({"x": [0.0, 2, -2, 1, -1], "y": [0.0, 2, -2, -1, 1]})
# Record 3 (original (1, -1)) is released as (2, 0.5); the others unchanged.
FIVE_PROTECTED = FIVE.assign(x=[0.0, 2, -2, 2, -1], y=[0.0, 2, -2, 0.5, 1])


def test_record_linkage_mahalanobis_by_hand():
    # Euclidean on standardised values: to original 1 (2, 2): (0 + 1.5^2) / 2.5 = 0.9; to its own
    # (1, -1): (1 + 1.5^2) / 2.5 = 1.3 -> linked to record 1, not its own.
    euclid = record_linkage_risk(FIVE, FIVE_PROTECTED, ["x", "y"])
    assert euclid.linked.tolist() == [True, True, True, False, True] and euclid.risk == pytest.approx(0.8)
    assert euclid.partner.tolist() == [0, 1, 2, 1, 4]
    # Mahalanobis: d^2 = (2.5 v1^2 - 3 v1 v2 + 2.5 v2^2) / 4; to its own, v = (1, 1.5): 3.625 / 4 = 0.90625;
    # to record 1, v = (0, -1.5): 5.625 / 4 = 1.40625 -> linked to its own.
    mahalanobis = record_linkage_risk(FIVE, FIVE_PROTECTED, ["x", "y"], distance="mahalanobis")
    assert mahalanobis.linked.all() and mahalanobis.risk == 1.0
    assert mahalanobis.distance == "mahalanobis" and mahalanobis.assignment == "nearest"


def test_record_linkage_gower_by_hand():
    # Gower: ranges 4 and 4; to record 1: (0/4 + 1.5/4) / 2 = 0.1875; to its own: (1/4 + 1.5/4) / 2 = 0.3125
    gower = record_linkage_risk(FIVE, FIVE_PROTECTED, ["x", "y"], distance="gower")
    assert gower.linked.tolist() == [True, True, True, False, True] and gower.partner[3] == 1
    # Ranges differ, standard deviations do not: x in {0, 10} (range 10), y in {0, 1} (range 1).
    original = pd.DataFrame({"x": [0.0, 10, 0, 10, 5], "y": [0.0, 0, 1, 1, 0.5]})
    protected = original.assign(x=[3.0, 10, 0, 10, 5], y=[0.6, 0, 1, 1, 0.5])
    # record 0 released as (3, 0.6): Gower to its own (0.3 + 0.6) / 2 = 0.45, to record 2 (0, 1):
    # (0.3 + 0.4) / 2 = 0.35, to record 4 (5, 0.5): (0.2 + 0.1) / 2 = 0.15 -> record 4
    gower = record_linkage_risk(original, protected, ["x", "y"], distance="gower")
    assert gower.partner.tolist() == [4, 1, 2, 3, 4] and gower.risk == pytest.approx(0.8)


def test_record_linkage_one_to_one_by_hand():
    original = pd.DataFrame({"x": [0.0, 1.0, 2.0]})
    protected = pd.DataFrame({"x": [0.9, 1.0, 2.0]})
    # nearest: 0.9 is nearest to original 1 -> 2 of 3 linked
    assert record_linkage_risk(original, protected, ["x"]).risk == pytest.approx(2 / 3)
    # one-to-one: identity costs 0.9 (standardised: 0.9 / sd), swapping the first two 0.1 + 1.0 = 1.1
    one = record_linkage_risk(original, protected, ["x"], assignment="one_to_one")
    assert one.linked.all() and one.risk == 1.0 and one.expected_risk == 1.0
    assert one.partner.tolist() == [0, 1, 2]
    # the five-point case: identity costs sqrt(1.3) = 1.14; swapping records 1 and 3 sqrt(0.9) + 2
    one = record_linkage_risk(FIVE, FIVE_PROTECTED, ["x", "y"], assignment="one_to_one")
    assert one.risk == 1.0


def test_record_linkage_one_to_one_identical_records():
    """Microaggregation-like release: identical protected records may trade partners at no cost."""
    original = pd.DataFrame({"x": [0.0, 1, 2, 10, 11, 12]})
    protected = pd.DataFrame({"x": [1.0, 1, 1, 11, 11, 11]})
    nearest = record_linkage_risk(original, protected, ["x"])
    assert nearest.linked.tolist() == [False, True, False, False, True, False]
    one = record_linkage_risk(original, protected, ["x"], assignment="one_to_one")
    # every group is sent to its own three originals: in the intruder's favour all 6 are links;
    # at random each record is linked with probability 1/3
    assert one.risk == 1.0
    assert one.expected_risk == pytest.approx(1 / 3)


def brute_force_assignment(original: np.ndarray, protected: np.ndarray) -> tuple[int, ...]:
    """The permutation (protected i -> original perm[i]) with the least total Euclidean distance."""
    best, best_cost = None, np.inf
    for perm in itertools.permutations(range(len(original))):
        cost = sum(np.sqrt(((protected[i] - original[j]) ** 2).sum()) for i, j in enumerate(perm))
        if cost < best_cost - 1e-12:
            best, best_cost = perm, cost
    return best


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(3, 6), st.just(2)), elements=st.floats(-100, 100, width=32)),
    arrays(np.float64, (6, 2), elements=st.floats(-30, 30, width=32)),
)
def test_property_one_to_one_is_the_least_total_distance_assignment(x, noise):
    assume(len(np.unique(x, axis=0)) == len(x) and (x.std(axis=0, ddof=1) > 1e-3).all())
    original = pd.DataFrame(x, columns=["a", "b"])
    protected = pd.DataFrame(x + noise[: len(x)], columns=["a", "b"])
    assume(len(np.unique(protected.to_numpy(), axis=0)) == len(x))
    result = record_linkage_risk(original, protected, ["a", "b"], assignment="one_to_one")
    scale = x.std(axis=0, ddof=1)
    perm = brute_force_assignment(x / scale, protected.to_numpy() / scale)
    costs = lambda p: sum(np.linalg.norm((protected.to_numpy()[i] - x[j]) / scale) for i, j in enumerate(p))
    # the solver's assignment has the least total distance (the same permutation unless tied)
    assert costs(result.partner.tolist()) == pytest.approx(costs(perm), rel=1e-9, abs=1e-9)
    assert sorted(result.partner.tolist()) == list(range(len(x)))
    assert result.linked.tolist() == [result.partner[i] == i for i in range(len(x))]
    # an unchanged release is fully linked in every mode
    for distance in ("euclidean", "mahalanobis", "gower"):
        for assignment in ("nearest", "one_to_one"):
            if distance == "mahalanobis" and abs(np.corrcoef(x.T)[0, 1]) > 0.999:
                continue
            assert record_linkage_risk(original, original, ["a", "b"], distance=distance, assignment=assignment).risk == 1.0


def test_record_linkage_one_to_one_with_missing_values():
    original = pd.DataFrame({"a": [0.0, 10, 20, 30], "b": [0.0, 10, 20, np.nan]})
    protected = pd.DataFrame({"a": [1.0, 14, 14.5, 30], "b": [1.0, 14, 14.5, 30]})
    # record 3 is not observed in the original: three records compared; nearest links records 1-2
    # and 3 both to original 2, one-to-one must give record 2 its own original -> 3 of 4
    result = record_linkage_risk(original, protected, ["a", "b"], assignment="one_to_one")
    assert result.compared == 3
    assert result.linked.tolist() == [True, True, True, False]
    assert result.risk == 0.75 and pd.isna(result.partner[3])


def test_record_linkage_bad_input():
    with pytest.raises(SDCInputError, match="distance: must be one of"):
        record_linkage_risk(FIVE, FIVE, ["x"], distance="chebyshev")
    with pytest.raises(SDCInputError, match="assignment: must be one of"):
        record_linkage_risk(FIVE, FIVE, ["x"], assignment="greedy")
    with pytest.raises(SDCInputError, match="singular"):
        record_linkage_risk(FIVE.assign(z=FIVE["x"] * 2), FIVE.assign(z=FIVE["x"] * 2), ["x", "z"], distance="mahalanobis")


def brute_force_distances(x: np.ndarray, xm: np.ndarray, distance: str) -> np.ndarray:
    """(protected, original) distance matrix written out from each definition."""
    diff = xm[:, None, :] - x[None, :, :]
    if distance == "euclidean":
        return np.sqrt(((diff / x.std(axis=0, ddof=1)) ** 2).sum(axis=2))
    if distance == "gower":  # daisy on rbind(x, xm): ranges over both files, a range of 0 counts as 1
        both = np.vstack([x, xm])
        spread = both.max(axis=0) - both.min(axis=0)
        return (np.abs(diff) / np.where(spread > 0, spread, 1.0)).mean(axis=2)
    inverse = np.linalg.inv(np.cov(x, rowvar=False))
    return np.sqrt(np.einsum("pok,kl,pol->po", diff, inverse, diff))


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, (12, 3), elements=st.floats(-100, 100, width=32)),
    arrays(np.float64, (12, 3), elements=st.floats(-20, 20, width=32)),
)
def test_property_nearest_linkage_equals_the_definitions(x, noise):
    assume(np.linalg.eigvalsh(np.cov(x, rowvar=False)).min() > 1e-3 * max(1.0, np.abs(x).max()) ** 2)
    original, protected = pd.DataFrame(x, columns=list("abc")), pd.DataFrame(x + noise, columns=list("abc"))
    for distance in ("euclidean", "mahalanobis", "gower"):
        d = brute_force_distances(x, x + noise, distance)
        own = np.diag(d)
        nearest = d.min(axis=1)
        clear = (np.abs(own - nearest) > 1e-9 * np.maximum(1.0, nearest)) | (own == nearest)
        result = record_linkage_risk(original, protected, list("abc"), distance=distance)
        assert (result.linked.to_numpy()[clear] == (own <= nearest)[clear]).all()
