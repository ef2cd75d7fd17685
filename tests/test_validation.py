"""The one message format of sdc_dagster.validation: "<name>: must be <rule>, got <value>"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import (
    check_option,
    check_pair,
    check_scalar,
    count_matrix,
    numeric_matrix,
    paired_matrices,
    positive_values,
    weight_values,
)


@pytest.mark.parametrize(
    ("value", "options", "message"),
    [
        (0, {"integer": True, "low": 1}, "k: must be an integer >= 1, got 0"),
        (2.5, {"integer": True, "low": 1}, "k: must be an integer >= 1, got 2.5"),
        (True, {"integer": True, "low": 1}, "k: must be an integer >= 1, got True"),
        ("3", {"integer": True}, "k: must be an integer, got '3'"),
        (0, {"low": 0, "high": 1, "closed": "right"}, "k: must be a number in (0, 1], got 0"),
        (1, {"low": 0, "high": 1, "closed": "left"}, "k: must be a number in [0, 1), got 1"),
        (100, {"low": 0, "high": 100, "closed": "neither"}, "k: must be a number in (0, 100), got 100"),
        (0, {"low": 0, "closed": "neither"}, "k: must be a number > 0, got 0"),
        (2, {"high": 1}, "k: must be a number <= 1, got 2"),
        (float("nan"), {}, "k: must be a number, got nan"),
        (float("inf"), {"low": 0}, "k: must be a number >= 0, got inf"),
        (1.5, {"integer": True, "low": -2**31, "high": 2**31 - 1},
         "k: must be an integer in [-2147483648, 2147483647], got 1.5"),
    ],
)
def test_check_scalar_names_the_value_the_rule_and_what_it_got(value, options, message):
    with pytest.raises(SDCInputError) as error:
        check_scalar(value, "k", **options)
    assert str(error.value) == message


def test_check_scalar_returns_python_numbers_and_accepts_the_bounds_it_includes():
    assert check_scalar(np.int64(3), "k", integer=True, low=1) == 3
    assert type(check_scalar(np.int64(3), "k", integer=True)) is int
    assert check_scalar(np.float32(0.5), "f", low=0, high=1) == 0.5
    assert type(check_scalar(1, "f")) is float
    assert check_scalar(1, "f", low=0, high=1, closed="right") == 1.0
    assert check_scalar(0, "f", low=0, high=1, closed="left") == 0.0


def test_the_error_class_is_the_callers_choice_and_the_wording_the_same():
    with pytest.raises(ValueError) as error:
        check_scalar(-1, "risk.k", integer=True, low=1, error=ValueError)
    assert type(error.value) is ValueError and str(error.value) == "risk.k: must be an integer >= 1, got -1"
    with pytest.raises(ValueError, match="closed: must be one of"):
        check_scalar(1, "k", closed="open")


def test_check_option_lists_the_options():
    assert check_option("mdav", "kind", ("mdav", "individual_ranking")) == "mdav"
    with pytest.raises(SDCInputError) as error:
        check_option("kmeans", "kind", ("mdav", "individual_ranking"))
    assert str(error.value) == "kind: must be one of 'mdav', 'individual_ranking', got 'kmeans'"


def test_numeric_matrix_names_the_column_and_the_rule():
    frame = pd.DataFrame({"income": [1.0, np.nan], "region": ["a", "b"], "hours": [1.0, np.inf]})
    assert np.isnan(numeric_matrix(frame, ["income"], role="x", allow_missing=True)[1, 0])
    with pytest.raises(SDCInputError, match="x 'income': contains missing or infinite values"):
        numeric_matrix(frame, ["income"], role="x")
    with pytest.raises(SDCInputError, match="x 'region': must be numeric"):
        numeric_matrix(frame, ["region"], role="x")
    with pytest.raises(SDCInputError, match="x 'hours': contains infinite values"):
        numeric_matrix(frame, ["hours"], role="x", allow_missing=True)
    with pytest.raises(SDCInputError, match="x: the selection is empty"):
        numeric_matrix(frame, [], role="x")


def test_paired_frames_by_position_and_by_index():
    original = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    with pytest.raises(SDCInputError, match="protected: has 2 rows but original has 3"):
        paired_matrices(original, original.iloc[:2], ["v"])
    shifted = original.set_axis([5, 6, 7])
    x, xm = paired_matrices(original, shifted, ["v"])  # by position: the index does not matter
    assert (x == xm).all()
    with pytest.raises(SDCInputError, match="protected: must have the same index"):
        check_pair(original, shifted, ["v"])
    assert check_pair(original, original, "v") == ["v"]


def test_count_matrix_refuses_missing_negative_and_fractional_counts():
    counts = pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0], "c": [1, None], "d": [1, -1], "e": [0.5, 1.0]})
    assert count_matrix(counts, ["a", "b"]).tolist() == [[1, 1], [2, 2]]
    with pytest.raises(SDCInputError, match="column 'c': original counts must not be missing"):
        count_matrix(counts, ["c"], role="original counts")
    for column in ("d", "e"):
        with pytest.raises(SDCInputError, match=f"column '{column}': grid counts must be non-negative integers"):
            count_matrix(counts, [column])


def test_weights_and_positive_values():
    frame = pd.DataFrame({"w": [1.5, 2.0], "bad": [1.0, 0.0], "gap": [1.0, None]})
    assert weight_values(frame, None) is None
    assert weight_values(frame, "w").tolist() == [1.5, 2.0]
    with pytest.raises(SDCInputError, match="weight 'bad' must be finite and positive; 1 values are not"):
        weight_values(frame, "bad")
    with pytest.raises(SDCInputError, match="weight 'gap' has 1 missing values"):
        weight_values(frame, "gap")
    assert positive_values(frame, 2, role="omega").tolist() == [2.0, 2.0]
    with pytest.raises(SDCInputError, match="omega 'bad': must be finite and positive for every record"):
        positive_values(frame, "bad", role="omega")
    with pytest.raises(SDCInputError, match="omega: must be a column name or a number, got True"):
        positive_values(frame, True, role="omega")
