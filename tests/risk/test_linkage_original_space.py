"""Issue 38: the originals' mapped records and k-d tree of a Euclidean, Manhattan or Mahalanobis
linkage are built once per original file and reused for every protected file linked to it
(risk.linkage._original_space); the links are those of a fresh build, and originals that differ in
one value are never linked through another file's tree."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster import risk
from sdc_dagster.risk import linkage


def _files(seed, n=300, ties=False):
    rng = np.random.default_rng(seed)
    original = pd.DataFrame({"a": rng.normal(size=n), "b": rng.gamma(2.0, size=n), "c": rng.integers(0, 5, n)})
    if ties:  # integer amounts: many originals at equal distances
        original[["a", "b"]] = np.round(original[["a", "b"]] * 2)
    protected = original + rng.normal(scale=0.3, size=original.shape)
    return original, protected


def _figures(result):
    return result.risk, result.expected_risk, result.linked.tolist(), result.partner.tolist()


@pytest.mark.parametrize("distance", ["euclidean", "manhattan", "mahalanobis"])
def test_the_second_linkage_to_the_same_originals_reuses_their_tree_with_the_same_links(distance):
    original, protected = _files(1)
    other = original + np.random.default_rng(2).normal(scale=0.5, size=original.shape)
    linkage._ORIGINAL_SPACES.clear()
    first = risk.record_linkage_risk(original, protected, ["a", "b", "c"], distance=distance)
    (space,) = linkage._ORIGINAL_SPACES.values()
    second = risk.record_linkage_risk(original, other, ["a", "b", "c"], distance=distance)
    assert list(linkage._ORIGINAL_SPACES.values()) == [space]  # no second tree
    linkage._ORIGINAL_SPACES.clear()
    assert _figures(second) == _figures(risk.record_linkage_risk(original, other, ["a", "b", "c"], distance=distance))
    assert _figures(first) == _figures(risk.record_linkage_risk(original, protected, ["a", "b", "c"], distance=distance))


def test_originals_that_differ_in_one_value_get_their_own_tree():
    original, protected = _files(3)
    linkage._ORIGINAL_SPACES.clear()
    risk.record_linkage_risk(original, protected, ["a", "b"])
    changed = original.copy()
    changed.loc[7, "a"] = changed.loc[7, "a"] + 1e-9
    risk.record_linkage_risk(changed, protected, ["a", "b"])
    assert len(linkage._ORIGINAL_SPACES) == 2
    # and the weights, an option of the map, too
    risk.record_linkage_risk(changed, protected, ["a", "b"], weights=[1.0, 2.0])
    assert len(linkage._ORIGINAL_SPACES) == 3


def test_only_the_last_few_original_files_are_kept():
    linkage._ORIGINAL_SPACES.clear()
    for seed in range(linkage._ORIGINAL_SPACES.size + 3):
        original, protected = _files(seed, n=50)
        risk.record_linkage_risk(original, protected, ["a", "b"])
    assert len(linkage._ORIGINAL_SPACES) == linkage._ORIGINAL_SPACES.size


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 200), ties=st.booleans(),
       distance=st.sampled_from(["euclidean", "manhattan", "mahalanobis"]))
def test_reused_trees_link_as_fresh_ones(seed, n, ties, distance):
    """Invariant: a linkage through a kept tree gives the links, partners and both shares of a
    linkage whose tree is built for it, also with many ties (integer amounts)."""
    original, protected = _files(seed, n, ties)
    columns = ["a", "b", "c"]
    try:
        linkage._ORIGINAL_SPACES.clear()
        fresh = _figures(risk.record_linkage_risk(original, protected, columns, distance=distance))
    except Exception as error:  # a singular covariance is refused the same way kept or not
        with pytest.raises(type(error)):
            risk.record_linkage_risk(original, protected, columns, distance=distance)
        return
    risk.record_linkage_risk(original, protected.iloc[::-1].set_axis(protected.index), columns, distance=distance)
    assert _figures(risk.record_linkage_risk(original, protected, columns, distance=distance)) == fresh


def _numpy_own_distances(zx, zm, nominal):
    """The numpy formula the compiled own distances replaced (gower_search before issue 38's round)."""
    gap = np.abs(zm - zx)
    seen = ~np.isnan(gap)
    gap = np.where(nominal[None, :], (gap > 0).astype(float), gap)
    with np.errstate(invalid="ignore"):
        return np.where(seen, gap, 0.0).sum(axis=1) / seen.sum(axis=1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 60), columns=st.integers(1, 40),
       missing=st.sampled_from([0.0, 0.2, 0.9]))
def test_compiled_own_gower_distances_equal_numpys_bit_for_bit(seed, n, columns, missing):
    """Gower distances of each record to its own original (gower_search.gower_own_distances, compiled)
    equal numpy's pairwise-summed figures bit for bit, NaN where no variable is observed in both;
    up to 40 variables (numpy's pairwise summation unrolls by 8 from 8 terms on)."""
    from sdc_dagster.risk.gower_search import gower_own_distances

    rng = np.random.default_rng(seed)
    nominal = rng.random(columns) < 0.5
    zx = np.where(nominal, rng.integers(0, 3, (n, columns)), rng.random((n, columns)))
    zm = np.where(nominal, rng.integers(0, 3, (n, columns)), zx + rng.normal(scale=0.1, size=(n, columns)))
    zx[rng.random((n, columns)) < missing] = np.nan
    zm[rng.random((n, columns)) < missing] = np.nan
    expected = _numpy_own_distances(zx, zm, nominal)
    found = gower_own_distances(zx, zm, nominal)
    assert np.array_equal(found, expected, equal_nan=True)
    assert found.tobytes() == np.where(np.isnan(expected), found, expected).tobytes()
