"""The release stage (issue 35): one asset per survey, ``<survey>/release``, receives the protected
variants and their evaluation as inputs and writes each plan's decision and the wave's one release;
the protected assets write no file. The loss stage's result is typed (InformationLoss, PlanLoss).

The wave: 24 records keyed by sex and region (13 m, 11 f; regions r1..r4 of 6, 6, 8 and 4 records),
k = 5. Merging every region into one leaves sex alone as the key: 13 and 11 records, 5-anonymous;
merging the sexes leaves region alone: r4 keeps 4 records < 5, withheld; merging both leaves one
group of 24, 5-anonymous, with every value the first plan changed changed and the sex of 11
records more."""

import hashlib
import json
from dataclasses import replace

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, materialize

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.cli import EXIT_USAGE, main
from sdc_dagster.pipeline.evaluation import InformationLoss, PlanLoss, information_loss, residual_risk
from sdc_dagster.pipeline.ingest import ingest_wave
from sdc_dagster.pipeline.protection import protect_variant
from sdc_dagster.pipeline.report_inputs import WaveEvaluation
from sdc_dagster.releases.manifest import MANIFEST, WITHHELD, list_decisions
from sdc_dagster.releases.wave import (
    WaveRelease,
    file_report,
    publish_wave_release,
    release_wave,
    staged_wave_release,
    wave_release,
)
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
    # one_region, the one eligible plan, is the wave's one release, staged until its report is filed
    # (the report comes next)
    assert made.recommendation.plan == "one_region"
    assert made.released["plan"] == "one_region" and "report" not in made.released
    assert staged_wave_release(sdc_home / "releases", "two_keys", WAVE) == made.released
    assert wave_release(sdc_home / "releases", "two_keys", WAVE) is None
    # the manifest's loss is the evaluation's (the release stage's input), the figure the report shows
    loss = upstream.output_for_node("two_keys__information_loss", "result")
    manifest = made.decisions["one_region"].manifest
    assert manifest["loss"] == loss.plan("one_region").headline
    assert manifest["loss"]["lambda_arctan"] == loss.summary.loc["one_region", "lambda_arctan"] == pytest.approx(24 / 48)
    assert made.search is None and made.advice is None  # the spec does not search
    # the release rules of every plan are the release stage's checks; the protected assets have none
    assert {e.asset_key for e in upstream.get_asset_check_evaluations()} == {key("risk_scores")}
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert {name.split("__")[0] for name in checks} == {"one_region", "one_sex", "one_group"}
    assert not checks["one_sex__k_anonymity"].passed and checks["one_region__k_anonymity"].passed
    assert checks["one_sex__k_anonymity"].metadata["value"].value == 4  # the 4 records of r4, all m
    metadata = instance.get_latest_materialization_event(key("release")).asset_materialization.metadata
    assert metadata["released_plan"].value == "one_region"
    assert metadata["decisions"].value["one_sex"]["withheld"]["k_anonymity"].startswith("every record")

    report = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                         selection=[key("sdc_report")])
    assert report.success
    html = sdc_home / "reports" / "two_keys" / f"{WAVE}.html"
    assert wave_release(sdc_home / "releases", "two_keys", WAVE)["report"]["file"] == str(html)
    assert staged_wave_release(sdc_home / "releases", "two_keys", WAVE) is None  # filed: the release is current
    assert f"run {result.run_id}" in html.read_text()  # the report links the decisions of the release stage

    # a run stopped after its release stage (killed before the report): the filed release stays current
    filed = wave_release(sdc_home / "releases", "two_keys", WAVE)
    again = materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                        selection=[key("release")])
    assert wave_release(sdc_home / "releases", "two_keys", WAVE) == filed
    assert staged_wave_release(sdc_home / "releases", "two_keys", WAVE)["run_id"] == again.run_id
    # the report of that release stage (here from the UI, in a run of its own) files its choice
    assert materialize(chain, partition_key=WAVE, instance=instance, resources=configured_resources(),
                       selection=[key("sdc_report")]).success
    assert wave_release(sdc_home / "releases", "two_keys", WAVE)["run_id"] == again.run_id
    assert staged_wave_release(sdc_home / "releases", "two_keys", WAVE) is None


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


