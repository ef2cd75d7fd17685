"""The grid asset chain materialised in-process on a small generated census."""

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from dagster import AssetCheckKey, AssetKey, Definitions, asset, build_sensor_context, materialize

from sdc_dagster.assets.grid import GRID_ASSETS, GRID_JOBS, GRID_SENSORS, grid_regions, region_job_name
from sdc_dagster.resources import configured_resources
from sdc_dagster.resources.grid import GridSpecResource
from sdc_dagster.cli import run_audit
from sdc_dagster.cli.demo import run_grid_chain
from sdc_dagster.pipeline.grid import prepare_demo_census, region_seed, swapped_dir
from sdc_dagster.releases.replay import replay_grid_release
from sdc_dagster.grid.counts import GRID_COUNT_COLUMNS, GRID_VARIABLES, tabulate_grid
from sdc_dagster.spec.grid import GridSpec, load_grid_spec
from sdc_dagster.protect import consistent_grid_suppression, grid_suppression

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CATEGORIES = [c for v in GRID_VARIABLES for c in v.columns]


def run_chain(home, instance, regions, spec=None):
    """The grid chain of ``spec`` (default: the bundled census_grid.yaml) run in process on the grid
    definitions, every location from the data home ``home``."""
    defs = Definitions(assets=GRID_ASSETS, jobs=GRID_JOBS, resources=configured_resources(home, grid_spec=spec))
    if spec is None:
        return run_grid_chain(defs, instance, regions)
    return run_grid_chain(defs, instance, regions, region_job=region_job_name(spec.routes))


