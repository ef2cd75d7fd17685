"""Microaggregation after clustering: sdcMicro's methods ``clustpca``, ``clustmcdpca``, ``clustpppca``
and ``influence`` (SPEC §8.6).

sdcMicro first clusters the records into ``nc`` clusters (its ``clust``, on the raw variables: the
transformed copy it computes is not used), then sorts the records cluster by cluster (cluster 1's
records first, then cluster 2's, ...) and cuts that one sequence into groups
(:func:`~sdc_dagster.protect.microaggregation.ranking.cut`), so a group may span two clusters.
Within a cluster the records are sorted:

* ``clustpca``, ``clustmcdpca``, ``clustpppca``: by the first principal component of the cluster
  (:mod:`~sdc_dagster.protect.microaggregation.projection`: classical, MCD, projection pursuit);
  a cluster with fewer records than variables by the first variable (sdcMicro ``varsort = 1``), and
  for ``clustmcdpca`` also one too small for an MCD (at most variables + 1 records) or whose MCD is an
  exact fit (half its records on a hyperplane; a deviation: sdcMicro's ``cov.mcd`` stops there, a
  small cluster of CLARA's making the whole method fail);
* ``influence``: by the variable whose cluster centre is largest (the first of equal largest).

Clustering: sdcMicro's default ``clustermethod = "clara"``, k-medoids by CLARA (Kaufman &
Rousseeuw 1990, ch. 3; R ``cluster::clara(x, nc)`` with its defaults: Euclidean distances on the raw
variables, 5 samples of min(n, 40 + 2 nc) records, each after the first holding the best medoids so
far; on each sample PAM's BUILD and SWAP, then every record assigned to its nearest medoid, and the
sample whose medoids give the least mean distance kept): :func:`clara_clusters`, clusters numbered in
the order of their first record (as ``cluster``'s C code numbers them) and the centres the medoids,
which ``influence`` compares. The samples are drawn from ``random_state``, not from R's generator,
so the clusters can differ from R's; or the caller gives the clustering (``clusters``: a label per
record, clusters taken in sorted label order, ``influence`` then comparing the cluster means), e.g.
the clustering sdcMicro found, which makes the rest of the method deterministic.

References
----------
sdcMicro ``R/microaggregation.R`` (``clust``, ``micro_clustpca``, ``micro_clustmcdpca``,
``micro_clustpppca``, ``micro_influence``); Templ (2008), Transactions on Data Privacy 1(2);
Kaufman, L. & Rousseeuw, P. J. (1990), Finding Groups in Data: An Introduction to Cluster Analysis,
Wiley, ch. 2 (PAM) and 3 (CLARA).
"""

from __future__ import annotations

import numpy as np

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.microaggregation.projection import mcdpca_order, pca_order, pppca_order

CLUSTER_METHODS = ("clustpca", "clustmcdpca", "clustpppca", "influence")


#: CLARA's defaults (R ``cluster::clara``): samples drawn, and the sample size 40 + 2 k (at most n).
CLARA_SAMPLES = 5


def _pam(d: np.ndarray, k: int) -> np.ndarray:
    """PAM's medoids (positions) of the records with distance matrix ``d`` (Kaufman & Rousseeuw 1990,
    ch. 2): BUILD (first the record of least total distance, then each time the record that lowers the
    total distance to the nearest medoid most), then SWAP (the medoid-record exchange lowering the
    total most, while one does). Loops over medoids and iterations, never over records."""
    medoids = [int(np.argmin(d.sum(axis=0)))]
    nearest = d[:, medoids[0]].copy()
    for _ in range(1, k):
        gain = np.maximum(nearest[:, None] - d, 0.0).sum(axis=0)
        gain[medoids] = -1.0
        medoids.append(int(np.argmax(gain)))
        nearest = np.minimum(nearest, d[:, medoids[-1]])
    medoids = np.array(medoids)
    total = nearest.sum()
    while True:
        best, swap = total, None
        for slot in range(k):  # medoids, not records
            others = np.delete(medoids, slot)
            without = d[:, others].min(axis=1) if len(others) else np.full(len(d), np.inf)
            cost = np.minimum(without[:, None], d).sum(axis=0)
            cost[medoids] = np.inf
            h = int(np.argmin(cost))
            if cost[h] < best - 1e-12 * max(total, 1.0):
                best, swap = cost[h], (slot, h)
        if swap is None:
            return medoids
        medoids[swap[0]] = swap[1]
        total = best


