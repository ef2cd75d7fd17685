"""The compiled (numba) kernels of the exact Gower nearest-record search of
:mod:`sdc_dagster.risk.gower_search` (SPEC §4.1): the Gower distance of a pair computed as the block
computation computes it, and the scan of the groups of originals that agree on the shared nominal
variables, offering each candidate within reach to the record's nearest and tied originals. The
first call in a fresh environment compiles them (about 10 s; cached on disk by numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# originals count as tied nearest when their distance exceeds the nearest by at most this share (the
# k-d tree and the direct formula round differently; exact duplicates are at exactly equal distances)
TIE_TOLERANCE = 1e-9


@njit(cache=True, nogil=True)
def _numpy_sum(terms: np.ndarray, n: int) -> float:
    """The sum of ``terms[:n]`` in numpy's order of ``sum(axis=1)`` on a row (pairwise summation:
    eight partial sums from eight terms on, blocks of 128 halved), so that a distance computed here
    equals :func:`~sdc_dagster.risk.gower_search.gower_own_distances`' bit for bit."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += terms[i]
        return total
    if n <= 128:
        r0, r1, r2, r3 = terms[0], terms[1], terms[2], terms[3]
        r4, r5, r6, r7 = terms[4], terms[5], terms[6], terms[7]
        i = 8
        while i < n - n % 8:
            r0 += terms[i]
            r1 += terms[i + 1]
            r2 += terms[i + 2]
            r3 += terms[i + 3]
            r4 += terms[i + 4]
            r5 += terms[i + 5]
            r6 += terms[i + 6]
            r7 += terms[i + 7]
            i += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            total += terms[i]
            i += 1
        return total
    half = n // 2
    half -= half % 8
    return _numpy_sum(terms[:half], half) + _numpy_sum(terms[half:], n - half)


@njit(cache=True, nogil=True)
def _pair_distance(original: np.ndarray, protected: np.ndarray, nominal: np.ndarray, terms: np.ndarray) -> float:
    """Gower distance of one pair of records, :func:`~sdc_dagster.risk.gower_search.gower_own_distances`' formula and rounding
    (NaN where no variable is observed in both); ``terms``: scratch of one entry per variable."""
    seen = 0
    for v in range(len(protected)):
        gap = abs(protected[v] - original[v])
        if np.isnan(gap):
            terms[v] = 0.0
        else:
            seen += 1
            terms[v] = (1.0 if gap > 0 else 0.0) if nominal[v] else gap
    return _numpy_sum(terms, len(protected)) / seen if seen else np.nan