# --- the release stage as engine functions: the loss it records, its choice staged until the report

def engine_wave(home):
    """The spec and wave of :func:`chain` read, protected and evaluated without Dagster: the spec,
    the raw wave, the variants and their evaluation."""
    (home / "specs").mkdir(parents=True)
    (home / "specs" / "two_keys.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    (home / "landing" / "two_keys").mkdir(parents=True)
    DATA.to_csv(home / "landing" / "two_keys" / f"{WAVE}.csv", index=False)
    spec = load_spec(home / "specs" / "two_keys.yaml")
    raw = ingest_wave(spec, WAVE, home / "landing", home / "inputs")
    variants = {plan.name: protect_variant(raw.data, spec, plan, wave=WAVE) for plan in spec.plans}
    frames = {name: v.data for name, v in variants.items()}
    evaluation = WaveEvaluation(residual=residual_risk(raw.data, frames, spec),
                                loss=information_loss(raw.data, frames, spec))
    return spec, raw, variants, evaluation


def test_the_manifest_records_the_loss_the_release_stage_receives(tmp_path):
    spec, raw, variants, evaluation = engine_wave(tmp_path)
    releases = tmp_path / "releases"
    # a loss of the evaluation's own making: the manifest takes it as given, computing nothing again
    given = {"lambda_arctan": 0.125, "topsis_mean": 0.5, "values_compared": 48, "records_compared": 24,
             "records_removed": 0}
    received = replace(evaluation, loss=replace(evaluation.loss, headline={**evaluation.loss.headline,
                                                                           "one_region": given}))
    made = release_wave(releases, spec, WAVE, raw, variants, received, run_id="run1")
    assert made.decisions["one_region"].manifest["loss"] == given
    # the others carry the evaluation's figures: one_group releases both keys as one category, every one
    # of the 48 values lost (issues 34, 38; 18 regions and 11 sexes changed, 29 / 48, before that rule)
    assert made.decisions["one_group"].manifest["loss"]["lambda_arctan"] == 1.0
    # a plan the evaluation did not evaluate: no decision is written at all
    unevaluated = replace(evaluation, loss=replace(evaluation.loss, headline={
        name: figures for name, figures in evaluation.loss.headline.items() if name != "one_sex"}))
    with pytest.raises(ValueError, match="plan.s. one_sex have no information loss"):
        release_wave(releases, spec, WAVE, raw, variants, unevaluated, run_id="run2")
    assert all(folder.name == "run1" for plan in variants for folder in list_decisions(releases, "two_keys", WAVE, plan))


def test_a_withheld_key_is_the_same_total_loss_in_the_summary_and_the_manifest(tmp_path):
    """SPEC §9.1's lambda over the original's keys: a variant releasing sex unchanged and withholding
    region compares 24 sex values (d = 0) and loses the 24 observed regions (d = 1 each): 24 / 48.
    The summary the report and ``sdc run`` show and the manifest's figure are one number."""
    spec, raw, _, _ = engine_wave(tmp_path)
    loss = information_loss(raw.data, {"no_region": raw.data.drop(columns="region")}, spec)
    assert loss.summary.loc["no_region", "lambda_arctan"] == pytest.approx(24 / 48)
    assert loss.summary.loc["no_region", "values_withheld"] == 24
    assert loss.plan("no_region").headline["lambda_arctan"] == loss.plan("no_region").figures["lambda_arctan"]
    assert loss.plan("no_region").headline["values_compared"] == 24


def test_a_run_killed_before_its_report_leaves_the_previous_release_current(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDC_HOME", str(tmp_path))
    spec, raw, variants, evaluation = engine_wave(tmp_path)
    releases, html = tmp_path / "releases", tmp_path / "reports" / "two_keys" / f"{WAVE}.html"
    html.parent.mkdir(parents=True)

    def report(text):
        def write():
            html.write_text(text)
            return html
        return write

    first = release_wave(releases, spec, WAVE, raw, variants, evaluation, run_id="run1")
    assert first.run_id == "run1" and first.released["plan"] == "one_region"
    filed = file_report(releases, "two_keys", WAVE, report("report of run1"), run_id="run1")
    assert filed == wave_release(releases, "two_keys", WAVE)
    assert filed["report"] == {"file": str(html), "sha256": hashlib.sha256(b"report of run1").hexdigest()}

    # run2's release stage decides, then the run is killed: its report is never filed
    release_wave(releases, spec, WAVE, raw, variants, evaluation, run_id="run2")
    assert wave_release(releases, "two_keys", WAVE) == filed  # run1's release, with its own report, is current
    assert staged_wave_release(releases, "two_keys", WAVE)["run_id"] == "run2"
    # sdc audit names the unfinished run and fails; no plan can be promoted over it
    capsys.readouterr()
    assert main(["audit", WAVE, "--survey", "two_keys", "--plan", "one_region"]) == 1
    out = capsys.readouterr().out
    assert (f"wave {WAVE} of two_keys: run run2 chose plan one_region but never filed the report that explains it "
            "(the run did not finish): that choice is not released; finish it: sdc run two_keys 2024") in out
    assert "release run2 (eligible alternative)" in out  # run2's decision is not the wave's release
    assert main(["audit", WAVE, "--survey", "two_keys", "--plan", "one_region", "--run", "run1"]) == 1
    assert "release run1 (the wave's release)" in (out := capsys.readouterr().out) and f"report {html}: ok" in out
    with pytest.raises(ValueError, match="run run2 chose plan one_region but never filed"):
        publish_wave_release(releases, "two_keys", WAVE, "one_group", reason="test")
    assert main(["promote", "two_keys", WAVE, "one_group"]) == EXIT_USAGE
    # a report of another run's decisions does not file run2's choice, and is not written
    with pytest.raises(RuntimeError, match="the choice waiting for its report is run run2's"):
        file_report(releases, "two_keys", WAVE, report("report of run3"), run_id="run3")
    assert html.read_text() == "report of run1"
    # the report of run2's release stage finishes it
    finished = file_report(releases, "two_keys", WAVE, report("report of run2"), run_id="run2")
    assert finished["run_id"] == "run2" and finished == wave_release(releases, "two_keys", WAVE)
    assert finished["report"]["sha256"] == hashlib.sha256(b"report of run2").hexdigest()
    assert staged_wave_release(releases, "two_keys", WAVE) is None
    capsys.readouterr()
    assert main(["audit", WAVE, "--survey", "two_keys", "--plan", "one_region"]) == 0, capsys.readouterr().out


def test_a_staged_choice_of_no_plan_withdraws_the_release_when_filed_and_a_failed_report_withdraws_it(tmp_path):
    spec, raw, variants, evaluation = engine_wave(tmp_path)
    releases, html = tmp_path / "releases", tmp_path / "report.html"

    def write():
        html.write_text("report")
        return html

    release_wave(releases, spec, WAVE, raw, variants, evaluation, run_id="run1")
    file_report(releases, "two_keys", WAVE, write, run_id="run1")
    # run2 evaluates one_sex alone, withheld (r4 keeps 4 records < k = 5): no plan is eligible
    alone = release_wave(releases, spec, WAVE, raw, {"one_sex": variants["one_sex"]}, evaluation, run_id="run2")
    assert alone.released is None
    assert staged_wave_release(releases, "two_keys", WAVE) == {
        "survey": "two_keys", "wave": WAVE, "plan": None, "run_id": "run2",
        "reason": "no plan passes every blocking check"}
    assert wave_release(releases, "two_keys", WAVE)["run_id"] == "run1"  # until run2's report is filed
    assert file_report(releases, "two_keys", WAVE, write, run_id="run2") is None
    assert wave_release(releases, "two_keys", WAVE) is None and staged_wave_release(releases, "two_keys", WAVE) is None

    # a report that cannot be written withdraws the release and its staged choice (issue 25)
    release_wave(releases, spec, WAVE, raw, variants, evaluation, run_id="run3")
    file_report(releases, "two_keys", WAVE, write, run_id="run3")
    release_wave(releases, spec, WAVE, raw, variants, evaluation, run_id="run4")

    def broken():
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        file_report(releases, "two_keys", WAVE, broken, run_id="run4")
    assert wave_release(releases, "two_keys", WAVE) is None and staged_wave_release(releases, "two_keys", WAVE) is None
