"""The IO manager stores the pipeline's values whole for the next asset and their tables as Parquet
for other readers, under its configured base directory, which stored_output honours."""

import pandas as pd
from dagster import AssetKey, build_output_context

from sdc_dagster.pipeline.protection import CheckOutcome, ProtectedVariant
from sdc_dagster.resources import SdcHome, configured_resources
from sdc_dagster.resources.storage import ParquetIOManager, stored_output
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
    )
    manager.handle_output(build_output_context(asset_key=AssetKey(["s", "protected_p"]), partition_key="2024"), variant)

    assert pd.read_parquet(base / "s" / "protected_p" / "2024.parquet").equals(variant.data)
    loaded = stored_output(["s", "protected_p"], "2024", base_dir=base)
    assert (loaded.plan, loaded.wave, loaded.steps, loaded.checks) == (variant.plan, "2024", variant.steps, variant.checks)
    assert loaded.data.equals(variant.data) and loaded.seed == 7
    assert loaded.matrices["water"].equals(variant.matrices["water"])
    assert loaded.withheld_because == {"k_anonymity": "every record's key is shared by at least k=3 records (found: 3)"}


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
