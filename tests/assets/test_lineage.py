"""Lineage audits: releases are reproducible byte for byte, versioned by run, published in a shuffled
order with new ids, and staleness follows exactly the spec part that changed (Dagster's own staleness)."""

import json
import shutil

import pandas as pd
import pytest
import yaml
from dagster import AssetKey
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from sdc_dagster.releases import manifest as manifests
from sdc_dagster.releases.digests import WaveSnapshot
from sdc_dagster.releases.files import PROTECTED, SafeFiles
from sdc_dagster.cli import run_audit
from sdc_dagster.definitions import build_definitions
from sdc_dagster.spec import load_spec

WAVE = "2024"


def run_wave(specs, home, instance, assets=None):
    """The wave job on the spec folder's testdata as wave 2024: every asset, or the assets named in
    ``assets`` (the release stage writes each plan's release or withheld record)."""
    folder = home / "landing" / "testdata"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / f"{WAVE}.csv").exists():
        shutil.copy(specs / "data" / "testdata.csv", folder / f"{WAVE}.csv")
    defs = build_definitions(specs)
    if WAVE not in instance.get_dynamic_partitions("testdata_waves"):
        instance.add_dynamic_partitions("testdata_waves", [WAVE])
    selection = None if assets is None else [AssetKey(["testdata", name]) for name in assets]
    result = defs.resolve_job_def("testdata_wave_job").execute_in_process(partition_key=WAVE, instance=instance,
                                                                          asset_selection=selection)
    assert result.success
    return defs, result


def releases(home, plan):
    return manifests.list_releases(home / "releases", "testdata", WAVE, plan)


@pytest.mark.slow
def test_rerun_is_byte_identical_and_keeps_the_earlier_release(sdc_home, testdata_only_specs, instance):
    _, first = run_wave(testdata_only_specs, sdc_home, instance)
    _, second = run_wave(testdata_only_specs, sdc_home, instance)
    for plan in ("suppress_k3", "recode_suppress"):
        folders = releases(sdc_home, plan)
        assert [f.name for f in folders] == [first.run_id, second.run_id]
        old, new = (manifests.read_manifest(f) for f in folders)
        assert (folders[0] / "protected.parquet").read_bytes() == (folders[1] / "protected.parquet").read_bytes()
        for part in ("input", "spec", "output"):
            assert old[part]["sha256"] == new[part]["sha256"]
        assert new["previous_release"] == first.run_id and old["previous_release"] is None
        # local suppression, then microaggregation of the continuous keys (the linkage-risk check)
        assert new["steps"] == old["steps"] and [s["method"] for s in new["steps"]][-2:] == [
            "local_suppression", "microaggregation"]
        assert set(new["packages"]) >= {"sdc-dagster", "dagster", "pandas", "numpy", "duckdb"}
        assert new["checks"]["k_anonymity"]["passed"] is True
        assert new["run_id"] == second.run_id
    report = (sdc_home / "reports" / "testdata" / f"{WAVE}.html").read_text()
    assert f"run {second.run_id}" in report and f"supersedes" in report

    # The published files hold the wave's records in another order with households renumbered
    # 1..H; the asset that residual risk and loss read keeps the wave's order, record by record.
    asset = second.asset_value(AssetKey(["testdata", "protected_suppress_k3"])).data
    folder = releases(sdc_home, "suppress_k3")[-1]
    manifest = manifests.read_manifest(folder)
    published = pd.read_parquet(folder / "protected.parquet")
    original = pd.read_csv(testdata_only_specs / "data" / "testdata.csv")
    amounts = ["expend", "income", "savings"]
    assert asset.index.equals(original.index)
    untouched = ["hhcivil", "sampling_weight"]  # the plan changes neither: the asset keeps the wave's order
    assert (asset[untouched].to_numpy(dtype=float) == original[untouched].to_numpy(dtype=float)).all()
    # the plan microaggregates the amounts: the published records are the asset's, in another order
    columns = amounts + untouched
    assert sorted(map(tuple, published[columns].to_numpy(float))) == sorted(map(tuple, asset[columns].to_numpy(float)))
    in_place = (published[columns].to_numpy(float) == asset[columns].to_numpy(float)).all(axis=1)
    assert int(in_place.sum()) <= 20
    assert published["ori_hid"].drop_duplicates().tolist() == list(range(1, original["ori_hid"].nunique() + 1))
    assert manifest["output"]["order"]["renumbered_ids"] == ["ori_hid"]
    assert isinstance(manifest["output"]["order"]["seed"], int)
    assert sorted(manifest["output"]["files"]) == ["protected.csv", "protected.parquet", "value_labels.csv"]
    # suppress_k3 merges no category: the label table has its header only (a CSV wave has no labels)
    assert manifest["output"]["categories"] == {"merged": {}, "perturbed_keys": []}


@pytest.mark.slow
def test_audit_verifies_and_detects_a_hand_edited_release(sdc_home, testdata_only_specs, instance, capsys):
    run_wave(testdata_only_specs, sdc_home, instance)
    assert run_audit(WAVE, plan="suppress_k3") == 0
    out = capsys.readouterr().out
    assert "audit OK: recomputed output is byte-identical" in out and '"plan": "suppress_k3"' in out

    # a CSV wave is released as CSV and Parquet, each verified
    assert "  protected.csv: ok\n  protected.parquet: ok\n  value_labels.csv: ok\n" in out

    folder = releases(sdc_home, "suppress_k3")[-1]
    target = folder / "protected.parquet"
    edited = pd.read_parquet(target)
    edited.loc[edited.index[0], "sex"] = 2 if edited.loc[edited.index[0], "sex"] == 1 else 1
    edited.to_parquet(target)
    assert run_audit(WAVE, plan="suppress_k3") == 1
    out = capsys.readouterr().out
    assert "audit FAILED: the released file protected.parquet differs from the hash in its manifest" in out

    csv = folder / "protected.csv"
    flipped = bytearray(csv.read_bytes())
    flipped[-2] ^= 0x01
    csv.write_bytes(bytes(flipped))
    assert run_audit(WAVE, plan="suppress_k3") == 1
    assert "  protected.csv: differs from the hash in its manifest\n" in capsys.readouterr().out


