"""Plan search: the Pareto front of disclosure risk against information loss (SPEC §3.1, §3.3, §8, §9.1).

Given a risk target — k-anonymity at ``k`` (SPEC §3.1, with §2.4's missing-value matching) and a
global risk at most ``max_global_risk`` (SPEC §3.3, mean individual risk) — the search runs every
plan of a small space and keeps the candidates that reach the target and that no other candidate
beats on both risk and loss:

* recode levels: for each key with a category hierarchy, one of its levels (level 0 = the
  original categories; level i = the i-th list of groups, merged with ``recode`` ``groups``);
* the importance order of local suppression (``None`` = sdcMicro's default order);
* the k of the local-suppression step (at least the target k).

Each candidate is the plan ``recode`` steps (one per recoded key) + ``local_suppression``,
applied with :func:`sdc_dagster.protect.plan.apply_plan`; its risk is ``risk.global_risk`` of the
protected keys and its loss ``loss.distance_loss`` (SPEC §9.1, nominal partial distances over the
keys: a recoded or suppressed value counts 1). Candidate A dominates B when A's risk and loss are
both at most B's and one of them is lower. The front is returned as spec ``Plan`` objects and can
be written as the ``plans:`` block of a survey spec (:func:`front_as_yaml`), runnable as assets.

The space is the product of the choices, so it is meant to stay small (tens to a few hundred plans).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
import yaml

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.loss.distance import distance_loss
from sdc_dagster.protect.plan import apply_plan
from sdc_dagster.risk.categorical import global_risk, k_anonymity_violations
from sdc_dagster.spec import Plan, SurveySpec

# Plans found by the search get this seed: they are deterministic (recode and local suppression).
SEARCH_SEED = 20240


@dataclass(frozen=True)
class PlanCandidate:
    """One plan of the search space and what it achieves.

    Attributes
    ----------
    plan : the spec plan (name, steps, k, random_state, description).
    risk : global risk of the protected data (SPEC §3.3, mean individual risk).
    k_violations : records with a sample frequency below the target k (SPEC §3.1).
    loss : distribution-distortion lambda over the keys (SPEC §9.1), in [0, 1].
    suppressed : number of key values suppressed by the plan's local suppression.
    reaches_target : k_violations == 0 and risk <= max_global_risk.
    """

    plan: Plan
    risk: float
    k_violations: int
    loss: float
    suppressed: int
    reaches_target: bool


@dataclass(frozen=True)
class PlanSearchResult:
    """The candidates of a plan search: all of them, and the Pareto front of those reaching the target.

    ``front`` is sorted by loss (ascending), hence by risk descending."""

    candidates: tuple[PlanCandidate, ...]
    front: tuple[PlanCandidate, ...]


def _plain(value):
    """numpy scalars -> Python scalars, so that plans dump to YAML and compare in tests."""
    return value.item() if isinstance(value, np.generic) else value


def _check_hierarchies(data: pd.DataFrame, keys: Sequence[str], hierarchies: Mapping[str, Sequence]) -> None:
    if not isinstance(hierarchies, Mapping):
        raise SDCInputError("hierarchies: must map a key to its list of recode levels (each a list of groups)")
    for variable, levels in hierarchies.items():
        if variable not in keys:
            raise SDCInputError(f"hierarchies: {variable!r} is not one of the key variables {list(keys)}")
        if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
            raise SDCInputError(f"hierarchies.{variable}: must be a non-empty list of levels, each a list of groups")
        for index, groups in enumerate(levels):
            if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not all(
                isinstance(g, Sequence) and not isinstance(g, (str, bytes)) for g in groups
            ):
                raise SDCInputError(
                    f"hierarchies.{variable}[{index}]: must be a list of groups of categories, got {groups!r}"
                )


def candidate_plans(
    keys: Sequence[str],
    hierarchies: Mapping[str, Sequence[Sequence[Sequence[Any]]]],
    *,
    k: int,
    k_values: Sequence[int] | None = None,
    importances: Sequence[Sequence[str] | None] = (None,),
    name: str = "search",
) -> list[Plan]:
    """Every plan of the search space (SPEC §8): recode levels x importance orders x suppression k.

    Plans are named ``<name>_<i>`` in the order of the product (levels of the first hierarchy
    vary slowest) and carry a description of their choices."""
    k_values = (k,) if k_values is None else tuple(k_values)
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < k for v in k_values):
        raise SDCInputError(f"k_values: every suppression k must be an integer >= the target k = {k}, got {list(k_values)}")
    variables = list(hierarchies)
    level_choices = [range(len(hierarchies[v]) + 1) for v in variables]
    plans = []
    for index, (levels, importance, step_k) in enumerate(product(product(*level_choices), importances, k_values)):
        steps: list[dict[str, Any]] = []
        described = []
        for variable, level in zip(variables, levels):
            if level:
                groups = [[_plain(c) for c in group] for group in hierarchies[variable][level - 1]]
                steps.append({"method": "recode", "variable": variable, "groups": groups})
                described.append(f"{variable} level {level}")
        suppression: dict[str, Any] = {"method": "local_suppression", "k": int(step_k)}
        if importance is not None:
            suppression["importance"] = list(importance)
        steps.append(suppression)
        order = "default importance" if importance is None else "importance " + ", ".join(importance)
        plans.append(
            Plan(
                name=f"{name}_{index}",
                steps=tuple(steps),
                k=int(k),
                random_state=SEARCH_SEED,
                description=f"plan search: {', '.join(described) or 'no recoding'}; local suppression k={step_k}, {order}",
            )
        )
    return plans


def pareto_front(candidates: Sequence[PlanCandidate]) -> list[PlanCandidate]:
    """The candidates no other candidate dominates on (risk, loss), sorted by loss then risk.

    Candidates with equal risk and loss are all kept (none dominates the other)."""
    if not candidates:
        return []
    points = np.array([[c.risk, c.loss] for c in candidates])
    no_worse = (points[:, None, :] <= points[None, :, :]).all(axis=2)
    better = (points[:, None, :] < points[None, :, :]).any(axis=2)
    dominated = (no_worse & better).any(axis=0)  # [a, b]: a dominates b
    kept = [c for c, d in zip(candidates, dominated) if not d]
    return sorted(kept, key=lambda c: (c.loss, c.risk))


def search_plans(
    data: pd.DataFrame,
    keys: Sequence[str],
    hierarchies: Mapping[str, Sequence[Sequence[Sequence[Any]]]],
    *,
    k: int = 3,
    max_global_risk: float = 0.01,
    k_values: Sequence[int] | None = None,
    importances: Sequence[Sequence[str] | None] = (None,),
    weight: str | None = None,
    name: str = "search",
) -> PlanSearchResult:
    """Run the plan space on ``data`` and return the Pareto front of risk against loss (module docstring).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables.
    hierarchies : ``{key: [level_1_groups, level_2_groups, ...]}``, coarser with each level; a
        level is a list of groups of categories merged by ``recode`` (``groups``).
    k : the target k-anonymity (SPEC §3.1).
    max_global_risk : the target global risk (SPEC §3.3).
    k_values : the k of the local-suppression step tried (default: the target k only).
    importances : importance orders of local suppression tried (``None`` = the default order).
    weight : the sampling-weight column for the risk (None: the sample is the population).
    name : prefix of the plans' names.

    Returns
    -------
    :class:`PlanSearchResult` with every candidate and the front of those reaching the target.
    """
    keys = require_columns(data, keys, role="key variable")
    if weight is not None:
        require_columns(data, [weight], role="weight")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise SDCInputError(f"k: must be a positive integer, got {k!r}")
    if isinstance(max_global_risk, bool) or not isinstance(max_global_risk, (int, float)) or not 0 <= max_global_risk <= 1:
        raise SDCInputError(f"max_global_risk: must be a probability in [0, 1], got {max_global_risk!r}")
    _check_hierarchies(data, keys, hierarchies)
    for importance in importances:
        if importance is not None:
            require_columns(data, importance, role="importance key")
    scales = {key: "nominal" for key in keys}
    candidates = []
    for plan in candidate_plans(keys, hierarchies, k=k, k_values=k_values, importances=importances, name=name):
        protected = apply_plan(data, plan.steps, keys=keys, random_state=plan.random_state).data
        risk = global_risk(protected, keys, weight=weight)["risk"]
        violations = k_anonymity_violations(protected, keys, k)
        loss = distance_loss(data[keys], protected[keys], scales).value
        suppressed = int((protected[keys].isna() & data[keys].notna()).to_numpy().sum())
        candidates.append(
            PlanCandidate(
                plan=plan,
                risk=float(risk),
                k_violations=violations,
                loss=float(loss),
                suppressed=suppressed,
                reaches_target=violations == 0 and risk <= max_global_risk,
            )
        )
    front = pareto_front([c for c in candidates if c.reaches_target])
    return PlanSearchResult(candidates=tuple(candidates), front=tuple(front))


def search_plans_for_spec(data: pd.DataFrame, spec: SurveySpec, **options) -> PlanSearchResult:
    """:func:`search_plans` on a wave with the survey's own keys, category hierarchies (the
    variables' ``hierarchy:``), risk target (``risk.k``, ``risk.max_global_risk``) and weight;
    ``options`` are the other keywords of :func:`search_plans` (``k_values``, ``importances``, ``name``)."""
    return search_plans(data, spec.categorical_keys, spec.hierarchies, k=spec.risk.k,
                        max_global_risk=spec.risk.max_global_risk, weight=spec.weight, **options)


def front_as_yaml(result: PlanSearchResult) -> str:
    """The front as the ``plans:`` block of a survey spec (SPEC §8), with risk and loss in the description."""
    plans = {}
    for candidate in result.front:
        plan = candidate.plan
        plans[plan.name] = {
            "description": f"{plan.description} (global risk {candidate.risk:.6g}, loss {candidate.loss:.6g})",
            "k": plan.k,
            "random_state": plan.random_state,
            "steps": [dict(step) for step in plan.steps],
        }
    return yaml.safe_dump({"plans": plans}, sort_keys=False, default_flow_style=None)
