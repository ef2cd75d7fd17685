"""A node of the plan search checked (:func:`sdc_dagster.search.wave.search_wave`): by its rolled-up
classes with ARX's Flash (:func:`flash_node`, :func:`wider_cap`; Kohlmayer et al. 2012) or evaluated
with its suppression (:func:`evaluate_node`: local suppression to k-anonymity, risk-based and
l-diversity suppression, SPEC §8.3, §3.6) into a :class:`~sdc_dagster.search.candidates.SearchCandidate`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from sdc_dagster import risk
from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.keys import renumbered_digits
from sdc_dagster.search.clock import flash_check_charge, node_charge
from sdc_dagster.search.flash import Check, Outcome, flash
from sdc_dagster.search.lattice import Lattice
from sdc_dagster.search.space import KeyHierarchy, search_space
from sdc_dagster.protect.suppression import codes_below_l, risk_suppression, suppress_codes_to_k, suppress_codes_to_l
from sdc_dagster.protect.suppression_greedy import greedy_alone
from sdc_dagster.risk.categorical import risk_from_frequencies
from sdc_dagster.spec import SurveySpec
from sdc_dagster.search.candidates import SearchCandidate, node_plan, search_loss, suppression_step
from sdc_dagster.search.pricing import price_local_suppression
from sdc_dagster.search.coded import (
    RISK_MARGIN,
    CodedLattice,
    RolledCounts,
    cut_space,
    lattice_nodes,
    level_bounds,
    records_below_l,
)


def flash_node(lattice: CodedLattice, rolled: RolledCounts, nodes: np.ndarray, lower: np.ndarray,
                spec: SurveySpec, budget_seconds: float, report: Callable[[str], None], *,
                suppressible: int = 0) -> Outcome | None:
    """The node of least recode-only loss (``lower``, SPEC §9.1 measure (1); exact for a node that
    suppresses nothing) among the nodes that pass a check read from their classes; None when no time
    is left. The outcome's ``value`` is inf when no node passes. Each check is charged
    :func:`~sdc_dagster.search.clock.flash_check_charge` of the records' combinations of key values
    and the keys, and with sensitive variables also a pass over the records' key digits
    (:data:`~sdc_dagster.search.clock.CHECK_SECONDS_PER_CELL`, for their l-diversity); Flash stops
    once the charges exceed ``budget_seconds`` (the outcome's ``charged``, which the caller adds to
    the search's).

    With ``suppressible`` 0 the check is the target by recoding alone: every class of at least
    ``risk.k`` records (SPEC §3.1), the global risk of the classes (SPEC §3.3) at most
    ``risk.max_global_risk`` and, when the spec asks it, every class l-diverse (SPEC §3.6,
    :func:`~sdc_dagster.search.coded.records_below_l`). With ``suppressible`` s > 0 it is ARX's k-anonymity with record
    suppression (SPEC §14.2): the classes smaller than k hold at most s records, the ones local
    suppression has to treat; such a node is where local suppression is likely to stay within the
    suppression limit, and only its evaluation (the exact local suppression) tells.

    Found by ARX's Flash (:func:`sdc_dagster.search.flash.flash`; Kohlmayer et al. 2012, "Flash:
    efficient, stable and optimal k-anonymity", PASSAT 2012): each check is monotone along the
    lattice (merging classes never lowers a class's size nor its distinct sensitive values, so the
    records in classes smaller than k never grow; without weights the global risk is the number of
    classes over n, which merging never raises), so one check tags the cone of generalisations of a
    node passing it and the cone of specialisations of one failing it; each node's classes are
    rolled up from a counted specialisation (:class:`~sdc_dagster.search.coded.RolledCounts`). With weights the
    Benedetti-Franconi risk is not proven monotone: the node is then the best found, not a proven
    optimum. ``nodes`` are numbered as :class:`~sdc_dagster.search.lattice.Lattice` numbers them
    (first key most significant); ``report(note)`` receives Flash's progress in words."""
    if budget_seconds <= 0 or not len(nodes):
        return None
    k, target = spec.risk.k, spec.risk.max_global_risk
    grid = Lattice(nodes.max(axis=0))

    def check(node: int) -> Check:
        levels = tuple(int(x) for x in nodes[node])
        classes = rolled.classes(levels)
        small = classes.counts < k
        below_k = int(classes.counts[small].sum())
        if below_k > suppressible:
            return Check(False, below_k, None, -np.inf)
        if not suppressible and rolled.global_risk(classes) > target * (1 + RISK_MARGIN):
            return Check(False, 0, None, -np.inf)
        if not suppressible and lattice.sensitive and records_below_l(lattice, *lattice.digits(levels), spec):
            return Check(False, 0, None, -np.inf)
        # the value is the recode-only loss: exact without suppression, a lower bound with it
        return Check(True, 0, float(lower[node]), -np.inf)

    what = f"at most {suppressible:,} records in classes smaller than k" if suppressible else "the target by recoding alone"

    def progress(done: int, total: int, checked: int, best: float) -> None:
        found = f"least recode-only loss with {what} so far {best:.4g}" if np.isfinite(best) else f"none yet with {what}"
        report(f"Flash: {done:,} of {total:,} nodes settled, {checked:,} checked by their classes; {found}")

    check_seconds = flash_check_charge(len(rolled.counter.base.counts), len(lattice.keys))
    if lattice.sensitive:
        check_seconds += node_charge("anonymous", False, False, len(lattice.index), len(lattice.keys))
    return flash(grid, check, lower, unsuppressed_value=lambda prior: prior, counted_bounds=False,
                 budget_seconds=budget_seconds, check_seconds=check_seconds, progress=progress)


def wider_cap(data: pd.DataFrame, spec: SurveySpec, budget_seconds: float,
              report: Callable[[str], None]) -> tuple[float, Outcome | None]:
    """The loss of :func:`flash_node` over the wider lattice (each key's top in its chain,
    :func:`~sdc_dagster.search.space.search_space` with ``withhold``): the loss of a plan there that
    meets the target by recoding alone (the least such loss when Flash proves it), whose check was
    computed on that node's own classes; inf when none is found (or a key has a missing value, or no
    time is left), or when that plan releases more keys as one category than
    ``limits.max_keys_not_released`` allows: it is no plan to beat then (the limit is not monotone
    the way Flash's check is: generalising a key can only take it to one category, so a node passing
    the limit may have generalisations that fail it), and the walk goes uncapped. With it, Flash's
    outcome (its checks' charges on the budget; None when Flash did not run)."""
    wider = cut_space(search_space(data, spec, withhold=True))
    lattice = CodedLattice(data, spec, wider)
    rolled = RolledCounts.of(lattice)
    if rolled is None:
        return np.inf, None
    nodes = lattice_nodes(wider)
    lower = np.zeros(len(nodes))
    for i, per_level in enumerate(level_bounds(data, spec, lattice)):
        lower += per_level[nodes[:, i]]
    if not np.isfinite(lower).all():
        return np.inf, None
    found = flash_node(lattice, rolled, nodes, lower, spec, budget_seconds, report)
    if found is None or not found.value < np.inf:
        return np.inf, found
    digits, _ = lattice.digits(tuple(int(x) for x in nodes[found.node]))
    if lattice.not_released_share(digits) > spec.limits.max_keys_not_released + 1e-12:
        return np.inf, found
    return found.value, found


def _risks(f: np.ndarray, F: np.ndarray, weight: str | None, k: int) -> tuple[int, pd.Series]:
    """k-anonymity violations (SPEC §3.1) and individual risks (SPEC §3.2) of keys with key
    frequencies (f, F) (:func:`~sdc_dagster.risk.risk_table`'s ``risk``)."""
    return int(np.count_nonzero(f < k)), pd.Series(risk_from_frequencies(f, F, weighted=weight is not None,
                                                                         weight=weight or "weight"), name="risk")


def evaluate_node(data: pd.DataFrame, spec: SurveySpec, lattice: CodedLattice, space: dict[str, KeyHierarchy],
              node: tuple[int, ...], is_anonymous: bool, recode_loss: float,
              checked: tuple[tuple[np.ndarray, np.ndarray], IncrementalCompatibleCounts] | None = None
              ) -> SearchCandidate:
    """A node's plan (without continuous step) and its risk and loss on the recoded keys;
    ``checked``: the node's key digits and radices and the counter of local suppression
    (:class:`~sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts`) that checked them, when
    the walk made them (not made again).

    A node that is not k-anonymous by recoding gets local suppression to k; one whose global risk is
    still above the target then gets risk-based suppression (SPEC §8.3) at the individual-risk
    threshold that brings the global risk under the target (sdcMicro's ``measure_threshold``, the
    mu-Argus rule, :func:`sdc_dagster.risk.global_risk_threshold`): without sampling weights a 1 %
    target asks for far more than 3-anonymity (the risk of a record is 1/f_k).

    Everything runs on the keys' codes (:meth:`~sdc_dagster.search.coded.CodedLattice.digits`): local
    suppression on the node's classes with their counts (:func:`~sdc_dagster.search.pricing.price_local_suppression`,
    exactly the values :func:`~sdc_dagster.protect.suppression.suppress_codes_to_k` suppresses in the
    records, up to 8 keys) or on the records (more keys), and the frequencies of the
    suppressed keys by :func:`~sdc_dagster.risk.frequencies.digit_key_frequencies` after the codes are
    renumbered as :func:`~sdc_dagster.keys.key_digits` numbers the released keys (so every count
    is the one the release's own checks compute); without weights, the counts of local
    suppression's counter are those counts already. Only risk-based suppression takes a frame."""
    k, target = spec.risk.k, spec.risk.max_global_risk
    keys = lattice.keys
    suppression: list[dict] = []
    allowed = "local_suppression" in spec.search.methods
    violations, risks, suppressed, digits, priced = 0, pd.Series([0.0]), 0, None, ""
    if keys:
        recoded, radices = checked[0] if checked is not None else lattice.digits(node)
        digits, counter = recoded, checked[1] if checked is not None else None
        f = counter.record_counts()[0] if counter is not None else None  # per record, when a counter holds it
        if not is_anonymous:
            suppression.append(suppression_step(k))
            counter = counter or IncrementalCompatibleCounts(recoded, radices)
            if greedy_alone(len(keys)):
                # priced from the node's classes: exactly the values suppress_codes_to_k suppresses
                price = price_local_suppression(counter.table, counter.count, radices, k)
                digits, priced = price.table[counter.record_key], "classes"
                f = price.counter.record_counts()[0][counter.record_key]
            else:
                digits, method = suppress_codes_to_k(recoded, radices, k=k, counter=counter)
                f, priced = counter.record_counts()[0] if method == "greedy" else None, "records"
        if f is not None and lattice.weights is None:
            # without weights F = f, and the counter's whole counts are DuckDB's: not queried again
            violations, risks = _risks(f, f, None, k)
        else:  # in DuckDB, the codes numbered as key_digits numbers the released keys
            violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits) if suppression else
                                                            (digits, radices)), lattice.weight, k)
    threshold = None
    if keys and allowed and violations == 0 and risks.mean() > target:
        # 0 when no risk level brings the global risk under the target (e.g. all risks equal): then
        # no record may keep a risk above the target itself
        threshold = risk.global_risk_threshold(risks, max_global_risk=target).threshold or target
    if threshold:
        step = {"method": "risk_suppression", "threshold": float(threshold),
                **({"weight": lattice.weight} if lattice.weight else {})}
        suppression.append(step)
        frame = risk_suppression(lattice.frame(node, digits), keys, threshold=step["threshold"], weight=lattice.weight)
        digits = np.where(frame[keys].isna().to_numpy(), 0, digits)
        violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits)), lattice.weight, k)
    below_l = None if keys else 0  # records below l, once known for the final digits
    if keys and allowed and lattice.sensitive:
        # the records of key groups that are not l-diverse lose every key value (ARX's record
        # suppression; the suppression limit bounds how many)
        below = codes_below_l(digits, radices, list(lattice.sensitive.values()), l=spec.risk.l,
                              entropy=spec.risk.l_diversity == "entropy")
        if not below.any():
            below_l = 0  # the digits are final: records_below_l would count the same groups again
        else:
            step = {"method": "diversity_suppression", "sensitive": list(lattice.sensitive), "l": spec.risk.l,
                    **({"entropy": True} if spec.risk.l_diversity == "entropy" else {})}
            suppression.append(step)
            try:  # the pool of suppressed records made l-diverse too
                digits = suppress_codes_to_l(digits, radices, lattice.sensitive, l=spec.risk.l,
                                             entropy=spec.risk.l_diversity == "entropy")
            except SDCInputError:  # l unreachable in the whole file: the node fails the l check
                digits = digits.copy()
                digits[below] = 0
            violations, risks = _risks(*lattice.frequencies(*renumbered_digits(digits)), lattice.weight, k)
    changed = []  # the keys the node releases changed: recoded, or with a value suppressed
    suppressed_share, lost_share = 0.0, 0.0
    if keys:
        lost_share = lattice.not_released_share(digits)
        hidden = (digits == 0) & (recoded > 0)
        suppressed = int(np.count_nonzero(hidden))
        suppressed_share = float((hidden.sum(axis=0) / np.maximum((recoded > 0).sum(axis=0), 1)).max())
        if below_l is None:
            below_l = records_below_l(lattice, digits, radices, spec)
        changed = [key for key, level, hit in zip(keys, node, hidden.any(axis=0)) if level > 0 or hit]
    if suppressed or spec.search.loss == "topsis":
        released = data.copy(deep=False)
        for key, values in (lattice.released(node, digits) if keys else {}).items():
            if key in changed:
                released[key] = values
        loss = search_loss(data, released, spec, unchanged=[c for c in data.columns if c not in changed])
    else:
        loss = recode_loss
    global_risk = float(risks.mean())
    plan = node_plan(space, node, suppression, k, None, "node_" + "_".join(map(str, node)))
    return SearchCandidate(
        plan=plan, global_risk=global_risk, k_violations=violations, linkage_risk=np.nan, loss=float(loss),
        suppressed=suppressed, levels=node, l_violations=below_l, suppressed_share=suppressed_share,
        keys_not_released_share=lost_share, suppression_priced=priced,
        reaches_target=(violations == 0 and global_risk <= target and below_l == 0
                        and suppressed_share <= spec.limits.max_suppressed_share + 1e-12
                        and lost_share <= spec.limits.max_keys_not_released + 1e-12),
    )
