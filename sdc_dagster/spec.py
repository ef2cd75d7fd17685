"""Survey specification: one YAML file per survey, parsed into frozen dataclasses and validated.

A spec names the survey, how its wave files are read, the role and scale of every variable
(SPEC §1.1–1.2), its missing-value codes, the risk parameters (SPEC §3, §5, §12) and the named
protection plans (ordered steps, SPEC §8). Every problem raises :class:`SpecError` naming the key
path (``variables.roof.scale``) and what was expected; :func:`load_spec` adds the YAML line of that key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROLES = (
    "direct_identifier",
    "categorical_key",
    "continuous_key",
    "sensitive",
    "weight",
    "household_id",
    "record_id",
    "other",
)
SCALES = ("nominal", "ordinal", "continuous")
# File extension -> format of a wave file; a wave is read by its extension, the spec's
# ``source.format`` applies to files without one.
FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".sav": "spss",
    ".zsav": "spss",
    ".dta": "stata",
    ".sas7bdat": "sas",
    ".xpt": "xport",
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class SpecError(ValueError):
    """The survey spec is wrong; the message names the key and what was expected.

    ``key`` is the key path of the problem (``plans.p.steps[0]``), used to find its YAML line.
    """

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Variable:
    """One column of the survey: its role (SPEC §1.1), scale (§1.2) and value rules."""

    name: str
    role: str
    scale: str | None = None
    categories: tuple | None = None
    missing_codes: tuple = ()
    precision: float | None = None
    hierarchy: tuple = ()  # recode levels, coarser with each: a level is a tuple of groups of categories

    @property
    def numeric(self) -> bool:
        """Whether the values must be numbers: a weight, a continuous key, or numeric categories."""
        if self.role in ("weight", "continuous_key"):
            return True
        return self.categories is not None and all(
            isinstance(c, (int, float)) and not isinstance(c, bool) for c in self.categories
        )


class Variables(tuple):
    """The spec's variables in spec order; also indexed by name: ``spec.variables["edu"]``."""

    def __getitem__(self, item):
        if isinstance(item, str):
            for v in self:
                if v.name == item:
                    return v
            raise KeyError(item)
        return super().__getitem__(item)


@dataclass(frozen=True)
class Source:
    """How a wave file is found and read."""

    path: str | None = None
    format: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RiskParameters:
    """Risk thresholds (SPEC §3.1, §3.3, §3.6, §5.1, §12)."""

    k: int = 3
    l: int = 2
    recursive_c: float = 2.0
    max_global_risk: float = 0.05
    individual_risk_threshold: float = 0.1


@dataclass(frozen=True)
class Plan:
    """A named protection plan: ordered steps, the k its output must reach, and its seed."""

    name: str
    steps: tuple[Mapping[str, Any], ...]
    k: int
    random_state: int
    description: str = ""


@dataclass(frozen=True)
class SurveySpec:
    """A validated survey specification."""

    survey: str
    title: str
    source: Source
    variables: Variables
    risk: RiskParameters
    plans: tuple[Plan, ...]
    spec_path: Path | None = None
    spec_hash: str = ""

    def variable(self, name: str) -> Variable:
        return self.variables[name]

    def names(self, role: str) -> list[str]:
        return [v.name for v in self.variables if v.role == role]

    @property
    def categorical_keys(self) -> list[str]:
        return self.names("categorical_key")

    @property
    def continuous_keys(self) -> list[str]:
        return self.names("continuous_key")

    @property
    def weight(self) -> str | None:
        w = self.names("weight")
        return w[0] if w else None

    @property
    def household_id(self) -> str | None:
        h = self.names("household_id")
        return h[0] if h else None

    @property
    def record_id(self) -> str | None:
        r = self.names("record_id")
        return r[0] if r else None

    @property
    def precision(self) -> dict[str, float]:
        return {v.name: v.precision for v in self.variables if v.role == "continuous_key"}

    @property
    def scales(self) -> dict[str, str]:
        return {v.name: v.scale for v in self.variables if v.scale is not None}

    @property
    def hierarchies(self) -> dict[str, list[list[list]]]:
        """The category hierarchy of each categorical key that has one (``hierarchy:``), as lists."""
        return {v.name: [[list(g) for g in level] for level in v.hierarchy] for v in self.variables if v.hierarchy}

    def plan(self, name: str) -> Plan:
        for p in self.plans:
            if p.name == name:
                return p
        raise KeyError(name)


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise SpecError(f"{where}: expected {what}", key=where)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    _expect(isinstance(value, Mapping), where, f"a mapping, got {type(value).__name__}")
    return value


