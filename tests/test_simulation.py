"""The simulated survey of SPEC §5.7: design, reproducibility and the shape of the published tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import complete_key_frequencies
from sdc_dagster.synthetic.survey import CATEGORICAL_DESIGN, simulate_survey


def test_design():
    data = simulate_survey(random_state=1)
    assert list(data.columns) == ["record_id", "X1", "X2", "X3", "X4", "X5", "X6", "X7", "weight"]
    assert len(data) == 500
    assert data["record_id"].tolist() == list(range(1, 501))
    for name, (categories, _) in CATEGORICAL_DESIGN.items():
        counts = data[name].value_counts()
        assert set(counts.index) == set(categories.tolist())
        assert counts.min() >= 5  # SPEC §5.7: every category at least 5 times
    assert data["X5"].between(2000, 10000).all()
    assert data["X6"].mean() == pytest.approx(50, abs=2.5) and data["X6"].std() == pytest.approx(10, abs=1.5)
    assert (data["X7"] > 0).all() and data["X7"].mean() == pytest.approx(20 / 18, abs=0.2)  # F(5,20) mean
    assert data["weight"].between(50, 150).all() and (data["weight"] == data["weight"].round()).all()


def test_x3_probabilities_follow_design():
    data = simulate_survey(20000, random_state=2)
    share = data["X3"].value_counts(normalize=True).sort_index().to_numpy()
    np.testing.assert_allclose(share, CATEGORICAL_DESIGN["X3"][1], atol=0.01)


def test_reproducible():
    pd.testing.assert_frame_equal(simulate_survey(random_state=3), simulate_survey(random_state=3))
    assert not simulate_survey(random_state=3).equals(simulate_survey(random_state=4))
    rng = np.random.default_rng(9)
    assert len(simulate_survey(100, random_state=rng)) == 100


def test_too_few_records():
    with pytest.raises(SDCInputError, match="n"):
        simulate_survey(20)


def test_published_individual_risk_shape():
    """SPEC §5.7: 20.0% / 35.6% / 63.4% violate 2-/3-/5-anonymity, global 1/f risk 41.2%.

    The draw is not published; averaged over 10 draws the shares must be close."""
    shares, risk = [], []
    for seed in range(10):
        data = simulate_survey(random_state=seed)
        fk = complete_key_frequencies(data, ["X1", "X2", "X3", "X4"])["fk"].to_numpy()
        shares.append([(fk < 2).mean(), (fk < 3).mean(), (fk < 5).mean()])
        risk.append((1 / fk).mean())
    np.testing.assert_allclose(np.mean(shares, axis=0), [0.200, 0.356, 0.634], atol=0.05)
    assert np.mean(risk) == pytest.approx(0.412, abs=0.04)
