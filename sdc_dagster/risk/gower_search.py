"""Exact Gower nearest-record search for record linkage with missing values (SPEC §4.1; issue 23).

:func:`gower_nearest` finds, for every protected record, its nearest original by Gower distance
(``cluster::daisy``'s rule: the variables observed in both records, continuous and ordinal scaled by
range, nominal 0/1), and counts the originals tied with it, without the n x n distances that
:mod:`sdc_dagster.risk.linkage`'s block computation holds: first among the originals that agree on
the shared nominal variables (:func:`_gower_nearest_agreeing`), then, for the records that search
does not settle, by k-d tree queries per pair of missing-value patterns.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.spatial import cKDTree

from sdc_dagster.keys import pack_codes

# Gower nearest-record linkage with missing values searches one k-d tree per (protected pattern,
# original pattern) of observed variables; a pattern pair costs about as much Python overhead as this
# many pairwise distances of the block computation, which is used when it is the cheaper of the two
_GOWER_PATTERN_PAIR_COST = 20_000
# nominal variables of more categories than this are searched by their codes, not one-hot (at most
# this many of them per search: 2^m queries each)
_GOWER_WIDE_LEVELS = 8
_GOWER_WIDE_NOMINALS = 3
# the search among originals agreeing on the nominal variables compares a record with every original
# of its group, instead of a k-d tree query, where the groups hold at most this many on average
_GOWER_GROUP_PAIRS = 8
# the original patterns after the largest are searched together for this many originals within reach
# of each protected record; a record with more is searched pattern by pattern
_GOWER_POOLED = 32
# originals count as tied nearest when their distance exceeds the nearest by at most this share (the
# k-d tree and the direct formula round differently; exact duplicates are at exactly equal distances)
TIE_TOLERANCE = 1e-9


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
    variable is observed in both (:func:`gower_block`'s rule, pair by pair)."""
    gap = np.abs(zm - zx)
    seen = ~np.isnan(gap)
    gap = np.where(nominal[None, :], (gap > 0).astype(float), gap)
    with np.errstate(invalid="ignore"):
        return np.where(seen, gap, 0.0).sum(axis=1) / seen.sum(axis=1)


