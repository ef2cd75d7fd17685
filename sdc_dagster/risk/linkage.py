"""Distance-based record linkage risk (SPEC §4.1): Euclidean, Mahalanobis or Gower distance
(mixed continuous, nominal and ordinal variables, as ``cluster::daisy``), nearest or one-to-one
assignment, as sdcMicro ``recordLinkage`` (R/recordLinkage.R).

Rows of the original and the protected frame are matched by position; results are indexed like
``protected``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from sdc_dagster.errors import SDCInputError
from sdc_dagster.keys import pack_codes
from sdc_dagster.numerics.distance import gower_block, gower_encoding
from sdc_dagster.validation import check_option, paired_matrices


@dataclass(frozen=True)
class RecordLinkageRisk:
    """Result of :func:`record_linkage_risk`: the share of correct links and the per-record flags.

    ``expected_risk``: the expected share of correct links when the intruder breaks ties at random
    instead of in his favour (nearest: among the originals tied nearest; one-to-one: between
    identical records); at most ``risk``.

    ``partner``: the index label of the original record each protected record is linked to (NA
    for a record that takes no part); with ties in "nearest" mode, the first nearest in data order.
    """

    risk: float
    linked: pd.Series
    compared: int
    partner: pd.Series | None = None
    distance: str = "euclidean"
    assignment: str = "nearest"
    expected_risk: float | None = None


_LINKAGE_DISTANCES = ("euclidean", "mahalanobis", "gower")
_LINKAGE_ASSIGNMENTS = ("nearest", "one_to_one")
# one-to-one linkage builds an n x n cost matrix (8 n^2 bytes) and solves it in O(n^3)
MAX_ONE_TO_ONE_LINKAGE = 10_000
# the exact Gower computation holds about this many (protected, original) pairs at a time
_GOWER_BLOCK_PAIRS = 1 << 22
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
_TIE_TOLERANCE = 1e-9



def _linkage_space(x: np.ndarray, xm: np.ndarray, distance: str, columns: Sequence[str]):
    """Original and protected records mapped so that the Euclidean or Mahalanobis distance is the
    Euclidean distance (Minkowski p = 2) between the mapped rows."""
    centre = x.mean(axis=0)
    if distance == "euclidean":
        scale = x.std(axis=0, ddof=1) if len(x) > 1 else np.ones(x.shape[1])
        scale = np.where(scale > 0, scale, 1.0)
        return (x - centre) / scale, (xm - centre) / scale, 2
    # Mahalanobis: whiten with the covariance of the original records, d^2 = (a - b)' S^-1 (a - b)
    if len(x) <= x.shape[1]:
        raise SDCInputError(
            f"distance 'mahalanobis': needs more records observed in both files ({len(x)}) than columns "
            f"({x.shape[1]}) to estimate the covariance"
        )
    covariance = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    if eigenvalues.min() <= 1e-12 * max(eigenvalues.max(), 0.0) or eigenvalues.max() <= 0:
        raise SDCInputError(
            f"distance 'mahalanobis': the covariance of the original columns {list(columns)} is singular "
            "(a constant or linearly dependent column); drop it or use distance='euclidean'"
        )
    whiten = eigenvectors / np.sqrt(eigenvalues)
    return (x - centre) @ whiten, (xm - centre) @ whiten, 2



def _gower_embedding(z: np.ndarray, nominal: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Complete records mapped so that the L1 distance between mapped rows is their Gower distance:
    a nominal variable one-hot coded with entries 1/2 (two different categories differ in two
    entries), every block divided by the number of variables."""
    blocks = [z[:, ~nominal]]
    for j in np.flatnonzero(nominal):
        blocks.append(0.5 * (z[:, j, None] == np.arange(levels[j])[None, :]))
    return np.hstack(blocks) / z.shape[1]