@njit(cache=True, nogil=True)
def own_distances(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Gower distance of each protected record to its own original (row i of ``zm`` to row i of
    ``zx``; NaN where no variable is observed in both), :func:`_pair_distance` row by row: one pass
    over the records instead of numpy's six over the whole matrices, bit for bit numpy's figures."""
    n = zm.shape[0]
    out = np.empty(n)
    terms = np.empty(zm.shape[1])
    for i in range(n):
        out[i] = _pair_distance(zx[i], zm[i], nominal, terms)
    return out


@njit(cache=True, nogil=True)
def _find_group(heads: np.ndarray, first: int, stop: int, columns: np.ndarray, probe: np.ndarray) -> int:
    """The group among ``heads[first:stop]`` (a row of each group, sorted lexicographically on
    ``columns``) whose values on ``columns`` are ``probe``; -1 if none (binary search)."""
    while first < stop:
        middle = (first + stop) // 2
        order = 0
        for at in range(len(columns)):
            value = heads[middle, columns[at]]
            if value != probe[at]:
                order = -1 if value < probe[at] else 1
                break
        if order == 0:
            return middle
        if order < 0:
            first = middle + 1
        else:
            stop = middle
    return -1


@njit(cache=True, nogil=True)
def _offer(best: np.ndarray, tied: np.ndarray, distance: float, original: int, weight: int) -> None:
    """An original at Gower ``distance`` (``weight`` originals there, the lowest at ``original``)
    offered to a record's search: ``best`` = [nearest distance so far, its original, entries of
    ``tied``], the nearest replaced where the original is nearer, or as near and lower (the block
    computation's argmin); ``tied`` = rows [distance, weight] of the originals offered within the tie
    radius (:data:`TIE_TOLERANCE`, the blocks' rule) of the nearest so far, those beyond the radius of
    a new nearest dropped. Every original within the final radius is offered (the scans' reach only
    shrinks), so the weights left are the tied originals, counted in the same pass."""
    if distance <= best[0] * (1.0 + TIE_TOLERANCE) + 1e-300:
        entries = int(best[2])
        tied[entries, 0], tied[entries, 1] = distance, weight
        best[2] = entries + 1
    if distance < best[0]:
        best[0], best[1] = distance, original
        radius, kept = distance * (1.0 + TIE_TOLERANCE) + 1e-300, 0
        for entry in range(int(best[2])):
            if tied[entry, 0] <= radius:
                tied[kept] = tied[entry]
                kept += 1
        best[2] = kept
    elif distance == best[0] and original < best[1]:
        best[1] = original


@njit(cache=True, nogil=True)
def _known_unlinked(best: np.ndarray, stop_at: float) -> bool:
    """Whether the nearest original found so far (``best[0]``) is nearer than ``stop_at`` (the
    record's own distance) beyond the tolerance with which record linkage counts a record as linked
    (own <= nearest (1 + 1e-12) + 1e-300, :func:`~sdc_dagster.risk.linkage.record_linkage_risk`): the
    record is then not linked, whatever the originals not yet scanned."""
    return best[0] * (1.0 + 1e-12) + 1e-300 < stop_at


# over 10 parameters, kept: a numba kernel (its arrays passed one by one)
@njit(cache=True, nogil=True)
def _scan_group(record: np.ndarray, nominal: np.ndarray, g: int, numeric: np.ndarray, key: float, mismatched: int,
                size: int, groups: tuple, best: np.ndarray, tied: np.ndarray, bound: float,
                terms: np.ndarray, stop_at: float) -> None:
    """One group of originals (``groups``: :func:`~sdc_dagster.risk.gower_search._group_tables`' per-group and per-original arrays;
    the originals of group ``g`` ascending in their sum of the numeric variables of S) against the
    protected ``record`` (``key``: its sum of the same variables, ``numeric``; NaN: S has none); the
    pair has ``size`` = |S| shared variables of which ``mismatched`` nominal ones differ throughout
    the group. Each original is offered (:func:`_offer`) if its numerator (Gower distance x |S|) can
    be within the tie tolerance of min(nearest so far, ``bound``): the numerator is at least the
    mismatches plus the difference of the sums (|sum of differences| <= sum of |differences|, with
    room for the rounding of the sums), so the scan leaves the record's place in the sorted sums,
    nearest sum first, until both sides are beyond that reach; an original whose mismatches plus
    differences in ``numeric``, summed in any order, exceed the reach is left at that. Without a
    shared numeric variable the group's originals are all at the same distance: one offer. The scan
    also ends once an original nearer than ``stop_at`` beyond the linkage's tolerance is found
    (:func:`_known_unlinked`; ``stop_at`` = -inf: never)."""
    starts, lowest, rows, sorted_by, position = groups
    start, stop = starts[g], starts[g + 1]
    if np.isnan(key) or _known_unlinked(best, stop_at):
        if np.isnan(key):
            _offer(best, tied, _pair_distance(rows[start], record, nominal, terms), lowest[g], stop - start)
        return
    up, high = start, stop  # the first original with a sum >= the record's
    while up < high:
        middle = (up + high) // 2
        if sorted_by[middle] < key:
            up = middle + 1
        else:
            high = middle
    down = up - 1
    slack = 1e-12 * (1.0 + abs(key))
    while True:
        above = sorted_by[up] - key if up < stop else np.inf
        below = key - sorted_by[down] if down >= start else np.inf
        reach = min(best[0], bound) * size * (1.0 + 2 * TIE_TOLERANCE) + 2e-12
        if min(above, below) > reach - mismatched + slack:
            return
        if above <= below:
            k = up
            up += 1
        else:
            k = down
            down -= 1
        lower = float(mismatched)
        for v in numeric:
            lower += abs(record[v] - rows[k, v])
        if lower <= reach + slack:
            _offer(best, tied, _pair_distance(rows[k], record, nominal, terms), position[k], 1)
            if _known_unlinked(best, stop_at):
                return


@njit(cache=True, nogil=True)
def _sum_key(record: np.ndarray, numeric: np.ndarray) -> float:
    """The record's sum of the ``numeric`` variables (NaN if none): the key of :func:`_scan_group`."""
    if not len(numeric):
        return np.nan
    total = 0.0
    for v in numeric:
        total += record[v]
    return total


@njit(cache=True, nogil=True)
def _agreeing_groups(record: np.ndarray, t: int, table_columns: np.ndarray, column_starts: np.ndarray,
                     group_starts: np.ndarray, heads: np.ndarray, levels: np.ndarray, probe: np.ndarray,
                     found: np.ndarray) -> int:
    """The groups of table ``t`` that agree with ``record`` on the nominal variables it observes:
    one lookup per combination of categories of the table's variables the record misses (an
    odometer over them). Written to ``found``; returns how many."""
    columns = table_columns[column_starts[t]:column_starts[t + 1]]
    missing = 0
    for at in range(len(columns)):
        if np.isnan(record[columns[at]]):
            probe[at] = 0.0
            missing += 1
        else:
            probe[at] = record[columns[at]]
    count = 0
    while True:
        g = _find_group(heads, group_starts[t], group_starts[t + 1], columns, probe)
        if g >= 0:
            found[count] = g
            count += 1
        if not missing:
            return count
        at = len(columns) - 1  # the next combination of the missing variables' categories
        while at >= 0:
            if np.isnan(record[columns[at]]):
                probe[at] += 1.0
                if probe[at] < levels[columns[at]]:
                    break
                probe[at] = 0.0
            at -= 1
        if at < 0:
            return count


@njit(cache=True, nogil=True)
def _mismatches(record: np.ndarray, head: np.ndarray, columns: np.ndarray) -> int:
    """How many of ``columns`` (nominal) the record observes with a category other than ``head``'s."""
    differ = 0
    for v in columns:
        differ += not np.isnan(record[v]) and record[v] != head[v]
    return differ


@njit(cache=True, nogil=True)
def _same_lookups(zm: np.ndarray, previous: int, i: int, m_of: np.ndarray, nominal: np.ndarray) -> bool:
    """Whether protected record ``i`` has the pattern and nominal categories of record ``previous``."""
    if previous < 0 or m_of[previous] != m_of[i]:
        return False
    for v in range(len(nominal)):
        if nominal[v] and zm[previous, v] != zm[i, v] and not np.isnan(zm[i, v]):
            return False
    return True


# over 10 parameters, kept: a numba kernel (its arrays passed one by one)
@njit(cache=True, nogil=True)
def _visit(record: np.ndarray, a: int, nominal: np.ndarray, by_size: np.ndarray, pairs: tuple, tables: tuple,
           groups: tuple, found: np.ndarray, found_starts: np.ndarray, differing: bool, best: np.ndarray,
           tied: np.ndarray, bound: float, terms: np.ndarray, stop_at: float) -> None:
    """:func:`_scan_group` over the groups agreeing with the record of pattern ``a`` on the shared
    nominal variables (``found``, pattern by pattern from ``found_starts``) or, ``differing``, over
    the groups of the pairs with a shared nominal variable that differ from it in one or more of
    them, where so few differ that the group is within reach; none once the record is known not to be
    linked (``stop_at``, :func:`_known_unlinked`)."""
    pair_table, pair_size, pair_nominal = pairs
    table_columns, column_starts, table_numeric, numeric_starts, group_starts, heads = tables
    for at in range(len(by_size)):
        b = by_size[at]
        t, size = pair_table[a, b], pair_size[a, b]
        if t < 0 or (differing and not pair_nominal[a, b]):
            continue
        numeric = table_numeric[numeric_starts[t]:numeric_starts[t + 1]]
        key = _sum_key(record, numeric)
        if not differing:
            for k in range(found_starts[at], found_starts[at + 1]):
                _scan_group(record, nominal, found[k], numeric, key, 0, size, groups, best, tied, bound, terms,
                            stop_at)
            continue
        columns = table_columns[column_starts[t]:column_starts[t + 1]]
        for g in range(group_starts[t], group_starts[t + 1]):
            if _known_unlinked(best, stop_at):
                return
            differ = _mismatches(record, heads[g], columns)
            if differ and differ <= min(best[0], bound) * size * (1.0 + 2 * TIE_TOLERANCE) + 2e-12:
                _scan_group(record, nominal, g, numeric, key, differ, size, groups, best, tied, bound, terms,
                            stop_at)


# over 10 parameters, kept: a numba kernel (its arrays passed one by one)
@njit(cache=True, nogil=True)
def gower_scan(zm: np.ndarray, nominal: np.ndarray, own: np.ndarray, records: np.ndarray, m_of: np.ndarray,
                by_size: np.ndarray, pairs: tuple, tables: tuple, groups: tuple, levels: np.ndarray,
                every_group: bool, nearest: np.ndarray, partner: np.ndarray, ties: np.ndarray,
                settled: np.ndarray, linked_only: bool = False) -> None:
    """:func:`~sdc_dagster.risk.gower_search._gower_nearest_scan`'s loop over the protected ``records`` (see there; arrays of
    :func:`~sdc_dagster.risk.gower_search._group_tables`); writes their nearest distance, partner, tied originals and whether
    settled. The agreeing groups are looked up again only where a record's pattern or nominal
    categories differ from the previous record's. ``linked_only``: a record's scan ends as soon as an
    original nearer than its own (``own``) is found (:func:`_known_unlinked`; a record without an own
    distance at its first original): the record is settled as not linked, its nearest distance and
    partner those of that original (not the nearest)."""
    pair_table, pair_size, pair_nominal = pairs
    table_columns, column_starts, _, _, group_starts, heads = tables
    terms, probe = np.empty(zm.shape[1]), np.empty(zm.shape[1])
    found = np.empty(max(1, group_starts[-1]), dtype=np.int64)
    found_starts = np.zeros(len(by_size) + 1, dtype=np.int64)
    best, tied = np.empty(3), np.empty((len(groups[4]), 2))  # an entry per original at most
    previous = -1
    for i in records:
        record, a = zm[i], m_of[i]
        if not _same_lookups(zm, previous, i, m_of, nominal):
            for at in range(len(by_size)):
                t = pair_table[a, by_size[at]]
                found_starts[at + 1] = found_starts[at] + (_agreeing_groups(
                    record, t, table_columns, column_starts, group_starts, heads, levels, probe,
                    found[found_starts[at]:]) if t >= 0 else 0)
        previous = i
        best[0], best[1], best[2] = np.inf, -1.0, 0.0
        bound = own[i] if own[i] == own[i] else np.inf
        stop_at = bound if linked_only else -np.inf
        _visit(record, a, nominal, by_size, pairs, tables, groups, found, found_starts, False, best, tied, bound,
               terms, stop_at)
        done = True  # no original differing on a shared nominal variable (1 / |S| or more) is as near
        for b in by_size:
            if pair_nominal[a, b] and not best[0] * (1.0 + TIE_TOLERANCE) + 1e-12 < 1.0 / pair_size[a, b]:
                done = False
        done = done or _known_unlinked(best, stop_at)
        if not done and every_group:  # the other groups, each where its differing variables allow
            _visit(record, a, nominal, by_size, pairs, tables, groups, found, found_starts, True, best, tied, bound,
                   terms, stop_at)
            done = True
        nearest[i], partner[i], settled[i] = best[0], np.int64(best[1]), done
        hit = done and own[i] <= best[0] * (1.0 + 1e-12) + 1e-300 and best[0] < np.inf
        ties[i] = max(tied[:int(best[2]), 1].sum(), 1.0) if hit else 1.0
