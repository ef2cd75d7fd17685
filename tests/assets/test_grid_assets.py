"""The grid asset chain materialised in-process on a small generated census."""

import pandas as pd
import pytest
from dagster import AssetKey, Definitions, build_sensor_context, materialize

from assets.grid import (
    GRID_ASSETS,
    GRID_JOBS,
    GRID_SENSORS,
    census_swapped,
    grid_regions,
    prepare_demo_census,
)
from resources.storage import ParquetIOManager
from sdc_dagster.protect import grid_suppression

PARTITIONED = [a for a in GRID_ASSETS if a.partitions_def is not None]


def test_grid_chain_on_a_small_census(sdc_home, instance):
    regions = prepare_demo_census(sdc_home, n_persons=15_000)
    assert len(regions) > 1
    assert all((sdc_home / "census" / f"{r}.parquet").is_file() for r in regions)
    instance.add_dynamic_partitions(grid_regions.name, regions)
    resources = {"io_manager": ParquetIOManager()}
    region = regions[0]
    result = materialize(
        PARTITIONED, partition_key=region, instance=instance, resources=resources
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"no_small_published_counts": True, "cell_key_bounded": True}

    store = sdc_home / "storage"
    counts = pd.read_parquet(store / "grid_counts" / f"{region}.parquet")
    suppressed = pd.read_parquet(store / "grid_suppressed" / f"{region}.parquet")
    # the stored asset is the engine's output on the stored counts (sex suppression draws nothing)
    assert suppressed["total"].tolist() == counts["total"].tolist()
    again = grid_suppression(counts, strategy="distribution")
    assert suppressed[["sex_1", "sex_2"]].isna().equals(again[["sex_1", "sex_2"]].isna())

    mat = instance.get_latest_materialization_event(AssetKey("grid_loss")).asset_materialization
    assert mat.metadata["sex_absolute_loss"].value <= 0
    assert "data:image/png;base64" in mat.metadata["map"].value
    loss = pd.read_parquet(store / "grid_loss" / region / "loss.parquet")
    hidden_sex = int(counts[["sex_1", "sex_2"]].where(suppressed[["sex_1", "sex_2"]].isna(), 0).sum().sum())
    assert loss.loc["sex", "hidden_persons"] == hidden_sex

    swapped = materialize([census_swapped], instance=instance, resources=resources)
    assert swapped.success
    out = pd.read_parquet(store / "census_swapped" / "all.parquet")
    meta = instance.get_latest_materialization_event(AssetKey("census_swapped")).asset_materialization.metadata
    assert meta["regions"].value == len(regions)
    assert meta["swapped_households"].value > 0
    assert len(out) == meta["persons"].value


def test_bad_census_file_fails_validation(sdc_home, instance):
    folder = sdc_home / "census"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {"cell_id": ["1kmN1E1", "nonsense"], "sex": [1, 5], "age_group": [1, 2], "household_id": [1, 2]}
    ).to_parquet(folder / "R1.parquet")
    instance.add_dynamic_partitions(grid_regions.name, ["R1"])
    from assets.grid import census_microdata

    with pytest.raises(Exception, match="sex|cell_id"):
        materialize([census_microdata], partition_key="R1", instance=instance,
                    resources={"io_manager": ParquetIOManager()})


def test_sensor_adds_new_regions(sdc_home, instance):
    regions = prepare_demo_census(sdc_home, n_persons=5_000)
    defs = Definitions(
        assets=GRID_ASSETS,
        jobs=GRID_JOBS,
        sensors=GRID_SENSORS,
        resources={"io_manager": ParquetIOManager()},
    )
    sensor = defs.resolve_sensor_def("grid_region_sensor")
    result = sensor(build_sensor_context(instance=instance))
    assert sorted(r.partition_key for r in result.run_requests) == sorted(regions)
    assert result.dynamic_partitions_requests[0].partition_keys == sorted(regions)
