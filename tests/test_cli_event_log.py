"""`sdc run`'s event log (cli.home.quick_event_log): WAL commits without an fsync each, one idle
pooled connection kept open to the index and the run's database during the run; every event still
stored; a wave found among the dynamic partitions is asked for once; a step's check results ask for
its materialisation once; the upstream provenance a step records is asked for once per asset; and
(cli.home.alembic_scripts_read_once) Dagster's migration scripts are read once per process."""

import hashlib
import sqlite3
from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetKey,
    DagsterEventType,
    DataVersion,
    DagsterInstance,
    DynamicPartitionsDefinition,
    MaterializeResult,
    asset,
    define_asset_job,
    job,
    op,
)
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.utils import make_new_run_id
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from sdc_dagster.cli.home import quick_event_log


@op
def one() -> int:
    return 1


@job
def tiny():
    one()


def test_a_run_in_the_block_stores_every_event_and_leaves_no_connection_open(tmp_path):
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        run_id = make_new_run_id()
        with quick_event_log(instance, run_id):
            assert tiny.execute_in_process(instance=instance, run_id=run_id).success
            shard = instance.event_log_storage.path_for_shard(run_id)
            # the pooled connection keeps the WAL: no closing connection was the last one
            assert Path(f"{shard}-wal").exists()
            # a connection the SQLAlchemy hook sees, to a WAL database: synchronous NORMAL (1), not FULL (2)
            engine = create_engine(f"sqlite:///{shard}", poolclass=NullPool)
            with engine.connect() as connection:
                assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
                assert connection.execute(text("PRAGMA synchronous")).scalar() == 1
            engine.dispose()
        stored = instance.all_logs(run_id)
        types = [entry.dagster_event.event_type for entry in stored if entry.dagster_event]
        assert types.count(DagsterEventType.STEP_SUCCESS) == 1 and DagsterEventType.RUN_SUCCESS in types
    # the pooled connections are closed: the last one checkpointed the WAL into the database and removed it
    assert not Path(f"{shard}-wal").exists()
    assert sqlite3.connect(shard).execute("SELECT count(*) FROM event_logs").fetchone()[0] == len(stored)


def test_a_partition_found_is_asked_for_once_in_the_block(tmp_path, monkeypatch):
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.add_dynamic_partitions("waves", ["2024"])
        asked = []
        storage_has = instance._event_storage.has_dynamic_partition
        monkeypatch.setattr(instance._event_storage, "has_dynamic_partition",
                            lambda name, key: asked.append(key) or storage_has(name, key))
        with quick_event_log(instance, make_new_run_id()):
            answers = [instance.has_dynamic_partition(partitions_def_name="waves", partition_key=key)
                       for key in ("2024", "2024", "2025", "2025")]
        assert answers == [True, True, False, False] and asked == ["2024", "2025", "2025"]
        # after the block the instance asks its storage again
        assert instance.has_dynamic_partition("waves", "2024") and asked[-1] == "2024" and len(asked) == 4


WAVES = DynamicPartitionsDefinition(name="waves")


@asset(partitions_def=WAVES, check_specs=[AssetCheckSpec(name, asset="checked") for name in ("a", "b", "c")])
def checked():
    return MaterializeResult(check_results=[AssetCheckResult(check_name=name, passed=True) for name in ("a", "b", "c")])


def test_a_materialisation_is_asked_for_once_per_step_and_every_check_targets_it(tmp_path, monkeypatch):
    """The check results of a step name the materialisation the step has just stored (Dagster looks it
    up: ``AssetCheckResult._get_partitioned_target_materialization_data``); inside the block the first
    asks the storage, the others get its answer, and the next run's step asks again."""
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.add_dynamic_partitions("waves", ["2024"])
        asked = []
        storage_fetch = instance._event_storage.fetch_materializations
        monkeypatch.setattr(instance._event_storage, "fetch_materializations",
                            lambda records_filter, *args, **kwargs: asked.append(records_filter)
                            or storage_fetch(records_filter, *args, **kwargs))
        job = define_asset_job("checked_job", selection=[checked]).resolve(
            asset_graph=AssetGraph.from_assets([checked]))
        for _ in range(2):
            asked.clear()
            run_id = make_new_run_id()
            with quick_event_log(instance, run_id):
                assert job.execute_in_process(instance=instance, run_id=run_id, partition_key="2024").success
            assert [(f.asset_key, f.asset_partitions) for f in asked] == [(AssetKey("checked"), ["2024"])]
            materialization = instance.fetch_materializations(AssetKey("checked"), limit=1).records[0]
            assert materialization.run_id == run_id
            evaluations = [entry.dagster_event.event_specific_data for entry in instance.all_logs(
                run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)]
            assert len(evaluations) == 3
            assert {(e.target_materialization_data.run_id, e.target_materialization_data.storage_id)
                    for e in evaluations} == {(run_id, materialization.storage_id)}


