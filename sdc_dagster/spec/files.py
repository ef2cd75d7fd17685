"""Survey spec files: one YAML file per survey. :func:`load_spec` reads and validates one, and a
:class:`SpecError` names the file and the YAML line of each offending key; :func:`scan_specs`
reads every spec of some folders, keeping the broken ones apart (:class:`BrokenSpec`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from sdc_dagster.spec.parse import parse_spec
from sdc_dagster.spec.survey import SpecError, SurveySpec


def _key_lines(node: yaml.Node | None, path: str = "", lines: dict[str, int] | None = None) -> dict[str, int]:
    """The 1-based YAML line of every key path of a composed document (``plans.p.steps[0]``)."""
    lines = {} if lines is None else lines
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{path}.{key.value}" if path else str(key.value)
            lines[child] = key.start_mark.line + 1
            _key_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        # A plan given as a bare list of steps: its items are the plan's steps[i].
        bare_plan = path.startswith("plans.") and path.count(".") == 1
        for index, item in enumerate(node.value):
            child = f"{path}.steps[{index}]" if bare_plan else f"{path}[{index}]"
            lines[child] = item.start_mark.line + 1
            _key_lines(item, child, lines)
    return lines


def _line_of(key: str | None, lines: dict[str, int]) -> int | None:
    """The line of ``key``, or of its nearest enclosing key present in the document."""
    candidate = (key or "").removeprefix("spec.")
    while candidate:
        if candidate in lines:
            return lines[candidate]
        cut = max(candidate.rfind("."), candidate.rfind("["))
        if cut <= 0:
            return None
        candidate = candidate[:cut]
    return None


def read_yaml_file(path: Path, what: str):
    """A spec file's text, its YAML root node (for the lines of :func:`located_error`) and its
    value; a :class:`SpecError` naming ``path`` when it cannot be read (``what``: "spec file", "table
    spec file") or is not valid YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the {what} ({exc.strerror})") from exc
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        raw = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML ({exc})") from exc
    finally:
        loader.dispose()
    return text, node, raw


def load_spec(path: str | Path) -> SurveySpec:
    """Read and validate a survey spec from a YAML file; a :class:`SpecError` reads
    ``<file>:<line>: <key>: ...`` with the YAML line of the offending key, one line per independent
    problem (its ``errors``), sorted by YAML line (problems without one last)."""
    path = Path(path)
    text, node, raw = read_yaml_file(path, "spec file")
    try:
        return parse_spec(raw, spec_path=path.resolve(), text=text)
    except SpecError as exc:
        raise located_error(path, node, exc) from None


def located_error(path: Path, node: yaml.Node | None, error: SpecError) -> SpecError:
    """``error`` of the spec file ``path`` (composed as ``node``) with each of its problems reading
    ``<file>:<line>: <key>: ...``, the YAML line of its key, sorted by line (problems without one last)."""
    lines = _key_lines(node)
    located = sorted(((_line_of(e.key, lines), e) for e in error.errors),
                     key=lambda pair: (pair[0] is None, pair[0] or 0))
    return SpecError.combine([
        SpecError(f"{path.name}:{line}: {e}" if line is not None else f"{path.name}: {e}", key=e.key)
        for line, e in located
    ])


@dataclass(frozen=True)
class BrokenSpec:
    """A spec file that did not load (:func:`scan_specs`): the file, its :class:`SpecError` (each of
    its ``errors`` names the line and the key), and the survey names it may be meant for (the file
    name's stem, and its ``survey:`` value when the YAML reads)."""

    path: Path
    error: SpecError
    surveys: frozenset[str]

    def summary(self) -> str:
        """One line: the file and its first error (with its line), and how many more there are."""
        first = " ".join(str(self.error.errors[0]).split())
        if first.startswith(f"{self.path.name}:"):  # "<file name>:<line>: ..." (load_spec)
            first = f"{self.path}{first[len(self.path.name):]}"
        elif not first.startswith(str(self.path)):
            first = f"{self.path}: {first}"
        more = len(self.error.errors) - 1
        return first + (f" (and {more} more: sdc check {self.path})" if more else "")


def _claimed_surveys(path: Path) -> frozenset[str]:
    """The survey names a spec file may be meant for: its stem, and its ``survey:`` if readable."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        raw = None
    survey = raw.get("survey") if isinstance(raw, Mapping) else None
    return frozenset({path.stem} | ({survey} if isinstance(survey, str) else set()))


def scan_specs(folders: list[str | Path]) -> tuple[list[SurveySpec], list[BrokenSpec]]:
    """Every ``*.yaml`` spec of ``folders`` (folder order, then file name), and every file that did
    not load (:class:`BrokenSpec`): one broken spec never hides the others. A spec naming a survey
    that an earlier spec named is broken too (the earlier one is kept)."""
    specs: list[SurveySpec] = []
    broken: list[BrokenSpec] = []
    for path in (p for folder in folders if Path(folder).is_dir() for p in sorted(Path(folder).glob("*.yaml"))):
        try:
            spec = load_spec(path)
        except SpecError as error:
            broken.append(BrokenSpec(path, error, _claimed_surveys(path)))
            continue
        first = next((s for s in specs if s.survey == spec.survey), None)
        if first is None:
            specs.append(spec)
            continue
        line = _key_lines(yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)).get("survey")
        error = SpecError(f"{path.name}:{line}: survey: {spec.survey!r} is named by two specs ({first.spec_path} "
                          f"and {spec.spec_path}); rename one", key="survey")
        broken.append(BrokenSpec(path, error, frozenset({spec.survey})))
    return specs, broken


def load_specs(directory: str | Path) -> list[SurveySpec]:
    """Every ``*.yaml`` spec in a directory, sorted by file name; a spec that does not load, or a
    survey named twice, raises (every such problem)."""
    specs, broken = scan_specs([directory])
    if broken:
        raise SpecError.combine([error for b in broken for error in b.error.errors])
    return specs
