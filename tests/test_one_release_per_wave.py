"""One release per wave: the report's recommendation is the wave's release, the other plans that
pass every blocking check stay eligible alternatives (``sdc promote`` makes one the release), and a
wave with no eligible plan releases nothing, exits 3 and fails its Dagster run (the report's
blocking ``wave_released`` check)."""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import DagsterInstance, DagsterRunStatus

from sdc_dagster.releases.digests import WaveSnapshot, parquet_bytes, sha256_bytes, spec_text_sha256
from sdc_dagster.releases.files import SafeFiles
from sdc_dagster.releases.manifest import ReleaseRecord, list_decisions, list_releases, write_release
from sdc_dagster.releases.replay import verify_release
from sdc_dagster.releases.wave import publish_wave_release, wave_release
from sdc_dagster.cli import EXIT_OK, EXIT_USAGE, EXIT_WITHHELD, main
from sdc_dagster.spec import SpecError, load_spec, spec_text_with_plans

CHECKOUT = Path(__file__).resolve().parents[1]
TESTDATA = CHECKOUT / "examples" / "data" / "testdata.csv"


def sdc(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    status = main(list(argv))
    return status, capsys.readouterr().out


def own_survey(tmp_path, home, capsys, suppression_k: list[int], **risk) -> Path:
    """Every second record of testdata as survey ``own``, wave 2024, its amounts and age not keys (so
    the categorical checks decide), with local suppression once per k of ``suppression_k`` (plans
    ``suppress_k<k>``), search off, the risk target updated with ``risk``."""
    source = tmp_path / "own.csv"
    pd.read_csv(TESTDATA).iloc[::2].to_csv(source, index=False)
    assert sdc(capsys, "init", "own", "--from", str(source))[0] == EXIT_OK
    spec_file = home / "specs" / "own.yaml"
    spec = yaml.safe_load(spec_file.read_text())
    for variable in spec["variables"].values():
        if variable["role"] == "continuous_key":
            variable["role"] = "other"
    # sdcMicro's example keys: the draft makes age in whole years a key (issue 34), whose local
    # suppression alone exceeds the 10 % suppression limit; these tests compare plans on the others
    spec["variables"]["age"] = {"role": "other"}
    # sdcMicro's example keys as keys, whatever the draft's key cap left out (issues 34, 38)
    for key in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex"):
        spec["variables"][key]["role"] = "categorical_key"
    spec["plans"] = {f"suppress_k{k}": {"k": 3, "steps": [{"method": "local_suppression", "k": k}]}
                     for k in suppression_k}
    spec.pop("search", None)
    # no l-diversity of the drafted sensitive hhcivil (issue 34: local suppression alone cannot reach
    # it on testdata); these tests are about the release decision between plans
    spec["risk"].pop("l", None)
    spec["risk"].update(risk)
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    return source


@pytest.mark.slow
def test_the_recommendation_is_the_one_release_and_another_can_be_promoted(tmp_path, home, capsys):
    source = own_survey(tmp_path, home, capsys, [3, 5])
    status, text = sdc(capsys, "run", "own", "2024", "--file", str(source))
    assert status == EXIT_OK, text
    releases = home / "releases"
    record = wave_release(releases, "own", "2024")
    # both plans pass; the report's recommendation (least information loss) is the one release
    report = json.loads((home / "reports" / "own" / "2024.json").read_text())
    chosen = report["decision"]["recommended"]
    other = ({"suppress_k3", "suppress_k5"} - {chosen}).pop()
    assert record["plan"] == chosen and record["reason"].startswith("recommended")
    assert f"sdc run: released plan {chosen} ({record['folder']})" in text
    rows = {line.split()[0]: line.split()[-1] for line in text.splitlines() if line.startswith("suppress_k")}
    assert rows == {chosen: "released", other: "eligible"}

    status, text = sdc(capsys, "promote", "own", "2024", other)
    assert status == EXIT_OK, text
    promoted = wave_release(releases, "own", "2024")
    assert promoted["plan"] == other and promoted["reason"] == "promoted with sdc promote"
    assert Path(promoted["folder"]).parent.name == other and (Path(promoted["folder"]) / "manifest.json").is_file()
    assert f"(was {chosen})" in text

    # the wave's release records its report's digest; sdc audit verifies it (promotion keeps it)
    report_file = home / "reports" / "own" / "2024.html"
    assert promoted["report"] == record["report"] and record["report"]["file"] == str(report_file)
    status, text = sdc(capsys, "audit", "2024", "--survey", "own")
    assert status == EXIT_OK and f"report {report_file}: ok" in text, text
    report_file.write_text(report_file.read_text().replace("</body>", "<p>edited</p></body>"))
    status, text = sdc(capsys, "audit", "2024", "--survey", "own", "--plan", other)
    assert status == 1 and f"report {report_file}: is missing or differs" in text, text

    # an unknown plan or wave is a usage error; nothing changes
    assert sdc(capsys, "promote", "own", "2024", "nosuch")[0] == EXIT_USAGE
    assert sdc(capsys, "promote", "own", "1999", "suppress_k3")[0] == EXIT_USAGE
    assert wave_release(releases, "own", "2024")["plan"] == other


@pytest.mark.slow
def test_a_withheld_plan_cannot_be_promoted_and_a_wave_without_eligible_plan_releases_nothing(tmp_path, home, capsys):
    # a global-risk target no plan meets: every plan is withheld
    source = own_survey(tmp_path, home, capsys, [3], max_global_risk=1e-9)
    status, text = sdc(capsys, "run", "own", "2024", "--file", str(source))
    assert status == EXIT_WITHHELD, text
    assert "sdc run: nothing released for wave 2024" in text
    # the report is written: its step's progress line says the decision, not "FAILED"
    assert "own__sdc_report  check wave_released: no plan released (the report says why)" in text, text
    assert "FAILED" not in text, text
    assert wave_release(home / "releases", "own", "2024") is None
    assert (home / "reports" / "own" / "2024.html").is_file()  # the report still explains why
    # the Dagster run fails on the report's blocking check, as the exit status says
    with DagsterInstance.from_config(str(home / "dagster")) as instance:
        (run,) = instance.get_runs()
        assert run.status == DagsterRunStatus.FAILURE
    status, text = sdc(capsys, "promote", "own", "2024", "suppress_k3")
    assert status == EXIT_USAGE and "withheld" in text


def test_publish_wave_release_refuses_a_withheld_plan_and_withdraws(tmp_path):
    root = tmp_path / "releases"
    plan = root / "s" / "w" / "p" / "run1"
    plan.mkdir(parents=True)
    (plan / "withheld.json").write_text(json.dumps({"sequence": 1, "withheld": {"k_anonymity": "x"}}))
    with pytest.raises(ValueError, match="withheld"):
        publish_wave_release(root, "s", "w", "p", reason="test")
    with pytest.raises(ValueError, match="never materialised"):
        publish_wave_release(root, "s", "w", "q", reason="test")
    run2 = root / "s" / "w" / "p" / "run2"
    run2.mkdir()
    (run2 / "manifest.json").write_text(json.dumps({"sequence": 2}))
    assert publish_wave_release(root, "s", "w", "p", reason="test")["run_id"] == "run2"
    assert wave_release(root, "s", "w")["folder"] == str(run2)
    assert publish_wave_release(root, "s", "w", None, reason="none eligible") is None
    assert wave_release(root, "s", "w") is None


SPEC = """\
# my survey
survey: s
variables:
  a: {role: categorical_key}   # region
plans:
  # the first plan
  p1:
    k: 3
    steps:
      - {method: local_suppression, k: 3}

release:
  formats: [csv]
"""


def test_plans_are_added_to_the_spec_text_keeping_every_other_line(tmp_path):
    added = {"search_1": {"description": "found", "k": 3, "random_state": 7,
                          "steps": [{"method": "recode", "variable": "a", "groups": [[1, 2]]},
                                    {"method": "local_suppression", "k": 3}]}}
    text = spec_text_with_plans(SPEC, added)
    for line in SPEC.splitlines():
        assert line in text.splitlines()
    raw = yaml.safe_load(text)
    assert list(raw["plans"]) == ["p1", "search_1"] and raw["release"] == {"formats": ["csv"]}
    assert raw["plans"]["search_1"]["steps"][0] == {"method": "recode", "variable": "a", "groups": [[1, 2]]}
    assert text.index("search_1") < text.index("release:")
    with pytest.raises(SpecError, match="plans.p1: the spec already has a plan"):
        spec_text_with_plans(SPEC, {"p1": added["search_1"]})
    without = spec_text_with_plans("survey: s\nvariables:\n  a: {role: categorical_key}\n", added)
    assert list(yaml.safe_load(without)["plans"]) == ["search_1"]


def test_audit_verifies_the_pram_matrices_a_release_recorded(tmp_path):
    """Issue 25: a PRAM matrix edited after the release fails the audit, naming the file."""
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text("survey: s\n")
    protected = pd.DataFrame({"water": [1, 2, 2]})
    parquet = parquet_bytes(protected)
    matrix = pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], index=[1, 2], columns=[1, 2])
    release = write_release(tmp_path / "releases", ReleaseRecord(
        survey="s", wave="w", plan="p", run_id="r1", protected=protected,
        source=WaveSnapshot(file=spec_file, snapshot=spec_file, sha256=sha256_bytes(spec_file.read_bytes())),
        spec_path=spec_file, spec_sha256=spec_text_sha256(spec_file.read_bytes()), plan_definition={}, steps=[],
        risk={}, loss={}, checks={}, safe=SafeFiles(files={"protected.parquet": parquet}, order={}),
        matrices={"water": matrix}))
    assert set(release.manifest["pram_matrices_sha256"]) == {"pram_water.parquet"}
    recompute = lambda *args: {"protected.parquet": parquet}  # noqa: E731
    assert verify_release(release.folder, recompute).ok
    stored = release.folder / "pram_water.parquet"
    edited = pd.read_parquet(stored)
    edited.loc[0, "probability"] = 0.95
    edited.to_parquet(stored)
    verification = verify_release(release.folder, recompute)
    assert not verification.ok
    assert verification.files["pram_water.parquet"] == "differs from the hash in its manifest"
    assert "pram_water.parquet" in verification.detail


