"""The Pareto front of disclosure risk against information loss, and its plans as a spec block (SPEC §8, §9.1).

Candidate A dominates B when A's risk and loss are both at most B's and one of them is lower
(:func:`pareto_front`). The wave-level search that produces the candidates is
:func:`sdc_dagster.search.wave.search_wave`; :func:`front_as_yaml` writes its front as the ``plans:``
block of a survey spec, as named, editable plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import count
from typing import Any

import numpy as np
import yaml


def pareto_front(candidates: Sequence[Any]) -> list[Any]:
    """The candidates (objects with ``risk`` and ``loss``) no other candidate dominates, sorted by
    loss then risk. Candidates with equal risk and loss are all kept (none dominates the other).

    One sweep in loss order (O(n log n)): among candidates of equal loss only those of least risk can
    stay, and they stay when that risk is below the least risk of every candidate of smaller loss."""
    ordered = sorted(candidates, key=lambda c: (c.loss, c.risk))
    kept, best = [], np.inf
    start = 0
    while start < len(ordered):
        end = start
        while end < len(ordered) and ordered[end].loss == ordered[start].loss:
            end += 1
        least = ordered[start].risk
        if least < best:
            kept += [c for c in ordered[start:end] if c.risk == least]
            best = least
        start = end
    return kept


def _plain(value):
    """numpy scalars -> Python scalars (recursively), so that plans dump to YAML."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def front_as_yaml(candidates: Iterable[Any], *, taken: Iterable[str] = ()) -> str:
    """The candidates' plans (objects with ``plan``, ``global_risk`` or ``risk``, and ``loss``) as the
    ``plans:`` block of a survey spec (SPEC §8), risk and loss in each description.

    The plans are named ``search_1``, ``search_2``, ... in the candidates' order, skipping the names
    of ``taken`` (the spec's plans), so that the block can be appended to the spec's plans and never
    takes the name of the pipeline's own searched plan. A random step's seed derives from the plan's
    name (:func:`~sdc_dagster.protect.plan.step_seed`): under its new name a plan with noise or
    rank swapping gives another draw of the same method than the candidate evaluated."""
    used = set(taken)
    names = (f"search_{i}" for i in count(1) if f"search_{i}" not in used)
    plans = {}
    for candidate in candidates:
        plan = candidate.plan
        risk = getattr(candidate, "global_risk", getattr(candidate, "risk", float("nan")))
        plans[next(names)] = {
            "description": f"{plan.description} (global risk {risk:.4g}, loss {candidate.loss:.4g})",
            "k": int(plan.k),
            "random_state": int(plan.random_state),
            "steps": [_plain(dict(step)) for step in plan.steps],
        }
    return yaml.safe_dump({"plans": plans}, sort_keys=False, default_flow_style=None, allow_unicode=True)
