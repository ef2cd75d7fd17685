"""Move the engine's top-level modules into named wings (issue 35), replayable after any merge.

Run from the repository root, with the project's Python::

    .venv/bin/python tools/move_modules.py                 # the moves of MOVES

For every move (old dotted module -> new dotted module) the script

1. ``git mv``-s the file (creating the new package's ``__init__.py`` from :data:`NEW_PACKAGES`),
   unless it has moved already;
2. rewrites every reference in the checkout's ``*.py``, ``*.md``, ``*.toml``, ``*.cfg``, ``*.yaml``
   files (``setup.py``, ``workspace.yaml``, ``tests/``, ``benchmarks/``, ``assets/``, ``resources/``
   included): ``from sdc_dagster.X import``, ``import sdc_dagster.X as``, ``sdc_dagster.X.`` in
   strings (``mock.patch`` / ``monkeypatch`` targets, ``:mod:`` references), ``sdc_dagster/X.py``
   paths, ``from sdc_dagster import X`` (split into an import from X's new package), and the
   engine-relative paths (``"X.py"``) of ``tests/test_layers.py``;
3. writes the module the public contract needs at an old path (:data:`SHIMS`);
4. checks that ``python -c "import sdc_dagster.definitions"`` and ``python -m pytest --collect-only
   -q`` succeed, that each moved module is its package's attribute of that name (no name of the
   package's ``__init__`` hides it) and that no old dotted name is left.

It is idempotent: a second run finds every file moved and nothing to rewrite, so it can run again
on main after other branches (written against the old paths) are merged. A dotted name matches only
whole: moving ``sdc_dagster.keys`` would not touch ``sdc_dagster.keys_x`` nor
``other.sdc_dagster.keys``. A line holding ``move_modules: keep`` is never rewritten. Standard
library only.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT_PACKAGE = "sdc_dagster"

#: old dotted module -> new dotted module (docs/layers.md says why each sits where it does)
MOVES: dict[str, str] = {
    # synthetic/: the seeded demo data
    "sdc_dagster.census": "sdc_dagster.synthetic.census",
    "sdc_dagster.simulation": "sdc_dagster.synthetic.survey",
    # spec/: the survey spec, the wave it describes (located, read, validated) and its roles
    "sdc_dagster.classification": "sdc_dagster.spec.classification",
    "sdc_dagster.sources": "sdc_dagster.spec.sources",
    "sdc_dagster.schemas": "sdc_dagster.spec.schemas",
    # search/: the plan search's lattice
    "sdc_dagster.search_space": "sdc_dagster.search.space",
    # risk/: the key frequencies every risk measure counts on, and each variable's share of the risk
    "sdc_dagster.frequencies": "sdc_dagster.risk.frequencies",
    "sdc_dagster.subset_frequencies": "sdc_dagster.risk.subset_frequencies",
    "sdc_dagster.incremental_counts": "sdc_dagster.risk.incremental_counts",
    "sdc_dagster.contribution": "sdc_dagster.risk.contribution",
    # grid/: the census grid's table (its variables, cell ids, tabulation)
    "sdc_dagster.grid_counts": "sdc_dagster.grid.counts",
    # the wave's plan search (a stage: it imports pipeline.protection and pipeline.evaluation)
    "sdc_dagster.pipeline.search": "sdc_dagster.search.wave",
    # the Pareto front of risk against loss and its plans as a spec block
    "sdc_dagster.protect.plan_search": "sdc_dagster.search.front",
    # the intruder's programme of a published table: the contract's function tables.audit hid its
    # module of the same name (sdc_dagster.tables.audit was the function, never the module)
    "sdc_dagster.tables.audit": "sdc_dagster.tables.intruder",
}

#: new packages: their __init__ docstring
NEW_PACKAGES: dict[str, str] = {
    "sdc_dagster.synthetic": (
        "Synthetic data, seeded: the national census of persons on the 1-km grid\n"
        "(:mod:`~sdc_dagster.synthetic.census`, SPEC §11.4) and the simulated survey of Młodak's\n"
        "combined-risk paper (:mod:`~sdc_dagster.synthetic.survey`, SPEC §5.7), the demo's data.\n"
    ),
    "sdc_dagster.grid": (
        "The census grid's table (SPEC §11.1): its variables, GEOSTAT cell ids and the tabulation of\n"
        "persons into grid counts (:mod:`~sdc_dagster.grid.counts`), below the methods that protect\n"
        "and measure it.\n"
    ),
}

#: old module kept importable for CONTRACT.md: old dotted name -> (its text: re-exports of the new)
SHIMS: dict[str, str] = {
    "sdc_dagster.contribution": (
        '"""The contract\'s path of the variable contributions (CONTRACT.md: ``import\n'
        'sdc_dagster.contribution as contribution``): the module is\n'
        ':mod:`sdc_dagster.risk.contribution` (Shapley, solidarity and ESL values, SPEC §6)."""\n'
        "\n"
        "from sdc_dagster.risk.contribution import contribution_values, contributions\n"
        "\n"
        '__all__ = ["contribution_values", "contributions"]\n'
    ),
}

