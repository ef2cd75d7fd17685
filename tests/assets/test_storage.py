"""The IO manager stores the pipeline's values whole for the next asset and their tables as Parquet
for other readers, under its configured base directory, which stored_output honours."""

import pandas as pd
import pytest
from dagster import AssetKey, StaticPartitionsDefinition, asset, build_output_context, materialize

from sdc_dagster.pipeline.protection import CheckOutcome, ProtectedVariant
from sdc_dagster.pipeline.variant import ReleasedKeys
from sdc_dagster.resources import SdcHome, configured_resources
from sdc_dagster.resources.storage import ParquetIOManager, StoredByEarlierVersion, stored_output
from sdc_dagster.spec import Plan


def test_a_protected_variant_is_stored_whole_and_its_data_as_parquet_under_base_dir(tmp_path):
    base = tmp_path / "elsewhere"
    manager = ParquetIOManager(base_dir=str(base))
    variant = ProtectedVariant(
        plan=Plan(name="p", steps=({"method": "local_suppression", "k": 3},), k=3, random_state=7),
        wave="2024",
        data=pd.DataFrame({"sex": [1, 2, None]}, index=[3, 5, 8]),
        steps=[{"method": "local_suppression", "k": 3, "seed": None}],
        matrices={"water": pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], index=[1, 2], columns=[1, 2])},
        checks={"k_anonymity": CheckOutcome(False, 3, "every record's key is shared by at least k=3 records", True)},
        keys=ReleasedKeys(categorical=["sex"], continuous=[], weight=None, household=None),
    )
    manager.handle_output(build_output_context(asset_key=AssetKey(["s", "protected_p"]), partition_key="2024"), variant)

    assert pd.read_parquet(base / "s" / "protected_p" / "2024.parquet").equals(variant.data)
    loaded = stored_output(["s", "protected_p"], "2024", base_dir=base)
    assert (loaded.plan, loaded.wave, loaded.steps, loaded.checks, loaded.keys) == (variant.plan, "2024", variant.steps, variant.checks, variant.keys)
    assert loaded.data.equals(variant.data) and loaded.seed == 7
    assert loaded.matrices["water"].equals(variant.matrices["water"])
    assert loaded.withheld_because == {"k_anonymity": "every record's key is shared by at least k=3 records (found: 3)"}
    # issue 38: the value is streamed to the file with pickle protocol 5 (PEP 574: its opening is the
    # PROTO opcode 0x80 and the protocol number), its arrays written without a copy in memory
    assert (base / "s" / "protected_p" / "2024.pickle").read_bytes()[:2] == b"\x80\x05"


def test_the_resources_take_every_location_from_one_data_home(tmp_path):
    resources = configured_resources(tmp_path / "home")
    home = resources["home"]
    assert isinstance(home, SdcHome) and home.root == tmp_path / "home"
    assert (home.landing, home.releases, home.reports) == tuple(tmp_path / "home" / f for f in ("landing", "releases", "reports"))
    assert resources["io_manager"].base_dir == str(tmp_path / "home" / "storage") == str(home.storage)


def test_a_check_outcome_keeps_the_manifest_record():
    record = {"passed": True, "value": 0.25, "rule": "r", "blocking": True, "measure": "m",
              "figures": {"record_linkage_risk": 0.25, "record_linkage_one_to_one_risk": None}}
    assert CheckOutcome.of_record(record).record() == record
    assert CheckOutcome.of_record({"passed": False, "value": 1, "rule": "r"}).blocking  # older records: blocking


# --- an unpartitioned asset reading every partition of its input --------------------------------

REGIONS = StaticPartitionsDefinition(["r1", "r2"])


@asset(partitions_def=REGIONS)
def per_region(context) -> pd.DataFrame:
    return pd.DataFrame({"region": [context.partition_key], "persons": [int(context.partition_key[1]) * 10]})


@asset(partitions_def=REGIONS)
def never_run() -> pd.DataFrame:
    return pd.DataFrame({"x": [1]})


def test_an_unpartitioned_asset_receives_every_partition_as_a_dict(tmp_path):
    manager = ParquetIOManager(base_dir=str(tmp_path))
    for region in ("r1", "r2"):
        assert materialize([per_region], partition_key=region, resources={"io_manager": manager}).success
    seen = {}

    @asset
    def national(per_region: dict[str, pd.DataFrame], never_run: dict[str, pd.DataFrame] | None) -> pd.DataFrame:
        seen.update(per_region=per_region, never_run=never_run)
        return pd.concat(per_region.values())

    assert materialize([per_region.to_source_asset(), never_run.to_source_asset(), national],
                       resources={"io_manager": manager}).success
    assert sorted(seen["per_region"]) == ["r1", "r2"]
    assert seen["per_region"]["r2"].to_dict("list") == {"region": ["r2"], "persons": [20]}
    assert seen["never_run"] is None  # an Optional input of an asset never materialised
    assert pd.read_parquet(tmp_path / "national" / "all.parquet")["persons"].tolist() == [10, 20]


def test_a_missing_partition_is_an_error_unless_the_input_is_optional(tmp_path):
    manager = ParquetIOManager(base_dir=str(tmp_path))
    assert materialize([per_region], partition_key="r1", resources={"io_manager": manager}).success

    @asset
    def national(per_region: dict[str, pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(per_region.values())

    with pytest.raises(FileNotFoundError, match=r"per_region: no stored output of partition\(s\) r2 under"):
        materialize([per_region.to_source_asset(), national], resources={"io_manager": manager})

    seen = {}

    @asset(name="national")
    def optional_national(per_region: dict[str, pd.DataFrame] | None) -> pd.DataFrame:
        seen["per_region"] = per_region
        return pd.DataFrame()

    # an Optional input: the partitions stored, for the asset to judge
    assert materialize([per_region.to_source_asset(), optional_national], resources={"io_manager": manager}).success
    assert list(seen["per_region"]) == ["r1"]


def test_a_value_stored_by_an_earlier_version_names_the_file_and_what_to_do(tmp_path):
    # issue 35 moved modules (e.g. sdc_dagster.sources -> sdc_dagster.spec.sources): a pickle written  # move_modules: keep
    # before names a module that no longer exists; reading it says so instead of a bare traceback
    import pickle

    stored = tmp_path / "s" / "raw_microdata"
    stored.mkdir(parents=True)
    # a pickle of a global from a module that does not exist (protocol 2: GLOBAL opcode by name)
    data = b"\x80\x02csdc_dagster.sources\nWave\nq\x00)\x81q\x01."
    (stored / "2024.pickle").write_bytes(data)
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(data)
    with pytest.raises(StoredByEarlierVersion, match=r"2024\.pickle was stored by an earlier version.*"
                                                     r"materialise this asset again"):
        stored_output(["s", "raw_microdata"], "2024", base_dir=tmp_path)
