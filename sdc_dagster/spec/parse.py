"""Validation of a parsed survey spec document into a :class:`~sdc_dagster.spec.survey.SurveySpec`.

Every independent problem is found in one pass and raised as one :class:`SpecError` listing them
(its ``errors``); a problem that makes the later checks meaningless (the spec is not a mapping, a
required section is missing) stops the pass there. The steps of every plan are checked against the
plan-step registry of :mod:`sdc_dagster.protect.plan` (SPEC §8), without running them. The registry
sits below the spec (protection methods never read a spec); it is imported where a plan is checked,
because importing the protection methods (numba, scipy) takes seconds that reading a spec need not wait.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sdc_dagster.errors import SDCInputError, did_you_mean
from sdc_dagster.names import RULES, name_problem
from sdc_dagster.spec.drafted_hierarchies import HierarchyRule
from sdc_dagster.spec.hierarchies import Hierarchy, inline_hierarchy, read_codelist, read_hierarchy_file, value_text
from sdc_dagster.spec.survey import (
    FORMATS,
    L_DIVERSITY_MEASURES,
    RELEASE_FORMATS,
    ROLES,
    SCALES,
    SEARCH_LOSSES,
    SEARCH_METHODS,
    SEARCHED_PLAN,
    Plan,
    ReleaseOptions,
    ReportOptions,
    RiskParameters,
    SearchOptions,
    Source,
    SpecError,
    SurveySpec,
    UtilityLimits,
    Variable,
    Variables,
)
from sdc_dagster.validation import check_option, check_scalar


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise SpecError(f"{where}: expected {what}", key=where)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    _expect(isinstance(value, Mapping), where, f"a mapping, got {type(value).__name__}")
    return value


# What _Problems.attempt returns for a part that failed, where None would mean "not given".
_FAILED = object()


class _Problems:
    """The spec errors found so far, so that independent parts are checked after one fails."""

    def __init__(self):
        self.errors: list[SpecError] = []

    def collect(self, check, *args, default=None):
        """``check(*args)``, or ``default`` if it raised a :class:`SpecError` (recorded)."""
        try:
            return check(*args)
        except SpecError as error:
            self.errors.append(error)
            return default

    def attempt(self, check, *args, default=None):
        """:meth:`collect`, with ``default`` also if ``check`` recorded an error."""
        found = len(self.errors)
        value = self.collect(check, *args, default=default)
        return default if len(self.errors) > found else value

    def unknown_keys(self, value: Mapping, where: str, allowed: set[str]) -> None:
        """One error per key of ``value`` not in ``allowed``."""
        self.errors += [
            SpecError(f"{where}.{key}: unknown key; expected one of {sorted(allowed)}{did_you_mean(key, allowed)}",
                      key=f"{where}.{key}")
            for key in sorted(set(value) - allowed, key=str)
        ]

    def unknown_variables(self, where: str, value: Any, known: Mapping) -> list[str]:
        """One error per name in ``value`` (a name, a list of names or a mapping keyed by name) that is
        not a variable of the spec (``known``), keyed by where it is written (``where[j]`` for the j-th
        item of a list, ``where.<name>`` for a mapping key), with the closest variable's name; returns
        the unknown names."""
        if isinstance(value, str):
            items = [(value, where)]
        elif isinstance(value, Mapping):
            items = [(name, f"{where}.{name}") for name in value]
        elif isinstance(value, (list, tuple)):
            items = [(name, f"{where}[{j}]") for j, name in enumerate(value)]
        else:
            items = []
        unknown = [(name, key) for name, key in items if isinstance(name, str) and name not in known]
        self.errors += [
            SpecError(f"{where} names {name!r}, which is not a variable of the spec"
                      + (did_you_mean(name, known) or f" (the variables: {', '.join(map(str, known))})"), key=key)
            for name, key in unknown
        ]
        return [name for name, _ in unknown]


def _categories(raw: Mapping, where: str) -> tuple | None:
    """A variable's ``categories:`` (or ``order:``, which must list the same ones), or None."""
    categories = raw.get("order", raw.get("categories"))
    if "order" in raw and "categories" in raw:
        _expect(
            isinstance(raw["order"], list) and isinstance(raw["categories"], list)
            and sorted(map(str, raw["order"])) == sorted(map(str, raw["categories"])),
            f"{where}.order",
            "the same categories as 'categories' (the order of an ordinal variable lists every category once)",
        )
    if categories is None:
        return None
    _expect(isinstance(categories, list) and len(categories) > 0, f"{where}.categories", "a non-empty list")
    _expect(len(set(map(str, categories))) == len(categories), f"{where}.categories", "distinct values")
    return tuple(categories)


