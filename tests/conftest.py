"""The suite never reads or writes a user's data home: ``SDC_HOME`` (and the Dagster instance under
it) is a fresh temporary folder for the session, set before any test module builds the code
location (``sdc_dagster.definitions`` reads the specs of the data home). Tests that need
their own home set ``SDC_HOME`` themselves.

``make test`` runs the suite on two pytest-xdist workers (``-n 2 --dist loadgroup
--no-loadscope-reorder``): each worker is a session of its own (its own ``SDC_HOME``), the tests of a
module sharing a module-scoped fixture run on one worker (the fixture is computed once), and the
public corpus runs last (see :func:`pytest_collection_modifyitems`)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import settings

CORPUS = Path(__file__).resolve().parent / "corpus"


# CI runs every property test on the same examples, so a run is reproducible; local runs keep exploring
# new examples (every counterexample found that way becomes a test of its own).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config):
    home = tempfile.mkdtemp(prefix="sdc-test-home-")
    config._sdc_test_home = home
    os.environ["SDC_HOME"] = home
    os.environ.pop("DAGSTER_HOME", None)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Group and order the tests for the two xdist workers (a serial run only sees the order).

    - The tests of a module that share a module-scoped fixture (a whole chain run, a built wheel, a
      webserver) form one ``xdist_group``, so one worker computes the fixture once.
    - The public corpus (``tests/corpus/``) runs last: it keeps both cores busy by itself (two files at
      a time), so the other worker's last tests overlap it and no core idles at the end of the run.
    """
    for item in items:
        definitions = getattr(item, "_fixtureinfo", None)
        shared = definitions is not None and any(
            fixturedefs[-1].scope == "module" for fixturedefs in definitions.name2fixturedefs.values())
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    items.sort(key=lambda item: item.path.is_relative_to(CORPUS))


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_sdc_test_home", ""), ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 300) -> None:
    """Until ``url`` answers 200; fails at once, with the server's output, if the server exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout is not None else ""
            raise AssertionError(f"the server exited with {process.returncode}:\n{output}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(url)


@pytest.fixture(scope="session")
def servers():
    """Helpers for tests that start the real webserver: ``free_port()`` and ``wait_for(url, process)``."""
    return SimpleNamespace(free_port=_free_port, wait_for=_wait_for)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty working directory and data home, as for a new user (no SDC_SPECS: demo specs + own);
    the CLI tests' data home (a test module may define its own)."""
    root = tmp_path / "home"
    monkeypatch.setenv("SDC_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster"))
    monkeypatch.delenv("SDC_SPECS", raising=False)
    monkeypatch.chdir(tmp_path)
    return root
