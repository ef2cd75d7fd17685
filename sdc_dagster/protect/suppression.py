"""Local suppression to k-anonymity and to an individual-risk threshold (SPEC §8.3, §2.4, §3.2).

Suppressed key values become missing, and a missing value matches any value in later frequency
counts (SPEC §2.4, sdcMicro ``freqCalc``). Every count here comes from the one §2.4 counter,
:class:`sdc_dagster.incremental_counts.IncrementalCompatibleCounts` (the counts of
``risk.key_frequencies`` and ``risk.k_anonymity_violations``), so "safe" means the same for the
algorithm, the risk measures and the asset checks.

Suppression mostly only adds compatible records, with one exception of §2.4: a key missing in
every variable is not counted for complete keys. A record whose last value is suppressed can
therefore make a complete record unsafe again; the algorithms re-count every record after each
step and continue until none is unsafe, which is what guarantees the result.

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

Strata and key subsets (sdcMicro ``strataVars`` and ``combs``)
--------------------------------------------------------------
With strata every stratum is coded and suppressed on its own, exactly as if it were the whole data
(the default importance is counted once, on the whole data, as sdcMicro does), and the results are
put back in record order. With ``combs`` the greedy algorithm runs on the columns of every key
subset of each size in turn, with that size's k; passes over all targets repeat until none changes
anything. sdcMicro 5.8.1 reaches the same targets with more suppressions on its golden cases
(a_*, b_* in ``tests/data/sdcmicro/golden_parity``: 117 -> 102, 118 -> 83, 293 -> 183 with strata;
72 -> 63, 79 -> 63, 95/96 -> 73, 81 -> 66 with combs); with strata and combs together its
data.frame method also misses targets (golden README, note 1), which does not happen here.

sdcMicro's own algorithm (``method="sdcmicro"``)
-----------------------------------------------
A transcription of sdcMicro 5.8.1's ``suppSubset``, record for record, in
:mod:`sdc_dagster.protect.suppression_sdcmicro`; the targets, strata and passes are those above.

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

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.frequencies import distinct_digit_keys
from sdc_dagster.keys import category_codes, check_mask_width, key_digits, pack_codes
from sdc_dagster.protect.strata import stratum_codes, stratum_members
from sdc_dagster.protect.suppression_sdcmicro import sdcmicro_suppress_to_k
from sdc_dagster.risk.categorical import risk_from_frequencies
from sdc_dagster.risk.diversity import group_l_diversity
from sdc_dagster.validation import check_option, check_scalar, weight_values

# Suppression sets enumerated per record at most (beyond: the cheapest ones, then all present keys).
_MAX_SETS = 256
# With importance, sets are tried one by one in strict order up to this many sets (7 keys), in
# tiers by their most important key beyond (fewer probe counts).
_STRICT_ORDER_SETS = 127
# Probe rows evaluated per batch of suppression sets.
_BATCH_PROBES = 400_000
LOCAL_SUPPRESSION_METHODS = ("auto", "greedy", "sdcmicro")
# method "auto": beyond this many keys the greedy lists only the smallest suppression sets and can
# fail badly on wide, nearly unique keys; there both methods run, the greedy within this many probe
# rows per record (a count of work, so the choice does not depend on the machine's speed).
_AUTO_ALL_SETS_KEYS = 8
_AUTO_GREEDY_PROBES_PER_RECORD = 100
# The attribute of the returned frame naming the method(s) used: "greedy", "sdcmicro" or both.
METHOD_ATTRIBUTE = "local_suppression_method"


class _BudgetExceeded(Exception):
    """The greedy of method "auto" used up its probe budget."""


# --------------------------------------------------------------------------------------------
# helpers shared by the two suppression methods
# --------------------------------------------------------------------------------------------


def suppression_ranks(
    data: pd.DataFrame, keys: list[str], importance: Sequence[str] | Mapping[str, int] | None
) -> np.ndarray:
    """Per key, its rank in the suppression order: 0 = suppressed first (least important).

    ``importance`` is either the keys listed from the most to the least important, or sdcMicro's
    numeric form, a mapping key -> number from 1 (most important) to the number of keys, ties
    allowed (the key with the largest number is suppressed first, ties in the order of ``keys``).
    Default as sdcMicro: keys with fewer categories are more important, ties in the order of
    ``keys``.
    """
    ranks = np.empty(len(keys), dtype=np.int64)
    if isinstance(importance, Mapping):
        if sorted(map(str, importance)) != sorted(map(str, keys)):
            raise SDCInputError(
                f"importance: must give a number for every key variable and no other (keys {keys}, "
                f"got {sorted(map(str, importance))})"
            )
        numbers = [importance[k] for k in keys]
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= len(keys) for v in numbers):
            raise SDCInputError(
                f"importance: numbers must be integers from 1 (most important) to {len(keys)}, got {dict(importance)}"
            )
        ranks[sorted(range(len(keys)), key=lambda j: (-numbers[j], j))] = np.arange(len(keys))
        return ranks
    if importance is None:
        return default_ranks([data[k].nunique(dropna=True) for k in keys])
    importance = list(importance)
    if sorted(map(str, importance)) != sorted(map(str, keys)) or len(set(importance)) != len(importance):
        raise SDCInputError(
            f"importance: must list every key variable exactly once (keys {keys}, got {importance})"
        )
    most_important_first = [keys.index(k) for k in importance]
    ranks[most_important_first[::-1]] = np.arange(len(keys))
    return ranks


def default_ranks(n_categories: Sequence[int]) -> np.ndarray:
    """sdcMicro's default importance as ranks (:func:`suppression_ranks`): keys with fewer
    categories (``n_categories``, one per key) are more important, ties in key order."""
    most_important_first = sorted(range(len(n_categories)), key=lambda j: (n_categories[j], j))
    ranks = np.empty(len(n_categories), dtype=np.int64)
    ranks[most_important_first[::-1]] = np.arange(len(n_categories))
    return ranks


def _prepare(data: pd.DataFrame, keys: Sequence[str], k: int) -> list[str]:
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("keys: name at least one key variable")
    if len(set(keys)) != len(keys):
        raise SDCInputError(f"keys: a key variable is listed twice in {keys}")
    _prepare_k(k, len(data))
    return keys


def _prepare_k(k: int, n: int) -> None:
    """Raise :class:`SDCInputError` unless k is a positive integer that n records can reach."""
    check_scalar(k, "k", integer=True, low=1)
    if k > n and n > 0:
        raise SDCInputError(
            f"k: {k}-anonymity is impossible with {n} records (even a fully suppressed key is shared by n records)"
        )


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


def _choose_in_blocks(block: np.ndarray, combo: np.ndarray, fk: np.ndarray, k: int) -> np.ndarray:
    """Which candidates to suppress so that every unsafe candidate of each block reaches k.

    Within a block (same key once the candidate keys are suppressed), suppressing the records of
    combination t makes them compatible with every other combination of the block, adding n_t to
    their fk (SPEC §2.4). Combinations are taken by increasing fk; the shortest prefix after which
    every remaining combination has fk + (records suppressed) >= k is suppressed (all of them when
    none qualifies; each suppressed record then has at least k by the choice of its set).
    """
    pair = _row_ids(np.column_stack([block, combo]))
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    size = np.bincount(pair, minlength=n_pairs)
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


def apply_suppression(data: pd.DataFrame, keys: list[str], digits: np.ndarray, original: np.ndarray) -> pd.DataFrame:
    """A copy of ``data`` with the key values missing in ``digits`` (0) but present in ``original``."""
    out = data.copy()
    for j, key in enumerate(keys):
        newly_missing = (digits[:, j] == 0) & (original[:, j] > 0)
        if newly_missing.any():
            column = out[key]
            if pd.api.types.is_integer_dtype(column) and not pd.api.types.is_extension_array_dtype(column):
                column = column.astype("Int64")
            elif pd.api.types.is_bool_dtype(column) and not pd.api.types.is_extension_array_dtype(column):
                column = column.astype("boolean")
            out[key] = column.mask(newly_missing)
    return out


# --------------------------------------------------------------------------------------------
# local suppression to k-anonymity
# --------------------------------------------------------------------------------------------


def _candidate_sets(ranks: np.ndarray, lexicographic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Suppression sets (key bit masks) from the cheapest to the dearest, and the tier of each
    (see the module docstring).

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
        _row_ids(np.column_stack([probes, sets[which]])), _row_ids(rows[record]), fk[record], k
    )
    hit |= ~probes.any(axis=1)  # an all-missing key is not added to complete keys: no block rule
    counter.set_missing(unsafe[record[hit]], sets[which[hit]])
    return int(hit.sum())


def local_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    k: int | Sequence[int] = 3,
    importance: Sequence[str] | Mapping[str, int] | None = None,
    strata: str | Sequence[str] | None = None,
    combs: Sequence[int] | None = None,
    method: str = "auto",
) -> pd.DataFrame:
    """Suppress key values (set them to NA) until every record's §2.4 fk is at least k (SPEC §8.3).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables (quasi-identifiers).
    k : the k-anonymity threshold; with ``combs``, one threshold per subset size (a single number
        is used for every size).
    importance : the keys from the most important (suppressed least) to the least important, or
        sdcMicro's numeric form {key: 1 (most important) .. number of keys}, ties allowed. With
        the greedy method it is honoured lexicographically as in sdcMicro: a key is suppressed in
        a record only when no combination of less important keys makes the record safe. Default:
        the fewest suppressions per record, ties broken by sdcMicro's default importance (keys
        with fewer categories are more important, counted on the whole data also with strata).
    strata : column name(s) (sdcMicro ``strataVars``): fk is counted within each stratum and each
        stratum is suppressed on its own; the result is reassembled in record order. A missing
        stratum value is a stratum.
    combs : subset sizes (sdcMicro ``combs``): for each size in turn, with its k, every subset of
        that many keys is made k-anonymous (fk counted on the subset's keys only). The targets are
        processed in the order given, subset after subset as ``itertools.combinations`` lists them,
        and the pass is repeated until every target holds (a later suppression can only break an
        earlier target through the all-missing rule of SPEC §2.4).
    method : "auto" (default: the greedy algorithm of the module docstring up to 8 keys, where it
        suppresses fewer values; on more keys both, keeping the fewer suppressions, see "Choosing
        the algorithm"), "greedy" or "sdcmicro" (sdcMicro 5.8.1's ``localSuppression``
        transcribed: the same file as sdcMicro, record for record, for an office that must
        reproduce it).

    Returns
    -------
    A copy of ``data`` indexed like it, with some key values missing (integer keys become nullable
    ``Int64`` when suppressed), such that ``risk.k_anonymity_violations(result, keys, k) == 0``
    (fk with missing values matching any value, SPEC §2.4, sdcMicro ``freqCalc``) within each
    stratum, and on every key subset of each size in ``combs``. ``result.attrs[METHOD_ATTRIBUTE]``
    (``"local_suppression_method"``) names the algorithm used: "greedy", "sdcmicro", or
    "greedy+sdcmicro" when "auto" chose differently for different strata or key subsets.

    References
    ----------
    SPEC §8.3, §2.4; sdcMicro ``localSuppression`` (Templ, Kowarik & Meindl 2015). The greedy
    algorithm is described in the module docstring.
    """
    keys = require_columns(data, keys, role="key variable")
    check_mask_width(len(keys), "local suppression")
    check_option(method, "method", LOCAL_SUPPRESSION_METHODS)
    targets = _suppression_targets(keys, k, combs)
    for _, k_size in targets:
        _prepare(data, keys, k_size)
    codes, values = stratum_codes(data, strata)
    members = stratum_members(codes) if len(data) else []
    largest_k = max(k_size for _, k_size in targets)
    for which, rows in enumerate(members):
        if largest_k > len(rows):
            raise SDCInputError(
                f"k: {largest_k}-anonymity is impossible in stratum {values[which]!r} of strata {strata!r}, "
                f"which has {len(rows)} records"
            )
    ranks = suppression_ranks(data, keys, importance)
    if len(data) == 0:
        return data.copy()
    original = np.zeros((len(data), len(keys)), dtype=np.int64)
    suppressed = np.zeros_like(original)
    used: set[str] = set()
    for rows in members:  # strata, not records; each coded on its own, as if suppressed alone
        original[rows], radices = key_digits(data.iloc[rows], keys)
        suppressed[rows], used_here = _suppress_to_targets(
            original[rows], radices, ranks, targets, lexicographic=importance is not None, method=method
        )
        used |= used_here
    out = apply_suppression(data, keys, suppressed, original)
    out.attrs[METHOD_ATTRIBUTE] = "+".join(m for m in LOCAL_SUPPRESSION_METHODS if m in used)
    return out


def suppress_codes_to_k(digits: np.ndarray, radices: np.ndarray, *, k: int,
                        counter: IncrementalCompatibleCounts | None = None) -> tuple[np.ndarray, str]:
    """:func:`local_suppression` to k of keys already coded (SPEC §8.3), with its defaults (no
    strata, no combs, the default importance, method "auto"): ``digits``, ``radices`` as
    :func:`~sdc_dagster.keys.key_digits` codes the keys (``digits`` is not modified). Returns the
    digits after suppression (0 = missing) and the method used; ``local_suppression(data, keys, k=k)``
    suppresses exactly these values. The plan search evaluates its nodes on codes.

    ``counter``: an :class:`IncrementalCompatibleCounts` of ``digits`` (without weights) that the
    caller made to check k-anonymity; the greedy method continues from it (it is changed)."""
    check_mask_width(digits.shape[1], "local suppression")
    _prepare_k(k, len(digits))
    ranks = default_ranks(np.asarray(radices) - 1)  # radix = categories present + 1
    # one target (all keys together): what _suppress_to_targets runs, the ranks being a permutation
    return _auto_suppress_to_k(digits, radices, ranks, int(k), lexicographic=False, counter=counter)


def _suppression_targets(
    keys: list[str], k: int | Sequence[int], combs: Sequence[int] | None
) -> list[tuple[list[tuple[int, ...]], int]]:
    """The (key subsets, k) targets of :func:`local_suppression`; all keys together without combs."""
    if combs is None:
        if np.ndim(k) != 0:
            raise SDCInputError(f"k: a single threshold without combs, got {k!r}")
        return [([tuple(range(len(keys)))], k)]
    combs = [combs] if np.ndim(combs) == 0 else list(combs)
    thresholds = [k] * len(combs) if np.ndim(k) == 0 else list(k)
    if len(thresholds) != len(combs):
        raise SDCInputError(f"k: give one threshold per subset size in combs {combs}, got {k!r}")
    targets = []
    for size, k_size in zip(combs, thresholds):
        check_scalar(size, "combs (a subset size of the keys)", integer=True, low=1, high=len(keys))
        targets.append((list(combinations(range(len(keys)), int(size))), k_size))
    return targets


def _suppress_to_targets(digits, radices, ranks, targets, *, lexicographic: bool, method: str) -> np.ndarray:
    """Digits after suppression until every (key subsets, k) target holds (one stratum)."""
    digits = digits.copy()
    single_target = len(targets) == 1 and len(targets[0][0]) == 1
    used = set()
    while True:
        changed = False
        for subsets, k in targets:
            for subset in subsets:
                columns = list(subset)
                before = digits[:, columns]
                subset_ranks = np.argsort(np.argsort(ranks[columns]))
                if method == "sdcmicro":
                    after, chosen = sdcmicro_suppress_to_k(before, radices[columns], subset_ranks, int(k)), method
                elif method == "greedy":
                    after, chosen = _suppress_to_k(before, radices[columns], subset_ranks, int(k), lexicographic), method
                else:
                    after, chosen = _auto_suppress_to_k(before, radices[columns], subset_ranks, int(k), lexicographic)
                used.add(chosen)
                if (after != before).any():
                    digits[:, columns] = after
                    changed = True
        # one target holds after one pass; several are re-checked until a pass changes nothing
        if single_target or not changed:
            return digits, used


def _auto_suppress_to_k(digits, radices, ranks, k: int, lexicographic: bool,
                        counter: IncrementalCompatibleCounts | None = None) -> tuple[np.ndarray, str]:
    """Method "auto" (module docstring): digits after suppression and the method that gave them
    (``counter``: as :func:`_suppress_to_k` takes it)."""
    if len(ranks) <= _AUTO_ALL_SETS_KEYS:
        return _suppress_to_k(digits, radices, ranks, k, lexicographic, counter=counter), "greedy"
    theirs = sdcmicro_suppress_to_k(digits, radices, ranks, k)
    try:
        ours = _suppress_to_k(digits, radices, ranks, k, lexicographic,
                              probe_budget=_AUTO_GREEDY_PROBES_PER_RECORD * len(digits), counter=counter)
    except _BudgetExceeded:
        return theirs, "sdcmicro"
    # fewer suppressed values wins, the greedy on ties
    if ((theirs == 0) & (digits > 0)).sum() < ((ours == 0) & (digits > 0)).sum():
        return theirs, "sdcmicro"
    return ours, "greedy"


def _suppress_to_k(digits, radices, ranks, k: int, lexicographic: bool, probe_budget: int | None = None,
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


def suppression_counts(original: pd.DataFrame, protected: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Number of values suppressed per key: present in ``original`` and missing in ``protected``.

    Returns a Series indexed by key (int64), as sdcMicro's ``localSuppression`` ``supps`` slot.
    """
    keys = require_columns(original, keys, role="key variable")
    require_columns(protected, keys, role="key variable")
    if not original.index.equals(protected.index):
        raise SDCInputError("protected: must be indexed like the original data")
    return pd.Series(
        {k: int((original[k].notna() & protected[k].isna()).sum()) for k in keys}, dtype="int64", name="suppressed"
    )


# --------------------------------------------------------------------------------------------
# suppression down to an individual-risk threshold
# --------------------------------------------------------------------------------------------


def risk_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    risk: str | Callable[[pd.DataFrame, list[str]], pd.Series] = "individual",
    *,
    threshold: float,
    weight: str | None = None,
    importance: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Suppress key values of records whose individual risk exceeds ``threshold`` (SPEC §8.3, §3.2).

    Each pass suppresses one key value in every record above the threshold and re-computes the
    risk of every record, until no record is above it (or every such record has no key left, where
    its risk is that of the fully suppressed key).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables.
    risk : "individual" = ``risk.individual_risk`` (sdcMicro's individual risk on the §2.4 f and
        F: 1/f without weights, SPEC §3.2 "approx" with ``weight``); or a callable
        ``risk(frame, keys) -> Series`` re-evaluated after every pass (then keys are suppressed in
        the order given by ``importance``).
    threshold : records with risk > threshold are treated.
    weight : sampling-weight column for the "individual" risk.
    importance : keys from the most important (suppressed least) to the least important;
        default as :func:`local_suppression`.

    Returns
    -------
    A copy of ``data`` with some key values missing, every record's risk <= threshold where
    reachable. With ``risk="individual"`` the key suppressed in a record is the least important
    one that brings it under the threshold, else the one that lowers its risk most.
    """
    keys = _prepare(data, keys, 1)
    check_scalar(threshold, "threshold", low=0, closed="neither")
    order = np.argsort(suppression_ranks(data, keys, importance), kind="stable")
    if len(data) == 0:
        return data.copy()
    digits, radices = key_digits(data, keys)
    if callable(risk):
        return _callable_risk_suppression(data, keys, risk, float(threshold), order, digits)
    if risk != "individual":
        raise SDCInputError(f"risk: must be 'individual' or a callable, got {risk!r}")
    weights = weight_values(data, weight)

    def individual(f: np.ndarray, F: np.ndarray) -> np.ndarray:
        return risk_from_frequencies(f, F, weighted=weights is not None, weight=str(weight))

    counter = IncrementalCompatibleCounts(digits, radices, weights)
    while True:
        risky = np.flatnonzero((individual(*counter.record_counts()) > threshold) & (counter.digits > 0).any(axis=1))
        if not len(risky):
            break
        rows = counter.digits[risky]
        best_key = np.full(len(risky), -1)
        best_risk = np.full(len(risky), np.inf)
        solved = np.zeros(len(risky), dtype=bool)
        for j in order:
            usable = np.flatnonzero((rows[:, j] > 0) & ~solved)
            if len(usable) == 0:
                continue
            probes = rows[usable].copy()
            probes[:, j] = 0
            r = individual(*counter.probe_counts(probes))
            improve = r < best_risk[usable]
            best_key[usable[improve]] = j
            best_risk[usable[improve]] = r[improve]
            solved[usable[r <= threshold]] = True
        counter.set_missing(risky, np.int64(1) << best_key)
    return apply_suppression(data, keys, counter.digits, digits)


def _callable_risk_suppression(data, keys, risk, threshold, order, digits) -> pd.DataFrame:
    current = digits.copy()
    while True:
        frame = apply_suppression(data, keys, current, digits)
        values = pd.Series(risk(frame, list(keys)))
        if len(values) != len(data):
            raise SDCInputError(f"risk: the callable returned {len(values)} values for {len(data)} records")
        risky = np.flatnonzero(values.to_numpy(dtype="float64") > threshold)
        risky = risky[(current[risky] > 0).any(axis=1)]
        if not len(risky):
            return frame
        # the first key in suppression order that the record still has
        ranked = current[risky][:, order] > 0
        first = np.asarray(order)[ranked.argmax(axis=1)]
        current[risky, first] = 0


# --------------------------------------------------------------------------------------------
# suppression to l-diversity
# --------------------------------------------------------------------------------------------


def codes_below_l(digits: np.ndarray, radices: np.ndarray, sensitive: Sequence[np.ndarray], *, l: int,
                  entropy: bool = False) -> np.ndarray:
    """Per record, whether its key group (records with the same key ``digits``, 0 = missing being a
    value of its own, as sdcMicro's ``ldiversity`` groups them) holds fewer than ``l`` distinct
    values of one of the ``sensitive`` variables (category codes from 0, -1 missing;
    :func:`~sdc_dagster.risk.group_l_diversity`), or with ``entropy`` also an entropy l-diversity
    below l (SPEC §3.6; exp(entropy) never exceeds the distinct count but for a group holding only
    missing values, distinct 0 and exp(entropy) 1)."""
    groups = distinct_digit_keys(digits, radices)
    below = np.zeros(len(digits), dtype=bool)
    for codes in sensitive:
        scores = group_l_diversity(groups.record_key, len(groups.count), codes)
        below |= (scores["distinct"] < l).to_numpy()
        if entropy:
            below |= (scores["entropy"] < l - 1e-9).to_numpy()
    return below


def _xlogx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x * np.log(np.where(x > 0, x, 1.0))


def _union_scores(codes: np.ndarray, pool: np.ndarray, group: np.ndarray, n_groups: int,
                  entropy: bool) -> tuple[float, np.ndarray]:
    """The l-diversity score (distinct, or with ``entropy`` the least of it and exp of the entropy,
    as :func:`codes_below_l` requires both; SPEC §3.6 with sdcMicro's missing category, as
    :func:`~sdc_dagster.risk.group_l_diversity` scores a group) of the records in ``pool`` and, per key group g of the other records (``group``, -1 in the pool),
    of the pool together with g. ``codes``: one sensitive variable, category codes from 0, -1
    missing. The union of two groups is scored from their category counts: distinct = present
    non-missing categories (+1 for missing when there are others); exp(entropy) = T exp(-S/T), T
    the records, S = sum of x ln x over the category counts x."""
    category = codes + 1  # 0 = missing, a category of its own next to others
    m = int(category.max()) + 1
    held = np.bincount(category[pool], minlength=m).astype(np.float64)
    outside = ~pool
    pair, count = np.unique(group[outside] * np.int64(m) + category[outside], return_counts=True)
    pair_group, pair_category = pair // m, pair % m
    size = np.bincount(pair_group, weights=count, minlength=n_groups)

    def score(total, s, present, missing):
        distinct = present + ((missing > 0) & (present > 0))
        if entropy:
            return np.minimum(distinct, np.where(total > 0, total * np.exp(-s / np.where(total > 0, total, 1.0)), 0.0))
        return distinct

    pool_score = score(held.sum(), _xlogx(held).sum(), np.count_nonzero(held[1:]), held[0])
    new = (held[pair_category] == 0) & (pair_category > 0)
    present = np.count_nonzero(held[1:]) + np.bincount(pair_group[new], minlength=n_groups)
    missing = held[0] + np.bincount(pair_group[pair_category == 0], weights=count[pair_category == 0],
                                    minlength=n_groups)
    s = _xlogx(held).sum() + np.bincount(
        pair_group, weights=_xlogx(held[pair_category] + count) - _xlogx(held[pair_category]), minlength=n_groups)
    return float(pool_score), score(held.sum() + size, s, present, missing)


def suppress_codes_to_l(digits: np.ndarray, radices: np.ndarray, sensitive: Mapping[str, np.ndarray], *, l: int,
                        entropy: bool = False) -> np.ndarray:
    """Digits (0 = missing) after :func:`diversity_suppression` of keys already coded (``digits``,
    ``radices`` as :func:`~sdc_dagster.keys.key_digits` codes them; not modified); ``sensitive``:
    per sensitive variable its category codes from 0, -1 missing.

    1. Every key value of the records of the key groups below l (:func:`codes_below_l`) is
       suppressed: they join the *pool*, the group whose keys are all missing.
    2. The pool is l-diverse only if its records hold l values between them: while it is not, the
       key group that brings it the most progress per record is added to it (progress: the sum over
       the sensitive variables of min(score, l), the score computed for the union by
       :func:`_union_scores`), the first such group on ties; when no group brings progress (entropy
       can fall when a group is added), every record joins the pool.

    The whole file as one group is l-diverse whenever some grouping is (the distinct values of a
    group are values of the file; the entropy of a mixture is at least the least entropy of its
    parts), so the result is l-diverse for every sensitive variable; when the whole file is not,
    l is unreachable and :class:`SDCInputError` says so. Each step of 2 adds a value that the pool
    lacks (distinct), so there are at most l times the number of sensitive variables."""
    check_mask_width(digits.shape[1], "suppression to l-diversity")
    below_l = lambda score: score < l - 1e-9  # noqa: E731 (the tolerance of codes_below_l)
    whole = np.ones(len(digits), dtype=bool)
    none = np.full(len(digits), -1, dtype=np.int64)
    measure = "entropy l-diversity (exp of the entropy, at most the distinct count)" if entropy else "distinct l-diversity"
    for name, codes in sensitive.items():
        file_score, _ = _union_scores(codes, whole, none, 0, entropy)
        if below_l(file_score):
            raise SDCInputError(
                f"l: {l} is unreachable for sensitive variable {name!r}: the whole file, keys all suppressed, "
                f"reaches {measure} {file_score:.4g} (its distinct values, a missing one counted when others exist)"
            )
    suppressed = digits.copy()
    suppressed[codes_below_l(digits, radices, list(sensitive.values()), l=l, entropy=entropy)] = 0
    pool = ~suppressed.any(axis=1)
    while pool.any():
        groups = distinct_digit_keys(suppressed, radices)
        group = np.where(pool, -1, groups.record_key)
        n_groups = len(groups.count)
        scores = [_union_scores(codes, pool, group, n_groups, entropy) for codes in sensitive.values()]
        if not any(below_l(pool_score) for pool_score, _ in scores):
            break
        progress = sum(min(pool_score, l) for pool_score, _ in scores)
        size = np.bincount(group[~pool], minlength=n_groups)
        gain = sum(np.minimum(union, l) for _, union in scores) - progress
        gain = np.where(size > 0, gain / np.maximum(size, 1), 0.0)
        best = int(np.argmax(gain))
        joining = (group == best) if gain[best] > 1e-12 else ~pool
        suppressed[joining] = 0
        pool |= joining
    return suppressed


def diversity_suppression(data: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str] | str, *, l: int,
                          entropy: bool = False) -> pd.DataFrame:
    """Suppress every key value of the records whose key group is not l-diverse in a sensitive
    variable (SPEC §3.6; :func:`codes_below_l`), as ARX suppresses the records of a class that
    violates its privacy model (Prasser et al., "ARX: a comprehensive tool for anonymizing biomedical
    data", 2014): the suppressed records form one group, all keys missing. That group is l-diverse
    only if its records hold l values between them; while it is not, further key groups join it
    (:func:`suppress_codes_to_l`), so every group of the result is l-diverse, grouped as
    :func:`~sdc_dagster.risk.l_diversity` groups the records (a missing key value a value of its
    own, as sdcMicro's ``ldiversity``). Groups that are l-diverse and not needed are left as they
    are. Run after local suppression to k-anonymity.

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables (grouped as released, a missing value a value of its own).
    sensitive : the sensitive variables (one or a list).
    l : the least number of distinct sensitive values of a group (an integer >= 1).
    entropy : require entropy l-diversity as well (exp of the group's entropy at least l).

    Returns
    -------
    A copy of ``data`` with the keys of the suppressed records missing.

    Raises
    ------
    SDCInputError : when l is unreachable: the whole file, as one group, is not l-diverse in a
        sensitive variable (e.g. fewer than l distinct values).
    """
    keys = _prepare(data, keys, 1)
    sensitive = require_columns(data, [sensitive] if isinstance(sensitive, str) else list(sensitive),
                                role="sensitive variable")
    l = check_scalar(l, "l", integer=True, low=1)
    if len(data) == 0:
        return data.copy()
    digits, radices = key_digits(data, keys)
    codes = {v: category_codes(data[v])[0] - 1 for v in sensitive}
    return apply_suppression(data, keys, suppress_codes_to_l(digits, radices, codes, l=l, entropy=entropy), digits)
