"""l-diversity and t-closeness (SPEC §3.6, §3.7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import l_diversity, t_closeness

SDCMICRO = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def table_7_3() -> pd.DataFrame:
    """SPEC §2.5 Table 7.1 keys with the sensitive variable of Table 7.3."""
    rows = [
        ("urban", "female", "secondary incomplete", "employed"),
        ("urban", "female", "secondary incomplete", "employed"),
        ("urban", "female", "primary incomplete", "not in labour force"),
        ("urban", "male", "secondary complete", "employed"),
        ("rural", "female", "secondary complete", "unemployed"),
        ("urban", "male", "secondary complete", "employed"),
        ("urban", "female", "primary complete", "not in labour force"),
        ("urban", "male", "post-secondary", "unemployed"),
        ("urban", "female", "secondary incomplete", "not in labour force"),
        ("urban", "female", "secondary incomplete", "not in labour force"),
    ]
    data = pd.DataFrame(rows, columns=["area", "gender", "education", "labour_status"])
    data["health"] = ["ill", "ill", "ill", "ill", "ill", "healthy", "healthy", "ill", "healthy", "ill"]
    return data


KEYS_7_1 = ["area", "gender", "education", "labour_status"]


def test_table_7_3_distinct_l_diversity():
    result = l_diversity(table_7_3(), KEYS_7_1, "health")
    assert list(result.columns) == ["distinct", "entropy", "recursive"]
    assert result["distinct"].tolist() == [1, 1, 1, 2, 1, 2, 1, 1, 2, 2]


def test_testdata_hhcivil_matches_sdcmicro():
    data = pd.read_csv(SDCMICRO / "testdata.csv")
    golden = pd.read_csv(SDCMICRO / "golden" / "b_testdata_ldiversity_hhcivil.csv")
    result = l_diversity(data, TESTDATA_KEYS, "hhcivil", recursive_c=2)
    np.testing.assert_array_equal(result["distinct"].to_numpy(), golden["hhcivil_Distinct_Ldiversity"].to_numpy())
    np.testing.assert_allclose(result["entropy"].to_numpy(), golden["hhcivil_Entropy_Ldiversity"].to_numpy(), rtol=1e-8)
    np.testing.assert_array_equal(result["recursive"].to_numpy(), golden["hhcivil_Recursive_Ldiversity"].to_numpy())


def test_sdcmicro_test_suite_cases():
    # sdcMicro tests/testthat/test_ldiversity.R: rows with the same missing key value form a group
    data = pd.DataFrame(
        {
            "sex": ["female", "female", "female", "male", "male", "female", "female"],
            "occupation": [None, None, None, "teacher", "teacher", "nurse", "nurse"],
            "ethnicity": ["other"] * 5 + ["majority"] * 2,
            "sensitive": [1, 0, 2, 1, 0, 0, 1],
        }
    )
    result = l_diversity(data, ["sex", "occupation", "ethnicity"], "sensitive")
    assert result["distinct"].tolist() == [3, 3, 3, 2, 2, 2, 2]
    multi = pd.DataFrame({"key": [1, 1, 1], "sens1": ["A", "B", "A"], "sens2": ["X", "Y", "Z"]})
    result = l_diversity(multi, ["key"], ["sens1", "sens2"])
    assert result.loc[0, "sens1_distinct"] == 2
    assert result.loc[0, "sens2_distinct"] == 3
    assert list(result.columns) == [f"{v}_{s}" for v in ("sens1", "sens2") for s in ("distinct", "entropy", "recursive")]


def test_entropy_and_recursive_by_hand():
    # one group with value counts 5, 2, 2, 1 (n = 10)
    data = pd.DataFrame({"k": ["g"] * 10, "s": list("aaaaabbccd")})
    row = l_diversity(data, ["k"], "s").iloc[0]
    shares = np.array([5, 2, 2, 1]) / 10
    assert row["entropy"] == pytest.approx(np.exp(-(shares * np.log(shares)).sum()), rel=1e-14)
    assert row["distinct"] == 4
    # c = 2: tails 5, 3, 1 -> 10 > 5, 6 > 5, 2 < 5 -> l = 3
    assert row["recursive"] == 3
    # c = 1: 5 > 5 fails at once -> l = 1; c = 6: 6 > 5 holds for every l -> l = 4
    assert l_diversity(data, ["k"], "s", recursive_c=1).iloc[0]["recursive"] == 1
    assert l_diversity(data, ["k"], "s", recursive_c=6).iloc[0]["recursive"] == 4


def test_missing_sensitive_values_count_once_when_other_values_exist():
    data = pd.DataFrame({"k": [1, 1, 1, 1, 2, 2], "s": ["a", "a", None, None, None, None]})
    result = l_diversity(data, ["k"], "s")
    assert result["distinct"].tolist() == [2, 2, 2, 2, 0, 0]
    assert result["entropy"].iloc[0] == pytest.approx(2.0, rel=1e-14)  # two halves
    assert result["entropy"].iloc[4] == 1.0
    assert result["recursive"].tolist() == [1, 1, 1, 1, 0, 0]


def test_bad_input():
    data = table_7_3()
    with pytest.raises(SDCInputError, match="'gender'"):
        l_diversity(data, KEYS_7_1, "gender")
    with pytest.raises(SDCInputError, match="'nope'"):
        l_diversity(data, KEYS_7_1, "nope")
    with pytest.raises(SDCInputError, match="'nope'"):
        l_diversity(data, ["nope"], "health")
    with pytest.raises(SDCInputError, match="empty"):
        l_diversity(data, [], "health")
    with pytest.raises(SDCInputError, match="recursive_c"):
        l_diversity(data, KEYS_7_1, "health", recursive_c=0)
    with pytest.raises(SDCInputError, match="'area'"):
        t_closeness(data, KEYS_7_1, "area")


def test_result_indexed_like_input_and_input_untouched():
    data = table_7_3().set_axis(list(range(100, 110)))
    before = data.copy()
    assert list(l_diversity(data, KEYS_7_1, "health").index) == list(data.index)
    assert list(t_closeness(data, KEYS_7_1, "health").index) == list(data.index)
    pd.testing.assert_frame_equal(data, before)


# --- t-closeness -----------------------------------------------------------------------

def test_t_closeness_by_hand():
    # overall: a 1/2, b 1/4, c 1/4; group 1 all a, group 2 = {b, c}
    data = pd.DataFrame({"k": [1, 1, 2, 2], "s": ["a", "a", "b", "c"]})
    nominal = t_closeness(data, ["k"], "s")
    assert nominal.tolist() == pytest.approx([0.5, 0.5, 0.5, 0.5])
    ordinal = t_closeness(data, ["k"], "s", ordinal=True)
    # group 1: cumulative differences (1 - 1/2, 1 - 3/4) -> (0.5 + 0.25) / 2
    # group 2: (0 - 1/2, 1/2 - 3/4) -> (0.5 + 0.25) / 2
    assert ordinal.tolist() == pytest.approx([0.375] * 4)


def dense_emd(data: pd.DataFrame, keys, column: str, ordinal: bool) -> np.ndarray:
    categories = sorted(data[column].dropna().unique())
    q = data[column].value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
    out = np.full(len(data), np.nan)
    for _, index in data.groupby(keys, dropna=False).groups.items():
        group = data.loc[index, column].dropna()
        if group.empty:
            continue
        p = group.value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
        if ordinal:
            m = len(categories)
            value = np.abs(np.cumsum(p - q)[: m - 1]).sum() / (m - 1) if m > 1 else 0.0
        else:
            value = 0.5 * np.abs(p - q).sum()
        out[data.index.get_indexer(index)] = value
    return out


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    categories=st.integers(1, 6),
    na=st.sampled_from([0.0, 0.3]),
    ordinal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_t_closeness_matches_dense_computation(n, categories, na, ordinal, seed):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({"k1": rng.integers(0, 3, n), "k2": rng.integers(0, 2, n), "s": rng.integers(0, categories, n) * 10.0})
    data["s"] = data["s"].mask(rng.random(n) < na)
    result = t_closeness(data, ["k1", "k2"], "s", ordinal=ordinal).to_numpy()
    np.testing.assert_allclose(result, dense_emd(data, ["k1", "k2"], "s", ordinal), rtol=1e-12, atol=1e-15)
    finite = result[np.isfinite(result)]
    assert ((finite >= -1e-15) & (finite <= 1 + 1e-12)).all()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_l_diversity_invariants(n, seed):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({"k": rng.integers(0, 4, n), "s": rng.integers(0, 5, n)})
    result = l_diversity(data, ["k"], "s")
    size = data.groupby("k")["k"].transform("size").to_numpy()
    distinct = data.groupby("k")["s"].transform("nunique").to_numpy()
    assert (result["distinct"].to_numpy() == distinct).all()
    assert (result["recursive"].to_numpy() <= distinct).all()
    assert (result["recursive"].to_numpy() >= 1).all()
    assert (result["entropy"].to_numpy() <= distinct + 1e-9).all()
    assert (result["entropy"].to_numpy() >= 1 - 1e-12).all()
    assert (result["distinct"].to_numpy() <= size).all()


def test_a_missing_key_value_is_judged_for_l_as_for_k():
    # sex m, m, f, f, missing; s a, a, b, c, d. For k (sdcMicro's freqCalc, SPEC §2.4) the missing
    # record matches every record and each record matches it: f = 3, 3, 3, 3, 5. For l the same
    # records: m sees {a, a, d} (2 values, exp(entropy) = exp(-(2/3 ln 2/3 + 1/3 ln 1/3)) = 1.8899),
    # f sees {b, c, d} (3), the missing record the whole file {a, a, b, c, d} (4).
    from sdc_dagster.risk.frequencies import missing_aware_key_frequencies

    data = pd.DataFrame({"sex": ["m", "m", "f", "f", None], "s": ["a", "a", "b", "c", "d"]})
    assert missing_aware_key_frequencies(data, ["sex"])[0].tolist() == [3, 3, 3, 3, 5]
    result = l_diversity(data, ["sex"], "s")
    assert result["distinct"].tolist() == [2, 2, 3, 3, 4]
    assert result["entropy"].iloc[0] == pytest.approx(np.exp(-(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))))
    assert result["entropy"].iloc[2] == pytest.approx(3.0)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 25), keys=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_l_diversity_counts_the_records_a_key_matches_as_k_anonymity_does(n, keys, seed):
    """Against a brute force over every pair of records: a record's group for l is the records its
    key matches (equal wherever both are known; a complete key not matched by a key missing in
    every variable when there are two or more key variables), the records freqCalc counts for k."""
    from sdc_dagster.risk.frequencies import missing_aware_key_frequencies

    rng = np.random.default_rng(seed)
    names = [f"k{j}" for j in range(keys)]
    data = pd.DataFrame({name: pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(0, 3, n)), dtype="Int64")
                         for name in names})
    data["s"] = np.where(rng.random(n) < 0.2, None, rng.choice(["u", "v", "w"], n))
    known = data[names].notna().to_numpy()
    values = data[names].fillna(-1).to_numpy()
    distinct, size = [], []
    for i in range(n):
        rows = [j for j in range(n) if (values[i][known[i] & known[j]] == values[j][known[i] & known[j]]).all()
                and not (j != i and keys > 1 and known[i].all() and not known[j].any())]
        sensitive = data["s"].iloc[rows]
        present = sensitive.dropna().nunique()
        distinct.append(present + int(present > 0 and sensitive.isna().any()))
        size.append(len(rows))
    result = l_diversity(data, names, "s")
    assert result["distinct"].tolist() == distinct
    assert missing_aware_key_frequencies(data, names)[0].tolist() == size
