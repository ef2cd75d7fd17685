"""sdcMicro's microaggregation methods besides MDAV, its measures and weights, and its Gower
microaggregation of mixed variables (SPEC §8.6, issue 37).

sdcMicro's documentation and tests print no values for these methods (its testthat file checks
dimensions only), and R is not available here: every expected value below is a hand computation on
a tiny input, following sdcMicro's ``R/microaggregation.R`` (``indexMicro``: groups of k in sorted
order, the last taking the remainder; ``means``: the measures), each explained beside it.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import apply_plan, microaggregation, microaggregation_gower, validate_plan
from sdc_dagster.protect.microaggregation import METHODS, RANDOMISED_METHODS, _stratum_labels
from sdc_dagster.protect.microaggregation.projection import pp_direction
from sdc_dagster.protect.microaggregation.ranking import cut
from sdc_dagster.protect.microaggregation.rmd import rmd_labels
from sdc_dagster.report.content import step_sentence, step_sources

# a = 5 1 7 3 2 6 4 (rows 0..6), b = 10 20 ... 70
SEVEN = pd.DataFrame({"a": [5.0, 1, 7, 3, 2, 6, 4], "b": [10.0, 20, 30, 40, 50, 60, 70], "name": list("pqrstuv")})


def test_cut_is_sdcmicro_indexmicro():
    # indexMicro: n = 7, k = 3 -> groups of 3 then the remainder 4; n = 6 -> two groups of 3; n < 2k -> one group
    assert cut(np.arange(7), 3).tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert cut(np.arange(6), 3).tolist() == [0, 0, 0, 1, 1, 1]
    assert cut(np.array([2, 0, 1, 3, 4]), 3).tolist() == [0, 0, 0, 0, 0]
    assert cut(np.array([6, 5, 4, 3, 2, 1, 0]), 3).tolist() == [1, 1, 1, 1, 0, 0, 0]


def test_simple_groups_records_in_file_order():
    out = microaggregation(SEVEN, ["a", "b"], k=3, method="simple")
    # rows 0-2 and rows 3-6: a (5+1+7)/3 = 13/3, (3+2+6+4)/4 = 3.75; b 20 and 55
    np.testing.assert_allclose(out["a"], [13 / 3] * 3 + [3.75] * 4)
    np.testing.assert_allclose(out["b"], [20.0] * 3 + [55.0] * 4)
    assert out["name"].equals(SEVEN["name"]) and out.index.equals(SEVEN.index)


def test_single_sorts_by_the_first_variable():
    out = microaggregation(SEVEN, ["a", "b"], k=3, method="single")
    # a sorted: 1 (row 1), 2 (row 4), 3 (row 3) | 4 (row 6), 5 (row 0), 6 (row 5), 7 (row 2)
    # group 1: a 2, b (20+50+40)/3 = 110/3; group 2: a 5.5, b (70+10+60+30)/4 = 42.5
    np.testing.assert_allclose(out["a"], [5.5, 2, 5.5, 2, 2, 5.5, 5.5])
    np.testing.assert_allclose(out["b"], [42.5, 110 / 3, 42.5, 110 / 3, 110 / 3, 42.5, 42.5])


def test_onedims_and_its_alias_rank_each_variable_on_its_own():
    out = microaggregation(SEVEN, ["a", "b"], k=3, method="onedims")
    # a: {1,2,3} -> 2, {4,5,6,7} -> 5.5; b: {10,20,30} -> 20, {40,...,70} -> 55
    np.testing.assert_allclose(out["a"], [5.5, 2, 5.5, 2, 2, 5.5, 5.5])
    np.testing.assert_allclose(out["b"], [20, 20, 20, 55, 55, 55, 55])
    assert out.equals(microaggregation(SEVEN, ["a", "b"], k=3, method="individual_ranking"))


def test_one_column_is_sdcmicro_mafast_whatever_the_method():
    # sdcMicro's microaggregation: "if only one variable is specified, mafast is applied and argument
    # method is ignored": the column sorted and cut, as onedims
    expected = [5.5, 2, 5.5, 2, 2, 5.5, 5.5]
    for method in ("simple", "pca", "rmd", "clustpca"):
        np.testing.assert_allclose(microaggregation(SEVEN, ["a"], k=3, method=method, random_state=1)["a"], expected)


GROUP = pd.DataFrame({"v": [9.0, 1, 100, 3, 5, 2, 4], "u": [1.0] * 7})  # 7 records, k = 4: one group


@pytest.mark.parametrize(("measure", "trim", "expected"), [
    ("mean", 0.0, 124 / 7),
    ("median", 0.0, 4.0),  # sorted 1 2 3 4 5 9 100
    ("trim", 0.2, (2 + 3 + 4 + 5 + 9) / 5),  # R mean(x, trim = 0.2): floor(7 * 0.2) = 1 dropped at each end
    ("trim", 0.3, (3 + 4 + 5) / 3),  # floor(2.1) = 2 dropped at each end
    ("trim", 0.5, 4.0),  # R: trim >= 0.5 is the median
    # onestep: median 4, |x - 4| = 5 3 96 1 1 2 0 -> median 2, MAD = 1.4826 * 2; limits 4 -/+ 3/1.486 * MAD;
    # only 100 is clipped, to 4 + 3/1.486 * 2.9652
    ("onestep", 0.0, (1 + 2 + 3 + 4 + 5 + 9 + (4 + 3 / 1.486 * 1.4826 * 2)) / 7),
])
def test_measures_of_one_known_group(measure, trim, expected):
    out = microaggregation(GROUP, ["v", "u"], k=4, method="simple", measure=measure, trim=trim)
    np.testing.assert_allclose(out["v"], expected, rtol=1e-12)
    np.testing.assert_allclose(out["u"], 1.0)


@pytest.mark.parametrize(("weights", "expected"), [
    ([1, 1, 1, 1], 2.5),  # rw = .25 .5 .75 1: the first rw >= 1/2 is exactly 1/2 -> (2 + 3) / 2
    ([1, 1, 1, 3], 3.5),  # rw = 1/6 2/6 3/6 1 -> (3 + 4) / 2
    ([3, 1, 1, 1], 1.5),  # rw = .5 at the first value -> (1 + 2) / 2
    ([1, 2, 4, 1], 3.0),  # rw = 1/8 3/8 7/8 1 -> 3
])
def test_weighted_median_is_sdcmicro_weightedmedian(weights, expected):
    frame = pd.DataFrame({"v": [4.0, 2, 1, 3], "u": [0.0] * 4, "w": [weights[3], weights[1], weights[0], weights[2]]})
    out = microaggregation(frame, ["v", "u"], k=3, method="simple", measure="median", weight="w")  # one group
    np.testing.assert_allclose(out["v"], expected)


def test_weighted_mean_per_group():
    frame = SEVEN.assign(w=[1.0, 2, 3, 1, 1, 1, 4])
    out = microaggregation(frame, ["a", "b"], k=3, method="simple", weight="w")
    # rows 0-2: a (5*1 + 1*2 + 7*3) / 6 = 28/6, b (10 + 40 + 90) / 6 = 140/6
    # rows 3-6: a (3 + 2 + 6 + 16) / 7 = 27/7, b (40 + 50 + 60 + 280) / 7 = 430/7
    np.testing.assert_allclose(out["a"], [28 / 6] * 3 + [27 / 7] * 4)
    np.testing.assert_allclose(out["b"], [140 / 6] * 3 + [430 / 7] * 4)
    # the weight follows its record when a method sorts (single: groups rows {1,4,3} and {6,0,5,2})
    out = microaggregation(frame, ["a", "b"], k=3, method="single", weight="w")
    np.testing.assert_allclose(out.loc[[1, 4, 3], "a"], (1 * 2 + 2 * 1 + 3 * 1) / 4)
    np.testing.assert_allclose(out.loc[[6, 0, 5, 2], "a"], (4 * 4 + 5 * 1 + 6 * 1 + 7 * 3) / 9)


def test_mdav_groups_with_another_measure():
    # 6 records, k = 3: MDAV groups {1, 2, 3} and {10, 11, 30} (the far end first); medians 2 and 11
    frame = pd.DataFrame({"a": [1.0, 10, 2, 11, 3, 30], "b": [0.0] * 6})
    np.testing.assert_allclose(microaggregation(frame, ["a", "b"], k=3, measure="median")["a"], [2, 11, 2, 11, 2, 11])
    np.testing.assert_allclose(microaggregation(frame, ["a", "b"], k=3)["a"], [2, 17, 2, 17, 2, 17])


def test_pca_sorts_along_an_obvious_first_component():
    # b = 2a + 1 exactly: the standardised variables coincide, the first component is (1, 1)/sqrt(2)
    # (first loading made positive), so the order is that of a: as `single`
    frame = SEVEN.assign(b=2 * SEVEN["a"] + 1)
    out = microaggregation(frame, ["a", "b"], k=3, method="pca")
    np.testing.assert_allclose(out["a"], [5.5, 2, 5.5, 2, 2, 5.5, 5.5])
    np.testing.assert_allclose(out["b"], [12, 5, 12, 5, 5, 12, 12])


def test_mcdpca_sorts_along_the_robust_component_despite_an_outlier():
    # 40 records near the line b = a (a = 1..40 shuffled, noise 1e-3) and 2 outliers off it, at (0, 1000)
    # and (41, -1000). The MCD (h = 22 of 42 records) ignores the outliers: its first component is about
    # (1, 1)/sqrt(2) and its centre about (20.5, 20.5). Scores: (41, -1000) about -707, the line records
    # (2a - 41)/sqrt(2) in order of a, (0, 1000) about 678. 42 records, k = 3: 14 groups of 3, the low
    # outlier with a = 1, 2 in group 0, the high one with a = 39, 40 in group 13.
    rng = np.random.default_rng(5)
    a = rng.permutation(np.arange(1.0, 41.0))
    frame = pd.DataFrame({"a": np.r_[a, 0.0, 41.0], "b": np.r_[a + rng.normal(0, 1e-3, 40), 1000.0, -1000.0]})
    labels = _stratum_labels(frame[["a", "b"]].to_numpy(), "mcdpca", 3, ["a", "b"], None, 8, np.random.default_rng(1))
    line = labels[:40]
    order = np.argsort(a)
    assert np.all(np.diff(line[order]) >= 0)
    assert labels[41] == labels[order[0]] == 0 and labels[40] == labels.max()


def test_pppca_direction_of_records_on_a_line():
    # every record on the line t * (1, 2): each candidate direction is -/+(1, 2)/sqrt(5), the first
    # loading made non-negative; scores are t - median(t)
    t = np.array([3.0, -1, 4, 1, 5, -9, 2, 6])
    x = np.column_stack([t, 2 * t])
    direction, median = pp_direction(x)
    np.testing.assert_allclose(direction, [1 / np.sqrt(5), 2 / np.sqrt(5)])
    np.testing.assert_allclose(median, [2.5, 5.0])
    frame = pd.DataFrame({"a": t, "b": 2 * t})
    out = microaggregation(frame, ["a", "b"], k=3, method="pppca")
    # t sorted: -9 -1 1 | 2 3 4 5 6 -> means -3 and 4
    np.testing.assert_allclose(out["a"], [4, -3, 4, -3, 4, -3, 4, 4])


def test_rmd_loop_by_hand():
    # records on a line; md given: record 6 (at 13) is the most outlying, its 3 nearest are 13, 12, 11
    # (group 0); the 4 left form the last group (7 records, k = 3: floor(7/3) - 1 = 1 loop)
    y = np.column_stack([[0.0, 1, 2, 10, 11, 12, 13], np.zeros(7)])
    assert rmd_labels(y, np.array([0.0, 0, 0, 0, 0, 0, 5]), 3).tolist() == [1, 1, 1, 1, 0, 0, 0]
    # equal md: the first record (which.max) starts; ties in distance go to the earlier record
    # (which.min): from 0 the distances are 0, 1, 1, 2 -> records 0, 1, 2; then from 3: 3, 4, 5
    y = np.column_stack([[0.0, 1, -1, 2, 3, 4, 5, 6, 7], np.zeros(9)])
    assert rmd_labels(y, np.zeros(9), 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def _rmd_transcription(y: np.ndarray, md: np.ndarray, k: int) -> np.ndarray:
    """sdcMicro's ``micro_rmd`` loop written directly over all remaining records (no tree): s = the
    first remaining record of largest md (R which.max), its group the k remaining records nearest in
    Euclidean distance, ties to the earlier record (R which.min, repeated); the rest the last group."""
    labels = np.full(len(y), -1)
    groups = max(len(y) // k, 1)
    for group in range(groups - 1):
        remaining = np.flatnonzero(labels < 0)
        s = remaining[np.argmax(md[remaining])]
        distance = np.sqrt(((y[remaining] - y[s]) ** 2).sum(axis=1))
        labels[remaining[np.lexsort((remaining, distance))[:k]]] = group
    labels[labels < 0] = groups - 1
    return labels


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 160), p=st.integers(1, 3), k=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_property_rmd_equals_direct_transcription_on_tied_data(n, p, k, seed):
    # values on a grid of 4 (whole numbers: distances and their ties are exact) and md of 3 values,
    # so that most searches meet tied distances and tied outliers; above 8 records the nearest
    # records are searched over a k-d tree of several levels
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, (n, p)).astype(float)
    md = rng.integers(0, 3, n).astype(float)
    assert rmd_labels(y, md, k).tolist() == _rmd_transcription(y, md, k).tolist()


def test_rmd_on_two_far_clouds_groups_within_clouds():
    # two clouds of 6 records far apart, k = 3: no group mixes the clouds
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(0, 1, (6, 2)), rng.normal(100, 1, (6, 2))]
    out = microaggregation(pd.DataFrame(x, columns=["a", "b"]), ["a", "b"], k=3, method="rmd", random_state=7)
    assert (out["a"].to_numpy()[:6] < 50).all() and (out["a"].to_numpy()[6:] > 50).all()


def test_cluster_methods_with_given_clusters():
    # clusters 1 (rows 0, 2, 4, 6) and 2 (rows 1, 3, 5, 7), every record on the line b = 2a
    # cluster 1 sorted along its component: rows 2 (a 1), 6 (2), 4 (3), 0 (4); cluster 2: rows 1 (10),
    # 5 (11), 7 (12), 3 (13); the sequence 2 6 4 0 1 5 7 3 cut into {2, 6, 4} and {0, 1, 5, 7, 3}
    # -> a: 2 and (4 + 10 + 11 + 12 + 13) / 5 = 10
    a = [4.0, 10, 1, 13, 3, 11, 2, 12]
    frame = pd.DataFrame({"a": a, "b": [2 * v for v in a], "c": [1, 2] * 4})
    expected = [10, 10, 2, 10, 2, 10, 2, 10]
    for method in ("clustpca", "clustpppca", "influence"):
        out = microaggregation(frame, ["a", "b"], k=3, method=method, clusters="c", random_state=1)
        np.testing.assert_allclose(out["a"], expected, err_msg=method)
    # influence sorts a cluster by the variable of largest centre: b here (b = 2a); with b = -a, by a
    out = microaggregation(frame.assign(b=[-v for v in a]), ["a", "b"], k=3, method="influence", clusters="c")
    np.testing.assert_allclose(out["a"], expected)


def test_randomised_methods_repeat_with_their_seed():
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(rng.lognormal(size=(120, 3)), columns=["a", "b", "c"])
    for method in RANDOMISED_METHODS:
        first = microaggregation(frame, ["a", "b", "c"], k=3, method=method, random_state=42)
        assert first.equals(microaggregation(frame, ["a", "b", "c"], k=3, method=method, random_state=42)), method


def test_strata_are_aggregated_on_their_own():
    frame = pd.concat([SEVEN.assign(s="x"), SEVEN.assign(a=SEVEN["a"] + 100, s="y")], ignore_index=True)
    out = microaggregation(frame, ["a", "b"], k=3, method="single", strata="s")
    np.testing.assert_allclose(out["a"][:7], [5.5, 2, 5.5, 2, 2, 5.5, 5.5])
    np.testing.assert_allclose(out["a"][7:], [105.5, 102, 105.5, 102, 102, 105.5, 105.5])
    with pytest.raises(SDCInputError, match="stratum 'z' has 2 records"):
        microaggregation(pd.concat([frame, frame.iloc[:2].assign(s="z")]), ["a", "b"], k=3, method="single", strata="s")


def test_bad_options():
    with pytest.raises(SDCInputError, match="measure"):
        microaggregation(SEVEN, ["a", "b"], measure="mode")
    with pytest.raises(SDCInputError, match="trim"):
        microaggregation(SEVEN, ["a", "b"], measure="trim", trim=0.7)
    with pytest.raises(SDCInputError, match="weights the measures mean and median only"):
        microaggregation(SEVEN.assign(w=1.0), ["a", "b"], measure="onestep", weight="w")
    with pytest.raises(SDCInputError, match="weight 'w' must be finite and positive"):
        microaggregation(SEVEN.assign(w=0.0), ["a", "b"], weight="w")
    with pytest.raises(SDCInputError, match="'a'.*'pca' needs complete values, 1 are missing"):
        microaggregation(SEVEN.assign(a=[np.nan, 1, 2, 3, 4, 5, 6]), ["a", "b"], method="pca")
    with pytest.raises(SDCInputError, match="clusters: only the clustering methods"):
        microaggregation(SEVEN, ["a", "b"], method="mdav", clusters="name")
    with pytest.raises(SDCInputError, match="nc"):
        microaggregation(SEVEN, ["a", "b"], method="clustpca", nc=0)


def test_plan_step_takes_method_measure_and_records_seeds_of_randomised_methods():
    frame = pd.DataFrame(np.random.default_rng(2).lognormal(size=(60, 2)), columns=["a", "b"]).assign(k="x")
    steps = [{"method": "microaggregation", "columns": ["a", "b"], "k": 3, "kind": "rmd", "measure": "median"},
             {"method": "microaggregation", "columns": ["a", "b"], "k": 3, "kind": "single", "measure": "trim",
              "trim": 0.25}]
    result = apply_plan(frame, steps, keys=["k"], random_state=9)
    assert isinstance(result.steps[0]["random_state"], int) and result.steps[1]["random_state"] is None
    assert result.steps[0]["parameters"]["kind"] == "rmd" and result.steps[0]["parameters"]["measure"] == "median"
    with pytest.raises(SDCInputError, match="parameter 'measure' must be one of|'measure'"):
        validate_plan([{"method": "microaggregation", "columns": ["a"], "measure": "mode"}], columns=["a"])
    with pytest.raises(SDCInputError, match="'kind'"):
        validate_plan([{"method": "microaggregation", "columns": ["a"], "kind": "kmeans"}], columns=["a"])
    # the report names the method and cites its sources
    assert step_sentence(result.steps[0]).startswith("Microaggregation around robust Mahalanobis outliers (sdcMicro rmd)")
    assert ("Templ & Meindl 2008", "") in step_sources(result.steps[0])


@settings(max_examples=25, deadline=None)
@given(
    method=st.sampled_from([m for m in METHODS if m not in ("mdav", "individual_ranking")]),
    measure=st.sampled_from(["mean", "median", "trim", "onestep"]),
    k=st.integers(2, 4),
    sizes=st.lists(st.integers(8, 30), min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_groups_hold_k_records_and_release_their_measure(method, measure, k, sizes, seed):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    frame = pd.DataFrame({"a": np.round(rng.lognormal(3, 1, n), 1), "b": rng.normal(0, 1, n),
                          "c": rng.integers(0, 5, n).astype(float), "s": np.repeat(np.arange(len(sizes)), sizes),
                          "keep": rng.normal(size=n)})
    columns = ["a", "b", "c"]
    out = microaggregation(frame, columns, k=k, method=method, strata="s", measure=measure, trim=0.2, random_state=seed)
    assert out[["s", "keep"]].equals(frame[["s", "keep"]])
    for stratum in range(len(sizes)):
        rows = np.flatnonzero(frame["s"].to_numpy() == stratum)
        x = frame[columns].to_numpy()[rows]
        labels = _stratum_labels(x, "onedims" if method == "individual_ranking" else method, k, columns, None, 8,
                                 np.random.default_rng(seed))
        labels = np.broadcast_to(labels.reshape(len(x), -1), x.shape)
        for j, column in enumerate(columns):
            sizes_j = np.bincount(labels[:, j])
            assert sizes_j.min() >= k
            groups = pd.Series(x[:, j]).groupby(labels[:, j])
            expected = {"mean": groups.mean(), "median": groups.median(),
                        "trim": groups.apply(lambda v: v.sort_values().iloc[int(len(v) * 0.2):len(v) - int(len(v) * 0.2)].mean()),
                        "onestep": groups.apply(lambda v: v.clip(v.median() - 3 / 1.486 * 1.4826 * (v - v.median()).abs().median(),
                                                                 v.median() + 3 / 1.486 * 1.4826 * (v - v.median()).abs().median()).mean()),
                        }[measure]
            if method in RANDOMISED_METHODS:  # the labels of the check drew other random numbers: sizes only
                continue
            np.testing.assert_allclose(out[column].to_numpy()[rows], expected.to_numpy()[labels[:, j]], rtol=1e-10, atol=1e-12)


# --- Gower microaggregation (sdcMicro microaggrGower, VIM gowerD) ---------------------------------


def test_gower_neighbours_and_aggregates_by_hand():
    # distance variables x (range 10: scaled 0 .1 .2 1 .4) and c (nominal), weights 1: W = 2,
    # d = |dx| / 2 + [c differs] / 2. k = 2 nearest (itself first):
    # 0: to 1 .05, 4 .2 -> {0, 1}; 1: to 0 .05 -> {1, 0}; 2: to 3 .4 (1 .55) -> {2, 3}; 3: to 2 .4 -> {3, 2};
    # 4: to 1 .15 (0 .2) -> {4, 1}; x replaced by the neighbours' means 0.5 0.5 6 6 2.5
    frame = pd.DataFrame({"x": [0.0, 1, 2, 10, 4], "c": ["a", "a", "b", "b", "a"]})
    out = microaggregation_gower(frame, ["x", "c"], k=2, categorical="mode", random_state=1)
    np.testing.assert_allclose(out["x"], [0.5, 0.5, 6, 6, 2.5])
    assert out["c"].tolist() == ["a", "a", "b", "b", "a"]  # every neighbourhood shares one category


def test_gower_ties_go_to_the_earlier_record():
    # records 0 and 1 identical: with k = 1 record 1's nearest is record 0 (VIM's whichminN: first minimum)
    frame = pd.DataFrame({"x": [1.0, 1.0, 5.0], "z": [10.0, 20.0, 30.0]})
    out = microaggregation_gower(frame, ["z"], k=1, distance_columns=["x"])
    np.testing.assert_allclose(out["z"], [10, 10, 30])


def test_gower_ordinal_mixed_and_missing_distances():
    # ordinal o (low < mid < high, L = 3) and x (range 1), W = 2: from record 0 (low, 0): to 1 (high, .1)
    # (1 + .1) / 2 = .55, to 2 (mid, .9) (.5 + .9) / 2 = .7, to 3 (low, 1) .5 -> {0, 3}: mean x 0.5
    o = pd.Categorical(["low", "high", "mid", "low"], categories=["low", "mid", "high"], ordered=True)
    frame = pd.DataFrame({"o": o, "x": [0.0, 0.1, 0.9, 1.0]})
    assert microaggregation_gower(frame, ["x"], k=2, distance_columns=["o", "x"])["x"][0] == pytest.approx(0.5)
    # mixed m with its mass at 0 (W = 1): one side 0 -> 1, neither -> |a - b| unscaled. From 1 (5): to 4 (4.5)
    # .5 -> {1, 4}, mean 4.75; from 3 (3): to 0 and 2 (0) 1, to 4 1.5, to 1 2 -> {3, 0}, mean 1.5
    frame = pd.DataFrame({"m": [0.0, 5, 0, 3, 4.5]})
    out = microaggregation_gower(frame, ["m"], k=2, mixed={"m": 0})
    np.testing.assert_allclose(out["m"], [0, 4.75, 0, 1.5, 4.75])
    # a missing value is compared as max + 1 (VIM maxplus1): x scaled 0 . 1 .2, missing -> 2: record 1's
    # nearest besides itself is record 2 (distance 1); the mean of the observed values is 1
    frame = pd.DataFrame({"x": [0.0, np.nan, 1.0, 0.2]})
    assert microaggregation_gower(frame, ["x"], k=2)["x"][1] == pytest.approx(1.0)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(4, 25), k=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_gower_values_come_from_k_records_of_the_stratum(n, k, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(list("abc"), n), "s": rng.integers(0, 2, n),
                          "keep": rng.normal(size=n)})
    if frame["s"].value_counts().min() < k or frame["s"].nunique() < 2:
        return
    out = microaggregation_gower(frame, ["x", "c"], k=k, strata="s", random_state=seed)
    assert out[["s", "keep"]].equals(frame[["s", "keep"]])
    for _, rows in frame.groupby("s").groups.items():
        x = frame.loc[rows, "x"].to_numpy()
        low, high = np.sort(x)[:k].mean(), np.sort(x)[-k:].mean()  # a mean of k values of the stratum
        assert ((out.loc[rows, "x"] >= low - 1e-12) & (out.loc[rows, "x"] <= high + 1e-12)).all()
        assert set(out.loc[rows, "c"]) <= set(frame.loc[rows, "c"])


def test_gower_plan_step_and_report_sentence():
    frame = pd.DataFrame({"x": [0.25, 1.25, 2.25, 10.25, 4.25, 3.25], "c": list("aabbab")})
    result = apply_plan(frame, [{"method": "microaggregation_gower", "columns": ["x", "c"], "k": 2}], keys=["c"],
                        random_state=3)
    # records 0 and 1 are each other's nearest (distance .05, as in test_gower_neighbours_and_aggregates_by_hand)
    np.testing.assert_allclose(result.data["x"][:2], [0.75, 0.75])
    assert isinstance(result.steps[0]["random_state"], int)
    assert step_sentence(result.steps[0]).startswith("Gower-distance microaggregation of mixed variables")
    assert ("Gower 1971", "") in step_sources(result.steps[0])
    with pytest.raises(SDCInputError, match="'categorical'"):
        validate_plan([{"method": "microaggregation_gower", "columns": ["x"], "categorical": "first"}], columns=["x"])


@settings(max_examples=25, deadline=None)
@given(method=st.sampled_from(["simple", "single", "onedims", "pca", "pppca", "mdav"]),
       measure=st.sampled_from(["mean", "median"]), n=st.integers(6, 40), seed=st.integers(0, 2**16))
def test_weighted_group_values_are_the_weighted_measure_of_the_group(method, measure, n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.gamma(2, size=n), "w": rng.integers(1, 5, n).astype(float)})
    out = microaggregation(frame, ["a", "b"], k=3, method=method, measure=measure, weight="w")
    unweighted = microaggregation(frame, ["a", "b"], k=3, method=method)
    for column in ("a", "b"):
        # the groups: records sharing an unweighted group mean (a tie between two groups' means is
        # measure-zero for continuous draws)
        for _, rows in frame.groupby(unweighted[column]).groups.items():
            values, w = frame.loc[rows, column].to_numpy(), frame.loc[rows, "w"].to_numpy()
            if measure == "mean":
                expected = (values * w).sum() / w.sum()
            else:  # sdcMicro weightedMedian, written out: the first sorted value whose weight share reaches 1/2
                order = np.argsort(values, kind="stable")
                share = np.cumsum(w[order]) / w.sum()
                first = int(np.argmax(share >= 0.5))
                expected = values[order][first] if share[first] != 0.5 else values[order][first:first + 2].mean()
            np.testing.assert_allclose(out.loc[rows, column], expected, rtol=1e-12)


def test_exact_fit_of_the_mcd_is_a_clear_error_and_few_distinct_records_cluster():
    # 30 of 50 records at (0, 0): the MCD's half-sample is a single point (sdcMicro's mahalanobis stops
    # on the singular covariance too)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": np.r_[np.zeros(30), rng.normal(size=20)], "b": np.r_[np.zeros(30), rng.normal(size=20)]})
    with pytest.raises(SDCInputError, match="MCD.*singular.*exact fit"):
        microaggregation(frame, ["a", "b"], k=3, method="mcdpca", random_state=1)
    # two distinct records only: CLARA gets 2 clusters (6 records at 1, 2 at 2), sorted and cut into
    # {1, 1, 1} and {1, 1, 1, 2, 2}: 1 and 7/5
    frame = pd.DataFrame({"a": [1.0] * 6 + [2.0] * 2, "b": [1.0] * 6 + [2.0] * 2})
    out = microaggregation(frame, ["a", "b"], k=3, method="clustpca", random_state=1)
    np.testing.assert_allclose(out["a"], [1, 1, 1, 1.4, 1.4, 1.4, 1.4, 1.4])


def test_clara_by_hand():
    """PAM on 0, 1, 2, 10, 11, 12 (one CLARA sample: n <= 40 + 2k) with k = 2. BUILD: total distances
    36, 32, 30, 30, 32, 36: first medoid 2 (the first of the least); gains of a second medoid with the
    nearest distances 2, 1, 0, 8, 9, 10: 10 -> 24, 11 -> 7 + 9 + 9 = 25, 12 -> 24: medoid 11. SWAP:
    2 -> 1 lowers the total from 5 to 4, then no exchange lowers it: medoids 1 and 11, clusters
    numbered in the order of their first record."""
    from sdc_dagster.protect.microaggregation.cluster import clara_clusters

    labels, medoids = clara_clusters(np.array([[10.0], [0.0], [1.0], [2.0], [11.0], [12.0]]), 2, 0)
    assert labels.tolist() == [0, 1, 1, 1, 0, 0]
    assert medoids.tolist() == [[11.0], [1.0]]



def test_influence_sorts_by_the_variable_of_the_largest_medoid_value_not_mean():
    """One cluster (nc = 1) of (1, 2.0), (1, 2.2), (1, 1.8), (1, 2.1), (50, 0), (1, 1.9): its medoid
    (PAM, k = 1: least total distance, 0.6 + 49.04 for (1, 2.0) against 0.7 + 49.04 for (1, 1.9)) is
    (1, 2.0), largest in b, so the records are sorted by b: rows 4, 2 | 5, 0 | 3, 1 (k = 2). The
    cluster mean (9.2, 1.7) would sort by a: rows 0, 1 | 2, 3 | 5, 4."""
    frame = pd.DataFrame({"a": [1.0, 1.0, 1.0, 1.0, 50.0, 1.0], "b": [2.0, 2.2, 1.8, 2.1, 0.0, 1.9]})
    out = microaggregation(frame, ["a", "b"], k=2, method="influence", nc=1, random_state=0)
    np.testing.assert_allclose(out["a"], [1, 1, 25.5, 1, 25.5, 1])
    np.testing.assert_allclose(out["b"], [1.95, 2.15, 0.9, 2.15, 0.9, 1.95])


def test_clustmcdpca_sorts_a_cluster_whose_mcd_is_an_exact_fit_by_its_first_variable():
    """One cluster (given) of 5 records whose third variable is 1 on 4 of them: the MCD's half-sample
    (h = 4) lies on the plane c = 1, an exact fit; the cluster is sorted by a (7.3, 8.7, 9.3, 10.8,
    11.9: rows 1, 2, 0, 4, 3) and cut into groups of 2 and 3 (k = 2, 5 records)."""
    frame = pd.DataFrame({"a": [9.3, 7.3, 8.7, 11.9, 10.8], "b": [0.85, -0.25, 0.77, -0.49, 0.15],
                          "c": [1.0, 0.0, 1.0, 1.0, 1.0], "g": [1] * 5})
    out = microaggregation(frame, ["a", "b", "c"], k=2, method="clustmcdpca", clusters="g", random_state=0)
    np.testing.assert_allclose(out["a"], [(9.3 + 10.8 + 11.9) / 3, 8.0, 8.0, (9.3 + 10.8 + 11.9) / 3,
                                          (9.3 + 10.8 + 11.9) / 3])
