"""The real Dagster UI: start the webserver on this code location and find every asset in Chromium."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from sdc_dagster.definitions import build_definitions

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dagster-webserver exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(url)


@pytest.fixture
def webserver(tmp_path):
    port = free_port()
    env = dict(os.environ, SDC_HOME=str(tmp_path / "home"), DAGSTER_HOME=str(tmp_path / "dagster"))
    Path(env["DAGSTER_HOME"]).mkdir()
    log = open(tmp_path / "webserver.log", "w")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-w", str(CHECKOUT / "workspace.yaml"),
         "-h", "127.0.0.1", "-p", str(port)],
        cwd=CHECKOUT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/server_info", process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.mark.ui
def test_asset_catalog_lists_every_asset(webserver, tmp_path):
    keys = build_definitions().resolve_asset_graph().get_all_asset_keys()
    expected = sorted({k.path[-1] for k in keys})
    assert "raw_microdata" in expected and "sdc_report" in expected
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 6000})
        page.goto(f"{webserver}/assets", wait_until="networkidle", timeout=120_000)
        page.get_by_text("raw_microdata").first.wait_for(timeout=120_000)
        text = page.inner_text("body")
        page.screenshot(path=str(tmp_path / "catalog.png"))
        browser.close()
    missing = [name for name in expected if name not in text]
    assert not missing, f"asset names not shown in the Dagster UI: {missing}"
