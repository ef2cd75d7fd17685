"""Incremental form of the compatible counter (SPEC §2.4): local suppression removes key values
record by record, and the frequencies follow without recounting the data.

The compatible count is linear in the keys' counts: f = C n, C the symmetric compatibility relation
of the distinct keys (agreeing wherever both are observed), less the key missing in every variable
for a complete key (sdcMicro ``freqCalc``). Moving records from their keys to keys with values
suppressed changes n by a vector d that is non-zero only on the keys touched, so the counts follow
as f + C d, one pass over the table per missingness pattern among the touched keys
(:func:`~sdc_dagster.risk.frequencies.compatible_sums`) instead of a recount over every pattern of
the table; only the keys new to the table are counted afresh. The counts are sums of whole record
counts, exact in float64 in any order, so they equal a recount to the bit; with sampling weights
the weight sums (F) would not (a different order of floating-point additions), and the counter
recounts them (:func:`~sdc_dagster.risk.frequencies.compatible_counts`) as before."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.risk.frequencies import compatible_counts, compatible_sums
from sdc_dagster.keys import check_mask_width, pack_codes


class IncrementalCompatibleCounts:
    """SPEC §2.4 frequencies (sdcMicro ``freqCalc``, alpha = 1) of a data set whose keys lose values.

    The current keys are held as a table of distinct keys with their record counts and weight sums;
    setting key values of some records to missing moves those records to other (possibly new)
    table rows, so an update costs the changed records, not the data set. Every count is that of
    :func:`compatible_counts` on that table (followed without a recount, module docstring), so the
    semantics are exactly those of :func:`missing_aware_key_frequencies` (and of ``risk.key_frequencies`` / ``k_anonymity_violations``).

    * :meth:`record_counts`: (f, F) of every record's current key.
    * :meth:`probe_counts`: (f, F) that arbitrary keys would have among the current records, e.g. a
      record's key with some values set to missing. A probe derived from a record's own key by
      removing values is compatible with that key, so the record itself is counted once.

    Parameters
    ----------
    digits, radices : :func:`key_digits` of the data (0 = missing); ``digits`` is copied.
    weights : validated float64 weights per record, or None (then F = f).
    multiplicity : the records each row of ``digits`` stands for (a frequency table: a node's
        equivalence classes with their counts), None for one each; ``weights`` are then the rows'
        summed weights. Every count is that of the records the rows stand for, and a row is moved
        whole by :meth:`set_missing`.
    """

    def __init__(self, digits: np.ndarray, radices: np.ndarray, weights: np.ndarray | None = None,
                 multiplicity: np.ndarray | None = None):
        check_mask_width(np.shape(digits)[1], "local suppression")
        self.digits = np.array(digits, dtype=np.int64, copy=True)
        self.radices = np.asarray(radices, dtype=np.int64)
        self.multiplicity = (np.ones(len(self.digits)) if multiplicity is None
                             else np.asarray(multiplicity, dtype=np.float64))
        self.weights = self.multiplicity if weights is None else np.asarray(weights, dtype=np.float64)
        (code,) = pack_codes([self.digits], self.radices)
        self.record_key, uniques = pd.factorize(code)
        size = len(uniques)
        first = np.full(size, len(code), dtype=np.int64)
        np.minimum.at(first, self.record_key, np.arange(len(code), dtype=np.int64))
        self.table = self.digits[first]
        self.count = np.bincount(self.record_key, weights=self.multiplicity, minlength=size).astype(np.float64)
        self.weight_sum = np.bincount(self.record_key, weights=self.weights, minlength=size)
        self._record_counts = None  # (f, F) of the current keys, once computed
        # f of every table row once counted, kept up to date by set_missing (module docstring): only
        # when every count is a whole number (exact sums) and F is f (no weights)
        self._exact = weights is None and bool(np.all(self.multiplicity == np.round(self.multiplicity)))
        self._table_f = None

    def record_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(f, F) of every record's current key (float64 arrays, one value per record; computed once
        per state of the keys: not to be modified)."""
        if self._record_counts is None:
            if self._table_f is not None:
                f = self._table_f[self.record_key]
                self._record_counts = f, f
                return self._record_counts
            f, F = compatible_counts(self.table, self.radices, self.count, self.weight_sum, 1.0)
            if self._exact:
                self._table_f = f
            self._record_counts = f[self.record_key], F[self.record_key]
        return self._record_counts

    def _sums(self, keys: np.ndarray, count: np.ndarray) -> np.ndarray:
        """SPEC §2.4 f (alpha = 1) that ``keys`` (rows of digits) have among table rows holding
        ``count`` records (module docstring): the counts of the compatible keys, the all-missing key's
        only for a key with a missing value (or with a single key variable)."""
        all_missing = ~(self.table > 0).any(axis=1)
        counted = (count != 0) & ~all_missing
        f = compatible_sums(keys, self.table[counted], count[counted], self.radices)[:, 0]
        partial = ~(keys > 0).all(axis=1) | (self.table.shape[1] == 1)
        f[partial] += count[all_missing].sum()
        return f

    def probe_counts(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(f, F) of each probe key (rows of digits) among the current records, probes not added."""
        if len(probes) == 0:
            return np.zeros(0), np.zeros(0)
        if self._exact:
            f = self._sums(np.asarray(probes, dtype=np.int64), self.count)
            return f, f
        row, table_size = self._rows_of(probes)
        size = max(table_size, int(row.max()) + 1)
        digits = np.zeros((size, self.table.shape[1]), dtype=np.int64)
        digits[:table_size] = self.table
        digits[row] = probes
        count = np.zeros(size)
        count[:table_size] = self.count
        weight_sum = np.zeros(size)
        weight_sum[:table_size] = self.weight_sum
        f, F = compatible_counts(digits, self.radices, count, weight_sum, 1.0)
        return f[row], F[row]

    def set_missing(self, records: np.ndarray, masks: np.ndarray | int) -> None:
        """Set, in each of ``records``, the key values whose bit is set in its mask to missing."""
        records = np.asarray(records, dtype=np.int64)
        if len(records) == 0:
            return
        self._record_counts = None
        masks = np.broadcast_to(np.asarray(masks, dtype=np.int64), records.shape)
        bits = ((masks[:, None] >> np.arange(self.digits.shape[1], dtype=np.int64)) & 1).astype(bool)
        new = np.where(bits, 0, self.digits[records])
        before = self.count.copy() if self._table_f is not None else None
        self.digits[records] = new
        np.subtract.at(self.count, self.record_key[records], self.multiplicity[records])
        np.subtract.at(self.weight_sum, self.record_key[records], self.weights[records])
        row, table_size = self._rows_of(new)
        if row.max(initial=-1) >= table_size:
            grow = int(row.max()) + 1 - table_size
            self.table = np.vstack([self.table, np.zeros((grow, self.table.shape[1]), dtype=np.int64)])
            self.table[row] = new
            self.count = np.r_[self.count, np.zeros(grow)]
            self.weight_sum = np.r_[self.weight_sum, np.zeros(grow)]
        self.record_key[records] = row
        np.add.at(self.count, row, self.multiplicity[records])
        np.add.at(self.weight_sum, row, self.weights[records])
        if before is not None:
            self._follow(before)

    def _follow(self, before: np.ndarray) -> None:
        """Bring the table's f up to date after the counts changed from ``before`` (the table may
        have grown): f + C d over the rows known before, the new rows counted afresh."""
        known = len(before)
        change = self.count.copy()
        change[:known] -= before
        f = np.empty(len(self.count))
        f[:known] = self._table_f
        if change.any():
            f[:known] += self._sums(self.table[:known], change)
        if len(self.count) > known:
            f[known:] = self._sums(self.table[known:], self.count)
        self._table_f = f

    def _rows_of(self, keys: np.ndarray) -> tuple[np.ndarray, int]:
        """Table row of each key; keys not in the table get new rows numbered from the table size."""
        table_code, key_code = pack_codes([self.table, keys], self.radices)
        row = pd.Index(table_code).get_indexer(key_code)
        new = row < 0
        if new.any():
            new_index, _ = pd.factorize(key_code[new])
            row[new] = len(table_code) + new_index
        return row.astype(np.int64), len(table_code)
