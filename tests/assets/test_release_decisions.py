"""Blocking release checks: a variant that fails one is withheld (no protected file, no release
manifest), the report names the failed check and why, and warnings stay warnings."""

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetCheckSeverity, AssetKey, materialize
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.resources import configured_resources
from sdc_dagster.releases.digests import spec_text_sha256
from sdc_dagster.releases.manifest import list_releases, release_root
from sdc_dagster.releases.wave import wave_release
from sdc_dagster.pipeline import protection
from sdc_dagster.cli import run_audit
from sdc_dagster.spec import load_spec

WAVE = "2024"
GOLDEN = "tests/data/sdcmicro/golden/a_testdata_risk_per_record.csv"
TESTDATA_SPEC = load_spec(Path(__file__).resolve().parents[2] / "examples" / "testdata.yaml")


@pytest.fixture
def spec_with_a_failing_plan(testdata_only_specs):
    """testdata with two plans: local suppression to 3-anonymity, and microaggregation of the
    continuous keys only, which leaves the categorical keys (and their k-anonymity) as they were."""
    path = testdata_only_specs / "testdata.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["plans"] = {
        "suppress_k3": spec["plans"]["suppress_k3"],
        "aggregate_only": {
            "description": "MDAV microaggregation of the continuous keys, categorical keys untouched",
            "k": 3,
            "steps": [{"method": "microaggregation", "columns": ["expend", "income", "savings"], "k": 3}],
        },
    }
    # Low enough that some unprotected records exceed it (a warning, not blocking).
    spec["risk"]["individual_risk_threshold"] = 0.002
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_spec(path)


@pytest.mark.slow
def test_a_variant_failing_a_blocking_check_is_withheld_and_the_report_says_why(
    sdc_home, testdata_only_specs, spec_with_a_failing_plan, instance, capsys
):
    spec = spec_with_a_failing_plan
    landing = sdc_home / "landing" / "testdata"
    landing.mkdir(parents=True)
    shutil.copy(testdata_only_specs / "data" / "testdata.csv", landing / f"{WAVE}.csv")
    instance.add_dynamic_partitions("testdata_waves", [WAVE])
    result = materialize(
        build_survey_assets(spec).assets,
        partition_key=WAVE,
        instance=instance,
        resources=configured_resources(),
    )
    assert result.success  # the failing plan is withheld, the rest of the chain still runs

    # sdcMicro's figures for the unprotected keys (the plan left them as they were).
    golden = pd.read_csv(GOLDEN)
    violations = int((golden["fk"] < 3).sum())
    above_threshold = int((golden["risk"] > spec.risk.individual_risk_threshold).sum())
    assert violations > 0 and above_threshold > 0

    # every plan's release checks are checks of the release stage, named <plan>__<check>
    checks = {
        tuple(e.check_name.split("__")): e
        for e in result.get_asset_check_evaluations()
        if e.asset_key.path[-1] == "release"
    }
    failed = checks[("aggregate_only", "k_anonymity")]
    # another plan is the wave's release: the withheld alternative's failure is a warning of the
    # release stage, which the lineage shows with a warning rather than as failed
    assert not failed.passed and failed.severity == AssetCheckSeverity.WARN
    assert failed.metadata["value"].value == violations
    # the UI labels the checks "non-blocking" (Dagster's flag is unused): the metadata says what failing does
    assert failed.metadata["withholds_variant"].value is True and "blocking" not in failed.metadata
    assert checks[("aggregate_only", "global_risk")].passed
    assert checks[("aggregate_only", "no_direct_identifier")].passed
    warning = checks[("aggregate_only", "individual_risk")]
    assert warning.severity == AssetCheckSeverity.WARN
    assert warning.metadata["value"].value == above_threshold
    assert warning.metadata["withholds_variant"].value is False
    assert all(checks[("suppress_k3", name)].passed for name in ("k_anonymity", "global_risk"))

    # Nothing is published for the withheld plan: no protected file, no manifest, no release.
    root = release_root(sdc_home / "releases", "testdata", WAVE, "aggregate_only")
    assert list_releases(sdc_home / "releases", "testdata", WAVE, "aggregate_only") == []
    assert not list(root.rglob("protected.parquet")) and not list(root.rglob("manifest.json"))
    (record,) = root.rglob("withheld.json")
    withheld = json.loads(record.read_text())
    # MDAV over the whole file also leaves the amounts linkable (continuous keys): two reasons
    assert list(withheld["withheld"]) == ["k_anonymity", "linkage_risk"] and withheld["output"] is None
    assert not checks[("aggregate_only", "linkage_risk")].passed
    assert f"found: {violations}" in withheld["withheld"]["k_anonymity"]
    # The releasable plan is published as before.
    (released,) = list_releases(sdc_home / "releases", "testdata", WAVE, "suppress_k3")
    assert (released / "protected.parquet").is_file()

    # The report says which plan was withheld, by which check and why; the warning is listed too.
    report = (sdc_home / "reports" / "testdata" / f"{WAVE}.html").read_text()
    decision = report[report.index('id="release-decision"'):report.index('id="provenance"')]
    assert "withheld" in decision and "released" in decision
    assert f"k_anonymity: every record&#x27;s key is shared by at least k=3 records (found: {violations})" in decision
    assert f"individual_risk: no record with individual risk &gt; 0.002 (found: {above_threshold})" in decision
    materialization = instance.get_latest_materialization_event(AssetKey(["testdata", "sdc_report"]))
    # the demo spec searches: the searched plan passes too; one of the two is the wave's release
    assert materialization.asset_materialization.metadata["releasable_plans"].value == "suppress_k3, searched"
    assert wave_release(sdc_home / "releases", "testdata", WAVE)["plan"] in ("suppress_k3", "searched")

    # An audit finds no release of the withheld plan.
    assert run_audit(WAVE, plan="aggregate_only") == 2
    assert "no release of plan 'aggregate_only'" in capsys.readouterr().out