def _precision(precision: Any, where: str) -> float | None:
    if precision is None:
        return None
    _expect(isinstance(precision, (int, float)) and 0 < precision < 1, f"{where}.precision", "a number in (0, 1)")
    return float(precision)


def _parse_variable(name: str, raw: Any, global_missing: tuple, base: Path | None,
                    problems: _Problems) -> Variable | None:
    """One variable; its independent problems (unknown keys, categories, missing codes, precision)
    are recorded, a wrong role or scale raises (the remaining rules depend on them). The variable is
    returned when its role, scale and categories are right, for the checks that read them."""
    where = f"variables.{name}"
    _expect(isinstance(name, str) and bool(name), "variables", "non-empty column names")
    raw = _mapping(raw, where)
    problems.unknown_keys(raw, where, {"role", "scale", "categories", "order", "missing", "precision", "label", "hierarchy"})
    categories = problems.attempt(_categories, raw, where, default=_FAILED)
    missing = raw.get("missing", list(global_missing))
    problems.attempt(_expect, isinstance(missing, list), f"{where}.missing", "a list of missing-value codes")
    precision = problems.attempt(_precision, raw.get("precision"), where, default=_FAILED)
    _expect("role" in raw, f"{where}.role", f"one of {list(ROLES)} (missing)")
    role = raw["role"]
    _expect(role in ROLES, f"{where}.role", f"one of {list(ROLES)}, got {role!r}{did_you_mean(role, ROLES)}")
    scale = raw.get("scale")
    if scale is None:
        scale = {"categorical_key": "nominal", "continuous_key": "continuous", "weight": "continuous"}.get(role)
    _expect(scale is None or scale in SCALES, f"{where}.scale",
            f"one of {list(SCALES)}, got {scale!r}{did_you_mean(scale, SCALES)}")
    if role == "continuous_key":
        _expect(scale == "continuous", f"{where}.scale", "'continuous' for a continuous_key")
    if role == "categorical_key":
        _expect(scale in ("nominal", "ordinal"), f"{where}.scale", "'nominal' or 'ordinal' for a categorical_key")
    if scale == "ordinal" and categories is not _FAILED:
        _expect(categories is not None, f"{where}.order", "the category order (a list) for an ordinal variable")
    if role == "continuous_key" and precision is not _FAILED:
        _expect(precision is not None, f"{where}.precision", "p_j in (0, 1) for a continuous key (SPEC §5.2)")
    if categories is _FAILED:
        return None  # the hierarchy's categories cannot be checked; the error is recorded
    return Variable(
        name=name,
        role=role,
        scale=scale,
        categories=categories,
        missing_codes=tuple(missing) if isinstance(missing, list) else (),
        precision=None if precision is _FAILED else precision,
        hierarchy=problems.attempt(_parse_hierarchy, raw.get("hierarchy"), f"{where}.hierarchy", role, categories,
                                   base, problems),
    )


