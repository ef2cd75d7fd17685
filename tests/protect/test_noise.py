"""Noise addition (SPEC §8.5): the realised noise variance matches the stated one."""

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import add_noise

N = 200_000
# relative standard error of a sample variance of normal noise: sqrt(2 / n) ~ 0.3%; 5 SE allowed
TOL = 5 * np.sqrt(2 / N)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    x = rng.normal(100, 15, N)
    return pd.DataFrame({"x": x, "y": 0.6 * x + rng.normal(0, 5, N), "z": rng.lognormal(8, 0.5, N)})


def test_additive_noise_variance(frame):
    out = add_noise(frame, ["x", "z"], amount=0.5, random_state=1)
    for column in ["x", "z"]:
        noise = out[column] - frame[column]
        assert noise.var() == pytest.approx((0.5 * frame[column].std()) ** 2, rel=TOL)
        assert abs(noise.mean()) < 5 * noise.std() / np.sqrt(N)


def test_multiplicative_noise_variance(frame):
    out = add_noise(frame, ["z"], amount=0.2, method="multiplicative", random_state=2)
    relative = out["z"] / frame["z"] - 1
    assert relative.var() == pytest.approx(0.04, rel=TOL)


def test_correlated_noise_covariance(frame):
    out = add_noise(frame, ["x", "y"], amount=0.3, method="correlated", random_state=3)
    noise = (out[["x", "y"]] - frame[["x", "y"]]).to_numpy()
    expected = 0.3 * np.cov(frame[["x", "y"]].to_numpy(), rowvar=False)
    np.testing.assert_allclose(np.cov(noise, rowvar=False), expected, rtol=3 * TOL)
    # correlation of the noise equals that of the data
    assert np.corrcoef(noise, rowvar=False)[0, 1] == pytest.approx(frame["x"].corr(frame["y"]), abs=0.01)


def test_reproducible_and_missing_kept():
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0]})
    before = frame.copy()
    a = add_noise(frame, ["x"], random_state=4)
    pd.testing.assert_frame_equal(a, add_noise(frame, ["x"], random_state=4))
    pd.testing.assert_frame_equal(frame, before)
    assert np.isnan(a.loc[1, "x"]) and (a["x"] != frame["x"]).sum() == 4  # NaN != NaN too
    with pytest.raises(SDCInputError, match="method"):
        add_noise(frame, ["x"], method="uniform")
    with pytest.raises(SDCInputError, match="amount"):
        add_noise(frame, ["x"], amount=-1)


def test_correlated_noise_with_missing_values_uses_pairwise_covariance(frame):
    holes = frame[["x", "y"]].copy()
    rng = np.random.default_rng(9)
    holes.loc[rng.random(N) < 0.2, "x"] = np.nan
    holes.loc[rng.random(N) < 0.2, "y"] = np.nan
    out = add_noise(holes, ["x", "y"], amount=0.3, method="correlated", random_state=3)
    assert np.array_equal(out.isna().to_numpy(), holes.isna().to_numpy())
    noise = (out - holes).dropna().to_numpy()
    # the covariance of the data (the holes are random, so the pairwise estimate is unbiased)
    expected = 0.3 * np.cov(frame[["x", "y"]].to_numpy(), rowvar=False)
    np.testing.assert_allclose(np.cov(noise, rowvar=False), expected, rtol=0.03)
