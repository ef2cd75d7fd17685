"""Safe names and specs (issue 21): survey names and wave ids that would become paths outside the
data home are refused with exit 2 and the rule; every path built from names stays inside its
folder; partition keys in the UI follow the same rule; one broken spec is skipped, never stopping
the other surveys; `sdc report` and `sdc audit` name an unknown survey and list the known ones."""

import logging
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, build_output_context, build_sensor_context, instance_for_test

from sdc_dagster.cli import run as sdc_run
from sdc_dagster.cli import EXIT_BAD_SPEC, EXIT_OK, EXIT_USAGE, main
from sdc_dagster.names import UnsafeNameError, check_name, inside
from sdc_dagster.resources.storage import ParquetIOManager
from sdc_dagster.spec import load_spec, load_specs, scan_specs
from sdc_dagster.spec.sources import locate_wave_file

CHECKOUT = Path(__file__).resolve().parents[1]
TESTDATA = CHECKOUT / "examples" / "data" / "testdata.csv"
WAVE_RULE = "use 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit, without '..'"
SURVEY_RULE = "use a letter, then letters, digits or _ (at most 64 characters)"

UNSAFE_WAVES = ["../../../x", "/tmp/sdc-absolute-wave", "a/b", "", "..", ".hidden", "-v", "a..b", "a b", "w\n",
                "x" * 65, "é"]
SAFE_WAVES = ["2024", "w1", "2024-Q1", "2024.v2", "a_b", "X" * 64, "2024."]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A new user's data home inside ``tmp_path/work`` (the working directory), demo specs + own."""
    work = tmp_path / "work"
    work.mkdir()
    root = work / "home"
    monkeypatch.setenv("SDC_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster"))
    monkeypatch.delenv("SDC_SPECS", raising=False)
    monkeypatch.chdir(work)
    return root


def sdc(capsys, *argv) -> tuple[int, str]:
    """``sdc ARGV`` in-process: the exit status and everything it printed (stdout and stderr)."""
    capsys.readouterr()
    status = main(list(argv))
    printed = capsys.readouterr()
    return status, printed.out + printed.err


def files_under(folder: Path, *, but: Path | None = None) -> set[Path]:
    """The files in ``folder``, without those in ``but`` (the Dagster instance settings ``sdc`` writes)."""
    return {p for p in folder.rglob("*") if p.is_file() and (but is None or but not in p.parents)}


def small_wave(folder: Path) -> Path:
    path = folder / "small.csv"
    pd.read_csv(TESTDATA)[["urbrur", "roof", "sex", "age", "sampling_weight"]].iloc[::10].to_csv(path, index=False)
    return path


# --- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("wave", UNSAFE_WAVES)
def test_unsafe_wave_ids_are_refused_with_the_rule(wave):
    with pytest.raises(UnsafeNameError) as refused:
        check_name("wave id", wave)
    assert str(refused.value) == f"wave id {wave!r} is not allowed: {WAVE_RULE}"


@pytest.mark.parametrize("wave", SAFE_WAVES)
def test_safe_wave_ids_pass(wave):
    assert check_name("wave id", wave) == wave


@pytest.mark.parametrize("survey", ["../evil", "a-b", "2024", "_x", "a.b", "", "s" * 65, None])
def test_survey_names_are_identifiers(survey):
    with pytest.raises(UnsafeNameError, match=r"survey name .* is not allowed: use a letter"):
        check_name("survey name", survey)


def test_a_spec_names_its_survey_by_the_same_rule(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("survey: s" + "x" * 64 + "\nvariables:\n  a: {role: categorical_key}\n")
    with pytest.raises(ValueError, match=re.escape(f"s.yaml:1: survey: expected a name: {SURVEY_RULE[4:]}")):
        load_spec(spec)


@pytest.mark.parametrize("parts", [("..", "x"), ("a", "../../x"), ("/etc",), ("a/../..", "b"), ("",)])
def test_paths_from_names_stay_inside_their_folder(tmp_path, parts):
    with pytest.raises(UnsafeNameError, match="outside"):
        inside(tmp_path / "landing", *parts)


def test_a_linked_folder_or_file_inside_stays_allowed(tmp_path):
    (tmp_path / "disk").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "landing").symlink_to(tmp_path / "disk")
    assert inside(tmp_path / "home", "landing", "s", "2024.csv") == tmp_path / "home" / "landing" / "s" / "2024.csv"