def _parse_hierarchy(raw: Any, where: str, role: str, categories: tuple | None, base: Path | None,
                     problems: _Problems) -> Hierarchy | HierarchyRule | None:
    """A categorical key's generalisation hierarchy (for the plan search, SPEC §8.2), one of:

    * a list of levels, each a list of groups of categories merged (the categories a level does not
      list stay alone), or ``{levels: [{name: ..., groups: {group name: [categories]}}, ...]}``;
    * a hierarchy file, ``hierarchy: path`` or ``{file: path, leadstring: "@", codelist: path.cdl,
      separator: ";"}``, the path relative to the spec's folder: ARX's hierarchy CSV or an Argus
      ``.hrc`` (:mod:`sdc_dagster.spec.hierarchies`);
    * a rule the data complete (:mod:`sdc_dagster.spec.drafted_hierarchies`): ``{prefixes: [3, 2, 1]}``
      (codes cut to 3, 2, 1 characters), ``{columns: [province, region]}`` (coarser columns of the file),
      ``{bands: [5, 10, 20]}`` (round-width bands, each width a multiple of the one before).

    Each level must coarsen the one before; an error names the level (or the file and its line)."""
    if raw is None:
        return None
    _expect(role == "categorical_key", where, "only on a categorical_key")
    try:
        if isinstance(raw, list):
            _expect(len(raw) > 0, where, "a non-empty list of levels, each a list of groups")
            hierarchy = _levels_hierarchy(raw, where)
        elif isinstance(raw, str):
            hierarchy = _file_hierarchy({"file": raw}, where, base)
        else:
            raw = _mapping(raw, where)
            forms = [k for k in ("file", "levels", "prefixes", "columns", "bands") if k in raw]
            _expect(len(forms) == 1, where, "one of 'file', 'levels', 'prefixes', 'columns' or 'bands'"
                    + (f", got {forms}" if forms else ""))
            allowed = {"file", "leadstring", "codelist", "separator"} if forms[0] == "file" else {forms[0]}
            problems.unknown_keys(raw, where, allowed)
            if forms[0] == "file":
                hierarchy = _file_hierarchy(raw, where, base)
            elif forms[0] == "levels":
                hierarchy = _levels_hierarchy(raw["levels"], f"{where}.levels")
            else:
                hierarchy = _rule_hierarchy(forms[0], raw[forms[0]], f"{where}.{forms[0]}")
    except SDCInputError as exc:
        raise SpecError(f"{where}: {exc}", key=where) from None
    if isinstance(hierarchy, Hierarchy) and categories is not None:
        if hierarchy.complete:
            try:
                hierarchy.on_categories(categories)
            except SDCInputError as exc:
                raise SpecError(f"{where}: category of the variable missing: {exc}", key=where) from None
        else:
            known = set(map(value_text, categories))
            unknown = [v for v in hierarchy.values if value_text(v) not in known]
            _expect(not unknown, where, f"categories of the variable, got {unknown}")
    return hierarchy


def _levels_hierarchy(raw: Any, where: str) -> Hierarchy:
    try:
        return inline_hierarchy(raw, where=where)
    except SDCInputError as exc:  # the level named in the message is the key of its YAML line
        at = str(exc).split(":", 1)[0]
        raise SpecError(str(exc), key=at if at.startswith(where) else where) from None


def _file_hierarchy(raw: Mapping, where: str, base: Path | None) -> Hierarchy:
    """A hierarchy file (ARX CSV or Argus .hrc), its path relative to the spec's folder."""
    for name in ("file", "leadstring", "codelist", "separator"):
        _expect(name not in raw or (isinstance(raw[name], str) and raw[name]), f"{where}.{name}", "a non-empty string")
    folder = base if base is not None else Path.cwd()
    options = {}
    if "codelist" in raw:
        options["labels"] = read_codelist(folder / raw["codelist"])
    if "leadstring" in raw:
        options["leadstring"] = raw["leadstring"]
    if "separator" in raw:
        options["separator"] = raw["separator"]
    return read_hierarchy_file(folder / raw["file"], **options)


def _rule_hierarchy(kind: str, value: Any, where: str) -> HierarchyRule:
    """``prefixes``, ``columns`` or ``bands`` (see :func:`_parse_hierarchy`)."""
    _expect(isinstance(value, list) and len(value) > 0, where, "a non-empty list")
    if kind == "prefixes":
        _expect(all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value)
                and all(b < a for a, b in zip(value, value[1:])), where,
                f"code lengths, decreasing and positive (finest first), got {value}")
        return HierarchyRule("prefixes", lengths=tuple(value))
    if kind == "columns":
        _expect(all(isinstance(c, str) and c for c in value), where, "a list of column names, finest first")
        return HierarchyRule("columns", columns=tuple(value))
    numbers = all(isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0 for w in value)
    _expect(numbers and all(b > a and abs(b / a - round(b / a)) < 1e-9 for a, b in zip(value, value[1:])), where,
            f"positive band widths, each a multiple of the one before (so that the bands nest), got {value}")
    return HierarchyRule("bands", widths=tuple(float(w) for w in value))


