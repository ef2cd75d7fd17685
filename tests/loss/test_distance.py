"""Distance-based loss, SPEC §9.1–§9.3, against S003 Table 2 and hand-computed cases."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import LossResult, descriptive_statistics, distance_loss, distance_losses

# S003 Table 2 (SPEC §9.2): statistics of the per-record sums of the three continuous
# distances, and lambda of eq (1) over all four variables.
TABLE2 = {
    "max_abs": {"min": 0.9423, "q1": 1.4250, "median": 1.5614, "mean": 1.5990, "q3": 1.8332,
                "max": 2.3229, "cv": 22.8123, "skewness": 0.0833, "lambda": 0.4797},
    "max_sq": {"min": 0.3005, "q1": 0.7083, "median": 1.0423, "mean": 1.0582, "q3": 1.2140,
               "max": 2.0000, "cv": 43.5248, "skewness": 0.4113, "lambda": 0.3446},
    "arctan": {"min": 1.6145, "q1": 2.2042, "median": 2.3934, "mean": 2.3456, "q3": 2.5479,
               "max": 2.6887, "cv": 11.8531, "skewness": -1.1069, "lambda": 0.6664},
}


@pytest.mark.parametrize("variant", sorted(TABLE2))
def test_table2_lambda_and_statistics(table1, table1_scales, variant):
    original, swapped = table1
    result = distance_loss(original, swapped, table1_scales, continuous_distance=variant)
    expected = TABLE2[variant]
    assert result.value == pytest.approx(expected["lambda"], abs=5e-5)
    sums = result.distances[["WYN", "STAZ", "ODL"]].sum(axis=1)
    statistics = descriptive_statistics(sums)
    for name in ("min", "q1", "median", "mean", "q3", "max", "skewness"):
        assert statistics[name] == pytest.approx(expected[name], abs=5e-5), name
    # SPEC §13.1: the published CV of variant (4) is one unit off in the last digit
    assert statistics["cv"] == pytest.approx(expected["cv"], abs=1e-4)


def test_table1_nominal_and_result_shape(table1, table1_scales):
    original, swapped = table1
    result = distance_loss(original, swapped, table1_scales)
    assert isinstance(result, LossResult)
    # 8 of 25 marital statuses changed (SPEC §9.2)
    assert result.distances["STC"].sum() == 8
    assert result.per_variable["STC"] == pytest.approx(8 / 25)
    assert result.per_record.index.equals(original.index)
    np.testing.assert_allclose(result.per_record, result.distances.sum(axis=1))
    assert result.value == pytest.approx(result.per_variable.mean())
    assert list(result.distances.columns) == ["STC", "WYN", "STAZ", "ODL"]


def test_inputs_not_modified(table1, table1_scales):
    original, swapped = table1
    before_o, before_s = original.copy(), swapped.copy()
    distance_loss(original, swapped, table1_scales, continuous_distance="max_sq")
    pd.testing.assert_frame_equal(original, before_o)
    pd.testing.assert_frame_equal(swapped, before_s)


def test_ordinal_distance_uses_category_positions():
    # SPEC §8.2: 8 categories, 2+3 merged to code 2 and 6+7 to code 6; k_j = 8
    original = pd.DataFrame({"edu": [1, 3, 7, 8, 2]})
    recoded = pd.DataFrame({"edu": [1, 2, 6, 8, 2]})
    result = distance_loss(original, recoded, {"edu": "ordinal"}, categories={"edu": list(range(1, 9))})
    np.testing.assert_allclose(result.distances["edu"], [0, 1 / 7, 1 / 7, 0, 0])
    # without the category list, k_j = number of distinct observed codes (here 1,2,3,6,7,8 → 6)
    observed = distance_loss(original, recoded, {"edu": "ordinal"})
    np.testing.assert_allclose(observed.distances["edu"], [0, 1 / 5, 1 / 5, 0, 0])


def test_ordinal_text_categories_and_unknown_value():
    order = ["low", "mid", "high"]
    original = pd.DataFrame({"x": ["low", "high", "mid"]})
    protected = pd.DataFrame({"x": ["high", "high", "low"]})
    result = distance_loss(original, protected, {"x": "ordinal"}, categories={"x": order})
    np.testing.assert_allclose(result.distances["x"], [1.0, 0.0, 0.5])
    with pytest.raises(SDCInputError, match="'x'.*not in the ordinal categories"):
        distance_loss(original, protected.replace("low", "none"), {"x": "ordinal"}, categories={"x": order})


def test_scaled_arctan_and_max_value():
    original = pd.DataFrame({"v": [0.0, 10.0, 20.0, 40.0]})
    protected = pd.DataFrame({"v": [2.0, 10.0, 25.0, 30.0]})
    gap = np.array([2.0, 0.0, 5.0, 10.0])
    scaled = distance_loss(original, protected, {"v": "continuous"}, continuous_distance="scaled_arctan", c=0.1)
    np.testing.assert_allclose(scaled.distances["v"], 2 / np.pi * np.arctan(0.1 * gap))
    plain = distance_loss(original, protected, {"v": "continuous"}, continuous_distance="arctan")
    np.testing.assert_allclose(plain.distances["v"], 2 / np.pi * np.arctan(gap))
    footnote = distance_loss(original, protected, {"v": "continuous"}, continuous_distance="max_value")
    np.testing.assert_allclose(footnote.distances["v"], gap / 40.0)
    with pytest.raises(SDCInputError, match="'v'.*non-negative"):
        distance_loss(original - 50, protected, {"v": "continuous"}, continuous_distance="max_value")


def test_unchanged_variable_has_zero_max_normalised_distance():
    frame = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    for variant in ("max_abs", "max_sq"):
        result = distance_loss(frame, frame.copy(), {"v": "continuous"}, continuous_distance=variant)
        assert result.value == 0.0


# Hidden values, SPEC §9.3. Original values 0, 1, 2, 10 (median 1.5, mid-range 5).
HIDDEN_ORIGINAL = pd.DataFrame({"v": [0.0, 1.0, 2.0, 10.0]})


def test_hidden_released_value_rule_b_uses_midrange():
    protected = pd.DataFrame({"v": [0.0, 1.0, np.nan, 10.0]})
    result = distance_loss(HIDDEN_ORIGINAL, protected, {"v": "continuous"}, continuous_distance="max_abs",
                           hidden_rule="B")
    # x = 2 is closer to the minimum than to the maximum → working x* = max = 10, gap 8
    np.testing.assert_allclose(result.distances["v"], [0.0, 0.0, 1.0, 0.0])
    raw = distance_loss(HIDDEN_ORIGINAL, protected, {"v": "continuous"}, continuous_distance="arctan")
    assert raw.distances["v"].iloc[2] == pytest.approx(2 / np.pi * np.arctan(8.0))


def test_rules_a_and_b_differ_between_median_and_midrange():
    # x = 2 lies above the median 1.5 (rule A → x* = min = 0, gap 2) but below the
    # mid-range 5 (rule B → x* = max = 10, gap 8)
    protected = pd.DataFrame({"v": [0.0, 1.0, np.nan, 10.0]})
    rule_a = distance_loss(HIDDEN_ORIGINAL, protected, {"v": "continuous"}, hidden_rule="A")
    rule_b = distance_loss(HIDDEN_ORIGINAL, protected, {"v": "continuous"}, hidden_rule="B")
    assert rule_a.distances["v"].iloc[2] == pytest.approx(2 / np.pi * np.arctan(2.0))
    assert rule_b.distances["v"].iloc[2] == pytest.approx(2 / np.pi * np.arctan(8.0))


def test_missing_original_imputed_value_gets_largest_loss():
    original = pd.DataFrame({"v": [0.0, 1.0, np.nan, 10.0], "s": ["a", "b", None, "a"]})
    protected = pd.DataFrame({"v": [0.0, 1.0, 7.0, 10.0], "s": ["a", "b", "b", "a"]})
    result = distance_loss(original, protected, {"v": "continuous", "s": "nominal"})
    # x* = 7 is closer to max 10 → working x = min = 0, gap 7
    assert result.distances["v"].iloc[2] == pytest.approx(2 / np.pi * np.arctan(7.0))
    assert result.distances["s"].iloc[2] == 1.0


def test_hidden_nominal_and_ordinal_values():
    original = pd.DataFrame({"n": ["a", "b", None, None], "o": [1, 4, 2, None]}).astype({"o": "Int64"})
    protected = pd.DataFrame({"n": [None, "b", "c", None], "o": [pd.NA, pd.NA, pd.NA, pd.NA]}).astype({"o": "Int64"})
    result = distance_loss(original, protected, {"n": "nominal", "o": "ordinal"},
                           categories={"o": [1, 2, 3, 4, 5]})
    np.testing.assert_allclose(result.distances["n"], [1.0, 0.0, 1.0, 0.0])
    # position 1 → farthest is 5 (d = 4/4); 4 → farthest 1 (3/4); 2 → 5 (3/4); both missing → 0
    np.testing.assert_allclose(result.distances["o"], [1.0, 0.75, 0.75, 0.0])


def test_bad_input_names_the_problem(table1, table1_scales):
    original, swapped = table1
    with pytest.raises(SDCInputError, match="'XYZ'"):
        distance_loss(original, swapped, {"XYZ": "nominal"})
    with pytest.raises(SDCInputError, match="scales\\['WYN'\\]"):
        distance_loss(original, swapped, {"WYN": "interval"})
    with pytest.raises(SDCInputError, match="continuous_distance"):
        distance_loss(original, swapped, table1_scales, continuous_distance="euclid")
    with pytest.raises(SDCInputError, match="hidden_rule"):
        distance_loss(original, swapped, table1_scales, hidden_rule="C")
    with pytest.raises(SDCInputError, match="c:"):
        distance_loss(original, swapped, table1_scales, continuous_distance="scaled_arctan", c=0.0)
    with pytest.raises(SDCInputError, match="same index"):
        distance_loss(original, swapped.iloc[:-1], table1_scales)
    text = original.assign(WYN=original["WYN"].astype(str))
    with pytest.raises(SDCInputError, match="'WYN'.*numeric"):
        distance_loss(text, swapped, table1_scales)


def test_descriptive_statistics_reference_values():
    # numpy's type-7 quantiles and the SAS/Excel SKEW formula on a small hand-checked sample
    stats_ = descriptive_statistics([1.0, 2.0, 3.0, 4.0, 10.0])
    assert stats_["q1"] == 2.0 and stats_["median"] == 3.0 and stats_["q3"] == 4.0
    assert stats_["cv"] == pytest.approx(100 * np.sqrt(10.0) / 4.0)
    # G1 = sqrt(n(n-1))/(n-2) · m3 / m2^1.5 with m2 = 10, m3 = 36 (deviations -3,-2,-1,0,6)
    assert stats_["skewness"] == pytest.approx(np.sqrt(20) / 3 * 36 / 10**1.5)


scale_strategy = st.sampled_from(["nominal", "ordinal", "continuous"])
variant_strategy = st.sampled_from(["max_abs", "max_sq", "arctan", "scaled_arctan"])


@st.composite
def file_pairs(draw):
    n = draw(st.integers(min_value=1, max_value=30))
    m = draw(st.integers(min_value=1, max_value=4))
    scales, original, protected = {}, {}, {}
    for j in range(m):
        scale = draw(scale_strategy)
        name = f"v{j}"
        scales[name] = scale
        if scale == "continuous":
            values = st.floats(-1e6, 1e6, allow_nan=False)
        else:
            values = st.integers(1, 5)
        x = draw(arrays(float, n, elements=values))
        y = draw(arrays(float, n, elements=values))
        # hide some values on either side
        x[draw(arrays(bool, n))] = np.nan
        y[draw(arrays(bool, n))] = np.nan
        if scale == "continuous" and np.isnan(x).all():
            x[0] = 0.0
        original[name], protected[name] = x, y
    return pd.DataFrame(original), pd.DataFrame(protected), scales


@settings(max_examples=60, deadline=None)
@given(file_pairs(), variant_strategy, st.sampled_from(["A", "B"]))
def test_distances_and_lambda_lie_in_unit_interval(pair, variant, rule):
    original, protected, scales = pair
    result = distance_loss(original, protected, scales, continuous_distance=variant, c=0.01, hidden_rule=rule)
    values = result.distances.to_numpy()
    assert np.all((values >= 0) & (values <= 1 + 1e-12))
    if result.compared.sum():
        assert 0 <= result.value <= 1 + 1e-12
    else:  # every value missing on both sides: nothing compared, lambda undefined
        assert np.isnan(result.value)
    assert np.all(result.per_record <= len(scales) + 1e-9)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(file_pairs(), variant_strategy)
def test_identical_files_have_zero_loss(pair, variant):
    original, _, scales = pair
    result = distance_loss(original, original.copy(), scales, continuous_distance=variant)
    assert result.value == 0.0 or (np.isnan(result.value) and result.compared.sum() == 0)
    assert (result.per_record == 0).all()


def test_values_missing_on_both_sides_are_not_compared():
    original = pd.DataFrame({"s": ["a", None, "b", "b"], "v": [1.0, np.nan, np.nan, 4.0]})
    protected = pd.DataFrame({"s": ["a", None, "c", None], "v": [1.0, np.nan, 5.0, 4.0]})
    result = distance_loss(original, protected, {"s": "nominal", "v": "continuous"}, continuous_distance="max_abs")
    # s: record 1 missing on both sides is skipped; d = 0, 1, 1 on the 3 compared values
    # v: records 1 skipped; record 2 imputed 5 -> working original = min 1 (5 is nearer max 4), gap 4 -> d = 1
    assert result.compared.to_dict() == {"s": 3, "v": 3}
    np.testing.assert_allclose(result.distances.to_numpy(), [[0, 0], [0, 0], [1, 1], [1, 0]])
    assert result.per_variable.tolist() == pytest.approx([2 / 3, 1 / 3])
    assert result.value == pytest.approx(3 / 6)


def test_ordinal_distance_uses_the_given_order_not_the_code_order():
    # order low < mid < high given as codes 3, 1, 2: 3 -> 2 is two positions apart, 1 -> 2 one
    original = pd.DataFrame({"o": [3, 1, 2]})
    protected = pd.DataFrame({"o": [2, 2, 2]})
    by_order = distance_loss(original, protected, {"o": "ordinal"}, categories={"o": [3, 1, 2]})
    np.testing.assert_allclose(by_order.distances["o"], [1.0, 0.5, 0.0])
    by_code = distance_loss(original, protected, {"o": "ordinal"})
    np.testing.assert_allclose(by_code.distances["o"], [0.5, 0.5, 0.0])


def test_several_continuous_distances_from_one_pass_match_table2(table1, table1_scales):
    original, swapped = table1
    many = distance_losses(original, swapped, table1_scales, continuous_distances=("max_abs", "max_sq", "arctan"))
    assert list(many) == ["max_abs", "max_sq", "arctan"]
    for variant, result in many.items():
        assert result.value == pytest.approx(TABLE2[variant]["lambda"], abs=5e-5)
        continuous_sums = result.distances[["WYN", "STAZ", "ODL"]].sum(axis=1)
        assert continuous_sums.median() == pytest.approx(TABLE2[variant]["median"], abs=5e-5)


@pytest.mark.parametrize("variant", ["max_abs", "max_sq", "arctan"])
def test_columns_declared_unchanged_give_the_same_result_in_every_bit(variant):
    """A variant that changed one key only (the plan search's recodes): the other columns declared
    ``unchanged`` are not compared value by value, and lambda, the per-record sums, the per-variable
    means and the counts are those of the full comparison, bit for bit."""
    rng = np.random.default_rng(3)
    n = 500
    original = pd.DataFrame({
        "region": rng.choice(["a", "b", "c", None], n),
        "size": rng.choice([1.0, 2.0, 3.0, np.nan], n),
        "income": np.where(rng.random(n) < 0.1, np.nan, rng.lognormal(8, 1, n)),
        "age": rng.integers(0, 90, n).astype(float),
    })
    released = original.copy()
    released["region"] = released["region"].replace({"c": "b"}).mask(rng.random(n) < 0.05)
    scales = {"region": "nominal", "size": "ordinal", "income": "continuous", "age": "continuous"}
    full = distance_losses(original, released, scales, continuous_distances=(variant,))[variant]
    quick = distance_losses(original, released, scales, continuous_distances=(variant,),
                            unchanged=["size", "income", "age"])[variant]
    assert quick.value == full.value and full.value > 0
    assert quick.per_record.equals(full.per_record) and quick.per_variable.equals(full.per_variable)
    assert quick.compared.equals(full.compared) and quick.distances.equals(full.distances)
