"""Record linkage with Gower's distance for mixed data (SPEC §4.1), as sdcMicro's recordLinkage
computes it with cluster::daisy(rbind(x, y), metric = "gower"): checked against distances worked
out by hand from daisy's definition and against the PyPI package ``gower`` (a peer implementation)."""

from __future__ import annotations

import contextlib
from unittest import mock

import gower
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import gower_distances, record_linkage_risk
from sdc_dagster.risk import gower_scan, gower_search, linkage


def search_constants(**values):
    """The linkage search's constants set to ``values``, each in the module that holds it (the
    block size in linkage, the pattern search's in gower_search)."""
    stack = contextlib.ExitStack()
    for name, value in values.items():
        stack.enter_context(mock.patch.object(linkage if hasattr(linkage, name) else gower_search, name, value))
    return stack

EDUCATION = pd.CategoricalDtype(["low", "mid", "high"], ordered=True)
ORIGINAL = pd.DataFrame(
    {
        "age": [20.0, 30, 40],
        "sex": ["m", "f", "f"],
        "edu": pd.Categorical(["low", "high", None], dtype=EDUCATION),
    }
)
PROTECTED = pd.DataFrame(
    {
        "age": [22.0, np.nan, 50],
        "sex": ["m", "f", "m"],
        "edu": pd.Categorical(["mid", "high", "low"], dtype=EDUCATION),
    },
    index=[10, 11, 12],
)
# By hand from daisy's definition. age: range over BOTH files = 50 - 20 = 30. edu (ordinal):
# positions low 0, mid 1, high 2, observed range 2. sex (nominal): 0 if equal, else 1.
# Mean over the variables observed in both records (rows: protected, columns: original):
BY_HAND = np.array(
    [
        [(2 / 30 + 0 + 1 / 2) / 3, (8 / 30 + 1 + 1 / 2) / 3, (18 / 30 + 1) / 2],  # edu of original 2 missing
        [(1 + 1) / 2, (0 + 0) / 2, 0 / 1],  # age of protected 1 missing
        [(30 / 30 + 0 + 0) / 3, (20 / 30 + 1 + 1) / 3, (10 / 30 + 1) / 2],
    ]
)


def test_gower_distances_by_hand_with_mixed_types_and_missing_values():
    np.testing.assert_allclose(gower_distances(ORIGINAL, PROTECTED, ["age", "sex", "edu"]), BY_HAND, rtol=1e-12)
    # the same with the scales named explicitly (edu as plain strings, sex as integer codes)
    plain = ORIGINAL.assign(edu=ORIGINAL["edu"].astype(object), sex=ORIGINAL["sex"].map({"m": 1, "f": 2}))
    released = PROTECTED.assign(edu=PROTECTED["edu"].astype(object), sex=PROTECTED["sex"].map({"m": 1, "f": 2}))
    explicit = gower_distances(
        plain, released, ["age", "sex", "edu"], scales={"sex": "nominal", "edu": "ordinal"},
        categories={"edu": ["low", "mid", "high"]},
    )
    np.testing.assert_allclose(explicit, BY_HAND, rtol=1e-12)


def test_gower_linkage_by_hand():
    columns = ["age", "sex", "edu"]
    nearest = record_linkage_risk(ORIGINAL, PROTECTED, columns, distance="gower")
    # protected 0: nearest is its own (0.189); protected 1: its own and original 2 both at 0 -> a
    # tie counts for the intruder; protected 2: original 0 (1/3) is nearer than its own (2/3)
    assert nearest.linked.tolist() == [True, True, False]
    assert nearest.linked.index.tolist() == [10, 11, 12]
    assert nearest.partner.tolist() == [0, 1, 0]
    assert nearest.risk == pytest.approx(2 / 3) and nearest.compared == 3
    # one-to-one: identity costs 0.1889 + 0 + 0.6667 = 0.8556, the best of the six permutations
    # (next: protected 0 -> 1, 1 -> 2, 2 -> 0 with 0.5889 + 0 + 0.3333 = 0.9222)
    one = record_linkage_risk(ORIGINAL, PROTECTED, columns, distance="gower", assignment="one_to_one")
    assert one.linked.all() and one.risk == 1.0 and one.expected_risk == 1.0
    assert one.partner.tolist() == [0, 1, 2]