def _step_structure(step: Any, where: str) -> bool:
    _mapping(step, where)
    _expect("method" in step, f"{where}.method", "the name of a protection method")
    return True


def _parse_plan(name: str, raw: Any, default_k: int | None, variables: dict[str, Variable | None],
                problems: _Problems) -> Plan | None:
    """One plan: its keys, its steps' structure, then (SPEC §8) each step's method, parameters and
    columns (:func:`~sdc_dagster.protect.plan.plan_problems`, keyed by the failing step so that
    :func:`load_spec` gives its line) and the categories its recodes name. ``default_k`` is None when
    ``risk.k`` is wrong (recorded there), so that a plan without ``k`` is not blamed for it."""
    from sdc_dagster.protect.plan import plan_problems, step_columns

    where = f"plans.{name}"
    problems.attempt(_expect, name_problem("plan name", name) is None, where, f"a plan name: {RULES['plan name'][1]}")
    if isinstance(raw, list):
        raw = {"steps": raw}
    raw = _mapping(raw, where)
    problems.unknown_keys(raw, where, {"steps", "k", "random_state", "description"})
    k = raw.get("k", default_k)
    if "k" in raw or default_k is not None:
        problems.attempt(_expect, isinstance(k, int) and k >= 1, f"{where}.k", "a positive integer")
    seed = raw.get("random_state", 20240)  # step seeds also hash the plan name: no dependence on plan order
    problems.attempt(_expect, isinstance(seed, int) and seed >= 0, f"{where}.random_state",
                     "a non-negative integer seed")
    steps = raw.get("steps")
    _expect(isinstance(steps, list) and len(steps) > 0, f"{where}.steps", "a non-empty list of steps")
    failed = {i for i, step in enumerate(steps) if not problems.attempt(_step_structure, step, f"{where}.steps[{i}]")}
    # names that are no variable are reported at the line naming them, with the closest variable
    unknown, naming = [], set()
    for i, step in enumerate(steps):
        if i not in failed:
            for parameter in step_columns(step):
                named = problems.unknown_variables(f"{where}.steps[{i}].{parameter}", step[parameter], variables)
                unknown += named
                naming |= {i} if named else set()
    for index, message in plan_problems(steps, columns=list(variables) + unknown):
        if index not in failed:
            failed.add(index)
            problems.errors.append(SpecError(f"{where}.steps: {message}", key=f"{where}.steps[{index}]"))
    failed |= naming
    _check_recode_categories(where, steps, failed, variables, problems)
    _check_keyed_steps(where, steps, failed, variables, problems)
    if failed:
        return None
    return Plan(
        name=name,
        steps=tuple(dict(s) for s in steps),
        k=k,
        random_state=seed,
        description=str(raw.get("description", "")),
    )


def _check_keyed_steps(where: str, steps: list, failed: set[int], variables: dict[str, Variable | None],
                       problems: _Problems) -> None:
    """Local suppression (and risk-based suppression) protects the categorical keys; a spec whose
    variables are all parsed and hold no categorical key (continuous keys only) cannot use it."""
    from sdc_dagster.protect.plan import KEYED_METHODS

    if None in variables.values() or any(v.role == "categorical_key" for v in variables.values()):
        return
    for index, step in enumerate(steps):
        if index not in failed and step.get("method") in KEYED_METHODS:
            failed.add(index)
            problems.errors.append(SpecError(
                f"{where}.steps[{index}]: {step['method']} suppresses categorical key values, and the spec has no "
                "categorical_key variable; protect continuous keys with microaggregation, noise, rank_swap or rounding",
                key=f"{where}.steps[{index}]",
            ))


