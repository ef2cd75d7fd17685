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

from sdc_dagster.errors import SDCInputError
from sdc_dagster.names import RULES, name_problem
from sdc_dagster.spec.drafted_hierarchies import HierarchyRule
from sdc_dagster.spec.survey import (
    DEFAULT_SEARCH_METHODS,
    FORMATS,
    L_DIVERSITY_MEASURES,
    RELEASE_FORMATS,
    SEARCH_LOSSES,
    SEARCH_METHODS,
    POPULATION_UNIQUENESS_MODELS,
    SEARCHED_PLAN,
    ModelRiskOptions,
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
from sdc_dagster.spec.parse_variables import parse_variable
from sdc_dagster.spec.problems import FAILED, Problems, as_mapping, expect, spec_error
from sdc_dagster.validation import check_flag, check_option, check_scalar


def _step_structure(step: Any, where: str) -> bool:
    as_mapping(step, where)
    expect("method" in step, f"{where}.method", "the name of a protection method")
    return True


def _parse_plan(name: str, raw: Any, default_k: int | None, variables: dict[str, Variable | None],
                problems: Problems) -> Plan | None:
    """One plan: its keys, its steps' structure, then (SPEC §8) each step's method, parameters and
    columns (:func:`~sdc_dagster.protect.plan.plan_problems`, keyed by the failing step so that
    :func:`load_spec` gives its line) and the categories its recodes name. ``default_k`` is None when
    ``risk.k`` is wrong (recorded there), so that a plan without ``k`` is not blamed for it."""
    from sdc_dagster.protect.plan import plan_problems, step_columns

    where = f"plans.{name}"
    problems.attempt(expect, name_problem("plan name", name) is None, where, f"a plan name: {RULES['plan name'][1]}")
    if isinstance(raw, list):
        raw = {"steps": raw}
    raw = as_mapping(raw, where)
    problems.unknown_keys(raw, where, {"steps", "k", "random_state", "description"})
    k = raw.get("k", default_k)
    if "k" in raw or default_k is not None:
        problems.attempt(lambda: check_scalar(k, f"{where}.k", integer=True, low=1, error=spec_error(f"{where}.k")))
    seed = raw.get("random_state", 20240)  # step seeds also hash the plan name: no dependence on plan order
    problems.attempt(expect, isinstance(seed, int) and seed >= 0, f"{where}.random_state",
                     "a non-negative integer seed")
    steps = raw.get("steps")
    expect(isinstance(steps, list) and len(steps) > 0, f"{where}.steps", "a non-empty list of steps")
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
                       problems: Problems) -> None:
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
                             problems: Problems) -> None:
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