@pytest.mark.slow
def test_composed_grid_chain_end_to_end(sdc_home, instance):
    regions = prepare_demo_census(sdc_home, n_persons=15_000)
    assert len(regions) > 1
    assert all((sdc_home / "census" / f"{r}.parquet").is_file() for r in regions)
    instance.add_dynamic_partitions(grid_regions.name, regions)
    spec = load_grid_spec(EXAMPLES / "grid" / "census_grid.yaml")
    assert spec.routes == ("cell_key", "suppression")
    outcome = run_chain(sdc_home, instance, regions, spec)
    assert all(outcome.values()) and len(outcome) == 2 * len(regions) + 2

    store = sdc_home / "storage"
    census = pd.concat([pd.read_parquet(sdc_home / "census" / f"{r}.parquet") for r in regions], ignore_index=True)
    swapped = pd.concat([pd.read_parquet(swapped_dir(sdc_home) / f"{r}.parquet") for r in regions], ignore_index=True)
    # swapping moves whole households and keeps persons and households per region (top level)
    assert len(swapped) == len(census)
    per_household = swapped.groupby("household_id")["cell_id"].nunique()
    assert (per_household == 1).all()
    original = census.set_index("person_id").sort_index()
    after_swap = swapped.set_index("person_id").sort_index()
    for col in ("household_id", "sex", "age_group", "employed", "birth", "residence"):
        assert (original[col].to_numpy() == after_swap[col].to_numpy()).all()  # only geography moves
    before = census[census["resident"]].groupby(census["region"].astype(str)).agg(
        persons=("person_id", "size"), households=("household_id", "nunique"))
    after = swapped[swapped["resident"]].groupby(swapped["region"].astype(str)).agg(
        persons=("person_id", "size"), households=("household_id", "nunique"))
    pd.testing.assert_frame_equal(before.sort_index(), after.sort_index())
    assert (original["cell_id"].astype(str).to_numpy() != after_swap["cell_id"].astype(str).to_numpy()).any()
    summary = pd.read_parquet(store / "census_swapped" / "all" / "summary.parquet")
    assert (summary["persons_before"] == summary["persons_after"]).all()
    assert (summary["households_before"] == summary["households_after"]).all()
    households = pd.read_parquet(store / "census_swapped" / "all" / "households.parquet")
    assert len(households) > 0 and (households["cell_before"] != households["cell_after"]).all()

    # national reference counts: read from every region, the same for every region's suppression
    totals = pd.read_parquet(store / "grid_national_totals" / "all.parquet")
    resident = swapped[swapped["resident"]]
    assert totals.loc["resident", "total"] == len(resident)
    assert totals.loc["resident", "birth_3"] == int((resident["birth"] == 3).sum())
    assert totals.loc["national", "total"] == int(swapped["national"].sum())
    records = instance.fetch_materializations(AssetKey("grid_suppressed"), limit=100).records
    reference_counts = [r.asset_materialization.metadata["reference_counts"].value for r in records]
    assert len(reference_counts) == len(regions)
    assert all(r == reference_counts[0] for r in reference_counts)
    assert reference_counts[0]["age_2"] == int((resident["age_group"] == 2).sum())

    for region in regions:
        counts = pd.read_parquet(store / "grid_counts" / f"{region}.parquet")
        national = pd.read_parquet(store / "grid_counts_national" / f"{region}.parquet")
        # tabulated from the swapped persons, all 13 figures
        assert [c for c in counts.columns if c in GRID_COUNT_COLUMNS] == list(GRID_COUNT_COLUMNS)
        again = tabulate_grid(swapped[swapped["region"].astype(str) == region], where="resident")
        assert counts[list(GRID_COUNT_COLUMNS)].equals(again[list(GRID_COUNT_COLUMNS)])
        # suppression route: no published count in 1..k-1 in any of the 13 figures
        suppressed = pd.read_parquet(store / "grid_suppressed" / f"{region}.parquet")
        suppressed_national = pd.read_parquet(store / "grid_suppressed_national" / f"{region}.parquet")
        for table in (suppressed, suppressed_national):
            published = table[CATEGORIES].to_numpy(dtype="float64", na_value=float("nan"))
            assert not ((published >= 1) & (published <= 2)).any()
        assert suppressed["total"].tolist() == counts["total"].tolist()
        again_res, again_nat = consistent_grid_suppression(
            counts, national, strategy="distribution", reference_counts=reference_counts[0],
            random_state=region_seed(2021, region))
        assert suppressed[CATEGORIES].isna().equals(again_res[CATEGORIES].isna())
        # consistency only adds suppressions to what the resident table alone hides (sex: no draws)
        alone = grid_suppression(counts, reference_counts=reference_counts[0])
        sex = ["sex_1", "sex_2"]
        assert not (alone[sex].isna() & suppressed[sex].notna()).any().any()
        # cell key route: no published count in 1..js (js = 1), deviation <= D = 2, zeros stay zero
        ckm = pd.read_parquet(store / "grid_cell_key" / f"{region}.parquet")
        for col in GRID_COUNT_COLUMNS:
            assert not (ckm[col] == 1).any()
            assert (ckm[col] - ckm[f"{col}_original"]).abs().max() <= 2
            assert (ckm.loc[ckm[f"{col}_original"] == 0, col] == 0).all()
        assert ckm[[f"{c}_original" for c in GRID_COUNT_COLUMNS]].set_axis(list(GRID_COUNT_COLUMNS), axis=1).equals(
            counts[list(GRID_COUNT_COLUMNS)])
        loss = pd.read_parquet(store / "grid_cell_key_loss" / f"{region}.parquet")
        assert list(loss.index) == ["total", "sex", "age", "employed", "birth", "residence"]
        suppression_loss = pd.read_parquet(store / "grid_loss" / region / "loss.parquet")
        assert list(suppression_loss.index) == ["sex", "age", "employed", "birth", "residence"]

    # the release: manifest with swap rate, ptable and seeds; report; the audit replays it byte for byte
    release = instance.get_latest_materialization_event(AssetKey("grid_release")).asset_materialization.metadata
    manifest = json.loads(Path(release["manifest"].value).read_text())
    assert manifest["swap_rate"] == 0.05 and manifest["routes"] == ["cell_key", "suppression"]
    assert manifest["parameters"]["cell_key"] == {"max_deviation": 2, "variance": 1.05, "threshold": 1, "seed": 2021}
    assert manifest["seeds"] == {"swap": 2021, "cell_key": 2021, "suppression": 2021}
    assert set(manifest["inputs"]) == set(regions)
    assert set(manifest["files"]) == {f"{r}/{t}.csv" for r in regions
                                      for t in ("grid_cell_key", "grid_suppressed", "grid_suppressed_national")}
    page = Path(release["report"].value).read_text()
    assert 'id="layer-swapped"' in page and "Cell key route" in page and "Suppression route" in page
    folder = Path(release["manifest"].value).parent
    for region in regions:  # the released tables are the stored asset outputs, as CSV
        for name in ("grid_cell_key", "grid_suppressed", "grid_suppressed_national"):
            released = pd.read_csv(folder / region / f"{name}.csv")
            assert len(released) == len(pd.read_parquet(store / name / f"{region}.parquet"))
    printed = io.StringIO()
    assert run_audit("grid", out=printed) == 0
    assert "audit OK" in printed.getvalue()
    assert f"{regions[0]}/grid_suppressed.csv: ok" in printed.getvalue()
    # a changed released table is caught, and named
    table = folder / regions[0] / "grid_suppressed.csv"
    table.write_text(table.read_text().replace("\n", "\n\n", 1))
    printed = io.StringIO()
    assert run_audit("grid", out=printed) == 1
    assert f"{regions[0]}/grid_suppressed.csv: differs from the hash in its manifest" in printed.getvalue()
    # the replay recomputes every released table; the other tables are still byte-identical
    replayed = replay_grid_release(manifest)
    assert set(replayed) == set(manifest["files"])
    assert replayed[f"{regions[-1]}/grid_cell_key.csv"] == (folder / regions[-1] / "grid_cell_key.csv").read_bytes()

    # every asset check of the chain ran and passed (on the last region run)
    keys = [AssetCheckKey(AssetKey(key), name) for key, name in
            [("grid_suppressed", "no_small_published_counts"),
             ("grid_suppressed_national", "no_small_published_counts"),
             ("grid_suppressed_national", "consistent_with_resident_table"),
             ("grid_cell_key", "cell_key_bounded")]]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    assert {k: latest[k].status.value for k in keys} == {k: "SUCCEEDED" for k in keys}