def _check_recode_categories(where: str, steps: list, failed: set[int], variables: dict[str, Variable | None],
                             problems: _Problems) -> None:
    """A recode step of a variable with ``categories:`` recodes only listed categories (or codes an
    earlier recode step of the plan produced): ``"7"`` for category ``7`` is a spec error, not a
    silent no-op. A listed category absent from a wave is fine (the step records it). A step in
    ``failed`` (its problems recorded) ends the check of the variables it may name, as any step of
    another method does (it may change the codes)."""
    from sdc_dagster.protect.recode import merge_mapping

    known = {name: list(v.categories) for name, v in variables.items() if v is not None and v.categories is not None}
    for index, step in enumerate(steps):
        variable = step.get("variable") if isinstance(step, Mapping) else None
        if index in failed:
            if isinstance(variable, str):
                known.pop(variable, None)
            continue
        if variable not in known:
            continue
        if step["method"] != "recode":
            known.pop(variable)  # other methods may change the codes; later steps are not checked
            continue
        parameter = "groups" if step.get("groups") is not None else "mapping"
        try:
            mapping = merge_mapping(step["groups"]) if parameter == "groups" else step["mapping"]
        except SDCInputError as exc:
            problems.errors.append(SpecError(f"{where}.steps[{index}].groups: {exc}", key=f"{where}.steps[{index}].groups"))
            known.pop(variable)
            continue
        unknown = [category for category in mapping if category not in known[variable]]
        if unknown:
            problems.errors.append(SpecError(
                f"{where}.steps[{index}].{parameter}: expected categories of {variable!r} "
                f"({known[variable]}), got {unknown[0]!r}",
                key=f"{where}.steps[{index}].{parameter}.{unknown[0]}",
            ))
            known.pop(variable)
            continue
        known[variable] = known[variable] + [new for new in mapping.values() if new not in known[variable]]


def _parse_source(raw: Any, problems: _Problems) -> Source:
    src = _mapping(raw, "source")
    problems.unknown_keys(src, "source", {"path", "format", "options", "metadata"})
    fmt = src.get("format")
    problems.attempt(_expect, fmt is None or fmt in FORMATS.values(), "source.format",
                     f"one of {sorted(set(FORMATS.values()))}")
    options = problems.attempt(_mapping, src.get("options", {}), "source.options", default={})
    for key, value in options.items():
        if key in _READER_OPTIONS:
            rule, what = _READER_OPTIONS[key]
            problems.attempt(_expect, rule(value), f"source.options.{key}", f"{what}, got {value!r}")
    metadata = src.get("metadata")
    problems.attempt(_expect, metadata is None or (isinstance(metadata, str) and metadata.strip() != ""),
                     "source.metadata", f"the path of an Argus .rda metadata file, got {metadata!r}")
    return Source(path=src.get("path"), format=fmt, options=dict(options), metadata=metadata)


def _known_encoding(value: Any) -> bool:
    try:
        codecs.lookup(value)
    except (LookupError, TypeError):
        return False
    return True


# The reader options a spec's source.options may give (the CSV dialect, the workbook's sheet),
# each with its rule; other options are passed on to the reader as they are.
_READER_OPTIONS = {
    "sep": (lambda v: isinstance(v, str) and v != "", "a separator such as ',', ';', '\\t' or '|'"),
    "encoding": (lambda v: isinstance(v, str) and _known_encoding(v), "an encoding such as utf-8, utf-8-sig or cp1252"),
    "decimal": (lambda v: isinstance(v, str) and len(v) == 1, "a one-character decimal mark, '.' or ','"),
    "header": (lambda v: isinstance(v, bool) or (isinstance(v, int) and v >= 0),
               "true (the first row names the columns) or false (no header row: columns V1..Vn)"),
    "quotechar": (lambda v: isinstance(v, str) and len(v) == 1, "one quote character"),
    "sheet": (lambda v: (isinstance(v, str) and v != "") or (isinstance(v, int) and not isinstance(v, bool) and v >= 0),
              "a sheet's name or its number counted from 0"),
}


