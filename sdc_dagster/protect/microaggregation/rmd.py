"""Robust Mahalanobis distance microaggregation: sdcMicro's method ``rmd`` (SPEC §8.6).

sdcMicro's ``micro_rmd`` (the method its manual recommends; an extension of MDAV):

1. the variables are standardised, y = (x - mean) / sd (sd with n - 1);
2. md_i = (y_i - c)' S^-1 (y_i - c), the robust squared Mahalanobis distance of every record from
   the MCD centre c and covariance S of y (robustbase ``covMcd``);
3. floor(n / k) - 1 times: s = the remaining record with the largest md (the first on ties, R
   ``which.max``); the group is the k remaining records nearest to s in Euclidean distance on y (R
   ``dist``; s itself first, ties to the earlier record, R ``which.min``), removed;
4. the k..2k-1 records left form the last group.

Group values are the group means (sdcMicro averages y and transforms back, the same values up to
rounding); sdcMicro ignores ``measure`` for ``rmd``, here another measure applies to these groups.
The MCD estimate is robustbase ``covMcd``'s (:func:`sdc_dagster.numerics.robust.covmcd`, its
consistency and small-sample factors included: they decide which records the reweighting step keeps,
hence c and S), on the MCD subset found by scikit-learn's ``MinCovDet`` seeded from ``random_state``;
only the ordering of md matters, so the final scale of S does not.

Speed: the loop runs compiled, the nearest records found over a k-d tree (sdcMicro holds the n × n
distance matrix: 80 GB at 100,000 records).

References
----------
sdcMicro ``R/microaggregation.R`` (``micro_rmd``); Templ & Meindl (2008), Robust statistics meets
SDC: new disclosure risk measures for continuous microdata masking, PSD 2008, LNCS 5262;
Rousseeuw & Van Driessen (1999), Technometrics 41(3); Pison, Van Aelst & Willems (2002), Metrika 55(1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sdc_dagster.numerics.robust import covmcd
from sdc_dagster.protect.microaggregation.mdav import kd_tree
from sdc_dagster.protect.microaggregation.projection import robust_estimate


def standardised(x: np.ndarray) -> np.ndarray:
    """(x - mean) / sd per variable (sd with n - 1; a constant variable is only centred)."""
    sd = x.std(axis=0, ddof=1) if len(x) > 1 else np.ones(x.shape[1])
    return (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def robust_distances(y: np.ndarray, random_state) -> np.ndarray:
    """Squared Mahalanobis distance of every row of ``y`` from the reweighted MCD centre and covariance."""
    centre, covariance = robust_estimate(covmcd, y, random_state)
    diff = y - centre
    return np.einsum("ij,ij->i", diff @ np.linalg.pinv(covariance), diff)


# kept whole: a numba kernel
@njit(cache=True)
def rmd_labels(y: np.ndarray, md: np.ndarray, k: int) -> np.ndarray:
    """Group label of every row of ``y`` under sdcMicro's ``micro_rmd`` loop (module docstring), given
    the robust distances ``md``. The k nearest remaining rows are found by branch and bound over a
    balanced k-d tree of ``y`` (its boxes fixed, a node skipped once none of its rows remains or
    its box lies farther than the k-th best distance so far), ranked by (distance, row)."""
    n, p = y.shape
    labels = np.full(n, -1, dtype=np.int64)
    groups = max(n // k, 1)
    if groups == 1:
        labels[:] = 0
        return labels
    order, start, end, children = kd_tree(y)
    n_nodes = len(start)
    parent = np.full(n_nodes, -1, dtype=np.int64)
    leaf_of = np.empty(n, dtype=np.int64)  # by row
    low = np.empty((n_nodes, p))
    high = np.empty((n_nodes, p))
    count = end - start
    for node in range(n_nodes - 1, -1, -1):  # children come after their parent
        a, b = children[node, 0], children[node, 1]
        if a >= 0:
            parent[a], parent[b] = node, node
            for j in range(p):
                low[node, j], high[node, j] = min(low[a, j], low[b, j]), max(high[a, j], high[b, j])
        else:
            for j in range(p):
                low[node, j], high[node, j] = np.inf, -np.inf
            for i in range(start[node], end[node]):
                leaf_of[order[i]] = node
                for j in range(p):
                    low[node, j] = min(low[node, j], y[order[i], j])
                    high[node, j] = max(high[node, j], y[order[i], j])
    by_distance = np.argsort(-md, kind="mergesort")  # largest first, earlier row first on ties
    pointer = 0
    best_distance = np.empty(k)
    best_row = np.empty(k, dtype=np.int64)
    stack = np.empty(n_nodes, dtype=np.int64)
    bounds = np.empty(n_nodes)
    for group in range(groups - 1):  # groups, not records
        while labels[by_distance[pointer]] >= 0:
            pointer += 1
        s = by_distance[pointer]
        found = 0
        stack[0], bounds[0], top = 0, 0.0, 1
        while top > 0:
            top -= 1
            node = stack[top]
            if found == k and bounds[top] > best_distance[k - 1]:
                continue
            a, b = children[node, 0], children[node, 1]
            if a < 0:
                for i in range(start[node], end[node]):
                    r = order[i]
                    if labels[r] >= 0:
                        continue
                    total = 0.0
                    for j in range(p):
                        difference = y[r, j] - y[s, j]
                        total += difference * difference
                    d = np.sqrt(total)  # R dist: the square root of the summed squares
                    if found == k and (d > best_distance[k - 1] or (d == best_distance[k - 1] and r > best_row[k - 1])):
                        continue
                    slot = found if found < k else k - 1
                    if found < k:
                        found += 1
                    while slot > 0 and (d < best_distance[slot - 1]
                                        or (d == best_distance[slot - 1] and r < best_row[slot - 1])):
                        best_distance[slot], best_row[slot] = best_distance[slot - 1], best_row[slot - 1]
                        slot -= 1
                    best_distance[slot], best_row[slot] = d, r
                continue
            bound_a = bound_b = 0.0
            for j in range(p):
                q = y[s, j]
                gap = max(low[a, j] - q, q - high[a, j], 0.0)
                bound_a += gap * gap
                gap = max(low[b, j] - q, q - high[b, j], 0.0)
                bound_b += gap * gap
            bound_a, bound_b = np.sqrt(bound_a), np.sqrt(bound_b)  # never above the distances they bound
            if bound_a < bound_b:  # the nearer child on top of the stack
                a, b, bound_a, bound_b = b, a, bound_b, bound_a
            for child, bound in ((a, bound_a), (b, bound_b)):
                if count[child] > 0:
                    stack[top], bounds[top] = child, bound
                    top += 1
        for m in range(k):
            r = best_row[m]
            labels[r] = group
            node = leaf_of[r]
            while node >= 0:
                count[node] -= 1
                node = parent[node]
    for r in range(n):
        if labels[r] < 0:
            labels[r] = groups - 1
    return labels
