"""Survey specification: one YAML file per survey, parsed into frozen dataclasses and validated.

A spec names the survey, how its wave files are read, the role and scale of every variable
(SPEC §1.1–1.2), its missing-value codes, the risk parameters (SPEC §3, §5, §12) and the named
protection plans (ordered steps, SPEC §8). Every problem raises :class:`SpecError` naming the key
path (``variables.roof.scale``) and what was expected.
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
FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".sav": "spss",
    ".dta": "stata",
    ".sas7bdat": "sas",
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class SpecError(ValueError):
    """The survey spec is wrong; the message names the key and what was expected."""


@dataclass(frozen=True)
class Variable:
    """One column of the survey: its role (SPEC §1.1), scale (§1.2) and value rules."""

    name: str
    role: str
    scale: str | None = None
    categories: tuple | None = None
    missing_codes: tuple = ()
    precision: float | None = None


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
    variables: tuple[Variable, ...]
    risk: RiskParameters
    plans: tuple[Plan, ...]
    spec_path: Path | None = None
    spec_hash: str = ""

    def variable(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(name)

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

    def plan(self, name: str) -> Plan:
        for p in self.plans:
            if p.name == name:
                return p
        raise KeyError(name)


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise SpecError(f"{where}: expected {what}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    _expect(isinstance(value, Mapping), where, f"a mapping, got {type(value).__name__}")
    return value


def _allowed_keys(value: Mapping, where: str, allowed: set[str]) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]}: unknown key; expected one of {sorted(allowed)}")


def _parse_variable(name: str, raw: Any, global_missing: tuple) -> Variable:
    where = f"variables.{name}"
    _expect(isinstance(name, str) and bool(name), "variables", "non-empty column names")
    raw = _mapping(raw, where)
    _allowed_keys(raw, where, {"role", "scale", "categories", "order", "missing", "precision", "label"})
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
    return Variable(
        name=name,
        role=role,
        scale=scale,
        categories=categories,
        missing_codes=tuple(missing),
        precision=precision,
    )


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
    """Each plan's steps name known methods, parameters and spec variables (SPEC §8)."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.protect.plan import validate_plan

    for plan in plans:
        try:
            validate_plan(list(plan.steps), columns=columns)
        except SDCInputError as exc:
            raise SpecError(f"plans.{plan.name}.steps: {exc}") from None


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
    variables = tuple(_parse_variable(n, v, tuple(global_missing)) for n, v in variables_raw.items())

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


def load_spec(path: str | Path) -> SurveySpec:
    """Read and validate a survey spec from a YAML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror})") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML ({exc})") from exc
    try:
        return parse_spec(raw, spec_path=path.resolve(), text=text)
    except SpecError as exc:
        raise SpecError(f"{path.name}: {exc}") from None


def load_specs(directory: str | Path) -> list[SurveySpec]:
    """Every ``*.yaml`` spec in a directory, sorted by file name; survey names must be unique."""
    specs = [load_spec(p) for p in sorted(Path(directory).glob("*.yaml"))]
    seen: dict[str, Path | None] = {}
    for s in specs:
        if s.survey in seen:
            raise SpecError(f"survey: {s.survey!r} is named by two specs ({seen[s.survey]} and {s.spec_path})")
        seen[s.survey] = s.spec_path
    return specs