class _AgreeingTree:
    """The originals of one missing-value pattern P grouped by their combination of the nominal
    variables ``grouped``, for the search among originals that agree on nominal variables
    (:func:`_gower_nearest_agreeing`); a group is numbered by its place in the table of combinations
    found among these originals. ``kd``: a k-d tree with the numeric variables ``numeric`` as
    coordinates, then the group number times ``spacing`` = #numeric x span + 1, wider than any
    distance within a group (numeric values lie within ``span`` of each other), so that a query
    never reaches another group; built on first use. ``members``: the originals by group (``starts``,
    ``sizes``), to compare a record with every original of its group where groups are small."""

    def __init__(self, zx: np.ndarray, originals: np.ndarray, numeric: np.ndarray, grouped: np.ndarray,
                 levels: np.ndarray, span: float):
        self.zx, self.originals, self.numeric, self.grouped, self.levels = zx, originals, numeric, grouped, levels
        self.spacing = len(numeric) * span + 1.0
        self.bound = len(numeric) * span + 0.5
        digits = zx[np.ix_(originals, grouped)].astype(np.int64)
        _, first, group = np.unique(pack_codes([digits], levels[grouped])[0], return_index=True,
                                    return_inverse=True)
        self.group = group.ravel()
        self.combinations = digits[first]  # one row per group, in group order
        self.members = originals[np.argsort(self.group, kind="stable")]
        self.sizes = np.bincount(self.group, minlength=len(first))
        self.starts = np.cumsum(self.sizes) - self.sizes
        self._kd = None

    @property
    def kd(self) -> cKDTree:
        if self._kd is None:
            self._kd = cKDTree(np.column_stack([self.zx[np.ix_(self.originals, self.numeric)],
                                                self.group * self.spacing]))
        return self._kd

    def probes(self, codes: np.ndarray, rows: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The groups agreeing with the protected ``rows`` (all of one pattern, ``observed``; ``codes``:
        the protected nominal codes as integers): one per combination of the grouped variables that
        agrees with the record on those it observes and is found among the originals (every
        category of a grouped variable the record misses, all combinations of several). Returns
        (position in ``rows``, group) of each probe."""
        missing = ~observed[self.grouped]
        if missing.any():
            dimensions = self.levels[self.grouped][missing]
            grid = np.indices(dimensions).reshape(len(dimensions), -1).T
            repeat = len(grid)
            digits = np.empty((len(rows) * repeat, len(self.grouped)), dtype=np.int64)
            digits[:, ~missing] = np.repeat(codes[np.ix_(rows, self.grouped[~missing])], repeat, axis=0)
            digits[:, missing] = np.tile(grid, (len(rows), 1))
        else:
            repeat, digits = 1, codes[np.ix_(rows, self.grouped)]
        # coded jointly with the table of combinations, so that the codes are comparable
        table, code = pack_codes([self.combinations, digits], self.levels[self.grouped])
        order = np.argsort(table)
        at = np.minimum(np.searchsorted(table[order], code), len(table) - 1)
        found = table[order][at] == code
        return np.flatnonzero(found) // repeat, order[at[found]]

    def points(self, zm: np.ndarray, rows: np.ndarray, group: np.ndarray) -> np.ndarray:
        """k-d tree query points of the protected ``rows`` in their ``group``."""
        return np.column_stack([zm[np.ix_(rows, self.numeric)], group * self.spacing])

    def is_small(self, group: np.ndarray) -> bool:
        """Whether the ``group`` of each probe holds so few originals, :data:`_GOWER_GROUP_PAIRS` on
        average, that comparing the record with each of them costs less than k-d tree queries."""
        return self.sizes[group].sum() <= _GOWER_GROUP_PAIRS * len(group)

    def within(self, zm: np.ndarray, rows: np.ndarray, group: np.ndarray,
               radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The originals of each probe's ``group`` within L1 distance ``radius`` on the numeric
        variables of its protected record (``rows``): (index of the probe, original position)."""
        sizes = self.sizes[group]
        index = np.repeat(np.arange(len(group)), sizes)
        offset = np.arange(len(index)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        candidate = self.members[np.repeat(self.starts[group], sizes) + offset]
        gap = np.abs(self.zx[np.ix_(candidate, self.numeric)] - zm[np.ix_(rows[index], self.numeric)]).sum(axis=1)
        near = gap <= radius[index]
        return index[near], candidate[near]


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


def _query_within(kd: cKDTree, points: np.ndarray, reach: np.ndarray, k: int, cap: float) -> np.ndarray:
    """Positions of the k nearest points of ``kd`` (L1) to each of ``points`` among those within
    ``reach`` of it (kd.n in the slots left empty). Points are queried in classes of reach up to the
    next power of 2 (at most ``cap``), as that class's upper bound: scipy takes one bound per query,
    and a small one keeps the search short."""
    found = np.full((len(points), k), kd.n)
    distance = np.full((len(points), k), np.inf)
    bound = np.minimum(np.exp2(np.ceil(np.log2(np.minimum(reach, cap)))), cap)
    for value in np.unique(bound):
        at = np.flatnonzero(bound == value)
        at = at[_tree_order(points[at])]
        distance[at], found[at] = kd.query(points[at], k=list(range(1, k + 1)), p=1, distance_upper_bound=value)
    # the class bound is up to twice the reach: farther points are left out, unless all k slots are
    # filled (then there may be more within reach than k)
    full = found[:, -1] < kd.n
    found[(distance > reach[:, None]) & ~full[:, None]] = kd.n
    return found


def _reach(nearest: np.ndarray, size: int) -> np.ndarray:
    """An L1 numerator beyond which an original of a pair with |S| = ``size`` shared variables is
    neither nearer than nor tied with (:data:`TIE_TOLERANCE`) the Gower distance ``nearest``, with
    room for rounding."""
    return nearest * size * (1.0 + 2 * TIE_TOLERANCE) + 2e-12


def _gower_nearest_agreeing(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, x_patterns, m_patterns,
                            own: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gower nearest originals found among those that agree on every shared nominal variable, and
    the protected records for which that search is exact (SPEC §4.1; issue 23).

    Within a pair (protected pattern Q, original pattern P) of observed variables with shared
    variables S, an original that differs from a protected record in a nominal variable of S is
    at Gower distance at least 1 / |S|. The originals of P that agree on all nominal variables of S
    are found with a k-d tree on the numeric variables of S (at most a few dimensions, where k-d
    trees are fast) and one more coordinate for the combination of P's nominal variables
    (:class:`_AgreeingTree`): a record that misses a nominal variable P observes is queried once
    per category of it (once per combination for several; only combinations found among the
    originals), and the union of those groups is exactly the originals of P agreeing on S, so the
    smallest of the queries is the nearest among them. The tree depends on P and the numeric
    variables of S only and is built once for every protected pattern; where a pattern's queries
    would outnumber the originals of P, the tree groups by the nominal variables of S instead (one
    query per record). Where the groups hold few originals (:data:`_GOWER_GROUP_PAIRS`), the record
    is compared with each original of its groups directly instead.

    The largest original pattern is searched first; every later search looks only as far as the
    nearest distance d found so far allows (:func:`_reach`: an original of a pair with |S| shared
    variables is as near only if the L1 distance on the numeric variables of S is at most d |S|,
    with the tie tolerance, so that no nearer or tied original is missed). The other original
    patterns that share the same numeric variables N with Q are searched together
    (:data:`_GOWER_POOLED`): one k-d tree on N over all their originals, queried for the originals
    within d max|S| of the record, whose exact Gower distances are then computed (those that
    disagree on a nominal variable lie at 1 / |S| or more and never decide a settled record); a
    record with more originals within that reach is searched pattern by pattern. Where several
    originals are equally near, the lowest position is kept, as in the block computation.

    A record is *settled* when its nearest in-group distance d, over all original patterns, is
    below 1 / |S| of every pair with a nominal shared variable (with the tie tolerance): then no
    original outside the groups is as near, the nearest is exact and the originals tied with it
    are in the groups or among the pooled originals within reach, counted by radius queries of the
    same trees (disjoint groups, so the counts add up) and on the pooled distances. The others are
    left to :func:`gower_nearest`'s full search. Returns (nearest distance, partner
    position, tied originals of the settled records whose own original is nearest (1 elsewhere),
    settled mask)."""
    (x_patterns, x_of), (m_patterns, m_of) = x_patterns, m_patterns
    n = len(zm)
    nearest = np.full(n, np.inf)
    partner = np.full(n, -1, dtype=np.int64)
    ties = np.ones(n)
    settled = np.zeros(n, dtype=bool)
    x_rows = _rows_by_pattern(x_of, len(x_patterns))
    m_rows = _rows_by_pattern(m_of, len(m_patterns))
    levels = _nominal_levels(zx, zm, nominal)
    both = np.vstack([zx[:, ~nominal], zm[:, ~nominal]])
    span = float(np.nanmax(both, initial=0.0) - np.nanmin(both, initial=0.0)) if both.size else 0.0
    trees: dict[tuple, _AgreeingTree] = {}
    pools: dict[tuple, _AgreeingTree] = {}
    codes = np.nan_to_num(zm, nan=0.0).astype(np.int64)  # read on the observed nominal variables only
    by_size = np.argsort([-len(r) for r in x_rows], kind="stable")

    def update(record: np.ndarray, candidate: np.ndarray, distance: np.ndarray) -> None:
        """The nearest of each record's candidates (lowest original at equal distance) replaces its
        nearest so far where nearer (or as near and lower)."""
        first = np.lexsort((candidate, distance, record))
        first = first[np.r_[True, record[first][1:] != record[first][:-1]]] if len(first) else first
        record, candidate, distance = record[first], candidate[first], distance[first]
        better = (distance < nearest[record]) | ((distance == nearest[record]) & (candidate < partner[record]))
        nearest[record[better]] = distance[better]
        partner[record[better]] = candidate[better]

    def search(m_pattern: np.ndarray, b: int, rows: np.ndarray) -> tuple[_AgreeingTree, int, np.ndarray]:
        """The agreeing search of the protected ``rows`` (pattern ``m_pattern``) among the originals
        of pattern ``b``; returns (tree, |S|, rows) for the count of ties."""
        shared = m_pattern & x_patterns[b]
        numeric = np.flatnonzero(shared & ~nominal)
        grouped = np.flatnonzero(x_patterns[b] & nominal)
        if len(rows) * np.prod(levels[grouped][~m_pattern[grouped]], dtype=float) > len(x_rows[b]):
            grouped = np.flatnonzero(shared & nominal)
        key = (b, numeric.tobytes(), grouped.tobytes())
        if key not in trees:
            trees[key] = _AgreeingTree(zx, x_rows[b], numeric, grouped, levels, span)
        tree, size = trees[key], int(shared.sum())
        probe, group = tree.probes(codes, rows, m_pattern)
        if tree.is_small(group):  # every original of the group as near as the nearest so far
            index, candidate = tree.within(zm, rows[probe], group, _reach(nearest[rows[probe]], size))
            probe = probe[index]
        else:  # the group's nearest by the k-d tree, if as near as the nearest so far
            found = _query_within(tree.kd, tree.points(zm, rows[probe], group),
                                  _reach(nearest[rows[probe]], size), 1, tree.bound)[:, 0]
            inside = found < len(tree.originals)
            probe, candidate = probe[inside], tree.originals[found[inside]]
        update(rows[probe], candidate, gower_own_distances(zx[candidate], zm[rows[probe]], nominal))
        return tree, size, rows

    for a, m_pattern in enumerate(m_patterns):
        rows = m_rows[a]
        shares = [b for b in by_size if (m_pattern & x_patterns[b]).any()]
        # the largest |S| of a pair sharing a nominal variable
        largest = max([int((m_pattern & x_patterns[b]).sum()) for b in shares
                       if (m_pattern & x_patterns[b] & nominal).any()], default=0)
        searched = [search(m_pattern, shares[0], rows)] if shares else []  # the largest original pattern
        # the other original patterns sharing the same numeric variables N with Q (at least one)
        # are searched together, for their originals within the reach of the nearest so far
        pooled = {}
        for b in shares[1:]:
            pooled.setdefault(np.flatnonzero(m_pattern & x_patterns[b] & ~nominal).tobytes(), []).append(b)
        found_pairs = []  # (record, original, distance, |S|) of the pooled searches
        for numeric_key, members in pooled.items():
            numeric = np.frombuffer(numeric_key, dtype=np.int64)
            if not len(numeric):
                searched += [search(m_pattern, b, rows) for b in members]
                continue
            # grouped by the nominal variables Q and all these patterns observe
            common = np.flatnonzero(np.logical_and.reduce([m_pattern & x_patterns[b] & nominal for b in members]))
            key = (tuple(members), numeric_key, common.tobytes())
            if key not in pools:
                originals = np.sort(np.concatenate([x_rows[b] for b in members]))
                pools[key] = _AgreeingTree(zx, originals, numeric, common, levels, span)
            tree = pools[key]
            sizes = np.zeros(len(x_patterns), dtype=np.int64)
            sizes[members] = [int((m_pattern & x_patterns[b]).sum()) for b in members]
            probe, group = tree.probes(codes, rows, m_pattern)
            found = _query_within(tree.kd, tree.points(zm, rows[probe], group),
                                  _reach(nearest[rows[probe]], int(sizes.max())), _GOWER_POOLED, tree.bound)
            full = found[:, -1] < len(tree.originals)  # maybe more within reach: searched pattern by pattern
            index, slot = np.nonzero(found[~full] < len(tree.originals))
            record = rows[probe[~full]][index]
            candidate = tree.originals[found[~full][index, slot]]
            distance = gower_own_distances(zx[candidate], zm[record], nominal)
            kept = ~np.isnan(distance)  # a pair with no variable observed in both has no distance
            found_pairs.append((record[kept], candidate[kept], distance[kept], sizes[x_of[candidate[kept]]]))
            update(*found_pairs[-1][:3])
            if full.any():
                searched += [search(m_pattern, b, rows[probe[full]]) for b in members]
        reach = nearest[rows] * (1.0 + TIE_TOLERANCE) + 1e-12
        done = np.isfinite(nearest[rows]) & (reach < 1.0 / largest) if largest else np.ones(len(rows), dtype=bool)
        settled[rows] = done
        hit_rows = rows[done & (own[rows] <= nearest[rows] * (1.0 + 1e-12) + 1e-300) & np.isfinite(nearest[rows])]
        if not len(hit_rows):
            continue
        counted = np.zeros(len(hit_rows))  # tied originals of each record of hit_rows (ascending)
        for tree, size, searched_rows in searched:
            hit = searched_rows[np.isin(searched_rows, hit_rows, assume_unique=True)]
            probe, group = tree.probes(codes, hit, m_pattern)
            radius = nearest[hit[probe]] * size * (1.0 + TIE_TOLERANCE) + 1e-12
            if tree.is_small(group):
                within = np.bincount(tree.within(zm, hit[probe], group, radius)[0], minlength=len(group))
            else:
                within = in_tree_order(lambda points, radius: tree.kd.query_ball_point(
                    points, radius, p=1, return_length=True), tree.points(zm, hit[probe], group), radius)
            counted += np.bincount(np.searchsorted(hit_rows, hit[probe]), weights=within, minlength=len(hit_rows))
        for record, _, distance, size in found_pairs:
            tied = distance * size <= nearest[record] * size * (1.0 + TIE_TOLERANCE) + 1e-12
            at = np.minimum(np.searchsorted(hit_rows, record[tied]), len(hit_rows) - 1)
            counted += np.bincount(at[hit_rows[at] == record[tied]], minlength=len(hit_rows))
        ties[hit_rows] = np.maximum(counted, 1.0)
    return nearest, partner, ties, settled


def gower_nearest(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, x_patterns, m_patterns,
                              own: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact Gower nearest original of every protected record, without the n x n distances
    (SPEC §4.1; issue 23's per-pattern search), and how many originals are tied nearest.

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
    :func:`observed_patterns` of ``zx`` and ``zm``. Returns (nearest distance, inf where no original
    shares a variable; partner position, -1 there; tied originals, 1 where the own original is not
    nearest)."""
    nearest, partner, ties, settled = _gower_nearest_agreeing(zx, zm, nominal, x_patterns, m_patterns, own)
    if settled.all():
        return nearest, partner, ties
    levels = _nominal_levels(zx, zm, nominal)
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
    (x_patterns, x_of), (m_patterns, m_of) = x_patterns, m_patterns
    x_rows = _rows_by_pattern(x_of, len(x_patterns))
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