@pytest.mark.slow
def test_manifest_never_holds_a_direct_identifier_value(sdc_home, testdata_only_specs, instance):
    data = pd.read_csv(testdata_only_specs / "data" / "testdata.csv")
    data.insert(0, "person_name", [f"Person-{i:05d}" for i in range(len(data))])
    data.to_csv(testdata_only_specs / "data" / "testdata.csv", index=False)
    spec = yaml.safe_load((testdata_only_specs / "testdata.yaml").read_text())
    spec["variables"] = {"person_name": {"role": "direct_identifier"}, **spec["variables"]}
    (testdata_only_specs / "testdata.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    plans = ("suppress_k3", "recode_suppress")
    run_wave(testdata_only_specs, sdc_home, instance)  # the release stage writes every plan's decision
    for plan in plans:
        folder = releases(sdc_home, plan)[-1]
        text = (folder / "manifest.json").read_text()
        assert "Person-" not in text
        assert "person_name" not in pd.read_parquet(folder / "protected.parquet").columns
        assert json.loads(text)["checks"]["no_direct_identifier"]["passed"] is True


@pytest.mark.slow
def test_changed_plan_parameter_marks_exactly_its_dependents_stale(sdc_home, testdata_only_specs, instance):
    run_wave(testdata_only_specs, sdc_home, instance)
    spec = yaml.safe_load((testdata_only_specs / "testdata.yaml").read_text())
    spec["plans"]["recode_suppress"]["steps"][0]["mapping"] = {7: 6, 8: 6, 9: 6}
    (testdata_only_specs / "testdata.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    defs = build_definitions(testdata_only_specs)

    def stale() -> set[str]:
        graph = defs.resolve_asset_graph()
        resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
        return {
            key.path[-1]
            for key in graph.get_all_asset_keys()
            if key.path[0] == "testdata" and resolver.get_status(key, WAVE) == StaleStatus.STALE
        }

    # The changed plan's asset, and the report that lists the plans, have a new code version.
    assert stale() == {"protected_recode_suppress", "sdc_report"}
    # Rematerialising the plan gives it a new data version: its readers become stale, nothing else.
    job = defs.resolve_job_def("testdata_wave_job")
    assert job.execute_in_process(
        partition_key=WAVE, instance=instance, asset_selection=[AssetKey(["testdata", "protected_recode_suppress"])]
    ).success
    assert stale() == {"residual_risk", "residual_contributions", "information_loss", "release", "sdc_report"}


@pytest.mark.slow
def test_naming_the_reports_signers_marks_the_report_alone_stale(sdc_home, testdata_only_specs, instance):
    """``report: {prepared_by: ...}`` changes the sign-off block only: the report is stale, nothing else."""
    run_wave(testdata_only_specs, sdc_home, instance)
    spec = yaml.safe_load((testdata_only_specs / "testdata.yaml").read_text())
    spec["report"] = {"prepared_by": "A. Nowak"}
    (testdata_only_specs / "testdata.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    graph = build_definitions(testdata_only_specs).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    assert {key.path[-1] for key in graph.get_all_asset_keys()
            if key.path[0] == "testdata" and resolver.get_status(key, WAVE) == StaleStatus.STALE} == {"sdc_report"}


@pytest.mark.slow
def test_audit_fails_naming_an_edited_spec_copy(sdc_home, testdata_only_specs, instance, capsys):
    run_wave(testdata_only_specs, sdc_home, instance)
    folder = releases(sdc_home, "suppress_k3")[-1]
    copy = folder / "spec.yaml"
    manifest = manifests.read_manifest(folder)
    # The copy's recorded hash is SurveySpec.spec_hash, computed by load_spec from the original.
    assert manifest["spec"]["sha256"] == load_spec(testdata_only_specs / "testdata.yaml").spec_hash
    assert run_audit(WAVE, plan="suppress_k3") == 0
    capsys.readouterr()

    # An edit that leaves the plan's output unchanged: only the copy's hash can catch it.
    copy.write_text(copy.read_text().replace("title:", "# edited after release\ntitle:", 1))
    assert run_audit(WAVE, plan="suppress_k3") == 1
    out = capsys.readouterr().out
    assert f"audit FAILED: the stored spec copy {copy} is missing or differs from the spec hash" in out


def test_release_refuses_a_spec_file_changed_since_it_was_loaded(sdc_home, testdata_only_specs, instance):
    path = testdata_only_specs / "testdata.yaml"
    spec = load_spec(path)
    path.write_text(path.read_text() + "\n# edited after loading\n")
    with pytest.raises(RuntimeError, match="changed since the spec was loaded"):
        manifests.write_release(sdc_home / "releases", manifests.ReleaseRecord(
            survey="testdata", wave=WAVE, plan="suppress_k3", run_id="r1", protected=pd.DataFrame({"a": [1]}),
            source=WaveSnapshot(file=path, snapshot=path, sha256="x"), spec_path=path, spec_sha256=spec.spec_hash,
            plan_definition={}, steps=[], risk={}, loss={}, checks={}, safe=SafeFiles(files={PROTECTED: b""}, order={}),
        ))
    assert not (sdc_home / "releases").exists()