@pytest.mark.slow
def test_a_killed_run_is_marked_failed_by_the_next_sdc_run(tmp_path, home, capsys):
    """Issue 25: ``sdc run`` killed mid-way leaves its run STARTED; the next ``sdc run`` marks it
    failed (its process is gone) and publishes nothing under its id."""
    import os
    import signal
    import subprocess
    import sys
    import time

    source = own_survey(tmp_path, home, capsys, [3])
    env = {**os.environ, "SDC_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    process = subprocess.Popen([sys.executable, "-m", "sdc_dagster.cli", "run", "own", "2024", "--file", str(source)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    for line in process.stdout:  # killed once the chain is under way
        if "own/raw_microdata" in line or time.monotonic() > deadline:
            break
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    with DagsterInstance.from_config(str(home / "dagster")) as instance:
        (killed,) = instance.get_runs()
        assert killed.status == DagsterRunStatus.STARTED
    assert wave_release(home / "releases", "own", "2024") is None

    status, text = sdc(capsys, "run", "own", "2024")
    assert status == EXIT_OK, text
    assert f"run {killed.run_id} was killed before it finished: marked failed" in text
    with DagsterInstance.from_config(str(home / "dagster")) as instance:
        statuses = {run.run_id: run.status for run in instance.get_runs()}
    assert statuses.pop(killed.run_id) == DagsterRunStatus.FAILURE
    assert list(statuses.values()) == [DagsterRunStatus.SUCCESS]
    assert wave_release(home / "releases", "own", "2024")["run_id"] != killed.run_id


@pytest.mark.slow
def test_a_run_that_fails_after_its_plans_publishes_no_release(tmp_path, home, capsys, monkeypatch):
    """Issue 25: only a finished run, report written, publishes the wave's release. A run whose
    information loss fails writes no decision at all (the release stage receives the evaluation as
    its input); a run whose report fails has the plans' decisions written by the release stage, but
    the wave's release is withdrawn (issue 35: the release stage comes before the report)."""
    from sdc_dagster.pipeline import evaluation
    import sdc_dagster.assets.survey.report as report_asset

    source = own_survey(tmp_path, home, capsys, [3])

    def broken(what):
        def fail(*args, **kwargs):
            raise RuntimeError(f"{what} broke")
        return fail

    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "information_loss", broken("information loss"))
        status, text = sdc(capsys, "run", "own", "2024", "--file", str(source))
    assert status == 1 and "information loss broke" in text, text
    assert list_decisions(home / "releases", "own", "2024", "suppress_k3") == []  # no decision written
    assert wave_release(home / "releases", "own", "2024") is None

    with monkeypatch.context() as patch:
        patch.setattr(report_asset, "write_report", broken("the report"))
        status, text = sdc(capsys, "run", "own", "2024", "--file", str(source))
    assert status == 1 and "the report broke" in text, text
    assert list_releases(home / "releases", "own", "2024", "suppress_k3")  # the plan's decision
    assert wave_release(home / "releases", "own", "2024") is None  # but nothing released

    status, text = sdc(capsys, "run", "own", "2024", "--file", str(source))  # a finished run
    assert status == EXIT_OK, text
    record = wave_release(home / "releases", "own", "2024")
    report = home / "reports" / "own" / "2024.html"
    assert record["report"] == {"file": str(report), "sha256": hashlib.sha256(report.read_bytes()).hexdigest()}