# --- sdc run / init / report / audit ----------------------------------------------------------------


@pytest.mark.parametrize("wave", ["../../../x", str(Path("/tmp") / "sdc-absolute-wave"), "a/b", ""])
def test_run_refuses_an_unsafe_wave_id_and_writes_nothing(tmp_path, home, capsys, wave):
    data = small_wave(tmp_path)
    before = files_under(tmp_path)
    status, text = sdc(capsys, "run", "testdata", wave, "--file", str(data))
    assert status == EXIT_USAGE and text == f"sdc run: wave id {wave!r} is not allowed: {WAVE_RULE}\n"
    assert files_under(tmp_path, but=home / "dagster") == before  # nothing landed, in the home or outside it
    assert not (home / "landing").exists()
    assert not list(Path("/tmp").glob("sdc-absolute-wave*"))


def test_run_refuses_an_unsafe_survey_name(tmp_path, home, capsys):
    status, text = sdc(capsys, "run", "../testdata", "2024", "--file", str(small_wave(tmp_path)))
    assert status == EXIT_USAGE and text == f"sdc run: survey name '../testdata' is not allowed: {SURVEY_RULE}\n"


def test_init_refuses_an_unsafe_survey_name(tmp_path, home, capsys):
    data = small_wave(tmp_path)
    before = files_under(tmp_path)
    status, text = sdc(capsys, "init", "../../evil", "--from", str(data))
    assert status == EXIT_USAGE and text == f"sdc init: survey name '../../evil' is not allowed: {SURVEY_RULE}\n"
    assert files_under(tmp_path, but=home / "dagster") == before


@pytest.mark.parametrize("argv, message", [
    (("report", "testdata", "../x"), f"sdc report: wave id '../x' is not allowed: {WAVE_RULE}"),
    (("report", "../reports", "2024"), f"sdc report: survey name '../reports' is not allowed: {SURVEY_RULE}"),
    (("audit", "/etc"), f"sdc audit: wave id '/etc' is not allowed: {WAVE_RULE}"),
    (("audit", "2024", "--plan", "../p"), f"sdc audit: plan name '../p' is not allowed: {SURVEY_RULE}"),
    (("audit", "2024", "--survey", "a/b"), f"sdc audit: survey name 'a/b' is not allowed: {SURVEY_RULE}"),
])
def test_report_and_audit_refuse_unsafe_names(home, capsys, argv, message):
    status, text = sdc(capsys, *argv)
    assert status == EXIT_USAGE and text == message + "\n"


def test_report_and_audit_name_an_unknown_survey_and_list_the_known_ones(home, capsys):
    (home / "reports" / "retired").mkdir(parents=True)  # the reports of a survey whose spec is gone
    status, text = sdc(capsys, "report", "nosuch", "2024")
    assert status == EXIT_USAGE
    assert text == ("sdc report: no survey 'nosuch'; known: retired, simulation, testdata "
                    "(draft one with: sdc init NAME --from FILE)\n")
    status, text = sdc(capsys, "audit", "2024", "--survey", "nosuch")
    assert status == EXIT_USAGE
    assert text == ("sdc audit: no survey 'nosuch'; known: simulation, testdata "
                    "(draft one with: sdc init NAME --from FILE)\n")
    # a misspelt name: the closest known one first (a new user's pass, issue 34: 'wag' for 'wage')
    status, text = sdc(capsys, "report", "testdat", "2024")
    assert status == EXIT_USAGE
    assert text == ("sdc report: no survey 'testdat' (did you mean 'testdata'?); known: retired, simulation, "
                    "testdata (draft one with: sdc init NAME --from FILE)\n")
    status, text = sdc(capsys, "report", "testdata", "2024")  # known, no report yet
    assert status == EXIT_USAGE and "sdc report: report of wave '2024'" in text and "not found" in text


# --- broken specs ----------------------------------------------------------------------------------

BROKEN_ROLE = "survey: broken\nvariables:\n  a: {role: categorical_kye}\n"


