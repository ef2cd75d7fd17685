"""Exact Gower nearest-record search for record linkage with missing values (SPEC §4.1; issue 23).

:func:`gower_nearest` finds, for every protected record, its nearest original by Gower distance
(``cluster::daisy``'s rule: the variables observed in both records, continuous and ordinal scaled by
range, nominal 0/1), and counts the originals tied with it, without the n x n distances that
:mod:`sdc_dagster.risk.linkage`'s block computation holds: a compiled scan of the groups of
originals that agree on the shared nominal variables (:func:`_gower_nearest_scan`), then of the groups
that differ in a few of them for the records that scan does not settle, or, where those are too
many, k-d tree queries per pair of missing-value patterns. The first call in a fresh environment
compiles the scan (about 10 s; cached on disk by numba afterwards).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.spatial import cKDTree

from sdc_dagster.keys import pack_codes
from sdc_dagster.numerics.kept import KeptResults, content_digest
from sdc_dagster.risk.gower_scan import TIE_TOLERANCE, gower_scan, own_distances

# Gower nearest-record linkage with missing values searches per pair (protected pattern, original
# pattern) of observed variables; a pattern pair costs about as much overhead (a table of groups, k-d
# tree queries for the records the scan leaves) as this many pairwise distances of the block
# computation, which is used when it is the cheaper of the two
_GOWER_PATTERN_PAIR_COST = 20_000
# nominal variables of more categories than this are searched by their codes, not one-hot (at most
# this many of them per search: 2^m queries each)
_GOWER_WIDE_LEVELS = 8
_GOWER_WIDE_NOMINALS = 3
# the search among originals that agree on the shared nominal variables looks a record up once per
# combination of the categories of the nominal variables the originals observe and it misses; where a
# pair of patterns' records would make more lookups than this many per original, the originals are
# grouped by the shared nominal variables instead (one lookup per record, one more table to build: a
# binary search costs far less than sorting and copying an original)
_GOWER_LOOKUPS_PER_ORIGINAL = 16.0
# records not settled by that search are searched group by group over all groups of originals (an
# exact scan) while (records x groups) stays below this; above, by k-d trees over all originals
_GOWER_SCAN_GROUPS = 20_000_000


def _gower_embedding(z: np.ndarray, nominal: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Complete records mapped so that the L1 distance between mapped rows is their Gower distance:
    a nominal variable one-hot coded with entries 1/2 (two different categories differ in two
    entries), every block divided by the number of variables."""
    blocks = [z[:, ~nominal]]
    for j in np.flatnonzero(nominal):
        blocks.append(0.5 * (z[:, j, None] == np.arange(levels[j])[None, :]))
    return np.hstack(blocks) / z.shape[1]


