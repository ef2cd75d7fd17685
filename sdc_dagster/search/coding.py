"""Keys coded once against their hierarchies, and the equivalence classes of a transformation rolled
up from those of a specialisation (SPEC §14.1-14.2; the dictionary encoding and roll-up of ARX).

Each key is coded once to integers 0..c-1 (its c values present in the data,
:func:`sdc_dagster.keys.category_codes`); each level h of its hierarchy becomes an integer map from
those codes to the codes of the level's groups present in the data, with each group's size (the
number of hierarchy rows it holds, SPEC §14.3's numerator) and label. The records are counted once,
per combination of codes (:func:`base_classes`); the classes of any other transformation are the
classes of one of its specialisations with each code mapped to the coarser level and equal
combinations summed (:func:`rolled_up`), never a pass over the records.

References
----------
Prasser, F., Kohlmayer, F., Lautenschläger, R. & Kuhn, K. A. (2014), "ARX - a comprehensive tool for
anonymizing biomedical data", *AMIA Annual Symposium Proceedings* 2014, 984-993 (dictionary encoding,
roll-up of frequency sets along the lattice). Kohlmayer et al. (2012), "Flash: efficient, stable and
optimal k-anonymity", *PASSAT/SocialCom 2012*, 708-717.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.keys import category_codes, pack_codes
from sdc_dagster.spec.hierarchies import Hierarchy, value_text

#: Below this many possible combinations (times the rows rolled up) classes are summed with a dense
#: ``bincount`` instead of a hash of the packed codes.
DENSE_FACTOR = 8


@dataclass(frozen=True)
class KeyCoding:
    """One key coded against its hierarchy.

    ``codes``: per record, the index of its value among the c values present (0..c-1), values
    equal as text being one value.
    ``level_codes[h]``: per present value, the code of its group at level h (0..G_h-1, groups
    numbered in hierarchy order; level 0 the values themselves). ``sizes[h]``: per group of level h,
    the number of hierarchy rows in it. ``labels[h]``: per group of level h, its label (level 0:
    the values as text). ``domain``: |D_j|, the hierarchy's rows."""

    name: str
    codes: np.ndarray
    level_codes: tuple[np.ndarray, ...]
    sizes: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]
    domain: int

    @property
    def height(self) -> int:
        return len(self.level_codes) - 1

    def groups(self, level: int) -> int:
        """G_h: the number of groups of ``level`` holding a value of the data."""
        return len(self.sizes[level])

    def coarsening(self, finer: int, coarser: int) -> np.ndarray:
        """The map from the group codes of level ``finer`` to those of level ``coarser``."""
        out = np.empty(self.groups(finer), dtype=np.int64)
        out[self.level_codes[finer]] = self.level_codes[coarser]
        return out


def key_coding(column: pd.Series, hierarchy: Hierarchy, name: str) -> KeyCoding:
    """:class:`KeyCoding` of a data column along ``hierarchy`` (values matched as text,
    :func:`~sdc_dagster.spec.hierarchies.value_text`).

    Raises
    ------
    SDCInputError : a missing value in the column, or a value the hierarchy has no row for (naming
        the column and the value).
    """
    codes, categories = category_codes(column)
    if (codes == 0).any():
        raise SDCInputError(f"key {name!r}: {int((codes == 0).sum()):,} records have a missing value; a hierarchy "
                            "generalises values it lists, so give missing values a code with a row in the hierarchy")
    as_text: dict[str, int] = {}  # values equal as text are one value (1 and "1")
    text_of_category = np.array([as_text.setdefault(value_text(c), len(as_text)) for c in categories], dtype=np.int64)
    texts = list(as_text)
    row = {value_text(v): i for i, v in enumerate(hierarchy.values)}
    unknown = [t for t in texts if t not in row]
    if unknown:
        shown = ", ".join(repr(t) for t in unknown[:5]) + (f", ... ({len(unknown)} values)" if len(unknown) > 5 else "")
        raise SDCInputError(f"key {name!r}: value {shown} of the data is not in its hierarchy ({hierarchy.source}); "
                            "every value of the data must have a row in it")
    rows = np.array([row[t] for t in texts], dtype=np.int64)
    level_codes, sizes, labels = [np.arange(len(texts), dtype=np.int64)], [np.ones(len(texts), dtype=np.int64)], [
        np.asarray(texts, dtype=object)]
    for level in hierarchy.levels:
        group_of_row = np.empty(len(hierarchy.values), dtype=np.int64)
        for g, group in enumerate(level.groups):
            group_of_row[[row[value_text(v)] for v in group]] = g
        present, compact = np.unique(group_of_row[rows], return_inverse=True)
        level_codes.append(compact.ravel().astype(np.int64))
        sizes.append(np.array([len(level.groups[g]) for g in present], dtype=np.int64))
        labels.append(np.array([level.names[g] for g in present], dtype=object))
    return KeyCoding(name, text_of_category[codes - 1], tuple(level_codes), tuple(sizes), tuple(labels),
                     len(hierarchy.values))


