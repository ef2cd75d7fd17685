"""SUDA2 (SPEC §3.8) against sdcMicro's numbers, a brute-force MSU search, and invariants."""

from __future__ import annotations

import json
from itertools import combinations
from math import factorial, prod
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.pipeline import risk as pipeline_risk
from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk import suda as suda_module
from sdc_dagster.risk import suda2, suda2_max_size
from sdc_dagster.risk.suda import suda2_attribute_contributions

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
CONTRIBUTIONS = [f"{k}_contribution" for k in KEYS]
MISSING = -999


@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    return pd.read_csv(DATA / "testdata.csv")


@pytest.fixture(scope="module")
def golden() -> pd.DataFrame:
    return pd.read_csv(GOLDEN / "b_testdata_suda2_per_record.csv")


@pytest.fixture(scope="module")
def summary() -> dict:
    return json.loads((GOLDEN / "b_testdata_suda2_summary.json").read_text())


@pytest.fixture(scope="module")
def result(testdata) -> pd.DataFrame:
    return suda2(testdata, KEYS)


# --- sdcMicro golden files (suda2(testdata, variables=KEYS, DisFraction=0.01)) -------------------


def test_scores_match_sdcmicro_per_record(result, golden):
    np.testing.assert_allclose(result["score"].to_numpy(), golden["score"].to_numpy(), rtol=1e-8, atol=0)


def test_dis_scores_match_sdcmicro_per_record(result, golden):
    np.testing.assert_allclose(
        result["dis_score"].to_numpy(), golden["disScore"].to_numpy(), rtol=1e-8, atol=0
    )


def test_contributions_match_sdcmicro_per_record(result, golden):
    np.testing.assert_allclose(
        result[CONTRIBUTIONS].to_numpy(), golden[CONTRIBUTIONS].to_numpy(), rtol=1e-8, atol=1e-15
    )


def test_summary_matches_sdcmicro(result, summary):
    score, dis = result["score"], result["dis_score"]
    assert score.sum() == summary["sum_score"] == 4890
    assert score.max() == summary["max_score"] == 720
    assert int((score > 0).sum()) == summary["n_score_gt0"] == 157
    table = {str(int(k)): int(v) for k, v in score.value_counts().items()}
    assert table == summary["score_table"]
    assert dis.sum() == pytest.approx(summary["sum_disScore"], rel=1e-8)
    assert dis.max() == pytest.approx(summary["max_disScore"], rel=1e-8)
    assert int((dis > 0).sum()) == summary["n_disScore_gt0"]


def test_attribute_contributions_match_sdcmicro(result):
    expected = pd.read_csv(GOLDEN / "b_testdata_suda2_attribute_contributions.csv")
    table = suda2_attribute_contributions(result)
    assert table["variable"].tolist() == expected["variable"].tolist() == KEYS
    np.testing.assert_allclose(table["contribution"], expected["contribution"], rtol=1e-8, atol=0)


def test_ihsn_scores_match_sdcmicro_summary(testdata, summary):
    reference = summary["original_scores_FALSE"]
    ihsn = suda2(testdata, KEYS, original_scores=False)
    assert ihsn["score"].sum() == pytest.approx(reference["sum_score"], rel=1e-8)
    assert ihsn["dis_score"].sum() == pytest.approx(reference["sum_disScore"], rel=1e-8)
    assert ihsn["dis_score"].max() == pytest.approx(reference["max_disScore"], rel=1e-8)


# --- sdcMicro's quirks on data testdata lacks ----------------------------------------------------