@pytest.mark.slow
def test_sdc_plan_adds_no_plan_when_the_keys_as_they_are_meet_the_target(tmp_path, home, capsys):
    # found by CI when the draft's key cap left two keys: the front's one plan had no step, and the
    # spec written with it did not load ("plans.search_1.steps: expected a non-empty list of steps")
    source = own_survey(tmp_path, home, capsys, [3], max_global_risk=1.0, k=1)
    spec_file = home / "specs" / "own.yaml"
    before = spec_file.read_text()
    status, text = sdc(capsys, "plan", "own", "2024", "--file", str(source), "--write")
    assert status == EXIT_OK and "changes nothing (the keys as they are meet the target): no plan added" in text, text
    assert spec_file.read_text() == before


@pytest.mark.slow
def test_sdc_plan_prints_the_front_and_writes_its_plans_into_the_spec(tmp_path, home, capsys):
    source = own_survey(tmp_path, home, capsys, [3])
    spec_file = home / "specs" / "own.yaml"
    before = spec_file.read_text()
    status, text = sdc(capsys, "plan", "own", "2024", "--file", str(source), "--write")
    assert status == EXIT_OK, text
    assert re.search(r"^\d+ of \d+ plans evaluated in [\d.]+ s", text, re.M), text
    assert re.search(r"^searched .* True$", text, re.M), text  # the recommended row of the front
    written = yaml.safe_load(spec_file.read_text())
    added = [name for name in written["plans"] if name.startswith("search_")]
    assert added and f"added {', '.join(added)} to {spec_file}" in text
    assert spec_file.read_text().startswith(before.rstrip("\n").split("plans:")[0])  # the rest kept
    spec = load_spec(spec_file)
    # the written plan runs as any other: the first (the recommended one) reaches 3-anonymity, the
    # protected file counted with pandas (a suppressed value matches every value, SPEC §2.4)
    from sdc_dagster.pipeline import protection
    from sdc_dagster.spec.sources import read_wave_file

    data = read_wave_file(spec, source)
    protected = protection.protect(data, spec, spec.plan(added[0]), wave="2024").data
    keys = spec.categorical_keys
    observed = ~pd.isna(protected[keys]).to_numpy()
    values = np.where(observed, protected[keys].astype(object).to_numpy(), "missing")
    matches = [(((values == row) | ~observed | ~seen).all(axis=1)).sum() for row, seen in zip(values, observed)]
    assert min(matches) >= 3
    assert sdc(capsys, "check", str(spec_file), "--data", str(source))[0] == EXIT_OK