@pytest.mark.slow
def test_cell_key_is_consistent_on_rerun_and_across_partitions(sdc_home, instance):
    regions = prepare_demo_census(sdc_home, n_persons=8_000)
    instance.add_dynamic_partitions(grid_regions.name, regions)
    spec = GridSpec(routes=("cell_key",))
    assert all(run_chain(sdc_home, instance, regions, spec).values())
    store = sdc_home / "storage"
    first = {r: pd.read_parquet(store / "grid_cell_key" / f"{r}.parquet") for r in regions}
    assert all(run_chain(sdc_home, instance, regions, spec).values())
    for r in regions:
        pd.testing.assert_frame_equal(first[r], pd.read_parquet(store / "grid_cell_key" / f"{r}.parquet"))


def test_bad_census_file_fails_validation(sdc_home, instance):
    folder = sdc_home / "census"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {"cell_id": ["1kmN1E1", "nonsense"], "sex": [1, 5], "age_group": [1, 2], "household_id": [1, 2]}
    ).to_parquet(folder / "R1.parquet")
    instance.add_dynamic_partitions(grid_regions.name, ["R1"])
    from sdc_dagster.assets.grid.census import census_microdata

    with pytest.raises(Exception, match="sex|cell_id"):
        materialize([census_microdata], partition_key="R1", instance=instance,
                    resources=configured_resources(sdc_home))