def _assign(x: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's nearest centre (the first of equal nearest) and its distance, in blocks of records."""
    labels = np.empty(len(x), dtype=np.int64)
    distance = np.empty(len(x))
    step = max(1, 2_000_000 // max(len(centres), 1))
    for a in range(0, len(x), step):  # blocks of records
        block = np.sqrt(((x[a:a + step, None, :] - centres[None, :, :]) ** 2).sum(axis=2))
        labels[a:a + step] = np.argmin(block, axis=1)
        distance[a:a + step] = block[np.arange(len(block)), labels[a:a + step]]
    return labels, distance


def clara_clusters(x: np.ndarray, nc: int, random_state) -> tuple[np.ndarray, np.ndarray]:
    """CLARA's clustering of the records (module docstring): the cluster (0..) of every record,
    clusters numbered in the order of their first record, and the medoids (one row per cluster, in
    that order). At most as many clusters as distinct records."""
    rng = np.random.default_rng(random_state)
    distinct = np.unique(x, axis=0)
    if len(distinct) < 2:
        return np.zeros(len(x), dtype=np.int64), x[:1].copy()
    k = min(nc, len(distinct))
    size = min(len(x), 40 + 2 * k)
    best_cost, best_medoids = np.inf, None
    for _ in range(CLARA_SAMPLES if size < len(x) else 1):
        if best_medoids is None:
            sample = rng.choice(len(x), size=size, replace=False)
        else:  # the best medoids so far and records drawn from the rest
            rest = np.setdiff1d(np.arange(len(x)), best_medoids, assume_unique=False)
            sample = np.concatenate([best_medoids, rng.choice(rest, size=size - len(best_medoids), replace=False)])
        points = x[sample]
        _, keep = np.unique(points, axis=0, return_index=True)  # PAM on distinct points (ties make no medoid)
        keep = np.sort(keep)
        d = np.sqrt(((points[keep, None, :] - points[None, keep, :]) ** 2).sum(axis=2))
        medoids = sample[keep[_pam(d, min(k, len(keep)))]]
        _, distance = _assign(x, x[medoids])
        if distance.mean() < best_cost:
            best_cost, best_medoids = distance.mean(), medoids
    labels, _ = _assign(x, x[best_medoids])
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first)  # clusters in the order of their first record
    renumber = np.argsort(order)
    return renumber[inverse.reshape(-1)], x[best_medoids][np.unique(labels)][order]


def cluster_order(x: np.ndarray, method: str, clusters: np.ndarray, random_state,
                  centres: np.ndarray | None = None) -> np.ndarray:
    """The records of ``x`` sorted cluster by cluster (``clusters``: 0.. in the order they are taken)
    and within each cluster as ``method`` sorts (module docstring); ``centres``: each cluster's centre
    (CLARA's medoids) for ``influence``, None for the cluster means."""
    p = x.shape[1]
    parts = []
    for c in range(int(clusters.max()) + 1):  # clusters, not records
        rows = np.flatnonzero(clusters == c)
        if not len(rows):
            continue
        part = x[rows]
        if method == "influence":
            centre = part.mean(axis=0) if centres is None else centres[c]
            within = np.argsort(part[:, int(np.argmax(centre))], kind="stable")
        elif len(rows) < p or (method == "clustmcdpca" and len(rows) <= p + 1):
            within = np.argsort(part[:, 0], kind="stable")
        elif method == "clustpca":
            within = pca_order(part)
        elif method == "clustmcdpca":
            try:
                within = mcdpca_order(part, random_state)
            except SDCInputError:  # an exact fit of the cluster's MCD (sdcMicro stops): by the first variable
                within = np.argsort(part[:, 0], kind="stable")
        else:
            within = pppca_order(part)
        parts.append(rows[within])
    return np.concatenate(parts)
