"""Local suppression to k-anonymity and to an individual-risk threshold (SPEC §8.3, §2.4, §3.2).

Suppressed key values become missing, and a missing value matches any value in later frequency
counts (sdcMicro ``freqCalc`` semantics, SPEC §2.4). Suppression therefore only ever *adds*
compatible records, so a record's fk never decreases: once safe, a record stays safe. The
algorithms below exploit that: after one full frequency count only the unsafe records are
re-counted.

Compatible counts with missing values
-------------------------------------
Records are grouped by their *missing pattern* (the set of keys that are NA). A record i with
pattern Q and a record j with pattern P are compatible iff they agree on every key outside
P ∪ Q. So the NA-aware fk of i is a sum, over the data's patterns P, of an exact-match count on the
keys outside P ∪ Q: one vectorised group count per (P, Q) pair. The counts of the original records
are computed once and cached; the few records changed by suppression are corrected for at every
re-count.

Greedy algorithm for k-anonymity (minimising suppressions)
----------------------------------------------------------
1. *Single-key passes*, keys taken from the least to the most important. For every unsafe record u
   whose value of key j is present, f_uj = NA-aware fk of u with key j set to NA. Records with
   f_uj >= k can be made safe by one suppression. Records sharing the same wildcarded key form a
   *block*: suppressing j in a combination t of the block adds n_t compatible records to every other
   combination of the block, so only the riskiest combinations (lowest fk) are suppressed, as many
   as needed for the others to reach k.
2. When no single suppression helps any unsafe record, *subsets of L = 2, 3, ... keys* are tried;
   for each record the admissible subset (f >= k) of least important keys is chosen (cost
   sum 2^rank, rank = position in the suppression order), again with the block rule.
3. L grows at most to the number of present keys, where every key of the record is suppressed and
   fk = n >= k. This guarantees termination (sdcMicro issue #184) even when enumerating subsets
   would be too costly (then the record's remaining keys are all suppressed at once).

References
----------
Templ, Kowarik & Meindl (2015), sdcMicro, J. Stat. Softw. 67(4), §3.3 (local suppression).
Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4.3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns

_MAX_SUBSET_PROBES = 2_000_000  # beyond this, a record's remaining keys are suppressed at once
_RADIX_LIMIT = 2**62


# --------------------------------------------------------------------------------------------
# NA-aware compatible counts
# --------------------------------------------------------------------------------------------


def _key_codes(data: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the keys (n x m, -1 = missing) and the number of categories of each key."""
    codes = np.empty((len(data), len(keys)), dtype=np.int64)
    cards = np.empty(len(keys), dtype=np.int64)
    for j, key in enumerate(keys):
        codes[:, j], uniques = pd.factorize(data[key], use_na_sentinel=True)
        cards[j] = max(len(uniques), 1)
    return codes, cards


def _patterns(codes: np.ndarray) -> np.ndarray:
    """Per row, the bit mask of its missing keys (bit j set = key j missing)."""
    bits = (np.int64(1) << np.arange(codes.shape[1], dtype=np.int64))
    return (codes < 0).astype(np.int64) @ bits


def _group_rows(pattern: np.ndarray) -> dict[int, np.ndarray]:
    order = np.argsort(pattern, kind="stable")
    values, starts = np.unique(pattern[order], return_index=True)
    bounds = [*starts[1:], len(order)]
    return {int(v): order[s:e] for v, s, e in zip(values, starts, bounds)}


def _columns_of(mask: int, m: int) -> list[int]:
    return [j for j in range(m) if not (mask >> j) & 1]


