"""Protection plans: an ordered list of protection steps applied to a copy of the data (SPEC §8).

A plan is a list of steps, each a mapping ``{"method": <name>, **parameters}`` (a function's own
``method`` parameter, e.g. MDAV or individual ranking, is given as ``kind``), e.g.::

    [{"method": "recode", "variable": "water", "mapping": {7: 5, 8: 5}},
     {"method": "local_suppression", "k": 3},
     {"method": "pram", "variable": "roof", "retention": 0.8}]

:data:`PLAN_METHODS` maps every method name to the engine function that implements it; the
function's keyword parameters are the step's parameters (the data, and for the suppression methods
the plan's key variables, are supplied by :func:`apply_plan`). :func:`validate_plan` checks a plan
before anything runs (:func:`plan_problems` lists every problem); :func:`apply_plan` runs it
reproducibly: the seed of every random step is derived from the plan's ``random_state`` and the
step's identity (the caller's labels, e.g. survey, wave and plan name, plus the step's position and
method; :func:`step_seed`) and recorded, so the same plan and seed give byte-identical output, and
a plan's output does not depend on which other plans exist or in which order they are listed.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.numerics.decimals import rounded_to_original_decimals
from sdc_dagster.protect.microaggregation import (
    MEASURES,
    METHODS,
    RANDOMISED_METHODS,
    gower_options,
    microaggregation,
    microaggregation_gower,
    microaggregation_options,
)
from sdc_dagster.protect.microaggregation.gower import CATEGORICAL_AGGREGATES
from sdc_dagster.protect.mv_top_coding import MV_TOP_CODING_ESTIMATORS, mv_top_coding, mv_top_coding_options
from sdc_dagster.protect.noise import NOISE_METHODS, add_noise
from sdc_dagster.protect.pram import pram
from sdc_dagster.protect.rank_swapping import rank_swap
from sdc_dagster.protect.recode import (
    absent_categories,
    bottom_coding,
    group_names_problem,
    interval_recode,
    recode,
    top_coding,
)
from sdc_dagster.protect.rounding import rounding
from sdc_dagster.protect.subsampling import subsample
from sdc_dagster.protect.suppression import (
    LOCAL_SUPPRESSION_METHODS,
    diversity_suppression,
    local_suppression,
    risk_suppression,
)


def remove_variables(data: pd.DataFrame, variables: Sequence[str]) -> pd.DataFrame:
    """Drop variables before release: direct identifiers, or keys that became identifying (SPEC §8.1)."""
    variables = require_columns(data, variables, role="variable")
    return data.drop(columns=variables)


PLAN_METHODS: dict[str, Callable[..., Any]] = {
    "recode": recode,
    "interval_recode": interval_recode,
    "top_coding": top_coding,
    "bottom_coding": bottom_coding,
    "local_suppression": local_suppression,
    "risk_suppression": risk_suppression,
    "diversity_suppression": diversity_suppression,
    "pram": pram,
    "microaggregation": microaggregation,
    "mv_top_coding": mv_top_coding,
    "microaggregation_gower": microaggregation_gower,
    "noise": add_noise,
    "rank_swap": rank_swap,
    "rounding": rounding,
    "subsample": subsample,
    "remove_variables": remove_variables,
}

# Expected kind of every step parameter. Kinds: "column" (one existing column), "columns" (a column
# or a list of columns), "int", "ints" (an integer or a non-empty list of integers), "number", "bool",
# "str", "mapping", "list", "matrix", "importance" (columns, or a mapping column -> integer as
# sdcMicro's numeric importance), "names" (a list of distinct non-empty strings), or a tuple of
# allowed string values.
_PARAMETER_KINDS: dict[str, dict[str, Any]] = {
    "recode": {"variable": "column", "mapping": "mapping", "groups": "list", "names": "names"},
    "interval_recode": {"variable": "column", "breaks": "list", "labels": "list", "right": "bool"},
    "top_coding": {"variable": "column", "value": "number", "replacement": "number"},
    "bottom_coding": {"variable": "column", "value": "number", "replacement": "number"},
    "local_suppression": {
        "keys": "columns", "k": "ints", "importance": "importance", "strata": "columns", "combs": "ints",
        "kind": LOCAL_SUPPRESSION_METHODS,
    },
    "risk_suppression": {
        "keys": "columns", "risk": ("individual",), "threshold": "number", "weight": "column", "importance": "columns",
    },
    "diversity_suppression": {"keys": "columns", "sensitive": "columns", "l": "int", "entropy": "bool"},
    "pram": {
        "variable": "column", "matrix": "matrix", "retention": "retention", "nearest": "int",
        "invariant": "bool", "categories": "list", "min_retention": "number", "alpha": "number",
        "strata": "columns",
    },
    "microaggregation": {
        "columns": "columns", "k": "int", "kind": METHODS, "strata": "columns", "measure": MEASURES,
        "trim": "number", "weight": "column", "nc": "int", "clusters": "column",
    },
    "microaggregation_gower": {
        "columns": "columns", "k": "int", "distance_columns": "columns", "strata": "columns", "scales": "mapping",
        "mixed": "mapping", "weights": "list", "categorical": CATEGORICAL_AGGREGATES,
    },
    "mv_top_coding": {
        "columns": "columns", "alpha": "number", "estimator": MV_TOP_CODING_ESTIMATORS, "center": "list",
        "covariance": "list",
    },
    "noise": {
        "columns": "columns", "amount": "number", "kind": NOISE_METHODS, "noise": "number", "delta": "number",
        "p": "number",
    },
    "rank_swap": {
        "columns": "columns", "p": "number", "r0": "number", "k0": "number", "top_percent": "number",
        "bottom_percent": "number",
    },
    "rounding": {
        "columns": "columns", "base": "number", "kind": ("deterministic", "random"), "probability_up": "number",
    },
    "subsample": {"fraction": "number", "household": "column", "weight": "column"},
    "remove_variables": {"variables": "columns"},
}
#: The checks of a step's options that need no data, by method: each takes the step's parameters (a
#: step's ``kind`` as ``method``, the function's defaults for those not given) and raises
#: SDCInputError naming the option and its rule. :func:`plan_problems` runs them, so that a spec's
#: plan is refused before any data is read (``sdc check``); the method runs the same check again.
OPTION_CHECKS: dict[str, Callable[..., None]] = {
    "microaggregation": microaggregation_options,
    "microaggregation_gower": gower_options,
    "mv_top_coding": mv_top_coding_options,
}

# A step's "method" names the protection method, so a function's own ``method`` parameter (the
# variant: MDAV or individual ranking, additive or multiplicative noise, ...) is given as "kind".
_VARIANT = "kind"
# Parameters supplied by apply_plan, never by a step.
_SUPPLIED = {"data", "random_state"}
# Methods whose ``keys`` default to the plan's key variables (the categorical keys; a spec without
# categorical keys cannot use them).
KEYED_METHODS = {"local_suppression", "risk_suppression", "diversity_suppression"}


#: Methods that compute new values (group means, noise): where such a step writes into a column whose
#: values were published with some decimals (whole numbers: 0), :func:`apply_plan` rounds what it
#: wrote back to those decimals, or fewer where the change leaves no more meaningful
#: (:func:`~sdc_dagster.numerics.decimals.rounded_to_original_decimals`).
WHOLE_NUMBER_METHODS = ("microaggregation", "microaggregation_gower", "noise")
# Not mv_top_coding: its pulled points lie on the ellipsoid d^2 = quantile, and rounding them can move
# them back outside it, or back onto the original whole-number point (tests/protect/test_mv_top_coding.py).


@dataclass(frozen=True)
class PlanResult:
    """The protected data and the record of every step applied.

    Attributes
    ----------
    data : the protected frame.
    steps : one dict per step: ``method``, ``parameters`` (every parameter, defaults included),
        ``random_state`` (the integer seed used, None for deterministic steps), ``records_before``,
        ``records_after``, ``values_changed`` and ``values_suppressed`` ({column: count}),
        ``columns_removed``, for a recode step ``categories_absent`` (listed categories that do
        not occur in the data: the no-op part of the step), ``rounded_to_whole_numbers`` (the
        columns a microaggregation or noise step wrote means or noise into, rounded to whole numbers:
        the integer-valued ones, and measured ones whose change leaves no decimal meaningful;
        :func:`rounded_to_original_decimals`), ``rounded_to_decimals`` ({column: decimals} of the
        columns rounded to some decimals: those they are published with, or fewer for a measured
        column), and ``reported``, what the method
        reported of its choices (``local_suppression_method``: the algorithm local suppression
        used; ``romm_blocks``: ROMM's blocks), where it reported any.
    artifacts : objects produced by steps, e.g. ``{"pram:<column>": transition matrix}``.
    """

    data: pd.DataFrame
    steps: list[dict[str, Any]]
    artifacts: dict[str, Any] = field(default_factory=dict)


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _kind_problem(where: str, name: str, value, kind, columns: set[str] | None) -> str | None:
    """What is wrong with parameter ``name`` of a step (see ``_PARAMETER_KINDS``), or None."""
    expected = None
    if isinstance(kind, tuple):
        if value not in kind:
            expected = "one of " + ", ".join(repr(v) for v in kind)
    elif kind in ("column", "columns"):
        names = [value] if isinstance(value, str) else value
        if kind == "column" and not isinstance(value, str):
            expected = "a column name"
        elif not isinstance(names, (list, tuple)) or not names or not all(isinstance(c, str) for c in names):
            expected = "a column name or a non-empty list of column names"
        else:
            missing = [c for c in names if columns is not None and c not in columns]
            if missing:
                return f"{where}: parameter {name!r} names column {missing[0]!r}, which is not in the data"
    elif kind == "importance":
        if not isinstance(value, Mapping):
            return _kind_problem(where, name, value, "columns", columns)
        unknown = [c for c in value if columns is not None and c not in columns]
        if unknown:
            return f"{where}: parameter {name!r} names column {unknown[0]!r}, which is not in the data"
        if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in value.values()):
            expected = "a list of key columns (most important first) or a mapping key -> integer (1 = most important)"
    elif kind == "int":
        if not isinstance(value, Integral) or isinstance(value, bool):
            expected = "an integer"
    elif kind == "ints":
        values = value if isinstance(value, (list, tuple)) else [value]
        if not values or not all(isinstance(v, Integral) and not isinstance(v, bool) for v in values):
            expected = "an integer or a non-empty list of integers"
    elif kind == "number":
        if not _is_number(value):
            expected = "a number"
    elif kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            expected = "true or false"
    elif kind == "mapping":
        if not isinstance(value, Mapping):
            expected = "a mapping"
    elif kind == "list":
        if not isinstance(value, (list, tuple)):
            expected = "a list"
    elif kind == "names":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
            expected = "a list of non-empty strings"
        elif len(set(value)) != len(value):
            repeated = next(v for i, v in enumerate(value) if v in value[:i])
            return f"{where}: parameter {name!r} must be distinct names, got {repeated!r} twice"
    elif kind == "matrix":
        if not isinstance(value, (Mapping, pd.DataFrame)):
            expected = "a transition matrix (a DataFrame, or a mapping from category to {category: probability})"
    elif kind == "retention":
        if not (_is_number(value) or isinstance(value, Mapping)):
            expected = "a probability or a mapping category -> probability"
    return None if expected is None else f"{where}: parameter {name!r} must be {expected}, got {value!r}"


def step_columns(step: Mapping[str, Any]) -> dict[str, list[str]]:
    """The column names a step's parameters name, by parameter (the parameters that take a column, a
    list of columns or a mapping keyed by column); a step of an unknown method, or a parameter of the
    wrong form, names none (:func:`plan_problems` reports those)."""
    method = step.get("method")
    kinds = _PARAMETER_KINDS.get(method, {}) if isinstance(method, str) else {}
    named = {}
    for name, value in step.items():
        kind = kinds.get(name)
        if kind in ("column", "columns", "importance"):
            if isinstance(value, str):
                names = [value]
            else:
                names = list(value) if isinstance(value, (list, tuple, Mapping)) else []
            named[name] = [c for c in names if isinstance(c, str)]
    return {name: names for name, names in named.items() if names}


def plan_problems(
    steps: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None
) -> list[tuple[int | None, str]]:
    """Every problem of a plan, found without running it: ``(step index, message)`` pairs in step
    order (index None for a plan that is not a list of steps).

    Parameters
    ----------
    steps : the plan, a list of mappings each with a ``method`` key.
    columns : the data's columns; when given, every column a step names must exist at that point of
        the plan (``remove_variables`` removes columns for the later steps).

    Returns
    -------
    ``[(i, "step <i> (<method>): ..."), ...]`` for each unknown method, unknown or missing parameter
    and parameter of the wrong type; a step with an unknown method has no other problem listed.
    """
    if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Sequence):
        return [(None, "plan: must be a list of steps, each a mapping with a 'method' key")]
    available = set(columns) if columns is not None else None
    problems: list[tuple[int | None, str]] = []
    for index, step in enumerate(steps):
        if not isinstance(step, Mapping):
            problems.append((index, f"step {index}: must be a mapping with a 'method' key, got {step!r}"))
            continue
        method = step.get("method")
        if method not in PLAN_METHODS:
            problems.append(
                (index, f"step {index}: unknown method {method!r} (expected one of {', '.join(sorted(PLAN_METHODS))})")
            )
            continue
        where = f"step {index} ({method})"
        accepted = _step_parameters(inspect.signature(PLAN_METHODS[method]))
        params = {key: value for key, value in step.items() if key != "method"}
        found = [
            f"{where}: unknown parameter {name!r} (expected some of {', '.join(accepted)})"
            for name in params if name not in accepted
        ]
        found += [
            f"{where}: missing parameter {name!r}"
            for name, parameter in accepted.items()
            if parameter.default is inspect.Parameter.empty and name not in params
            and not (name == "keys" and method in KEYED_METHODS)
        ]
        kinds = _PARAMETER_KINDS[method]
        found += [
            problem
            for name, value in params.items()
            if name in accepted and not (value is None and accepted[name].default is None)
            and (problem := _kind_problem(where, name, value, kinds[name], available)) is not None
        ]
        if method == "recode" and not found:
            problem = group_names_problem(params.get("groups"), params.get("names"))
            if problem is not None:
                found.append(f"{where}: {problem}")
        if method in OPTION_CHECKS and not found:
            problem = _option_problem(method, params)
            if problem is not None:
                found.append(f"{where}: {problem}")
        problems += [(index, message) for message in found]
        if method == "remove_variables" and available is not None and not found:
            removed = [params["variables"]] if isinstance(params["variables"], str) else params["variables"]
            available -= set(removed)
    return problems


def _option_problem(method: str, params: Mapping[str, Any]) -> str | None:
    """What :data:`OPTION_CHECKS` finds wrong with a step's options (its parameters with the method's
    defaults), or None."""
    signature = inspect.signature(PLAN_METHODS[method])
    given = {("method" if name == _VARIANT else name): value for name, value in params.items()}
    bound = signature.bind_partial(**given)
    bound.apply_defaults()
    check = OPTION_CHECKS[method]
    accepted = inspect.signature(check).parameters
    options = {name: value for name, value in bound.arguments.items() if name in accepted}
    try:
        check(**options)
    except SDCInputError as error:
        return str(error)
    return None


def validate_plan(steps: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None) -> None:
    """Check a plan without running it (:func:`plan_problems`).

    Raises
    ------
    SDCInputError : listing every problem, "step <i> (<method>): ...; step <j> ...", for unknown
        methods, unknown or missing parameters, or parameters of the wrong type.
    """
    problems = plan_problems(steps, columns=columns)
    if problems:
        raise SDCInputError("; ".join(message for _, message in problems))


def _step_parameters(signature: inspect.Signature) -> dict[str, inspect.Parameter]:
    """The parameters a step may give, by their step name (``method`` appears as "kind")."""
    return {
        (_VARIANT if name == "method" else name): parameter
        for name, parameter in signature.parameters.items()
        if name not in _SUPPLIED
    }


def _plan_entropy(random_state) -> int:
    """The plan's seed as a non-negative integer (fresh OS entropy for None, one draw for a Generator)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    if isinstance(random_state, Integral) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state)
    raise SDCInputError(f"random_state: must be a non-negative integer, a numpy Generator or None, got {random_state!r}")


