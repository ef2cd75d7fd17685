"""The outcome of the plan search (:func:`sdc_dagster.search.wave.search_wave`): :class:`WaveSearch`,
the plan to release (:func:`plan_to_release`), :class:`PlanSearch` (what the pipeline passes on),
the search in figures (:func:`search_summary`) and whether its plan is proven optimal, in words
(:func:`optimality`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdc_dagster.protect.plan import PlanResult
from sdc_dagster.spec import SEARCHED_PLAN, Plan, SurveySpec
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.search.candidates import SEARCH_SEED, SearchCandidate, withheld_keys


@dataclass(frozen=True)
class WaveSearch:
    """The outcome of :func:`~sdc_dagster.search.wave.search_wave` (module docstring).

    ``candidates``: every evaluated node (of both lattices when the search ran again with the keys'
    tops); ``front``: the Pareto front (global risk against loss) of those meeting the target, those passing the release checks first, each by loss, the confirmed ones
    carrying their checks (when no front candidate passes them, the candidates beyond the front that
    were confirmed join it); ``recommended``: the confirmed candidate of least loss
    (``plan.name == SEARCHED_PLAN``); ``runner_up``: the next;
    ``stricter``: what meeting half the global-risk target costs, ``{"target", "loss", "plan"}``
    (None when no candidate meets it); ``nodes_total``, ``nodes_evaluated``, ``exhaustive``, ``bound``
    (how the search was cut, in words), ``seconds``; ``space``: per key, its levels in words;
    ``loss_bound``: when the walk stopped before the last node (time budget or loss bound;
    lambda-arctan loss), the least loss a node left unevaluated can have (its recode-only loss;
    continuous steps only add to it), NaN otherwise; ``proven``: the recommended plan
    is proven the least loss of the lattice's plans meeting the target (no node left unevaluated nor
    candidate left unconfirmed can have less, as :func:`sdc_dagster.search.wave.search_wave` proves it);
    ``workers``: the processes that evaluated the walk's nodes (1: serial; ``search.workers``,
    :mod:`sdc_dagster.search.parallel`), which change no plan, loss nor proof; ``charged``: the
    seconds the search charged on its budget (``search.budget_seconds``; fixed charges for the work
    done, :mod:`sdc_dagster.search.clock`: the same run to run and with any number of workers).
    """

    candidates: tuple[SearchCandidate, ...]
    front: tuple[SearchCandidate, ...]
    recommended: SearchCandidate | None
    runner_up: SearchCandidate | None
    stricter: dict | None
    nodes_total: int
    nodes_evaluated: int
    exhaustive: bool
    bound: str
    seconds: float
    space: dict[str, list[str]]
    loss_bound: float = float("nan")
    proven: bool = False
    workers: int = 1
    charged: float = 0.0

    def front_frame(self) -> pd.DataFrame:
        """One row per front candidate: plan, steps (short text), global_risk, k_violations,
        linkage_risk, loss, suppressed, recommended."""
        name = self.recommended.plan.name if self.recommended else None
        rows = [{
            "plan": c.plan.name,
            "steps": "; ".join(_step_text(s) for s in c.plan.steps),
            "global_risk": c.global_risk,
            "k_violations": c.k_violations,
            "linkage_risk": c.linkage_risk,
            "loss": c.loss,
            "suppressed": c.suppressed,
            "recommended": c.plan.name == name,
        } for c in self.front]
        columns = ["plan", "steps", "global_risk", "k_violations", "linkage_risk", "loss", "suppressed", "recommended"]
        return pd.DataFrame(rows, columns=columns)


def _step_text(step: dict) -> str:
    method = step["method"]
    if method == "recode":
        return f"recode {step['variable']} ({len(step['groups'])} merged groups)"
    if method == "local_suppression":
        return f"local suppression k={step['k']}"
    if method == "risk_suppression":
        return f"risk suppression above {step['threshold']:.4g}"
    if method == "diversity_suppression":
        return f"suppression to {step['l']}-diversity"
    if method == "remove_variables":
        return f"{', '.join(step['variables'])} withheld"
    if method in ("top_coding", "bottom_coding"):
        return f"{method.replace('_', ' ')} {step['variable']} at {step['value']:.6g}"
    if method == "interval_recode":
        return f"bands of {step['variable']} ({len(step['breaks']) - 1})"
    extra = ", ".join(f"{k}={v}" for k, v in step.items() if k in ("k", "p", "amount", "base"))
    return f"{method} {extra}".strip()


def _chosen(found: WaveSearch) -> SearchCandidate | None:  # plan_to_release says which
    fallback = found.front[:1] or sorted(found.candidates, key=lambda c: (c.global_risk, c.loss))[:1]
    return found.recommended or (fallback[0] if fallback else None)


def plan_to_release(found: WaveSearch, spec: SurveySpec) -> Plan:
    """The plan the pipeline materialises as the searched variant (``protected_searched``), named
    :data:`SEARCHED_PLAN`: the recommended candidate; when none passes the release checks, the
    front's first (the least loss meeting the target) or else the evaluated candidate of least
    global risk, so that its release checks say why it is withheld; with no candidate, no step."""
    chosen = _chosen(found)
    if chosen is None:
        return Plan(name=SEARCHED_PLAN, steps=(), k=spec.risk.k, random_state=SEARCH_SEED,
                    description="plan search: no candidate evaluated within the budget")
    return replace(chosen.plan, name=SEARCHED_PLAN)


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class PlanSearch:
    """A wave's search as the pipeline passes it on: ``front`` (:meth:`WaveSearch.front_frame`),
    ``summary`` (:func:`search_summary`), the ``plan`` to release (:func:`plan_to_release`) and its
    release checks when the search ran them (None otherwise): candidates are confirmed under the
    name :data:`SEARCHED_PLAN`, whose seeds the released plan keeps; ``protected``: the plan's
    protection when the search made it (None otherwise), so that it is not made again; ``found``:
    the finished search, which the release stage asks what it would take when the wave releases
    nothing (:func:`sdc_dagster.pipeline.relaxations.what_it_would_take`); ``advice``: that answer
    (:meth:`sdc_dagster.pipeline.relaxations.WhatItWouldTake.record`), set by the release stage,
    None otherwise."""

    front: pd.DataFrame
    summary: dict
    plan: Plan
    checks: dict[str, CheckOutcome] | None
    protected: PlanResult | None = None
    advice: dict | None = None
    found: WaveSearch | None = field(default=None, repr=False)

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python."""
        plan = {**vars(self.plan), "steps": json.dumps(list(self.plan.steps))}
        return {"front": self.front, "summary": pd.DataFrame([self.summary]), "plan": pd.DataFrame([plan])}