def test_a_good_survey_runs_beside_a_broken_spec_with_one_warning_line(tmp_path, home, capsys, monkeypatch):
    data = small_wave(tmp_path)
    assert sdc(capsys, "init", "small", "--from", str(data))[0] == EXIT_OK
    (home / "specs" / "broken.yaml").write_text(BROKEN_ROLE)
    runs = []
    monkeypatch.setattr(sdc_run, "_materialise_wave",
                        lambda job, instance, survey, wave, source, out, **_: runs.append((job.name, wave, source)) or 0)
    status, text = sdc(capsys, "run", "small", "2024", "--file", str(data))
    assert status == EXIT_OK
    assert runs == [("small_wave_job", "2024", home / "landing" / "small" / "2024.csv")]
    assert text.splitlines() == [
        f"sdc run: warning: skipped the survey spec {home / 'specs' / 'broken.yaml'}:3: variables.a.role: expected "
        "one of ['direct_identifier', 'categorical_key', 'continuous_key', 'sensitive', 'weight', 'household_id', "
        "'record_id', 'other'], got 'categorical_kye'; did you mean 'categorical_key'?"]


@pytest.mark.parametrize("file_name, text, error", [
    ("broken.yaml", BROKEN_ROLE, "sdc run: bad spec: broken.yaml:3: variables.a.role: expected one of"),
    ("broken.yaml", "survey: [unclosed\n", "sdc run: bad spec: {spec}: not valid YAML ("),
    ("other.yaml", BROKEN_ROLE, "sdc run: bad spec: other.yaml:3: variables.a.role"),  # found by its survey:
])
def test_the_broken_survey_itself_exits_4_with_its_errors(home, capsys, file_name, text, error):
    spec = home / "specs" / file_name
    spec.parent.mkdir(parents=True)
    spec.write_text(text)
    status, out = sdc(capsys, "run", "broken", "2024")
    assert status == EXIT_BAD_SPEC
    assert out.startswith(error.format(spec=spec)) and "warning" not in out


def test_an_unknown_survey_beside_a_broken_spec(home, capsys):
    (home / "specs").mkdir(parents=True)
    (home / "specs" / "broken.yaml").write_text(BROKEN_ROLE)
    status, out = sdc(capsys, "run", "nosuch", "2024")
    assert status == EXIT_USAGE
    assert [line.split(":")[:2] for line in out.splitlines()] == [
        ["sdc run", " warning"], ["sdc run", " no survey 'nosuch'; known"]]


def minimal_spec(survey: str) -> str:
    return yaml.safe_dump({"survey": survey, "variables": {"a": {"role": "categorical_key"}}}, sort_keys=False)


def test_scan_specs_keeps_every_loadable_spec_and_reports_the_rest(tmp_path):
    (tmp_path / "a.yaml").write_text(minimal_spec("one"))
    (tmp_path / "b.yaml").write_text("survey: [unclosed\n")
    (tmp_path / "c.yaml").write_text("title: t\n" + minimal_spec("one"))  # names 'one' again
    (tmp_path / "d.yaml").write_text(minimal_spec("two"))
    specs, broken = scan_specs([tmp_path])
    assert [s.survey for s in specs] == ["one", "two"]
    assert [(b.path.name, sorted(b.surveys)) for b in broken] == [("b.yaml", ["b"]), ("c.yaml", ["one"])]
    assert broken[1].summary() == (f"{tmp_path / 'c.yaml'}:2: survey: 'one' is named by two specs "
                                   f"({tmp_path / 'a.yaml'} and {tmp_path / 'c.yaml'}); rename one")
    with pytest.raises(ValueError, match="not valid YAML(.|\n)*named by two specs"):
        load_specs(tmp_path)