def step_seed(plan_seed: int, labels: Sequence[str], index: int, method: str) -> int:
    """The integer seed of step ``index`` (``method``) of a plan (SPEC §8: every random step is seeded).

    ``SeedSequence([plan_seed, *w]).generate_state(1, uint32)[0]``, where ``w`` are the eight
    little-endian uint32 words of SHA-256 over the UTF-8 text ``labels..., index, method`` joined
    by the unit separator U+001F. The hash is stable across processes and Python versions (unlike
    ``hash()``), so a step's seed depends only on what identifies it.
    """
    text = "\x1f".join([*map(str, labels), str(index), str(method)])
    words = np.frombuffer(hashlib.sha256(text.encode("utf-8")).digest(), dtype="<u4")
    sequence = np.random.SeedSequence([int(plan_seed), *map(int, words)])
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def _value_changes(before: pd.DataFrame, after: pd.DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """Per column shared by both frames (rows aligned on the index): values changed, values newly missing."""
    same = before.index.equals(after.index)  # no record removed: no lookup by label
    rows = before.index if same else before.index.intersection(after.index)
    changed, suppressed = {}, {}
    for column in before.columns.intersection(after.columns):
        old, new = (before[column], after[column]) if same else (before.loc[rows, column], after.loc[rows, column])
        old_missing, new_missing = old.isna().to_numpy(), new.isna().to_numpy()
        both = ~old_missing & ~new_missing
        differs = np.zeros(len(rows), dtype=bool)
        differs[both] = old.to_numpy()[both] != new.to_numpy()[both]
        n_suppressed = int((new_missing & ~old_missing).sum())
        n_changed = int(differs.sum()) + n_suppressed + int((old_missing & ~new_missing).sum())
        if n_changed:
            changed[str(column)] = n_changed
        if n_suppressed:
            suppressed[str(column)] = n_suppressed
    return changed, suppressed


def apply_plan(
    data: pd.DataFrame,
    steps: Sequence[Mapping[str, Any]],
    *,
    keys: Sequence[str],
    random_state=None,
    seed_labels: Sequence[str] = (),
    household: str | None = None,
    weight: str | None = None,
    scales: Mapping[str, str] | None = None,
    applied: PlanResult | None = None,
) -> PlanResult:
    """Apply the steps of a protection plan in order to a copy of ``data`` (SPEC §8).

    Parameters
    ----------
    data : the microdata; not modified.
    steps : the plan (validated first with :func:`validate_plan`).
    keys : the categorical key variables (quasi-identifiers); the default ``keys`` of the
        local_suppression and risk_suppression steps (those still present at that step).
    random_state : int seed, numpy Generator or None: the plan's seed.
    seed_labels : what identifies the plan, e.g. ``(survey, wave, plan name)``. Step i that is
        random receives the integer seed ``step_seed(random_state, seed_labels, i, method)``.
    household, weight : the household id and weight columns; the default ``household`` and
        ``weight`` of subsample steps (whole households are sampled and the weights rescaled).
    scales : the variables' scales ({column: "nominal" | "ordinal" | "continuous"}, a spec's
        ``scale:``): the scales of a microaggregation_gower step's columns it does not scale itself,
        so that a categorical key coded by numbers is a category of the Gower distance and released as
        a neighbour's category, not averaged as the number it is coded by (sdcMicro's
        ``microaggrGower`` reads the scale from the R type, a factor for a categorical key).
    applied : the result of the plan's first ``len(applied.steps)`` steps on ``data`` (the plan
        search confirms plans that differ in their last step only): those steps are not run again,
        and the result is the one of the whole plan.

    Returns
    -------
    :class:`PlanResult` with the protected data, the record of every step and the artifacts.
    """
    validate_plan(steps, columns=list(data.columns))
    keys = require_columns(data, keys, role="key variable")
    plan_seed = _plan_entropy(random_state)
    current = data if applied is None else applied.data
    records = [] if applied is None else list(applied.steps)
    artifacts = {} if applied is None else dict(applied.artifacts)
    for index in range(len(records), len(steps)):
        step = steps[index]
        method = step["method"]
        function = PLAN_METHODS[method]
        signature = inspect.signature(function)
        params = {key: value for key, value in step.items() if key != "method"}
        if _VARIANT in params:
            params["method"] = params.pop(_VARIANT)
        if method in KEYED_METHODS and "keys" not in params:
            params["keys"] = [key for key in keys if key in current.columns]
        if method == "microaggregation_gower" and scales:
            named = set(step_columns(step).get("columns", [])) | set(step_columns(step).get("distance_columns", []))
            known = {c: scale for c, scale in scales.items() if c in named and c in current.columns}
            params["scales"] = {**known, **(params.get("scales") or {})}
        if method == "subsample":
            for name, column in (("household", household), ("weight", weight)):
                if name not in params and column is not None and column in current.columns:
                    params[name] = column
        seed = None
        deterministic = (method == "rounding" and params.get("method", "deterministic") == "deterministic") or (
            method == "mv_top_coding" and (params.get("estimator", "robust") == "classical"
                                           or params.get("center") is not None)) or (  # no MCD to seed
            method == "microaggregation" and params.get("method", "mdav") not in RANDOMISED_METHODS)
        if "random_state" in signature.parameters and not deterministic:
            seed = step_seed(plan_seed, seed_labels, index, method)
            params["random_state"] = seed
        bound = signature.bind(current, **params)
        bound.apply_defaults()
        try:
            output = function(*bound.args, **bound.kwargs)
        except SDCInputError as error:
            raise SDCInputError(f"step {index} ({method}): {error}") from error
        artifact = None
        if not isinstance(output, pd.DataFrame):
            artifact = output
            output = output.data
        rounded: dict[str, int] = {}
        if method in WHOLE_NUMBER_METHODS:
            written = params.get("columns")
            output, rounded = rounded_to_original_decimals(
                current, output, [written] if isinstance(written, str) else written or [])
        changed, suppressed = _value_changes(current, output)
        parameters = {
            (_VARIANT if name == "method" else name): value
            for name, value in bound.arguments.items()
            if name not in _SUPPLIED
        }
        records.append(
            {
                "method": method,
                "parameters": parameters,
                "random_state": seed,
                "records_before": len(current),
                "records_after": len(output),
                "values_changed": changed,
                "values_suppressed": suppressed,
                "columns_removed": [str(c) for c in current.columns.difference(output.columns)],
            }
        )
        reported = {name: value for name, value in output.attrs.items() if current.attrs.get(name) != value}
        if reported:  # what the method says it chose, e.g. the local suppression algorithm, ROMM's blocks
            records[-1]["reported"] = reported
        # columns rounded back to the decimals of the original (rounded_to_original_decimals)
        if whole := [column for column, decimals in rounded.items() if decimals == 0]:
            records[-1]["rounded_to_whole_numbers"] = whole
        if fractional := {column: decimals for column, decimals in rounded.items() if decimals}:
            records[-1]["rounded_to_decimals"] = fractional
        if method == "recode":
            records[-1]["categories_absent"] = absent_categories(current, **params)
        if method == "pram" and artifact is not None:
            artifacts[f"pram:{params['variable']}"] = artifact.matrix
        current = output
    current = current.copy() if current is data or current.attrs else current
    current.attrs = {}  # the methods' reports are in the step records, not in the released data
    return PlanResult(data=current, steps=records, artifacts=artifacts)
