"""Reference inputs of the table tests (copies of ../shared/data/tables, see tests/data/tables/README.md)."""

from pathlib import Path

import pandas as pd
import pytest

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
