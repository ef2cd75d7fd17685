"""The real Dagster UI: start the webserver on this code location and find every asset in Chromium."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import json
import shutil
import signal

import pytest
from dagster import DagsterInstance
from playwright.sync_api import sync_playwright

from sdc_dagster.definitions import build_definitions

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A data home with wave 2024 of testdata in its landing folder and registered as a partition."""
    root = tmp_path_factory.mktemp("ui")
    landing = root / "landing" / "testdata"
    landing.mkdir(parents=True)
    shutil.copy(CHECKOUT / "examples" / "data" / "testdata.csv", landing / "2024.csv")
    (root / "dagster").mkdir()
    (root / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with DagsterInstance.from_config(str(root / "dagster")) as instance:
        instance.add_dynamic_partitions("testdata_waves", ["2024"])
    return root


@pytest.fixture(scope="module")
def webserver(home, servers):
    """``sdc ui``: the Dagster webserver and daemon (``dagster dev``) on this code location."""
    port = servers.free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SDC_HOME", "DAGSTER_HOME")}
    log = open(home / "ui.log", "w")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "sdc"), "--home", str(home), "ui", "--port", str(port)],
        cwd=CHECKOUT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        servers.wait_for(f"http://127.0.0.1:{port}/server_info", process)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def page_text(url: str, shown: str, screenshot: Path, *, height: int) -> str:
    """The text of the UI's page at ``url`` in headless Chromium once ``shown`` is on it (the page
    saved to ``screenshot``)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": height})
        page.goto(url, wait_until="networkidle", timeout=120_000)
        page.get_by_text(shown).first.wait_for(timeout=120_000)
        text = page.inner_text("body")
        page.screenshot(path=str(screenshot))
        browser.close()
    return text


@pytest.mark.ui
def test_asset_catalog_lists_every_asset(webserver, home, tmp_path, monkeypatch):
    monkeypatch.setenv("SDC_HOME", str(home))  # the specs the webserver loads, whatever ran before
    monkeypatch.delenv("SDC_SPECS", raising=False)
    keys = build_definitions().resolve_asset_graph().get_all_asset_keys()
    expected = sorted({k.path[-1] for k in keys})
    assert "raw_microdata" in expected and "sdc_report" in expected
    text = page_text(f"{webserver}/assets", "raw_microdata", tmp_path / "catalog.png", height=6000)
    missing = [name for name in expected if name not in text]
    assert not missing, f"asset names not shown in the Dagster UI: {missing}"


LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""
STATUS = "query Status($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"


def graphql(server: str, query: str, variables: dict) -> dict:
    request = urllib.request.Request(
        f"{server}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


@pytest.mark.ui
def test_a_wave_materialises_through_the_webserver(webserver, home):
    """What the UI's "Materialize" button sends: launch the wave job for partition 2024 through the
    webserver's GraphQL API; the daemon dequeues it; wait for the run and find its outputs."""
    params = {
        "selector": {
            "repositoryLocationName": "sdc_dagster.definitions:defs",
            "repositoryName": "__repository__",
            "jobName": "testdata_wave_job",
        },
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "2024"}]},
        "runConfigData": {},
    }
    launched = graphql(webserver, LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    # a run of every step in its own process, on cores another test worker shares (make test: -n 2)
    deadline = time.monotonic() + 600
    status = None
    while time.monotonic() < deadline:
        status = graphql(webserver, STATUS, {"id": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(2)
    assert status == "SUCCESS"
    assert (home / "reports" / "testdata" / "2024.html").is_file()
    assert (home / "storage" / "testdata" / "protected_suppress_k3" / "2024.parquet").is_file()


@pytest.mark.ui
def test_the_release_stage_shows_every_plans_release_checks(webserver, home, tmp_path, monkeypatch):
    """The release rules of every plan are the release stage's asset checks (``<plan>__<check>``):
    its checks page in the UI lists each of them."""
    monkeypatch.setenv("SDC_HOME", str(home))
    monkeypatch.delenv("SDC_SPECS", raising=False)
    graph = build_definitions().resolve_asset_graph()
    expected = sorted(key.name for key in graph.asset_check_keys if key.asset_key.path == ["testdata", "release"])
    assert "suppress_k3__k_anonymity" in expected and "searched__no_direct_identifier" in expected
    text = page_text(f"{webserver}/assets/testdata/release?view=checks", "suppress_k3__k_anonymity",
                     tmp_path / "release_checks.png", height=12000)
    missing = [name for name in expected if name not in text]
    assert not missing, f"release checks not shown in the Dagster UI: {missing}"
