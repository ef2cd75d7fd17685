"""MDAV microaggregation: the grouping of sdcMicro's ``method="mdav"`` (SPEC §8.6).

Records are partitioned into groups of at least k and every value is replaced by its group mean.
The grouping algorithm is OPEN in SPEC §8.6; ``method="mdav"`` reproduces sdcMicro's
``microaggregation(method="mdav", aggr=k)`` (its C++ ``Mdav``) record for record:

* variables are weighted by 1 / (population variance) (weight 1 for a constant variable);
* distances are squared weighted Euclidean, accumulated in single precision (sdcMicro's ``TDist``
  is ``float``), which decides ties;
* while at least 2k records are left: x_r = the record farthest from the centroid of the remaining
  records (first in data order on ties); the k records nearest to x_r form a group; x_s = the record
  farthest from x_r (computed before that group is removed) and, if at least 3k records were left,
  the k records nearest to x_s form a second group. "Nearest" sorts by distance and, among equal
  distances, puts later records first (sdcMicro's hash-list insertion);
* the k..2k-1 records left at the end form the last group.

Speed (issue 16): the loop runs compiled (numba) over a balanced k-d tree of the centred, weighted
coordinates whose nodes keep the bounding box and count of their remaining records (shrunk as records
go). Farthest and k-nearest searches are branch and bound over these boxes in double precision; the
records of the leaves reached are ranked with sdcMicro's single-precision distance and a node is
skipped only when its bound misses the decision by more than a relative tolerance, so the result is
that of the exhaustive algorithm, ties included (tested against a direct transcription of sdcMicro's
loop and against labels stored from the previous implementation). For the farthest record from
the centroid the nodes also keep the radius of their records about a recent centroid (re-centred
when the searches since the last re-centring have visited about an eighth as many nodes as there are
records left), which the slowly moving centroid keeps tight. 5 variables, k=3, on a 2-core machine
shared with another benchmark (issue 16): 50,000 records 0.55 s, 200,000 2.5 s, 1,000,000 about 30 s
(before: 2.3 s, 17 s, about 15 min). The first call in a fresh environment compiles the loop (about 10 s; cached on
disk by numba afterwards).

Where the time goes (issue 37, counted on 1,000,000 x 5, k = 3, leaves of 8): the searches are
bound by memory latency (the tree and the records are far larger than the caches), so what counts
is the nodes a search expands. Before this round, per pair of groups: the farthest record from the
centroid 563 nodes (46 leaves), the farthest from x_r 1,364 (122 leaves), the two k-nearest
searches 147 (18 leaves). Three changes, the groups unchanged (1,000,000 x 5 record for record):

* for complete data a farthest search also bounds a node by |x - q|^2 = |x - c|^2 + |q - c|^2 -
  2 (q - c).(x - c) about the reference c (the node's radius bounds the first term, the least
  projection of its box on q - c the last); the triangle bound (radius + |q - c|)^2 ignored the
  direction of q, which is all that matters for x_r on the rim of the data: 1,364 -> 624 nodes;
* re-centring is paid for in nodes, not leaves, visited by the centroid searches (a node costs
  about as much as re-centring 8 records): 762 re-centrings instead of 92, 563 -> 129 nodes;
* a node's box, radius, count, first child and leaf range are one row of one table, a node's two
  children adjacent rows, so an expansion reads one contiguous block instead of six arrays.

CPU seconds on the shared 2-core machine, the same run conditions for both (400,000 x 5, load
13-15): 7.8-9.2 s before, 5.4-5.6 s after; 1,000,000 x 5 back to back at load 6.5-7: 30.9 s before,
18.3 s after (``benchmarks/protect.py``: 18.3 s; 23.5 s at load 12: CPU seconds of memory-bound code
grow with the load). Tried without gain: best-first order for the farthest searches (a binary heap; a
quarter fewer nodes, but 30 % more time: the heap's jumps lose the depth-first order's locality),
ranking the records of a leaf by their double-precision distance before sdcMicro's single-precision
one, leaves of 4, 6 or 12 records. Tried before: a ball about each node's centre, seeding with the
previous search's farthest records, a k-d tree on principal axes.

Missing values (item non-response) follow sdcMicro's ``mdav`` (``R/mdav.R`` codes NA as -999 for
the C++ ``Mdav`` and restores NA afterwards):

* weights, centroids and group means use the observed values of each variable (a centroid or group
  mean is missing when the variable has no observed value there);
* the distance term of a variable observed on one side only is the penalty
  (max_j - min_j)^2 · w_j (observed range, in weighted units); missing on both sides adds 0;
* a missing value stays missing in the output.

Deviation, documented: sdcMicro's last group (the k..2k-1 records left at the end) divides the sum
of the observed values by the number of records, which treats missing values as 0; here every group
mean, the last one included, is the mean of the group's observed values.

Missing values take the same indexed loop (issue 23; before, an exhaustive O(n^2 / k) path: 20,000
records x 5 variables with 5 % missing took 22 s, now 2.5 s with the same groups). A node of the
tree keeps, per variable, the box of its remaining records' observed values and how many observe
it; a variable missing on one side then contributes its penalty to both bounds, and a missing query
value contributes 0 or the penalty. The ball bound stays valid because sdcMicro's distance with
missing values is a metric once square-rooted (per variable, |a - b| <= observed range = the
distance of a missing value to an observed one). The tree also splits on the missing indicators, so
records with the same missing pattern share nodes. Complete data and data with missing values run
two compilations of the one loop (the missing-value branches cost complete data 1.6 times the time).
Above ``_EXACT_CENTER_LIMIT`` remaining records the centroid comes from running sums, as for
complete data (a tie decided by the last bit of the centroid may then go the other way).

References
----------
Domingo-Ferrer & Mateo-Sanz (2002), Practical data-oriented microaggregation for statistical
disclosure control, IEEE TKDE 14(1). sdcMicro ``src/Mdav.h`` and ``R/mdav.R``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_REL_TOL = 1e-5  # >> single-precision rounding of a distance (about 2e-7 relative)
_EXACT_CENTER_LIMIT = 5_000  # up to here the centroid is re-summed in data order as sdcMicro does
_LEAF_SIZE = 8  # records per leaf of the k-d tree
_RECENTRE_RATIO = 8  # a node visited by a centroid search costs about as much as re-centring 8 records


def _stratum_sums(values: np.ndarray, stratum: np.ndarray, count: int) -> np.ndarray:
    """Per stratum (rows numbered 0..count-1 by ``stratum``) and column, the sum of ``values``, added
    in row order as a running sum (``bincount`` adds each row to its stratum's sum in turn)."""
    return np.column_stack([np.bincount(stratum, weights=values[:, j], minlength=count)
                            for j in range(values.shape[1])]).reshape(count, values.shape[1])


def variable_weights(x: np.ndarray, stratum: np.ndarray, count: int) -> np.ndarray:
    """Per stratum and column, 1 / population variance over its observed values, as sdcMicro's Mdav
    (sums in data order, E[x^2] - E[x]^2; weight 1 for a constant or unobserved column, and for a
    near-constant one whose E[x^2] - E[x]^2 rounds to a negative number, found on a stratum of equal
    amounts in the public corpus: its square root was NaN). Shape (strata, columns)."""
    observed = ~np.isnan(x)
    seen = np.maximum(_stratum_sums(observed, stratum, count), 1)
    filled = np.where(observed, x, 0.0)  # adding 0.0 leaves each running sum unchanged
    mean = _stratum_sums(filled, stratum, count) / seen
    mean_square = _stratum_sums(filled * filled, stratum, count) / seen
    variance = mean_square - mean * mean
    return np.where(variance > 0, 1.0 / np.where(variance > 0, variance, 1.0), 1.0)


def _stratum_range(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per stratum (rows bounds[s]:bounds[s+1]) and column, max - min of the observed values (0 where
    none is observed)."""
    observed = ~np.isnan(values)
    low = np.minimum.reduceat(np.where(observed, values, np.inf), bounds[:-1])
    high = np.maximum.reduceat(np.where(observed, values, -np.inf), bounds[:-1])
    return np.where(np.isfinite(low), high - low, 0.0)


@njit(cache=True)
def _single_precision_distance(x: np.ndarray, row: int, point: np.ndarray, weights: np.ndarray,
                               penalties: np.ndarray, complete: bool) -> float:
    """sdcMicro's Dist of record ``row`` of ``x`` to ``point``: each weighted squared difference
    rounded to float32 and summed in float32 (sdcMicro's ``TDist`` is ``float``); a variable missing
    (NaN) on one side adds its float32 penalty, on both sides 0 (``complete``: neither has NaN)."""
    total = np.float32(0.0)
    if complete:
        for j in range(x.shape[1]):
            difference = x[row, j] - point[j]
            term = np.float32(difference * difference * weights[j])
            total = term if j == 0 else np.float32(total + term)
        return float(total)
    for j in range(x.shape[1]):
        a, b = x[row, j], point[j]
        if np.isnan(a) or np.isnan(b):
            term = np.float32(0.0) if np.isnan(a) and np.isnan(b) else np.float32(penalties[j])
        else:
            difference = a - b
            term = np.float32(difference * difference * weights[j])
        total = term if j == 0 else np.float32(total + term)
    return float(total)


@njit(cache=True)
def _double_distance(a: np.ndarray, b: np.ndarray, penalty_z: np.ndarray) -> float:
    """The distance of :func:`_single_precision_distance` in double precision on centred, weighted
    coordinates, square-rooted: a metric (per variable |a - b| <= the observed range, the distance of
    a missing value to an observed one), so it bounds distances by the triangle inequality."""
    total = 0.0
    for j in range(a.shape[0]):
        if np.isnan(a[j]) or np.isnan(b[j]):
            if not (np.isnan(a[j]) and np.isnan(b[j])):
                total += penalty_z[j]
        else:
            total += (a[j] - b[j]) ** 2
    return np.sqrt(total)


@njit(cache=True)
def kd_tree(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Balanced k-d tree over the rows of ``z`` (split at the median of the widest coordinate, leaves of
    at most ``_LEAF_SIZE`` rows): the rows in leaf order and, per node, the first and past-last
    position of its rows in that order and its two children (-1 for a leaf); node 0 is the root.
    Compiled: a stratified call builds one tree per stratum (hundreds at 100k records). Each split
    selects the median (``np.partition``, linear) instead of sorting the node's rows: 1,000,000 x 3
    in 0.65 s instead of 1.5 s (CPU). The searches over the tree are exact whatever its shape."""
    n = len(z)
    order = np.arange(n)
    capacity = 4 * (n // _LEAF_SIZE + 1)  # a balanced tree has fewer than 2 n / (_LEAF_SIZE / 2) nodes
    start = np.zeros(capacity, dtype=np.int64)
    end = np.zeros(capacity, dtype=np.int64)
    children = np.full((capacity, 2), -1, dtype=np.int64)
    end[0] = n
    nodes = 1
    stack = np.zeros(capacity, dtype=np.int64)
    top = 1
    while top > 0:  # nodes, not records
        top -= 1
        node = stack[top]
        lo, hi = start[node], end[node]
        if hi - lo <= _LEAF_SIZE:
            continue
        rows = order[lo:hi].copy()
        dim, widest = 0, -1.0
        for j in range(z.shape[1]):
            low, high = np.inf, -np.inf
            for row in rows:
                low, high = min(low, z[row, j]), max(high, z[row, j])
            if high - low > widest:
                dim, widest = j, high - low
        half = (hi - lo) // 2
        values = np.empty(len(rows))
        for i in range(len(rows)):
            values[i] = z[rows[i], dim]
        # the median split in linear time (a selection, not a sort): the rows below the half-th
        # smallest value, then as many rows equal to it as fill the first half, then the rest
        pivot = np.partition(values, half)[half]
        below = 0
        for i in range(len(rows)):
            below += values[i] < pivot
        equal_left = half - below
        left, right = lo, lo + half
        for i in range(len(rows)):
            if values[i] < pivot or (values[i] == pivot and equal_left > 0):
                if values[i] == pivot:
                    equal_left -= 1
                order[left] = rows[i]
                left += 1
            else:
                order[right] = rows[i]
                right += 1
        start[nodes], end[nodes], start[nodes + 1], end[nodes + 1] = lo, lo + half, lo + half, hi
        children[node, 0], children[node, 1] = nodes, nodes + 1
        stack[top], stack[top + 1] = nodes, nodes + 1
        nodes += 2
        top += 2
    return order, start[:nodes].copy(), end[:nodes].copy(), children[:nodes].copy()


# kept whole: a numba kernel (its compiled MDAV loop, and the factory that compiles it, are one unit)
def _compile_mdav_kernel(complete: bool):
    """The compiled MDAV loop for complete data (``complete``) or data with missing values (each
    under its own name, so numba's on-disk cache keeps the two apart)."""

    # kept whole (over 80 lines, its arrays passed one by one): a numba kernel
    def _mdav_kernel(x, z, weights, penalties, penalty_z, origin, scale, total, total_count, order, start, end,
                     children, k, abs_tol):
        """sdcMicro's MDAV loop (module docstring) over a k-d tree of the centred, weighted coordinates
        ``z`` (NaN where ``x`` is missing): per node, the box of the observed values of its remaining
        records and how many observe each variable (shrunk as records go) bound the distances of its
        records, a missing value by its penalty ``penalty_z``; so farthest and k-nearest searches visit
        few nodes. Records in the leaves reached are ranked with sdcMicro's single-precision distance,
        and a node is skipped only when its double-precision bound misses the decision by more than a
        relative ``_REL_TOL`` (plus ``abs_tol``), so the result is that of the exhaustive loop, ties
        included. ``total`` and ``total_count`` are the sums and counts of the observed values.
        ``complete`` (data without NaN) is a constant of the compiled kernel: complete data run code
        without the missing-value branches (they cost them about 1.6 times the time).

        The searches are bound by memory latency (a node's data is seldom in cache at 1,000,000
        records), so everything a search reads about a node is one row of ``table``: its box (the
        lowest and highest values of its remaining records), its radius about the reference, its
        count of remaining records, its first child (the second is the next row, so a node's two
        children are 2 adjacent rows) or -1, and its first and past-last leaf positions."""
        n, p = x.shape
        n_nodes = len(start)
        xs, zs = x[order], z[order]  # rows in leaf order
        alive = np.ones(n, dtype=np.bool_)  # by leaf position
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        parent = np.full(n_nodes, -1, dtype=np.int64)
        leaf_of = np.empty(n, dtype=np.int64)
        low_at, high_at, radius_at = 0, p, 2 * p  # the columns of a row of the node table
        count_at, kid_at, start_at, end_at = 2 * p + 1, 2 * p + 2, 2 * p + 3, 2 * p + 4
        table = np.empty((n_nodes, 2 * p + 5))
        table[:, low_at:high_at] = np.inf
        table[:, high_at:radius_at] = -np.inf
        observed = np.zeros((n_nodes, p), dtype=np.int64)  # remaining records of the node observing j
        for node in range(n_nodes):
            table[node, count_at] = end[node] - start[node]
            table[node, kid_at] = children[node, 0]  # kd_tree numbers a node's children c, c + 1
            table[node, start_at], table[node, end_at] = start[node], end[node]
            if children[node, 0] >= 0:
                parent[children[node, 0]] = node
                parent[children[node, 1]] = node
            else:
                leaf_of[start[node]:end[node]] = node
            for i in range(start[node], end[node]):
                for j in range(p):
                    if not np.isnan(zs[i, j]):
                        observed[node, j] += 1
                        table[node, low_at + j] = min(table[node, low_at + j], zs[i, j])
                        table[node, high_at + j] = max(table[node, high_at + j], zs[i, j])
        reference = np.zeros(p)  # a recent centroid (z): the centre of the balls
        norm = np.empty(n)  # distance of every record to the reference
        waste = 0  # nodes visited by centroid searches since the balls were last re-centred

        def merged_radius(a):
            """The radius of the parent of nodes a and a + 1: the larger radius of the non-empty ones."""
            if table[a, count_at] == 0:
                return table[a + 1, radius_at]
            if table[a + 1, count_at] == 0:
                return table[a, radius_at]
            return max(table[a, radius_at], table[a + 1, radius_at])

        def recentre(point_z):
            reference[:] = point_z
            for node in range(n_nodes - 1, -1, -1):  # children come after their parent
                if table[node, count_at] == 0:  # removed records keep a stale norm: never read again
                    continue
                a = int(table[node, kid_at])
                if a < 0:
                    radius = 0.0
                    for i in range(int(table[node, start_at]), int(table[node, end_at])):
                        if alive[i]:
                            if complete:
                                total_square = 0.0
                                for j in range(p):
                                    total_square += (zs[i, j] - reference[j]) ** 2
                                norm[i] = np.sqrt(total_square)
                            else:
                                norm[i] = _double_distance(zs[i], reference, penalty_z)
                            radius = max(radius, norm[i])
                    table[node, radius_at] = radius
                else:
                    table[node, radius_at] = merged_radius(a)

        def upper_bound(node, point_z):
            """Largest squared distance from ``point_z`` to a remaining record of ``node`` (box bound)."""
            bound = 0.0
            for j in range(p):
                q, seen = point_z[j], observed[node, j]
                if np.isnan(q):
                    if seen > 0:
                        bound += penalty_z[j]
                    continue
                term = 0.0
                if seen > 0:
                    term = max(abs(q - table[node, low_at + j]), abs(q - table[node, high_at + j])) ** 2
                if seen < table[node, count_at]:
                    term = max(term, penalty_z[j])
                bound += term
            return bound

        def lower_bound(node, point_z):
            """Smallest squared distance from ``point_z`` to a remaining record of ``node`` (box bound)."""
            bound = 0.0
            for j in range(p):
                q, seen = point_z[j], observed[node, j]
                if np.isnan(q):
                    if seen == table[node, count_at]:
                        bound += penalty_z[j]
                    continue
                term = np.inf
                if seen > 0:
                    term = max(table[node, low_at + j] - q, q - table[node, high_at + j], 0.0) ** 2
                if seen < table[node, count_at]:
                    term = min(term, penalty_z[j])
                bound += term
            return bound

        recentre(reference)
        labels = np.full(n, -1, dtype=np.int64)
        stack = np.empty(256, dtype=np.int64)
        bounds = np.empty(256)
        best_distance = np.empty(k)
        best_row = np.empty(k, dtype=np.int64)
        exact = np.empty(0, dtype=np.int64)  # leaf positions of the remaining records in data order
        center = np.empty(p)
        center_count = np.empty(p)
        center_z = np.empty(p)
        left, group = n, 0

        def farthest(point, point_z):
            """Original row of the remaining record farthest from ``point`` (first in data order on ties)."""
            best, best_id, visits = -1.0, n, 0
            offset = np.sqrt(((point_z - reference) ** 2).sum()) if complete else _double_distance(point_z, reference, penalty_z)
            stack[0], bounds[0], top = 0, np.inf, 1
            while top:
                top -= 1
                node = stack[top]
                if bounds[top] * (1 + _REL_TOL) + abs_tol < best:
                    continue
                visits += 1
                a = int(table[node, kid_at])
                if a < 0:
                    for i in range(int(table[node, start_at]), int(table[node, end_at])):
                        if alive[i]:
                            d = _single_precision_distance(xs, i, point, weights, penalties, complete)
                            if d > best or (d == best and order[i] < best_id):
                                best, best_id = d, order[i]
                    continue
                b = a + 1
                if complete:
                    # the box's farthest corner; and |x - q|^2 = |x - c|^2 + |q - c|^2 - 2 (q - c).(x - c)
                    # about the reference c: the node's radius bounds the first term, its box the projection
                    bound_a = bound_b = toward_a = toward_b = 0.0
                    for j in range(p):
                        q, c = point_z[j], reference[j]
                        low, high = table[a, low_at + j], table[a, high_at + j]
                        reach = max(abs(q - low), abs(q - high))
                        bound_a += reach * reach
                        toward_a += min((q - c) * (low - c), (q - c) * (high - c))
                        low, high = table[b, low_at + j], table[b, high_at + j]
                        reach = max(abs(q - low), abs(q - high))
                        bound_b += reach * reach
                        toward_b += min((q - c) * (low - c), (q - c) * (high - c))
                    bound_a = min(bound_a, table[a, radius_at] ** 2 + offset * offset - 2.0 * toward_a)
                    bound_b = min(bound_b, table[b, radius_at] ** 2 + offset * offset - 2.0 * toward_b)
                else:
                    # the ball about the reference holding the node's records bounds them too
                    bound_a = min(upper_bound(a, point_z), (table[a, radius_at] + offset) ** 2)
                    bound_b = min(upper_bound(b, point_z), (table[b, radius_at] + offset) ** 2)
                if bound_a > bound_b:  # the more promising child on top of the stack
                    a, b, bound_a, bound_b = b, a, bound_b, bound_a
                if table[a, count_at] > 0 and bound_a * (1 + _REL_TOL) + abs_tol >= best:
                    stack[top], bounds[top] = a, bound_a
                    top += 1
                if table[b, count_at] > 0 and bound_b * (1 + _REL_TOL) + abs_tol >= best:
                    stack[top], bounds[top] = b, bound_b
                    top += 1
            return best_id, visits

        def nearest(row):
            """Original rows of the k remaining records nearest to record ``row`` (by distance, later
            records first on ties)."""
            point, point_z = x[row], z[row]
            found = 0
            stack[0], bounds[0], top = 0, 0.0, 1
            while top:
                top -= 1
                node = stack[top]
                if found == k and bounds[top] * (1 - _REL_TOL) - abs_tol > best_distance[k - 1]:
                    continue
                a = int(table[node, kid_at])
                if a < 0:
                    for i in range(int(table[node, start_at]), int(table[node, end_at])):
                        if not alive[i]:
                            continue
                        d, r = _single_precision_distance(xs, i, point, weights, penalties, complete), order[i]
                        if found == k:
                            if d > best_distance[k - 1] or (d == best_distance[k - 1] and r < best_row[k - 1]):
                                continue
                        else:
                            found += 1
                        slot = found - 1  # insertion into the sorted list of the best
                        while slot > 0 and (d < best_distance[slot - 1]
                                            or (d == best_distance[slot - 1] and r > best_row[slot - 1])):
                            best_distance[slot], best_row[slot] = best_distance[slot - 1], best_row[slot - 1]
                            slot -= 1
                        best_distance[slot], best_row[slot] = d, r
                    continue
                b = a + 1
                if complete:
                    bound_a = bound_b = 0.0
                    for j in range(p):
                        q = point_z[j]
                        gap = max(table[a, low_at + j] - q, q - table[a, high_at + j], 0.0)
                        bound_a += gap * gap
                        gap = max(table[b, low_at + j] - q, q - table[b, high_at + j], 0.0)
                        bound_b += gap * gap
                else:
                    bound_a = lower_bound(a, point_z) if table[a, count_at] > 0 else 0.0
                    bound_b = lower_bound(b, point_z) if table[b, count_at] > 0 else 0.0
                if bound_a < bound_b:  # the nearer child on top of the stack
                    a, b, bound_a, bound_b = b, a, bound_b, bound_a
                if table[a, count_at] > 0:
                    stack[top], bounds[top] = a, bound_a
                    top += 1
                if table[b, count_at] > 0:
                    stack[top], bounds[top] = b, bound_b
                    top += 1
            return best_row[:k].copy()

        def remove(row):
            i = position[row]
            alive[i] = False
            node = leaf_of[i]
            table[node, count_at] -= 1
            for j in range(p):  # an empty node observes nothing: its parent's box ignores it
                table[node, low_at + j], table[node, high_at + j], observed[node, j] = np.inf, -np.inf, 0
            if table[node, count_at] > 0:
                radius = 0.0
                for r in range(int(table[node, start_at]), int(table[node, end_at])):
                    if alive[r]:
                        radius = max(radius, norm[r])
                        for j in range(p):
                            if complete or not np.isnan(zs[r, j]):
                                observed[node, j] += 1
                                table[node, low_at + j] = min(table[node, low_at + j], zs[r, j])
                                table[node, high_at + j] = max(table[node, high_at + j], zs[r, j])
                table[node, radius_at] = radius
            node = parent[node]
            while node >= 0:
                table[node, count_at] -= 1
                a = int(table[node, kid_at])
                b = a + 1
                for j in range(p):
                    if not complete:
                        observed[node, j] = observed[a, j] + observed[b, j]
                    table[node, low_at + j] = min(table[a, low_at + j], table[b, low_at + j])
                    table[node, high_at + j] = max(table[a, high_at + j], table[b, high_at + j])
                if table[node, count_at] > 0:
                    table[node, radius_at] = merged_radius(a)
                node = parent[node]

        while left >= 2 * k:
            two_groups = left >= 3 * k
            if left <= _EXACT_CENTER_LIMIT:
                if len(exact) == 0 or 2 * left < len(exact):
                    exact = np.sort(order[alive])
                center[:] = 0.0
                center_count[:] = 0.0
                for r in exact:
                    if alive[position[r]]:
                        for j in range(p):
                            if not np.isnan(x[r, j]):
                                center[j] += x[r, j]
                                center_count[j] += 1.0
            else:
                center[:] = total
                center_count[:] = total_count
            for j in range(p):
                center[j] = center[j] / center_count[j] if center_count[j] > 0 else np.nan
                center_z[j] = (center[j] - origin[j]) * scale[j]
            record_r, visits = farthest(center, center_z)
            waste += visits
            if waste * _RECENTRE_RATIO > left:  # re-centring costs about as much as the visits since the last one
                recentre(center_z)
                waste = 0
            record_s = farthest(x[record_r], z[record_r])[0]
            for step in range(2 if two_groups else 1):
                members = nearest(record_r if step == 0 else record_s)
                group_sum = np.zeros(p)
                group_count = np.zeros(p)
                for m in members:
                    for j in range(p):
                        if not np.isnan(x[m, j]):
                            group_sum[j] += x[m, j]
                            group_count[j] += 1.0
                total -= group_sum
                total_count -= group_count
                for m in members:
                    labels[m] = group
                    remove(m)
                group += 1
                left -= k
        for i in range(n):
            if alive[i]:
                labels[order[i]] = group
        return labels

    _mdav_kernel.__qualname__ = _mdav_kernel.__name__ = "_mdav_kernel_" + ("complete" if complete else "missing")
    return njit(cache=True)(_mdav_kernel)


_MDAV_KERNELS = {complete: _compile_mdav_kernel(complete) for complete in (True, False)}


def mdav_groups(x: np.ndarray, k: int, strata: list[np.ndarray] | None = None) -> np.ndarray:
    """Group label of every row under sdcMicro's MDAV, missing values (NaN) included (see module
    docstring), run on each stratum on its own (``strata``: the positions of its rows in record
    order; all rows when None): labels numbered across the strata, -1 for a row in none. The k-d tree
    splits on the centred, weighted coordinates with a missing value at the centre, and on each
    variable's missing indicator scaled by its penalty (records with the same missing pattern share
    nodes, which keeps the bounds tight). Weights, penalties and centres of all strata are computed
    at once, each stratum's sums in record order as its own pass would (a stratified call has
    hundreds of strata)."""
    members = [np.arange(len(x))] if strata is None else strata
    labels = np.full(len(x), -1, dtype=np.int64)
    if not members:
        return labels
    rows = np.concatenate(members)
    bounds = np.r_[0, np.cumsum([len(m) for m in members])].astype(np.int64)
    values = np.ascontiguousarray(x[rows])
    stratum = np.repeat(np.arange(len(members)), np.diff(bounds))
    missing = np.isnan(values)
    observed = _stratum_sums(~missing, stratum, len(members))
    weights = variable_weights(values, stratum, len(members))
    # sdcMicro's term for a variable observed on one side only: (max - min)^2 · w, float32
    penalties = (_stratum_range(values, bounds) ** 2 * weights).astype(np.float32).astype(np.float64)
    total = _stratum_sums(np.where(missing, 0.0, values), stratum, len(members))
    origin = np.where(observed > 0, total / np.maximum(observed, 1), 0.0)  # the observed means
    scale = np.sqrt(weights)
    z = (values - origin[stratum]) * scale[stratum]
    filled = np.where(missing, 0.0, z)
    penalty_z = _stratum_range(z, bounds) ** 2
    # rounding of the centred coordinates: an absolute error bound for squared distances
    abs_tol = 1e-12 * (1.0 + np.maximum.reduceat((filled ** 2).sum(axis=1), bounds[:-1]) + penalty_z.sum(axis=1))
    groups = 0
    for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):  # strata, not records
        holes = missing[a:b].any(axis=0)
        split = np.column_stack([filled[a:b], missing[a:b][:, holes] * np.sqrt(penalty_z[s, holes])])
        order, start, end, children = kd_tree(split)
        kernel = _MDAV_KERNELS[not holes.any()]
        local = kernel(values[a:b], z[a:b], weights[s], penalties[s], penalty_z[s], origin[s], scale[s],
                       total[s].copy(), observed[s].copy(), order, start, end, children, k, abs_tol[s])
        labels[rows[a:b]] = local + groups
        groups += int(local.max()) + 1
    return labels