def _observed_patterns(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _pattern_search_is_cheaper(x_patterns: np.ndarray, m_patterns: np.ndarray, n_x: int, n_m: int) -> bool:
    """Whether :func:`_gower_nearest_by_pattern` over these patterns of observed variables costs less
    than the block computation of all n_x x n_m pairs."""
    return len(x_patterns) * len(m_patterns) * _GOWER_PATTERN_PAIR_COST < n_x * n_m


def _gower_own_distances(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray) -> np.ndarray:
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


def _in_tree_order(query, points: np.ndarray, *per_point: np.ndarray):
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
    neither nearer than nor tied with (:data:`_TIE_TOLERANCE`) the Gower distance ``nearest``, with
    room for rounding."""
    return nearest * size * (1.0 + 2 * _TIE_TOLERANCE) + 2e-12


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
    left to :func:`_gower_nearest_by_pattern`'s full search. Returns (nearest distance, partner
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
    both = np.vstack([zx, zm])
    levels = np.where(nominal, np.nanmax(both, axis=0, initial=0) + 1, 0).astype(np.int64)
    both = both[:, ~nominal]
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
        update(rows[probe], candidate, _gower_own_distances(zx[candidate], zm[rows[probe]], nominal))
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
            distance = _gower_own_distances(zx[candidate], zm[record], nominal)
            kept = ~np.isnan(distance)  # a pair with no variable observed in both has no distance
            found_pairs.append((record[kept], candidate[kept], distance[kept], sizes[x_of[candidate[kept]]]))
            update(*found_pairs[-1][:3])
            if full.any():
                searched += [search(m_pattern, b, rows[probe[full]]) for b in members]
        reach = nearest[rows] * (1.0 + _TIE_TOLERANCE) + 1e-12
        done = np.isfinite(nearest[rows]) & (reach < 1.0 / largest) if largest else np.ones(len(rows), dtype=bool)
        settled[rows] = done
        hit_rows = rows[done & (own[rows] <= nearest[rows] * (1.0 + 1e-12) + 1e-300) & np.isfinite(nearest[rows])]
        if not len(hit_rows):
            continue
        counted = np.zeros(len(hit_rows))  # tied originals of each record of hit_rows (ascending)
        for tree, size, searched_rows in searched:
            hit = searched_rows[np.isin(searched_rows, hit_rows, assume_unique=True)]
            probe, group = tree.probes(codes, hit, m_pattern)
            radius = nearest[hit[probe]] * size * (1.0 + _TIE_TOLERANCE) + 1e-12
            if tree.is_small(group):
                within = np.bincount(tree.within(zm, hit[probe], group, radius)[0], minlength=len(group))
            else:
                within = _in_tree_order(lambda points, radius: tree.kd.query_ball_point(
                    points, radius, p=1, return_length=True), tree.points(zm, hit[probe], group), radius)
            counted += np.bincount(np.searchsorted(hit_rows, hit[probe]), weights=within, minlength=len(hit_rows))
        for record, _, distance, size in found_pairs:
            tied = distance * size <= nearest[record] * size * (1.0 + _TIE_TOLERANCE) + 1e-12
            at = np.minimum(np.searchsorted(hit_rows, record[tied]), len(hit_rows) - 1)
            counted += np.bincount(at[hit_rows[at] == record[tied]], minlength=len(hit_rows))
        ties[hit_rows] = np.maximum(counted, 1.0)
    return nearest, partner, ties, settled


def _gower_nearest_by_pattern(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, x_patterns, m_patterns,
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
    (:data:`_TIE_TOLERANCE`) by radius queries of the same trees: in the query of subset T the
    radius is d_min |S| - |H - T|, so that an original is counted in the one query whose T is the
    set of wide variables it agrees on (in any other it lies farther, or would be nearer than the
    nearest) and every tied original is counted exactly once. ``x_patterns``, ``m_patterns``:
    :func:`_observed_patterns` of ``zx`` and ``zm``. Returns (nearest distance, inf where no original
    shares a variable; partner position, -1 there; tied originals, 1 where the own original is not
    nearest)."""
    nearest, partner, ties, settled = _gower_nearest_agreeing(zx, zm, nominal, x_patterns, m_patterns, own)
    if settled.all():
        return nearest, partner, ties
    levels = np.where(nominal, np.nanmax(np.vstack([zx, zm]), axis=0, initial=0) + 1, 0).astype(np.int64)
    widths = np.where(nominal, levels, 1)
    # undivided embedding; a missing value is written as -1 (a nominal one then has no one-hot entry)
    # and never compared, since only the variables observed in both records are searched
    ex, em = (_gower_embedding(np.nan_to_num(z, nan=-1.0), nominal, levels) * z.shape[1] for z in (zx, zm))
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
        distance = _gower_own_distances(zx[candidate], zm[rows], nominal)
        better = (distance < nearest[rows]) | ((distance == nearest[rows]) & (candidate < partner[rows]))
        nearest[rows[better]] = distance[better]
        partner[rows[better]] = candidate[better]
    hit = (own <= nearest * (1.0 + 1e-12) + 1e-300) & np.isfinite(nearest) & ~settled
    ties[hit] = 0.0
    for rows, b, tree, points, size, left_out in queries(hit):
        radius = nearest[rows] * size * (1.0 + _TIE_TOLERANCE) + 1e-12 - left_out
        reach = radius >= 0
        if tree is None:  # every original of the pattern is at the distance |H| / |S|
            ties[rows[reach]] += len(x_rows[b])
        elif reach.any():
            ties[rows[reach]] += tree.query_ball_point(points[reach], radius[reach], p=1, return_length=True)
    return nearest, partner, np.maximum(ties, 1.0)


def _one_to_one_links(cost: np.ndarray, original_keys: np.ndarray, protected_keys: np.ndarray):
    """Linked flags, partners and link probabilities of the assignment of protected to original
    records (each original used once) with the least total ``cost`` (protected x original); ties
    between identical records (equal rows of the ``*_keys`` matrices) counted for the intruder
    (flags) or broken at random (probabilities)."""
    protected_rows, partner = linear_sum_assignment(cost)
    partner = partner[np.argsort(protected_rows)]
    # Identical protected records (or identical originals) can trade partners at no cost: within
    # each (protected value a, original value b) class, as many records count as linked as the
    # assignment sends protected records of a to originals of b (c_ab); at random, each record of
    # the class is linked with probability c_ab / (|a| |b|).
    protected_class = np.unique(protected_keys, axis=0, return_inverse=True)[1].ravel()
    original_class = np.unique(original_keys, axis=0, return_inverse=True)[1].ravel()
    own = pd.MultiIndex.from_arrays([protected_class, original_class])
    sent = pd.MultiIndex.from_arrays([protected_class, original_class[partner]])
    links = pd.Series(1, index=sent).groupby(level=[0, 1]).sum().reindex(own, fill_value=0).to_numpy()
    rank_in_class = pd.Series(np.arange(len(partner))).groupby([protected_class, original_class]).cumcount().to_numpy()
    size_a = np.bincount(protected_class)[protected_class]
    size_b = np.bincount(original_class)[original_class]
    return rank_in_class < links, partner, links / (size_a * size_b)


def _gower_links(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, assignment: str):
    """Linked flags, partner positions (-1: none), own distances (NaN: undefined) and link
    probabilities (ties broken at random) of Gower linkage on encoded records."""
    n = len(zx)
    if assignment == "one_to_one":
        distances = gower_block(zm, zx, nominal)
        own = np.diag(distances).copy()
        # A pair with no variable observed in both records has no distance: it costs more than any
        # assignment of defined pairs (each at most 1), so the solver uses as few as it can.
        cost = np.where(np.isnan(distances), n + 1.0, distances)
        keys = lambda z: np.where(np.isnan(z), np.inf, z)  # noqa: E731 - one missing-value pattern, one class
        flags, partner, probability = _one_to_one_links(cost, keys(zx), keys(zm))
        defined = ~np.isnan(own)
        return flags & defined, partner, own, np.where(defined, probability, 0.0)
    x_patterns, m_patterns = _observed_patterns(zx), _observed_patterns(zm)
    complete = x_patterns[0].all() and m_patterns[0].all()  # one pattern each: every variable observed
    if complete or _pattern_search_is_cheaper(x_patterns[0], m_patterns[0], len(zx), len(zm)):
        own = _gower_own_distances(zx, zm, nominal)
        nearest, partner, ties = _gower_nearest_by_pattern(zx, zm, nominal, x_patterns, m_patterns, own)
    else:
        nearest, partner, own, ties = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n), np.empty(n)
        step = max(1, _GOWER_BLOCK_PAIRS // max(n, 1))
        for start in range(0, n, step):
            rows = np.arange(start, min(start + step, n))
            distances = gower_block(zm[rows], zx, nominal)
            own[rows] = distances[np.arange(len(rows)), rows]
            filled = np.where(np.isnan(distances), np.inf, distances)
            partner[rows] = filled.argmin(axis=1)
            nearest[rows] = filled[np.arange(len(rows)), partner[rows]]
            ties[rows] = (filled <= nearest[rows, None] * (1.0 + _TIE_TOLERANCE) + 1e-300).sum(axis=1)
    # The tree and the direct formula may round differently; a relative tolerance keeps exact ties.
    linked = (own <= nearest * (1.0 + 1e-12) + 1e-300) & ~np.isnan(own)
    partner = np.where(linked, np.arange(n), np.where(np.isfinite(nearest), partner, -1))
    # ties at random: a linked record is its own original's with probability 1 / (originals tied nearest)
    return linked, partner, own, linked / np.maximum(ties, 1.0)


def _check_one_to_one_size(n: int) -> None:
    """One-to-one assignment holds an n x n distance matrix: at most MAX_ONE_TO_ONE_LINKAGE records."""
    if n > MAX_ONE_TO_ONE_LINKAGE:
        raise SDCInputError(
            f"assignment 'one_to_one': {n} records compared, at most {MAX_ONE_TO_ONE_LINKAGE} "
            "(an n x n distance matrix); use assignment='nearest'"
        )


def _gower_linkage(original, protected, columns, scales, categories, assignment: str):
    """Linked flags, partner positions (-1: none), records compared and the expected risk of Gower
    linkage (:func:`record_linkage_risk` with ``distance="gower"``)."""
    zx, zm, nominal = gower_encoding(original, protected, columns, scales, categories)
    if assignment == "one_to_one":
        _check_one_to_one_size(len(zx))
    if not len(zx):
        return np.zeros(0, bool), np.zeros(0, np.int64), 0, 0.0
    linked, partner, own, probability = _gower_links(zx, zm, nominal, assignment)
    return linked, partner, int((~np.isnan(own)).sum()), float(probability.sum() / len(zx))


def _continuous_linkage(original, protected, columns, scales, distance: str, assignment: str):
    """Linked flags, partner positions (-1: none), records compared and the expected risk of
    Euclidean or Mahalanobis linkage on the records observed in both files."""
    wrong = [c for c in columns if scales.get(c, "continuous") != "continuous"]
    if wrong:
        raise SDCInputError(
            f"scales[{wrong[0]!r}]: distance {distance!r} links on continuous variables only; "
            "use distance='gower' for nominal or ordinal variables"
        )
    x_all, xm_all = paired_matrices(original, protected, columns)
    observed = np.isfinite(x_all).all(axis=1) & np.isfinite(xm_all).all(axis=1)
    x, xm = x_all[observed], xm_all[observed]
    if assignment == "one_to_one":
        _check_one_to_one_size(len(x))
    linked = np.zeros(len(x_all), dtype=bool)
    partner = np.full(len(x_all), -1, dtype=np.int64)
    positions = np.flatnonzero(observed)
    expected = 0.0
    if len(x):
        zx, zm, p = _linkage_space(x, xm, distance, columns)
        if assignment == "nearest":
            tree = cKDTree(zx)
            nearest, nearest_row = _in_tree_order(lambda points: tree.query(points, k=1, p=p), zm)
            own = np.sqrt(((zm - zx) ** 2).sum(axis=1))
            # The tree and the direct formula may round differently; a relative tolerance keeps exact ties.
            hit = own <= nearest * (1.0 + 1e-12) + 1e-300
            linked[observed] = hit
            partner[observed] = positions[np.where(hit, np.arange(len(x)), nearest_row)]
            ties = np.ones(len(x))
            radius = np.maximum(own[hit], nearest[hit]) * (1.0 + _TIE_TOLERANCE) + 1e-300
            ties[hit] = _in_tree_order(lambda points, radius: tree.query_ball_point(
                points, radius, p=p, return_length=True), zm[hit], radius)
            expected = float((hit / np.maximum(ties, 1.0)).sum() / len(x_all))
        else:
            flags, rows, probability = _one_to_one_links(cdist(zm, zx, metric="euclidean"), x, xm)
            linked[observed] = flags
            partner[observed] = positions[rows]
            expected = float(probability.sum() / len(x_all))
    return linked, partner, int(observed.sum()), expected


def record_linkage_risk(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str],
    *,
    distance: str = "euclidean",
    assignment: str = "nearest",
    scales: Mapping[str, str] | None = None,
    categories: Mapping[str, Sequence] | None = None,
) -> RecordLinkageRisk:
    """Distance-based record linkage: share of protected records linked to their own original.

    SPEC §4.1. Each protected record is linked to an original record; it is a correct link when
    that original is its own, and the risk is the share of correct links.

    Distances (``distance``):

    * ``"euclidean"`` (default): on variables standardised with the mean and standard deviation of
      the ORIGINAL data (so both files are on the same scale; a constant variable is centred only).
    * ``"mahalanobis"``: d(a, b)^2 = (a - b)' S^-1 (a - b), S the sample covariance (n - 1) of the
      original records (Domingo-Ferrer & Torra 2001 and Torra, Abowd & Domingo-Ferrer 2006 use
      Mahalanobis distance-based linkage; taking S from the original file is our choice). A
      singular S is refused.
    * ``"gower"``: Gower's (1971) distance for mixed data exactly as sdcMicro's ``recordLinkage``
      computes it, ``cluster::daisy(rbind(x, y), metric = "gower")`` with equal weights: the mean
      over the variables of the partial distances d_j(a, b), where for a continuous variable
      d_j = |a_j - b_j| / R_j with R_j the range of the variable over BOTH files together; for an
      ordinal variable the same on its category positions (codes 0..k-1 in the given order, R_j
      their range over both files); for a nominal variable d_j = 0 if a_j = b_j, else 1. A
      variable constant over both files has d_j = 0 and still counts in the mean. Missing values
      are handled pairwise: the mean is over the variables observed in both records, and a pair
      with no such variable has no distance.

    Which Gower variables are nominal or ordinal (``scales``, ``categories``): ``scales`` maps a
    column to "nominal", "ordinal" or "continuous" (as in
    :func:`~sdc_dagster.loss.distance_losses`); ``categories`` maps an ordinal column to its
    categories in order. A column not in ``scales`` takes its scale from the dtypes, as daisy
    reads R classes: an ordered pandas Categorical (in either file) is ordinal with its
    categories as the order; an unordered Categorical, object, string or bool column is nominal
    (daisy treats R logicals as asymmetric binary; we do not); a numeric column is continuous.
    An ordinal column with neither ``categories`` nor an ordered dtype is ordered by the sorted
    values observed in either file. Euclidean and Mahalanobis distances take continuous columns
    only.

    Assignments (``assignment``):

    * ``"nearest"``: every protected record is linked to its nearest original (scipy cKDTree; for
      Gower with missing values k-d trees per missing-value pattern of the originals, searched
      first among the originals that agree on the nominal variables, exact, or an exact computation
      in blocks of protected records where that is cheaper: few records, many patterns); a
      tie between its own original and another counts as a correct link (worst case, SPEC §4.5's
      intruder who takes every nearest neighbour to be the unit itself). ``expected_risk`` breaks
      the ties at random instead: a record whose own original is among t originals tied nearest
      counts 1/t (t counted by radius queries of the same k-d trees, or in the blocks), since no
      intruder can tell which of t equally near originals is the unit (identical originals: ages,
      years, counts, categories). ``expected_risk`` <= ``risk``.
    * ``"one_to_one"``: protected records are assigned to distinct originals with the least total
      distance (``scipy.optimize.linear_sum_assignment``), the intruder who knows both files hold
      the same units. Identical protected records (e.g. one microaggregation group) or identical
      originals may trade partners at no cost; the number of correct links is the largest such a
      trade gives (per class of identical records, the first ones in data order are flagged);
      ``expected_risk`` gives the share when such ties are broken at random instead. Other ties of
      equal total distance are broken by the solver. Needs an n x n matrix: at most
      10,000 compared records (800 MB). For Gower, pairs without a distance are assigned only
      when no assignment avoids them (they cost more than any total of defined distances).

    Missing values (item non-response, suppression): Euclidean and Mahalanobis linkage use only
    records observed on every column in both files, as candidates and as records to link; a
    record with a missing value is never counted as linked (it does not show the intruder all the
    values linkage uses). Gower linkage uses every record, with daisy's pairwise distances; a
    record whose distance to its own original is undefined (no variable observed in both) is never
    linked. The risk is the share of linked records among all records.

    Parameters
    ----------
    original, protected : DataFrame
        Same number of rows, matched by position.
    columns : sequence of str
        Variables used for linkage (continuous; for Gower also nominal and ordinal).
    distance : "euclidean", "mahalanobis" or "gower".
    assignment : "nearest" or "one_to_one".
    scales : mapping {column: "nominal" | "ordinal" | "continuous"}, optional
        Scales of the linkage columns; a column not named takes its scale from its dtype.
    categories : mapping {column: ordered list of categories}, optional
        The order of ordinal columns.

    Returns
    -------
    RecordLinkageRisk with ``risk`` (share of linked records), ``linked`` (bool Series indexed
    like ``protected``), ``compared`` (records observed in both files; for Gower, records with a
    distance to their own original), ``partner`` (index label of the original each protected
    record is linked to) and ``expected_risk`` (ties broken at random).

    References
    ----------
    SDC Practice Guide ch. 7.6 (S004); Domingo-Ferrer & Torra (2001), A quantitative comparison of
    disclosure control methods for microdata; Gower (1971), Biometrics 27(4); Kaufman &
    Rousseeuw (1990) and R ``cluster::daisy``; sdcMicro ``R/recordLinkage.R`` (Herranz et al.
    2015, global distance-based record linkage); Kuhn (1955) / Crouse (2016) for the assignment
    problem.
    """
    check_option(distance, "distance", _LINKAGE_DISTANCES)
    check_option(assignment, "assignment", _LINKAGE_ASSIGNMENTS)
    scales, categories = dict(scales or {}), dict(categories or {})
    if distance == "gower":
        linked, partner, compared, expected = _gower_linkage(original, protected, columns, scales, categories,
                                                             assignment)
    else:
        linked, partner, compared, expected = _continuous_linkage(original, protected, columns, scales, distance,
                                                                  assignment)
    labels = pd.Series(original.index[np.maximum(partner, 0)], index=protected.index, name="partner")
    flags = pd.Series(linked, index=protected.index, name="linked")
    return RecordLinkageRisk(
        risk=float(linked.mean()) if len(linked) else 0.0,
        linked=flags,
        compared=compared,
        partner=labels.where(partner >= 0),
        distance=distance,
        assignment=assignment,
        expected_risk=expected,
    )

