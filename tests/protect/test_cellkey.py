"""Cell key method (SPEC §8.11): p-table design, lookup, cell keys and consistency across tables."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import (
    assign_record_keys,
    cell_key_perturb,
    cell_key_table,
    grid_cell_key,
    perturbation_table,
)


def test_ptable_d1_is_the_hand_solution():
    # D = 1, V = 0.5: on {-1, 0, 1} mean 0 forces p(-1) = p(1) and the variance 2 p(1) = 0.5.
    table = perturbation_table(1, 0.5)
    np.testing.assert_allclose(table.probabilities, [[0, 1, 0], [0.25, 0.5, 0.25]], atol=1e-12)


@pytest.mark.parametrize("d_max, variance", [(2, 1.05), (3, 2.0), (5, 3.0), (4, 15.0)])
def test_ptable_rows_have_the_designed_moments(d_max, variance):
    table = perturbation_table(d_max, variance)
    p = table.probabilities
    assert p.shape == (d_max + 1, 2 * d_max + 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert (p >= 0).all()
    np.testing.assert_allclose(table.row_mean, 0.0, atol=1e-9)
    # row 0: zeros stay zeros
    assert p[0, d_max] == 1.0
    for i in range(1, d_max + 1):
        # never below zero: no mass on perturbations < -i
        assert p[i, : d_max - i].sum() == 0.0
        attainable = 0.9 * min(i, d_max) * d_max
        assert table.row_variance[i] == pytest.approx(min(variance, attainable), abs=1e-9)
    # the untruncated row is the discrete Gaussian shape exp(b d^2): p2 p0^3 = p1^4 (for D >= 2)
    last = p[d_max, d_max:]
    assert last[2] * last[0] ** 3 == pytest.approx(last[1] ** 4, rel=1e-9)


def test_ptable_parameters_are_checked():
    with pytest.raises(SDCInputError, match="max_deviation"):
        perturbation_table(0, 1.0)
    with pytest.raises(SDCInputError, match="variance"):
        perturbation_table(2, 4.0)
    with pytest.raises(SDCInputError, match="variance"):
        perturbation_table(2, -1.0)


def test_lookup_by_inverse_cdf():
    table = perturbation_table(1, 0.5)  # row 1 bounds: 0.25, 0.75, 1
    values = np.array([1, 1, 1, 1, 1, 0, 0, 9, 9])
    keys = np.array([0.0, 0.1, 0.2501, 0.7499, 0.7501, 0.0, 0.99, 0.2, 0.8])
    np.testing.assert_array_equal(table.lookup(values, keys), [-1, -1, 0, 0, 1, 0, 0, -1, 1])
    with pytest.raises(SDCInputError, match="cell keys"):
        table.lookup([1], [1.0])


def test_empirical_mean_and_variance_match_the_design():
    table = perturbation_table(3, 2.0)
    keys = np.random.default_rng(5).random(200_000)
    noise = table.lookup(np.full(keys.size, 7), keys)
    assert abs(noise.mean()) < 4 * np.sqrt(2.0 / keys.size)
    assert noise.var() == pytest.approx(2.0, rel=0.03)
    small = table.lookup(np.full(keys.size, 1), keys)
    assert (1 + small >= 0).all() and abs(small.mean()) < 0.02


def test_integer_cell_key_is_sum_mod_n_by_hand():
    micro = pd.DataFrame({"cell": ["a", "a", "a", "b", "b"], "rk": [3, 9, 4, 10, 10]})
    table = perturbation_table(1, 0.5)
    out = cell_key_perturb(micro, ["cell"], record_key_col="rk", ptable=table, n_key=10)
    # a: (3 + 9 + 4) mod 10 = 6 -> u = 0.6 in [0.25, 0.75) -> 0; b: 20 mod 10 = 0 -> u = 0 -> -1
    assert out["cell"].tolist() == ["a", "b"]
    assert out["count"].tolist() == [3, 2]
    np.testing.assert_allclose(out["cell_key"], [0.6, 0.0])
    assert out["perturbation"].tolist() == [0, -1]
    assert out["perturbed"].tolist() == [3, 1]


def test_uniform_cell_key_is_sum_mod_1():
    micro = pd.DataFrame({"cell": ["a", "a"], "rk": [0.75, 0.5]})
    out = cell_key_perturb(micro, "cell", record_key_col="rk", ptable=perturbation_table(1, 0.5))
    assert out["cell_key"].iloc[0] == pytest.approx(0.25)


@pytest.fixture(scope="module")
def persons():
    rng = np.random.default_rng(0)
    n = 20_000
    frame = pd.DataFrame(
        {
            "cell_id": rng.integers(0, 500, n).astype(str),
            "sex": rng.integers(1, 3, n),
            "age_group": rng.choice([1, 2, 3], n, p=[0.15, 0.65, 0.2]),
        }
    )
    frame["record_key"] = assign_record_keys(frame, random_state=1)
    return frame


def test_same_cell_same_noise_in_two_tables(persons):
    table = perturbation_table(2, 1.05)
    a = cell_key_perturb(persons, ["cell_id", "sex"], record_key_col="record_key", ptable=table)
    b = cell_key_perturb(
        persons.assign(country="PL"), ["sex", "country", "cell_id"], record_key_col="record_key", ptable=table
    )
    merged = a.merge(b, on=["cell_id", "sex"], suffixes=("_a", "_b"))
    assert len(merged) == len(a)
    assert (merged["perturbation_a"] == merged["perturbation_b"]).all()
    assert (merged["cell_key_a"] == merged["cell_key_b"]).all()


def test_grid_cell_key_consistency_bounds_and_zeros(persons):
    table = perturbation_table(2, 1.05)
    # make one cell all male and without old people
    data = persons.copy()
    data["record_key"] = assign_record_keys(data, n_key=255, first=0, random_state=1)
    only_men = data["cell_id"] == "7"
    data.loc[only_men, "sex"] = 1
    data.loc[only_men, "age_group"] = 2
    before = data.copy()
    out = grid_cell_key(data, record_key_col="record_key", ptable=table)
    pd.testing.assert_frame_equal(data, before)
    for col in ["total", "sex_1", "sex_2", "age_1", "age_2", "age_3"]:
        deviation = out[col] - out[f"{col}_original"]
        assert deviation.abs().max() <= 2
        assert (out[col] >= 0).all()
        assert (out.loc[out[f"{col}_original"] == 0, col] == 0).all()
    row = out.set_index("cell_id").loc["7"]
    # the same records make the total, sex_1 and age_2 of this cell: the same noise
    assert row["total"] == row["sex_1"] == row["age_2"]
    assert row["sex_2"] == 0 and row["age_1"] == 0 and row["age_3"] == 0
    # and the per-category tables agree with cell_key_table (one lookup for both)
    by_sex = cell_key_table(data, ["cell_id", "sex"], table)
    men = by_sex[by_sex["sex"] == 1].set_index("cell_id")["count"].astype("int64")
    assert (out.set_index("cell_id").loc[men.index, "sex_1"] == men).all()


def test_record_keys_reproducible_and_in_range(persons):
    a = assign_record_keys(persons, n_key=1000, random_state=3)
    b = assign_record_keys(persons, n_key=1000, random_state=np.random.default_rng(3))
    pd.testing.assert_series_equal(a, b)
    assert a.between(1, 1000).all() and a.index.equals(persons.index)
    with pytest.raises(SDCInputError, match="n_key"):
        assign_record_keys(persons, n_key=1)
    with pytest.raises(SDCInputError, match="record_key"):
        cell_key_perturb(persons, ["cell_id"], record_key_col="record_key", ptable=perturbation_table(1, 0.5), n_key=10)


@settings(max_examples=60, deadline=None)
@given(
    d_max=st.integers(1, 5),
    share=st.floats(0.05, 0.95),
    values=st.lists(st.integers(0, 60), min_size=1, max_size=50),
    seed=st.integers(0, 10_000),
)
def test_perturbation_bounds_property(d_max, share, values, seed):
    table = perturbation_table(d_max, share * d_max * d_max)
    keys = np.random.default_rng(seed).random(len(values))
    values = np.array(values)
    noise = table.lookup(values, keys)
    assert (np.abs(noise) <= d_max).all()
    assert (values + noise >= 0).all()
    assert (noise[values == 0] == 0).all()


# --- threshold js (sdcTools ptable) and the ONS record-key mode -------------------------------------


@pytest.mark.parametrize("d_max, variance, js", [(2, 1.05, 1), (3, 2.0, 2), (5, 3.0, 2), (4, 2.5, 3)])
def test_ptable_threshold_blocks_small_counts(d_max, variance, js):
    table = perturbation_table(d_max, variance, threshold=js)
    p = table.probabilities
    assert p.shape == (d_max + js + 2, 2 * d_max + 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(table.row_mean, 0.0, atol=1e-9)
    d = table.perturbations
    for i in range(len(p)):
        result = i + d
        forbidden = (result < 0) | ((result >= 1) & (result <= js))
        assert p[i, forbidden].sum() == 0.0
    # rows far from the threshold have the designed variance
    assert table.row_variance[-1] == pytest.approx(variance, abs=1e-9)


def test_ptable_threshold_row_by_hand():
    # D = 2, js = 1, count 1: results 0, 2, 3 only (d = -1, 1, 2). Mean-0 variances on {-1, 1, 2}
    # lie in [1·1, 1·2]; V = 1.05 is moved 10% inside: 1 + 0.1 = 1.1. With a, b, c = p(-1), p(1), p(2):
    # a + b + c = 1; mean -a + b + 2c = 0; variance a + b + 4c = 1.1  ->  3c = 0.1, c = 1/30,
    # 2b = 1 - 3c -> b = 0.45, a = 1 - b - c = 31/60 (three constraints on three values fix the row).
    table = perturbation_table(2, 1.05, threshold=1)
    np.testing.assert_allclose(table.probabilities[1], [0, 31 / 60, 0, 0.45, 1 / 30], atol=1e-9)


def test_ptable_threshold_is_checked():
    with pytest.raises(SDCInputError, match="threshold"):
        perturbation_table(2, 1.0, threshold=2)
    with pytest.raises(SDCInputError, match="threshold"):
        perturbation_table(2, 1.0, threshold=-1)


def _ons_microdata(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "area": rng.choice(["A", "B", "C"], n, p=[0.6, 0.3, 0.1]),
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(1, 6, n),
            "record_key": rng.integers(0, 256, n),
        }
    )


@pytest.mark.parametrize("threshold", [0, 10])
def test_cell_key_table_parity_with_ons_package_10_5_rule(threshold):
    from cell_key_perturbation import create_perturbed_table as ckp
    from cell_key_perturbation.utils.generate_test_ptable import generate_ptable_10_5_rule

    data = _ons_microdata(30_000, 5)  # counts above 750 exercise the pcv 501..750 reuse
    ptable = generate_ptable_10_5_rule()
    expected = ckp.create_perturbed_table(data, ptable, ["area"], ["sex", "age"], "record_key", threshold=threshold)
    got = cell_key_table(data, ["area", "sex", "age"], ptable, threshold=threshold)
    assert (got["pre_sdc_count"] > 750).any()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)


@pytest.mark.slow
@pytest.mark.parametrize("n_keys", [256, 4096])
def test_cell_key_table_parity_with_ons_package_dvjs_table(n_keys):
    from cell_key_perturbation import create_perturbed_table as ckp

    data = _ons_microdata(3_000, 6)
    data["cell"] = np.random.default_rng(1).integers(0, 300, len(data))  # many small cells
    data["record_key"] = np.random.default_rng(2).integers(0, n_keys, len(data))  # ONS keys 0..255 or 0..4095
    ptable = perturbation_table(3, 2.0, threshold=2).to_ons_frame(n_keys=n_keys)
    expected = ckp.create_perturbed_table(data, ptable, ["cell"], ["sex"], "record_key", threshold=0)
    # The package also lists unobserved (cell, sex) pairs of the cross product, with count 0;
    # cell_key_table lists observed cells only (CONTRACT), so compare those.
    assert (expected.loc[expected["pre_sdc_count"] == 0, "count"] == 0).all()
    expected = expected[expected["pre_sdc_count"] > 0]
    got = cell_key_table(data, ["cell", "sex"], ptable)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)
    published = got["count"].astype("int64")
    assert not ((published >= 1) & (published <= 2)).any()  # js = 2: no published 1 or 2
    assert (published - got["pre_sdc_count"]).abs().max() <= 3


def test_cell_key_table_by_hand():
    # Two cells; keys 200 + 100 = 300 -> ckey 300 mod 256 = 44; a single key 7 -> ckey 7.
    data = pd.DataFrame({"g": ["a", "a", "b"], "record_key": [200, 100, 7]})
    ptable = pd.DataFrame({"pcv": [2, 1], "ckey": [44, 7], "pvalue": [1, -1]})
    ptable = pd.concat([ptable, pd.DataFrame({"pcv": [1], "ckey": [255], "pvalue": [0]})])  # ckeys 0..255
    out = cell_key_table(data, "g", ptable, threshold=1)
    assert out["ckey"].tolist() == [44, 7]
    assert out["pvalue"].tolist() == [1, -1]
    assert out["count"].tolist() == [3, pd.NA]


def test_cell_key_table_rejects_bad_input():
    data = pd.DataFrame({"g": ["a", None], "record_key": [1, 2]})
    ptable = perturbation_table(2, 1.0).to_ons_frame()
    with pytest.raises(SDCInputError, match="'g'"):
        cell_key_table(data, ["g"], ptable)
    with pytest.raises(SDCInputError, match="record_key.*0..255"):
        cell_key_table(pd.DataFrame({"g": ["a"], "record_key": [256]}), ["g"], ptable)
    with pytest.raises(SDCInputError, match="pcv"):
        cell_key_table(pd.DataFrame({"g": ["a"], "record_key": [1]}), ["g"], ptable.drop(columns="pcv"))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 3), st.floats(0.2, 0.95), st.integers(0, 2**32 - 1))
def test_cell_key_table_property_bounds_threshold_and_consistency(d_max, js, share, seed):
    js = min(js, d_max - 1)
    table = perturbation_table(d_max, share * d_max * d_max, threshold=js)
    rng = np.random.default_rng(seed)
    n = 400
    data = pd.DataFrame({"a": rng.integers(0, 40, n), "b": rng.integers(0, 3, n), "record_key": rng.integers(0, 256, n)})
    out = cell_key_table(data, ["a", "b"], table)
    published = out["count"].astype("int64")
    assert (published >= 0).all()
    assert (published - out["pre_sdc_count"]).abs().max() <= d_max
    assert not ((published >= 1) & (published <= js)).any()
    # the same records give the same cell wherever the cell appears (another table with one more column)
    wider = cell_key_table(data.assign(c="x"), ["c", "b", "a"], table)
    merged = out.merge(wider, on=["a", "b"], suffixes=("", "_wider"))
    assert len(merged) == len(out) and (merged["count"] == merged["count_wider"]).all()