def test_gower_pair_without_a_common_variable_has_no_distance():
    original = pd.DataFrame({"x": [np.nan, 1.0, 2.0], "k": ["a", np.nan, "b"]})
    protected = pd.DataFrame({"x": [5.0, 1.0, 2.0], "k": [np.nan, "a", "b"]})
    d = gower_distances(original, protected, ["x", "k"])
    # protected 0 observes only x, original 0 only k: nothing to compare
    assert np.isnan(d[0, 0])
    # x range over both files: 5 - 1 = 4; protected 0 to original 1: |5 - 1| / 4 = 1; to original 2: 3 / 4
    np.testing.assert_allclose(d[0, 1:], [1.0, 0.75])
    nearest = record_linkage_risk(original, protected, ["x", "k"], distance="gower")
    assert nearest.linked.tolist() == [False, True, True] and nearest.compared == 2
    assert nearest.partner[0] == 2 and nearest.risk == pytest.approx(2 / 3)  # its nearest defined distance
    # one-to-one: the pair without a distance is avoided while an assignment of defined pairs exists
    # (here every such assignment costs more than nothing, so protected 1 and 2 give up their own)
    one = record_linkage_risk(original, protected, ["x", "k"], distance="gower", assignment="one_to_one")
    assert one.compared == 2 and not one.linked[0] and one.partner[0] != 0


def test_gower_range_is_taken_over_both_files():
    # A released value outside the original range widens the range (daisy on rbind(x, y)):
    # range 10 -> 20, so the distances halve but the links do not change.
    original = pd.DataFrame({"x": [0.0, 5.0, 10.0]})
    protected = pd.DataFrame({"x": [1.0, 6.0, 20.0]})
    np.testing.assert_allclose(gower_distances(original, protected, ["x"])[2], [1.0, 0.75, 0.5])


def test_gower_bad_input():
    with pytest.raises(SDCInputError, match="'sex'.*must be numeric"):
        gower_distances(ORIGINAL, PROTECTED, ["sex"], scales={"sex": "continuous"})
    with pytest.raises(SDCInputError, match=r"scales\['sex'\]: must be one of"):
        record_linkage_risk(ORIGINAL, PROTECTED, ["sex"], distance="gower", scales={"sex": "binary"})
    with pytest.raises(SDCInputError, match="'edu'.*not in the ordinal categories"):
        gower_distances(ORIGINAL, PROTECTED.assign(edu=["low", "phd", "high"]), ["edu"],
                        scales={"edu": "ordinal"}, categories={"edu": ["low", "mid", "high"]})
    with pytest.raises(SDCInputError, match=r"scales\['sex'\].*continuous variables only"):
        record_linkage_risk(ORIGINAL, PROTECTED, ["age", "sex"], scales={"sex": "nominal"})
    with pytest.raises(SDCInputError, match="'nope'"):
        record_linkage_risk(ORIGINAL, PROTECTED, ["nope"], distance="gower")
    with pytest.raises(SDCInputError, match="rows"):
        record_linkage_risk(ORIGINAL, PROTECTED.iloc[:2], ["age"], distance="gower")
    reordered = PROTECTED.assign(edu=PROTECTED["edu"].cat.reorder_categories(["high", "mid", "low"]))
    with pytest.raises(SDCInputError, match="'edu'.*ordered categories differ"):
        gower_distances(ORIGINAL, reordered, ["edu"])


# --- against the peer implementation (PyPI ``gower``) and the definition -------------------------

def mixed_frames(draw, n: int, missing: bool):
    """Original and protected frames with two continuous, two nominal and one ordinal variable."""
    def column(kind):
        if kind == "continuous":
            values = draw(st.lists(st.integers(1, 60), min_size=2 * n, max_size=2 * n)).copy()
            values = [float(v) for v in values]
        else:
            values = draw(st.lists(st.integers(0, 3), min_size=2 * n, max_size=2 * n))
        if missing:
            holes = draw(st.lists(st.booleans(), min_size=2 * n, max_size=2 * n))
            values = [None if h else v for v, h in zip(values, holes)]
        return values

    kinds = {"c1": "continuous", "c2": "continuous", "n1": "nominal", "n2": "nominal", "o": "ordinal"}
    raw = {name: column(kind) for name, kind in kinds.items()}
    frame = pd.DataFrame(raw)
    for name in ("c1", "c2"):
        frame[name] = frame[name].astype(float)
    for name in ("n1", "n2"):
        frame[name] = frame[name].map(lambda v: None if pd.isna(v) else f"cat{int(v)}").astype(object)
    order = pd.CategoricalDtype([0, 1, 2, 3], ordered=True)
    frame["o"] = pd.Categorical(frame["o"].map(lambda v: None if pd.isna(v) else int(v)), dtype=order)
    return frame.iloc[:n].reset_index(drop=True), frame.iloc[n:].reset_index(drop=True)


