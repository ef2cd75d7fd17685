"""The clock the plan search's budget (``search.budget_seconds``) is counted on: **deterministic
charges**, a number of seconds fixed by what each stage does and the wave's size, never the time it
took (issue 38: "Search results are identical run to run and across worker counts"), with the CPU
seconds of this process (:func:`search_clock`) only as a safety net.

Why no clock. A budget counted in wall-clock seconds makes the result depend on the machine's load
(two files searched side by side on two cores each get half the work done and release the coarser
plan they had when the time ran out). CPU seconds of the process do not count other processes, but
still vary from run to run (caches, frequency scaling, memory-bound code on a busy machine), and a
walk whose evaluations run in worker processes spends other CPU seconds (the workers' start-up, the
data sent to them) than one that runs them itself: a walk cut by CPU seconds took 45 nodes in two
processes and 46 in one on ARX's adult file. So no stage of the search reads a clock to decide where
it stops; each unit of work is charged a fixed price:

* **a node the lattice walk visits** (:class:`~sdc_dagster.search.walk.LatticeWalk`):
  :func:`node_charge`, records x keys x a rate per kind of work (:data:`CHECK_SECONDS_PER_CELL`,
  :data:`PLAIN_SECONDS_PER_CELL`, :data:`SUPPRESSION_SECONDS_PER_CELL`); the walk stops before the
  first node at which the charges of the nodes visited exceed its share of the budget (its
  ``allowance``; a walk again after the front failed the release checks gets what is left of its
  share and of the budget, both counted in charges);
* **a node Flash checks by its classes** (:func:`~sdc_dagster.search.flash.flash`, in the plan
  search's :func:`~sdc_dagster.search.nodes.flash_node` and :func:`~sdc_dagster.search.nodes.wider_cap`
  and in :func:`~sdc_dagster.search.generalisation.optimal_generalisation`): :func:`flash_check_charge`,
  a fixed part and the records' own combinations x keys x a rate (:data:`FLASH_CHECK_SECONDS`,
  :data:`FLASH_SECONDS_PER_CELL`); Flash stops before the next node once its checks' charges exceed
  its budget;
* **a plan run by the confirmation of the front** (:func:`~sdc_dagster.search.ladder.confirm_front`:
  the plan protected, its release checks and its loss): :func:`plan_run_charge`, a fixed part and
  records x keys x a rate (:data:`RUN_SECONDS`, :data:`RUN_SECONDS_PER_CELL`); a run is started
  only when its charge fits in what the charges so far left of the budget.

The search's seconds spent (:meth:`~sdc_dagster.search.walk.LatticeWalk.elapsed`) are the sum of
these charges, so every later stage starts from the same point whatever the timing: the walk again
after the front failed (its allowance), the search again with each key's top (its budget is what
the first search's charges left), the confirmation's cut, and the relaxed searches of "what it
would take" (:func:`~sdc_dagster.pipeline.relaxations.what_it_would_take`: each closest plan replayed
charged as a plan run, each search what it charged, ``WaveSearch.charged``). A search the budget cuts therefore
takes the same nodes, checks the same plans and says "best of N checked, bound B" with the same N
and B, run to run and with any number of worker processes (``search.workers``); a search that
proves its optimum (by its loss bound or by evaluating every node) depends on no clock at all.
Each rate was measured once on the 2-core machine of ``benchmarks/plan_search.py`` and is recorded
below with its measurement; where the measurements spread, the larger figure is taken: a stage
charged more than it costs stops early, never late.

The price: the budget is the reference machine's seconds (a faster processor does the same work in
less time, a slower one in more), and a wave on which some work costs far more than its rate says
runs over. Against that each stage also stops when its own CPU seconds (this process's since the
stage began and, for the walk, those workers spent on its evaluations) pass :data:`OVERRUN` times
the budget it began with (:meth:`~sdc_dagster.search.walk.LatticeWalk.begin_stage`; Flash: its
``budget_seconds``): a guard that only a charge far below the real cost reaches, and the result then
says that the CPU clock stopped that stage (the walk's bound, "the CPU clock's guard stopped ..."
in :attr:`WaveSearch.bound <sdc_dagster.search.outcome.WaveSearch>`,
:attr:`Generalisation.clock_stopped <sdc_dagster.search.generalisation.Generalisation>`): no longer a
deterministic cut. The small files' evaluations cost more than their charges (a node evaluated
without suppression costs 1.5 to 3 ms on 800 records and 4 keys, charged 0.05 ms), so a budget of a
fraction of a second can reach the guard on them; a budget of minutes never does.

What is not deterministic, and decides nothing: the coding of the data and the counting of the
lattice before the stages (done once whatever the budget, not charged), when ``workers: auto``
starts its processes (after :data:`~sdc_dagster.search.parallel.PAYS_SECONDS` CPU seconds of
evaluations: the walk takes the same nodes either way), the progress lines and the ``seconds`` a
search reports (the wall clock), and the guard above when it fires.
"""

