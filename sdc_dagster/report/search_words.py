"""The plan search in the report's words: what it evaluated, how it settled the rest, what it
proposes and at what loss (the decision section's paragraph on the search)."""

from __future__ import annotations

import numpy as np

from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.measures import format_value, measure_info
from sdc_dagster.spec import SEARCHED_PLAN


def any_releasable(inputs: ReportInputs) -> bool:
    """Whether any plan of the wave passes every blocking release check."""
    return any(plan.releasable for plan in inputs.plans.values())


def _evaluated_words(found: dict) -> str:
    """How many plans the search evaluated and how the others were settled, true to the figures:
    "every plan of the space" only when each was evaluated; an exhaustive search that settled
    plans without evaluating them (by their equivalence classes, or by ARX's predictive tagging:
    a generalisation of a k-anonymous node is k-anonymous, a specialisation of a node that is
    not is not either; Kohlmayer et al. 2012, "Flash: efficient, stable and optimal
    k-anonymity") says how many and how (the search's ``bound``); a cut search gives its cut."""
    evaluated, total = int(found["nodes_evaluated"]), int(found["nodes_total"])
    words = f"evaluated {evaluated:,} of {total:,} generalisation plans in {found['seconds']:.1f} s"
    if not found["exhaustive"]:
        return f"{words} ({found['bound']})"
    if evaluated >= total:
        return f"{words} (every plan of the space)"
    # the bound's first clause ("none: every node evaluated ...") says nothing of the settled ones
    how = "; ".join(part for part in str(found["bound"]).split("; ") if not part.startswith("none"))
    return (f"{words}; the other {total - evaluated:,} were settled without evaluation"
            + (f" ({how})" if how else ""))


def search_sentence(inputs: ReportInputs) -> str:
    """What the plan search did and found, in words: the nodes it evaluated and how the lattice was
    cut, the plan it proposes (``searched``), "optimal over N plans" only when the search evaluated
    every plan of its space, else "best of N checked" (the summary's ``optimality``), its loss against every other eligible plan, the
    runner-up, and the loss a stricter target (half the global-risk target) would cost."""
    found = inputs.search
    label = measure_info(inputs.loss_measure).label
    text = f"The plan search {_evaluated_words(found)}. "
    searched = inputs.plans.get(SEARCHED_PLAN)
    if not found["recommended"] or searched is None:
        return text + "No searched plan passes every blocking release check." + (
            " What it would take: the next section."
            if inputs.what_it_would_take is not None and not any_releasable(inputs) else "")
    text += f"It proposes {SEARCHED_PLAN} ({found['recommended']}), {found['optimality']}. "
    mine = searched.loss.get(inputs.loss_measure, np.nan)
    compared = []
    for name, plan in inputs.plans.items():
        other = plan.loss.get(inputs.loss_measure, np.nan)
        if name == SEARCHED_PLAN or not plan.releasable or np.isnan(other) or np.isnan(mine):
            continue
        if np.isclose(mine, other, rtol=1e-9, atol=1e-12):
            compared.append(f"equal to {name}'s (the same protection)")
        else:
            compared.append(f"{'lower' if mine < other else 'higher'} than {name}'s ({other:.4g})")
    if compared:
        text += f"Its {label} ({mine:.4g}) is " + ", ".join(compared) + ". "
    if found["runner_up"]:
        text += f"Runner-up: {found['runner_up']} ({label} {found['runner_up_loss']:.4g}). "
    if not np.isnan(found["stricter_loss"]):
        text += (f"Meeting a stricter global-risk target of {format_value(found['stricter_target'], 'share')} "
                 f"would cost a {label} of {found['stricter_loss']:.4g}.")
    else:
        text += "No searched plan meets half the global-risk target."
    return text.strip()
