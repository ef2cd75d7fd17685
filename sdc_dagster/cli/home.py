"""What every ``sdc`` command prepares or resolves first: the data home and the Dagster instance
under it (with its settings and the tags of the process that runs a wave), and the survey names
given on the command line, checked against the specs that load."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import yaml

from sdc_dagster.cli.status import EXIT_USAGE
from sdc_dagster.files import process_alive, sweep_temporary_files, write_atomic

# `sdc` prints each spec it skips itself (sdc_dagster.definitions logs them for the UI's code location).
logging.getLogger("sdc_dagster.definitions").addHandler(logging.NullHandler())


# At exit the interpreter's final collections traverse the whole heap (1.4 s after a testdata wave)
# to free what the process is about to give back anyway: the heap goes to the permanent generation
# first, so they find nothing to traverse.
atexit.register(gc.freeze)


@contextmanager
def start_up_collection():
    """A command's start-up without cyclic garbage collection: the modules imported, the specs read,
    the Dagster definitions built make objects that live as long as the process (six full
    collections, about 1 s of a testdata ``sdc run``, found nothing to free). Yields ``started``: a
    call moves every object alive to the permanent generation (``gc.freeze``), so that the full
    collections during the run do not traverse them again (about 0.5 s), and turns collection on.
    The block's end leaves the collector as it found it (the objects frozen return to it)."""
    enabled = gc.isenabled()

    def started() -> None:
        gc.freeze()
        if enabled:
            gc.enable()

    gc.disable()
    try:
        yield started
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


#: Settings of the Dagster instance ``sdc`` creates: no telemetry, no community sign-up modal.
INSTANCE_DEFAULTS = {"telemetry": {"enabled": False}, "nux": {"enabled": False}}


def instance_settings(dagster_home: Path) -> None:
    """Write :data:`INSTANCE_DEFAULTS` into ``dagster.yaml``, keeping every setting already there."""
    config_file = dagster_home / "dagster.yaml"
    config = (yaml.safe_load(config_file.read_text()) if config_file.exists() else None) or {}
    missing = {key: value for key, value in INSTANCE_DEFAULTS.items() if key not in config}
    if missing:
        write_atomic(config_file, yaml.safe_dump({**config, **missing}, sort_keys=False))