def test_sensor_adds_new_regions(sdc_home, instance, tmp_path):
    home = tmp_path / "resource_home"  # the sensor's folder is the home resource's, not $SDC_HOME's
    regions = prepare_demo_census(home, n_persons=5_000)
    resources = configured_resources(home)
    defs = Definitions(assets=GRID_ASSETS, jobs=GRID_JOBS, sensors=GRID_SENSORS, resources=resources)
    sensor = defs.resolve_sensor_def("grid_region_sensor")
    result = sensor(build_sensor_context(instance=instance, resources={"home": resources["home"]}))
    assert sorted(r.partition_key for r in result.run_requests) == sorted(regions)
    assert result.dynamic_partitions_requests[0].partition_keys == sorted(regions)
    assert not sdc_home.exists()


def test_grid_release_receives_every_region_s_tables_as_inputs():
    from sdc_dagster.assets.grid.release import grid_release

    tables = ("grid_counts", "grid_counts_national", "grid_cell_key", "grid_suppressed", "grid_suppressed_national")
    assert {name: key.to_user_string() for name, key in grid_release.keys_by_input_name.items()} == {
        name: name for name in ("census_swapped", *tables)}
    # no dependency beside its inputs: nothing is read back behind the IO manager
    assert grid_release.asset_deps[grid_release.key] == set(grid_release.keys_by_input_name.values())
    assert {"home", "grid_spec", "io_manager"} <= grid_release.required_resource_keys


@pytest.mark.slow
def test_every_grid_location_comes_from_the_home_resource(tmp_path, monkeypatch, instance):
    decoy = tmp_path / "decoy"
    monkeypatch.setenv("SDC_HOME", str(decoy))
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    regions = prepare_demo_census(home, n_persons=4_000)[:2]
    instance.add_dynamic_partitions(grid_regions.name, regions)
    # the cell key route alone: the release receives no suppressed tables (Optional inputs: None)
    assert all(run_chain(home, instance, regions, GridSpec(routes=("cell_key",))).values())
    for region in regions:
        assert (home / "census_swapped" / f"{region}.parquet").is_file()
        assert (home / "storage" / "grid_cell_key" / f"{region}.parquet").is_file()
    release = instance.get_latest_materialization_event(AssetKey("grid_release")).asset_materialization.metadata
    manifest = Path(release["manifest"].value)
    assert manifest.parent.parent == home / "releases" / "grid"
    assert Path(release["report"].value).parent == home / "reports" / "grid"
    recorded = json.loads(manifest.read_text())
    assert recorded["inputs"] == {r: {"file": str(home / "census" / f"{r}.parquet"),
                                      "sha256": recorded["inputs"][r]["sha256"]} for r in regions}
    assert set(recorded["files"]) == {f"{r}/grid_cell_key.csv" for r in regions}
    assert not decoy.exists()


@pytest.mark.slow
def test_two_regions_run_on_a_local_dask_cluster(sdc_home, tmp_path):
    from dagster import DagsterInstance, execute_job, instance_for_test, reconstructable

    from sdc_dagster.assets.grid.census import census_region_job, census_swap_job
    from sdc_dagster.definitions import grid_region_dask_job

    regions = prepare_demo_census(sdc_home, n_persons=6_000)[:2]
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        assert isinstance(instance, DagsterInstance)
        instance.add_dynamic_partitions(grid_regions.name, regions)
        defs = Definitions(assets=GRID_ASSETS, jobs=[census_region_job, census_swap_job],
                           resources=configured_resources(sdc_home))
        for region in regions:
            assert defs.resolve_job_def("census_region_job").execute_in_process(
                partition_key=region, instance=instance).success
        assert defs.resolve_job_def("census_swap_job").execute_in_process(instance=instance).success
        config = {"execution": {"config": {"cluster": {"local": {"n_workers": 1, "threads_per_worker": 1}}}}}
        for region in regions:
            with execute_job(reconstructable(grid_region_dask_job), instance=instance, run_config=config,
                             tags={"dagster/partition": region}) as result:
                assert result.success
                steps = {e.step_key for e in result.all_events if e.is_step_success}
                assert {"grid_cell_key", "grid_consistent_suppression", "grid_loss"} <= steps
            runs = instance.get_runs(limit=1)
            assert runs[0].job_name == "grid_region_dask_job" and runs[0].tags["dagster/partition"] == region
        store = sdc_home / "storage"
        for region in regions:
            assert (store / "grid_cell_key" / f"{region}.parquet").is_file()
            assert (store / "grid_suppressed" / f"{region}.parquet").is_file()