def peer_matrix(original: pd.DataFrame, protected: pd.DataFrame) -> np.ndarray:
    """gower.gower_matrix on the stacked frames (as daisy on rbind), the protected x original block.
    The ordinal is given to the peer as its numeric codes 1..4 (daisy's integer codes of an ordered
    factor, interval-scaled). gower 0.1.2 fills its result as if symmetric whenever both inputs have
    the same number of rows, so it is called on the stacked frame only."""
    stacked = pd.concat([original, protected], ignore_index=True)
    stacked["o"] = stacked["o"].cat.codes.astype(float) + 1.0
    full = gower.gower_matrix(stacked, cat_features=[False, False, True, True, False])
    n = len(original)
    return full[n:, :n].astype(np.float64)


def definition_matrix(original: pd.DataFrame, protected: pd.DataFrame) -> np.ndarray:
    """daisy's Gower distance written out pair by pair, with the pairwise missing-value rule."""
    both = pd.concat([original, protected], ignore_index=True)
    codes = both["o"].cat.codes.where(both["o"].notna())
    spread = {c: (both[c].max() - both[c].min()) or 1.0 for c in ("c1", "c2")}
    spread["o"] = (codes.max() - codes.min()) or 1.0 if codes.notna().any() else 1.0
    n = len(original)
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            a, b = protected.iloc[i], original.iloc[j]
            parts = []
            for c in ("c1", "c2"):
                if pd.notna(a[c]) and pd.notna(b[c]):
                    parts.append(abs(a[c] - b[c]) / spread[c])
            for c in ("n1", "n2"):
                if pd.notna(a[c]) and pd.notna(b[c]):
                    parts.append(0.0 if a[c] == b[c] else 1.0)
            if pd.notna(a["o"]) and pd.notna(b["o"]):
                parts.append(abs(int(a["o"]) - int(b["o"])) / spread["o"])
            if parts:
                out[i, j] = sum(parts) / len(parts)
    return out


def check_nearest(result, matrix: np.ndarray, tolerance: float):
    """Linked flags agree with the matrix wherever the own distance is not within ``tolerance`` of
    the nearest one (no near tie)."""
    own = np.diag(matrix)
    nearest = np.nanmin(np.where(np.isnan(matrix), np.inf, matrix), axis=1)
    clear = np.abs(own - nearest) > tolerance
    expected = own <= nearest
    assert (result.linked.to_numpy()[clear] == expected[clear]).all()


COLUMNS = ["c1", "c2", "n1", "n2", "o"]


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 9))
def test_property_complete_data_matches_the_gower_package(data, n):
    original, protected = mixed_frames(data.draw, n, missing=False)
    peer = peer_matrix(original, protected)
    np.testing.assert_allclose(gower_distances(original, protected, COLUMNS), peer, atol=1e-6)
    # nearest: the cKDTree fast path (continuous scaled by range, nominal one-hot halves, L1)
    check_nearest(record_linkage_risk(original, protected, COLUMNS, distance="gower"), peer, 1e-5)
    # one-to-one: the assignment has the least total peer distance
    one = record_linkage_risk(original, protected, COLUMNS, distance="gower", assignment="one_to_one")
    rows, cols = linear_sum_assignment(peer)
    assert peer[np.arange(n), one.partner.to_numpy(int)].sum() == pytest.approx(peer[rows, cols].sum(), abs=1e-5)
    assert sorted(one.partner.tolist()) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 8))
