"""Shared fixtures: the 25-record worked example of S003 Table 1 (SPEC §9.2)."""

from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
VARIABLES = ["STC", "WYN", "STAZ", "ODL"]


@pytest.fixture(scope="session")
def table1() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(original, rank-swapped) files of S003 Table 1, indexed by ID."""
    table = pd.read_csv(DATA / "seed003_table1.csv", index_col="ID")
    original = table[[f"{v}_O" for v in VARIABLES]].set_axis(VARIABLES, axis=1)
    swapped = table[[f"{v}_R" for v in VARIABLES]].set_axis(VARIABLES, axis=1)
    return original, swapped


@pytest.fixture(scope="session")
def table1_scales() -> dict[str, str]:
    """Scales used for Table 2: STC nominal (2), the rest continuous."""
    return {"STC": "nominal", "WYN": "continuous", "STAZ": "continuous", "ODL": "continuous"}
