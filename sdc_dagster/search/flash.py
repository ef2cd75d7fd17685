"""The traversal of the generalisation lattice: a global optimum proven with predictive tagging and
lower bounds (ARX's Flash, Kohlmayer et al. 2012; SPEC §14.2).

Eligibility (k-anonymity with at most floor(s·n) records suppressed, SPEC §14.2) is monotone: a
generalisation of an eligible node is eligible, a specialisation of an ineligible one is not. One
check therefore tags a whole cone: every generalisation of an eligible node, every specialisation
of an ineligible one. A node found to suppress no record tags its generalisations likewise (they
suppress none either: classes only merge).

The nodes are visited in the order of their prior lower bound (ties: the lower level vector in
lexicographic order first). A node still untagged is settled as Flash does: a path is walked upward
from it through untagged nodes (each step to the successor with the lowest bound), and the
boundary between ineligible and eligible nodes on the path is found by binary search, each check
tagging its cone. An eligible node's value is then computed (from its counts, or without them when
it suppresses no record and the objective allows). The visit stops at the first node whose bound,
with its level vector, is not below the best value found with its level vector: every later node
has a bound at least as high, and a node's value is never below its bound, so the best is then
proven optimal over the whole lattice. A counted node may also raise the bound of all of its
generalisations (objectives with ``counted_bounds``).

With a time budget the visit may stop early: the result is then the best of the nodes checked,
with a lower bound on the optimum (the least bound of the nodes neither settled nor pruned). The
budget is spent by a fixed charge per check (``check_seconds``,
:func:`~sdc_dagster.search.clock.flash_check_charge`), never by reading a clock, so a visit the budget
cuts stops at the same node run to run; the CPU seconds of the process stop it only past
:data:`~sdc_dagster.search.clock.OVERRUN` times the budget, and the outcome says so (``overrun``).

References
----------
Kohlmayer, F., Prasser, F., Eckert, C., Kemper, A. & Kuhn, K. A. (2012), "Flash: efficient, stable
and optimal k-anonymity", *PASSAT/SocialCom 2012*, IEEE, 708-717 (paths, binary search, predictive
tagging). El Emam, K. et al. (2009), "A globally optimal k-anonymity method for the
de-identification of health data", *JAMIA* 16(5), 670-682 (monotonicity with suppression).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sdc_dagster.search.clock import OVERRUN, search_clock
from sdc_dagster.search.lattice import Lattice

UNKNOWN, ELIGIBLE, INELIGIBLE = 0, 1, -1
#: Seconds between two calls of the progress callback.
PROGRESS_SECONDS = 1.0


@dataclass(frozen=True)
class Check:
    """What counting one node's classes tells: ``eligible``; ``suppressed`` the records in classes
    smaller than k; ``value`` the objective's value (eligible nodes); ``counted_bound`` the bound it
    gives its generalisations."""

    eligible: bool
    suppressed: int
    value: float | None
    counted_bound: float


@dataclass(frozen=True)
class Outcome:
    """The best node, its value, the nodes checked, whether the best is proven optimal and a lower
    bound on the optimum (the value itself when proven); ``charged`` the seconds the checks were
    charged (``checked`` x ``check_seconds``) and ``overrun`` whether the CPU clock's guard, not the
    charges, stopped the visit (module docstring)."""

    node: int
    value: float
    checked: int
    optimal: bool
    bound: float
    charged: float = 0.0
    overrun: bool = False


def flash(lattice: Lattice, check: Callable[[int], Check], prior: np.ndarray, *,
          unsuppressed_value: Callable[[float], float | None], counted_bounds: bool,
          budget_seconds: float | None = None, check_seconds: float = 0.0,
          progress: Callable[[int, int, int, float], None] | None = None) -> Outcome:
    """The node of least value among the eligible nodes of ``lattice`` (module docstring).

    Parameters
    ----------
    lattice : the nodes.
    check : counts a node's classes: :class:`Check`.
    prior : per node a lower bound of its value known without counting (the visiting order; the
        visit stops once the next node's bound reaches the best value found).
    unsuppressed_value : the value of a node that suppresses no record, from its prior bound, or
        None when the counts are needed.
    counted_bounds : whether a check's ``counted_bound`` bounds the node's generalisations.
    budget_seconds : stop before the next node once the checks' charges exceed this many seconds
        (None: no limit), or, the guard, once the CPU seconds of the process pass
        :data:`~sdc_dagster.search.clock.OVERRUN` times it (module docstring).
    check_seconds : the charge of one check (:func:`~sdc_dagster.search.clock.flash_check_charge`).
    progress : called with (nodes settled, nodes in all, nodes checked, best value) at most every
        :data:`PROGRESS_SECONDS` and at the end (settled: every node before the current one in
        the visiting order is checked, tagged, valued or pruned).

    Returns
    -------
    :class:`Outcome`; ties between equal values go to the lower level vector in lexicographic order.
    """
    start = search_clock()
    reported = time.perf_counter()
    size = lattice.size
    status = np.zeros(size, dtype=np.int8)
    unsuppressed = np.zeros(size, dtype=bool)
    value = np.full(size, np.nan)
    bound = prior.astype(float).copy()
    best = [np.inf, size]  # (value, node): the best found, compared as a pair
    checked = [0]

    def consider(node: int, v: float) -> None:
        value[node] = v
        if (v, node) < (best[0], best[1]):
            best[0], best[1] = v, node

    def run_check(node: int) -> None:
        result = check(node)
        checked[0] += 1
        if result.eligible:
            cone = lattice.generalisations(node)
            status[cone] = ELIGIBLE
            if result.suppressed == 0:
                unsuppressed[cone] = True
            consider(node, result.value)
        else:
            status[lattice.specialisations(node)] = INELIGIBLE
        if counted_bounds:
            cone = lattice.generalisations(node)
            bound[cone] = np.maximum(bound[cone], result.counted_bound)

    def settle(node: int) -> None:
        path, current = [node], node
        while True:
            open_successors = [s for s in lattice.successors(current) if status[s] == UNKNOWN]
            if not open_successors:
                break
            current = min(open_successors, key=lambda s: (bound[s], s))
            path.append(current)
        low, high = 0, len(path)
        while low < high:
            middle = (low + high) // 2
            if status[path[middle]] == UNKNOWN:
                run_check(path[middle])
            if status[path[middle]] == ELIGIBLE:
                high = middle
            else:
                low = middle + 1

    order = np.lexsort((np.arange(size), prior))
    stopped_at, overrun = None, False
    for position, node in enumerate(order.tolist()):
        if (prior[node], node) >= (best[0], best[1]):
            break
        if budget_seconds is not None:
            overrun = (checked[0] * check_seconds <= budget_seconds
                       and search_clock() - start > OVERRUN * budget_seconds)
            if checked[0] * check_seconds > budget_seconds or overrun:
                stopped_at = position
                break
        now = time.perf_counter()
        if progress is not None and now - reported > PROGRESS_SECONDS:
            progress(position, size, checked[0], best[0])
            reported = now
        if (bound[node], node) >= (best[0], best[1]) or status[node] == INELIGIBLE or not np.isnan(value[node]):
            continue
        if status[node] == UNKNOWN:
            settle(node)
        if status[node] == INELIGIBLE or not np.isnan(value[node]):
            continue
        known = unsuppressed_value(float(prior[node])) if unsuppressed[node] else None
        if known is not None:
            consider(node, known)
        else:
            run_check(node)
    if stopped_at is None:
        if progress is not None:
            progress(size, size, checked[0], best[0])
        return Outcome(best[1], best[0], checked[0], True, best[0], checked[0] * check_seconds)
    if best[1] == size:  # nothing eligible checked yet: the top node is (one class of all n >= k records)
        run_check(size - 1)
    rest = order[stopped_at:]
    still_open = rest[(status[rest] != INELIGIBLE) & np.isnan(value[rest])]
    lowest = float(bound[still_open].min()) if len(still_open) else np.inf
    if progress is not None:
        progress(stopped_at, size, checked[0], best[0])
    return Outcome(best[1], best[0], checked[0], False, min(best[0], lowest), checked[0] * check_seconds, overrun)
