"""The clocks the plan search's budget (``search.budget_seconds``) is counted on: the CPU seconds of
this process (:func:`search_clock`), and for the lattice walk a deterministic charge per node
(:func:`node_charge`).

A budget counted in wall-clock seconds makes the search's result depend on the machine's load: with
two files searched side by side on two cores, each search gets half the wall time's work done and
releases the coarser plan it had when the time ran out (issue 38: "Search results are identical run
to run"). The CPU time of the process counts only the work the search itself did, so other
processes on the machine (other waves, other users, a busy test runner) no longer change which
nodes the search evaluated before its budget ended. It sums the CPU time of every thread of the
process (DuckDB's workers, the linkage checks' two threads), so the budget measures the work done,
however many cores did it.

CPU time itself still varies from run to run (caches, frequency scaling, the load: memory-bound code
takes more CPU seconds on a busy machine), and a walk whose evaluations run in worker processes
spends other CPU seconds (the workers' start-up, the data sent to them) than one that runs them
itself: a walk cut by CPU seconds took 45 nodes in two processes and 46 in one on ARX's adult file.
So the walk (:class:`~sdc_dagster.search.walk.LatticeWalk`) does not read a clock to decide where it
stops: **each node it visits is charged a number of seconds fixed by what the walk does to it and the
wave's size** (:func:`node_charge`: records x keys x a rate per kind of work, measured once on the
reference machine and recorded here), and the walk stops before the first node at which the charges
of the nodes visited exceed its share of the budget. The same nodes are therefore taken, in the same
order, whatever the timing, the load and the number of worker processes: run to run and across
``search.workers``, a walk the budget cuts evaluates the same nodes and says "best of N checked,
bound B" with the same N and B. The price: the budget is the reference machine's seconds (a faster
processor does the same nodes in less time, a slower one in more), and a wave on which a kind of
work costs far more per record than the rates say runs over its share. Against that the walk also
stops when its CPU seconds (this process's, and those workers spent on its evaluations) pass
:data:`OVERRUN` times its share: a guard that only a charge far below the real cost reaches, and
the bound then says that the CPU clock stopped the walk (no longer a deterministic cut).

The stages outside the walk run in this process whatever the number of workers and stay on the CPU
clock: Flash before the walk (its checks cost about a millisecond; its own share of the budget cuts
it only on very large lattices) and the confirmation of the front after it, which counts the walk as
charged, not as it ran (:meth:`~sdc_dagster.search.walk.LatticeWalk.elapsed`: the CPU seconds of the
walk in this process, the workers' start-up and the data sent to them included, are replaced by its
charges), so that it starts from the same point with one worker or several. What can still move with
the timing, run to run but not with the number of workers: the confirmation's cut, a walk again
after the front failed the release checks (its allowance is what is left of the budget when it
begins) and the search again with each key's top (its budget is what the first search left). A
search that proves its optimum (by its loss bound or by evaluating every node) depends on no clock.
Progress lines and the ``seconds`` a search reports stay on the wall clock (they decide nothing).
"""

from __future__ import annotations

import time

#: The walk's guard (module docstring): it also stops when its CPU seconds pass this many times its
#: share of the budget.
OVERRUN = 2.0


def search_clock() -> float:
    """Seconds of CPU time of this process (:func:`time.process_time`): the clock the plan search's
    stages outside the walk count their budget on (``search.budget_seconds``; module docstring)."""
    return time.process_time()


#: The walk's charges (:func:`node_charge`), in CPU seconds per record and key of the wave, measured
#: on the 2-core machine of ``benchmarks/plan_search.py`` (issue 38): a node's k-anonymity checked by
#: local suppression's counter (missing key values; about 1e-8 on the 200,000-record wave, 7 keys) ...
CHECK_SECONDS_PER_CELL = 1e-8

#: ... a node evaluated without suppression (its risk and recode-only loss; 1.4e-8 to 1.8e-8 there) ...
PLAIN_SECONDS_PER_CELL = 1.5e-8

#: ... and a node evaluated with local suppression (its classes suppressed to k, the risk and the loss
#: of the suppressed keys again: about 0.35 s a node on ARX's adult file, 30,162 records and 8 keys,
#: its hierarchies, k = 3 and l = 2, once compatible counts follow the suppressions incrementally
#: (192 nodes in 67 s; 0.8 s, 3.3e-6, before); 1e-6 on sdcMicro's testdata). The larger figure: a
#: walk charged more than it costs stops early, never late.
SUPPRESSION_SECONDS_PER_CELL = 1.5e-6


def node_charge(effect: str, evaluated: bool, suppresses: bool, records: int, keys: int) -> float:
    """The seconds a node visited by the plan search's walk is charged on its budget: a pure function
    of the node's check and the wave's size, never of the time it took (module docstring).

    ``effect``: how the walk checked the node (``"anonymous"`` or ``"not_anonymous"``: by local
    suppression's counter, :data:`CHECK_SECONDS_PER_CELL`; tagged, or settled by its rolled-up
    classes, which cost no pass over the records: nothing); ``evaluated``: the node is evaluated,
    with local suppression when ``suppresses`` (:data:`SUPPRESSION_SECONDS_PER_CELL`) or without
    (:data:`PLAIN_SECONDS_PER_CELL`). Each rate is per record and key of the wave (``records`` x
    ``keys``, at least one key)."""
    cells = records * max(keys, 1)
    charge = cells * CHECK_SECONDS_PER_CELL if effect in ("anonymous", "not_anonymous") else 0.0
    if evaluated:
        charge += cells * (SUPPRESSION_SECONDS_PER_CELL if suppresses else PLAIN_SECONDS_PER_CELL)
    return charge