def _spec_error(where: str):
    """The exception :func:`~sdc_dagster.validation.check_scalar` and ``check_option`` raise for a
    spec key: a :class:`SpecError` keyed by ``where`` (so that its YAML line is found)."""
    return lambda message: SpecError(message, key=where)


def _parse_risk(raw: Any, problems: _Problems) -> RiskParameters:
    fields = {"k", "l", "l_diversity", "recursive_c", "max_global_risk", "individual_risk_threshold",
              "max_linkage_risk"}
    raw = _mapping(raw, "risk")
    problems.unknown_keys(raw, "risk", fields)
    risk = RiskParameters(**{key: value for key, value in raw.items() if key in fields})
    problems.attempt(_expect, isinstance(risk.k, int) and risk.k >= 1, "risk.k", "a positive integer")
    problems.attempt(_expect, risk.l is None or (isinstance(risk.l, int) and risk.l >= 1), "risk.l",
                     "a positive integer")
    problems.attempt(lambda: check_option(risk.l_diversity, "risk.l_diversity", L_DIVERSITY_MEASURES,
                                          error=_spec_error("risk.l_diversity")))
    for name in ("max_global_risk", "individual_risk_threshold", "max_linkage_risk"):
        value = getattr(risk, name)
        problems.attempt(_expect, isinstance(value, (int, float)) and 0 <= value <= 1, f"risk.{name}", "a number in [0, 1]")
    return risk


def _parse_limits(raw: Any, problems: _Problems) -> UtilityLimits:
    """The ``limits:`` section (:class:`UtilityLimits`): each given limit a number, the shares in
    [0, 1] and the relative changes of means and variances at least 0; a limit not given keeps its
    default. Each wrong key is recorded."""
    raw = _mapping(raw, "limits")
    bounds = {"max_suppressed_share": 1.0, "max_records_changed": 1.0, "max_mean_change": None,
              "max_variance_change": None, "max_correlation_change": 2.0}
    problems.unknown_keys(raw, "limits", set(bounds))
    limits = {}
    for name, high in bounds.items():
        if name in raw:
            where = f"limits.{name}"
            value = problems.attempt(lambda value=raw[name], where=where, high=high: check_scalar(
                value, where, low=0.0, high=high, error=_spec_error(where)), default=_FAILED)
            if value is not _FAILED:
                limits[name] = value
    return UtilityLimits(**limits)


def _parse_release(raw: Any, problems: _Problems) -> ReleaseOptions:
    raw = _mapping(raw, "release")
    problems.unknown_keys(raw, "release", {"formats", "shuffle", "renumber_ids"})
    formats = raw.get("formats", [])
    if problems.attempt(_expect, isinstance(formats, list) and all(f in RELEASE_FORMATS for f in formats),
                        "release.formats", f"a list of formats from {list(RELEASE_FORMATS)}, got {formats!r}",
                        default=_FAILED) is _FAILED:
        formats = []
    for name in ("shuffle", "renumber_ids"):
        problems.attempt(_expect, isinstance(raw.get(name, True), bool), f"release.{name}", "true or false")
    return ReleaseOptions(formats=tuple(dict.fromkeys(formats)), shuffle=raw.get("shuffle", True),
                          renumber_ids=raw.get("renumber_ids", True))


def _parse_report(raw: Any, problems: _Problems) -> ReportOptions:
    """``report:``: the names the sign-off block of the report is pre-filled with (each optional)."""
    raw = _mapping(raw, "report")
    fields = {"prepared_by", "reviewed_by"}
    problems.unknown_keys(raw, "report", fields)
    for name in fields & set(raw):
        problems.attempt(_expect, isinstance(raw[name], str) and raw[name].strip() != "", f"report.{name}",
                         "a name (non-empty text)")
    return ReportOptions(**{name: str(raw[name]).strip() for name in fields & set(raw) if isinstance(raw[name], str)})