@pytest.mark.slow
def test_a_run_stopped_between_its_release_stage_and_its_report_leaves_the_release_it_had(tmp_path, home, capsys,
                                                                                        monkeypatch):
    """Issue 35: the release stage stages its choice; a run stopped before its report is filed (here
    the filing fails without touching a file, as a killed process would) leaves the wave's previous
    release, with its report, current; ``sdc audit`` names the unfinished run and fails, and the next
    ``sdc run`` says so and files its own choice with its report."""
    import sdc_dagster.assets.survey.report as report_asset
    from sdc_dagster.releases.wave import staged_wave_release

    source = own_survey(tmp_path, home, capsys, [3])
    assert sdc(capsys, "run", "own", "2024", "--file", str(source))[0] == EXIT_OK
    releases = home / "releases"
    first = wave_release(releases, "own", "2024")

    def stopped(*args, **kwargs):
        raise RuntimeError("stopped before the report was filed")

    with monkeypatch.context() as patch:
        patch.setattr(report_asset, "file_report", stopped)
        status, text = sdc(capsys, "run", "own", "2024")
    assert status == 1 and "stopped before the report was filed" in text, text
    staged = staged_wave_release(releases, "own", "2024")
    assert staged["plan"] == "suppress_k3" and staged["run_id"] != first["run_id"]
    assert wave_release(releases, "own", "2024") == first  # the release it had, with its own report

    status, text = sdc(capsys, "audit", "2024", "--survey", "own")
    assert status == 1, text
    assert (f"run {staged['run_id']} chose plan suppress_k3 but never filed the report that explains it (the run did "
            "not finish): that choice is not released; finish it: sdc run own 2024") in text

    status, text = sdc(capsys, "run", "own", "2024")
    assert status == EXIT_OK, text
    assert f"run {staged['run_id']} chose plan suppress_k3 but never filed the report" in text
    assert "this run decides again" in text
    record = wave_release(releases, "own", "2024")
    assert record["run_id"] not in (first["run_id"], staged["run_id"]) and "report" in record
    assert staged_wave_release(releases, "own", "2024") is None
    assert sdc(capsys, "audit", "2024", "--survey", "own")[0] == EXIT_OK