def _allowed_keys(value: Mapping, where: str, allowed: set[str]) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]}: unknown key; expected one of {sorted(allowed)}", key=f"{where}.{unknown[0]}")


def _parse_variable(name: str, raw: Any, global_missing: tuple) -> Variable:
    where = f"variables.{name}"
    _expect(isinstance(name, str) and bool(name), "variables", "non-empty column names")
    raw = _mapping(raw, where)
    _allowed_keys(raw, where, {"role", "scale", "categories", "order", "missing", "precision", "label", "hierarchy"})
    _expect("role" in raw, f"{where}.role", f"one of {list(ROLES)} (missing)")
    role = raw["role"]
    _expect(role in ROLES, f"{where}.role", f"one of {list(ROLES)}, got {role!r}")
    scale = raw.get("scale")
    if scale is None:
        scale = {"categorical_key": "nominal", "continuous_key": "continuous", "weight": "continuous"}.get(role)
    _expect(scale is None or scale in SCALES, f"{where}.scale", f"one of {list(SCALES)}, got {scale!r}")
    if role == "continuous_key":
        _expect(scale == "continuous", f"{where}.scale", "'continuous' for a continuous_key")
    if role == "categorical_key":
        _expect(scale in ("nominal", "ordinal"), f"{where}.scale", "'nominal' or 'ordinal' for a categorical_key")
    categories = raw.get("order", raw.get("categories"))
    if "order" in raw and "categories" in raw:
        _expect(
            isinstance(raw["order"], list) and isinstance(raw["categories"], list)
            and sorted(map(str, raw["order"])) == sorted(map(str, raw["categories"])),
            f"{where}.order",
            "the same categories as 'categories' (the order of an ordinal variable lists every category once)",
        )
    if scale == "ordinal":
        _expect(categories is not None, f"{where}.order", "the category order (a list) for an ordinal variable")
    if categories is not None:
        _expect(isinstance(categories, list) and len(categories) > 0, f"{where}.categories", "a non-empty list")
        _expect(len(set(map(str, categories))) == len(categories), f"{where}.categories", "distinct values")
        categories = tuple(categories)
    missing = raw.get("missing", list(global_missing))
    _expect(isinstance(missing, list), f"{where}.missing", "a list of missing-value codes")
    precision = raw.get("precision")
    if precision is not None:
        _expect(isinstance(precision, (int, float)) and 0 < precision < 1, f"{where}.precision", "a number in (0, 1)")
        precision = float(precision)
    if role == "continuous_key":
        _expect(precision is not None, f"{where}.precision", "p_j in (0, 1) for a continuous key (SPEC §5.2)")
    hierarchy = _parse_hierarchy(raw.get("hierarchy"), f"{where}.hierarchy", role, categories)
    return Variable(
        name=name,
        role=role,
        scale=scale,
        categories=categories,
        missing_codes=tuple(missing),
        precision=precision,
        hierarchy=hierarchy,
    )


def _parse_hierarchy(raw: Any, where: str, role: str, categories: tuple | None) -> tuple:
    """A categorical key's recode levels (for the plan search): a list of levels, each a list of
    groups of categories merged by one recode, coarser with each level."""
    if raw is None:
        return ()
    _expect(role == "categorical_key", where, "only on a categorical_key")
    _expect(isinstance(raw, list) and len(raw) > 0, where, "a non-empty list of levels, each a list of groups")
    levels = []
    for i, level in enumerate(raw):
        _expect(isinstance(level, list) and len(level) > 0 and all(isinstance(g, list) and g for g in level),
                f"{where}[{i}]", "a list of groups, each a non-empty list of categories")
        members = [c for g in level for c in g]
        _expect(len(set(map(str, members))) == len(members), f"{where}[{i}]", "each category in one group at most")
        if categories is not None:
            unknown = [c for c in members if str(c) not in set(map(str, categories))]
            _expect(not unknown, f"{where}[{i}]", f"categories of the variable, got {unknown}")
        levels.append(tuple(tuple(g) for g in level))
    return tuple(levels)