KEEP = "move_modules: keep"
SUFFIXES = (".py", ".md", ".toml", ".cfg", ".yaml", ".yml")
LAYER_TEST = "tests/test_layers.py"
SELF = "tools/move_modules.py"


class MoveError(Exception):
    """A move the script cannot make safely; the message names the file and what to do."""


def module_path(dotted: str) -> Path:
    """``sdc_dagster.a.b`` -> ``sdc_dagster/a/b.py``."""
    return Path(*dotted.split(".")).with_suffix(".py")


def check_table(moves: dict[str, str]) -> None:
    """No new name is another move's old name (one pass rewrites; a chain would need two)."""
    for old, new in moves.items():
        if new in moves:
            raise MoveError(f"{old} -> {new}, but {new} is moved too: give the final name")
        if not (old.startswith(ROOT_PACKAGE + ".") and new.startswith(ROOT_PACKAGE + ".")):
            raise MoveError(f"{old} -> {new}: both must be modules of {ROOT_PACKAGE}")


def bound_names(init: Path) -> set[str]:
    """The names a package's ``__init__.py`` binds (imports, assignments, definitions)."""
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def is_shim(path: Path, new: str) -> bool:
    """Whether the module at ``path`` only re-exports ``new`` (a docstring, imports from it, ``__all__``),
    as the modules of :data:`SHIMS` do, in this or an earlier version of their text."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(
        (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        or (isinstance(n, ast.ImportFrom) and n.module == new)
        or (isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] == ["__all__"])
        for n in body
    )


def move_file(root: Path, old: str, new: str) -> bool:
    """``git mv`` the module of ``old`` to that of ``new``; False when it has moved already."""
    source, target = root / module_path(old), root / module_path(new)
    if target.is_file():
        if source.is_file() and not (old in SHIMS and is_shim(source, new)):
            raise MoveError(f"{source.relative_to(root)} and {target.relative_to(root)} both exist: a merge brought "
                            f"the old module back; merge its changes into the new one by hand, delete it, run again")
        return False
    if not source.is_file():
        raise MoveError(f"neither {source.relative_to(root)} nor {target.relative_to(root)} exists")
    package = new.rpartition(".")[0]
    package_dir = root / Path(*package.split("."))
    init = package_dir / "__init__.py"
    if not init.is_file():
        if package not in NEW_PACKAGES:
            raise MoveError(f"{new}: package {package} has no __init__.py and no docstring in NEW_PACKAGES")
        package_dir.mkdir(parents=True, exist_ok=True)
        init.write_text(f'"""{NEW_PACKAGES[package]}"""\n', encoding="utf-8")
        git(root, "add", str(init.relative_to(root)))
    leaf = new.rpartition(".")[2]
    if leaf in bound_names(init):
        raise MoveError(f"{init.relative_to(root)} binds the name {leaf!r}, which would hide the module {new}")
    git(root, "mv", str(source.relative_to(root)), str(target.relative_to(root)))
    return True


def dotted_pattern(moves: dict[str, str]) -> re.Pattern[str]:
    """Whole dotted names only: not inside a longer name (``x.sdc_dagster.a``, ``sdc_dagster.a_b``)."""
    names = "|".join(re.escape(o) for o in sorted(moves, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({names})(?!\w)")


def path_pattern(moves: dict[str, str]) -> re.Pattern[str]:
    """``sdc_dagster/a/b.py`` paths of the old modules."""
    paths = "|".join(re.escape(module_path(o).as_posix()) for o in sorted(moves, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({paths})(?!\w)")


def engine_relative(dotted: str) -> str:
    """``sdc_dagster.a.b`` -> ``a/b.py`` (the paths ``tests/test_layers.py`` lists)."""
    return module_path(dotted).relative_to(ROOT_PACKAGE).as_posix()


#: checkout folders installed as packages of sdc_dagster (setup.py: package_dir)
FOLDER_PACKAGES = {"sdc_dagster": "sdc_dagster", "assets": "sdc_dagster.assets", "resources": "sdc_dagster.resources"}


def relative_import_moves(node: ast.ImportFrom, moves: dict[str, str], where: str) -> bool:
    """Whether the relative import ``node`` of the file ``where`` names a moved module, or sits in a
    moved module (whose package changed, so the dots now point elsewhere)."""
    parts = Path(where).with_suffix("").parts
    if parts[0] not in FOLDER_PACKAGES:
        return False  # tests/, benchmarks/: their relative imports stay among themselves
    names = [*FOLDER_PACKAGES[parts[0]].split("."), *parts[1:]]
    package = names[:-1]
    if ".".join(package if names[-1] == "__init__" else names) in moves.values():
        return True
    base = package[: len(package) - node.level + 1]
    module = ".".join([*base, *([node.module] if node.module else [])])
    return module in moves or any(f"{module}.{a.name}" in moves for a in node.names)


def split_package_imports(text: str, moves: dict[str, str], where: str) -> str:
    """``from sdc_dagster import a, b`` with ``sdc_dagster.a`` moved -> ``from sdc_dagster import b``
    and ``from <a's new package> import <a's new name> [as a]``, so the name ``a`` still names the
    module. Relative imports of a moved module are refused (the project imports absolutely)."""
    lines = text.splitlines(keepends=True)
    try:
        tree = ast.parse(text, filename=where)
    except SyntaxError as error:
        raise MoveError(f"{where}:{error.lineno}: not valid Python ({error.msg}); fix it and run again") from None
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        if node.level:
            if relative_import_moves(node, moves, where):
                raise MoveError(f"{where}:{node.lineno}: a relative import of a moved module or in a moved "
                                f"module: write it absolutely (from sdc_dagster... import ...) and run again")
            continue
        moved = [a for a in node.names if f"{node.module}.{a.name}" in moves]
        if not moved:
            continue
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        indent = first[: node.col_offset]
        if first[: node.col_offset].strip() or last[node.end_col_offset:].strip():
            raise MoveError(f"{where}:{node.lineno}: an import sharing its line with other code; split it and run again")
        out = []
        kept = [a for a in node.names if a not in moved]
        if kept:
            names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in kept)
            out.append(f"{indent}from {node.module} import {names}\n")
        for alias in moved:
            package, _, leaf = moves[f"{node.module}.{alias.name}"].rpartition(".")
            local = alias.asname or alias.name
            out.append(f"{indent}from {package} import {leaf}{'' if local == leaf else f' as {local}'}\n")
        lines[node.lineno - 1: node.end_lineno] = out
    return "".join(lines)


def rewrite(text: str, moves: dict[str, str], where: str) -> str:
    """Every reference to an old module in ``text`` (a file at ``where``) pointed at its new module."""
    if where.endswith(".py"):
        text = split_package_imports(text, moves, where)
    dotted, paths = dotted_pattern(moves), path_pattern(moves)
    new_paths = {module_path(o).as_posix(): module_path(n).as_posix() for o, n in moves.items()}
    relative = {engine_relative(o): engine_relative(n) for o, n in moves.items()}
    out = []
    for line in text.splitlines(keepends=True):
        if KEEP not in line:
            line = dotted.sub(lambda m: moves[m.group(1)], line)
            line = paths.sub(lambda m: new_paths[m.group(1)], line)
            if where == LAYER_TEST:
                line = re.sub(r"""(["'])([\w/]+\.py)\1""",
                              lambda m: f"{m.group(1)}{relative.get(m.group(2), m.group(2))}{m.group(1)}", line)
        out.append(line)
    return "".join(out)


def checkout_files(root: Path) -> list[str]:
    """The checkout's text files to rewrite: tracked or new (not ignored), by suffix."""
    listed = git(root, "ls-files", "--cached", "--others", "--exclude-standard").splitlines()
    return sorted({f for f in listed if f.endswith(SUFFIXES) and f != SELF and (root / f).is_file()})


def write_shims(root: Path, moves: dict[str, str]) -> list[str]:
    written = []
    for old, text in SHIMS.items():
        path = root / module_path(old)
        if old in moves and (not path.is_file() or path.read_text(encoding="utf-8") != text):
            path.write_text(text, encoding="utf-8")
            git(root, "add", str(path.relative_to(root)))
            written.append(path.relative_to(root).as_posix())
    return written


def final_checks(root: Path, moves: dict[str, str]) -> None:
    """The code location imports, pytest collects, each moved module is its package's attribute and
    no old dotted name is left outside the shims and the lines marked to keep."""
    leftovers = []
    shims = {module_path(o).as_posix() for o in SHIMS}
    pattern = dotted_pattern(moves)
    for name in checkout_files(root):
        if name in shims:
            continue
        for number, line in enumerate((root / name).read_text(encoding="utf-8").splitlines(), 1):
            if KEEP not in line and pattern.search(line):
                leftovers.append(f"{name}:{number}: {line.strip()}")
    if leftovers:
        raise MoveError("old names left:\n" + "\n".join(leftovers))
    probe = "; ".join(
        f"import {new}; import {new.rpartition('.')[0]} as p; "
        f"assert getattr(p, {new.rpartition('.')[2]!r}) is sys.modules[{new!r}], {new!r}"
        for new in moves.values()
    )
    for command in ([sys.executable, "-c", f"import sys; import sdc_dagster.definitions; {probe}"],
                    [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]):
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            raise MoveError(f"{' '.join(command[:3])} ... failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    root = Path.cwd()
    if not (root / ROOT_PACKAGE / "__init__.py").is_file() or not (root / ".git").exists():
        print(f"run from the repository root (no {ROOT_PACKAGE}/__init__.py or .git here)", file=sys.stderr)
        return 2
    moves = MOVES
    try:
        check_table(moves)
        for old, new in moves.items():
            if move_file(root, old, new):
                print(f"moved {module_path(old)} -> {module_path(new)}")
        for name in checkout_files(root):
            if name in {module_path(o).as_posix() for o in SHIMS}:
                continue
            path = root / name
            text = path.read_text(encoding="utf-8")
            new_text = rewrite(text, moves, name)
            if new_text != text:
                path.write_text(new_text, encoding="utf-8")
                print(f"rewrote {name}")
        for name in write_shims(root, moves):
            print(f"wrote {name} (kept for CONTRACT.md)")
        final_checks(root, moves)
    except MoveError as problem:
        print(f"move_modules: {problem}", file=sys.stderr)
        return 1
    print("checked: sdc_dagster.definitions imports, pytest collects, no old module name left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
