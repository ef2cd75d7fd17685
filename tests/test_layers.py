"""The engine's imports run downward only (DESIGN.md "Two layers, one direction of dependency").

Imports are read from the source with ``ast`` (the modules are not imported), including imports
inside functions, so a deferred import cannot hide an upward arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "sdc_dagster"
# the orchestration layer and the two places allowed to assemble or call it
ORCHESTRATION = ("assets", "resources")
# the entry points above both layers: the command line (a package) and the code location
DAGSTER_ALLOWED = ("cli/", "definitions.py")


def _module_name(path: Path, root: Path = ENGINE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _engine_files(root: Path = ENGINE) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.py")
        if p.relative_to(root).parts[0] not in ORCHESTRATION and "__pycache__" not in p.parts
    )


def _imports(path: Path, root: Path = ENGINE) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import statement of the file."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.append((module, [alias.name for alias in node.names], node.lineno))
    return found


def _violations(rule, root: Path = ENGINE) -> list[str]:
    """``file:line: problem`` for every import of the engine for which ``rule(file, module, names)``
    names a problem (``file`` relative to the package, ``module`` absolute)."""
    out = []
    for path in _engine_files(root):
        file = path.relative_to(root).as_posix()
        for module, names, line in _imports(path, root):
            problem = rule(file, module, names)
            if problem:
                out.append(f"sdc_dagster/{file}:{line}: {problem}")
    return out


def test_the_rules_see_the_engine():
    files = {p.relative_to(ENGINE).as_posix() for p in _engine_files()}
    assert {"validation.py", "numerics/distance.py", "risk/linkage.py", "loss/distance.py", "spec/parse.py"} <= files
    assert not any(f.startswith(("assets/", "resources/")) for f in files)


def test_relative_imports_are_resolved():
    path = ENGINE / "risk" / "__init__.py"
    assert _module_name(path) == "sdc_dagster.risk"
    assert all(module.startswith("sdc_dagster.risk.") or module == "sdc_dagster.numerics.distance"
               for module, _, _ in _imports(path))


def test_no_dagster_import_outside_cli_and_definitions():
    def rule(file, module, names):
        if not file.startswith(DAGSTER_ALLOWED) and module.split(".")[0].startswith("dagster"):
            return f"imports {module} (the engine is framework-free)"
        if not file.startswith(DAGSTER_ALLOWED) and module.startswith(tuple(f"sdc_dagster.{o}" for o in ORCHESTRATION)):
            return f"imports the orchestration layer ({module})"
        return None

    assert _violations(rule) == []


def test_risk_and_loss_never_import_protect():
    def rule(file, module, names):
        if file.startswith(("risk/", "loss/")) and module.startswith("sdc_dagster.protect"):
            return f"imports {module}: risk and loss measure, they do not call protection methods"
        return None

    assert _violations(rule) == []


def test_risk_does_not_import_loss_and_protect_does_not_import_the_spec():
    def rule(file, module, names):
        if file.startswith("risk/") and module.startswith("sdc_dagster.loss"):
            return f"imports {module}: shared numerics live in sdc_dagster.numerics"
        if file.startswith(("risk/", "loss/", "protect/")) and module.startswith(("sdc_dagster.spec", "sdc_dagster.report")):
            return f"imports {module}, a layer above the methods"
        return None

    assert _violations(rule) == []


# the release modules the survey stages import (the released coding, the safe files, manifests and
# digests) sit below pipeline/; releases/wave, grid and replay call the stages
RELEASES_BELOW_THE_STAGES = ("releases/__init__.py", "releases/digests.py", "releases/categories.py",
                             "releases/files.py", "releases/manifest.py")


def test_the_lower_release_modules_import_no_stage():
    def rule(file, module, names):
        if file in RELEASES_BELOW_THE_STAGES and module.startswith(("sdc_dagster.pipeline", "sdc_dagster.releases.wave",
                                                                    "sdc_dagster.releases.grid",
                                                                    "sdc_dagster.releases.replay")):
            return f"imports {module}: the stages import this module, it cannot import them"
        return None

    assert _violations(rule) == []


def test_the_stages_import_only_the_lower_release_modules():
    def rule(file, module, names):
        lower = tuple(f"sdc_dagster.{f.removesuffix('.py').removesuffix('/__init__').replace('/', '.')}"
                      for f in RELEASES_BELOW_THE_STAGES)
        if file.startswith("pipeline/") and module.startswith("sdc_dagster.releases") and module not in lower:
            return f"imports {module}, which calls the stages"
        return None

    assert _violations(rule) == []


# the counts every method builds on (risk/, protect/, tables/, loss/ and the search import them): in
# risk/ beside the measures they serve, they import no measure; the grid's table sits below the methods
COUNTS = ("sdc_dagster.errors", "sdc_dagster.keys", "sdc_dagster.risk.frequencies")


@pytest.mark.parametrize("bottom", ["validation.py", "errors.py", "keys.py", "numerics/", "risk/frequencies.py",
                                    "risk/subset_frequencies.py", "risk/incremental_counts.py", "grid/"])
def test_the_bottom_layers_import_nothing_above_them(bottom):
    allowed = {
        "validation.py": ("sdc_dagster.errors",),
        "errors.py": (),
        "keys.py": ("sdc_dagster.errors",),
        "numerics/": ("sdc_dagster.errors", "sdc_dagster.validation", "sdc_dagster.numerics"),
        "risk/frequencies.py": ("sdc_dagster.errors", "sdc_dagster.keys"),
        "risk/subset_frequencies.py": COUNTS,
        "risk/incremental_counts.py": COUNTS,
        "grid/": ("sdc_dagster.errors", "sdc_dagster.validation", "sdc_dagster.grid"),
    }[bottom]

    def rule(file, module, names):
        inside = file == bottom or (bottom.endswith("/") and file.startswith(bottom))
        if inside and module.startswith("sdc_dagster") and not module.startswith(allowed):
            return f"imports {module}, above {bottom}"
        return None

    assert _violations(rule) == []


def test_no_private_name_is_imported_from_another_module():
    def rule(file, module, names):
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        if module.startswith("sdc_dagster") and private:
            return f"imports private {', '.join(private)} from {module}: make it public with a docstring, or move it"
        return None

    assert _violations(rule) == []


def test_a_violation_is_reported_with_file_and_line(tmp_path):
    fake = tmp_path / "sdc_dagster"
    (fake / "risk").mkdir(parents=True)
    (fake / "assets").mkdir()
    (fake / "risk" / "bad.py").write_text(
        "import dagster\n\n\ndef f():\n    from ..protect.suppression import _private\n", encoding="utf-8"
    )
    (fake / "assets" / "fine.py").write_text("import dagster\n", encoding="utf-8")
    found = _violations(lambda file, module, names: f"{module} {names}", root=fake)
    assert found == [
        "sdc_dagster/risk/bad.py:1: dagster []",
        "sdc_dagster/risk/bad.py:5: sdc_dagster.protect.suppression ['_private']",
    ]


# tables/: the methods (model, primary rules, audit, suppression) sit in the methods layer; the
# files of tables (tau-Argus .tab/.rda/.hrc, the office's CSV/Excel) sit with the readers of files
TABLE_FILES = ("tables/exchange.py", "tables/hierarchy_files.py", "tables/__init__.py")


def test_the_table_methods_import_no_file_reader_and_no_table_file_module():
    def rule(file, module, names):
        if not file.startswith("tables/") or file in TABLE_FILES:
            return None
        if module.startswith(("sdc_dagster.spec", "sdc_dagster.datafiles", "sdc_dagster.releases",
                              "sdc_dagster.report", "sdc_dagster.pipeline")):
            return f"imports {module}, a layer above the methods"
        if module in ("sdc_dagster.tables.exchange", "sdc_dagster.tables.hierarchy_files"):
            return f"imports {module}: the table files build on the methods, not the reverse"
        return None

    assert _violations(rule) == []
