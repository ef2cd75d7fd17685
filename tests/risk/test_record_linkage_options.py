"""Record linkage options of sdcMicro's recordLinkage (issue 37): the Manhattan distance, variable
weights (daisy's ``weights``), raw (unstandardised) distances and the count of best candidates
``n_best``. Expected values are worked out by hand from the definitions in sdcMicro's
R/recordLinkage.R and cluster's daisy (src/daisy.c), or, in the property, computed here with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import gower_distances, record_linkage_risk

# Originals o0 = (2, 2), o1 = (3, 0), o2 = (10, 10); released p0 = (0, 0) (own o0), p1 = (3, 0.5), p2 = (10, 10).
# p0: Euclidean to o0 sqrt(8) = 2.83, to o1 3 -> o0 (correct); Manhattan to o0 4, to o1 3 -> o1 (wrong).
# p1: o1 at 0.5 under both. p2 = o2.
ORIGINAL = pd.DataFrame({"a": [2.0, 3, 10], "b": [2.0, 0, 10]})
RELEASED = pd.DataFrame({"a": [0.0, 3, 10], "b": [0.0, 0.5, 10]}, index=["p0", "p1", "p2"])


def test_manhattan_and_euclidean_link_differently_by_hand():
    euclid = record_linkage_risk(ORIGINAL, RELEASED, ["a", "b"], standardise=False)
    manhattan = record_linkage_risk(ORIGINAL, RELEASED, ["a", "b"], distance="manhattan", standardise=False)
    assert euclid.linked.tolist() == [True, True, True] and euclid.risk == 1.0
    assert manhattan.linked.tolist() == [False, True, True] and manhattan.risk == pytest.approx(2 / 3)
    assert manhattan.partner.tolist() == [1, 1, 2]
    assert manhattan.distance == "manhattan" and manhattan.n_best is None
    # one-to-one under Manhattan: p0 -> o1 (3) forces p1 -> o0 (1 + 1.5 = 2.5): 5.5 in all, against
    # 4 + 0.5 = 4.5 for the identity: the identity wins.
    one = record_linkage_risk(ORIGINAL, RELEASED, ["a", "b"], distance="manhattan", standardise=False,
                              assignment="one_to_one")
    assert one.linked.tolist() == [True, True, True]


def test_standardised_manhattan_by_hand():
    # Standardised by the original SDs: sd(a) of 2, 3, 10 = sqrt(19) = 4.3589, sd(b) of 2, 0, 10 =
    # sqrt(28) = 5.2915. p0 = (0, 0): to o0 2/4.3589 + 2/5.2915 = 0.8368, to o1 3/4.3589 = 0.6882 -> o1.
    result = record_linkage_risk(ORIGINAL, RELEASED, ["a", "b"], distance="manhattan")
    assert result.partner.tolist() == [1, 1, 2]


def test_weights_by_hand_euclidean_and_manhattan():
    # o0 = (0, 0), o1 = (3, 1); p0 = (2, 0) (own o0), p1 = (3, 1) = o1. Raw distances of p0:
    #   unweighted Euclidean: o0 2, o1 sqrt(1 + 1) = 1.414 -> o1 (wrong);
    #   weights (1, 4): o1 sqrt(1 + 4 * 1) = 2.236 > 2 -> o0 (correct);
    #   unweighted Manhattan: o0 2, o1 1 + 1 = 2: a tie, linked in the worst case, 1/2 at random;
    #   weights (1, 4): o1 1 + 4 = 5 -> o0, no tie.
    original = pd.DataFrame({"a": [0.0, 3], "b": [0.0, 1]})
    released = pd.DataFrame({"a": [2.0, 3], "b": [0.0, 1]})
    plain = dict(standardise=False)
    assert record_linkage_risk(original, released, ["a", "b"], **plain).linked.tolist() == [False, True]
    weighted = record_linkage_risk(original, released, ["a", "b"], weights=[1, 4], **plain)
    assert weighted.linked.tolist() == [True, True]
    tie = record_linkage_risk(original, released, ["a", "b"], distance="manhattan", **plain)
    assert tie.linked.tolist() == [True, True] and tie.expected_risk == pytest.approx((1 / 2 + 1) / 2)
    named = record_linkage_risk(original, released, ["a", "b"], distance="manhattan", weights={"b": 4}, **plain)
    assert named.linked.tolist() == [True, True] and named.expected_risk == 1.0


# sdcMicro's recordLinkage example (its documentation): x ages 23, 40, 35, sex f, m, f, region A, B, A;
# y ages 24, 39, 35, sex f, m, f, region A, B, B. Gower: age range over both files 40 - 23 = 17.
X = pd.DataFrame({"age": [23.0, 40, 35], "sex": ["f", "m", "f"], "region": ["A", "B", "A"]})
Y = pd.DataFrame({"age": [24.0, 39, 35], "sex": ["f", "m", "f"], "region": ["A", "B", "B"]})


def test_weighted_gower_distances_by_hand():
    # weights (2, 1, 1): d = (2 |age gap| / 17 + [sex differs] + [region differs]) / 4 (rows y, columns x)
    by_hand = np.array([
        [(2 / 17) / 4, (2 * 16 / 17 + 2) / 4, (2 * 11 / 17) / 4],
        [(2 * 16 / 17 + 2) / 4, (2 / 17) / 4, (2 * 4 / 17 + 2) / 4],
        [(2 * 12 / 17 + 1) / 4, (2 * 5 / 17 + 1) / 4, 1 / 4],
    ])
    np.testing.assert_allclose(gower_distances(X, Y, ["age", "sex", "region"], weights=[2, 1, 1]), by_hand,
                               rtol=1e-12)
    # equal weights are the unweighted distances
    np.testing.assert_allclose(gower_distances(X, Y, ["age", "sex", "region"], weights=[1, 1, 1]),
                               gower_distances(X, Y, ["age", "sex", "region"]), rtol=0)


def test_sdcmicro_example_n_best_and_weighted_ties_by_hand():
    # Equal weights (distances x to y): x1: y1 1/51, y2 (16/17 + 2)/3, y3 (12/17 + 1)/3; x2: y2 1/51 least;
    # x3: y1 (11/17)/3 = 0.216, y2 0.745, y3 1/3 -> one best candidate each.
    result = record_linkage_risk(X, Y, ["age", "sex", "region"], distance="gower", assignment="one_to_one",
                                 count_best=True)
    assert result.n_best.tolist() == [1, 1, 1] and result.risk == 1.0
    # weights (0, 1, 1), age left out: y1 = (f, A) equals x1 and x3 (distance 0): from y1 a tie of two;
    # y3 = (f, B) is at 1/2 from all three originals: a tie of three. From the originals: x1 and x3 have
    # y1 alone at 0, x2 has y2 alone at 0 -> n_best 1, 1, 1. Worst case every record linked; ties at
    # random (1/2 + 1 + 1/3) / 3 = 11/18.
    weighted = record_linkage_risk(X, Y, ["age", "sex", "region"], distance="gower", weights=[0, 1, 1],
                                   count_best=True)
    assert weighted.linked.tolist() == [True, True, True]
    assert weighted.expected_risk == pytest.approx(11 / 18)
    assert weighted.n_best.tolist() == [1, 1, 1]
    # from the originals' side, ties: weights (0, 0, 1) (region only): x1 = A has y1 at 0 only; x2 = B has
    # y2 and y3 at 0; x3 = A has y1 only
    region = record_linkage_risk(X, Y, ["age", "sex", "region"], distance="gower", weights={"age": 0, "sex": 0},
                                 count_best=True)
    assert region.n_best.tolist() == [1, 2, 1]


def test_n_best_counts_ties_within_tol():
    # o0 = (0, 0): p0 = (1, 0) and p1 = (0, 1) both at 1 (Euclidean and Manhattan); o1 = (5, 5): both at
    # sqrt(41) (Euclidean) or 9 (Manhattan) -> 2 best candidates each.
    original = pd.DataFrame({"a": [0.0, 5], "b": [0.0, 5]})
    released = pd.DataFrame({"a": [1.0, 0], "b": [0.0, 1]}, index=[7, 8])
    for distance in ("euclidean", "manhattan"):
        result = record_linkage_risk(original, released, ["a", "b"], distance=distance, standardise=False,
                                     count_best=True)
        assert result.n_best.tolist() == [2, 2] and result.n_best.index.tolist() == [7, 8]
    # p1 moved by 1e-6: outside the default tol sqrt(eps) = 1.5e-8, inside tol = 1e-5
    moved = released.assign(b=[0.0, 1 + 1e-6])
    assert record_linkage_risk(original, moved, ["a", "b"], standardise=False, count_best=True).n_best.tolist() == [1, 1]
    assert record_linkage_risk(original, moved, ["a", "b"], standardise=False, count_best=True,
                               tol=1e-5).n_best.tolist() == [2, 2]


def test_n_best_is_missing_for_records_not_compared():
    original = pd.DataFrame({"a": [0.0, 5, 9], "b": [0.0, 5, 1]})
    released = pd.DataFrame({"a": [1.0, np.nan, 9], "b": [0.0, 5, 1]})
    result = record_linkage_risk(original, released, ["a", "b"], distance="manhattan", count_best=True)
    assert result.n_best.isna().tolist() == [False, True, False]
    assert str(result.n_best.dtype) == "Int64"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": [1]}, "needs one weight per linkage column"),
        ({"weights": [1, -1]}, r"weights\['b'\]: must be a number >= 0"),
        ({"weights": [0, 0]}, "at least one weight must be positive"),
        ({"weights": {"c": 1}}, "names column 'c'"),
        ({"weights": [1, 1], "distance": "mahalanobis"}, "not to 'mahalanobis'"),
        ({"standardise": "no"}, "standardise: must be true or false"),
        ({"count_best": True, "tol": -1}, "tol: must be a number >= 0"),
        ({"distance": "chebyshev"}, "distance: must be one of"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        record_linkage_risk(ORIGINAL, RELEASED, ["a", "b"], **kwargs)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 12), st.integers(1, 3), st.sampled_from(["euclidean", "manhattan"]), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_property_matches_brute_force(n, m, distance, weighted, seed):
    """Small integer data (many ties): linked flags and n_best equal those of the full distance matrix."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, (n, m)).astype(float)
    xm = x + rng.integers(-1, 2, (n, m))
    weights = rng.integers(1, 4, m).astype(float) if weighted else np.ones(m)
    columns = [f"c{j}" for j in range(m)]
    result = record_linkage_risk(pd.DataFrame(x, columns=columns), pd.DataFrame(xm, columns=columns), columns,
                                 distance=distance, standardise=False,
                                 weights=list(weights) if weighted else None, count_best=True)
    p = 2 if distance == "euclidean" else 1
    d = cdist(xm * weights ** (1 / p), x * weights ** (1 / p), metric="minkowski", p=p)  # protected x original
    own = np.diag(d)
    assert result.linked.tolist() == (own <= d.min(axis=1) + 1e-9).tolist()
    assert result.n_best.tolist() == (d.T <= d.T.min(axis=1, keepdims=True) + 1e-8).sum(axis=1).tolist()


