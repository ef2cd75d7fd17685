"""Fixtures for in-process Dagster runs: a private data home and an ephemeral instance."""

import shutil
from pathlib import Path

import pytest
from dagster import instance_for_test

CHECKOUT = Path(__file__).resolve().parents[2]
EXAMPLES = CHECKOUT / "examples"


@pytest.fixture
def sdc_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SDC_HOME", str(home))
    return home


@pytest.fixture
def testdata_only_specs(tmp_path) -> Path:
    folder = tmp_path / "specs"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "testdata.yaml", folder / "testdata.yaml")
    shutil.copy(EXAMPLES / "data" / "testdata.csv", folder / "data" / "testdata.csv")
    return folder


@pytest.fixture
def instance():
    with instance_for_test() as inst:
        yield inst