def plan_search(found: WaveSearch, spec: SurveySpec) -> PlanSearch:  # the PlanSearch of a finished search
    chosen = _chosen(found)
    checks = dict(chosen.checks) if chosen is not None and chosen.checks else None
    return PlanSearch(front=found.front_frame(), summary=search_summary(found), plan=plan_to_release(found, spec),
                      checks=checks, protected=chosen.protected if chosen is not None else None, found=found)


def optimality(nodes_evaluated: int, nodes_total: int, exhaustive: bool, loss_bound: float = float("nan")) -> str:
    """Whether the searched plan is proven best over the space, in words: "optimal over N plans" when
    the search proved it (``exhaustive``: :attr:`WaveSearch.proven`), else "best of N checked" (of
    the space's ``nodes_total``), with the least loss a plan left unchecked can have when known
    (``loss_bound``, "bound B"): a plan the search did not evaluate might have been better."""
    if exhaustive:
        return f"optimal over {nodes_total:,} plans"
    bound = "" if np.isnan(loss_bound) else f", bound {loss_bound:.4g}"
    return f"best of {nodes_evaluated:,} checked (of {nodes_total:,} plans{bound})"


def search_summary(found: WaveSearch) -> dict:
    """The search in figures, as the report and the asset's metadata show it: nodes evaluated of the
    lattice, exhaustive or how it was cut (``bound``), whether its plan is proven optimal in words
    (``optimality``, :func:`optimality`), seconds, the processes that evaluated its nodes
    (``workers``, ``search.workers``), the recommended plan and the
    runner-up in words with their loss, the keys the recommended plan does not release at all
    (``withheld``, :func:`~sdc_dagster.search.candidates.withheld_keys` joined by ", "; "" when it
    releases every key), and what half the global-risk target would cost in loss
    (``stricter_target``, ``stricter_loss``; NaN when no evaluated plan meets it)."""
    def described(candidate: SearchCandidate | None) -> tuple[str, float]:
        return (candidate.plan.description, candidate.loss) if candidate else ("", float("nan"))

    recommended, recommended_loss = described(found.recommended)
    runner_up, runner_up_loss = described(found.runner_up)
    stricter = found.stricter or {}
    return {"nodes_evaluated": found.nodes_evaluated, "nodes_total": found.nodes_total,
            "exhaustive": found.exhaustive, "bound": found.bound, "seconds": found.seconds, "workers": found.workers,
            "optimality": optimality(found.nodes_evaluated, found.nodes_total, found.proven, found.loss_bound),
            "loss_bound": found.loss_bound,
            "recommended": recommended, "recommended_loss": recommended_loss,
            "runner_up": runner_up, "runner_up_loss": runner_up_loss,
            "withheld": ", ".join(withheld_keys(found.recommended)),
            "stricter_target": float(stricter.get("target", float("nan"))),
            "stricter_loss": float(stricter.get("loss", float("nan")))}