def _parse_plan(name: str, raw: Any, default_k: int) -> Plan:
    where = f"plans.{name}"
    _expect(isinstance(name, str) and bool(_NAME.match(name)), where, "a plan name of letters, digits and _")
    if isinstance(raw, list):
        raw = {"steps": raw}
    raw = _mapping(raw, where)
    _allowed_keys(raw, where, {"steps", "k", "random_state", "description"})
    steps = raw.get("steps")
    _expect(isinstance(steps, list) and len(steps) > 0, f"{where}.steps", "a non-empty list of steps")
    for i, step in enumerate(steps):
        _mapping(step, f"{where}.steps[{i}]")
        _expect("method" in step, f"{where}.steps[{i}].method", "the name of a protection method")
    k = raw.get("k", default_k)
    _expect(isinstance(k, int) and k >= 1, f"{where}.k", "a positive integer")
    seed = raw.get("random_state", 20240)  # step seeds also hash the plan name: no dependence on plan order
    _expect(isinstance(seed, int) and seed >= 0, f"{where}.random_state", "a non-negative integer seed")
    return Plan(
        name=name,
        steps=tuple(dict(s) for s in steps),
        k=k,
        random_state=seed,
        description=str(raw.get("description", "")),
    )


def _validate_plan_steps(plans: tuple[Plan, ...], columns: list[str]) -> None:
    """Each plan's steps name known methods, parameters and spec variables (SPEC §8); the error's
    key is the first failing step, so that :func:`load_spec` can give its line."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.protect.plan import validate_plan

    for plan in plans:
        steps = list(plan.steps)
        # Validating growing prefixes finds the failing step without parsing validate_plan's message.
        for index in range(len(steps)):
            try:
                validate_plan(steps[: index + 1], columns=columns)
            except SDCInputError as exc:
                raise SpecError(f"plans.{plan.name}.steps: {exc}", key=f"plans.{plan.name}.steps[{index}]") from None


def _validate_recode_categories(plans: tuple[Plan, ...], variables: tuple[Variable, ...]) -> None:
    """A recode step of a variable with ``categories:`` recodes only listed categories (or codes an
    earlier recode step of the plan produced): ``"7"`` for category ``7`` is a spec error, not a
    silent no-op. A listed category absent from a wave is fine (the step records it)."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.protect.recode import merge_mapping

    declared = {v.name: list(v.categories) for v in variables if v.categories is not None}
    for plan in plans:
        known = dict(declared)
        for index, step in enumerate(plan.steps):
            variable = step.get("variable")
            if variable not in known:
                continue
            if step["method"] != "recode":
                known.pop(variable)  # other methods may change the codes; later steps are not checked
                continue
            parameter = "groups" if step.get("groups") is not None else "mapping"
            try:
                mapping = merge_mapping(step["groups"]) if parameter == "groups" else step["mapping"]
            except SDCInputError as exc:
                where = f"plans.{plan.name}.steps[{index}].groups"
                raise SpecError(f"{where}: {exc}", key=where) from None
            unknown = [category for category in mapping if category not in known[variable]]
            if unknown:
                raise SpecError(
                    f"plans.{plan.name}.steps[{index}].{parameter}: expected categories of {variable!r} "
                    f"({known[variable]}), got {unknown[0]!r}",
                    key=f"plans.{plan.name}.steps[{index}].{parameter}.{unknown[0]}",
                )
            known[variable] = known[variable] + [new for new in mapping.values() if new not in known[variable]]


