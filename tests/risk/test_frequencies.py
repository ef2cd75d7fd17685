"""Key frequencies with sdcMicro freqCalc semantics for missing values (SPEC §2.1–§2.4)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import complete_key_frequencies, digit_key_frequencies, grouping_sets_counts
from sdc_dagster.keys import key_digits, pack_codes, renumbered_digits
from sdc_dagster.risk import key_frequencies


def pairwise_reference(rows: list[tuple], weights: list[float], alpha: float) -> tuple[list[float], list[float]]:
    """O(n^2) restatement of sdcMicro freqCalc (R/freqCalc.r) record by record.

    i and j are compatible when they agree wherever both are observed. Record j adds to record i:
    1 when its key is identical (same values, same missing positions); otherwise, if i's key is
    complete: alpha (j has a missing value) -- but nothing when j is missing everywhere and there
    are several key variables; if i's key is partially missing: 1 for a complete j, alpha for a j
    with missing values. A key missing everywhere gets f = n and F = sum of weights.
    """
    n, m = len(rows), len(rows[0])
    f, F = [0.0] * n, [0.0] * n
    for i, a in enumerate(rows):
        if all(v is None for v in a):
            f[i], F[i] = float(n), float(sum(weights))
            continue
        a_complete = all(v is not None for v in a)
        for j, b in enumerate(rows):
            if not all(x is None or y is None or x == y for x, y in zip(a, b)):
                continue
            b_complete = all(v is not None for v in b)
            b_all_missing = all(v is None for v in b)
            if a == b:
                c = 1.0
            elif a_complete:
                c = 0.0 if (b_all_missing and m > 1) else alpha
            else:
                c = 1.0 if b_complete else alpha
            f[i] += c
            F[i] += c * weights[j]
    return f, F


def frame_of(rows: list[tuple], weights: list[float] | None = None) -> pd.DataFrame:
    m = len(rows[0])
    data = pd.DataFrame({f"k{j}": pd.array([r[j] for r in rows], dtype="Int64") for j in range(m)})
    if weights is not None:
        data["w"] = weights
    return data


def test_practice_guide_table_7_2_missing_value_matches_both_keys():
    # SPEC §2.4 EXPECTED: (M, upper-sec. complete, employed), (M, upper-sec. incomplete, employed),
    # (M, NA, employed) -> f = 2, 2, 3.
    data = pd.DataFrame(
        {
            "sex": ["M", "M", "M"],
            "education": ["upper secondary complete", "upper secondary incomplete", None],
            "labour": ["employed", "employed", "employed"],
        }
    )
    freq = key_frequencies(data, ["sex", "education", "labour"])
    assert freq["fk"].tolist() == [2, 2, 3]
    assert freq["Fk"].tolist() == [2, 2, 3]


def test_alpha_scales_matches_through_missing_values():
    data = pd.DataFrame({"a": [1, 2, None], "b": [1, 1, 1]})
    # record 3 (NA, 1) matches records 1 and 2 fully; they each get alpha from record 3
    assert key_frequencies(data, ["a", "b"], alpha=0.5)["fk"].tolist() == [1.5, 1.5, 3.0]
    assert key_frequencies(data, ["a", "b"], alpha=0.0)["fk"].tolist() == [1.0, 1.0, 3.0]


def test_all_missing_key_gets_n_and_is_not_added_to_complete_keys():
    data = pd.DataFrame({"a": [1, 1, None, 2], "b": [1, 1, None, None], "w": [2.0, 3.0, 4.0, 5.0]})
    freq = key_frequencies(data, ["a", "b"], weight="w")
    # all-NA record: f = n, F = all weights; record 4 (2, NA) gets alpha from the all-NA record
    assert freq["fk"].tolist() == [2, 2, 4, 2]
    assert freq["Fk"].tolist() == [5.0, 5.0, 14.0, 9.0]


def test_single_key_variable_missing_values_added_to_every_category():
    # sdcMicro's one-key branch adds the NA records (times alpha) to every complete key
    data = pd.DataFrame({"a": ["x", "x", "y", None]})
    assert key_frequencies(data, ["a"], alpha=0.5)["fk"].tolist() == [2.5, 2.5, 1.5, 4.0]


def test_weighted_frequencies_are_sums_of_weights_without_missing_values():
    data = pd.DataFrame({"a": [1, 1, 2], "w": [1.5, 2.5, 7.0]})
    freq = key_frequencies(data, ["a"], weight="w")
    assert freq["fk"].tolist() == [2, 2, 1]
    assert freq["Fk"].tolist() == [4.0, 4.0, 7.0]


@settings(max_examples=80, deadline=None)
@given(
    m=st.integers(1, 4),
    n=st.integers(1, 25),
    na_probability=st.sampled_from([0.0, 0.2, 0.5]),
    alpha=st.sampled_from([0.0, 0.5, 1.0]),
    weighted=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_pairwise_reference_with_missing_values(m, n, na_probability, alpha, weighted, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 3, size=(n, m))
    missing = rng.random((n, m)) < na_probability
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(n)]
    weights = rng.uniform(1.0, 5.0, size=n).round(2).tolist() if weighted else [1.0] * n
    data = frame_of(rows, weights if weighted else None)
    freq = key_frequencies(data, [f"k{j}" for j in range(m)], weight="w" if weighted else None, alpha=alpha)
    f_ref, F_ref = pairwise_reference(rows, weights, alpha)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)
    np.testing.assert_allclose(freq["Fk"].to_numpy(), F_ref, rtol=1e-12)


def assert_weighted_random_keys_match_pairwise_reference(seed: int, n: int, m: int, levels: int,
                                                         missing_share: float, top_weight: float) -> None:
    """key_frequencies (alpha 0.5, weights) of n random keys of m variables (``levels`` values each,
    a share missing) equal the pairwise reference."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, size=(n, m))
    missing = rng.random((n, m)) < missing_share
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(n)]
    weights = rng.uniform(1.0, top_weight, size=n).tolist()
    freq = key_frequencies(frame_of(rows, weights), [f"k{j}" for j in range(m)], weight="w", alpha=0.5)
    f_ref, F_ref = pairwise_reference(rows, weights, 0.5)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)
    np.testing.assert_allclose(freq["Fk"].to_numpy(), F_ref, rtol=1e-12)


