"""Microaggregation by sorting and cutting: sdcMicro's methods ``simple``, ``single`` and ``onedims``
(individual ranking), and the cut every sorting method shares (SPEC §8.6).

sdcMicro's ``indexMicro`` cuts n records, in the order a method sorts them, into floor(n / k)
groups: consecutive groups of k, the last taking the remainder (k..2k-1 records). Here a stratum of
fewer than 2k records (``indexMicro`` stops: "Too less observations") is one group, as MDAV makes it.

* ``simple``: the records in data order (sdcMicro: "a benchmark: how much better is a sorting").
* ``single``: sorted by the first variable (sdcMicro ``varsort = 1``); ties keep data order (R
  ``sort(..., index.return = TRUE)`` is stable).
* ``onedims`` (individual ranking): each variable sorted and cut on its own (R ``order`` per
  column, stable); a missing value takes no part and stays missing.

References
----------
sdcMicro ``R/microaggregation.R`` (``indexMicro``, ``micro_simple``, ``micro_single``,
``micro_onedims``) and ``R/mafast.R``; Defays & Nanopoulos (1993), Panels of enterprises and
confidentiality: the small aggregates method, Proc. 1992 Symposium on Design and Analysis of
Longitudinal Surveys, Statistics Canada (individual ranking); Hundepool et al. (2012) §3.4.2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdc_dagster.errors import SDCInputError


def cut(order: np.ndarray, k: int) -> np.ndarray:
    """Group label (0, 1, ...) of each of ``len(order)`` records: the records in ``order`` (positions)
    cut into floor(n / k) groups of k, the last group taking the remainder (one group when n < 2k)."""
    n = len(order)
    groups = max(n // k, 1)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.minimum(np.arange(n) // k, groups - 1)
    return labels


def simple_order(x: np.ndarray) -> np.ndarray:
    """sdcMicro ``simple``: the records in data order."""
    return np.arange(len(x))


def single_order(x: np.ndarray) -> np.ndarray:
    """sdcMicro ``single``: the records sorted by the first variable, ties in data order."""
    return np.argsort(x[:, 0], kind="stable")


def onedims_labels(x: np.ndarray, k: int, columns: Sequence[str]) -> np.ndarray:
    """Individual ranking (sdcMicro ``onedims``): per variable, its observed values sorted (stable)
    and cut (:func:`cut`); records × variables labels, -1 where a value is missing."""
    labels = np.full(x.shape, -1, dtype=np.int64)
    for j in range(x.shape[1]):  # variables
        present = np.flatnonzero(~np.isnan(x[:, j]))
        if len(present) == 0:
            continue
        if len(present) < k:
            raise SDCInputError(
                f"column {columns[j]!r}: {len(present)} observed values, individual ranking needs at least k={k}"
            )
        labels[present, j] = cut(np.argsort(x[present, j], kind="stable"), k)
    return labels
