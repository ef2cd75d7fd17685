"""The fast paths of SPEC §2.4's compatible counts (issue 38) against a pairwise brute force:
``compatible_sums`` (either orientation), ``matched_counts`` (several columns in one pass) and the
incremental ``IncrementalCompatibleCounts`` (f + C d after a suppression, probes read alone)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.risk.frequencies import compatible_sums, matched_counts
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts


def compatible(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)) boolean: the keys agree wherever both are observed (0 = missing)."""
    return ((a[:, None, :] == b[None, :, :]) | (a[:, None, :] == 0) | (b[None, :, :] == 0)).all(axis=2)


def freqcalc(keys: np.ndarray, records: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """sdcMicro freqCalc's f (alpha = 1) of each of ``keys`` among ``records`` (one weight each),
    pair by pair: every compatible record counts, but a record missing in every variable does not
    count for a complete key when there are several key variables (a key missing in every variable
    matches every record: its f is the total)."""
    pairs = compatible(keys, records)
    all_missing = ~(records > 0).any(axis=1)
    complete = (keys > 0).all(axis=1)
    if keys.shape[1] > 1:
        pairs[np.ix_(complete, all_missing)] = False
    return pairs.astype(float) @ weight


def digits_of(draw, n: int, radices: list[int], missing: float) -> np.ndarray:
    rows = draw(st.lists(st.tuples(*[st.integers(1, r - 1) for r in radices]), min_size=n, max_size=n))
    gaps = draw(st.lists(st.tuples(*[st.booleans() for _ in radices]), min_size=n, max_size=n))
    out = np.array(rows, dtype=np.int64).reshape(n, len(radices))
    hidden = np.array(gaps, dtype=bool).reshape(n, len(radices)) & (draw(st.floats(0, 1)) < missing)
    return np.where(hidden, 0, out)


@st.composite
def two_sides(draw):
    m = draw(st.integers(1, 5))
    radices = draw(st.lists(st.integers(2, 5), min_size=m, max_size=m))
    # few targets and many sources, or the other way round: both orientations of the pattern loop
    sizes = draw(st.sampled_from([(3, 60), (60, 3), (20, 20), (0, 5), (5, 0)]))
    targets = digits_of(draw, sizes[0], radices, 0.8)
    sources = digits_of(draw, sizes[1], radices, 0.8)
    values = np.array(draw(st.lists(st.integers(0, 5), min_size=2 * sizes[1], max_size=2 * sizes[1])),
                      dtype=float).reshape(sizes[1], 2)
    return targets, sources, values, np.array(radices)


@settings(max_examples=150, deadline=None)
@given(two_sides())
def test_compatible_sums_equal_the_pairwise_sums(case):
    targets, sources, values, radices = case
    expected = compatible(targets, sources).astype(float) @ values
    assert np.array_equal(compatible_sums(targets, sources, values, radices), expected)
    # one column given flat
    assert np.array_equal(compatible_sums(targets, sources, values[:, 0], radices)[:, 0], expected[:, 0])


def test_compatible_sums_by_hand():
    # (1, 2) matches (1, 0), (0, 2), (0, 0) and itself, not (2, 2); (1, 0) matches all but (2, 2)
    sources = np.array([[1, 2], [1, 0], [0, 2], [0, 0], [2, 2]])
    values = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0])
    got = compatible_sums(np.array([[1, 2], [1, 0]]), sources, values, np.array([3, 3]))
    assert got[:, 0].tolist() == [1111.0, 1111.0]


@st.composite
def distinct_table(draw):
    m = draw(st.integers(1, 5))
    radices = draw(st.lists(st.integers(2, 4), min_size=m, max_size=m))
    digits = np.unique(digits_of(draw, draw(st.integers(1, 40)), radices, 0.9), axis=0)
    columns = np.array(draw(st.lists(st.integers(0, 4), min_size=3 * len(digits), max_size=3 * len(digits))),
                       dtype=float).reshape(len(digits), 3)
    return digits, np.array(radices), columns