class _CompatibleCounter:
    """NA-aware compatible counts (count and weight sum) of probe keys against the current data.

    The original codes are indexed once per (data pattern, compared keys) and cached; records that
    have been changed since are corrected for by counting them twice (removed as original, added as
    current), which is cheap because they are few.
    """

    def __init__(self, codes: np.ndarray, cards: np.ndarray, weights: np.ndarray | None = None):
        self.original = codes
        self.current = codes.copy()
        self.cards = cards
        self.m = codes.shape[1]
        self.weights = weights
        self.changed = np.zeros(len(codes), dtype=bool)
        self._original_groups = _group_rows(_patterns(codes))
        self._cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray | None] | None] = {}

    def suppress(self, rows: np.ndarray, key_mask: np.ndarray | int) -> None:
        """Set the keys in ``key_mask`` (per row, or one mask for all) to missing in ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        masks = np.broadcast_to(np.asarray(key_mask, dtype=np.int64), rows.shape)
        for j in range(self.m):
            hit = rows[((masks >> j) & 1).astype(bool)]
            self.current[hit, j] = -1
        self.changed[rows] = True

    def _radix(self, cols: list[int]) -> np.ndarray | None:
        radix = np.ones(len(cols), dtype=np.int64)
        total = 1
        for position in range(len(cols) - 1, -1, -1):
            radix[position] = total
            total *= int(self.cards[cols[position]])
            if total > _RADIX_LIMIT:
                return None
        return radix

    def _encode(self, rows: np.ndarray, cols: list[int], radix: np.ndarray) -> np.ndarray:
        return rows[:, cols] @ radix

    @staticmethod
    def _lookup(keys: np.ndarray, probe: np.ndarray, counts: np.ndarray, wsums) -> tuple[np.ndarray, np.ndarray | None]:
        pos = np.searchsorted(keys, probe)
        pos_clipped = np.minimum(pos, max(len(keys) - 1, 0))
        found = (pos < len(keys)) & (keys[pos_clipped] == probe) if len(keys) else np.zeros(len(probe), bool)
        n = np.where(found, counts[pos_clipped] if len(keys) else 0, 0)
        w = None
        if wsums is not None:
            w = np.where(found, wsums[pos_clipped] if len(keys) else 0.0, 0.0)
        return n, w

    def _joint_counts(self, data_rows, data_w, probe_rows, cols):
        """Exact-match counts on ``cols`` when the mixed-radix code would overflow int64."""
        stacked = np.vstack([data_rows[:, cols], probe_rows[:, cols]])
        _, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        size = int(inverse.max()) + 1 if len(inverse) else 0
        counts = np.bincount(inverse[: len(data_rows)], minlength=size)
        n = counts[inverse[len(data_rows):]]
        w = None
        if data_w is not None:
            sums = np.bincount(inverse[: len(data_rows)], weights=data_w, minlength=size)
            w = sums[inverse[len(data_rows):]]
        return n, w

    def _count_against(self, probes, probe_groups, data, data_groups, data_w, cache):
        n_out = np.zeros(len(probes), dtype=np.int64)
        w_out = np.zeros(len(probes), dtype=np.float64) if data_w is not None else None
        for q_mask, q_rows in probe_groups.items():
            for p_mask, p_rows in data_groups.items():
                union = q_mask | p_mask
                cols = _columns_of(union, self.m)
                if not cols:
                    n_out[q_rows] += len(p_rows)
                    if w_out is not None:
                        w_out[q_rows] += data_w[p_rows].sum()
                    continue
                radix = self._radix(cols)
                if radix is None:
                    n, w = self._joint_counts(
                        data[p_rows], None if data_w is None else data_w[p_rows], probes[q_rows], cols
                    )
                else:
                    entry = cache.get((p_mask, union)) if cache is not None else None
                    if entry is None:
                        data_keys = self._encode(data[p_rows], cols, radix)
                        keys, inverse, counts = np.unique(data_keys, return_inverse=True, return_counts=True)
                        wsums = None
                        if data_w is not None:
                            wsums = np.bincount(inverse.ravel(), weights=data_w[p_rows], minlength=len(keys))
                        entry = (keys, counts, wsums)
                        if cache is not None:
                            cache[(p_mask, union)] = entry
                    n, w = self._lookup(entry[0], self._encode(probes[q_rows], cols, radix), entry[1], entry[2])
                n_out[q_rows] += n
                if w_out is not None:
                    w_out[q_rows] += w
        return n_out, w_out

    def counts(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """NA-aware (fk, Fk) of every probe row against the current data (a probe need not be a record)."""
        probe_groups = _group_rows(_patterns(probes))
        n, w = self._count_against(
            probes, probe_groups, self.original, self._original_groups, self.weights, self._cache
        )
        changed = np.flatnonzero(self.changed)
        if len(changed):
            cw = None if self.weights is None else self.weights[changed]
            before = self.original[changed]
            after = self.current[changed]
            n_b, w_b = self._count_against(probes, probe_groups, before, _group_rows(_patterns(before)), cw, None)
            n_a, w_a = self._count_against(probes, probe_groups, after, _group_rows(_patterns(after)), cw, None)
            n = n - n_b + n_a
            if w is not None:
                w = w - w_b + w_a
        return n, w


# --------------------------------------------------------------------------------------------
# helpers shared by the two suppression methods
# --------------------------------------------------------------------------------------------


def _suppression_order(data: pd.DataFrame, keys: list[str], importance: Sequence[str] | None) -> list[int]:
    """Key positions from the first to suppress to the last (= reverse of the importance order).

    Default importance as sdcMicro: keys with fewer categories are more important (kept), ties
    in the order of ``keys``.
    """
    if importance is None:
        n_categories = [data[k].nunique(dropna=True) for k in keys]
        importance_positions = sorted(range(len(keys)), key=lambda j: (n_categories[j], j))
    else:
        importance = list(importance)
        if sorted(map(str, importance)) != sorted(map(str, keys)) or len(set(importance)) != len(importance):
            raise SDCInputError(
                f"importance: must list every key variable exactly once (keys {keys}, got {importance})"
            )
        importance_positions = [keys.index(k) for k in importance]
    return importance_positions[::-1]


def _prepare(data: pd.DataFrame, keys: Sequence[str], k: int) -> list[str]:
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("keys: name at least one key variable")
    if len(set(keys)) != len(keys):
        raise SDCInputError(f"keys: a key variable is listed twice in {keys}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise SDCInputError(f"k: must be a positive integer, got {k!r}")
    if k > len(data) and len(data) > 0:
        raise SDCInputError(
            f"k: {k}-anonymity is impossible with {len(data)} records (even a fully suppressed key is shared by n records)"
        )
    return keys


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Dense ids of identical rows (missing codes included)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def _choose_in_blocks(block: np.ndarray, combo: np.ndarray, fk: np.ndarray, k: int) -> np.ndarray:
    """Which candidates to suppress so that every unsafe candidate of each block reaches k.

    Within a block (same key once the candidate keys are suppressed), suppressing the records of
    combination t makes them compatible with every other combination of the block, adding n_t to
    their fk. Combinations are taken by increasing fk; the shortest prefix after which every
    remaining combination has fk + (records suppressed) >= k is suppressed (all of them when none
    qualifies; each suppressed record then has the block's count, >= k by construction).
    """
    pair = _row_ids(np.column_stack([block, combo]))
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    size = np.bincount(pair, minlength=n_pairs)
    pair_block = np.zeros(n_pairs, dtype=np.int64)
    pair_block[pair] = block
    pair_fk = np.zeros(n_pairs, dtype=np.int64)
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


def _apply_to_frame(data: pd.DataFrame, keys: list[str], codes: np.ndarray, original: np.ndarray) -> pd.DataFrame:
    out = data.copy()
    for j, key in enumerate(keys):
        newly_missing = (codes[:, j] < 0) & (original[:, j] >= 0)
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


def _subset_pass(counter, unsafe, fk, order, level, k) -> bool:
    """Suppress, for each unsafe record, the cheapest admissible subset of ``level`` present keys."""
    m = counter.m
    rank_cost = np.zeros(m, dtype=np.int64)
    for rank, j in enumerate(order):
        rank_cost[j] = np.int64(1) << rank
    rows = counter.current[unsafe]
    present_count = (rows >= 0).sum(axis=1)
    eligible = present_count >= level
    if not eligible.any():
        return False
    if comb(m, level) * int(eligible.sum()) > _MAX_SUBSET_PROBES:
        # Too many subsets to try: suppress every remaining key of the records concerned (fk = n).
        targets = unsafe[eligible]
        mask = (counter.current[targets] >= 0).astype(np.int64) @ (np.int64(1) << np.arange(m, dtype=np.int64))
        counter.suppress(targets, mask)
        return True
    best_cost = np.full(len(unsafe), np.iinfo(np.int64).max)
    best_mask = np.zeros(len(unsafe), dtype=np.int64)
    for subset in combinations(range(m), level):
        cols = list(subset)
        usable = np.flatnonzero(eligible & (rows[:, cols] >= 0).all(axis=1))
        if len(usable) == 0:
            continue
        cost = int(rank_cost[cols].sum())
        better = usable[cost < best_cost[usable]]
        if len(better) == 0:
            continue
        probes = rows[better].copy()
        probes[:, cols] = -1
        f, _ = counter.counts(probes)
        ok = better[f >= k]
        best_cost[ok] = cost
        best_mask[ok] = sum(1 << j for j in cols)
    chosen = np.flatnonzero(best_mask > 0)
    if len(chosen) == 0:
        return False
    probes = rows[chosen].copy()
    for j in range(m):
        probes[((best_mask[chosen] >> j) & 1).astype(bool), j] = -1
    block = _row_ids(np.column_stack([probes, best_mask[chosen]]))
    combo = _row_ids(rows[chosen])
    hit = _choose_in_blocks(block, combo, fk[chosen], k)
    counter.suppress(unsafe[chosen[hit]], best_mask[chosen[hit]])
    return True


def local_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    k: int = 3,
    importance: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Suppress key values (set them to NA) until every record's NA-aware fk is at least k (SPEC §8.3).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables (quasi-identifiers).
    k : the k-anonymity threshold.
    importance : the keys in the order they should be kept (first = suppressed least). Default as
        sdcMicro: keys with fewer categories are more important.

    Returns
    -------
    A copy of ``data`` indexed like it, with some key values missing (integer keys become nullable
    ``Int64`` when suppressed), such that every record's fk with missing values matching any value
    (SPEC §2.4, sdcMicro ``freqCalc``) is >= k.

    References
    ----------
    SPEC §8.3, §2.4; sdcMicro ``localSuppression`` (Templ, Kowarik & Meindl 2015). The greedy
    algorithm is described in the module docstring.
    """
    keys = _prepare(data, keys, k)
    order = _suppression_order(data, keys, importance)
    codes, cards = _key_codes(data, keys)
    if len(data) == 0:
        return data.copy()
    counter = _CompatibleCounter(codes, cards)
    fk, _ = counter.counts(codes)
    unsafe = np.flatnonzero(fk < k)
    fk = fk[unsafe]
    level = 1
    while len(unsafe):
        progressed = False
        if level == 1:
            for j in order:
                candidates = np.flatnonzero(counter.current[unsafe, j] >= 0)
                if len(candidates) == 0:
                    continue
                rows = counter.current[unsafe[candidates]]
                probes = rows.copy()
                probes[:, j] = -1
                f, _ = counter.counts(probes)
                ok = f >= k
                if not ok.any():
                    continue
                chosen = candidates[ok]
                hit = _choose_in_blocks(_row_ids(probes[ok]), _row_ids(rows[ok]), fk[chosen], k)
                counter.suppress(unsafe[chosen[hit]], 1 << j)
                progressed = True
                fk, _ = counter.counts(counter.current[unsafe])
                still = fk < k
                unsafe, fk = unsafe[still], fk[still]
                if not len(unsafe):
                    break
        else:
            progressed = _subset_pass(counter, unsafe, fk, order, level, k)
            if progressed:
                fk, _ = counter.counts(counter.current[unsafe])
                still = fk < k
                unsafe, fk = unsafe[still], fk[still]
        level = 1 if progressed else level + 1
        if level > counter.m:
            # Unreachable when k <= n (all keys missing gives fk = n); kept as a hard stop.
            raise SDCInputError(f"k: {k}-anonymity could not be reached for {len(unsafe)} records")
    return _apply_to_frame(data, keys, counter.current, codes)


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


def _approx_individual_risk(f: np.ndarray, F: np.ndarray | None) -> np.ndarray:
    """sdcMicro individual risk (SPEC §3.2, method "approx"); 1/f without weights."""
    f = f.astype(np.float64)
    if F is None:
        return 1.0 / f
    with np.errstate(divide="ignore", invalid="ignore"):
        p = f / F
        odds = p / (1.0 - p)
        log_inv = np.log(1.0 / p)
        risk = np.where(
            f == F,
            1.0 / f,
            np.where(f == 1, odds * log_inv, np.where(f == 2, odds - odds**2 * log_inv, p / (f - (1.0 - p)))),
        )
    return risk


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

    Each pass suppresses one key value in every record still above the threshold and re-computes
    the risk, until no record is above it (or a record has no key left, where its risk is that of
    the fully suppressed key).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables.
    risk : "individual" = sdcMicro's individual risk with NA-aware f and F (1/f without weights,
        SPEC §3.2 "approx" with ``weight``); or a callable ``risk(frame, keys) -> Series`` re-evaluated
        after every pass (then keys are suppressed in the order given by ``importance``).
    threshold : records with risk > threshold are treated.
    weight : sampling-weight column for the "individual" risk.
    importance : keys in the order they should be kept (first = suppressed least).

    Returns
    -------
    A copy of ``data`` with some key values missing, every record's risk <= threshold where
    reachable. With ``risk="individual"`` the key suppressed in a record is the least important
    one that brings it under the threshold, else the one that lowers its risk most.
    """
    keys = _prepare(data, keys, 1)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) or threshold <= 0:
        raise SDCInputError(f"threshold: must be a positive number, got {threshold!r}")
    order = _suppression_order(data, keys, importance)
    codes, cards = _key_codes(data, keys)
    if len(data) == 0:
        return data.copy()
    if callable(risk):
        return _callable_risk_suppression(data, keys, risk, float(threshold), order, codes)
    if risk != "individual":
        raise SDCInputError(f"risk: must be 'individual' or a callable, got {risk!r}")
    weights = None
    if weight is not None:
        weights = data[require_columns(data, [weight], role="weight")[0]].to_numpy(dtype="float64")
        if np.isnan(weights).any() or (weights <= 0).any():
            raise SDCInputError(f"weight {weight!r}: weights must be positive and not missing")
    counter = _CompatibleCounter(codes, cards, weights)
    f, F = counter.counts(codes)
    risky = np.flatnonzero(_approx_individual_risk(f, F) > threshold)
    m = len(keys)
    while len(risky):
        rows = counter.current[risky]
        best_key = np.full(len(risky), -1)
        best_risk = np.full(len(risky), np.inf)
        solved = np.zeros(len(risky), dtype=bool)
        for j in order:
            usable = np.flatnonzero((rows[:, j] >= 0) & ~solved)
            if len(usable) == 0:
                continue
            probes = rows[usable].copy()
            probes[:, j] = -1
            pf, pF = counter.counts(probes)
            r = _approx_individual_risk(pf, pF)
            improve = r < best_risk[usable]
            best_key[usable[improve]] = j
            best_risk[usable[improve]] = r[improve]
            solved[usable[r <= threshold]] = True
        treat = best_key >= 0
        if not treat.any():
            break
        for j in range(m):
            counter.suppress(risky[treat & (best_key == j)], 1 << j)
        f, F = counter.counts(counter.current[risky])
        still = (_approx_individual_risk(f, F) > threshold) & (counter.current[risky] >= 0).any(axis=1)
        risky = risky[still]
    return _apply_to_frame(data, keys, counter.current, codes)


def _callable_risk_suppression(data, keys, risk, threshold, order, codes) -> pd.DataFrame:
    current = codes.copy()
    while True:
        frame = _apply_to_frame(data, keys, current, codes)
        values = pd.Series(risk(frame, list(keys)))
        if len(values) != len(data):
            raise SDCInputError(f"risk: the callable returned {len(values)} values for {len(data)} records")
        risky = np.flatnonzero(values.to_numpy(dtype="float64") > threshold)
        present = current[risky] >= 0
        risky = risky[present.any(axis=1)]
        if not len(risky):
            return frame
        # the first key in suppression order that the record still has
        ranked = current[risky][:, order] >= 0
        first = np.asarray(order)[ranked.argmax(axis=1)]
        current[risky, first] = -1