def _parse_search(raw: Any, variables: dict[str, Variable | None], problems: _Problems) -> SearchOptions:
    """The ``search:`` section (:class:`SearchOptions`); each wrong key is recorded."""
    raw = _mapping(raw, "search")
    problems.unknown_keys(raw, "search", {"enabled", "keep", "max_level", "methods", "budget_seconds", "loss"})
    options = {}
    enabled = raw.get("enabled", True)
    if problems.attempt(_expect, isinstance(enabled, bool), "search.enabled", "true or false", default=_FAILED) is None:
        options["enabled"] = enabled
    keep = raw.get("keep", [])
    keep = [keep] if isinstance(keep, str) else keep
    keys = {name for name, v in variables.items() if v is not None and v.role == "categorical_key"}
    if problems.attempt(_expect, isinstance(keep, list) and all(isinstance(k, str) for k in keep), "search.keep",
                        "a list of categorical keys never recoded", default=_FAILED) is None:
        # a variable that did not parse has its own error: it is not blamed here; a name that is no
        # variable is reported at its line with the closest variable
        strangers = set(problems.unknown_variables("search.keep", raw.get("keep"), variables))
        unknown = [k for k in keep if k not in keys and k not in strangers and variables.get(k, False) is not None]
        if problems.attempt(_expect, not unknown, "search.keep", f"categorical keys of the spec ({sorted(keys)}), "
                            f"got {unknown}", default=_FAILED) is None and not strangers:
            options["keep"] = tuple(dict.fromkeys(keep))
    level = raw.get("max_level")
    if problems.attempt(_expect, level is None or (isinstance(level, int) and not isinstance(level, bool) and level >= 0),
                        "search.max_level", "a non-negative integer (0: no recoding)", default=_FAILED) is None:
        options["max_level"] = level
    methods = raw.get("methods", list(SEARCH_METHODS))
    if problems.attempt(_expect, isinstance(methods, list) and methods and all(m in SEARCH_METHODS for m in methods),
                        "search.methods", f"a non-empty list of methods from {list(SEARCH_METHODS)}, got {methods!r}",
                        default=_FAILED) is None:
        options["methods"] = tuple(dict.fromkeys(methods))
    budget = raw.get("budget_seconds", SearchOptions.budget_seconds)
    if problems.attempt(_expect, isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget > 0,
                        "search.budget_seconds", "a positive number of seconds", default=_FAILED) is None:
        options["budget_seconds"] = float(budget)
    measure = raw.get("loss", SearchOptions.loss)
    if problems.attempt(_expect, measure in SEARCH_LOSSES, "search.loss", f"one of {list(SEARCH_LOSSES)}, got {measure!r}",
                        default=_FAILED) is None:
        options["loss"] = measure
    return SearchOptions(**options)


def parse_spec(raw: Any, *, spec_path: Path | None = None, text: str = "") -> SurveySpec:
    """Validate a parsed YAML document and build the :class:`SurveySpec`.

    Raises one :class:`SpecError` listing every independent problem (``errors``), in the order found.
    """
    problems = _Problems()
    try:
        spec = _parse_spec(raw, problems, spec_path, text)
    except SpecError as stop:  # later checks would be meaningless
        problems.errors.append(stop)
    if problems.errors:
        raise SpecError.combine(problems.errors)
    return spec


