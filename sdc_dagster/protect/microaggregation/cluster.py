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
  for ``clustmcdpca`` also one too small for an MCD (at most variables + 1 records);
* ``influence``: by the variable whose cluster centre is largest (the first of equal largest).

Clustering: sdcMicro's default is ``clustermethod = "clara"`` (k-medoids) with the random sampling
of R's ``cluster`` package. Here the clustering is k-means (sdcMicro's ``clustermethod = "kmeans"``;
:func:`scipy.cluster.vq.kmeans2` with k-means++ starts drawn from ``random_state``), clusters numbered
in the order of their first record and centres the cluster means; or the caller gives the clustering
(``clusters``: a label per record, clusters taken in sorted label order), e.g. the clustering
sdcMicro found, which makes the rest of the method deterministic.

References
----------
sdcMicro ``R/microaggregation.R`` (``clust``, ``micro_clustpca``, ``micro_clustmcdpca``,
``micro_clustpppca``, ``micro_influence``); Templ (2008), Transactions on Data Privacy 1(2);
Arthur & Vassilvitskii (2007), k-means++: the advantages of careful seeding, SODA.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.cluster.vq import kmeans2

from sdc_dagster.protect.microaggregation.projection import mcdpca_order, pca_order, pppca_order

CLUSTER_METHODS = ("clustpca", "clustmcdpca", "clustpppca", "influence")


def kmeans_clusters(x: np.ndarray, nc: int, random_state) -> np.ndarray:
    """Cluster number (0..) of every record by k-means (k-means++ starts from ``random_state``),
    clusters numbered in the order of their first record. At most as many clusters as distinct
    records; a cluster k-means leaves empty is dropped (scipy's warning about it is silenced: fewer
    clusters only make longer runs of the ordering)."""
    distinct = len(np.unique(x, axis=0))
    if distinct < 2:
        return np.zeros(len(x), dtype=np.int64)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="One of the clusters is empty")
        _, labels = kmeans2(x, min(nc, distinct), minit="++", rng=np.random.default_rng(random_state))
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse.reshape(-1)]


def cluster_order(x: np.ndarray, method: str, clusters: np.ndarray, random_state) -> np.ndarray:
    """The records of ``x`` sorted cluster by cluster (``clusters``: 0.. in the order they are taken)
    and within each cluster as ``method`` sorts (module docstring)."""
    p = x.shape[1]
    parts = []
    for c in range(int(clusters.max()) + 1):  # clusters, not records
        rows = np.flatnonzero(clusters == c)
        if not len(rows):
            continue
        part = x[rows]
        if method == "influence":
            within = np.argsort(part[:, int(np.argmax(part.mean(axis=0)))], kind="stable")
        elif len(rows) < p or (method == "clustmcdpca" and len(rows) <= p + 1):
            within = np.argsort(part[:, 0], kind="stable")
        elif method == "clustpca":
            within = pca_order(part)
        elif method == "clustmcdpca":
            within = mcdpca_order(part, random_state)
        else:
            within = pppca_order(part)
        parts.append(rows[within])
    return np.concatenate(parts)
