"""Contingency-table association and regression coefficients before/after, SPEC §9.9."""

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import association_loss, contingency_association, regression_loss


def _records(table, rows, cols):
    """Expand a two-way table of counts into records."""
    pairs = [(r, c) for i, r in enumerate(rows) for j, c in enumerate(cols) for _ in range(table[i][j])]
    return pd.DataFrame(pairs, columns=["a", "b"])


def test_chi_square_and_coefficients_by_hand():
    # 2x2 table [[20, 10], [10, 20]]: expected 15 everywhere, chi2 = 4·25/15
    data = _records([[20, 10], [10, 20]], ["x", "y"], ["u", "v"])
    result = contingency_association(data, "a", "b")
    chi2 = 4 * 25 / 15
    assert result["chi2"] == pytest.approx(chi2)
    assert result["dof"] == 1 and result["n"] == 60
    assert result["cramers_v"] == pytest.approx(np.sqrt(chi2 / 60))
    assert result["contingency_coefficient"] == pytest.approx(np.sqrt(chi2 / (chi2 + 60)))


def test_association_loss_relative_change():
    original = _records([[20, 10], [10, 20]], ["x", "y"], ["u", "v"])
    protected = _records([[18, 12], [12, 18]], ["x", "y"], ["u", "v"])
    table = association_loss(original, protected, ["a", "b"])
    assert len(table) == 1
    v, v_star = np.sqrt((4 * 25 / 15) / 60), np.sqrt((4 * 9 / 15) / 60)
    assert table.loc[0, "cramers_v_change"] == pytest.approx(100 * abs(v - v_star) / v)
    assert table.loc[0, "cramers_v_protected"] == pytest.approx(v_star)


def test_single_category_raises():
    data = pd.DataFrame({"a": ["x", "x"], "b": ["u", "v"]})
    with pytest.raises(SDCInputError, match="'a'.*at least 2"):
        contingency_association(data, "a", "b")


def test_regression_coefficients_before_after():
    x = np.arange(10.0)
    original = pd.DataFrame({"y": 1.0 + 2.0 * x, "x": x})
    protected = pd.DataFrame({"y": 1.0 + 2.5 * x, "x": x})
    result = regression_loss(original, protected, "y", ["x"])
    np.testing.assert_allclose(result["original"], [1.0, 2.0], atol=1e-10)
    np.testing.assert_allclose(result["protected"], [1.0, 2.5], atol=1e-10)
    assert result.loc["x", "relative_change"] == pytest.approx(25.0)
    with pytest.raises(SDCInputError, match="collinear"):
        regression_loss(original.assign(z=2 * x), protected.assign(z=2 * x), "y", ["x", "z"])


def test_records_missing_either_value_are_dropped_with_their_categories():
    # 'z' appears only where b is missing: the table is the 2x2 [[20, 10], [10, 20]] of the others
    data = pd.concat([_records([[20, 10], [10, 20]], ["x", "y"], ["u", "v"]),
                      pd.DataFrame({"a": ["z", "x", None], "b": [None, None, "v"]})], ignore_index=True)
    result = contingency_association(data, "a", "b")
    assert result["n"] == 60 and result["dof"] == 1
    assert result["chi2"] == pytest.approx(4 * 25 / 15)


def test_the_originals_figures_are_computed_once_for_several_variants():
    original = _records([[20, 10], [10, 20]], ["x", "y"], ["u", "v"])
    original["c"] = np.tile(["p", "q", "r"], 20)
    first = original.assign(a=np.where(np.arange(60) < 4, "y", original["a"]))
    second = original.assign(b=np.where(np.arange(60) % 7 == 0, "v", original["b"]))
    known = {}
    with_known = [association_loss(original, variant, ["a", "b", "c"], known=known) for variant in (first, second)]
    assert set(known) == {("a", "b"), ("a", "c"), ("b", "c")}
    for variant, table in zip((first, second), with_known):
        pd.testing.assert_frame_equal(table, association_loss(original, variant, ["a", "b", "c"]), check_exact=True)
    # a known pair is read, not computed again
    known[("a", "b")] = {**known[("a", "b")], "cramers_v": 0.5}
    assert association_loss(original, first, ["a", "b"], known=known)["cramers_v"].tolist() == [0.5]