def test_property_missing_values_follow_the_pairwise_definition(data, n):
    original, protected = mixed_frames(data.draw, n, missing=True)
    expected = definition_matrix(original, protected)
    np.testing.assert_allclose(gower_distances(original, protected, COLUMNS), expected, rtol=1e-12, atol=1e-12)
    # the exact path in blocks of a few protected records gives the same links as one block
    whole = record_linkage_risk(original, protected, COLUMNS, distance="gower")
    with mock.patch.object(linkage, "_GOWER_BLOCK_PAIRS", 2 * n):
        blocked = record_linkage_risk(original, protected, COLUMNS, distance="gower")
    assert blocked.linked.equals(whole.linked) and blocked.partner.equals(whole.partner)
    check_nearest(whole, expected, 1e-12)
    own_defined = ~np.isnan(np.diag(expected))
    assert whole.compared == int(own_defined.sum())
    assert not whole.linked[~own_defined].any()
    one = record_linkage_risk(original, protected, COLUMNS, distance="gower", assignment="one_to_one")
    assert not one.linked[~own_defined].any() and 0.0 <= one.expected_risk <= one.risk <= 1.0


@settings(max_examples=30, deadline=None)
@given(st.data(), st.integers(2, 9), st.booleans())
def test_property_unchanged_release_is_fully_linked(data, n, missing):
    original, _ = mixed_frames(data.draw, n, missing=missing)
    assume(original[COLUMNS].notna().any(axis=1).all())
    for assignment in ("nearest", "one_to_one"):
        result = record_linkage_risk(original, original, COLUMNS, distance="gower", assignment=assignment)
        assert result.risk == 1.0 and result.compared == n


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 9), st.sampled_from([8, 1]))
def test_property_pattern_search_follows_the_pairwise_definition(data, n, wide_levels):
    """The k-d tree search per pair of missing-value patterns (used on large files, issue 21/23)
    links as daisy's pairwise distances say: same flags, same compared records, and each partner is
    a nearest original; also with every nominal variable searched by its codes (wide_levels 1, the
    path of an occupation code with hundreds of categories)."""
    original, protected = mixed_frames(data.draw, n, missing=True)
    expected = definition_matrix(original, protected)
    with mock.patch.object(gower_search, "_GOWER_PATTERN_PAIR_COST", 0), \
            mock.patch.object(gower_search, "_GOWER_WIDE_LEVELS", wide_levels):
        searched = record_linkage_risk(original, protected, COLUMNS, distance="gower")
    check_nearest(searched, expected, 1e-12)
    own_defined = ~np.isnan(np.diag(expected))
    assert searched.compared == int(own_defined.sum())
    assert not searched.linked[~own_defined].any()
    filled = np.where(np.isnan(expected), np.inf, expected)
    for i, partner in enumerate(searched.partner):
        if pd.isna(partner):
            assert np.isinf(filled[i]).all()  # no original shares a variable with it
        else:
            assert filled[i, int(partner)] == pytest.approx(filled[i].min(), abs=1e-12)


# Ties at random (issue 22). age: range over both files 30..50 = 20; sex nominal.
#   p0, p1 = (30, M): o0, o1 (30, M) and o2 (30, sex missing: age only) all at 0: 1/3 each;
#   p2 = (30, missing): o0, o1, o2 at 0 (age only): 1/3;
#   p3 = (44, F): o3 (50, F) at (6/20 + 0)/2 = 0.15, o4 (36, F) at 0.2, o2 at 0.7: alone, 1;
#   p4 = (missing, F): o3 and o4 at 0 (sex only), o2 without a common variable: 1/2.
# Worst case 5/5 linked; at random (3 x 1/3 + 1 + 1/2) / 5 = 1/2.
TIED_ORIGINAL = pd.DataFrame({"age": [30.0, 30, 30, 50, 36], "sex": ["M", "M", None, "F", "F"]})
TIED_RELEASED = pd.DataFrame({"age": [30.0, 30, 30, 44, np.nan], "sex": ["M", "M", None, "F", "F"]})