@pytest.mark.slow
def test_spec_routes_pick_what_runs(sdc_home, instance, tmp_path):
    spec = tmp_path / "grid.yaml"
    spec.write_text("routes: [suppression]\nsuppression: {k: 4, strategy: fixed}\nswap: {swaprate: 0.1, seed: 7}\n")
    grid = load_grid_spec(spec)
    assert grid.routes == ("suppression",)
    assert GridSpecResource(path=str(spec)).spec() == grid and grid.suppression.k == 4
    regions = prepare_demo_census(sdc_home, n_persons=5_000)[:2]
    instance.add_dynamic_partitions(grid_regions.name, regions)
    outcome = run_chain(sdc_home, instance, regions, grid)
    assert all(outcome.values())
    assert instance.get_latest_materialization_event(AssetKey("grid_cell_key")) is None
    suppressed = pd.read_parquet(sdc_home / "storage" / "grid_suppressed" / f"{regions[0]}.parquet")
    published = suppressed[CATEGORIES].to_numpy(dtype="float64", na_value=float("nan"))
    assert not ((published >= 1) & (published <= 3)).any()  # k = 4 from the spec
    release = instance.get_latest_materialization_event(AssetKey("grid_release")).asset_materialization.metadata
    manifest = json.loads(Path(release["manifest"].value).read_text())
    assert manifest["routes"] == ["suppression"] and manifest["seeds"] == {"swap": 7, "suppression": 2021}
    assert manifest["swap_rate"] == 0.1



def test_a_run_picks_another_grid_spec_file_by_run_config(tmp_path):
    """The README's way to run the chain of another grid spec: the run config sets the resource's path."""
    seen = {}

    @asset
    def spec_reader(grid_spec: GridSpecResource) -> pd.DataFrame:
        seen["spec"] = grid_spec.spec()
        return pd.DataFrame()

    path = tmp_path / "grid.yaml"
    path.write_text("routes: [suppression]\nsuppression: {k: 5}\n")
    resources = configured_resources(tmp_path / "home")
    assert materialize([spec_reader], resources=resources).success
    assert seen["spec"] == load_grid_spec(EXAMPLES / "grid" / "census_grid.yaml")  # the code location's
    assert materialize([spec_reader], resources=resources,
                       run_config={"resources": {"grid_spec": {"config": {"path": str(path)}}}}).success
    assert seen["spec"].routes == ("suppression",) and seen["spec"].suppression.k == 5


def test_the_release_reads_the_routes_of_its_spec_and_names_a_region_they_have_not_run_for():
    from sdc_dagster.assets.grid.release import route_tables

    table = pd.DataFrame({"cell_id": ["1kmN1E1"], "total": [4]})
    loaded = {"grid_cell_key": {"A": table}, "grid_suppressed": None, "grid_suppressed_national": None}
    tables = route_tables(("cell_key",), ["A"], loaded)  # no suppression route: its tables are not read
    assert list(tables) == ["A"] and list(tables["A"]) == ["grid_cell_key"] and tables["A"]["grid_cell_key"] is table
    with pytest.raises(FileNotFoundError, match=r"route 'cell_key' of the grid spec has no grid_cell_key of "
                                                r"region\(s\) B; run grid_cell_key_job for them first"):
        route_tables(("cell_key",), ["A", "B"], loaded)
    with pytest.raises(FileNotFoundError, match=r"route 'suppression' of the grid spec has no grid_suppressed of "
                                                r"region\(s\) A, B; run grid_region_job for them first"):
        route_tables(("cell_key", "suppression"), ["A", "B"], {**loaded, "grid_cell_key": {"A": table, "B": table}})
