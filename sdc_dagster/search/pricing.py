"""Local suppression of a node priced from its frequency table (issue 38): the key values local
suppression to k-anonymity suppresses (SPEC §8.3; sdcMicro's ``localSuppression`` with its default
importance, fewer categories more important), computed on the node's equivalence classes with their
counts instead of on its records.

Why it is exact. The greedy algorithm of :mod:`sdc_dagster.protect.suppression_greedy` treats
records with the same key values alike: a record's suppression set is the first one in cost order
after which its frequency reaches k, a function of its key values and the counts; within a block
the combinations are taken whole, by increasing frequency, the sizes counted in records; and
every frequency is SPEC §2.4's compatible count of the distinct keys with their record counts
(:class:`~sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts`). Run on the node's
classes, each a row standing for its count of records (the counter's ``multiplicity``), it makes
the same choices, so the suppressed key of each class is that of each of its records, and the
values suppressed are exactly those of :func:`~sdc_dagster.protect.suppression.suppress_codes_to_k`
on the records (tested against it and against ``local_suppression`` on every node of random
lattices, tests/search/test_pricing.py). The work then grows with the classes, not the records
(sdcMicro's testdata, 4,580 records: the plan search's 26 evaluations 24 -> 0.9 CPU s). Where a
node's classes are rolled up from the records counted once
(:class:`~sdc_dagster.search.coded.RolledCounts`) the price needs no pass over the records at all
(the tests price every node so); the plan search's evaluation
(:func:`~sdc_dagster.search.nodes.evaluate_node`) prices the classes of the node's key digits and
maps them back to the records, whose frequencies, risk and loss it needs anyway.

Where it is not. With more keys than
:func:`~sdc_dagster.protect.suppression_greedy.greedy_alone` allows (8), local suppression's
method "auto" also runs sdcMicro's algorithm (:func:`~sdc_dagster.protect.suppression_sdcmicro.sdcmicro_suppress_to_k`),
which visits records one by one (identical records can end differently), and keeps the result
with fewer values suppressed. There the price is a bound: the greedy on the classes, an upper
bound of what "auto" suppresses whenever its greedy stays within its probe budget (auto keeps
the lesser of the two), and the plan search runs local suppression on the records
(:func:`~sdc_dagster.search.nodes.evaluate_node`).

References
----------
Templ, Kowarik & Meindl (2015), sdcMicro, J. Stat. Softw. 67(4), §3.3 (local suppression, the
importance of the keys); Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4.3;
Kohlmayer et al. (2012), Flash (frequency tables rolled up rather than recounted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdc_dagster.protect.suppression import default_ranks
from sdc_dagster.protect.suppression_greedy import greedy_alone, greedy_suppress_to_k
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts


@dataclass(frozen=True)
class SuppressionPrice:
    """Local suppression to k of a node's classes: ``values`` the key values suppressed per key
    (records, each class counting its records), ``exact`` whether they are exactly those local
    suppression suppresses in the records (module docstring; else the greedy's, a bound), ``table``
    the classes' key digits after suppression (0 = suppressed or missing) and ``counter`` the
    frequency counter of the classes after it (its :meth:`record_counts` are the classes' f)."""

    values: np.ndarray
    exact: bool
    table: np.ndarray
    counter: IncrementalCompatibleCounts

    @property
    def total(self) -> int:
        """Key values suppressed in all."""
        return int(self.values.sum())


def price_local_suppression(table: np.ndarray, counts: np.ndarray, radices: np.ndarray, k: int) -> SuppressionPrice:
    """The key values local suppression to k-anonymity suppresses in a node whose classes are the
    rows of ``table`` (key digits as :func:`~sdc_dagster.keys.key_digits` numbers them, 0 missing)
    holding ``counts`` records (module docstring; SPEC §8.3, §2.4); ``radices`` the keys' radices
    (categories + 1, the categories giving sdcMicro's default importance)."""
    table = np.asarray(table, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.float64)
    ranks = default_ranks(np.asarray(radices) - 1)
    counter = IncrementalCompatibleCounts(table, radices, multiplicity=counts)
    after = greedy_suppress_to_k(table, radices, ranks, int(k), lexicographic=False, counter=counter)
    values = (((after == 0) & (table > 0)) * counts[:, None]).sum(axis=0).round().astype(np.int64)
    return SuppressionPrice(values, greedy_alone(table.shape[1]), after, counter)