def test_many_missingness_patterns_match_pairwise_reference():
    # every pattern of 5 keys occurs: exercises aggregation from already aggregated supersets
    assert_weighted_random_keys_match_pairwise_reference(7, n=300, m=5, levels=3, missing_share=0.35, top_weight=3.0)


def test_values_compare_across_types_and_missing_markers():
    data = pd.DataFrame({"a": pd.Series([1, 1.0, np.nan, None], dtype=object), "b": ["x", "x", "x", "x"]})
    assert key_frequencies(data, ["a", "b"])["fk"].tolist() == [4, 4, 4, 4]


def test_result_indexed_like_input_and_input_untouched():
    data = pd.DataFrame({"a": [1, None, 1], "b": [2, 2, 3]}, index=[10, 20, 30])
    before = data.copy()
    freq = key_frequencies(data, ["a", "b"])
    assert list(freq.index) == [10, 20, 30]
    pd.testing.assert_frame_equal(data, before)


def test_runs_on_a_given_duckdb_connection():
    con = duckdb.connect()
    data = pd.DataFrame({"a": [1, 1, 2]})
    assert key_frequencies(data, ["a"], con=con)["fk"].tolist() == [2, 2, 1]
    assert con.execute("SELECT 1").fetchone() == (1,)


def test_complete_key_frequencies_treat_missing_as_own_value():
    data = pd.DataFrame({"a": [1, 1, None, None, 2], "b": ["x", "x", "y", "y", "x"], "w": [1.0, 2, 3, 4, 5]})
    freq = complete_key_frequencies(data, ["a", "b"], weight="w")
    assert freq["fk"].tolist() == [2, 2, 2, 2, 1]
    assert freq["Fk"].tolist() == [3.0, 3.0, 7.0, 7.0, 5.0]
    assert freq["fk"].dtype == np.int64


def test_packed_codes_stay_exact_when_radices_overflow_int64():
    rng = np.random.default_rng(3)
    digits = rng.integers(0, 4, size=(500, 6))
    radices = np.array([2**20] * 6)  # product 2**120: forces dense renumbering
    (codes,) = pack_codes([digits], radices)
    same_code = codes[:, None] == codes[None, :]
    same_row = (digits[:, None, :] == digits[None, :, :]).all(axis=2)
    assert (same_code == same_row).all()