@pytest.mark.parametrize("path", ["blocks", "one block", "patterns", "patterns by codes"])
def test_gower_ties_at_random_by_hand_with_missing_values(path):
    """Every Gower search (the exact blocks, the k-d trees per missing-value pattern, and those
    with the nominal variable searched by its codes) counts the same tied originals."""
    options = {"blocks": {"_GOWER_BLOCK_PAIRS": 5}, "one block": {"_GOWER_BLOCK_PAIRS": 1 << 22},
               "patterns": {"_GOWER_PATTERN_PAIR_COST": 0},
               "patterns by codes": {"_GOWER_PATTERN_PAIR_COST": 0, "_GOWER_WIDE_LEVELS": 1}}[path]
    with search_constants(**options):
        result = record_linkage_risk(TIED_ORIGINAL, TIED_RELEASED, ["age", "sex"], distance="gower")
    assert result.linked.all() and result.risk == 1.0
    assert result.expected_risk == pytest.approx(0.5)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 9), st.sampled_from(["blocks", "patterns", "patterns by codes"]))
def test_property_gower_ties_at_random_follow_the_pairwise_definition(data, n, path):
    """expected_risk is the mean over records of linked / (originals within the nearest distance),
    from daisy's pairwise distances written out here, on every search path; 0 <= expected_risk <=
    risk <= 1."""
    original, protected = mixed_frames(data.draw, n, missing=True)
    matrix = np.where(np.isnan(d := definition_matrix(original, protected)), np.inf, d)
    nearest = matrix.min(axis=1)
    tied = matrix <= nearest[:, None] * (1 + 1e-9) + 1e-12
    linked = tied[np.arange(n), np.arange(n)] & np.isfinite(nearest)
    options = {"blocks": {"_GOWER_BLOCK_PAIRS": 2 * n},
               "patterns": {"_GOWER_PATTERN_PAIR_COST": 0},
               "patterns by codes": {"_GOWER_PATTERN_PAIR_COST": 0, "_GOWER_WIDE_LEVELS": 1}}[path]
    with search_constants(**options):
        result = record_linkage_risk(original, protected, COLUMNS, distance="gower")
    assert result.expected_risk == pytest.approx(float((linked / np.maximum(tied.sum(axis=1), 1)).mean()), abs=1e-9)
    assert 0.0 <= result.expected_risk <= result.risk <= 1.0


def test_pattern_search_is_chosen_on_large_files_with_few_patterns():
    rng = np.random.default_rng(3)
    n = 3000
    z = rng.random((n, 3))
    z[rng.random((n, 3)) < 0.1] = np.nan
    patterns = gower_search.observed_patterns(z)[0]
    assert len(patterns) == 8
    assert gower_search.pattern_search_is_cheaper(patterns, patterns, n, n)  # 8 x 8 patterns << 9M pairs
    small = gower_search.observed_patterns(z[:50])[0]
    assert not gower_search.pattern_search_is_cheaper(small, small, 50, 50)