# Thirteen records with keys a, b, c and d = a grouped (a=4 <-> d=21 hold the same records, which
# sdcMicro treats as correlated items), a missing code in b, unique records sharing sdcMicro's hash
# bucket, and two duplicated pairs. Expected values: sdcMicro's C++ suda2 (src/Suda2.h, commit
# 0d7e2e) compiled stand-alone with DisFraction = 0.1; the same program reproduces the testdata
# golden file exactly. Rows 0 and 2 show sdcMicro's crediting of correlated items (the true MSU
# split would give a and d 0.5 each).
CORRELATED_DATA = [
    [4, 2, 3, 21], [4, 1, 3, 21], [4, 2, 1, 21], [2, 2, 1, 10], [1, 2, 3, 10], [4, 2, 2, 21],
    [4, 1, 1, 21], [2, 2, 2, 10], [3, MISSING, 2, 20], [1, 1, 1, 10], [4, 2, 2, 21], [4, 1, 1, 21],
    [2, 1, 1, 10],
]  # fmt: skip
CORRELATED_EXPECTED = [  # a, b, c, d contributions, score, dis_score
    [1.0, 1.0, 1.0, 0.0, 2.0, 0.14802179855801342],
    [0.0, 1.0, 1.0, 0.0, 2.0, 0.14802179855801342],
    [1.0, 1.0, 1.0, 0.0, 2.0, 0.14802179855801342],
    [0.5, 1.0, 1.0, 0.5, 2.0, 0.14802179855801342],
    [2 / 3, 1 / 3, 2 / 3, 1 / 3, 6.0, 0.39368069481249857],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.5, 0.0, 1.0, 0.5, 4.0, 0.2852789728468729],
    [0.5, 0.0, 0.0, 0.5, 12.0, 0.5986660503031046],
    [1.0, 0.5, 0.5, 0.0, 4.0, 0.2852789728468729],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 0.0, 0.0, 2.0, 0.14802179855801342],
]


def test_correlated_items_missing_code_and_hash_buckets_as_sdcmicro():
    data = pd.DataFrame(CORRELATED_DATA, columns=list("abcd"))
    out = suda2(data, list("abcd"), dis_fraction=0.1)
    expected = np.array(CORRELATED_EXPECTED)
    contributions = out[[f"{k}_contribution" for k in "abcd"]].to_numpy()
    np.testing.assert_allclose(contributions, expected[:, :4], rtol=1e-8, atol=1e-15)
    np.testing.assert_allclose(out["score"], expected[:, 4], rtol=1e-8, atol=0)
    np.testing.assert_allclose(out["dis_score"], expected[:, 5], rtol=1e-8, atol=0)


