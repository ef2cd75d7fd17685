"""The one coding of key columns (:func:`sdc_dagster.keys.category_codes`, DESIGN.md drift
item 3): 0 for a missing value however it is spelled, 1..c for the categories, first appearance
or sorted. Expected codes are written out by hand from that definition; the callers (SUDA2,
unsafe combinations, riskyCells, l-diversity, t-closeness, record swapping) must give the same
answer whether a missing key value is spelled ``None``, ``np.nan`` or ``pd.NA``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.keys import category_codes, key_digits, renumbered_digits
from sdc_dagster.protect.record_swapping import targeted_record_swap
from sdc_dagster.risk.combinations import risky_cells, unsafe_combinations
from sdc_dagster.risk.diversity import l_diversity, t_closeness
from sdc_dagster.risk.suda import suda2


@pytest.mark.parametrize("na", [None, np.nan, pd.NA], ids=["None", "nan", "NA"])
def test_string_key_codes_by_hand(na):
    column = pd.Series(["b", na, "a", "b", na], name="x", dtype=object)
    codes, categories = category_codes(column)
    assert codes.tolist() == [1, 0, 2, 1, 0] and list(categories) == ["b", "a"]
    codes, categories = category_codes(column, sort=True)
    assert codes.tolist() == [2, 0, 1, 2, 0] and list(categories) == ["a", "b"]


def test_integer_key_codes_by_hand():
    nullable = pd.Series([3, pd.NA, 1, 3], dtype="Int64", name="x")
    floats = pd.Series([3.0, np.nan, 1.0, 3], name="x")  # 3 and 3.0 are one category
    for column in (nullable, floats):
        assert category_codes(column)[0].tolist() == [1, 0, 2, 1]
        assert category_codes(column, sort=True)[0].tolist() == [2, 0, 1, 2]


def test_category_absent_from_the_data_gets_no_code():
    # "c" is a category of the Categorical but absent from this wave; sorted = category order
    column = pd.Series(pd.Categorical(["a", None, "b"], categories=["c", "b", "a"]), name="x")
    codes, categories = category_codes(column, sort=True)
    assert codes.tolist() == [2, 0, 1] and list(categories) == ["b", "a"]
    digits, radices = key_digits(pd.DataFrame({"x": column, "y": [7, 7, 8]}), ["x", "y"])
    assert digits.tolist() == [[1, 1], [0, 1], [2, 2]] and radices.tolist() == [3, 3]


def test_unorderable_values_are_an_input_error_naming_the_column():
    column = pd.Series([(1, 2), 3, (1, 2)], name="mixed", dtype=object)
    assert category_codes(column)[0].tolist() == [1, 2, 1]  # first appearance needs no order
    with pytest.raises(SDCInputError, match="'mixed'.*cannot be ordered"):
        category_codes(column, sort=True)


def test_unsafe_combinations_lists_sorted_categories_without_missing():
    data = pd.DataFrame({"x": ["b", None, "a", "b"], "y": [1, 1, 2, 2]})
    _, per_category = unsafe_combinations(data, ["x", "y"], k=2, max_dim=1)
    x = per_category[per_category["variable"] == "x"]
    assert x["category"].tolist() == ["a", "b"] and x["frequency"].tolist() == [1, 2]
    assert x["dim_1"].tolist() == [1, 0]  # "a" alone is unsafe (1 < 2); the missing value is no category


KEYS = ["k1", "k2", "k3"]


def spellings(values: np.ndarray, missing: np.ndarray) -> dict[str, pd.DataFrame]:
    """The same keys (integers 1..4, some missing) with the missing value spelled five ways."""
    floats = pd.DataFrame(np.where(missing, np.nan, values).astype(float), columns=KEYS)
    strings = floats.astype("Int64").astype(str).astype(object).where(~missing)
    return {
        "float nan": floats,
        "Int64 NA": floats.astype("Int64"),
        "object None": strings.where(~missing, None),
        "object nan": strings.where(~missing, np.nan),
        "string NA": strings.astype("string"),
    }


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    st.integers(8, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.integers(1, 4), min_size=3, max_size=3), min_size=n, max_size=n),
            st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=n, max_size=n),
        )
    )
)
def test_every_caller_agrees_however_missing_is_spelled(case):
    values, missing = np.array(case[0]), np.array(case[1])
    missing[:, 0] = False  # l-diversity's sensitive column k1 keeps a value in every record
    frames = spellings(values, missing)
    results = {}
    for name, frame in frames.items():
        frame = frame.assign(hid=np.arange(len(frame)) // 2, region=np.arange(len(frame)) // 2 % 3, size=1)
        per_variable, per_category = unsafe_combinations(frame, KEYS, k=2, max_dim=3)
        swapped = targeted_record_swap(
            frame, hid="hid", hierarchy=["region"], similar=["size"], risk_variables=KEYS,
            swaprate=0.5, k_anonymity=2, random_state=3,
        )
        results[name] = {
            "suda": suda2(frame, KEYS),
            "unsafe per variable": per_variable,
            "unsafe per category": per_category.drop(columns="category"),
            "risky cells": risky_cells(frame, KEYS, max_dim=2, threshold=1),
            "l-diversity": l_diversity(frame, ["k2", "k3"], "k1"),
            "t-closeness": t_closeness(frame, ["k2", "k3"], "k1", ordinal=True),
            "swap partners": swapped.swapped_with,
        }
    reference = results["object None"]
    for name, result in results.items():
        for measure, value in result.items():
            expected = reference[measure]
            if measure == "suda" and name in ("float nan", "Int64 NA"):
                # numeric keys reach sdcMicro's DIS hash as their values, strings as sorted codes
                # 1..c; the MSUs and scores do not depend on the coding
                value, expected = value.drop(columns="dis_score"), expected.drop(columns="dis_score")
            if isinstance(value, pd.DataFrame):
                pd.testing.assert_frame_equal(value, expected, obj=f"{measure} ({name})")
            else:
                pd.testing.assert_series_equal(value, expected, obj=f"{measure} ({name})")
    # the numeric spellings agree with each other in full, DIS included
    pd.testing.assert_frame_equal(results["float nan"]["suda"], results["Int64 NA"]["suda"])


def test_renumbered_digits_by_hand():
    # categories renumbered by first appearance among the values present (0 = missing), absent ones dropped
    digits = np.array([[3, 1], [0, 2], [2, 0], [3, 2], [1, 0]])
    out, radices = renumbered_digits(digits)
    np.testing.assert_array_equal(out, [[1, 1], [0, 2], [2, 0], [1, 2], [3, 0]])
    np.testing.assert_array_equal(radices, [4, 3])
    out, radices = renumbered_digits(np.array([[0, 2], [0, 2], [0, 0]]))
    np.testing.assert_array_equal(out, [[0, 1], [0, 1], [0, 0]])
    np.testing.assert_array_equal(radices, [1, 2])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), share=st.sampled_from([0.0, 0.3, 0.9]))
def test_renumbered_digits_are_the_key_digits_of_the_values_left(seed, share):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({"a": rng.choice(["x", "y", "z", None], 30), "b": rng.choice([1.0, 2.0, 7.0, np.nan], 30)})
    digits, _ = key_digits(data, ["a", "b"])
    removed = rng.random(digits.shape) < share
    masked = data.mask(removed)
    out, radices = renumbered_digits(np.where(removed, 0, digits))
    expected, expected_radices = key_digits(masked, ["a", "b"])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(radices, expected_radices)