@settings(max_examples=150, deadline=None)
@given(distinct_table())
def test_matched_counts_equal_freqcalc_column_by_column(case):
    digits, radices, columns = case
    got = matched_counts(digits, radices, columns)
    for c in range(columns.shape[1]):
        expected = freqcalc(digits, digits, columns[:, c])
        assert np.array_equal(got[:, c], expected)


def test_matched_counts_by_hand():
    # SPEC §2.4 (Practice guide table 7.2): (M, usc), (M, usi), (M, NA) with 1, 2 and 4 records of a
    # category: the complete keys add the NA key's 4, the NA key adds both complete keys
    digits = np.array([[1, 1], [1, 2], [1, 0]])
    got = matched_counts(digits, np.array([2, 3]), np.array([[1.0], [2.0], [4.0]]))
    assert got[:, 0].tolist() == [5.0, 6.0, 7.0]


@st.composite
def suppressions(draw):
    m = draw(st.integers(1, 4))
    radices = draw(st.lists(st.integers(2, 4), min_size=m, max_size=m))
    n = draw(st.integers(1, 30))
    digits = digits_of(draw, n, radices, 0.3)
    multiplicity = draw(st.one_of(st.none(), st.lists(st.integers(1, 4), min_size=n, max_size=n)))
    steps = draw(st.lists(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, (1 << m) - 1)), max_size=6),
                          max_size=5))
    probes = digits_of(draw, 4, radices, 0.8)
    return digits, np.array(radices), multiplicity, steps, probes


@settings(max_examples=150, deadline=None)
@given(suppressions())
def test_incremental_counts_without_weights_equal_freqcalc_after_every_suppression(case):
    digits, radices, multiplicity, steps, probes = case
    weight = np.ones(len(digits)) if multiplicity is None else np.array(multiplicity, dtype=float)
    counter = IncrementalCompatibleCounts(digits, radices, multiplicity=multiplicity)
    current = digits.copy()
    f, F = counter.record_counts()  # the first count; every later one follows the suppressions
    assert np.array_equal(f, freqcalc(current, current, weight)) and np.array_equal(F, f)
    for step in steps:
        records = np.array(sorted({r for r, _ in step}), dtype=np.int64)
        masks = np.array([dict(step)[r] for r in records], dtype=np.int64)
        counter.set_missing(records, masks)
        for record, mask in zip(records, masks):
            current[record, [(mask >> j) & 1 == 1 for j in range(len(radices))]] = 0
        expected = freqcalc(current, current, weight)
        f, F = counter.record_counts()
        assert np.array_equal(counter.digits, current)
        assert np.array_equal(f, expected) and np.array_equal(F, expected)
        probe_f, probe_F = counter.probe_counts(probes)
        expected_probe = freqcalc(probes, current, weight)
        assert np.array_equal(probe_f, expected_probe) and np.array_equal(probe_F, expected_probe)


def test_incremental_counts_when_codes_overflow_int64_equal_freqcalc():
    # three keys of 2**22 categories: their codes do not fit in int64, so the counter sums by hashing
    radices = np.array([2**22, 2**22, 2**22])
    digits = np.array([[5, 7, 9], [5, 7, 9], [5, 8, 9], [6, 7, 9], [2**22 - 1, 1, 1]])
    counter = IncrementalCompatibleCounts(digits, radices)
    assert counter.record_counts()[0].tolist() == [2, 2, 1, 1, 1]
    counter.set_missing(np.array([2, 3]), np.array([0b010, 0b001]))  # (5, NA, 9) and (NA, 7, 9)
    current = np.array([[5, 7, 9], [5, 7, 9], [5, 0, 9], [0, 7, 9], [2**22 - 1, 1, 1]])
    f, _ = counter.record_counts()
    assert f.tolist() == freqcalc(current, current, np.ones(5)).tolist() == [4, 4, 4, 4, 1]
    assert counter.probe_counts(np.array([[5, 0, 0]]))[0].tolist() == [4]