def parse_spec(raw: Any, *, spec_path: Path | None = None, text: str = "") -> SurveySpec:
    """Validate a parsed YAML document and build the :class:`SurveySpec`."""
    raw = _mapping(raw, "spec")
    _allowed_keys(raw, "spec", {"survey", "title", "source", "variables", "missing", "risk", "plans"})
    _expect("survey" in raw, "survey", "the survey name (missing)")
    survey = raw["survey"]
    _expect(isinstance(survey, str) and bool(_NAME.match(survey)), "survey", "a name of letters, digits and _")

    src = _mapping(raw.get("source", {}), "source")
    _allowed_keys(src, "source", {"path", "format", "options"})
    fmt = src.get("format")
    _expect(fmt is None or fmt in FORMATS.values(), "source.format", f"one of {sorted(set(FORMATS.values()))}")
    source = Source(path=src.get("path"), format=fmt, options=dict(_mapping(src.get("options", {}), "source.options")))

    global_missing = raw.get("missing", [])
    _expect(isinstance(global_missing, list), "missing", "a list of missing-value codes")
    variables_raw = _mapping(raw.get("variables"), "variables") if "variables" in raw else None
    _expect(variables_raw is not None and len(variables_raw) > 0, "variables", "a mapping of column name to role")
    variables = Variables(_parse_variable(n, v, tuple(global_missing)) for n, v in variables_raw.items())

    for role in ("weight", "household_id", "record_id"):
        found = [v.name for v in variables if v.role == role]
        _expect(len(found) <= 1, f"variables ({role})", f"at most one {role} variable, got {found}")
    _expect(
        any(v.role == "categorical_key" for v in variables),
        "variables",
        "at least one categorical_key variable",
    )

    risk_raw = _mapping(raw.get("risk", {}), "risk")
    _allowed_keys(risk_raw, "risk", {"k", "l", "recursive_c", "max_global_risk", "individual_risk_threshold"})
    risk = RiskParameters(**risk_raw)
    _expect(isinstance(risk.k, int) and risk.k >= 1, "risk.k", "a positive integer")
    _expect(isinstance(risk.l, int) and risk.l >= 1, "risk.l", "a positive integer")
    for name in ("max_global_risk", "individual_risk_threshold"):
        value = getattr(risk, name)
        _expect(isinstance(value, (int, float)) and 0 <= value <= 1, f"risk.{name}", "a number in [0, 1]")

    plans_raw = _mapping(raw.get("plans", {}), "plans")
    plans = tuple(_parse_plan(n, p, risk.k) for n, p in plans_raw.items())
    _validate_plan_steps(plans, [v.name for v in variables])
    _validate_recode_categories(plans, variables)
    return SurveySpec(
        survey=survey,
        title=str(raw.get("title", survey)),
        source=source,
        variables=variables,
        risk=risk,
        plans=plans,
        spec_path=spec_path,
        spec_hash=hashlib.sha256(text.encode()).hexdigest() if text else "",
    )


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


def load_spec(path: str | Path) -> SurveySpec:
    """Read and validate a survey spec from a YAML file; a :class:`SpecError` reads
    ``<file>:<line>: <key>: ...`` with the YAML line of the offending key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror})") from exc
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        raw = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML ({exc})") from exc
    finally:
        loader.dispose()
    try:
        return parse_spec(raw, spec_path=path.resolve(), text=text)
    except SpecError as exc:
        line = _line_of(exc.key, _key_lines(node))
        where = f"{path.name}:{line}" if line is not None else path.name
        raise SpecError(f"{where}: {exc}", key=exc.key) from None


def load_specs(directory: str | Path) -> list[SurveySpec]:
    """Every ``*.yaml`` spec in a directory, sorted by file name; survey names must be unique."""
    specs = [load_spec(p) for p in sorted(Path(directory).glob("*.yaml"))]
    seen: dict[str, Path | None] = {}
    for s in specs:
        if s.survey in seen:
            raise SpecError(f"survey: {s.survey!r} is named by two specs ({seen[s.survey]} and {s.spec_path})")
        seen[s.survey] = s.spec_path
    return specs
