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
from sdc_dagster.protect import consistent_grid_suppression, grid_suppression

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
    checks = {
        (e.asset_key.to_user_string(), e.check_name): e.passed for e in result.get_asset_check_evaluations()
    }
    assert checks == {
        ("grid_suppressed", "no_small_published_counts"): True,
        ("grid_suppressed_national", "no_small_published_counts"): True,
        ("grid_suppressed_national", "consistent_with_resident_table"): True,
        ("grid_cell_key", "cell_key_bounded"): True,
    }

    store = sdc_home / "storage"
    counts = pd.read_parquet(store / "grid_counts" / f"{region}.parquet")
    national = pd.read_parquet(store / "grid_counts_national" / f"{region}.parquet")
    suppressed = pd.read_parquet(store / "grid_suppressed" / f"{region}.parquet")
    suppressed_national = pd.read_parquet(store / "grid_suppressed_national" / f"{region}.parquet")
    # the stored assets are the engine's output on the stored counts (sex suppression draws nothing)
    assert suppressed["total"].tolist() == counts["total"].tolist()
    assert suppressed_national["total"].tolist() == national["total"].tolist()
    again, again_national = consistent_grid_suppression(counts, national, strategy="distribution")
    sex = ["sex_1", "sex_2"]
    assert suppressed[sex].isna().equals(again[sex].isna())
    assert suppressed_national[sex].isna().equals(again_national[sex].isna())
    # consistency only adds suppressions to what the resident table alone hides
    alone = grid_suppression(counts, strategy="distribution")
    assert not (alone[sex].isna() & suppressed[sex].notna()).any().any()
    # one hidden pattern per cell in the two published tables
    cats = [*sex, "age_1", "age_2", "age_3"]
    res = suppressed.set_index("cell_id")[cats].isna()
    nat = suppressed_national.set_index("cell_id")[cats].isna()
    common = res.index.intersection(nat.index)
    assert len(common) > 0
    assert res.loc[common].equals(nat.loc[common])

    mat = instance.get_latest_materialization_event(AssetKey("grid_loss")).asset_materialization
    assert mat.metadata["sex_absolute_loss"].value <= 0
    assert mat.metadata["cells_still_disclosed_by_differencing"].value == 0
    assert mat.metadata["cells_differencing_blocked"].value == mat.metadata["cells_disclosed_by_differencing"].value
    assert 0 <= mat.metadata["cells_differencing_blocked_beyond_primary"].value <= mat.metadata[
        "cells_differencing_blocked"
    ].value
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
