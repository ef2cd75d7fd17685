"""The value a microaggregation group releases: sdcMicro's aggregation measures (SPEC §8.6).

sdcMicro's ``microaggregation(..., measure=, trim=, weights=)`` (``R/microaggregation.R``, its
helper ``means``) replaces each variable of a group of records by one of:

* ``"mean"``: the arithmetic mean; with weights w the weighted mean sum(w x) / sum(w)
  (R ``stats::weighted.mean``);
* ``"median"``: the median (the average of the two middle values for an even group); with weights
  sdcMicro's ``weightedMedian``: sort the values, rw = cumsum(w) / sum(w), the first value whose rw
  is at least 1/2, or the average of that value and the next when rw equals 1/2 exactly;
* ``"trim"``: R's trimmed mean ``mean(x, trim)``: drop the floor(n · trim) smallest and largest values
  and average the rest (the median when trim >= 0.5);
* ``"onestep"``: sdcMicro's one-step estimate: the values clipped to median ± (3 / 1.486) · MAD
  (MAD = 1.4826 · median |x - median|, R ``mad``), then averaged.

Weights apply to ``"mean"`` and ``"median"`` only, as in sdcMicro (its ``trim`` and ``onestep``
branches ignore them; here combining them is refused). Group values use the observed values of a
variable (a missing value takes no part and stays missing), as the project's MDAV does.

Deviation, documented: sdcMicro's ``means`` takes the weights of a group as ``weights[index]`` where
``index`` are positions in the *sorted* data (methods other than ``simple``), so after sorting the
weights no longer belong to the records they are applied to; here every record's weight stays with
its record.

References
----------
sdcMicro ``R/microaggregation.R`` (``means``, ``weightedQuantile``); Hampel, Ronchetti, Rousseeuw &
Stahel (1986), Robust Statistics (MAD, one-step estimates); Templ (2008), Statistical Disclosure
Control for Microdata Using the R-Package sdcMicro, Transactions on Data Privacy 1(2).
"""

from __future__ import annotations

import numpy as np
from numba import njit

MEASURES = ("mean", "median", "trim", "onestep")
WEIGHTED_MEASURES = ("mean", "median")
_ONESTEP_CONSTANT = 3 / 1.486  # sdcMicro's ``constant``
_MAD_CONSTANT = 1.4826  # R ``mad``'s default constant


def group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per group and column, the mean of the observed values (NaN where a group observes none)."""
    observed = ~np.isnan(x)
    filled = np.where(observed, x, 0.0)
    columns = []
    for j in range(x.shape[1]):
        count = np.bincount(labels, weights=observed[:, j].astype(float))
        total = np.bincount(labels, weights=filled[:, j])
        columns.append(np.where(count > 0, total / np.maximum(count, 1.0), np.nan))
    return np.column_stack(columns)


def _sorted_groups(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows sorted by group then value (ties in row order), each sorted row's rank within its
    group, and per sorted row its group's first position and size."""
    order = np.lexsort((values, labels))
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    first = np.repeat(starts, sizes)
    return order, np.arange(len(order)) - first, first, np.repeat(sizes, sizes)


def _median(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row, the median of its group's values."""
    order, _, first, size = _sorted_groups(values, labels)
    ranked = values[order]
    lower, upper = ranked[first + (size - 1) // 2], ranked[first + size // 2]
    per_row = np.empty(len(values))
    per_row[order] = (lower + upper) / 2
    return per_row


def _trimmed_mean(values: np.ndarray, labels: np.ndarray, trim: float) -> np.ndarray:
    """Per row, R's ``mean(x, trim)`` of its group: the floor(n · trim) smallest and largest values dropped."""
    if trim >= 0.5:
        return _median(values, labels)
    order, rank, _, size = _sorted_groups(values, labels)
    low = np.floor(size * trim)
    kept = (rank >= low) & (rank < size - low)
    group = labels[order]
    total = np.bincount(group, weights=np.where(kept, values[order], 0.0))
    count = np.bincount(group, weights=kept.astype(float))
    return (total / np.maximum(count, 1.0))[labels]


def _onestep(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row, sdcMicro's one-step value of its group: the mean of the values clipped to
    median ± (3 / 1.486) · MAD."""
    centre = _median(values, labels)
    spread = _MAD_CONSTANT * _median(np.abs(values - centre), labels)
    clipped = np.clip(values, centre - _ONESTEP_CONSTANT * spread, centre + _ONESTEP_CONSTANT * spread)
    return (np.bincount(labels, weights=clipped) / np.bincount(labels))[labels]


@njit(cache=True)
def _weighted_median_kernel(ranked: np.ndarray, weights: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """sdcMicro's ``weightedMedian`` of each group of the sorted values (group g: positions
    starts[g]..starts[g+1]-1): rw = cumsum(w) / sum(w) summed in order; the first value with
    rw >= 1/2, averaged with the next when rw == 1/2 exactly."""
    out = np.empty(len(starts) - 1)
    for g in range(len(starts) - 1):  # groups
        a, b = starts[g], starts[g + 1]
        total = 0.0
        for i in range(a, b):
            total += weights[i]
        running = 0.0
        for i in range(a, b):
            running += weights[i]
            share = running / total
            if share >= 0.5:
                out[g] = (ranked[i] + ranked[i + 1]) / 2 if share == 0.5 and i + 1 < b else ranked[i]
                break
    return out


def _weighted_median(values: np.ndarray, labels: np.ndarray, weight: np.ndarray) -> np.ndarray:
    order, _, first, _ = _sorted_groups(values, labels)
    starts = np.r_[np.unique(first), len(order)]
    medians = _weighted_median_kernel(values[order], weight[order], starts)
    per_row = np.empty(len(values))
    per_row[order] = np.repeat(medians, np.diff(starts))
    return per_row


def group_values(x: np.ndarray, labels: np.ndarray, *, measure: str = "mean", trim: float = 0.0,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """Every value of ``x`` (records × variables) replaced by the ``measure`` of its group.

    ``labels``: the group of every record, one vector for all columns or a records × variables
    array (individual ranking groups each variable on its own); a negative label or a missing value
    leaves the value missing. ``weight``: a positive weight per record (``"mean"``, ``"median"``).
    Returns a float64 array shaped like ``x``.
    """
    labels = np.broadcast_to(labels.reshape(len(x), -1), x.shape)
    out = np.full(x.shape, np.nan)
    for j in range(x.shape[1]):  # variables
        rows = np.flatnonzero(~np.isnan(x[:, j]) & (labels[:, j] >= 0))
        if not len(rows):
            continue
        values = x[rows, j]
        group = np.unique(labels[rows, j], return_inverse=True)[1].reshape(-1)  # 0..groups-1
        if measure == "mean" and weight is None:
            out[rows, j] = (np.bincount(group, weights=values) / np.bincount(group))[group]
        elif measure == "mean":
            w = weight[rows]
            out[rows, j] = (np.bincount(group, weights=w * values) / np.bincount(group, weights=w))[group]
        elif measure == "median":
            out[rows, j] = _median(values, group) if weight is None else _weighted_median(values, group, weight[rows])
        elif measure == "trim":
            out[rows, j] = _trimmed_mean(values, group, trim)
        else:
            out[rows, j] = _onestep(values, group)
    return out