def _parse_spec(raw: Any, problems: _Problems, spec_path: Path | None, text: str) -> SurveySpec | None:
    raw = _mapping(raw, "spec")
    problems.unknown_keys(raw, "spec", {"survey", "title", "source", "variables", "missing", "risk", "plans",
                                               "release", "search", "report", "limits"})
    _expect("survey" in raw, "survey", "the survey name (missing)")
    survey = raw["survey"]
    problems.attempt(_expect, name_problem("survey name", survey) is None, "survey",
                     f"a name: {RULES['survey name'][1]}")
    source = problems.attempt(_parse_source, raw.get("source", {}), problems)

    _expect("variables" in raw, "variables", "a mapping of column name to role")
    variables_raw = _mapping(raw["variables"], "variables")
    _expect(len(variables_raw) > 0, "variables", "a mapping of column name to role")
    global_missing = raw.get("missing", [])
    if problems.attempt(_expect, isinstance(global_missing, list), "missing", "a list of missing-value codes",
                        default=_FAILED) is _FAILED:
        global_missing = []
    parsed = {
        name: problems.collect(_parse_variable, name, value, tuple(global_missing),
                               spec_path.parent if spec_path is not None else None, problems)
        for name, value in variables_raw.items()
    }
    variables = Variables(v for v in parsed.values() if v is not None)
    for v in variables:
        if isinstance(v.hierarchy, HierarchyRule) and v.hierarchy.kind == "columns":
            unknown = [c for c in v.hierarchy.columns if c not in variables_raw or c == v.name]
            problems.attempt(_expect, not unknown, f"variables.{v.name}.hierarchy.columns",
                             f"other columns of the spec, got {unknown}")
    for role in ("weight", "household_id", "record_id"):
        found = [v.name for v in variables if v.role == role]
        problems.attempt(_expect, len(found) <= 1, f"variables ({role})", f"at most one {role} variable, got {found}")
    if len(variables) == len(parsed):  # a variable without a valid role may be the key
        problems.attempt(_expect, any(v.role in ("categorical_key", "continuous_key") for v in variables),
                         "variables", "at least one categorical_key or continuous_key variable")

    risk = problems.attempt(_parse_risk, raw.get("risk", {}), problems)
    plans_raw = problems.attempt(_mapping, raw.get("plans", {}), "plans", default={})
    plans = tuple(
        problems.attempt(_parse_plan, name, value, risk.k if risk else None, parsed, problems)
        for name, value in plans_raw.items()
    )
    release = problems.attempt(_parse_release, raw.get("release", {}), problems)
    search = problems.attempt(_parse_search, raw.get("search", {"enabled": False}), parsed, problems)
    report = problems.attempt(_parse_report, raw.get("report", {}), problems)
    limits = problems.attempt(_parse_limits, raw.get("limits", {}), problems)
    if search is not None and search.enabled and SEARCHED_PLAN in plans_raw:
        problems.attempt(_expect, False, f"plans.{SEARCHED_PLAN}",
                         f"another name: {SEARCHED_PLAN!r} is the plan the search finds (search: is on)")
    if problems.errors:
        return None
    return SurveySpec(
        survey=survey,
        title=str(raw.get("title", survey)),
        source=source,
        variables=variables,
        risk=risk,
        plans=plans,
        spec_path=spec_path,
        spec_hash=hashlib.sha256(text.encode()).hexdigest() if text else "",
        release=release,
        search=search,
        report=report,
        limits=limits,
    )


def spec_text_with_plans(text: str, plans: Mapping[str, Mapping[str, Any]]) -> str:
    """The spec text ``text`` with ``plans`` (name -> plan as written in a spec: description, k,
    random_state, steps) added at the end of its ``plans:`` block (a ``plans:`` block is added when
    the spec has none), leaving every other line, comment included, as it was. A name the spec
    already uses is refused (:class:`SpecError`), and the result must load as a spec."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "plans:" or line.startswith("plans:")), None)
    if start is not None and lines[start].split(":", 1)[1].strip() not in ("", "{}"):
        raise SpecError([f"plans: written in flow style ({lines[start].strip()!r}); write it as a block to add plans"])
    existing = _mapping(yaml.safe_load(text) or {}, "spec").get("plans") or {}
    clash = sorted(set(plans) & set(existing))
    if clash:
        raise SpecError([f"plans.{name}: the spec already has a plan of this name" for name in clash])
    if start is None:
        lines += ["plans:"]
        start, end, indent = len(lines) - 1, len(lines), "  "
    else:
        end = next((i for i in range(start + 1, len(lines))
                    if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#")), len(lines))
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        children = [line for line in lines[start + 1:end] if line.strip() and not line.lstrip().startswith("#")]
        indent = children[0][: len(children[0]) - len(children[0].lstrip())] if children else "  "
    block = yaml.safe_dump({name: dict(plan) for name, plan in plans.items()}, sort_keys=False,
                           default_flow_style=None, width=100, allow_unicode=True)
    added = [indent + line if line else line for line in block.splitlines()]
    result = "\n".join(lines[:end] + added + lines[end:]) + "\n"
    yaml.safe_load(result)  # a block that does not nest is a bug, not a user error
    return result
