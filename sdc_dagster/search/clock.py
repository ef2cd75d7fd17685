"""The clock the plan search's budget is counted on: the CPU seconds of this process
(:func:`time.process_time`), not the wall clock.

A budget counted in wall-clock seconds makes the search's result depend on the machine's load: with
two files searched side by side on two cores, each search gets half the wall time's work done and
releases the coarser plan it had when the time ran out (issue 38: "Search results are identical run
to run"). The CPU time of the process counts only the work the search itself did, so other
processes on the machine (other waves, other users, a busy test runner) no longer change which
nodes the search evaluated before its budget ended. It sums the CPU time of every thread of the
process (DuckDB's workers, the linkage checks' two threads), so the budget measures the work done,
however many cores did it.

What remains machine-dependent: a faster processor does more work per CPU second (the budget is the
user's intent in time, ``search.budget_seconds``), and CPU time itself varies by a few per cent from
run to run (caches, frequency scaling), which can move the node at which a search stops only when
the budget ends the search; a search that proves its optimum (by its loss bound or by evaluating
every node) does not depend on it. Progress lines and the ``seconds`` a search reports stay on the
wall clock (they decide nothing).
"""

from __future__ import annotations

import time


def search_clock() -> float:
    """Seconds of CPU time of this process (:func:`time.process_time`): the clock every budget of
    the plan search (``search.budget_seconds``) is counted on (module docstring)."""
    return time.process_time()