def test_grouping_sets_counts_one_row_per_subset_combination():
    data = pd.DataFrame({"a": [1, 1, 2], "b": ["x", "y", "y"]})
    out = grouping_sets_counts(data, ["a", "b"], [["a"], ["a", "b"]])
    assert out[out["subset"] == 0]["n"].tolist() == [2, 1]
    assert out[out["subset"] == 1]["n"].tolist() == [1, 1, 1]


@pytest.mark.parametrize(
    ("keys", "weight", "message"),
    [
        (["a", "nope"], None, "'nope'"),
        ([], None, "empty"),
        (["a", "a"], None, "more than once"),
        (["a"], "nope", "'nope'"),
        (["a"], "w_text", "'w_text'"),
        (["a"], "w_missing", "'w_missing'"),
        (["a"], "w_zero", "'w_zero'"),
        (["a"], "w_negative", "'w_negative'"),
    ],
)
def test_bad_input_names_the_column(keys, weight, message):
    data = pd.DataFrame(
        {
            "a": [1, 2],
            "w_text": ["1", "2"],
            "w_missing": [1.0, np.nan],
            "w_zero": [1.0, 0.0],
            "w_negative": [1.0, -2.0],
        }
    )
    with pytest.raises(SDCInputError, match=message):
        key_frequencies(data, keys, weight=weight)


def test_alpha_outside_unit_interval_rejected():
    with pytest.raises(SDCInputError, match="alpha"):
        key_frequencies(pd.DataFrame({"a": [1]}), ["a"], alpha=1.5)


def test_many_high_cardinality_keys_match_pairwise_reference():
    # 12 keys with ~50 categories each: the packed codes overflow int64 and the joint packing path
    # is used; rows 0..99 share a few values so that missing values find partners
    rng = np.random.default_rng(11)
    m = 12
    values = np.vstack([rng.integers(0, 2, size=(100, m)), 1000 + np.arange(50 * m).reshape(50, m)])
    missing = rng.random(values.shape) < 0.3
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(len(values))]
    freq = key_frequencies(frame_of(rows), [f"k{j}" for j in range(m)], alpha=0.5)
    f_ref, _ = pairwise_reference(rows, [1.0] * len(rows), 0.5)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_dense_and_sparse_methods_match_pairwise_reference(monkeypatch, dense, alpha):
    # both ways of computing the compatible counts (dense down-set sum, sparse hash joins per
    # missingness pattern), on every pattern of 4 keys including complete and all-missing keys
    import sdc_dagster.risk.frequencies as frequencies

    monkeypatch.setattr(frequencies, "_use_dense_lattice", lambda *args: dense)
    rng = np.random.default_rng(5)
    n, m = 200, 4
    values = rng.integers(0, 3, size=(n, m))
    missing = rng.random((n, m)) < 0.3
    missing[:3] = True
    missing[3:40] = False
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(n)]
    weights = rng.uniform(1.0, 4.0, size=n).tolist()
    freq = key_frequencies(frame_of(rows, weights), [f"k{j}" for j in range(m)], weight="w", alpha=alpha)
    f_ref, F_ref = pairwise_reference(rows, weights, alpha)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)
    np.testing.assert_allclose(freq["Fk"].to_numpy(), F_ref, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(2, 4),
    n=st.integers(1, 25),
    alpha=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_dense_method_matches_pairwise_reference(m, n, alpha, seed):
    import sdc_dagster.risk.frequencies as frequencies

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 3, size=(n, m))
    missing = rng.random((n, m)) < 0.4
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(n)]
    weights = rng.uniform(1.0, 5.0, size=n).round(2).tolist()
    original = frequencies._use_dense_lattice
    frequencies._use_dense_lattice = lambda *args: True
    try:
        freq = key_frequencies(frame_of(rows, weights), [f"k{j}" for j in range(m)], weight="w", alpha=alpha)
    finally:
        frequencies._use_dense_lattice = original
    f_ref, F_ref = pairwise_reference(rows, weights, alpha)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)
    np.testing.assert_allclose(freq["Fk"].to_numpy(), F_ref, rtol=1e-12)


