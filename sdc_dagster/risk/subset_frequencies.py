"""Key frequencies on every sub-combination of the key variables, read symmetrically (SPEC §5.8,
the combined measure; the risk games of §6.5).

SPEC §5.8 counts, for a record i and a subset T of the key variables, f_i(T) = the records
compatible with i on T (NA = wildcard, alpha = 1), with the relation symmetric: a key missing on
every variable of T is compatible with every key and counts for every key. These functions add
that reading on top of the one counter (:func:`~sdc_dagster.risk.frequencies.compatible_counts`, whose
sdcMicro variant leaves all-missing keys out of the counts of complete keys) and its down-set sum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.risk.frequencies import DENSE_CELL_LIMIT, compatible_counts, down_set_sum
from sdc_dagster.keys import pack_codes


def symmetric_compatible_counts(
    digits: np.ndarray, radices: np.ndarray, count: np.ndarray, weight_sum: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(f, F) per distinct key with the symmetric compatibility of SPEC §5.8 (alpha = 1).

    f_d = number of records whose key is compatible with d (equal wherever both are observed),
    F_d = sum of their weights. Equals :func:`compatible_counts` with alpha = 1 except that a key
    missing on every variable is also added to the complete keys (the sdcMicro detail of SPEC §2.4
    leaves it out when there is more than one key variable).
    """
    f, F = compatible_counts(digits, radices, count, weight_sum, 1.0)
    if digits.shape[1] > 1:
        all_missing = ~(digits > 0).any(axis=1)
        complete = (digits > 0).all(axis=1)
        f[complete] += count[all_missing].sum()
        F[complete] += weight_sum[all_missing].sum()
    return f, F


def subset_compatible_counts(digits: np.ndarray, radices: np.ndarray, count: np.ndarray, *, block_cells: int = 1 << 22):
    """f_d(T) of SPEC §5.8 for every distinct key d and every subset T of the key variables.

    Subset T is coded as the integer sum_{j in T} 2^j; f_d(∅) = total count. Yields
    ``(rows, subsets, counts)`` blocks, ``counts[a, b]`` = f_{rows[a]}(subsets[b]), with about
    ``block_cells`` cells per block at most; together the blocks cover every (key, subset) once.
    The method is chosen by the size of the lattice of :func:`_dense_compatible_counts`:

    * dense (at most 2**23 cells): one down-set sum of the key counts on the lattice (0 = NA <
      each category < top); f_d(T) is one cell: d's digit for an observed variable of T, the top
      slot for a variable outside T or missing in d. Cost ~ m x cells + keys x 2^m.
    * complete keys, large lattice: subset by subset, the keys are projected onto T and grouped
      (exact frequencies). Cost ~ 2^m x keys.
    * keys with NA, large lattice: for a block of keys d, every key e gets the set of variables on
      which it clashes with d (both observed, different); e counts for d on T exactly when that set
      misses T, so f_d(T) is a subset sum (zeta transform) of the clash-set histogram at the
      complement of T. Cost ~ keys^2 x m + keys x m x 2^m: for the many-variable case on small
      data (a large lattice with many distinct keys is slow on every method).
    """
    u, m = digits.shape
    cells_per_key = 1 << m
    subsets = np.arange(cells_per_key, dtype=np.int64)
    shape = tuple(int(r) + 1 for r in radices)
    if float(np.prod(np.asarray(shape, dtype=np.float64))) <= DENSE_CELL_LIMIT:
        yield from _lattice_subset_counts(digits, radices, count, shape, block_cells)
    elif (digits > 0).all():
        block = max(1, block_cells // max(u, 1))
        for start in range(0, cells_per_key, block):
            chunk = subsets[start:start + block]
            out = np.empty((u, len(chunk)))
            for b, subset in enumerate(chunk.tolist()):
                columns = np.flatnonzero((subset >> np.arange(m)) & 1)
                (code,) = pack_codes([digits[:, columns]], radices[columns])
                inverse = pd.factorize(code)[0]
                out[:, b] = np.bincount(inverse, weights=count)[inverse]
            yield np.arange(u), chunk, out
    else:
        yield from _clash_subset_counts(digits, count, block_cells)


def _lattice_subset_counts(digits, radices, count, shape, block_cells):
    """The dense method of :func:`subset_compatible_counts` (blocks of keys x all subsets)."""
    u, m = digits.shape
    cells_per_key = 1 << m
    strides = np.ones(m, dtype=np.int64)
    for j in range(m - 2, -1, -1):
        strides[j] = strides[j + 1] * shape[j + 1]
    cells = int(strides[0]) * shape[0]
    down_set = down_set_sum(np.bincount(digits @ strides, weights=count, minlength=cells), shape)
    if count.sum() < 2**31:  # whole counts: a 4-byte lattice halves the memory the gathers touch
        down_set = down_set.astype(np.int32)
    top = np.asarray(radices, dtype=np.int64)
    delta = np.where(digits > 0, (digits - top) * strides, 0)
    block = max(1, block_cells // cells_per_key)
    for start in range(0, u, block):
        d = delta[start:start + block]
        index = np.empty((len(d), cells_per_key), dtype=np.int64)
        index[:, 0] = top @ strides
        for j in range(m):  # cells of subsets containing j = those below 2^j moved to d's digit j
            index[:, 1 << j:2 << j] = index[:, :1 << j] + d[:, j:j + 1]
        yield np.arange(start, start + len(d)), np.arange(cells_per_key), down_set[index]


def _clash_subset_counts(digits, count, block_cells):
    """The clash-set method of :func:`subset_compatible_counts` (blocks of keys x all subsets)."""
    u, m = digits.shape
    cells_per_key = 1 << m
    complement = (cells_per_key - 1) ^ np.arange(cells_per_key)
    observed = digits > 0
    block = max(1, block_cells // max(u, cells_per_key))
    for start in range(0, u, block):
        d = digits[start:start + block]
        rows = len(d)
        clash = np.zeros((rows, u), dtype=np.int64)
        for j in range(m):
            differs = (d[:, j:j + 1] != digits[None, :, j]) & (d[:, j:j + 1] > 0) & observed[None, :, j]
            clash += differs.astype(np.int64) << j
        clash += (np.arange(rows, dtype=np.int64) * cells_per_key)[:, None]
        weights = np.broadcast_to(count, (rows, u)).ravel()
        zeta = np.bincount(clash.ravel(), weights=weights, minlength=rows * cells_per_key).reshape(rows, cells_per_key)
        for j in range(m):  # zeta[S] = sum of the histogram over the clash sets contained in S
            view = zeta.reshape(rows, -1, 2, 1 << j)
            view[:, :, 1, :] += view[:, :, 0, :]
        yield np.arange(start, start + rows), np.arange(cells_per_key), zeta[:, complement]
