"""A candidate plan of the plan search (:func:`sdc_dagster.search.wave.search_wave`) and its figures.

:class:`SearchCandidate` (one evaluated node: its plan, risk, loss and release checks);
:func:`node_plan`, the plan of a lattice node in spec steps and words (seeded by :data:`SEARCH_SEED`);
:func:`search_loss`, the spec's loss of a variant (SPEC §9.1 measure (1) or the mean TOPSIS loss,
SPEC §10, as :func:`sdc_dagster.pipeline.evaluation.headline_loss` computes them); the keys a plan
withholds (:func:`withheld_keys`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdc_dagster.protect.plan import PlanResult
from sdc_dagster.search.space import ContinuousRung, KeyHierarchy
from sdc_dagster.spec import Plan, SurveySpec
from sdc_dagster.pipeline.evaluation import headline_loss
from sdc_dagster.pipeline.protection import CheckOutcome, blocking_failures


#: The seed of searched plans (their random steps, noise and rank swapping, derive theirs from it).
SEARCH_SEED = 20240


@dataclass(frozen=True)
class SearchCandidate:
    """One evaluated plan of the search.

    ``plan``: ordinary spec steps, replayable by :func:`sdc_dagster.protect.plan.apply_plan` with
    ``plan.random_state``; ``plan.description`` says the choices in words. ``global_risk`` (SPEC
    §3.3, 0 without categorical keys), ``k_violations`` (records with f_k < k, SPEC §3.1),
    ``linkage_risk`` (the linkage_risk check's value; NaN before confirmation or without continuous
    keys), ``loss`` (the spec's measure), ``suppressed`` (key values suppressed), ``reaches_target``
    (k-anonymity and the global-risk target), ``checks`` (:func:`sdc_dagster.pipeline.protection.release_checks`
    outcomes after confirmation; empty before), ``levels`` (the level of each categorical key),
    ``protected`` (the confirmed plan's protection, kept for the first of the ranked front only:
    the searched variant is then not protected again), ``l_violations`` (records whose released key
    group is not l-diverse, :func:`~sdc_dagster.search.coded.records_below_l`; 0 when the spec asks no l-diversity) and
    ``suppressed_share`` (the largest share of a key's observed values suppressed, bounded by
    ``limits.max_suppressed_share``), ``keys_not_released_share`` (the share of the spec's keys the
    node's categorical keys release as one category, :meth:`~sdc_dagster.search.coded.CodedLattice.not_released`,
    bounded by ``limits.max_keys_not_released``; the continuous keys the ladder withholds are counted
    by the confirmation's release check). ``reaches_target`` asks k-anonymity, the global-risk
    target, l-diversity, the suppression limit and the limit of keys not released: the constraints
    a node's codes show; the other utility limits are release checks of the confirmation.
    ``suppression_priced``: how the node's local suppression to k was computed, ``"classes"``
    (exactly, from its frequency table, :mod:`~sdc_dagster.search.pricing`), ``"records"`` (run on
    the records: more keys than the greedy prices alone) or ``""`` (none needed).
    """

    plan: Plan
    global_risk: float
    k_violations: int
    linkage_risk: float
    loss: float
    suppressed: int
    reaches_target: bool
    checks: dict[str, CheckOutcome] = field(default_factory=dict)
    levels: tuple[int, ...] = ()
    l_violations: int = 0
    suppressed_share: float = 0.0
    keys_not_released_share: float = 0.0
    suppression_priced: str = ""
    protected: PlanResult | None = field(default=None, repr=False, compare=False)

    @property
    def confirmed(self) -> bool:
        """Whether the release checks ran and no blocking one failed."""
        return bool(self.checks) and not blocking_failures(self.checks)

    @property
    def risk(self) -> float:  # the risk of the front (risk against loss, pareto_front)
        return self.global_risk


def node_plan(space: dict[str, KeyHierarchy], node: tuple[int, ...], suppression: list[dict], k: int,
               continuous: ContinuousRung | None, name: str) -> Plan:
    steps, words = [], []
    for (key, hierarchy), level in zip(space.items(), node):
        step = hierarchy.levels[level].step(key)
        if step is not None:
            steps.append(step)
            words.append(f"{key}: {hierarchy.levels[level].words}")
    for step in suppression:
        steps.append(step)
        if step["method"] == "local_suppression":
            words.append(f"local suppression to {step['k']}-anonymity")
        elif step["method"] == "diversity_suppression":
            words.append(f"suppression of the keys of records in key groups that are not {step['l']}-diverse")
        else:
            words.append(f"suppression of key values of records with individual risk above {step['threshold']:.4g}")
    if continuous is not None:
        steps += continuous.steps
        words.append(continuous.words + " (continuous keys)")
    return Plan(name=name, steps=tuple(steps), k=k, random_state=SEARCH_SEED,
                description="searched plan: " + ("; ".join(words) if words else "the keys as they are"))


def suppression_step(k: int) -> dict:
    """Local suppression to k with the greedy method's default: the fewest suppressions per record,
    ties broken by sdcMicro's importance (keys with fewer categories, as a deeper recoding leaves
    them, kept first). An explicit importance order makes the greedy method honour it
    lexicographically, about 40 times slower on sdcMicro's testdata, for more suppressions."""
    return {"method": "local_suppression", "k": k}


def search_loss(data: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, *,
                 unchanged: Sequence[str] = ()) -> float:
    """The spec's search loss of a variant: :func:`~sdc_dagster.pipeline.evaluation.headline_loss`'s
    ``lambda_arctan`` (a withheld key counted as total loss of it, as there) or ``topsis_mean``, only
    that figure computed (``unchanged``: as there); NaN where it is not applicable."""
    topsis = spec.search.loss == "topsis"
    figures = headline_loss(data, protected, spec, unchanged=unchanged, topsis=topsis)
    return float(figures.get("topsis_mean" if topsis else "lambda_arctan", np.nan))


def withheld_keys(candidate: SearchCandidate | None) -> list[str]:
    """The keys a candidate's plan does not release at all (its ``remove_variables`` steps: the
    continuous ladder's last rung)."""
    if candidate is None:
        return []
    return [key for step in candidate.plan.steps if step["method"] == "remove_variables" for key in step["variables"]]


def withheld_note(candidate: SearchCandidate | None) -> str:
    """"; income, assets, debts not released" when the plan withholds keys, else ""."""
    keys = withheld_keys(candidate)
    return f"; {', '.join(keys)} not released" if keys else ""