def test_two_keys_use_sdcmicro_padding_to_three_columns():
    # sdcMicro pads two keys with a constant column, so K = 3: a 1-MSU weighs (3-1)! = 2 and a
    # 2-MSU weighs 1. Every record is unique and none duplicated, so DIS is 1 where score > 0.
    data = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, 2, 1, 2, 1]})
    out = suda2(data, ["a", "b"])
    assert out["score"].tolist() == [1.0, 1.0, 1.0, 1.0, 2.0]
    assert out["a_contribution"].tolist() == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert out["b_contribution"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert out["dis_score"].tolist() == [1.0] * 5


def test_dis_is_nan_when_sdcmicro_counts_no_unique():
    # The only two sample uniques share sdcMicro's 16-bit hash bucket ((2,1,1) and (1,3,1) with
    # the padding column both hash to 11), so its unique count is 0 and DIS is 0/0; the
    # stand-alone sdcMicro C++ prints nan for both records.
    data = pd.DataFrame({"a": [1] * 10 + [2, 1], "b": [1] * 11 + [3]})
    out = suda2(data, ["a", "b"])
    assert out["score"].tolist() == [0.0] * 10 + [2.0, 2.0]
    assert out["dis_score"].iloc[:10].eq(0).all() and out["dis_score"].iloc[10:].isna().all()


def test_single_msus_only_with_max_size_one(testdata):
    # SPEC §3.8 weight with M = 1: prod_{u=1}^{1} (K - u) = 6 for each key whose value is unique.
    out = suda2(testdata, KEYS, max_size=1)
    unique_values = sum((testdata[k].map(testdata[k].value_counts()) == 1).astype(int) for k in KEYS)
    np.testing.assert_array_equal(out["score"].to_numpy(), 6.0 * unique_values.to_numpy())


# --- brute force: every key subset of every record ----------------------------------------------


def brute_force_suda2(values: np.ndarray, max_size: int, original_scores: bool = True):
    """Scores and contributions from an exhaustive MSU search, crediting as sdcMicro does."""
    n, n_keys = values.shape
    n_columns = max(n_keys, 3)
    top = min(max_size, n_columns - 1)

    def weight(size):
        if original_scores:
            return float(prod(n_columns - u for u in range(size, top + 1)))
        rest = n_columns - size
        return (2.0**rest - 1) * factorial(size) * factorial(rest) / factorial(n_columns)

    def count(row, subset):
        return sum(all(values[other, j] == values[row, j] for j in subset) for other in range(n))

    def records(j, value):
        return frozenset(r for r in range(n) if values[r, j] == value)

    def base(row, j):
        own = records(j, values[row, j])
        for i in range(j):
            if values[row, i] != MISSING and len(own) >= 2 and records(i, values[row, i]) == own:
                return i
        return j

    score = np.zeros(n)
    contribution = np.zeros((n, n_keys))
    for row in range(n):
        for size in range(1, max_size + 1):
            for subset in combinations(range(n_keys), size):
                if any(values[row, j] == MISSING for j in subset) or count(row, subset) != 1:
                    continue
                if size > 1 and any(count(row, [k for k in subset if k != j]) == 1 for j in subset):
                    continue
                w = weight(size)
                score[row] += w
                bases = [base(row, j) for j in subset]
                if size == 2:
                    both_correlated = all(b != j for b, j in zip(bases, subset))
                    if not both_correlated:
                        contribution[row, list(subset)] += w
                elif size >= 3:
                    for b in bases:
                        contribution[row, b] += w
                else:
                    contribution[row, subset[0]] += w
    scored = score > 0
    contribution[scored] /= score[scored, None]
    return score, contribution


@st.composite
def small_microdata(draw):
    n = draw(st.integers(1, 12))
    n_keys = draw(st.integers(1, 4))
    columns = []
    for j in range(n_keys):
        if columns and draw(st.booleans()):
            # a grouping of an earlier key: makes correlated items (same records, other key)
            source = columns[draw(st.integers(0, len(columns) - 1))]
            columns.append([v // 2 + 10 if v != MISSING else MISSING for v in source])
        else:
            levels = draw(st.integers(1, 4))
            value = st.sampled_from([*range(1, levels + 1), MISSING])
            columns.append(draw(st.lists(value, min_size=n, max_size=n)))
    values = np.array(columns, dtype=np.int64).T.reshape(n, n_keys)
    max_size = draw(st.integers(1, n_keys))
    return values, max_size


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(small_microdata(), st.booleans())
def test_matches_brute_force_msu_search(case, original_scores):
    values, max_size = case
    keys = [f"k{j}" for j in range(values.shape[1])]
    out = suda2(pd.DataFrame(values, columns=keys), keys, max_size=max_size, original_scores=original_scores)
    score, contribution = brute_force_suda2(values, max_size, original_scores)
    np.testing.assert_allclose(out["score"].to_numpy(), score, rtol=1e-12, atol=0)
    got = out[[f"{k}_contribution" for k in keys]].to_numpy()
    np.testing.assert_allclose(got, contribution, rtol=1e-12, atol=1e-15)


@SETTINGS
@given(small_microdata())
def test_only_sample_uniques_score_and_dis_is_a_probability(case):
    values, _ = case
    keys = [f"k{j}" for j in range(values.shape[1])]
    data = pd.DataFrame(values, columns=keys)
    out = suda2(data, keys)
    fk = data.groupby(keys)[keys[0]].transform("size").to_numpy()
    score, dis = out["score"].to_numpy(), out["dis_score"].to_numpy()
    assert (score[fk > 1] == 0).all()
    # NaN only as sdcMicro gives it: positive scores while its unique count is 0 (see below).
    assert (score[np.isnan(dis)] > 0).all()
    known = ~np.isnan(dis)
    assert ((dis[known] > 0) == (score[known] > 0)).all()
    assert ((dis[known] >= 0) & (dis[known] <= 1)).all()
    contributions = out[[f"{k}_contribution" for k in keys]].to_numpy()
    assert ((contributions >= 0) & (contributions <= 1)).all()
    assert (contributions[out["score"].to_numpy() == 0] == 0).all()


@SETTINGS
@given(small_microdata(), st.randoms(use_true_random=False))
def test_rows_and_keys_can_be_reordered(case, random):
    values, _ = case
    keys = [f"k{j}" for j in range(values.shape[1])]
    data = pd.DataFrame(values, columns=keys)
    out = suda2(data, keys)
    order = list(range(len(data)))
    random.shuffle(order)
    shuffled = suda2(data.iloc[order], keys)
    pd.testing.assert_frame_equal(shuffled, out.iloc[order], check_exact=False, rtol=1e-12)
    # The score depends on MSU sizes only, not on the order of the keys.
    reversed_keys = suda2(data, keys[::-1])
    np.testing.assert_array_equal(reversed_keys["score"].to_numpy(), out["score"].to_numpy())


# --- input handling ------------------------------------------------------------------------------


def test_result_is_indexed_like_the_input_and_input_unchanged(testdata):
    data = testdata.head(300).copy()
    data.index = pd.Index([f"r{i}" for i in range(len(data))], name="id")
    before = data.copy()
    out = suda2(data, KEYS)
    pd.testing.assert_frame_equal(data, before)
    assert out.index.equals(data.index)
    assert list(out.columns) == ["score", "dis_score", *CONTRIBUTIONS]


def test_nan_is_the_missing_code_and_the_code_is_configurable():
    coded = pd.DataFrame(CORRELATED_DATA, columns=list("abcd"))
    with_nan = coded.astype("float64").replace(MISSING, np.nan)
    expected = suda2(coded, list("abcd"))
    pd.testing.assert_frame_equal(suda2(with_nan, list("abcd")), expected)
    nullable = coded.astype("Int64").replace(MISSING, pd.NA)
    pd.testing.assert_frame_equal(suda2(nullable, list("abcd")), expected)
    recoded = coded.replace(MISSING, 0)
    pd.testing.assert_frame_equal(suda2(recoded, list("abcd"), missing=0), expected)


def test_text_and_categorical_keys_score_like_their_codes(testdata):
    data = testdata[KEYS].head(500)
    as_text = data.astype(str).assign(roof=data["roof"].astype("category"))
    np.testing.assert_array_equal(suda2(as_text, KEYS)["score"], suda2(data, KEYS)["score"])


def test_empty_data_gives_an_empty_result(testdata):
    out = suda2(testdata.head(0), KEYS)
    assert out.empty and list(out.columns) == ["score", "dis_score", *CONTRIBUTIONS]


def test_unknown_key_is_named():
    with pytest.raises(SDCInputError, match="'nope'"):
        suda2(pd.DataFrame({"a": [1, 2]}), ["a", "nope"])


def test_empty_key_list_is_rejected():
    with pytest.raises(SDCInputError, match="empty"):
        suda2(pd.DataFrame({"a": [1, 2]}), [])


def test_repeated_key_is_rejected():
    with pytest.raises(SDCInputError, match="more than once"):
        suda2(pd.DataFrame({"a": [1, 2]}), ["a", "a"])


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5, "x"])
def test_dis_fraction_outside_unit_interval_is_rejected(fraction):
    with pytest.raises(SDCInputError, match="dis_fraction"):
        suda2(pd.DataFrame({"a": [1, 2]}), ["a"], dis_fraction=fraction)


@pytest.mark.parametrize("size", [0, 3, 1.5])
def test_max_size_outside_key_count_is_rejected(size):
    with pytest.raises(SDCInputError, match="max_size"):
        suda2(pd.DataFrame({"a": [1, 2], "b": [1, 2]}), ["a", "b"], max_size=size)


def test_infinite_numeric_key_is_rejected():
    with pytest.raises(SDCInputError, match="'a'.*infinite"):
        suda2(pd.DataFrame({"a": [np.inf, 2.0]}), ["a"])


def test_missing_code_must_be_an_integer():
    with pytest.raises(SDCInputError, match="missing"):
        suda2(pd.DataFrame({"a": [1, 2]}), ["a"], missing=0.5)


def test_attribute_contributions_need_a_suda2_result():
    with pytest.raises(SDCInputError, match="score"):
        suda2_attribute_contributions(pd.DataFrame({"x": [1.0]}))


def test_max_size_that_fits_the_memory_bound_on_a_wide_file():
    # issue 21: 26 keys, 3,000 records, all sample uniques. MSUs of size s need 3,000 x C(26, s)
    # cells: C(26, 5) = 65,780 -> 197,340,000 fit the bound of 300,000,000; C(26, 6) = 230,230 do not
    rng = np.random.default_rng(26)
    data = pd.DataFrame(rng.integers(1, 8, size=(3000, 26)), columns=[f"k{j}" for j in range(26)])
    assert not data.duplicated().any()
    assert suda2_max_size(data, list(data.columns)) == 5


def test_survey_lowers_max_size_to_what_fits_and_says_so(monkeypatch):
    rng = np.random.default_rng(8)
    data = pd.DataFrame(rng.integers(1, 4, size=(60, 6)), columns=[f"k{j}" for j in range(6)])
    keys = list(data.columns)
    uniques = int((data.value_counts() == 1).sum())
    # a bound that holds C(6, 2) = 15 subsets of every sample unique but not C(6, 3) = 20
    monkeypatch.setattr(suda_module, "_MAX_LEVEL_CELLS", uniques * 15)
    with pytest.raises(SDCInputError, match="suda2_max_size"):
        suda2(data, keys)
    scores, notes = pipeline_risk.suda_scores(data, keys)
    assert [(n.measure, n.status) for n in notes] == [("suda2", "limited")]
    assert "max_size lowered to 2" in notes[0].reason
    pd.testing.assert_frame_equal(scores, suda2(data, keys, max_size=2))
    monkeypatch.setattr(suda_module, "_MAX_LEVEL_CELLS", uniques * 5)  # not even the 6 single keys
    scores, notes = pipeline_risk.suda_scores(data, keys)
    assert scores is None and notes[0].status == "not applicable"


def test_fractional_numeric_codes_score_as_their_categories():
    """A numeric key with fractional codes (years of education 10.5, found in the public corpus)
    scores as the same key coded 1..c: SUDA2 compares codes for equality only."""
    rng = np.random.default_rng(5)
    educ = rng.choice([7.0, 8.5, 10.0, 10.5, 12.0], 300)
    frame = pd.DataFrame({"educ": educ, "sex": rng.integers(1, 3, 300), "region": rng.integers(1, 6, 300)})
    coded = frame.assign(educ=frame["educ"].map({7.0: 1, 8.5: 2, 10.0: 3, 10.5: 4, 12.0: 5}))
    pd.testing.assert_frame_equal(suda2(frame, ["educ", "sex", "region"]), suda2(coded, ["educ", "sex", "region"]))


def msu_scores_by_counting(data: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each record's SUDA score and number of MSUs from the definitions alone (no missing values, K >= 3
    keys, every size searched): a record is unique on a key subset S when no other record shares its
    values on S (a pandas count per subset); S is an MSU when the record is unique on S and on no
    S minus one key; an MSU of size s scores (K - s)! (SPEC §3.8, Elliot et al. 2002)."""
    n_keys = len(keys)
    unique = {}
    for size in range(1, n_keys + 1):
        for subset in combinations(keys, size):
            unique[subset] = data.groupby(list(subset))[subset[0]].transform("size").to_numpy() == 1
    score, msus = np.zeros(len(data)), np.zeros(len(data), dtype=np.int64)
    for subset, alone in unique.items():
        minimal = alone.copy()
        if len(subset) > 1:
            for smaller in combinations(subset, len(subset) - 1):
                minimal &= ~unique[smaller]
        score += minimal * factorial(n_keys - len(subset))
        msus += minimal
    return score, msus


def test_scores_on_a_sample_shaped_like_the_benchmark_equal_an_msu_count_by_definition(testdata):
    """Issue 37's SUDA2 figure (benchmarks/protect.py, 1,000,000 x 7 keys drawn from testdata's
    marginals) is only worth its speed if the scores are right: on 3,000 records drawn the same way
    (over 100 sample uniques, over 500 MSUs, records with several) the scores equal a count of the MSUs straight
    from the definition."""
    rng = np.random.default_rng(2024)
    sample = pd.DataFrame({key: rng.choice(testdata[key].to_numpy(), size=3_000) for key in KEYS})
    expected_score, msus = msu_scores_by_counting(sample, KEYS)
    assert msus.sum() > 500 and (expected_score > 0).sum() > 100 and (msus > 1).any()  # work for the search
    out = suda2(sample, KEYS)
    np.testing.assert_array_equal(out["score"].to_numpy(), expected_score)