@asset(partitions_def=WAVES)
def upstream(context) -> MaterializeResult:
    return MaterializeResult(data_version=DataVersion(f"up-{context.run_id}"))


@asset(partitions_def=WAVES, deps=[upstream])
def downstream() -> None:
    return None


@asset(partitions_def=WAVES, deps=[upstream])
def downstream_too() -> None:
    return None


def test_each_step_records_the_provenance_of_its_inputs_as_just_stored(tmp_path, monkeypatch):
    """Upstream asset records and data versions are asked once per asset until the asset changes:
    in each run, both downstream materialisations name the upstream materialisation of that same
    run (its storage id and data version), and the storage is asked for the upstream's records and
    partition tags once per run (by the first downstream step; the upstream's own events drop the
    answers of the run before)."""
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.add_dynamic_partitions("waves", ["2024"])
        storage = instance._event_storage
        asked = []
        storage_records, storage_tags = storage.get_asset_records, storage.get_latest_tags_by_partition
        monkeypatch.setattr(storage, "get_asset_records",
                            lambda keys=None: asked.append(("records", tuple(keys or ()))) or storage_records(keys))
        monkeypatch.setattr(storage, "get_latest_tags_by_partition", lambda key, *args, **kwargs:
                            asked.append(("tags", key)) or storage_tags(key, *args, **kwargs))
        job = define_asset_job("provenance_job", selection=[upstream, downstream, downstream_too]).resolve(
            asset_graph=AssetGraph.from_assets([upstream, downstream, downstream_too]))
        for _ in range(2):
            run_id = make_new_run_id()
            asked.clear()
            with quick_event_log(instance, run_id):
                assert job.execute_in_process(instance=instance, run_id=run_id, partition_key="2024").success
            up = instance.fetch_materializations(AssetKey("upstream"), limit=1).records[0]
            partition_version = hashlib.sha256(f"up-{run_id}".encode()).hexdigest()  # one partition's version, hashed
            for name in ("downstream", "downstream_too"):
                down = instance.fetch_materializations(AssetKey(name), limit=1).records[0]
                assert up.run_id == down.run_id == run_id
                tags = down.event_log_entry.tags
                assert tags["dagster/input_event_pointer/upstream"] == str(up.storage_id)
                assert tags["dagster/input_data_version/upstream"] == partition_version
            assert asked.count(("tags", AssetKey("upstream"))) == 1
            assert sum(1 for kind, keys in asked if kind == "records" and AssetKey("upstream") in keys) == 1


def test_the_migration_scripts_are_read_once_for_every_database_of_a_new_home_and_its_run(tmp_path, monkeypatch):
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from sdc_dagster.cli import home

    reads = []
    read = ScriptDirectory.from_config.__func__

    def counted(cls, config):
        reads.append(config.get_main_option("script_location"))
        return read(cls, config)

    monkeypatch.setattr(ScriptDirectory, "from_config", classmethod(counted))
    monkeypatch.setattr(home, "_script_directories", {})
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with home.dagster_instance() as instance:
        run_id = make_new_run_id()
        with home.quick_event_log(instance, run_id):
            assert tiny.execute_in_process(instance=instance, run_id=run_id).success
    # the instance's three databases and the run's own were each checked or stamped: one read
    assert reads == ["dagster:_core/storage/alembic"]
    assert ScriptDirectory.from_config.__func__ is counted  # the block left alembic as it found it
    # each database is stamped with the head revision that alembic itself reads from the scripts
    config = Config()
    config.set_main_option("script_location", "dagster:_core/storage/alembic")
    head = read(ScriptDirectory, config).get_current_head()
    databases = [tmp_path / "history" / "runs.db", tmp_path / "history" / "runs" / "index.db",
                 tmp_path / "schedules" / "schedules.db", tmp_path / "history" / "runs" / f"{run_id}.db"]
    for database in databases:
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)], database
