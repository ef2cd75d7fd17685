"""The simulated survey of Młodak's combined-risk paper (SPEC §5.7), used as demo data.

SPEC §5.7 describes the design (n = 500, four categorical and three continuous quasi-identifiers)
but not the random draw, so the published tables are reproducible only in shape, not in digits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import check_scalar

#: Categories and probabilities of the categorical quasi-identifiers X1..X4 (SPEC §5.7).
CATEGORICAL_DESIGN: dict[str, tuple[np.ndarray, np.ndarray]] = {
    "X1": (np.arange(1, 3), np.full(2, 1 / 2)),
    "X2": (np.arange(1, 8), np.full(7, 1 / 7)),
    "X3": (np.arange(1, 8), np.array([0.052, 0.014, 0.183, 0.049, 0.217, 0.314, 0.171])),
    "X4": (np.arange(1, 7), np.array([0.028, 0.042, 0.086, 0.038, 0.591, 0.215])),
}

#: Precision p_j of the continuous quasi-identifiers used in the paper's simulation (SPEC §5.7).
SIMULATION_PRECISION: dict[str, float] = {"X5": 0.01, "X6": 0.03, "X7": 0.02}

#: Minimum count of every category of every categorical variable (SPEC §5.7).
MIN_CATEGORY_COUNT = 5

# Redrawing a variable until each category occurs MIN_CATEGORY_COUNT times stops almost surely
# for n = 500 within a few draws; the cap turns a hopeless n (e.g. 40) into an error, not a hang.
_MAX_REDRAWS = 10_000


def _draw_categorical(rng: np.random.Generator, n: int, name: str) -> np.ndarray:
    categories, probabilities = CATEGORICAL_DESIGN[name]
    probabilities = probabilities / probabilities.sum()  # X3's printed probabilities sum to 1.000
    for _ in range(_MAX_REDRAWS):
        codes = rng.choice(categories, size=n, p=probabilities)
        if np.bincount(codes, minlength=categories.max() + 1)[categories].min() >= MIN_CATEGORY_COUNT:
            return codes.astype(np.int64)
    raise SDCInputError(
        f"n: {n} records are too few for every category of {name} to occur at least "
        f"{MIN_CATEGORY_COUNT} times (gave up after {_MAX_REDRAWS} draws)"
    )


def simulate_survey(n: int = 500, *, random_state: int | np.random.Generator | None = None) -> pd.DataFrame:
    """Draw the simulated survey of SPEC §5.7.

    Design (SPEC §5.7): X1 uniform on {1,2}; X2 uniform on {1..7}; X3 on {1..7} with probabilities
    0.052, 0.014, 0.183, 0.049, 0.217, 0.314, 0.171; X4 on {1..6} with 0.028, 0.042, 0.086, 0.038,
    0.591, 0.215; X5 ~ U[2000, 10000]; X6 ~ N(50, sd 10); X7 ~ F(5, 20). Each categorical variable
    is redrawn as a whole until every one of its categories occurs at least 5 times.

    Parameters
    ----------
    n : int
        Number of records (at least 35, since X2 and X3 have seven categories of 5 records each).
    random_state : int, numpy Generator or None
        Seed or generator; the same seed gives the same frame.

    Returns
    -------
    DataFrame with columns ``record_id`` (1..n), ``X1``..``X4`` (int64 category codes),
    ``X5``..``X7`` (float64) and ``weight``. The weight is not part of the paper's design (it
    treats the data as a census); it is a positive design weight for demonstrating the weighted
    variant of SPEC §5.6, drawn as integers uniform on 50..150 (float64).

    References
    ----------
    Młodak, "A method of comprehensive disclosure-risk assessment for microdata" (S000).
    """
    n = check_scalar(n, "n", integer=True, low=7 * MIN_CATEGORY_COUNT)
    rng = np.random.default_rng(random_state)
    frame = {"record_id": np.arange(1, n + 1, dtype=np.int64)}
    for name in CATEGORICAL_DESIGN:
        frame[name] = _draw_categorical(rng, n, name)
    frame["X5"] = rng.uniform(2000.0, 10000.0, size=n)
    frame["X6"] = rng.normal(50.0, 10.0, size=n)
    frame["X7"] = rng.f(5.0, 20.0, size=n)
    frame["weight"] = rng.integers(50, 151, size=n).astype(np.float64)
    return pd.DataFrame(frame)
