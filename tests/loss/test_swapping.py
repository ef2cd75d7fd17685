"""Information loss after record swapping, sdcMicro's infoLoss (R/infoLoss.R): a table worked out by
hand, and sdcMicro's testdata before and after a swap recounted with pandas."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import swap_information_loss

DATA = Path(__file__).parent.parent / "data" / "sdcmicro" / "infoloss"

# Five persons in three households; the swap moves a person of household 1 from sex 1 to 2 and one of
# household 3 from (B, 2) to (B, 1).
ORIGINAL = pd.DataFrame({"region": ["A", "A", "A", "B", "B"], "sex": [1, 1, 2, 1, 2], "hid": [1, 1, 2, 3, 3]})
SWAPPED = pd.DataFrame({"region": ["A", "A", "A", "B", "B"], "sex": [1, 2, 2, 1, 1], "hid": [1, 1, 2, 3, 3]})
# Cells (subsets in combn order: region, sex, region x sex), (count_o, count_s):
#   A (3, 3), B (2, 2); sex 1 (3, 3), sex 2 (2, 2); A1 (2, 1), A2 (1, 2), B1 (1, 2), B2 (1, 0).
# absD 0 0 0 0 1 1 1 1 (mean 1/2); relabsD 0 0 0 0 1/2 1 1 1 (mean 7/16);
# abssqrtD 0 0 0 0 sqrt2-1 sqrt2-1 sqrt2-1 1 (mean (3 sqrt2 - 2) / 8); noise x - y: -1 twice, 0 four times, 1 twice.


def test_hand_example():
    result = swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"])
    cells = result.cells
    assert cells["subset"].tolist() == [0, 0, 1, 1, 2, 2, 2, 2]
    assert cells["count_o"].tolist() == [3, 2, 3, 2, 2, 1, 1, 1]
    assert cells["count_s"].tolist() == [3, 2, 3, 2, 1, 2, 2, 0]
    assert cells["region"].iloc[2:4].isna().all() and cells["sex"].iloc[:2].isna().all()  # margins
    assert result.overview.to_dict(orient="list") == {"noise": [-1.0, 0.0, 1.0], "cnt": [2, 4, 2],
                                                      "pct": [0.25, 0.5, 0.25]}
    assert result.false_zero == 1 and result.false_nonzero == 0 and result.exclude_zeros is False
    measures = result.measures
    assert list(measures.columns) == ["absD", "abssqrtD", "relabsD"]  # sorted, as sdcMicro's dcast
    assert measures.index.tolist() == ["Min", "10%", "20%", "30%", "40%", "Mean", "Median", "60%", "70%", "80%",
                                       "90%", "95%", "99%", "Max"]
    assert measures.loc["Mean"].tolist() == pytest.approx([0.5, (3 * np.sqrt(2) - 2) / 8, 7 / 16])
    # type 7 quantiles of absD 0 0 0 0 1 1 1 1: h = 7 p; median h = 3.5 -> 1/2, 40% h = 2.8 -> 0, 60% h = 4.2 -> 1
    assert measures["absD"].loc[["Min", "40%", "Median", "60%", "Max"]].tolist() == [0, 0, 0.5, 1, 1]
    # relabsD sorted 0 0 0 0 1/2 1 1 1: 60% h = 4.2 -> 1/2 + 0.2 (1 - 1/2) = 0.6
    assert measures.loc["60%", "relabsD"] == pytest.approx(0.6)
    assert result.cumdistr["absD"].to_dict(orient="list") == {"cat": ["0", "1"], "cnt": [4, 8], "pct": [0.5, 1.0]}
    relabs = result.cumdistr["relabsD"]
    assert relabs["cat"].tolist() == ["[0,0.02]", "[0,0.05]", "[0,0.1]", "[0,0.2]", "[0,0.3]", "[0,0.4]", "[0,0.5]",
                                      "[0,Inf]"]
    assert relabs["cnt"].tolist() == [4, 4, 4, 4, 4, 4, 5, 8]
    # abssqrtD 0.414 three times (in (0.4, 0.5]) and 1
    assert result.cumdistr["abssqrtD"]["cnt"].tolist() == [4, 4, 4, 4, 4, 4, 7, 8]


def test_options_by_hand():
    # exclude_zeros: the cell B2 (1, 0) is left out
    excluded = swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"], exclude_zeros=True)
    assert len(excluded.cells) == 7 and excluded.false_zero == 0 and excluded.exclude_zeros is True
    # only_inner_cells: the four region x sex cells
    inner = swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"], only_inner_cells=True, metric=["absD"])
    assert inner.cells["count_o"].tolist() == [2, 1, 1, 1] and list(inner.measures.columns) == ["absD"]
    assert inner.measures.loc["Mean", "absD"] == 1.0
    # households: first records (A, 1), (A, 2), (B, 1) in both files: no loss
    households = swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"], hid="hid")
    assert households.cells.loc[households.cells["subset"] == 0, "count_o"].tolist() == [2, 1]
    assert households.measures.loc["Max"].tolist() == [0, 0, 0]
    # a custom metric (sdcMicro's documentation example squareD) and other probs
    square = swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"], metric=[], probs=[0.25, 0.5],
                                   custom_metric={"squareD": lambda x, y: (x - y) ** 2})
    assert square.measures.index.tolist() == ["25%", "Mean", "Median"]
    assert square.measures["squareD"].tolist() == [0.0, 0.5, 0.5]
    assert square.cumdistr["squareD"]["cat"].tolist() == ["0", "1"]


def test_testdata_swap_recounted_with_pandas():
    original = pd.read_csv(DATA / "testdata_keys.csv")
    swapped = pd.read_csv(DATA / "testdata_keys_swapped.csv")
    table_vars = ["urbrur", "roof", "water"]
    result = swap_information_loss(original, swapped, table_vars)
    expected = []
    for size in range(1, 4):
        for subset in combinations(table_vars, size):
            counts = pd.concat([original.groupby(list(subset)).size().rename("count_o"),
                                swapped.groupby(list(subset)).size().rename("count_s")], axis=1).fillna(0)
            expected.append(counts)
    x = np.concatenate([c["count_o"].to_numpy() for c in expected])
    y = np.concatenate([c["count_s"].to_numpy() for c in expected])
    assert len(result.cells) == len(x)
    assert sorted(zip(result.cells["count_o"], result.cells["count_s"])) == sorted(zip(x, y))
    assert result.measures.loc["Mean", "absD"] == pytest.approx(np.abs(x - y).mean(), rel=1e-12)
    assert result.measures.loc["90%", "abssqrtD"] == pytest.approx(np.quantile(np.abs(np.sqrt(x) - np.sqrt(y)), 0.9),
                                                                   rel=1e-12)
    assert result.false_zero == int(((x > 0) & (y == 0)).sum())
    assert result.false_nonzero == int(((x == 0) & (y > 0)).sum())
    # every person is counted once in each table of both files
    per_subset = result.cells.groupby("subset")[["count_o", "count_s"]].sum()
    assert (per_subset == len(original)).all().all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metric": ["absD", "maxD"]}, "metric: must be some of absD, relabsD, abssqrtD"),
        ({"metric": []}, "name at least one metric"),
        ({"custom_metric": {"bad": 3}}, r"custom_metric\['bad'\]: must be a function"),
        ({"custom_metric": {"short": lambda x, y: x[:1]}}, "metric 'short': must return one number per table cell"),
        ({"probs": [0.5, 1.5]}, r"probs: must be numbers in \[0, 1\]"),
        ({"quantvals": [0.5]}, "quantvals: must be two or more increasing"),
        ({"exclude_zeros": "yes"}, "exclude_zeros: must be true or false"),
        ({"hid": "household"}, "household id column 'household' is not in the data"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        swap_information_loss(ORIGINAL, SWAPPED, ["region", "sex"], **kwargs)
    with pytest.raises(SDCInputError, match="swapped table variable 'sex' is not in the data"):
        swap_information_loss(ORIGINAL, SWAPPED.drop(columns="sex"), ["region", "sex"])
