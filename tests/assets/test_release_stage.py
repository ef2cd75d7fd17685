"""The release stage (issue 35): one asset per survey, ``<survey>/release``, receives the protected
variants and their evaluation as inputs and writes each plan's decision and the wave's one release;
the protected assets write no file. The loss stage's result is typed (InformationLoss, PlanLoss).

The wave: 24 records keyed by sex and region (13 m, 11 f; regions r1..r4 of 6, 6, 8 and 4 records),
k = 5. Merging every region into one leaves sex alone as the key: 13 and 11 records, 5-anonymous;
merging the sexes leaves region alone: r4 keeps 4 records < 5, withheld; merging both leaves one
group of 24, 5-anonymous, with every value the first plan changed changed and the sex of 11
records more."""

import json

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.pipeline.evaluation import InformationLoss, PlanLoss
from sdc_dagster.releases.manifest import MANIFEST, WITHHELD
from sdc_dagster.releases.wave import WaveRelease, wave_release
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import load_spec

WAVE = "2024"
ROWS = [(sex, region) for sex in ("m", "f") for region, n in (("r1", 3), ("r2", 3), ("r3", 4)) for _ in range(n)]
DATA = pd.DataFrame(ROWS + [("m", "r4")] * 3 + [("f", "r4")], columns=["sex", "region"])
ONE_REGION = {"method": "recode", "variable": "region", "mapping": {"r2": "r1", "r3": "r1", "r4": "r1"}}
ONE_SEX = {"method": "recode", "variable": "sex", "mapping": {"f": "m"}}
SPEC = {"survey": "two_keys",
        "variables": {"sex": {"role": "categorical_key", "scale": "nominal"},
                      "region": {"role": "categorical_key", "scale": "nominal"}},
        "risk": {"k": 5, "max_global_risk": 0.5},
        "limits": {"max_suppressed_share": 0.5, "max_records_changed": 1.0},
        "plans": {"one_region": {"steps": [ONE_REGION]}, "one_sex": {"steps": [ONE_SEX]},
                  "one_group": {"steps": [ONE_REGION, ONE_SEX]}}}


@pytest.fixture
def chain(sdc_home, instance):
    """The spec written as a spec file (a release copies it), the wave landed and registered."""
    (sdc_home / "specs").mkdir(parents=True)
    (sdc_home / "specs" / "two_keys.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    (sdc_home / "landing" / "two_keys").mkdir(parents=True)
    DATA.to_csv(sdc_home / "landing" / "two_keys" / f"{WAVE}.csv", index=False)
    instance.add_dynamic_partitions("two_keys_waves", [WAVE])
    return build_survey_assets(load_spec(sdc_home / "specs" / "two_keys.yaml")).assets


def key(name: str) -> AssetKey:
    return AssetKey(["two_keys", name])


def test_the_release_stage_writes_the_decisions_the_protected_assets_do_not(chain, sdc_home, instance):
    before = [k for a in chain for k in a.keys if k.path[-1] not in ("release", "sdc_report")]
    upstream = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                           selection=before)
    assert upstream.success
    assert not (sdc_home / "releases").exists()  # the protected assets wrote no file
    assert upstream.output_for_node("two_keys__protected_one_sex", "result").withheld_because

    result = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                         selection=[key("release")])
    assert result.success
    made = result.output_for_node("two_keys__release", "result")
    assert isinstance(made, WaveRelease)
    assert list(made.decisions) == ["one_region", "one_sex", "one_group"]
    # one_group releases both keys as one category (every record "m", "r1"): 2 of 2 keys not released,
    # beyond limits.max_keys_not_released (50 %), withheld (issues 34, 38)
    assert {name: d.published for name, d in made.decisions.items()} == {
        "one_region": True, "one_sex": False, "one_group": False}
    folders = {name: d.folder for name, d in made.decisions.items()}
    assert (folders["one_region"] / MANIFEST).is_file()
    withheld = json.loads((folders["one_sex"] / WITHHELD).read_text())
    assert list(withheld["withheld"]) == ["k_anonymity"] and withheld["output"] is None
    assert list(json.loads((folders["one_group"] / WITHHELD).read_text())["withheld"]) == ["keys_not_released_limit"]
    assert all(folder.name == result.run_id for folder in folders.values())
    # one_region, the one eligible plan, is the wave's one release
    assert made.recommendation.plan == "one_region"
    assert made.released == wave_release(sdc_home / "releases", "two_keys", WAVE)
    assert made.released["plan"] == "one_region" and "report" not in made.released  # the report comes next
    assert made.search is None and made.advice is None  # the spec does not search
    metadata = instance.get_latest_materialization_event(key("release")).asset_materialization.metadata
    assert metadata["released_plan"].value == "one_region"
    assert metadata["decisions"].value["one_sex"]["withheld"]["k_anonymity"].startswith("every record")

    report = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                         selection=[key("sdc_report")])
    assert report.success
    html = sdc_home / "reports" / "two_keys" / f"{WAVE}.html"
    assert wave_release(sdc_home / "releases", "two_keys", WAVE)["report"]["file"] == str(html)
    assert f"run {result.run_id}" in html.read_text()  # the report links the decisions of the release stage


def test_information_loss_is_typed_per_plan(chain, sdc_home, instance):
    result = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                         selection=[key("raw_microdata"), key("protected_one_region"), key("protected_one_sex"),
                                    key("protected_one_group"), key("information_loss")])
    assert result.success
    loss = result.output_for_node("two_keys__information_loss", "result")
    assert isinstance(loss, InformationLoss)
    one_region = loss.plan("one_region")
    assert isinstance(one_region, PlanLoss)
    # distance measure (1) of two nominal keys: the share of the 2 x 24 values lost. one_region releases
    # region as one category (every record "r1"): all its 24 values lost (issues 34, 38; it counted the
    # 24 - 6 records outside r1 before, 18 / 48); one_group releases both keys so: everything lost
    assert one_region.figures["lambda_arctan"] == pytest.approx(24 / 48)
    assert one_region.figures["values_compared"] == 24 and one_region.figures["values_withheld"] == 24
    assert loss.plan("one_group").figures["lambda_arctan"] == 1.0
    assert one_region.figures["records_compared"] == 24 and one_region.figures["records_removed"] == 0
    assert len(one_region.topsis) == 24 and one_region.topsis.between(0, 1).all()
    assert loss.plan("not_a_plan").figures == {} and loss.plan("not_a_plan").topsis.empty
    # stored as before for readers outside Python: one Parquet file per table in the wave's folder
    stored = sdc_home / "storage" / "two_keys" / "information_loss" / WAVE
    assert sorted(p.name for p in stored.glob("*.parquet")) == ["measure_notes.parquet", "per_record.parquet",
                                                                "summary.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(stored / "summary.parquet"), loss.summary)
