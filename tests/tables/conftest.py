"""Reference inputs of the table tests (copies of ../shared/data/tables, see tests/data/tables/README.md)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st

DATA = Path(__file__).resolve().parents[1] / "data" / "tables"


def read(name: str) -> pd.DataFrame:
    """A reference input, codes read as text."""
    frame = pd.read_csv(DATA / name)
    return frame


@pytest.fixture
def c4_tables():
    """The two linked tables of c4: counts by region under the county (T1) and big/small (T2) hierarchies."""
    import sdc_dagster.tables as tables

    inner = read("c4_linked_input_inner.csv")
    hierarchies = read("c4_linked_hierarchies.csv").rename(columns={"mapsTo": "parent", "mapsFrom": "child"})
    return [
        tables.tabulate(inner, {"region": hierarchies.loc[hierarchies["table"] == name, ["parent", "child"]]}, freq="n")
        for name in ("T1", "T2")
    ]


@st.composite
def small_tables(draw):
    """Microdata of a random flat 2- or 3-dimensional frequency table (2 to 4 categories a
    dimension, counts 0 to 12 in column ``n``), for the hypothesis properties of the secondary
    suppression methods."""
    shape = draw(st.lists(st.integers(2, 4), min_size=2, max_size=3))
    n = int(np.prod(shape))
    counts = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    grid = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    data = pd.DataFrame({f"d{i}": [f"c{v}" for v in g.ravel()] for i, g in enumerate(grid)})
    data["n"] = counts
    return data