def close_release(seed: int, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An original file and a release close to it: amounts jittered, a fifth of the n1 codes
    redrawn, a tenth of n2 set to a code no original has."""
    rng = np.random.default_rng(seed)
    original = pd.DataFrame({"c1": rng.normal(50, 10, n), "c2": rng.uniform(0, 100, n),
                             "n1": rng.choice(["a", "b", "c"], n), "n2": rng.choice(["x", "y"], n)})
    protected = original.copy()
    protected["c1"] += rng.normal(0, rng.choice([0.01, 5.0]), n)
    protected["c2"] += rng.normal(0, 0.5, n)
    changed = rng.random(n) < 0.2
    protected.loc[changed, "n1"] = rng.choice(["a", "b", "c"], int(changed.sum()))
    protected.loc[rng.random(n) < 0.1, "n2"] = "z"  # no original agrees: left to the full search
    return original, protected


# the scan of groups of originals as it runs (lookups per combination of missing categories where few,
# differing groups scanned for the unsettled records), and with every table grouped by the shared
# nominal variables and the unsettled records left to the k-d tree search
SEARCH_PATHS = [{}, {"_GOWER_LOOKUPS_PER_ORIGINAL": 0.0, "_GOWER_SCAN_GROUPS": 0}]


def assert_searched_equals_exact(original: pd.DataFrame, protected: pd.DataFrame, columns: list[str]):
    """The per-pattern search (agreeing groups first) gives the links, compared records and ties at
    random of the exact computation in blocks, and each partner is a nearest original, on every
    path of :data:`SEARCH_PATHS`."""
    with mock.patch.object(gower_search, "_GOWER_PATTERN_PAIR_COST", 10 ** 12):
        exact = record_linkage_risk(original, protected, columns, distance="gower")
    matrix = gower_distances(original, protected, columns)
    filled = np.where(np.isnan(matrix), np.inf, matrix)
    for path in SEARCH_PATHS:
        with mock.patch.multiple(gower_search, _GOWER_PATTERN_PAIR_COST=0, **path):
            searched = record_linkage_risk(original, protected, columns, distance="gower")
        assert searched.linked.equals(exact.linked)
        assert searched.compared == exact.compared
        assert searched.expected_risk == pytest.approx(exact.expected_risk, abs=1e-12)
        for i, partner in enumerate(searched.partner):
            if not pd.isna(partner):
                assert filled[i, int(partner)] == pytest.approx(filled[i].min(), abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 120))
def test_property_agreeing_groups_search_equals_the_exact_blocks(seed, n):
    """A released file close to its original, some values missing in both: most records are
    settled by the search among originals agreeing on the nominal variables, the others by the full
    per-pattern search (issue 23); results equal the exact computation in blocks."""
    original, protected = close_release(seed, n)
    rng = np.random.default_rng(seed + 1)
    for frame in (original, protected):
        for column in frame.columns:
            frame.loc[rng.random(n) < 0.1, column] = np.nan
    assert_searched_equals_exact(original, protected, ["c1", "c2", "n1", "n2"])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 120), st.sampled_from(["nominal", "numeric", "both"]))
def test_property_agreeing_search_of_records_missing_what_the_originals_observe(seed, n, missing):
    """Complete originals; released records missing nominal variables (looked up once per category
    of the originals' groups, or per combination of two) or numeric ones (groups scanned by the sum
    of the one they observe, or, missing both, every group's originals at one distance): results
    equal the exact computation in blocks, and those searches did take place."""
    original, protected = close_release(seed, n)
    rng = np.random.default_rng(seed + 1)
    columns = {"nominal": ["n1", "n2"], "numeric": ["c1", "c2"], "both": ["c1", "c2", "n1", "n2"]}[missing]
    nominal_of_third = protected.loc[2, ["n1", "n2"]].copy()
    for column in columns:
        protected.loc[rng.random(n) < 0.15, column] = np.nan
    protected.loc[0, columns[0]] = protected.loc[1, columns[-1]] = np.nan
    if missing != "nominal":  # a record missing both numeric variables and observing the nominal ones
        protected.loc[2, ["c1", "c2"]] = np.nan
        protected.loc[2, ["n1", "n2"]] = nominal_of_third
    tables = []
    group_tables = gower_search._group_tables

    def spy(zx, nominal, levels, x_patterns, x_rows, m_patterns, m_count):
        tables.append((nominal, x_patterns, m_patterns, group_tables(zx, nominal, levels, x_patterns, x_rows,
                                                                     m_patterns, m_count)))
        return tables[-1][-1]

    with mock.patch.object(gower_search, "_group_tables", spy):
        assert_searched_equals_exact(original, protected, ["c1", "c2", "n1", "n2"])
    # a table grouped by a variable the record misses; summing one numeric variable; none
    enumerated, summed, unsummed = False, False, False
    for nominal, x_patterns, m_patterns, arrays in tables:
        pair_table = arrays["pairs"][0]
        columns_of, column_starts, numeric_of, numeric_starts = arrays["tables"][:4]
        for a, b in zip(*np.nonzero(pair_table >= 0)):
            t = pair_table[a, b]
            enumerated |= not m_patterns[a][columns_of[column_starts[t]:column_starts[t + 1]]].all()
            summed |= numeric_starts[t + 1] - numeric_starts[t] == 1
            unsummed |= numeric_starts[t + 1] - numeric_starts[t] == 0
    if missing != "numeric":
        assert enumerated
    if missing != "nominal":
        assert summed and unsummed


def definition_distances(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """daisy's Gower distances of every encoded protected record (rows) to every original, written
    out with numpy's sums as the search must round them: the mean over the variables observed in
    both of |difference| (continuous, scaled) or differ/agree as 1/0 (nominal)."""
    gap = np.abs(zm[:, None, :] - zx[None, :, :])
    seen = ~np.isnan(gap)
    gap = np.where(nominal, (gap > 0).astype(float), gap)
    with np.errstate(invalid="ignore"):
        return np.where(seen, gap, 0.0).sum(axis=2) / seen.sum(axis=2)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 40), st.integers(1, 12))
def test_property_scan_follows_the_definition_bit_for_bit(seed, n_x, n_m, width):
    """gower_nearest on encoded records (numeric values on a coarse grid, so that exact ties are
    common; a fifth missing; 1 to 12 variables, so that the sums of 8 and more round pairwise as
    numpy's): the nearest distance equals the definition's minimum bit for bit on every path; on the
    scan's the partner is the lowest position at that distance and the tied originals of a record
    whose own original is nearest are those within TIE_TOLERANCE, counted as the blocks count."""
    rng = np.random.default_rng(seed)
    nominal = rng.random(width) < 0.5
    zx = np.where(nominal, rng.integers(0, 3, (n_x, width)), rng.integers(0, 5, (n_x, width)) / 4)
    zm = np.where(nominal, rng.integers(0, 3, (n_m, width)), rng.integers(0, 5, (n_m, width)) / 4)
    zx[rng.random(zx.shape) < 0.2] = np.nan
    zm[rng.random(zm.shape) < 0.2] = np.nan
    matrix = definition_distances(zx, zm, nominal)
    filled = np.where(np.isnan(matrix), np.inf, matrix)
    nearest = filled.min(axis=1)
    own = matrix[np.arange(n_m), rng.integers(0, n_x, n_m)]  # a distance to some original: a bound
    hit = (own <= nearest * (1.0 + 1e-12) + 1e-300) & np.isfinite(nearest)
    tied = (filled <= nearest[:, None] * (1.0 + gower_scan.TIE_TOLERANCE) + 1e-300).sum(axis=1)
    for path in SEARCH_PATHS:
        with search_constants(**path):
            found, partner, ties = gower_search.gower_nearest(
                zx, zm, nominal, gower_search.observed_patterns(zx), gower_search.observed_patterns(zm), own)
        assert np.array_equal(found, nearest)
        assert np.array_equal(ties[hit], tied[hit]) and (ties[~hit] == 1).all()
        if not path:
            lowest = np.where(np.isfinite(nearest), np.argmax(filled == nearest[:, None], axis=1), -1)
            assert np.array_equal(partner, lowest)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 120), st.integers(2, 6))
def test_property_copies_of_released_records_are_searched_once(seed, n, size):
    """Released records in groups of identical copies (the amounts replaced by the means of groups
    of ``size`` records, as microaggregation releases them; some values missing): each distinct
    record is searched once, and the links, compared records, ties at random and partners equal
    the exact computation in blocks."""
    original, protected = close_release(seed, n)
    rng = np.random.default_rng(seed + 2)
    protected.loc[rng.random(n) < 0.1, "c2"] = np.nan
    group = np.arange(n) // size
    protected[["c1", "c2"]] = protected[["c1", "c2"]].groupby(group).transform("mean")
    protected[["n1", "n2"]] = protected[["n1", "n2"]].groupby(group).transform("first")
    searched_rows = []
    nearest = gower_search.gower_nearest

    def spy(zx, zm, *args, **options):
        searched_rows.append(len(zm))
        return nearest(zx, zm, *args, **options)

    with mock.patch.object(linkage, "gower_nearest", spy):
        assert_searched_equals_exact(original, protected, ["c1", "c2", "n1", "n2"])
    distinct = len(protected.drop_duplicates())
    assert searched_rows and set(searched_rows) == {distinct} and distinct <= -(-n // size) * 2


def test_distinct_rows_are_equal_bit_for_bit_with_missing_values():
    z = np.array([[1.0, np.nan], [2.0, 0.0], [1.0, np.nan], [2.0, -0.0], [2.0, 0.0]])
    first, copy_of = linkage._distinct_rows(z)
    # -0.0 and 0.0 differ in their bits: a separate (correct, if unneeded) search
    assert first.tolist() == [0, 1, 3] and copy_of.tolist() == [0, 1, 0, 2, 1]
    with mock.patch.object(linkage, "_row_digest", lambda bits: np.zeros(len(bits), dtype=np.uint64)):
        first, copy_of = linkage._distinct_rows(z)  # every row the same hash: the rows are sorted
    assert [z[f].tobytes() for f in first[copy_of]] == [row.tobytes() for row in z]
    assert len(first) == 3


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 120))
def test_property_releases_of_the_same_originals_share_their_tables_and_link_as_fresh_ones(seed, n):
    """Issue 38: the originals' grouped and sorted tables are kept for the next release linked to the
    same originals (``gower_search._SORTED_TABLES``, by content): two releases of one original file
    (values missing in all, so several patterns and tables) link as with tables built for each; a
    second release with the first one's missing values (amounts swapped between its records) builds
    no table again."""
    original, first = close_release(seed, n)
    rng = np.random.default_rng(seed + 1)
    for frame in (original, first):
        for column in frame.columns:
            frame.loc[rng.random(n) < 0.1, column] = np.nan
    second = first.copy()
    for column in ("c1", "c2"):  # amounts swapped between the records observing them
        seen = second[column].notna().to_numpy()
        second.loc[seen, column] = rng.permutation(second.loc[seen, column].to_numpy())
    columns = ["c1", "c2", "n1", "n2"]

    def figures(result):
        return result.risk, result.expected_risk, result.linked.tolist(), result.partner.fillna(-1).tolist()

    def tables_built(*releases):
        gower_search._SORTED_TABLES.clear()
        results = [figures(record_linkage_risk(original, release, columns, distance="gower")) for release in releases]
        return results, len(gower_search._SORTED_TABLES)

    with mock.patch.object(gower_search, "_GOWER_PATTERN_PAIR_COST", 0):  # the pattern search, whatever n
        (fresh_first,), for_first = tables_built(first)
        (fresh_second,), _ = tables_built(second)
        both, for_both = tables_built(first, second)
    assert both == [fresh_first, fresh_second]
    assert for_both == for_first > 0  # the second release's tables were the first's


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 150), st.booleans(), st.sampled_from(SEARCH_PATHS))
def test_property_shares_without_partners_equal_those_with_them(seed, n, missing, path):
    """Issue 38: a linkage asked for its shares only (``partners=False``, as the release checks ask)
    stops a record's search at the first original nearer than its own; its shares, linked flags and
    records compared are those of the full search, on every search path, with values missing or not,
    and copies of released records (a microaggregation group's)."""
    original, protected = close_release(seed, n)
    rng = np.random.default_rng(seed + 3)
    protected.loc[rng.random(n) < 0.3, ["c1", "c2"]] = protected[["c1", "c2"]].iloc[0].to_numpy()  # copies
    if missing:
        for frame in (original, protected):
            for column in frame.columns:
                frame.loc[rng.random(n) < 0.1, column] = np.nan
    columns = ["c1", "c2", "n1", "n2"]
    with mock.patch.multiple(gower_search, _GOWER_PATTERN_PAIR_COST=0, **path):
        full = record_linkage_risk(original, protected, columns, distance="gower")
        shares = record_linkage_risk(original, protected, columns, distance="gower", partners=False)
    assert shares.partner is None and full.partner is not None
    assert (shares.risk, shares.expected_risk, shares.compared) == (full.risk, full.expected_risk, full.compared)
    assert shares.linked.equals(full.linked)


def test_a_record_without_its_own_distance_stops_at_its_first_original():
    """By hand: record 1 shares no variable with its own original (no own distance, never linked);
    without partners its search ends at the first original it meets, and it stays not linked."""
    original = pd.DataFrame({"c": [0.0, np.nan, 10.0, 5.0], "n": ["a", "b", np.nan, "a"]})
    protected = pd.DataFrame({"c": [0.0, 3.0, 10.0, 5.0], "n": ["a", np.nan, "b", "a"]})
    with mock.patch.object(gower_search, "_GOWER_PATTERN_PAIR_COST", 0):
        full = record_linkage_risk(original, protected, ["c", "n"], distance="gower")
        shares = record_linkage_risk(original, protected, ["c", "n"], distance="gower", partners=False)
    # records 0 and 3 equal their originals (distance 0) and no other original is at 0: linked; record
    # 2 observes c only in common with its original (distance 0): linked; record 1: no own distance
    assert full.linked.tolist() == shares.linked.tolist() == [True, False, True, True]
    assert full.compared == shares.compared == 3 and shares.risk == full.risk == 0.75
