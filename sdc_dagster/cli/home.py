"""What every ``sdc`` command prepares or resolves first: the data home and the Dagster instance
under it (with its settings and the tags of the process that runs a wave), and the survey names
given on the command line, checked against the specs that load."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sqlite3
from contextlib import contextmanager, nullcontext
from pathlib import Path

import yaml

from sdc_dagster.cli.status import EXIT_USAGE
from sdc_dagster.files import exclusive_lock, process_alive, sweep_temporary_files, write_atomic

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

    with exclusive_lock(Path(os.environ["DAGSTER_HOME"]) / ".sdc-instance.lock"), alembic_scripts_read_once():
        return DagsterInstance.get()


#: Alembic script directories read in this process, by their options (see alembic_scripts_read_once).
_script_directories: dict[tuple, object] = {}


@contextmanager
def alembic_scripts_read_once():
    """Within the block, alembic's ``ScriptDirectory.from_config`` answers with the script directory
    it read before for the same options, instead of reading it again.

    Dagster checks or stamps the alembic revision of each SQLite database it opens or creates: the
    instance's run, event index and schedule databases, and each run's own event database. Each
    check reads Dagster's migration scripts anew (about 150 Python files, their revision map built
    again): 0.05-0.1 s a database. The scripts do not change while a process runs; the revisions
    each database is checked against or stamped with are the same."""
    from alembic.script import ScriptDirectory

    read = ScriptDirectory.from_config

    def from_config(cls, config):
        # every option ScriptDirectory.from_config reads from the config
        options = (*(config.get_alembic_option(name) for name in (
                       "script_location", "file_template", "truncate_slug_length", "sourceless", "output_encoding",
                       "timezone", "recursive_version_locations")),
                   tuple(config.get_version_locations_list() or ()), tuple(config.get_prepend_sys_paths_list() or ()),
                   repr(config.get_hooks_list()), repr(sorted(config.messaging_opts.items())))
        if options not in _script_directories:
            _script_directories[options] = read(config)
        return _script_directories[options]

    with _shadowed(ScriptDirectory, from_config=classmethod(from_config)):
        yield


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
def _shadowed(target, **methods):
    """Within the block, ``target``'s attributes ``methods`` (its methods, replaced on this object
    only); after it, what the object had before (its class's methods, or attributes of its own)."""
    own = {name: target.__dict__[name] for name in methods if name in target.__dict__}
    for name, method in methods.items():
        setattr(target, name, method)
    try:
        yield
    finally:
        for name in methods:
            if name in own:
                setattr(target, name, own[name])
            else:
                delattr(target, name)


@contextmanager
def _pooled_event_log_connections(storage):
    """Within the block, the per-run SQLite event log ``storage`` keeps one engine per database
    (shard) and returns its connections to the engine's pool, instead of creating an engine, opening
    a connection and disposing of both for every event (Dagster's ``_connect``: about 250 times in a
    wave, 3 ms each). The connections are taken under the storage's lock as before, and the
    databases are created and migrated on first use as before. The pooled connections stay open,
    so a closing connection is never the last one (which would checkpoint the WAL into the database
    and delete it at every event); the block's end closes them, and the last close checkpoints."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS
    from sqlalchemy import create_engine

    engines = {}

    @contextmanager
    def connect(shard: str):
        with storage._db_lock:  # noqa: SLF001 (Dagster's own lock for its connections)
            if shard not in engines:
                engines[shard] = create_engine(storage.conn_string_for_shard(shard),
                                               connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            if shard not in storage._initialized_dbs:  # noqa: SLF001
                storage._initdb(engines[shard])  # noqa: SLF001
                storage._initialized_dbs.add(shard)  # noqa: SLF001
            with engines[shard].connect() as connection, connection.begin():
                yield connection

    try:
        with _shadowed(storage, _connect=connect):
            yield
    finally:
        for engine in engines.values():
            engine.dispose()


@contextmanager
def quick_event_log(instance, run_id: str):
    """The run ``run_id`` of ``instance`` stores its events without an fsync each, on connections
    kept open, and asks the event log each question about an asset once until the asset changes.

    Dagster's per-run SQLite event log opens a new engine and connection for every event (about 250
    in a wave) and closes them again: the commit syncs the WAL and closing the last connection
    checkpoints the WAL into the database and deletes it, 10-20 ms an event, seconds per wave.
    Within this block the WAL databases commit with ``synchronous=NORMAL``
    (:func:`_wal_commits_without_fsync`) on pooled connections
    (:func:`_pooled_event_log_connections`); the WAL is checkpointed when the block ends. Other
    event log storages are left as they are.

    Every input of every step asks whether the wave is one of the survey's dynamic partitions (a
    query each, about 40 in a wave); a partition found stays found for the block (``sdc`` adds
    waves and never deletes them), so each is asked once.

    Questions about one asset are answered from what the block was told before, until this run
    stores an event of that asset (a materialisation, a planned or failed one, an observation):
    every asset check result asks for the latest materialisation of its asset's partition (the one
    its step has just stored: about 25 in a wave), as the survey assets ask for the wave's
    ``raw_microdata`` materialisation; and every step asks for the asset records and the data
    version of the wave's partition of each upstream asset (Dagster's data-version provenance:
    about 60 queries in a wave), though an upstream asset changes only when its own step runs.
    """
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    found: set[tuple[str, str]] = set()
    ask = instance.has_dynamic_partition

    def has_dynamic_partition(partitions_def_name: str, partition_key: str) -> bool:
        if (partitions_def_name, partition_key) not in found and ask(partitions_def_name, partition_key):
            found.add((partitions_def_name, partition_key))
        return (partitions_def_name, partition_key) in found

    latest: dict[tuple, object] = {}  # (asset key, partition) -> its latest materialisation record
    records: dict[object, object] = {}  # asset key -> its asset record, None where it has none
    tags: dict[tuple, dict] = {}  # (asset key, event type, tags, partitions) -> latest tags by partition
    fetch = instance.fetch_materializations
    fetch_records = instance.get_asset_records
    storage = instance.event_log_storage
    fetch_tags = storage.get_latest_tags_by_partition

    def fetch_materializations(records_filter, limit: int, cursor: str | None = None, ascending: bool = False):
        key = _one_partition(records_filter) if limit == 1 and cursor is None and not ascending else None
        if key is None:
            return fetch(records_filter, limit, cursor=cursor, ascending=ascending)
        if key not in latest:
            latest[key] = fetch(records_filter, limit)
        return latest[key]

    def get_asset_records(asset_keys=None):
        if asset_keys is None:
            return fetch_records(asset_keys)
        unknown = [key for key in asset_keys if key not in records]
        if unknown:
            answered = {record.asset_entry.asset_key: record for record in fetch_records(unknown)}
            records.update({key: answered.get(key) for key in unknown})
        return [records[key] for key in asset_keys if records[key] is not None]

    def get_latest_tags_by_partition(asset_key, event_type, tag_keys, asset_partitions=None,
                                     before_cursor=None, after_cursor=None):
        if asset_partitions is None or before_cursor is not None or after_cursor is not None:
            return fetch_tags(asset_key, event_type, tag_keys, asset_partitions=asset_partitions,
                              before_cursor=before_cursor, after_cursor=after_cursor)
        key = (asset_key, event_type, tuple(tag_keys), tuple(asset_partitions))
        if key not in tags:
            tags[key] = fetch_tags(asset_key, event_type, tag_keys, asset_partitions=asset_partitions)
        return {partition: dict(values) for partition, values in tags[key].items()}

    def forget(entry) -> None:
        changed = entry.dagster_event.asset_key if entry.dagster_event is not None else None
        if changed is not None:
            records.pop(changed, None)
            for cache in (latest, tags):
                for key in [key for key in cache if key[0] == changed]:
                    del cache[key]

    pooled = isinstance(storage, SqliteEventLogStorage)
    listening = pooled and not event.contains(Engine, "connect", _wal_commits_without_fsync)
    if listening:  # the per-run SQLite event log (and not inside another such block)
        event.listen(Engine, "connect", _wal_commits_without_fsync)
    instance.add_event_listener(run_id, forget)
    try:
        with (_shadowed(instance, has_dynamic_partition=has_dynamic_partition,
                        fetch_materializations=fetch_materializations, get_asset_records=get_asset_records),
              _shadowed(storage, get_latest_tags_by_partition=get_latest_tags_by_partition),
              _pooled_event_log_connections(storage) if pooled else nullcontext(), alembic_scripts_read_once()):
            yield
    finally:
        if listening:  # connections opened after the block commit as SQLite's default does
            event.remove(Engine, "connect", _wal_commits_without_fsync)


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
    """Say that survey ``survey_name`` is unknown, with the closest known name when one is close
    (:func:`~sdc_dagster.errors.did_you_mean`), listing ``known``; :data:`EXIT_USAGE`."""
    from sdc_dagster.errors import did_you_mean

    close = did_you_mean(survey_name, sorted(known)).removeprefix("; ")
    print(f"sdc {command}: no survey {survey_name!r}{f' ({close})' if close else ''}; "
          f"known: {', '.join(sorted(known)) or 'none'} (draft one with: sdc init NAME --from FILE)", file=out)
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