from __future__ import annotations

import time

#: The guard of every stage (module docstring): it also stops when its CPU seconds pass this many
#: times the budget it began with (the walk: its allowance; Flash: its ``budget_seconds``).
OVERRUN = 2.0


def search_clock() -> float:
    """Seconds of CPU time of this process (:func:`time.process_time`): the guard of the stages, never
    what decides where a budget cuts (module docstring)."""
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


#: The charge of one node Flash checks (:func:`flash_check_charge`): a fixed part ...
FLASH_CHECK_SECONDS = 5e-4

#: ... and one per combination of the records' own key values and key (the classes a check rolls up
#: are at most those). Measured with :func:`~sdc_dagster.search.generalisation.optimal_generalisation`
#: on ARX's adult file (9 keys, their hierarchies, k = 5; 19,502 combinations in its 30,162 records,
#: 7,881 in its first 10,000): 0.44 ms a check without suppression (113 checks), 0.72 ms with 5 %
#: record suppression (601 checks), 1.0 ms with the discernibility metric (3,168 checks), 0.45 to
#: 0.78 ms on the 10,000 records; the plan search's Flash on sdcMicro's testdata (4,580 records,
#: 7 keys): 0.16 to 0.36 ms. A fixed 0.5 ms and 3e-9 s per combination and key cover each figure
#: within 10 % (1.03 ms on the whole file, 0.71 ms on the 10,000 records).
FLASH_SECONDS_PER_CELL = 3e-9


def flash_check_charge(combinations: int, keys: int) -> float:
    """The seconds one node Flash checks (:func:`~sdc_dagster.search.flash.flash`: its classes rolled
    up from a counted specialisation, its eligibility and value) is charged on Flash's budget: a
    pure function of the lattice's data, never of the time it took (module docstring):
    :data:`FLASH_CHECK_SECONDS` + ``combinations`` (the distinct combinations of the records' own
    key values, the most classes a check rolls up) x ``keys`` x :data:`FLASH_SECONDS_PER_CELL`."""
    return FLASH_CHECK_SECONDS + combinations * max(keys, 1) * FLASH_SECONDS_PER_CELL


#: The charge of one plan the confirmation of the front runs (:func:`plan_run_charge`): a fixed
#: part ...
RUN_SECONDS = 0.08

#: ... and one per record and key of the wave. Measured on the plan runs of
#: :func:`~sdc_dagster.search.ladder.confirm_front` (the plan protected, its release checks, its
#: loss): sdcMicro's testdata, 4,580 records, 7 categorical keys, 0.04 to 0.12 s a run (2 runs); with
#: income and expenditure as continuous keys (9 keys), 0.02 to 0.33 s (26 runs: microaggregation,
#: rank swapping, noise, rounding, top coding, bands, a key withheld); sdcMicro's CASCrefmicrodata
#: (1,080 records, 5 continuous keys) 0.07 to 0.11 s, Tarragona (834 records, 5 keys) 0.06 to
#: 0.09 s, EIA (4,092 records, 5 keys) 0.04 s. A fixed 0.08 s and 3e-6 s per record and key cover
#: them but the first run of the testdata (0.33 s, the ladder's recodes protected once for its
#: attempts) and the largest runs of the two small files (0.09 and 0.11 s against 0.09 and 0.10).
#: On larger files they are above the cost: ARX's adult file with 6 categorical keys, 0.18 s a run
#: on its first 10,000 records (charged 0.26 s), 0.29 to 0.42 s on all 30,162 (charged 0.62 s).
RUN_SECONDS_PER_CELL = 3e-6


def plan_run_charge(records: int, keys: int) -> float:
    """The seconds one plan run by the confirmation of the front (:func:`~sdc_dagster.search.ladder.confirm_front`:
    protected, its release checks and its loss) is charged on the search's budget, a pure function
    of the wave's size, never of the time it took (module docstring): :data:`RUN_SECONDS` +
    ``records`` x ``keys`` (categorical and continuous) x :data:`RUN_SECONDS_PER_CELL`."""
    return RUN_SECONDS + records * max(keys, 1) * RUN_SECONDS_PER_CELL