@dataclass(frozen=True)
class Classes:
    """The equivalence classes of one transformation: ``codes`` (r, m) the group code of each key at
    the transformation's levels, ``counts`` the records of each class, ``mass`` their summed weights
    (the counts as floats without weights)."""

    codes: np.ndarray
    counts: np.ndarray
    mass: np.ndarray


def _summed(codes: np.ndarray, radices: np.ndarray, counts: np.ndarray, mass: np.ndarray,
            weighted: bool) -> Classes:
    """Rows with equal codes merged, their counts and masses summed."""
    rows = len(codes)
    combined = pack_codes([codes], radices)[0]
    possible = float(np.prod(radices.astype(float)))
    if possible <= DENSE_FACTOR * rows:
        summed = np.bincount(combined, weights=counts, minlength=int(possible))
        present = np.flatnonzero(summed)
        label = np.empty(int(possible), dtype=np.int64)
        label[present] = np.arange(len(present))
        group = label[combined]
        new_counts = summed[present].astype(np.int64)
    else:
        group, _ = pd.factorize(combined)
        new_counts = np.bincount(group, weights=counts).astype(np.int64)
    first = np.empty(len(new_counts), dtype=np.int64)
    first[group] = np.arange(rows)  # any row of a class: its rows share their codes
    new_mass = np.bincount(group, weights=mass) if weighted else new_counts.astype(float)
    return Classes(codes[first], new_counts, new_mass)


class ClassCounter:
    """The classes of any transformation of the coded keys: the records counted once per combination
    of values, every other transformation rolled up from the closest specialisation counted before
    (the one with the fewest classes); rolled-up classes are kept while they fit in ``cache_cells``
    codes, the oldest dropped first."""

    def __init__(self, keys: list[KeyCoding], weights: np.ndarray | None, *, cache_cells: int = 10_000_000):
        self.keys = keys
        self.weighted = weights is not None
        self._coarsenings: dict[tuple[int, int, int], np.ndarray] = {}
        codes = np.column_stack([k.codes for k in keys]).astype(np.int64)
        ones = np.ones(len(codes), dtype=np.int64)
        mass = np.asarray(weights, dtype=float) if weights is not None else ones.astype(float)
        self.base = _summed(codes, self._radices([0] * len(keys)), ones, mass, self.weighted)
        self.cache_cells = cache_cells
        self._tables: list[Classes | None] = []
        self._levels = np.zeros((64, len(keys)), dtype=np.int64)
        self._rows = np.zeros(64, dtype=np.int64)
        self._cells = 0
        self._oldest = 0

    def _radices(self, levels) -> np.ndarray:
        return np.array([k.groups(h) for k, h in zip(self.keys, levels)], dtype=np.int64)

    def _coarsening(self, j: int, finer: int, coarser: int) -> np.ndarray:
        key = (j, finer, coarser)
        if key not in self._coarsenings:
            self._coarsenings[key] = self.keys[j].coarsening(finer, coarser)
        return self._coarsenings[key]

    def classes(self, levels) -> Classes:
        """The classes of the transformation ``levels``, rolled up from the cached specialisation
        with the fewest classes (the records' own combinations when none is cached)."""
        levels = np.asarray(levels, dtype=np.int64)
        if not levels.any():
            return self.base
        source_levels, source = np.zeros(len(levels), dtype=np.int64), self.base
        kept = len(self._tables)
        if kept:
            below = np.all(self._levels[:kept] <= levels, axis=1) & (self._rows[:kept] > 0)
            if below.any():
                candidates = np.flatnonzero(below)
                best = int(candidates[np.argmin(self._rows[candidates])])
                source_levels, source = self._levels[best], self._tables[best]
        codes = source.codes.copy()
        for j in np.flatnonzero(source_levels != levels):
            codes[:, j] = self._coarsening(int(j), int(source_levels[j]), int(levels[j]))[codes[:, j]]
        rolled = _summed(codes, self._radices(levels), source.counts, source.mass, self.weighted)
        self._keep(levels, rolled)
        return rolled

    def _keep(self, levels: np.ndarray, classes: Classes) -> None:
        cells = classes.codes.size
        if cells > self.cache_cells:
            return
        while self._cells + cells > self.cache_cells:
            dropped = self._tables[self._oldest]
            if dropped is not None:
                self._cells -= dropped.codes.size
                self._tables[self._oldest] = None
                self._rows[self._oldest] = 0
            self._oldest += 1
        i = len(self._tables)
        if i == len(self._rows):
            self._levels = np.concatenate([self._levels, np.zeros_like(self._levels)])
            self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
        self._tables.append(classes)
        self._levels[i] = levels
        self._rows[i] = len(classes.counts)
        self._cells += cells
