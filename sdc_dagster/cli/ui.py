"""``sdc ui``: the Dagster webserver and daemon (``dagster dev``) on this code location, stopped
cleanly with the runs left in flight marked canceled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sdc_dagster.cli.home import dagster_instance, prepare_environment
from sdc_dagster.cli.status import EXIT_OK

#: Seconds `sdc ui` waits for `dagster dev` to stop its services before ending what is left.
UI_GRACE_SECONDS = 5.0


def _end_process_group(group: int, grace: float) -> None:
    """SIGTERM every process left in process group ``group``, then SIGKILL after ``grace`` seconds."""
    if not hasattr(os, "killpg"):
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _cancel_unfinished_runs(message: str) -> None:
    """Mark the runs still starting or started in the instance as canceled (their processes are gone)."""
    from dagster import DagsterRunStatus, RunsFilter

    with dagster_instance() as instance:
        statuses = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
        for run in instance.get_runs(filters=RunsFilter(statuses=statuses)):
            instance.report_run_canceled(run, message=message)


def run_ui(home: str | None = None, port: int = 3000, *, out=None) -> int:
    """Start ``dagster dev`` (webserver and daemon) on this code location, in its own process group.

    The first SIGINT (Ctrl-C) or SIGTERM asks ``dagster dev`` to stop its services; whatever is still
    running :data:`UI_GRACE_SECONDS` later (run workers of runs in flight, code servers) is terminated
    with the whole group, and runs left unfinished are marked canceled. A second signal ends the
    group at once."""
    out = out or sys.stderr
    root = prepare_environment(home)
    import sdc_dagster

    command = [sys.executable, "-m", "dagster", "dev", "-m", "sdc_dagster.definitions", "-a", "defs", "-p", str(port)]
    # The code server and run workers import sdc_dagster from where this process did.
    package_root = str(Path(sdc_dagster.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    signals: list[int] = []
    started: list[subprocess.Popen] = []

    def stop(signum, frame) -> None:
        signals.append(signum)
        if not started:
            return
        if len(signals) == 1:
            print("\nsdc ui: stopping the Dagster webserver and daemon ...", file=out, flush=True)
            started[0].send_signal(signal.SIGINT)
        else:
            _end_process_group(started[0].pid, 0.0)

    # Handlers first: a child inherits an ignored SIGINT (a shell's background job) but not a handler,
    # so `dagster dev` always gets the default SIGINT behaviour (stop its services).
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    process = subprocess.Popen(command, cwd=root, env=env, start_new_session=True)
    started.append(process)
    if signals:
        process.send_signal(signal.SIGINT)
    try:
        while process.poll() is None and not signals:
            time.sleep(0.2)
        deadline = time.monotonic() + UI_GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        _end_process_group(process.pid, 2.0)
        process.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _cancel_unfinished_runs("sdc ui stopped while the run was in flight")
    print("sdc ui: stopped", file=out, flush=True)
    return EXIT_OK if signals else process.returncode
