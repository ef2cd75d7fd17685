"""Loss of a grid table perturbed cell by cell (SPEC §9.10 with the §9.1 distances), worked by hand."""

import math

import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss.tables import perturbation_loss


def test_perturbation_loss_by_hand():
    original = pd.DataFrame({"total": [10, 4], "sex_1": [6, 0], "sex_2": [4, 4],
                             "age_1": [1, 0], "age_2": [5, 4], "age_3": [4, 0]})
    perturbed = pd.DataFrame({"total": [12, 4], "sex_1": [6, 0], "sex_2": [3, 5],
                              "age_1": [0, 0], "age_2": [5, 4], "age_3": [4, 0]})
    loss = perturbation_loss(original, perturbed)
    assert list(loss.index) == ["total", "sex", "age"]
    # total: deviations 2, 0 -> mean 1; relative 2/10, 0/4 -> 0.1; one of two changed
    assert loss.loc["total", "mean_absolute_deviation"] == 1.0
    assert loss.loc["total", "mean_relative_deviation"] == pytest.approx(0.1)
    assert loss.loc["total", "share_changed"] == 0.5
    # sex: four counts 6, 4, 0, 4 -> deviations 0, 1, 0, 1: mean 0.5, relative (1/4 + 1/4) / 3 nonzero counts
    assert loss.loc["sex", "mean_absolute_deviation"] == 0.5
    assert loss.loc["sex", "mean_relative_deviation"] == pytest.approx((0 + 0.25 + 0.25) / 3)
    assert loss.loc["sex", "share_changed"] == 0.5
    # SPEC §9.1: (4) |d| / max|d| = (0, 1, 0, 1) -> 0.5; (5) the same squared -> 0.5;
    # (6) (2/pi) arctan|d| = (0, 0.5, 0, 0.5) since arctan 1 = pi/4 -> 0.25
    assert loss.loc["sex", "distance_max_abs"] == pytest.approx(0.5)
    assert loss.loc["sex", "distance_max_sq"] == pytest.approx(0.5)
    assert loss.loc["sex", "distance_arctan"] == pytest.approx(0.25)
    # age: deviations 1, 0, 0 / 0, 0, 0: age_1 of 1 perturbed to 0 (relative 1), one of six changed
    assert loss.loc["age", "mean_absolute_deviation"] == pytest.approx(1 / 6)
    assert loss.loc["age", "mean_relative_deviation"] == pytest.approx(1 / 4)
    assert loss.loc["age", "share_changed"] == pytest.approx(1 / 6)
    assert loss.loc["age", "distance_arctan"] == pytest.approx(2 / math.pi * math.atan(1) / 6)
    assert loss.loc["age", "max_absolute_deviation"] == 1


def test_perturbation_loss_covers_the_2021_variables_and_checks_rows():
    columns = ["total", "sex_1", "sex_2", "age_1", "age_2", "age_3", "employed", "birth_1", "birth_2", "birth_3"]
    original = pd.DataFrame([[5, 2, 3, 1, 3, 1, 2, 4, 1, 0]], columns=columns)
    perturbed = original.assign(employed=3)
    loss = perturbation_loss(original, perturbed)
    assert list(loss.index) == ["total", "sex", "age", "employed", "birth"]
    assert loss.loc["employed", "mean_relative_deviation"] == pytest.approx(0.5)
    assert loss.loc[["total", "sex", "age", "birth"], "share_changed"].eq(0).all()
    with pytest.raises(SDCInputError, match="same rows"):
        perturbation_loss(original, perturbed.set_axis([7]))