def test_thirty_keys_with_missing_values_match_pairwise_reference():
    # 30 keys with 8 categories: the mixed-radix place values of the projections (9**29) do not
    # fit in int64, which once raised OverflowError; the joint packing path must be exact
    rng = np.random.default_rng(30)
    m = 30
    prototypes = rng.integers(1, 9, size=(6, m))
    values = prototypes[rng.integers(0, 6, size=120)]
    values[::10, 5] = 8 - values[::10, 5]  # some records differ from their prototype
    missing = rng.random(values.shape) < 0.05
    rows = [tuple(None if missing[i, j] else int(values[i, j]) for j in range(m)) for i in range(len(values))]
    freq = key_frequencies(frame_of(rows), [f"k{j}" for j in range(m)])
    f_ref, _ = pairwise_reference(rows, [1.0] * len(rows), 1.0)
    np.testing.assert_allclose(freq["fk"].to_numpy(), f_ref, rtol=1e-12)


def test_more_keys_than_a_missing_value_mask_holds_is_refused_by_name():
    data = pd.DataFrame({f"k{j}": pd.array([1, None, 2], dtype="Int64") for j in range(63)})
    with pytest.raises(SDCInputError, match="at most 62 categorical keys .got 63."):
        key_frequencies(data, list(data.columns))


@pytest.mark.parametrize("sorted_lookup_size", [0, 10**9])
def test_sparse_method_matches_pairwise_reference_with_either_lookup(monkeypatch, sorted_lookup_size):
    # the sparse method finds pattern tables' positions by a sorted search when they are small and
    # by a hash table otherwise: each alone gives the reference counts
    import sdc_dagster.risk.frequencies as frequencies

    monkeypatch.setattr(frequencies, "_use_dense_lattice", lambda *args: False)
    monkeypatch.setattr(frequencies, "_SORTED_LOOKUP_SIZE", sorted_lookup_size)
    assert_weighted_random_keys_match_pairwise_reference(11, n=250, m=4, levels=4, missing_share=0.3, top_weight=4.0)


def test_digit_key_frequencies_of_renumbered_codes_are_those_of_the_values():
    # the plan search counts suppressed keys from their codes: after setting codes to 0 and
    # renumbering them, the frequencies are key_frequencies of the values with those cells missing,
    # to the bit (the same codes, the same DuckDB query)
    rng = np.random.default_rng(3)
    n, m = 400, 3
    data = pd.DataFrame({f"k{j}": rng.choice(["a", "b", "c", "d", None], n) for j in range(m)})
    data["w"] = rng.uniform(1.0, 9.0, n)
    keys = [f"k{j}" for j in range(m)]
    digits, radices = key_digits(data, keys)
    suppress = rng.random((n, m)) < 0.2
    f, F = digit_key_frequencies(*renumbered_digits(np.where(suppress, 0, digits)), weights=data["w"].to_numpy())
    masked = data.copy()
    masked[keys] = masked[keys].mask(suppress)
    expected = key_frequencies(masked, keys, weight="w")
    np.testing.assert_array_equal(f, expected["fk"].to_numpy())
    np.testing.assert_array_equal(F, expected["Fk"].to_numpy())


def test_weighted_frequencies_are_sums_in_record_order_the_same_in_every_run():
    # DuckDB's sum of doubles depends on how its threads split the records: F_k is summed in record
    # order instead, so a wave gives the same bits in every run (weights whose sum depends on order;
    # enough records for DuckDB to use several threads)
    rng = np.random.default_rng(11)
    n = 300_000
    # no missing value: F_k is the weight sum of the key's own records (SPEC §2.2)
    data = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice([1, 2, 4], n)})
    data["w"] = rng.choice([0.1, 1e8, 3.3, 1e-7], n) * rng.uniform(0.5, 1.5, n)
    keys = ["a", "b"]
    expected = np.empty(n)
    for rows in data.groupby(["a", "b"]).indices.values():
        expected[rows] = np.cumsum(data["w"].to_numpy()[np.sort(rows)])[-1]  # one addition after another
    digits, radices = key_digits(data, keys)
    runs = {digit_key_frequencies(digits, radices, weights=data["w"].to_numpy())[1].tobytes() for _ in range(10)}
    assert len(runs) == 1
    np.testing.assert_array_equal(np.frombuffer(runs.pop()), expected)
    np.testing.assert_array_equal(key_frequencies(data, keys, weight="w")["Fk"].to_numpy(), expected)
