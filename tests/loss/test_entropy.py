"""EBIL for PRAM, SPEC §9.8, against hand-computed Bayes inversions."""

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import backward_probabilities, ebil

FORWARD = pd.DataFrame([[0.8, 0.2], [0.3, 0.7]], index=["m", "f"], columns=["m", "f"])


def _h(p):
    p = np.asarray([v for v in p if v > 0])
    return float(-(p * np.log(p)).sum())


def test_backward_probabilities_by_bayes():
    prior = pd.Series({"m": 0.6, "f": 0.4})
    backward = backward_probabilities(FORWARD, prior)
    # P(X=m | X*=m) = 0.8·0.6 / (0.8·0.6 + 0.3·0.4) = 0.48 / 0.60
    assert backward.loc["m", "m"] == pytest.approx(0.8)
    assert backward.loc["f", "m"] == pytest.approx(0.2)
    # P(X=m | X*=f) = 0.2·0.6 / (0.2·0.6 + 0.7·0.4) = 0.12 / 0.40
    assert backward.loc["m", "f"] == pytest.approx(0.3)
    np.testing.assert_allclose(backward.sum(axis=0), 1.0)


def test_ebil_with_forward_matrix():
    original = pd.DataFrame({"sex": ["m"] * 6 + ["f"] * 4})
    protected = pd.DataFrame({"sex": ["m"] * 5 + ["f"] + ["m"] * 2 + ["f"] * 2})
    # 7 released "m" with H(0.8, 0.2), 3 released "f" with H(0.3, 0.7)
    expected = 7 * _h([0.8, 0.2]) + 3 * _h([0.3, 0.7])
    assert ebil(original, protected, "sex", matrix=FORWARD) == pytest.approx(expected)


def test_ebil_empirical_cross_tabulation():
    original = pd.DataFrame({"x": [1, 1, 2, 2, 3, 3]})
    protected = pd.DataFrame({"x": [1, 2, 2, 2, 3, 3]})
    # released 1: {1} → H 0; released 2: {1, 2, 2} → H(1/3, 2/3) per record; released 3: H 0
    assert ebil(original, protected, "x") == pytest.approx(3 * _h([1 / 3, 2 / 3]))


def test_identity_pram_gives_zero_ebil():
    original = pd.DataFrame({"x": list("aabbc")})
    identity = pd.DataFrame(np.eye(3), index=list("abc"), columns=list("abc"))
    assert ebil(original, original.copy(), "x", matrix=identity) == 0.0
    assert ebil(original, original.copy(), "x") == 0.0


def test_ebil_bad_matrix():
    original = pd.DataFrame({"sex": ["m", "f", "x"]})
    with pytest.raises(SDCInputError, match="'x'.*no row"):
        ebil(original, original.copy(), "sex", matrix=FORWARD)
    bad = FORWARD.copy()
    bad.loc["m", "f"] = 0.5
    with pytest.raises(SDCInputError, match="row 'm'.*sum to 1"):
        ebil(original.iloc[:2], original.iloc[:2].copy(), "sex", matrix=bad)
    never_f = pd.DataFrame([[1.0, 0.0], [1.0, 0.0]], index=["m", "f"], columns=["m", "f"])
    with pytest.raises(SDCInputError, match="cannot be produced"):
        ebil(original.iloc[:2], original.iloc[:2].copy(), "sex", matrix=never_f)
