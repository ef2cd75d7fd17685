"""Installing anywhere: what the wheel holds, where the data home is, the instance settings of `sdc`.

The fresh-venv install of the wheel with `sdc demo` and `sdc run` from an empty directory is
`make wheel-check` (CI); these tests keep the faster parts in the suite.
"""

import importlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import platformdirs
import pytest
import yaml
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from sdc_dagster.cli import main
from sdc_dagster.cli.home import instance_settings
from sdc_dagster.resources.storage import bundled_examples, spec_folders
from sdc_dagster.resources.storage import sdc_home, user_specs_dir

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The project's wheel, built as `make wheel-check` builds it (from a copy of the sources, so the
    checkout gets no build/ folder), and the build log."""
    out = tmp_path_factory.mktemp("wheel")
    sources = out / "sources"
    shutil.copytree(CHECKOUT, sources, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", ".sdc_home", "*.egg-info", "__pycache__", ".hypothesis", "tests"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(sources)],
                           capture_output=True, text=True, cwd=out)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel_file,) = out.glob("sdc_dagster-*.whl")
    return wheel_file, build.stdout + build.stderr


@pytest.mark.slow
def test_wheel_installs_one_namespaced_package_with_the_demo_data(wheel):
    names = zipfile.ZipFile(wheel[0]).namelist()
    assert {n.split("/")[0] for n in names} == {"sdc_dagster", "sdc_dagster-0.1.0.dist-info"}
    for expected in ("sdc_dagster/assets/survey/__init__.py", "sdc_dagster/resources/storage.py",
                     "sdc_dagster/cli/__init__.py",
                     "sdc_dagster/examples/testdata.yaml", "sdc_dagster/examples/simulation.yaml",
                     "sdc_dagster/examples/data/testdata.csv", "sdc_dagster/examples/grid/census_grid.yaml"):
        assert expected in names, expected
    # every module of the checkout, subpackages found without a list (assets/survey/ ...)
    for folder, package in (("sdc_dagster", "sdc_dagster"), ("assets", "sdc_dagster/assets"),
                            ("resources", "sdc_dagster/resources")):
        modules = {f"{package}/{p.relative_to(CHECKOUT / folder).as_posix()}" for p in (CHECKOUT / folder).rglob("*.py")}
        assert modules - set(names) == set()
    entry_points = zipfile.ZipFile(wheel[0]).read("sdc_dagster-0.1.0.dist-info/entry_points.txt").decode()
    assert "sdc = sdc_dagster.cli:command" in entry_points


@pytest.mark.slow
def test_wheel_builds_without_setuptools_warnings(wheel):
    log = wheel[1]
    assert "SetuptoolsDeprecationWarning" not in log and "project.license" not in log
    assert "Package would be ignored" not in log


def test_checkout_uses_the_top_level_folders():
    """The package mapping of the editable install (`pip install -e .`) alone: the checkout's
    folders, and no other folder of the checkout as a subpackage (the package's search path is its
    own folder)."""
    import sdc_dagster
    import sdc_dagster.assets
    import sdc_dagster.resources

    assert Path(sdc_dagster.assets.__file__).parent == CHECKOUT / "assets"
    assert Path(sdc_dagster.resources.__file__).parent == CHECKOUT / "resources"
    assert bundled_examples() == CHECKOUT / "examples"
    assert [Path(p) for p in sdc_dagster.__path__] == [CHECKOUT / "sdc_dagster"]
    for folder in ("tests", "benchmarks", "docs"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"sdc_dagster.{folder}")


def test_data_home_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SDC_HOME", raising=False)
    monkeypatch.delenv("SDC_SPECS", raising=False)
    # no project folder: the per-user data folder
    assert sdc_home() == Path(platformdirs.user_data_dir("sdc-dagster", appauthor=False)).resolve()
    # a project folder (it holds .sdc_home/)
    (tmp_path / ".sdc_home").mkdir()
    assert sdc_home() == tmp_path / ".sdc_home"
    # SDC_HOME wins over the project folder
    monkeypatch.setenv("SDC_HOME", str(tmp_path / "elsewhere"))
    assert sdc_home() == tmp_path / "elsewhere"
    assert user_specs_dir() == tmp_path / "elsewhere" / "specs"
    assert spec_folders() == [bundled_examples(), tmp_path / "elsewhere" / "specs"]
    monkeypatch.setenv("SDC_SPECS", str(tmp_path / "only"))
    assert spec_folders() == [tmp_path / "only"]


def test_home_option_wins_over_sdc_home(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDC_HOME", str(tmp_path / "env"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    data = tmp_path / "wave.csv"
    data.write_text("urbrur,sex\n" + "1,2\n2,1\n" * 20)
    assert main(["--home", str(tmp_path / "option"), "init", "tiny", "--from", str(data)]) == 0
    assert (tmp_path / "option" / "specs" / "tiny.yaml").is_file()
    assert not (tmp_path / "env").exists()


def test_instance_settings_turn_off_telemetry_and_the_community_modal_keeping_the_users(tmp_path):
    instance_settings(tmp_path)
    assert yaml.safe_load((tmp_path / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": False}, "nux": {"enabled": False}}
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: true\nrun_coordinator:\n  module: x\n")
    instance_settings(tmp_path)
    assert yaml.safe_load((tmp_path / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": True}, "run_coordinator": {"module": "x"}, "nux": {"enabled": False}}


def test_init_says_when_the_draft_needs_an_edit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    data = tmp_path / "names.csv"
    data.write_text("name\n" + "".join(f"person{i}\n" for i in range(30)))  # an identifier, nothing else
    assert main(["init", "names", "--from", str(data)]) == 4
    out = capsys.readouterr().out
    # No column can be a key: the draft says so and what the spec needs.
    assert "needs an edit" in out and "expected at least one categorical_key or continuous_key variable" in out
    assert (tmp_path / "home" / "specs" / "names.yaml").is_file()


def test_init_drafts_a_valid_spec_for_amounts_only(tmp_path, monkeypatch, capsys):
    """Continuous-only data (issue 21): a valid draft with a microaggregation plan, no suppression."""
    monkeypatch.setenv("SDC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    data = tmp_path / "incomes.csv"
    data.write_text("income\n" + "".join(f"{1000 + 37 * i}.5\n" for i in range(30)))  # no categorical column
    assert main(["init", "incomes", "--from", str(data)]) == 0
    spec = yaml.safe_load((tmp_path / "home" / "specs" / "incomes.yaml").read_text())
    assert spec["variables"]["income"]["role"] == "continuous_key"
    assert spec["risk"]["max_linkage_risk"] == 0.2
    assert [step["method"] for plan in spec["plans"].values() for step in plan["steps"]] == ["microaggregation"]


instance_configs = st.dictionaries(
    st.sampled_from(["telemetry", "nux", "run_coordinator", "run_launcher", "storage", "retention"]),
    st.dictionaries(st.text(alphabet="abcdefgh_", min_size=1, max_size=8),
                    st.one_of(st.booleans(), st.integers(), st.text(max_size=8)), max_size=3),
    max_size=6,
)


@given(instance_configs)
@hyp_settings(max_examples=50, deadline=None)
def test_instance_settings_only_add_what_is_missing(user_settings):
    with tempfile.TemporaryDirectory() as folder:
        config_file = Path(folder) / "dagster.yaml"
        if user_settings:
            config_file.write_text(yaml.safe_dump(user_settings))
        instance_settings(Path(folder))
        written = yaml.safe_load(config_file.read_text())
    assert {k: written[k] for k in user_settings} == user_settings  # the user's settings are kept as they were
    assert {k: v for k, v in written.items() if k not in user_settings} == {
        k: v for k, v in {"telemetry": {"enabled": False}, "nux": {"enabled": False}}.items() if k not in user_settings}