def test_the_code_location_skips_a_broken_spec_with_a_logged_warning(tmp_path, caplog):
    from sdc_dagster.definitions import build_definitions

    shutil.copy(CHECKOUT / "examples" / "testdata.yaml", tmp_path / "testdata.yaml")
    (tmp_path / "broken.yaml").write_text(BROKEN_ROLE)
    with caplog.at_level(logging.WARNING, logger="sdc_dagster.definitions"):
        defs = build_definitions(tmp_path)
    assert {j.name for j in defs.jobs} >= {"testdata_wave_job"}
    assert AssetKey(["testdata", "raw_microdata"]) in defs.resolve_asset_graph().get_all_asset_keys()
    assert [r.getMessage() for r in caplog.records if r.name == "sdc_dagster.definitions"] == [
        f"skipped the survey spec {tmp_path / 'broken.yaml'}:3: variables.a.role: expected one of "
        "['direct_identifier', 'categorical_key', 'continuous_key', 'sensitive', 'weight', 'household_id', "
        "'record_id', 'other'], got 'categorical_kye'; did you mean 'categorical_key'?"]


# --- partition keys in the UI --------------------------------------------------------------------


def test_landing_sensor_skips_and_logs_files_that_are_no_safe_wave_id(tmp_path, capfd):
    from sdc_dagster.assets.automation import build_survey_automation
    from sdc_dagster.resources import SdcHome

    folder = tmp_path / "home" / "landing" / "testdata"
    folder.mkdir(parents=True)
    unsafe = [".hidden.csv", "a..b.csv", "bad name.csv", "x" * 65 + ".parquet"]
    for name in ["2024.csv", *unsafe]:
        shutil.copy(TESTDATA, folder / name)
    _, sensor, _ = build_survey_automation(load_spec(CHECKOUT / "examples" / "testdata.yaml"))
    with instance_for_test() as instance:
        result = sensor(build_sensor_context(instance=instance, resources={"home": SdcHome(path=str(tmp_path / "home"))}))
    assert [r.partition_key for r in result.run_requests] == ["2024"]
    assert result.dynamic_partitions_requests[0].partition_keys == ["2024"]
    # The sensor's log (context.log) goes to the daemon's stderr and the tick's log in the UI.
    warned = [line for line in capfd.readouterr().err.splitlines()
              if "WARNING" in line and "not added as a wave" in line]
    assert len(warned) == len(unsafe)
    assert sorted(name for name in unsafe if any(str(folder / name) in m for m in warned)) == sorted(unsafe)


def test_the_io_manager_refuses_an_unsafe_partition_key(tmp_path):
    manager = ParquetIOManager(base_dir=str(tmp_path / "storage"))
    context = build_output_context(asset_key=AssetKey(["testdata", "raw_microdata"]), partition_key="../../x")
    with pytest.raises(UnsafeNameError, match=r"partition key '../../x' is not allowed"):
        manager.handle_output(context, pd.DataFrame({"a": [1]}))
    assert not files_under(tmp_path)


def test_a_wave_asset_refuses_an_unsafe_partition_key_added_in_the_ui(tmp_path, monkeypatch):
    """The UI lets anyone add a partition key by hand; Dagster accepts ``../../x``."""
    from sdc_dagster.definitions import build_definitions

    monkeypatch.setenv("SDC_HOME", str(tmp_path / "home"))
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(CHECKOUT / "examples" / "testdata.yaml", specs / "testdata.yaml")
    (tmp_path / "x.csv").write_text(TESTDATA.read_text())  # what landing/testdata/../../x.csv would read
    job = build_definitions(specs).resolve_job_def("testdata_wave_job")
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("testdata_waves", ["../../x"])
        result = job.execute_in_process(partition_key="../../x", instance=instance, raise_on_error=False,
                                        asset_selection=[AssetKey(["testdata", "raw_microdata"])])
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    while error.cause is not None:  # the asset's own error, under Dagster's wrapper
        error = error.cause
    assert error.message == f"sdc_dagster.names.UnsafeNameError: wave id '../../x' is not allowed: {WAVE_RULE}\n"
    assert not (tmp_path / "home" / "storage").exists()


def test_locate_wave_file_refuses_an_unsafe_wave_before_looking(tmp_path):
    (tmp_path / "x.csv").write_text("a\n1\n")
    spec = load_spec(CHECKOUT / "examples" / "testdata.yaml")
    with pytest.raises(UnsafeNameError, match="wave id '../x'"):
        locate_wave_file(spec, "../x", tmp_path / "landing")
    assert os.listdir(tmp_path) == ["x.csv"]
