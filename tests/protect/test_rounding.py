"""Rounding (SPEC §8.7, §13 item 11) and subsampling (SPEC §8.4)."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import rounding, subsample

Z999 = norm.ppf(1 - 0.001 / 2)


def test_deterministic_rounding_to_nearest_multiple():
    frame = pd.DataFrame({"x": [136.5, 137.5, 132.4, 140.0, np.nan], "n": [1, 2, 3, 7, 8]})
    out = rounding(frame, ["x"], base=5)
    assert out["x"].tolist()[:4] == [135.0, 140.0, 130.0, 140.0] and np.isnan(out["x"].iloc[4])
    ints = rounding(frame, ["n"], base=5)
    assert ints["n"].tolist() == [0, 0, 5, 5, 10] and ints["n"].dtype == np.int64


def test_unbiased_random_rounding_probability_spec_13_11():
    # 136.5 with base 5: unbiased P(up to 140) = (136.5 - 135) / 5 = 0.3 (not the seed's 0.65)
    n = 100_000
    frame = pd.DataFrame({"x": np.full(n, 136.5)})
    out = rounding(frame, ["x"], base=5, method="random", random_state=1)
    assert set(out["x"].unique()) == {135.0, 140.0}
    share_up = (out["x"] == 140).mean()
    assert abs(share_up - 0.3) <= Z999 * np.sqrt(0.3 * 0.7 / n)
    assert abs(out["x"].mean() - 136.5) <= Z999 * 5 * np.sqrt(0.21 / n)
    fixed = rounding(frame, ["x"], base=5, method="random", probability_up=0.65, random_state=1)
    assert abs((fixed["x"] == 140).mean() - 0.65) <= Z999 * np.sqrt(0.65 * 0.35 / n)
    on_point = rounding(pd.DataFrame({"x": [135.0] * 100}), ["x"], base=5, method="random", probability_up=1.0)
    assert (on_point["x"] == 135.0).all()


def test_rounding_reproducible_and_validated():
    frame = pd.DataFrame({"x": np.linspace(0, 100, 1001)})
    a = rounding(frame, ["x"], base=10, method="random", random_state=3)
    pd.testing.assert_frame_equal(a, rounding(frame, ["x"], base=10, method="random", random_state=3))
    with pytest.raises(SDCInputError, match="base"):
        rounding(frame, ["x"], base=0)
    with pytest.raises(SDCInputError, match="probability_up"):
        rounding(frame, ["x"], base=1, probability_up=0.5)


def test_subsample_size_order_and_reproducibility():
    frame = pd.DataFrame({"x": range(1000)}, index=[f"r{i}" for i in range(1000)])
    a = subsample(frame, fraction=0.25, random_state=5)
    assert len(a) == 250 and a.index.isin(frame.index).all() and a["x"].is_monotonic_increasing
    pd.testing.assert_frame_equal(a, subsample(frame, fraction=0.25, random_state=5))
    assert not a.index.equals(subsample(frame, fraction=0.25, random_state=6).index)
    with pytest.raises(SDCInputError, match="fraction"):
        subsample(frame, fraction=0)


def test_subsample_whole_households_and_rescaled_weights():
    # 5 households of sizes 1..5 (15 records); fraction 0.4 draws round(0.4 * 5) = 2 households
    household = np.repeat([10, 20, 30, 40, 50], [1, 2, 3, 4, 5])
    frame = pd.DataFrame({"hh": household, "w": np.full(15, 3), "x": np.arange(15)})
    before = frame.copy()
    out = subsample(frame, fraction=0.4, household="hh", weight="w", random_state=11)
    pd.testing.assert_frame_equal(frame, before)
    drawn = out["hh"].unique()
    assert len(drawn) == 2
    # every record of a drawn household is released, none of the others
    assert out.index.tolist() == frame.index[frame["hh"].isin(drawn)].tolist()
    # weights scaled by H / h = 5 / 2
    assert out["w"].tolist() == [7.5] * len(out)
    # records without households: weights scaled by n / m = 15 / 3
    records = subsample(frame, fraction=0.2, weight="w", random_state=11)
    assert len(records) == 3 and records["w"].tolist() == [15.0] * 3
    with pytest.raises(SDCInputError, match="'hh'.*complete"):
        subsample(frame.assign(hh=frame["hh"].where(frame["x"] > 0)), fraction=0.5, household="hh")
    with pytest.raises(SDCInputError, match="'nope'"):
        subsample(frame, fraction=0.5, weight="nope")