@settings(max_examples=40, deadline=None)
@given(
    codes=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 2)), min_size=1, max_size=40),
    k=st.integers(1, 4),
    max_global_risk=st.sampled_from([0.01, 0.2, 1.0]),
)
def test_release_checks_block_exactly_the_failed_rules(codes, k, max_global_risk):
    """Blocking follows the rules: k-anonymity against a plain group count, global risk against the
    unweighted mean of 1/fk (SPEC §3.3 without weights), and only blocking rules withhold."""
    spec = dataclasses.replace(
        TESTDATA_SPEC,
        variables=tuple(v for v in TESTDATA_SPEC.variables if v.name in ("urbrur", "sex")),  # unweighted
        risk=dataclasses.replace(TESTDATA_SPEC.risk, max_global_risk=max_global_risk),
    )
    plan = dataclasses.replace(TESTDATA_SPEC.plans[0], k=k)
    frame = pd.DataFrame(codes, columns=["urbrur", "sex"])
    checks = protection.release_checks(frame, spec, plan, original=frame)
    fk = frame.groupby(["urbrur", "sex"])["sex"].transform("size")
    assert checks["k_anonymity"].value == int((fk < k).sum())
    assert checks["global_risk"].value == pytest.approx(float((1 / fk).mean()))
    failed = {name for name, c in checks.items() if not c.passed}
    assert set(protection.blocking_failures(checks)) == failed - {"individual_risk"}
    assert set(protection.release_warnings(checks)) == failed & {"individual_risk"}


def test_a_release_check_that_cannot_be_evaluated_fails_with_the_reason():
    """Issue 21: a variant whose risk cannot be computed (here a weight left missing in one record)
    is withheld: its risk checks fail, each saying that it was not evaluated and why."""
    spec = dataclasses.replace(
        TESTDATA_SPEC,
        variables=tuple(v for v in TESTDATA_SPEC.variables if v.name in ("urbrur", "sex", "sampling_weight")),
    )
    plan = TESTDATA_SPEC.plans[0]
    frame = pd.DataFrame({"urbrur": [1, 1, 1, 2, 2, 2], "sex": [1] * 6, "sampling_weight": [10.0, None, 5, 5, 5, 5]})
    checks = protection.release_checks(frame, spec, plan, original=frame)
    for name in ("k_anonymity", "global_risk", "individual_risk"):
        assert checks[name].passed is False
        assert checks[name].value.startswith("not evaluated: weight 'sampling_weight' has 1 missing values")
    assert checks["no_direct_identifier"].passed is True
    failures = protection.blocking_failures(checks)
    assert set(failures) == {"k_anonymity", "global_risk"}
    assert "not evaluated: weight 'sampling_weight'" in failures["global_risk"]


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n")), max_size=5),
       newline=st.sampled_from(["\n", "\r\n", "\r"]))
def test_spec_copy_hash_is_the_hash_load_spec_records(tmp_path_factory, lines, newline):
    """A stored spec copy (raw bytes) hashes as SurveySpec.spec_hash hashes the text Python reads."""
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_bytes(newline.join(lines).encode("utf-8"))
    expected = hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest()
    assert spec_text_sha256(path.read_bytes()) == expected


def test_a_failed_release_check_is_an_error_only_when_the_wave_releases_nothing():
    """The release stage is the wave's release: a withheld alternative's failed blocking check is a
    warning of it when another plan is released, an error when nothing is; a failed warning (not
    blocking) stays a warning either way."""
    from types import SimpleNamespace

    from sdc_dagster.assets.checks import release_check_results
    from sdc_dagster.pipeline.protection import CheckOutcome

    variants = {"coarse": SimpleNamespace(checks={
        "k_anonymity": CheckOutcome(passed=False, value=4, rule="k-anonymity", blocking=True),
        "individual_risk": CheckOutcome(passed=False, value=2, rule="individual risk", blocking=False)})}
    for released, blocking_severity in ((True, AssetCheckSeverity.WARN), (False, AssetCheckSeverity.ERROR)):
        results = {r.check_name: r for r in release_check_results(variants, wave_released=released)}
        assert results["coarse__k_anonymity"].severity == blocking_severity
        assert results["coarse__individual_risk"].severity == AssetCheckSeverity.WARN
        assert not results["coarse__k_anonymity"].passed
        assert results["coarse__k_anonymity"].metadata["withholds_variant"].value is True