# --- sdcMicro's own tests (tests/testthat/test_recordLinkage.R), their expected values ----------------------


def test_sdcmicro_gower_matrices_unweighted_and_weighted():
    # sdcMicro's cost matrix has the originals x as rows; gower_distances has the released records as rows.
    x = pd.DataFrame({"age": [20.0, 40], "sex": ["f", "m"], "region": ["A", "B"]})
    y = pd.DataFrame({"age": [20.0, 30], "sex": ["f", "m"], "region": ["B", "B"]})
    columns = ["age", "sex", "region"]
    np.testing.assert_allclose(gower_distances(x, y, columns).T, [[1 / 3, 5 / 6], [2 / 3, 1 / 6]], atol=1e-8)
    np.testing.assert_allclose(gower_distances(x, y, columns, weights=[2, 1, 1]).T, [[1 / 4, 3 / 4], [3 / 4, 1 / 4]],
                               atol=1e-8)
    weighted = record_linkage_risk(x, y, columns, distance="gower", weights={"age": 2}, assignment="one_to_one")
    assert weighted.risk == 1.0 and weighted.partner.tolist() == [0, 1]


def test_sdcmicro_herranz_examples_one_to_one_gower():
    # Herranz et al. (2015) example 1: correct match rate 1; example 2: 0
    x = pd.DataFrame({"v1": [1.0, 0, -1, 0], "v2": [0.0, 1, 0, -1]})
    y = pd.DataFrame({"v1": [0.0, 0, -2.1, 0], "v2": [0.0, 2.1, 0, -2.1]})
    assert record_linkage_risk(x, y, ["v1", "v2"], distance="gower", assignment="one_to_one").risk == 1.0
    x = pd.DataFrame({"v1": [1.0, 2, 3, 4]})
    y = pd.DataFrame({"v1": [2.0, 3, 4, -0.1]})
    assert record_linkage_risk(x, y, ["v1"], distance="gower", assignment="one_to_one").risk == 0.0


def test_sdcmicro_n_best_with_zero_tolerance():
    # x a = (0, 1), y a = (0, 0): both released records tie for each original -> n_best (2, 2)
    result = record_linkage_risk(pd.DataFrame({"a": [0.0, 1]}), pd.DataFrame({"a": [0.0, 0]}), ["a"],
                                 standardise=False, count_best=True, tol=0)
    assert result.n_best.tolist() == [2, 2]
    # x a = (0, 2), y a = (0, 1e-7): with tol 0 only exact ties count -> n_best of the first original is 1
    result = record_linkage_risk(pd.DataFrame({"a": [0.0, 2]}), pd.DataFrame({"a": [0.0, 1e-7]}), ["a"],
                                 standardise=False, count_best=True, tol=0)
    assert result.n_best.iloc[0] == 1