def observed_patterns(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct patterns of observed variables of the rows of ``z`` (in lexicographic order) and
    each row's pattern. Each row's pattern is packed into one code first (:func:`keys.pack_codes`,
    radix 2, order-preserving), so that the distinct patterns are those of a 1-d array."""
    observed = ~np.isnan(z)
    code = pack_codes([observed.astype(np.int64)], np.full(z.shape[1], 2))[0]
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return observed[first], inverse.ravel()


def _rows_by_pattern(pattern_of: np.ndarray, count: int) -> list[np.ndarray]:
    """The row positions (ascending) of each of ``count`` patterns, from each row's pattern."""
    order = np.argsort(pattern_of, kind="stable")
    return np.split(order, np.cumsum(np.bincount(pattern_of, minlength=count))[:-1])


def _nominal_levels(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Per variable, the number of codes of a nominal one in either file (its largest code + 1;
    0 for a numeric one)."""
    largest = np.maximum(np.nanmax(zx, axis=0, initial=0), np.nanmax(zm, axis=0, initial=0))
    return np.where(nominal, largest + 1, 0).astype(np.int64)


def pattern_search_is_cheaper(x_patterns: np.ndarray, m_patterns: np.ndarray, n_x: int, n_m: int) -> bool:
    """Whether :func:`gower_nearest` over these patterns of observed variables costs less
    than the block computation of all n_x x n_m pairs."""
    return len(x_patterns) * len(m_patterns) * _GOWER_PATTERN_PAIR_COST < n_x * n_m


def gower_own_distances(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Gower distance of each protected record to its own original (row i to row i), NaN where no
    variable is observed in both (:func:`gower_block`'s rule, pair by pair): the compiled
    :func:`~sdc_dagster.risk.gower_scan.own_distances` (on 1,000,000 records x 10 variables 0.35 ->
    0.05 CPU s), bit for bit numpy's formula (the absolute gaps, a nominal gap as 0 or 1, summed over
    the variables observed in both with numpy's pairwise sum along a row, over their number)."""
    return own_distances(np.ascontiguousarray(zx, dtype=np.float64), np.ascontiguousarray(zm, dtype=np.float64),
                         np.ascontiguousarray(nominal, dtype=np.bool_))


def _tree_order(points: np.ndarray) -> np.ndarray:
    """An order of query points by their last coordinate (the group), then their first: consecutive
    queries then visit the same parts of a k-d tree, several times faster than in data order."""
    if not points.size:
        return np.arange(len(points))
    return np.lexsort((points[:, 0], points[:, -1]))


def in_tree_order(query, points: np.ndarray, *per_point: np.ndarray):
    """``query(points, *per_point)`` (a k-d tree query) run on the points in tree order
    (:func:`_tree_order`); its result (an array or a tuple of arrays) in the order of ``points``."""
    order = _tree_order(points)
    result = query(points[order], *(values[order] for values in per_point))

    def unsorted(values):
        out = np.empty_like(values)
        out[order] = values
        return out

    return tuple(map(unsorted, result)) if isinstance(result, tuple) else unsorted(result)


def _group_tables(zx: np.ndarray, nominal: np.ndarray, levels: np.ndarray, x_patterns: np.ndarray,
                  x_rows: list[np.ndarray], m_patterns: np.ndarray, m_count: np.ndarray) -> dict:
    """The originals of each pattern P grouped by their categories of nominal variables, for
    :func:`gower_scan`: per pair (protected pattern Q, original pattern P) sharing a variable, a
    table of P's originals grouped by P's nominal variables (a record missing some of them is
    looked up once per combination of their categories) or, where the records of Q would make more
    lookups than :data:`_GOWER_LOOKUPS_PER_ORIGINAL` per original of P, by the nominal variables of
    S = Q & P. Within a group the originals are sorted by their sum of the numeric variables of S,
    then by position. Pairs needing the same table share it. Returns the kernel's arrays by name:
    per pair its table, |S| and its number of shared nominal variables; per table its nominal
    variables and its numeric ones (flat, with starts) and its first group; per group its first
    original (``starts``, one more at the end), the row of that original (``heads``) and its lowest
    position; per original in table order its row, its sum and its position. None if no pair
    shares a variable."""
    shared = m_patterns[:, None, :] & x_patterns[None, :, :]
    sizes = np.array([len(r) for r in x_rows])
    lookups = np.prod(np.where(x_patterns[None, :, :] & ~m_patterns[:, None, :] & nominal, levels, 1), axis=2,
                      dtype=float)
    by_shared = lookups * m_count[:, None] > _GOWER_LOOKUPS_PER_ORIGINAL * sizes[None, :]
    grouped = np.where(by_shared[:, :, None], shared, x_patterns[None, :, :]) & nominal
    numeric = shared & ~nominal
    a, b = np.nonzero(shared.any(axis=2))
    table_keys = np.column_stack([b, grouped[a, b], numeric[a, b]])
    keys, table = np.unique(table_keys, axis=0, return_inverse=True)
    if not len(keys):
        return None
    pair_table = np.full(shared.shape[:2], -1, dtype=np.int64)
    pair_table[a, b] = table.ravel()
    positions, sums, firsts, group_starts, offset = [], [], [], [0], 0
    d = len(nominal)
    columns = [np.flatnonzero(key[1:d + 1]) for key in keys]
    numerics = [np.flatnonzero(key[d + 1:]) for key in keys]
    originals = content_digest(zx, levels)
    for key, grouped_by, summed in zip(keys, columns, numerics):
        # a table depends on the originals and the codes' radices only, and every plan's check links
        # to the same originals (kept by content, :data:`_SORTED_TABLES`)
        order, total, starts = _SORTED_TABLES.get((originals, key.tobytes()), lambda: _sorted_table(
            zx, x_rows[key[0]], levels, grouped_by, summed))
        firsts.append(starts + offset)
        group_starts.append(group_starts[-1] + len(starts))
        positions.append(order)
        sums.append(total)
        offset += len(order)
    position, first = np.concatenate(positions), np.concatenate(firsts)
    rows = zx[position]
    return {"pairs": (pair_table, shared.sum(axis=2), (shared & nominal).sum(axis=2)),
            "tables": (np.concatenate(columns).astype(np.int64), np.cumsum([0] + [len(c) for c in columns]),
                       np.concatenate(numerics).astype(np.int64), np.cumsum([0] + [len(c) for c in numerics]),
                       np.array(group_starts, dtype=np.int64), rows[first]),
            "groups": (np.r_[first, len(position)], np.minimum.reduceat(position, first), rows,
                       np.concatenate(sums), position)}


#: The tables of :func:`_group_tables` (:func:`_sorted_table`) of the last few linkages, by the
#: content of the originals with the codes' radices and the table's key: the release checks of
#: every plan (and every rung of the plan search) link to the same originals.
_SORTED_TABLES = KeptResults(256)


def _sorted_table(zx: np.ndarray, originals: np.ndarray, levels: np.ndarray, grouped_by: np.ndarray,
                  summed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One table of :func:`_group_tables`: the ``originals`` (positions, ascending) grouped by their
    codes of the nominal variables ``grouped_by`` and sorted by their sum of the numeric variables
    ``summed`` within a group, then by position; (positions in that order, their sums, the first
    place of each group)."""
    code = pack_codes([zx[np.ix_(originals, grouped_by)].astype(np.int64)], levels[grouped_by])[0]
    total = zx[np.ix_(originals, summed)].sum(axis=1)
    order = np.lexsort((total, code))  # by group, then sum, then position (originals ascending)
    code = code[order]
    return originals[order], total[order], np.flatnonzero(np.r_[True, code[1:] != code[:-1]])


def _gower_nearest_scan(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, x_patterns, m_patterns,
                        own: np.ndarray, levels: np.ndarray, x_rows: list[np.ndarray], linked_only: bool = False
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gower nearest originals, tied originals and settled records by a compiled scan of groups of
    originals (SPEC §4.1; issue 23); ``own``: each record's distance to its own original (NaN where
    undefined), an upper bound of its nearest distance that bounds the scan from the start;
    ``levels``, ``x_rows``: :func:`_nominal_levels` and the originals of each pattern
    (:func:`_rows_by_pattern`), as :func:`gower_nearest` has them.

    Within a pair (protected pattern Q, original pattern P) of observed variables with shared
    variables S, an original that differs from a protected record in k nominal variables of S is at
    Gower distance at least k / |S|. The originals of P are grouped by their nominal categories
    (:func:`_group_tables`); a record looks up the groups that agree with it on the nominal variables
    of S (one lookup per combination of categories of the variables P observes and it misses: the
    union is exactly the originals of P agreeing on S) and scans each group from its place in the
    originals' sums of the numeric variables of S, as far as an original can still be as near as the
    nearest so far (:func:`~sdc_dagster.risk.gower_scan._scan_group`). Each candidate's distance is computed exactly as
    :func:`gower_own_distances` computes it (:func:`~sdc_dagster.risk.gower_scan._pair_distance`, the same rounding), a nearer
    one replaces the nearest, an equally near one only if its position is lower (the block
    computation's argmin), and the originals within the tie radius (:data:`TIE_TOLERANCE`) are
    counted in the same pass (:func:`~sdc_dagster.risk.gower_scan._offer`).

    A record is *settled* when its nearest distance d among agreeing originals, over all original
    patterns, is below 1 / |S| of every pair with a shared nominal variable (with the tie
    tolerance): then no original that differs is as near or tied, and the result is exact. The
    others are scanned again over every group of those pairs whose number of differing nominal
    variables k leaves it within reach (k <= d |S|), while (records x groups) stays under
    :data:`_GOWER_SCAN_GROUPS`; above, they are left to :func:`gower_nearest`'s k-d tree search.
    Records are scanned in the order of their pattern, nominal categories and numeric sum, so that
    consecutive records share their lookups and the parts of the groups they scan. Returns (nearest
    distance, partner position, tied originals of the settled records whose own original is nearest
    (1 elsewhere), settled mask)."""
    x_patterns, (m_patterns, m_of) = x_patterns[0], m_patterns
    tables = _group_tables(zx, nominal, levels, x_patterns, x_rows, m_patterns,
                           np.bincount(m_of, minlength=len(m_patterns)))
    n = len(zm)
    nearest, partner, ties = np.full(n, np.inf), np.full(n, -1, dtype=np.int64), np.ones(n)
    settled = np.ones(n, dtype=bool)
    if tables is None:  # no original shares a variable with any protected record
        return nearest, partner, ties, settled
    by_size = np.argsort([-len(r) for r in x_rows], kind="stable")

    def scan(records: np.ndarray, every_group: bool) -> None:
        gower_scan(zm, nominal, own, records, m_of, by_size, **tables, levels=levels.astype(float),
                    every_group=every_group, nearest=nearest, partner=partner, ties=ties, settled=settled,
                    linked_only=linked_only)

    # records in the order of their pattern, nominal categories and numeric sum: consecutive records
    # share their agreeing groups (looked up once) and visit the same parts of them (kept in cache)
    filled = np.nan_to_num(zm, nan=-1.0)
    scan(np.lexsort((filled[:, ~nominal].sum(axis=1),) + tuple(filled[:, nominal].T[::-1]) + (m_of,)), False)
    unsettled = np.flatnonzero(~settled)
    if len(unsettled) and len(unsettled) * (len(tables["groups"][0]) - 1) <= _GOWER_SCAN_GROUPS:  # x groups
        scan(unsettled, True)
    return nearest, partner, ties, settled


def gower_nearest(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, x_patterns, m_patterns,
                  own: np.ndarray, *, linked_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact Gower nearest original of every protected record, without the n x n distances
    (SPEC §4.1; issue 23's per-pattern search), and how many originals are tied nearest.

    The records :func:`_gower_nearest_scan` settles (all but those whose nearest agreeing original is
    not nearer than an original differing in a nominal variable could be, where they are too many
    for its scan of the differing groups) take its result; the others are searched by k-d trees.
    Within a pair (protected pattern Q, original pattern P) of observed variables, every pair of
    records is compared on the same variables S = Q & P, so their Gower distance is the L1 distance
    of the variables of S (continuous and ordinal scaled by range, nominal one-hot coded with
    entries 1/2, :func:`_gower_embedding`) divided by |S|: k-d tree queries per pattern pair. The
    nearest over all original patterns is the nearest overall (a tie keeps the lower original
    position, as the block computation's argmin).

    A nominal variable of many categories (an occupation code) would make the one-hot space too
    wide for a k-d tree; up to :data:`_GOWER_WIDE_NOMINALS` such variables H of S are searched
    instead by one query per subset T of H: the variables of T as their codes times |S| + 1 (a
    differing code then costs more than any Gower numerator), those of H - T left out and counted as
    differing (+1 each). Every query's distances are at least the true ones, and the query with T =
    the variables on which an original agrees gives its true distance, so the smallest over the
    queries is the exact nearest.

    Ties: for each protected record whose own original is nearest (``own``, its distance to it, at
    most the nearest distance), a second pass counts the originals within the nearest distance
    (:data:`TIE_TOLERANCE`) by radius queries of the same trees: in the query of subset T the
    radius is d_min |S| - |H - T|, so that an original is counted in the one query whose T is the
    set of wide variables it agrees on (in any other it lies farther, or would be nearer than the
    nearest) and every tied original is counted exactly once. ``x_patterns``, ``m_patterns``:
    :func:`observed_patterns` of ``zx`` and ``zm``; ``own``: each record's distance to an original
    (its own, or any: an upper bound of its nearest distance, which bounds the scan), as
    :func:`gower_own_distances` computes it, NaN where undefined. Returns (nearest distance, inf where no original
    shares a variable; partner position, -1 there; tied originals, 1 where the own original is not
    nearest).

    ``linked_only`` (a linkage that reports its shares, not its partners): the scan of a record ends
    at the first original found nearer than ``own`` beyond the linkage's tolerance (issue 38): the
    record is not linked whatever the originals not yet scanned, so its distance and partner are
    then those of that original, not necessarily the nearest; the records linked (own original
    nearest) and their tied originals are exactly as without it."""
    levels = _nominal_levels(zx, zm, nominal)
    x_rows = _rows_by_pattern(x_patterns[1], len(x_patterns[0]))
    nearest, partner, ties, settled = _gower_nearest_scan(zx, zm, nominal, x_patterns, m_patterns, own, levels,
                                                          x_rows, linked_only)
    if settled.all():
        return nearest, partner, ties
    widths = np.where(nominal, levels, 1)
    # undivided embedding; a missing value is written as -1 (a nominal one then has no one-hot entry)
    # and never compared, since only the variables observed in both records are searched; of the
    # protected records only those left to this search are embedded
    embed = lambda z: _gower_embedding(np.nan_to_num(z, nan=-1.0), nominal, levels) * zx.shape[1]  # noqa: E731
    ex = embed(zx)
    em = np.empty((len(zm), ex.shape[1]))
    em[~settled] = embed(zm[~settled])
    order = np.concatenate([np.flatnonzero(~nominal), np.flatnonzero(nominal)])  # _gower_embedding's block order
    position = np.empty(len(order), dtype=np.int64)  # first embedding column of each variable
    position[order] = np.concatenate([[0], np.cumsum(widths[order])[:-1]])
    wide = np.flatnonzero(nominal & (levels > _GOWER_WIDE_LEVELS))
    wide = wide[np.argsort(-levels[wide], kind="stable")][:_GOWER_WIDE_NOMINALS]
    (x_patterns, _), (m_patterns, m_of) = x_patterns, m_patterns
    trees: dict[tuple, cKDTree | None] = {}

    def space(z, e, rows, shared, kept):
        """Rows of the search space: the embedded variables of ``shared`` outside ``wide``, then the
        codes of the wide variables ``kept`` times |S| + 1."""
        narrow = [j for j in np.flatnonzero(shared) if j not in wide]
        columns = np.concatenate([np.arange(position[j], position[j] + widths[j]) for j in narrow] or [[]]).astype(int)
        return np.hstack([e[np.ix_(rows, columns)], z[np.ix_(rows, kept)] * (shared.sum() + 1.0)])

    def queries(selected: np.ndarray):
        """(protected rows, original pattern, tree or None, query points, |S|, |H - T|) of every query
        of the protected records ``selected`` (a boolean mask)."""
        for a, m_pattern in enumerate(m_patterns):
            rows = np.flatnonzero((m_of == a) & selected)
            if not len(rows):
                continue
            for b, x_pattern in enumerate(x_patterns):
                shared = m_pattern & x_pattern
                if not shared.any():
                    continue
                wide_shared = [j for j in wide if shared[j]]
                for size in range(len(wide_shared) + 1):
                    for kept in combinations(wide_shared, size):
                        kept = list(kept)
                        key = (b, shared.tobytes(), tuple(kept))
                        if key not in trees:
                            searched = space(zx, ex, x_rows[b], shared, kept)
                            trees[key] = cKDTree(searched) if searched.shape[1] else None
                        points = space(zm, em, rows, shared, kept) if trees[key] is not None else None
                        yield rows, b, trees[key], points, int(shared.sum()), len(wide_shared) - size

    for rows, b, tree, points, _, _ in queries(~settled):
        if tree is not None:
            found = tree.query(points, k=1, p=1)[1]
        else:  # only wide variables, none kept: every original is as near, take the first
            found = np.zeros(len(rows), dtype=np.int64)
        candidate = x_rows[b][found]
        # the tree's sums carry rounding from the wide codes' large coordinates: the distance
        # of each pair found, as the own distances are computed, keeps exact ties exact
        distance = gower_own_distances(zx[candidate], zm[rows], nominal)
        better = (distance < nearest[rows]) | ((distance == nearest[rows]) & (candidate < partner[rows]))
        nearest[rows[better]] = distance[better]
        partner[rows[better]] = candidate[better]
    hit = (own <= nearest * (1.0 + 1e-12) + 1e-300) & np.isfinite(nearest) & ~settled
    ties[hit] = 0.0
    for rows, b, tree, points, size, left_out in queries(hit):
        radius = nearest[rows] * size * (1.0 + TIE_TOLERANCE) + 1e-12 - left_out
        reach = radius >= 0
        if tree is None:  # every original of the pattern is at the distance |H| / |S|
            ties[rows[reach]] += len(x_rows[b])
        elif reach.any():
            ties[rows[reach]] += tree.query_ball_point(points[reach], radius[reach], p=1, return_length=True)
    return nearest, partner, np.maximum(ties, 1.0)