def dagster_instance():
    """``DagsterInstance.get()`` for ``DAGSTER_HOME``, created under an exclusive file lock there.

    Creating the instance creates Dagster's SQLite tables on a new home; two ``sdc`` processes
    starting at once (two waves run side by side) would both create them, and one fails with
    "table runs already exists". The lock serialises that step only; the runs go on in parallel.
    (Where ``fcntl`` does not exist, Windows, there is no lock.)
    """
    from dagster import DagsterInstance

    try:
        import fcntl
    except ImportError:
        return DagsterInstance.get()
    with open(Path(os.environ["DAGSTER_HOME"]) / ".sdc-instance.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return DagsterInstance.get()


def _wal_commits_without_fsync(dbapi_connection, _record) -> None:
    """SQLAlchemy ``connect`` hook: ``PRAGMA synchronous=NORMAL`` on a SQLite connection to a database
    in WAL mode (consistent after a crash; a power cut may lose the last events, never corrupt the
    file). Rollback-journal databases keep SQLite's default (FULL)."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        if dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def _one_partition(records_filter) -> tuple | None:
    """``(asset key, partition)`` of a materialisation filter that names one asset and one partition
    and nothing else, or None."""
    from dagster import AssetRecordsFilter

    if not isinstance(records_filter, AssetRecordsFilter) or len(records_filter.asset_partitions or ()) != 1:
        return None
    key, partition = records_filter.asset_key, records_filter.asset_partitions[0]
    return (key, partition) if records_filter == AssetRecordsFilter(asset_key=key, asset_partitions=[partition]) else None


@contextmanager
def quick_event_log(instance, run_id: str):
    """The run ``run_id`` of ``instance`` stores its events without an fsync each and looks its
    wave up in the instance's dynamic partitions once.

    Dagster's SQLite event log opens a new connection for every event (about 250 in a wave) and
    closes it again: the commit syncs the WAL and closing the last connection checkpoints the WAL
    into the database and deletes it, 10-20 ms an event, seconds per wave. Within this block the
    WAL databases commit with ``synchronous=NORMAL`` (:func:`_wal_commits_without_fsync`) and one
    idle connection is held open to the event log's index and to the run's own database (opened
    after the run's first event created it), so a closing connection is never the last one; the
    WAL is checkpointed when the block ends. Other event log storages are left as they are.

    Every input of every step asks whether the wave is one of the survey's dynamic partitions (a
    query each, about 40 in a wave); a partition found stays found for the block (``sdc`` adds
    waves and never deletes them), so each is asked once.

    Every asset check result asks for the latest materialisation of its asset's partition (the one
    its step has just stored: a query each, about 25 in a wave), as the survey assets ask for the
    wave's ``raw_microdata`` materialisation; the answer to such a question (one asset, one
    partition, the latest record) is kept until this run stores a new materialisation of that asset.
    """
    from dagster import DagsterEventType
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    found: set[tuple[str, str]] = set()
    ask = instance.has_dynamic_partition

    def has_dynamic_partition(partitions_def_name: str, partition_key: str) -> bool:
        if (partitions_def_name, partition_key) not in found and ask(partitions_def_name, partition_key):
            found.add((partitions_def_name, partition_key))
        return (partitions_def_name, partition_key) in found

    latest: dict[tuple, object] = {}
    fetch = instance.fetch_materializations

    def fetch_materializations(records_filter, limit: int, cursor: str | None = None, ascending: bool = False):
        key = _one_partition(records_filter) if limit == 1 and cursor is None and not ascending else None
        if key is None:
            return fetch(records_filter, limit, cursor=cursor, ascending=ascending)
        if key not in latest:
            latest[key] = fetch(records_filter, limit)
        return latest[key]

    storage = instance.event_log_storage
    held: list[sqlite3.Connection] = []

    def forget(entry) -> None:
        if entry.dagster_event is not None and entry.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            stored = entry.dagster_event.asset_key
            for key in [key for key in latest if key[0] == stored]:
                del latest[key]

    def hold(_entry) -> None:
        if held:
            return
        for shard in (INDEX_SHARD_NAME, run_id):
            path = Path(storage.path_for_shard(shard))
            if path.is_file():
                connection = sqlite3.connect(path, check_same_thread=False)
                connection.execute("SELECT count(*) FROM sqlite_master").fetchall()  # maps the WAL index
                held.append(connection)

    listening = hasattr(storage, "path_for_shard") and not event.contains(Engine, "connect",
                                                                          _wal_commits_without_fsync)
    if listening:  # the per-run SQLite event log (and not inside another such block)
        event.listen(Engine, "connect", _wal_commits_without_fsync)
    if hasattr(storage, "path_for_shard"):
        instance.add_event_listener(run_id, hold)
    instance.add_event_listener(run_id, forget)
    instance.has_dynamic_partition = has_dynamic_partition
    instance.fetch_materializations = fetch_materializations
    try:
        yield
    finally:
        del instance.has_dynamic_partition, instance.fetch_materializations  # the instance's own methods again
        if listening:  # connections opened after the block commit as SQLite's default does
            event.remove(Engine, "connect", _wal_commits_without_fsync)
        for connection in held:
            connection.close()


def run_job(job, instance, *, run_id: str | None = None, **options):
    """``job.execute_in_process(**options)`` on ``instance``, a failed step not raising, inside
    :func:`quick_event_log`: how ``sdc run``, ``sdc demo`` and the grid chain run a job. ``run_id``:
    the run's id when the caller needs it before the run (its log file, its listeners); a new one
    otherwise."""
    from dagster._core.utils import make_new_run_id

    run_id = run_id or make_new_run_id()
    with quick_event_log(instance, run_id):
        return job.execute_in_process(instance=instance, raise_on_error=False, run_id=run_id, **options)


def prepare_environment(home: str | None) -> Path:
    """Set ``SDC_HOME`` (resolved, so child processes agree) and ``DAGSTER_HOME`` (default: under
    it, with :data:`INSTANCE_DEFAULTS`), and return the data home."""
    if home:
        os.environ["SDC_HOME"] = str(Path(home).resolve())
    from sdc_dagster.resources.storage import sdc_home

    root = sdc_home()
    os.environ["SDC_HOME"] = str(root)
    os.environ.setdefault("DAGSTER_HOME", str(root / "dagster"))
    dagster_home = Path(os.environ["DAGSTER_HOME"])
    dagster_home.mkdir(parents=True, exist_ok=True)
    instance_settings(dagster_home)
    sweep_temporary_files(root)  # half-written files of killed sdc processes
    return root


def unsafe_names(command: str, out, *names: tuple[str, str | None]) -> bool:
    """Print the rule broken by each name given on the command line (``(kind, value)``, kinds of
    :data:`sdc_dagster.names.RULES`; None: not given) that is not a safe name; whether there was one."""
    from sdc_dagster.names import name_problem

    problems = [name_problem(kind, value) for kind, value in names if value is not None]
    for problem in filter(None, problems):
        print(f"sdc {command}: {problem}", file=out)
    return any(problems)


def spec_catalogue(command: str, out, survey_name: str | None = None):
    """The specs that load (survey -> spec) and the broken spec files meant for ``survey_name``
    (:func:`sdc_dagster.spec.scan_specs`); every other broken spec file is skipped with one warning line."""
    from sdc_dagster.resources.storage import spec_folders
    from sdc_dagster.spec import scan_specs

    specs, broken = scan_specs(spec_folders())
    known = {spec.survey: spec for spec in specs}
    claimed = [b for b in broken if survey_name in b.surveys and survey_name not in known]
    for spec in broken:
        if spec not in claimed:
            print(f"sdc {command}: warning: skipped the survey spec {spec.summary()}", file=out, flush=True)
    return known, claimed


def unknown_survey(command: str, survey_name: str, known, out) -> int:
    """Say that survey ``survey_name`` is unknown, listing ``known``; :data:`EXIT_USAGE`."""
    print(f"sdc {command}: no survey {survey_name!r}; known: {', '.join(sorted(known)) or 'none'} "
          "(draft one with: sdc init NAME --from FILE)", file=out)
    return EXIT_USAGE


def known_surveys(outputs: Path) -> set[str]:
    """The surveys of the specs that load and of the folders in ``outputs`` (reports or releases of a
    survey whose spec is gone)."""
    from sdc_dagster.resources.storage import spec_folders
    from sdc_dagster.spec import scan_specs

    folders = {p.name for p in outputs.iterdir() if p.is_dir()} if outputs.is_dir() else set()
    return {spec.survey for spec in scan_specs(spec_folders())[0]} | folders


#: Tags of a run started by ``sdc run`` or ``sdc demo``: the process that executes it, on which host.
RUN_PROCESS_TAGS = ("sdc/pid", "sdc/host")


def run_process_tags() -> dict[str, str]:
    import socket

    return dict(zip(RUN_PROCESS_TAGS, (str(os.getpid()), socket.gethostname())))


def fail_abandoned_runs(instance) -> list[str]:
    """Mark failed the runs ``sdc`` started on this host whose process is gone (killed mid-way: they
    would stay STARTED forever); runs of live processes (other waves running now) and runs the UI's
    daemon started are left alone. Returns the run ids marked."""
    import socket

    from dagster import DagsterRunStatus, RunsFilter

    host = socket.gethostname()
    marked = []
    statuses = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
    for run in instance.get_runs(filters=RunsFilter(statuses=statuses, tags={"sdc/host": host})):
        pid = run.tags.get("sdc/pid", "")
        if pid.isdigit() and not process_alive(int(pid)):
            instance.report_run_failed(run, message=f"the sdc process {pid} that ran it ended before the run "
                                                    "finished (killed); nothing of this run was released")
            marked.append(run.run_id)
    return marked
