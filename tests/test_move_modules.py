"""tools/move_modules.py: the replayable moves of modules into wings (issue 35), on made-up modules
(``sdc_dagster.alpha``, ``sdc_dagster.beta``: no real module, so the real table never rewrites this file)."""

import ast
import importlib.util
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "move_modules.py"
spec = importlib.util.spec_from_file_location("move_modules", SCRIPT)
move_modules = importlib.util.module_from_spec(spec)
spec.loader.exec_module(move_modules)

MOVES = {"sdc_dagster.alpha": "sdc_dagster.wing.alpha", "sdc_dagster.beta": "sdc_dagster.wing.gamma"}


def test_dotted_names_are_rewritten_whole():
    text = (
        "from sdc_dagster.alpha import f\n"
        "import sdc_dagster.alpha as a\n"
        'patch("sdc_dagster.alpha._LIMIT", 3)  # :func:`~sdc_dagster.beta.g`\n'
        "from sdc_dagster.alpha_x import h\n"
        "other.sdc_dagster.alpha.f\n"
        "see sdc_dagster/alpha.py and sdc_dagster/alpha_x.py\n"
    )
    assert move_modules.rewrite(text, MOVES, "x.md") == (
        "from sdc_dagster.wing.alpha import f\n"
        "import sdc_dagster.wing.alpha as a\n"
        'patch("sdc_dagster.wing.alpha._LIMIT", 3)  # :func:`~sdc_dagster.wing.gamma.g`\n'
        "from sdc_dagster.alpha_x import h\n"
        "other.sdc_dagster.alpha.f\n"
        "see sdc_dagster/wing/alpha.py and sdc_dagster/alpha_x.py\n"
    )


def test_an_import_from_the_package_is_split_and_keeps_the_local_name():
    text = "def f():\n    from sdc_dagster import (\n        alpha,\n        beta,\n        loss as l,\n    )\n"
    out = move_modules.rewrite(text, MOVES, "x.py")
    assert out == (
        "def f():\n"
        "    from sdc_dagster import loss as l\n"
        "    from sdc_dagster.wing import alpha\n"
        "    from sdc_dagster.wing import gamma as beta\n"
    )
    ast.parse(out)


def test_a_second_run_changes_nothing_and_kept_lines_stay():
    text = "import sdc_dagster.alpha  # move_modules: keep\nfrom sdc_dagster import alpha, risk\n"
    once = move_modules.rewrite(text, MOVES, "x.py")
    assert once == ("import sdc_dagster.alpha  # move_modules: keep\n"
                    "from sdc_dagster import risk\nfrom sdc_dagster.wing import alpha\n")
    assert move_modules.rewrite(once, MOVES, "x.py") == once


def test_the_layer_test_paths_follow_the_table():
    text = 'BOTTOM = ("alpha.py", "beta.py", "alpha_x.py", "risk/alpha.py")\n'
    assert move_modules.rewrite(text, MOVES, "tests/test_layers.py") == (
        'BOTTOM = ("wing/alpha.py", "wing/gamma.py", "alpha_x.py", "risk/alpha.py")\n'
    )


@pytest.mark.parametrize("text, where", [
    ("from .alpha import f\n", "sdc_dagster/delta.py"),
    ("from .. import beta\n", "sdc_dagster/risk/x.py"),
    ("from .other import f\n", "sdc_dagster/wing/alpha.py"),
])
def test_a_relative_import_of_or_in_a_moved_module_is_refused(text, where):
    with pytest.raises(move_modules.MoveError, match=rf"{where}:1: a relative import"):
        move_modules.rewrite(text, MOVES, where)


def test_relative_imports_elsewhere_are_left_alone():
    text = "from .conftest import read\nfrom .other import alpha_x\n"
    assert move_modules.rewrite(text, MOVES, "tests/tables/test_a.py") == text
    assert move_modules.rewrite(text, MOVES, "sdc_dagster/risk/x.py") == text


def test_a_chain_of_moves_is_refused():
    with pytest.raises(move_modules.MoveError, match="is moved too"):
        move_modules.check_table({"sdc_dagster.a": "sdc_dagster.b", "sdc_dagster.b": "sdc_dagster.c"})


def _repo(tmp_path: Path) -> Path:
    for name, text in {"sdc_dagster/__init__.py": "", "sdc_dagster/alpha.py": "A = 1\n",
                       "sdc_dagster/wing/__init__.py": "from sdc_dagster.wing.other import gamma\n",
                       "sdc_dagster/wing/other.py": "gamma = 2\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"], cwd=tmp_path,
                   check=True)
    return tmp_path


def test_a_file_is_moved_once_with_git(tmp_path):
    root = _repo(tmp_path)
    assert move_modules.move_file(root, "sdc_dagster.alpha", "sdc_dagster.wing.alpha") is True
    assert move_modules.move_file(root, "sdc_dagster.alpha", "sdc_dagster.wing.alpha") is False
    assert (root / "sdc_dagster/wing/alpha.py").read_text(encoding="utf-8") == "A = 1\n"
    staged = subprocess.run(["git", "diff", "--cached", "--name-status", "-M"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    assert "R100\tsdc_dagster/alpha.py\tsdc_dagster/wing/alpha.py" in staged


def test_a_module_the_package_would_hide_is_refused(tmp_path):
    root = _repo(tmp_path)
    (root / "sdc_dagster/beta.py").write_text("B = 1\n", encoding="utf-8")
    with pytest.raises(move_modules.MoveError, match="binds the name 'gamma'"):
        move_modules.move_file(root, "sdc_dagster.beta", "sdc_dagster.wing.gamma")


def test_an_old_module_brought_back_by_a_merge_is_refused(tmp_path):
    root = _repo(tmp_path)
    (root / "sdc_dagster/wing/alpha.py").write_text("A = 1\n", encoding="utf-8")
    with pytest.raises(move_modules.MoveError, match="both exist"):
        move_modules.move_file(root, "sdc_dagster.alpha", "sdc_dagster.wing.alpha")
