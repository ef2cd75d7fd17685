"""Which plan to release: the Pareto front of the plans' residual risk and information loss, and
the recommendation rule the report states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError

RECOMMENDATION_RULE = (
    "Only plans that pass every blocking release check are eligible (the checks include the spec's risk "
    "targets, stated with the wave). Among them, keep the Pareto-optimal plans (no "
    "other eligible plan has residual risk and information loss both lower or equal, one strictly "
    "lower) and recommend the one with the least information loss, i.e. the best utility within the "
    "risk target. A tie in loss goes to the lower residual risk, then to the plan listed first in the spec."
)


@dataclass(frozen=True)
class Recommendation:
    """``plan``: the recommended plan (None when no plan is eligible); ``reason``: one sentence
    saying why; ``pareto``: the Pareto-optimal eligible plans; ``tied``: the plans tied with the
    recommendation on both risk and loss (the spec order decided between them)."""

    plan: str | None
    reason: str
    pareto: list[str]
    tied: list[str]


def _validated(points: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("risk", "loss", "releasable") if c not in points.columns]
    if missing:
        raise SDCInputError(f"plan points: column(s) {', '.join(missing)} required (risk, loss, releasable)")
    if not points.index.is_unique:
        raise SDCInputError("plan points: plan names (the index) must be unique")
    return points


def pareto_optimal(points: pd.DataFrame) -> pd.Series:
    """Whether each plan is Pareto-optimal among the plans given (both coordinates: lower is better).

    ``points``: index = plan names, columns ``risk`` and ``loss``. A plan is dominated when another
    plan has risk <= and loss <= with at least one strictly lower. Plans with a missing or
    infinite coordinate are not comparable: False. Returns a boolean Series on ``points.index``.
    """
    risk = points["risk"].to_numpy(dtype=float)
    loss = points["loss"].to_numpy(dtype=float)
    finite = np.isfinite(risk) & np.isfinite(loss)
    r, l = np.where(finite, risk, np.inf), np.where(finite, loss, np.inf)
    # dominated[i, j]: plan j dominates plan i
    no_worse = (r[None, :] <= r[:, None]) & (l[None, :] <= l[:, None])
    better = (r[None, :] < r[:, None]) | (l[None, :] < l[:, None])
    dominated = (no_worse & better & finite[None, :]).any(axis=1)
    return pd.Series(finite & ~dominated, index=points.index, name="pareto_optimal")


def recommend_plan(points: pd.DataFrame) -> Recommendation:
    """Apply :data:`RECOMMENDATION_RULE`.

    Parameters
    ----------
    points : DataFrame
        Index = plan names in spec order; columns ``risk`` (residual risk), ``loss`` (information
        loss, lower = more utility) and ``releasable`` (passes every blocking check).

    Returns
    -------
    Recommendation
        ``plan`` None when no plan passes its blocking checks (nothing should be released) or no
        eligible plan has both figures.
    """
    points = _validated(points)
    eligible = points[points["releasable"].astype(bool)]
    if eligible.empty:
        return Recommendation(None, "No plan passes its blocking release checks: release none of them and "
                                    "revise the plans.", [], [])
    front = pareto_optimal(eligible)
    pareto = eligible[front]
    if pareto.empty:
        return Recommendation(None, "No plan that passes its blocking checks has both a residual risk and an "
                                    "information loss to compare.", [], [])
    best = pareto[pareto["loss"] == pareto["loss"].min()]
    best = best[best["risk"] == best["risk"].min()]
    plan = str(best.index[0])
    tied = [str(p) for p in best.index]
    others = len(eligible) - 1
    reason = (f"{plan} passes its blocking checks and has the least information loss "
              f"({pareto.loc[plan, 'loss']:.3g}) of the {len(eligible)} eligible plan(s)")
    if len(pareto) > 1:
        reason += f"; the Pareto front also holds {', '.join(str(p) for p in pareto.index if p != plan)}"
    elif others:
        reason += "; it is the only Pareto-optimal one"
    if len(tied) > 1:
        reason += f"; tied on risk and loss with {', '.join(tied[1:])}, it comes first in the spec"
    failed = [str(p) for p in points.index if not bool(points.loc[p, "releasable"])]
    if failed:
        reason += f"; not eligible (failed blocking checks): {', '.join(failed)}"
    return Recommendation(plan, reason + ".", [str(p) for p in pareto.index], tied)
