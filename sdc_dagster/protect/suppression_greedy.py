"""The greedy algorithm of local suppression to k-anonymity on coded keys (SPEC §8.3, §2.4), and
the choice between it and sdcMicro's algorithm (method "auto");
:func:`~sdc_dagster.protect.suppression.local_suppression` runs them per stratum and key subset.

Every count comes from the one §2.4 counter,
:class:`sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts`; the algorithms re-count every
record after each step and continue until none is unsafe (a record whose last value is suppressed
can make a complete record unsafe again, §2.4).

Greedy algorithm for k-anonymity
--------------------------------
For every unsafe record the candidate *suppression sets* (non-empty subsets of its present keys)
are tried in increasing cost; the first one after which the record's f is >= k is chosen.

* With ``importance`` given, the cost is lexicographic in importance, as in sdcMicro: any number
  of less important keys is suppressed before one more important key (cost sum 2^rank, rank 0 =
  least important). sdcMicro's ``localSuppression`` reaches the same preference by suppressing,
  pass after pass, the least important key in which an unsafe record differs from its nearest
  records.
* Without ``importance`` the cost is first the number of values suppressed, then the same
  lexicographic order with sdcMicro's default importance (fewer categories = more important, ties
  in key order).

The sets form *tiers*: by number of keys without importance; with importance every set is a tier
of its own (the strict order; beyond 7 keys, to bound the number of probe counts, the sets with
the same most important key form a tier). A tier's sets are evaluated together (one probe count per batch),
the chosen sets are applied and every record is re-counted, so later tiers see the earlier
suppressions; after a tier that changed anything the search starts again from the cheapest tier.
Records that would receive the same key after suppression form a *block*: suppressing the records
of one combination t adds them to every other combination of the block, so only the riskiest
combinations (lowest f) are suppressed, as many as needed for the others to reach k.
Suppressing every present key gives f = n >= k, so every unsafe record has a candidate and the
loop terminates (sdcMicro issue #184).

Choosing the algorithm (``method="auto"``, the default; issue 23)
-----------------------------------------------------------------
Up to 8 keys the greedy lists every suppression set and wins on the golden cases (testdata k = 2 / 3
/ 5: 105 / 182 / 317 suppressions against sdcMicro's 157 / 293 / 500); it is used alone, so these
results are those of ``method="greedy"``. Beyond 8 keys it lists only the smallest sets, and on
wide, nearly unique keys it falls back to suppressing whole records (2,000 records x 12 uniform
keys of 3 values, k = 3: 21,747 suppressions in 34 s, sdcMicro's algorithm 4,580 in 1 s), while on
skewed keys it still wins. There both run, the greedy within ``_AUTO_GREEDY_PROBES_PER_RECORD``
probe rows per record (a count, so the choice is the same on every machine), and the result with
fewer suppressed values is kept (the greedy on ties). The choice is made per stratum and key subset
and reported in ``result.attrs["local_suppression_method"]``.

References
----------
Templ, Kowarik & Meindl (2015), sdcMicro, J. Stat. Softw. 67(4), §3.3 (local suppression);
sdcMicro 5.8.1 ``R/localSuppression.R`` (``suppSubset``). Hundepool et al. (2012), §3.4.3.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np

from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.keys import pack_codes
from sdc_dagster.protect.suppression_sdcmicro import sdcmicro_suppress_to_k

# Suppression sets enumerated per record at most (beyond: the cheapest ones, then all present keys).
_MAX_SETS = 256
# With importance, sets are tried one by one in strict order up to this many sets (7 keys), in
# tiers by their most important key beyond (fewer probe counts).
_STRICT_ORDER_SETS = 127
# Probe rows evaluated per batch of suppression sets.
_BATCH_PROBES = 400_000
# method "auto": beyond this many keys the greedy lists only the smallest suppression sets and can
# fail badly on wide, nearly unique keys; there both methods run, the greedy within this many probe
# rows per record (a count of work, so the choice does not depend on the machine's speed).
_AUTO_ALL_SETS_KEYS = 8
_AUTO_GREEDY_PROBES_PER_RECORD = 100


class _BudgetExceeded(Exception):
    """The greedy of method "auto" used up its probe budget."""


def _bits(masks: np.ndarray, m: int) -> np.ndarray:
    """(len(masks), m) boolean array: bit j of each mask."""
    return ((np.asarray(masks, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)) & 1).astype(bool)


def _present_masks(digits: np.ndarray) -> np.ndarray:
    """Per row, the bit mask of its present (non-missing) keys."""
    return (digits > 0).astype(np.int64) @ (np.int64(1) << np.arange(digits.shape[1], dtype=np.int64))


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Dense ids of identical rows (non-negative integers, missing codes included), numbered in the
    lexicographic order of the rows (``np.unique(rows, axis=0)``'s): each row packed into one int64
    code in that order (:func:`~sdc_dagster.keys.pack_codes`, the first column most significant), a
    1-d unique being much faster than a 2-d one."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    (code,) = pack_codes([rows.astype(np.int64, copy=False)], rows.max(axis=0).astype(np.int64) + 1)
    _, inverse = np.unique(code, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def _choose_in_blocks(block: np.ndarray, combo: np.ndarray, fk: np.ndarray, k: int,
                      records: np.ndarray | None = None) -> np.ndarray:
    """Which candidates to suppress so that every unsafe candidate of each block reaches k.

    Within a block (same key once the candidate keys are suppressed), suppressing the records of
    combination t makes them compatible with every other combination of the block, adding n_t to
    their fk (SPEC §2.4). Combinations are taken by increasing fk; the shortest prefix after which
    every remaining combination has fk + (records suppressed) >= k is suppressed (all of them when
    none qualifies; each suppressed record then has at least k by the choice of its set).
    ``records``: the records each candidate row stands for (a frequency table's counts), None for one.
    """
    pair = _row_ids(np.column_stack([block, combo]))
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    size = np.bincount(pair, weights=records, minlength=n_pairs)
    pair_block = np.zeros(n_pairs, dtype=np.int64)
    pair_block[pair] = block
    pair_fk = np.zeros(n_pairs, dtype=np.float64)
    pair_fk[pair] = fk  # identical rows share their fk
    order = np.lexsort((np.arange(n_pairs), pair_fk, pair_block))
    sorted_block = pair_block[order]
    starts = np.r_[True, sorted_block[1:] != sorted_block[:-1]]
    block_start = np.maximum.accumulate(np.where(starts, np.arange(n_pairs), 0))
    inclusive = np.cumsum(size[order])
    exclusive = inclusive - size[order] - np.where(block_start > 0, inclusive[block_start - 1], 0)
    position = np.arange(n_pairs) - block_start
    feasible_keep = pair_fk[order] + exclusive >= k
    first_kept = np.full(n_pairs, np.iinfo(np.int64).max)
    np.minimum.at(first_kept, sorted_block, np.where(feasible_keep, position, np.iinfo(np.int64).max))
    suppress_sorted = position < first_kept[sorted_block]
    suppress_pair = np.zeros(n_pairs, dtype=bool)
    suppress_pair[order] = suppress_sorted
    return suppress_pair[pair]


def _candidate_sets(ranks: np.ndarray, lexicographic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Suppression sets (key bit masks) from the cheapest to the dearest, and the tier of each
    (module docstring).

    At most ``_MAX_SETS``: with many keys only the sets of the smallest sizes are listed (records
    none of them helps lose all their present keys).
    """
    m = len(ranks)
    sizes = np.arange(1, m + 1)
    if (1 << m) - 1 > _MAX_SETS:
        listed = np.cumsum([comb(m, s) for s in sizes])
        sizes = sizes[: max(1, int(np.searchsorted(listed, _MAX_SETS, side="right")))]
        masks = np.array(
            [sum(1 << j for j in c) for s in sizes for c in combinations(range(m), s)],
            dtype=np.int64,
        )
    else:
        masks = np.arange(1, 1 << m, dtype=np.int64)
    bits = _bits(masks, m)
    lexicographic_cost = bits.astype(np.int64) @ (np.int64(1) << ranks)
    if lexicographic:
        order = np.argsort(lexicographic_cost, kind="stable")
        if len(masks) <= _STRICT_ORDER_SETS:
            tier = np.arange(len(masks))  # strict order: every set is a tier of its own
        else:
            tier = np.where(bits, ranks[None, :], -1).max(axis=1)
    else:
        order = np.lexsort((lexicographic_cost, bits.sum(axis=1)))
        tier = bits.sum(axis=1)
    return masks[order], tier[order]


def _suppress_batch(counter, unsafe, fk, sets, k) -> int:
    """Try ``sets`` (in order) on the ``unsafe`` records (current f ``fk``); apply the first set that
    makes each record safe, within blocks (:func:`_choose_in_blocks`). Returns the records changed.
    """
    m = counter.digits.shape[1]
    rows = counter.digits[unsafe]
    present = _present_masks(rows)
    usable = (sets[None, :] & ~present[:, None]) == 0  # set within the record's present keys
    record, which = np.nonzero(usable)
    if len(record) == 0:
        return 0
    probes = np.where(_bits(sets[which], m), 0, rows[record])
    f, _ = counter.probe_counts(probes)
    ok = f >= k
    # first admissible set per record, in the batch order (np.nonzero is row-major)
    record, which, probes = record[ok], which[ok], probes[ok]
    if len(record) == 0:
        return 0
    first = np.r_[True, record[1:] != record[:-1]]
    record, which, probes = record[first], which[first], probes[first]
    hit = _choose_in_blocks(
        _row_ids(np.column_stack([probes, sets[which]])), _row_ids(rows[record]), fk[record], k,
        counter.multiplicity[unsafe[record]],
    )
    hit |= ~probes.any(axis=1)  # an all-missing key is not added to complete keys: no block rule
    counter.set_missing(unsafe[record[hit]], sets[which[hit]])
    return int(hit.sum())


def greedy_alone(keys: int) -> bool:
    """Whether method "auto" runs the greedy alone on this many keys (at most
    ``_AUTO_ALL_SETS_KEYS``, module docstring): its result is then the greedy's."""
    return keys <= _AUTO_ALL_SETS_KEYS


def auto_suppress_to_k(digits, radices, ranks, k: int, lexicographic: bool,
                        counter: IncrementalCompatibleCounts | None = None) -> tuple[np.ndarray, str]:
    """Method "auto" (module docstring): digits after suppression and the method that gave them
    (``counter``: as :func:`greedy_suppress_to_k` takes it)."""
    if greedy_alone(len(ranks)):
        return greedy_suppress_to_k(digits, radices, ranks, k, lexicographic, counter=counter), "greedy"
    theirs = sdcmicro_suppress_to_k(digits, radices, ranks, k)
    try:
        ours = greedy_suppress_to_k(digits, radices, ranks, k, lexicographic,
                              probe_budget=_AUTO_GREEDY_PROBES_PER_RECORD * len(digits), counter=counter)
    except _BudgetExceeded:
        return theirs, "sdcmicro"
    # fewer suppressed values wins, the greedy on ties
    if ((theirs == 0) & (digits > 0)).sum() < ((ours == 0) & (digits > 0)).sum():
        return theirs, "sdcmicro"
    return ours, "greedy"


def greedy_suppress_to_k(digits, radices, ranks, k: int, lexicographic: bool, probe_budget: int | None = None,
                   counter: IncrementalCompatibleCounts | None = None) -> np.ndarray:
    """Digits after the greedy suppression of the module docstring: every record's fk >= k. With
    ``probe_budget``, :class:`_BudgetExceeded` is raised once more probe rows would be counted.
    ``counter``: the :class:`IncrementalCompatibleCounts` of ``digits`` when the caller has it
    (its counts are not computed again; it is changed)."""
    spent = 0
    counter = IncrementalCompatibleCounts(digits, radices) if counter is None else counter
    sets, tiers = _candidate_sets(ranks, lexicographic=lexicographic)
    tier_bounds = np.flatnonzero(np.r_[True, tiers[1:] != tiers[:-1], True])
    f, _ = counter.record_counts()
    while (f < k).any():
        changed, tier = 0, 0
        while tier < len(tier_bounds) - 1 and (f < k).any():
            tier_changed, start, stop = 0, tier_bounds[tier], tier_bounds[tier + 1]
            while start < stop and (f < k).any():
                unsafe = np.flatnonzero(f < k)
                batch = sets[start : min(stop, start + max(1, _BATCH_PROBES // len(unsafe)))]
                spent += len(unsafe) * len(batch)
                if probe_budget is not None and spent > probe_budget:
                    raise _BudgetExceeded
                changed_now = _suppress_batch(counter, unsafe, f[unsafe], batch, k)
                if changed_now:
                    f, _ = counter.record_counts()
                tier_changed += changed_now
                start += len(batch)
            changed += tier_changed
            # after a productive tier, cheaper sets may help again: start over from the cheapest
            tier = 0 if tier_changed else tier + 1
        if not changed:
            # no listed set helps (only when many keys shorten the list): suppress every present key
            unsafe = np.flatnonzero(f < k)
            counter.set_missing(unsafe, _present_masks(counter.digits[unsafe]))
            f, _ = counter.record_counts()
    return counter.digits