def _parse_source(raw: Any, problems: Problems) -> Source:
    src = as_mapping(raw, "source")
    problems.unknown_keys(src, "source", {"path", "format", "options", "metadata"})
    fmt = src.get("format")
    problems.attempt(expect, fmt is None or fmt in FORMATS.values(), "source.format",
                     f"one of {sorted(set(FORMATS.values()))}")
    options = problems.attempt(as_mapping, src.get("options", {}), "source.options", default={})
    for key, value in options.items():
        if key in _READER_OPTIONS:
            rule, what = _READER_OPTIONS[key]
            problems.attempt(expect, rule(value), f"source.options.{key}", f"{what}, got {value!r}")
    metadata = src.get("metadata")
    problems.attempt(expect, metadata is None or (isinstance(metadata, str) and metadata.strip() != ""),
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


def _parse_model_risk(raw: Any, problems: Problems) -> ModelRiskOptions:
    """``risk.model_risk`` (:class:`ModelRiskOptions`): the method one of sdcMicro modRisk's, the
    bound a number > 0; the formula a string (read against the categorical keys by
    :func:`_check_model_formula`)."""
    from sdc_dagster.risk.model_risk import MODEL_RISK_METHODS

    where = "risk.model_risk"
    raw = as_mapping(raw, where)
    problems.unknown_keys(raw, where, {"method", "formula", "bound"})
    options = ModelRiskOptions(**{key: raw[key] for key in ("method", "formula", "bound") if key in raw})
    problems.attempt(lambda: check_option(options.method, f"{where}.method", MODEL_RISK_METHODS,
                                          error=spec_error(f"{where}.method")))
    if options.bound != float("inf"):
        problems.attempt(lambda: check_scalar(options.bound, f"{where}.bound", low=0, closed="neither",
                                              error=spec_error(f"{where}.bound")))
    if options.formula is not None:
        problems.attempt(expect, isinstance(options.formula, str) and options.formula.strip() != "",
                         f"{where}.formula", "an R model formula over the categorical keys, e.g. '~ a + b + a:b'")
    return options


def _check_model_formula(risk: RiskParameters, keys: list[str], problems: Problems) -> None:
    """``risk.model_risk.formula`` read against the categorical keys (every key in the model, no other
    variable; :func:`sdc_dagster.risk.model_risk.parse_formula`), and IPF with main effects only."""
    from sdc_dagster.risk.model_risk import parse_formula

    where = "risk.model_risk.formula"
    formula = risk.model_risk.formula
    if not isinstance(formula, str) or not formula.strip():
        return
    try:
        terms = parse_formula(formula, keys)
    except SDCInputError as error:
        problems.errors.append(SpecError(f"{where}: {error}", key=where))
        return
    if risk.model_risk.method == "IPF" and any(len(term) > 1 for term in terms):
        problems.errors.append(SpecError(f"{where}: method 'IPF' fits main effects only (as sdcMicro's modRisk); "
                                         "use method 'default' for a model with interactions", key=where))


def _parse_risk(raw: Any, problems: Problems) -> RiskParameters:
    fields = {"k", "l", "l_diversity", "recursive_c", "max_global_risk", "individual_risk_threshold",
              "max_linkage_risk", "model_risk", "population_size", "population_uniqueness"}
    raw = as_mapping(raw, "risk")
    problems.unknown_keys(raw, "risk", fields)
    given = {key: value for key, value in raw.items() if key in fields}
    if "model_risk" in given:
        given["model_risk"] = problems.attempt(_parse_model_risk, given["model_risk"], problems,
                                               default=ModelRiskOptions())
    if "population_uniqueness" in given:
        models = given["population_uniqueness"]
        if problems.attempt(expect, isinstance(models, list) and all(m in POPULATION_UNIQUENESS_MODELS for m in models)
                            and len(set(models)) == len(models), "risk.population_uniqueness",
                            f"a list of distinct estimates among {list(POPULATION_UNIQUENESS_MODELS)}, got {models!r}",
                            default=FAILED) is FAILED:
            models = ["dankar"]
        given["population_uniqueness"] = tuple(models)
    risk = RiskParameters(**given)
    if risk.population_size is not None:
        problems.attempt(lambda: check_scalar(risk.population_size, "risk.population_size", integer=True, low=1,
                                              error=spec_error("risk.population_size")))
    problems.attempt(lambda: check_scalar(risk.k, "risk.k", integer=True, low=1, error=spec_error("risk.k")))
    if risk.l is not None:
        problems.attempt(lambda: check_scalar(risk.l, "risk.l", integer=True, low=1, error=spec_error("risk.l")))
    problems.attempt(lambda: check_option(risk.l_diversity, "risk.l_diversity", L_DIVERSITY_MEASURES,
                                          error=spec_error("risk.l_diversity")))
    for name in ("max_global_risk", "individual_risk_threshold", "max_linkage_risk"):
        value = getattr(risk, name)
        problems.attempt(lambda value=value, where=f"risk.{name}": check_scalar(value, where, low=0, high=1,
                                                                             error=spec_error(where)))
    return risk


def _parse_limits(raw: Any, problems: Problems) -> UtilityLimits:
    """The ``limits:`` section (:class:`UtilityLimits`): each given limit a number, the shares in
    [0, 1] and the relative changes of means and variances at least 0; a limit not given keeps its
    default. Each wrong key is recorded."""
    raw = as_mapping(raw, "limits")
    bounds = {"max_suppressed_share": 1.0, "max_records_changed": 1.0, "max_mean_change": None,
              "max_variance_change": None, "max_correlation_change": 2.0, "max_keys_not_released": 1.0}
    problems.unknown_keys(raw, "limits", set(bounds))
    limits = {}
    for name, high in bounds.items():
        if name in raw:
            where = f"limits.{name}"
            value = problems.attempt(lambda value=raw[name], where=where, high=high: check_scalar(
                value, where, low=0.0, high=high, error=spec_error(where)), default=FAILED)
            if value is not FAILED:
                limits[name] = value
    return UtilityLimits(**limits)


def _parse_release(raw: Any, problems: Problems) -> ReleaseOptions:
    raw = as_mapping(raw, "release")
    problems.unknown_keys(raw, "release", {"formats", "shuffle", "renumber_ids"})
    formats = raw.get("formats", [])
    if problems.attempt(expect, isinstance(formats, list) and all(f in RELEASE_FORMATS for f in formats),
                        "release.formats", f"a list of formats from {list(RELEASE_FORMATS)}, got {formats!r}",
                        default=FAILED) is FAILED:
        formats = []
    for name in ("shuffle", "renumber_ids"):
        problems.attempt(lambda where=f"release.{name}": check_flag(raw.get(name, True), where, error=spec_error(where)))
    return ReleaseOptions(formats=tuple(dict.fromkeys(formats)), shuffle=raw.get("shuffle", True),
                          renumber_ids=raw.get("renumber_ids", True))


def _parse_report(raw: Any, problems: Problems) -> ReportOptions:
    """``report:``: the names the sign-off block of the report is pre-filled with (each optional) and
    the draft's decisions to confirm (``draft_decisions``: a list of texts, written by ``sdc init``)."""
    raw = as_mapping(raw, "report")
    fields = {"prepared_by", "reviewed_by"}
    problems.unknown_keys(raw, "report", fields | {"draft_decisions"})
    for name in fields & set(raw):
        problems.attempt(expect, isinstance(raw[name], str) and raw[name].strip() != "", f"report.{name}",
                         "a name (non-empty text)")
    decisions = raw.get("draft_decisions", [])
    if problems.attempt(expect, isinstance(decisions, list) and all(isinstance(d, str) and d.strip() for d in decisions),
                        "report.draft_decisions", "a list of texts (the draft's decisions to confirm)",
                        default=FAILED) is FAILED:
        decisions = []
    return ReportOptions(**{name: str(raw[name]).strip() for name in fields & set(raw) if isinstance(raw[name], str)},
                         draft_decisions=tuple(d.strip() for d in decisions))


def _parse_search(raw: Any, variables: dict[str, Variable | None], problems: Problems) -> SearchOptions:
    """The ``search:`` section (:class:`SearchOptions`); each wrong key is recorded."""
    raw = as_mapping(raw, "search")
    problems.unknown_keys(raw, "search", {"enabled", "keep", "max_level", "methods", "budget_seconds", "loss",
                                          "workers"})
    options = {}
    enabled = raw.get("enabled", True)
    if problems.attempt(lambda: check_flag(enabled, "search.enabled", error=spec_error("search.enabled")),
                        default=FAILED) is not FAILED:
        options["enabled"] = enabled
    keep = raw.get("keep", [])
    keep = [keep] if isinstance(keep, str) else keep
    keys = {name for name, v in variables.items() if v is not None and v.role == "categorical_key"}
    if problems.attempt(expect, isinstance(keep, list) and all(isinstance(k, str) for k in keep), "search.keep",
                        "a list of categorical keys never recoded", default=FAILED) is None:
        # a variable that did not parse has its own error: it is not blamed here; a name that is no
        # variable is reported at its line with the closest variable
        strangers = set(problems.unknown_variables("search.keep", raw.get("keep"), variables))
        unknown = [k for k in keep if k not in keys and k not in strangers and variables.get(k, False) is not None]
        if problems.attempt(expect, not unknown, "search.keep", f"categorical keys of the spec ({sorted(keys)}), "
                            f"got {unknown}", default=FAILED) is None and not strangers:
            options["keep"] = tuple(dict.fromkeys(keep))
    level = raw.get("max_level")
    if level is None or problems.attempt(lambda: check_scalar(level, "search.max_level (0: no recoding)", integer=True,
                                                              low=0, error=spec_error("search.max_level")),
                                         default=FAILED) is not FAILED:
        options["max_level"] = level
    methods = raw.get("methods", list(DEFAULT_SEARCH_METHODS))
    if problems.attempt(expect, isinstance(methods, list) and methods and all(m in SEARCH_METHODS for m in methods),
                        "search.methods", f"a non-empty list of methods from {list(SEARCH_METHODS)}, got {methods!r}",
                        default=FAILED) is None:
        options["methods"] = tuple(dict.fromkeys(methods))
    budget = raw.get("budget_seconds", SearchOptions.budget_seconds)
    if problems.attempt(lambda: check_scalar(budget, "search.budget_seconds", low=0, closed="neither",
                                             error=spec_error("search.budget_seconds")), default=FAILED) is not FAILED:
        options["budget_seconds"] = float(budget)
    measure = raw.get("loss", SearchOptions.loss)
    if problems.attempt(lambda: check_option(measure, "search.loss", SEARCH_LOSSES, error=spec_error("search.loss")),
                        default=FAILED) is not FAILED:
        options["loss"] = measure
    workers = raw.get("workers", SearchOptions.workers)
    if isinstance(workers, str) and workers == "auto":
        options["workers"] = workers
    else:
        workers = problems.attempt(lambda: check_scalar(workers, 'search.workers ("auto" or a number of processes)',
                                                        integer=True, low=1, error=spec_error("search.workers")),
                                   default=FAILED)
        if workers is not FAILED:
            options["workers"] = workers
    return SearchOptions(**options)


def parse_spec(raw: Any, *, spec_path: Path | None = None, text: str = "") -> SurveySpec:
    """Validate a parsed YAML document and build the :class:`SurveySpec`.

    Raises one :class:`SpecError` listing every independent problem (``errors``), in the order found.
    """
    problems = Problems()
    try:
        spec = _parse_spec(raw, problems, spec_path, text)
    except SpecError as stop:  # later checks would be meaningless
        problems.errors.append(stop)
    if problems.errors:
        raise SpecError.combine(problems.errors)
    return spec


def _parse_spec(raw: Any, problems: Problems, spec_path: Path | None, text: str) -> SurveySpec | None:
    raw = as_mapping(raw, "spec")
    problems.unknown_keys(raw, "spec", {"survey", "title", "source", "variables", "missing", "risk", "plans",
                                               "release", "search", "report", "limits"})
    expect("survey" in raw, "survey", "the survey name (missing)")
    survey = raw["survey"]
    problems.attempt(expect, name_problem("survey name", survey) is None, "survey",
                     f"a name: {RULES['survey name'][1]}")
    source = problems.attempt(_parse_source, raw.get("source", {}), problems)

    expect("variables" in raw, "variables", "a mapping of column name to role")
    variables_raw = as_mapping(raw["variables"], "variables")
    expect(len(variables_raw) > 0, "variables", "a mapping of column name to role")
    global_missing = raw.get("missing", [])
    if problems.attempt(expect, isinstance(global_missing, list), "missing", "a list of missing-value codes",
                        default=FAILED) is FAILED:
        global_missing = []
    parsed = {
        name: problems.collect(parse_variable, name, value, tuple(global_missing),
                               spec_path.parent if spec_path is not None else None, problems)
        for name, value in variables_raw.items()
    }
    variables = Variables(v for v in parsed.values() if v is not None)
    for v in variables:
        if isinstance(v.hierarchy, HierarchyRule) and v.hierarchy.kind == "columns":
            unknown = [c for c in v.hierarchy.columns if c not in variables_raw or c == v.name]
            problems.attempt(expect, not unknown, f"variables.{v.name}.hierarchy.columns",
                             f"other columns of the spec, got {unknown}")
    for role in ("weight", "household_id", "record_id"):
        found = [v.name for v in variables if v.role == role]
        problems.attempt(expect, len(found) <= 1, f"variables ({role})", f"at most one {role} variable, got {found}")
    if len(variables) == len(parsed):  # a variable without a valid role may be the key
        problems.attempt(expect, any(v.role in ("categorical_key", "continuous_key") for v in variables),
                         "variables", "at least one categorical_key or continuous_key variable")

    risk = problems.attempt(_parse_risk, raw.get("risk", {}), problems)
    if risk is not None and len(variables) == len(parsed):
        _check_model_formula(risk, [v.name for v in variables if v.role == "categorical_key"], problems)
    plans_raw = problems.attempt(as_mapping, raw.get("plans", {}), "plans", default={})
    plans = tuple(
        problems.attempt(_parse_plan, name, value, risk.k if risk else None, parsed, problems)
        for name, value in plans_raw.items()
    )
    release = problems.attempt(_parse_release, raw.get("release", {}), problems)
    search = problems.attempt(_parse_search, raw.get("search", {"enabled": False}), parsed, problems)
    report = problems.attempt(_parse_report, raw.get("report", {}), problems)
    limits = problems.attempt(_parse_limits, raw.get("limits", {}), problems)
    if search is not None and search.enabled and SEARCHED_PLAN in plans_raw:
        problems.attempt(expect, False, f"plans.{SEARCHED_PLAN}",
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
    existing = as_mapping(yaml.safe_load(text) or {}, "spec").get("plans") or {}
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