def test_audit_of_a_wave_with_a_withheld_alternative_passes_and_a_named_withheld_plan_is_a_usage_error(
        home, capsys, monkeypatch):
    """Found in the new-user trial (issue 34): ``sdc audit 2024 --survey participation`` verified the
    wave's release byte for byte, said the other plan was withheld, and exited 2 (a usage error), as
    if the audit had failed. A withheld alternative is named with its reasons; only a plan asked for
    by name, or a wave with no release at all, has nothing to audit. The verification itself is
    replaced here (it is tested with real releases above and in tests/assets/test_lineage.py)."""
    from sdc_dagster.releases import replay

    wave = home / "releases" / "own" / "2024"
    (wave / "searched" / "run1").mkdir(parents=True)
    (wave / "searched" / "run1" / "manifest.json").write_text(json.dumps({"sequence": 1, "plan": "searched"}))
    (wave / "suppress_k3" / "run1").mkdir(parents=True)
    (wave / "suppress_k3" / "run1" / "withheld.json").write_text(
        json.dumps({"sequence": 1, "withheld": {"global_risk": "global risk <= 0.01 (found: 3.08 %)"}}))
    monkeypatch.setattr(replay, "verify_release", lambda folder, recompute: replay.Verification(
        manifest={"plan": Path(folder).parent.name}, stored_file_intact=True, input_intact=True,
        byte_identical=True, detail="recomputed output is byte-identical"))
    status, text = sdc(capsys, "audit", "2024", "--survey", "own")
    assert status == EXIT_OK, text
    assert "audit OK" in text
    assert "no release of plan 'suppress_k3' for wave '2024': withheld by global_risk" in text
    status, text = sdc(capsys, "audit", "2024", "--survey", "own", "--plan", "suppress_k3")
    assert status == EXIT_USAGE and "no release of plan 'suppress_k3'" in text, text
    (wave / "searched" / "run1" / "manifest.json").rename(wave / "searched" / "run1" / "withheld.json")
    status, text = sdc(capsys, "audit", "2024", "--survey", "own")  # nothing released: nothing to audit
    assert status == EXIT_USAGE and "audit OK" not in text, text
