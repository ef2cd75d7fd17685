"""Hierarchies drafted from the data when none is given (issue 34; SPEC §8.2 "read from the structure
of the codes and labels"): the plan search generalises along them, and ``sdc init`` writes them into
the drafted spec as a rule the user can edit (:class:`HierarchyRule`).

* **Code prefixes** (:func:`prefix_hierarchy`): codes of one length whose leading characters classify
  them, as ISCO and NACE codes and NUTS regions do (ILO, ISCO-08 structure: unit group ``5111`` in minor
  group ``511``, sub-major group ``51``, major group ``5``; Eurostat, NUTS: ``PL213`` in ``PL21`` in
  ``PL2`` in ``PL``). Text codes are letters then digits, cut no shorter than their letters; numeric codes
  have at least two digits and must leave gaps (fewer than half the numbers between the smallest and
  the largest code are codes): codes numbered one after another (municipalities in alphabetical order)
  have no structure to read.
* **A coarser column of the same file** (:func:`nesting_columns`, :func:`column_hierarchy`): a column
  every value of the key lies in one value of (municipality in province in region), the chain of such
  columns from the finest to the coarsest.
* **Round-width bands** for integer-valued keys (:func:`band_widths`): ages in 5, 10 and 20 years;
  other counts in widths of the 1-2-5 series (1, 2, 5 x 10^e, each a multiple of the one before so that
  the bands nest), starting from the width that gives about 20 bands. Band bounds are whole numbers.

References
----------
International Labour Office (2012), *International Standard Classification of Occupations ISCO-08*,
Vol. 1, structure; Eurostat (2020), *Statistical regions in the European Union and partner countries:
NUTS*, code structure; Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4.2 (global
recoding: merging categories along a classification, intervals of round width for age).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec.guess import whole_numbers
from sdc_dagster.spec.hierarchies import Hierarchy, HierarchyLevel, members_name, value_text
from sdc_dagster.spec.scenario import is_age_name

#: A numeric key without a code list and with at least this many distinct values is integer-valued
#: (ages, counts, years) or measured: it is generalised into bands.
MANY_VALUES = 15
#: A key nests in a coarser column only with at least this many records per value on average.
RECORDS_PER_VALUE = 5
#: About this many bands at the finest band level of a count.
BANDS = 20
#: Widths of age bands (years).
AGE_WIDTHS = (5, 10, 20)
#: Numeric codes filling at least this share of the numbers between their smallest and largest are
#: numbered one after another, not structured.
SEQUENTIAL_SHARE = 0.5
_TEXT_CODE = re.compile(r"^([A-Za-z]*)([0-9]+)$")


@dataclass(frozen=True)
class HierarchyRule:
    """A hierarchy the data complete: ``kind`` ``"prefixes"`` (``lengths``: code lengths, finest first),
    ``"columns"`` (``columns``: coarser columns of the file, finest first) or ``"bands"``
    (``widths``: band widths, finest first)."""

    kind: str
    lengths: tuple[int, ...] = ()
    columns: tuple[str, ...] = ()
    widths: tuple[float, ...] = ()

    @classmethod
    def from_hierlevels(cls, digits: Sequence[int]) -> HierarchyRule:
        """The prefix rule of an Argus ``<HIERLEVELS>`` declaration (mu-Argus and tau-Argus manuals,
        metadata file ``.rda``): the number of characters each level adds, coarsest first, e.g. ``1 1 2``
        for four-character codes whose first character is level 1, second level 2, last two level 3;
        the codes are then cut to 2 and 1 characters (finest first)."""
        if not digits or any(not isinstance(d, int) or d < 1 for d in digits):
            raise SDCInputError(f"<HIERLEVELS>: expected positive numbers of characters per level, got {list(digits)}")
        return cls("prefixes", lengths=tuple(int(n) for n in np.cumsum(digits)[:-1][::-1]))

    def spec_entry(self) -> dict:
        """The rule as a spec's ``hierarchy:`` entry."""
        return {"prefixes": list(self.lengths)} if self.kind == "prefixes" else (
            {"columns": list(self.columns)} if self.kind == "columns" else {"bands": [_plain(w) for w in self.widths]})

    def resolve(self, data: pd.DataFrame, key: str) -> Hierarchy:
        """The hierarchy of ``key``'s values in ``data`` (not for bands, whose levels the search draws
        with the key's counts)."""
        categories = _sorted(data[key].dropna().unique())
        if self.kind == "prefixes":
            return prefix_levels(categories, self.lengths, source=f"{key}: code prefixes")
        if self.kind == "columns":
            return column_hierarchy(data, key, self.columns)
        raise SDCInputError(f"{key}: band levels are drawn by the plan search, not resolved as a hierarchy")


def _sorted(values) -> list:
    """Values in their order (as found when they do not compare)."""
    try:
        return sorted(values)
    except TypeError:
        return list(values)


def _plain(value):
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def code_structure(categories: Sequence) -> tuple[int, int] | None:
    """(length of the codes, shortest prefix) when ``categories`` read as structured codes (module
    docstring), else None."""
    texts = [value_text(c) for c in categories]
    if len(texts) < 3 or len({len(t) for t in texts}) != 1 or len(texts[0]) < 2:
        return None
    matches = [_TEXT_CODE.match(t) for t in texts]
    if not all(matches) or len({len(m.group(1)) for m in matches}) != 1:
        return None
    letters = len(matches[0].group(1))
    if letters == 0:
        numbers = np.array([int(t) for t in texts])
        if len(numbers) >= SEQUENTIAL_SHARE * (numbers.max() - numbers.min() + 1):
            return None
    return len(texts[0]), max(letters, 1)


def prefix_levels(categories: Sequence, lengths: Sequence[int], *, source: str) -> Hierarchy:
    """The hierarchy that cuts each code to each of ``lengths`` (decreasing) characters; a group is
    named by its prefix. A level that merges nothing more than the one before is left out."""
    texts = [value_text(c) for c in categories]
    if any(b >= a for a, b in zip(lengths, lengths[1:])) or any(length < 1 for length in lengths):
        raise SDCInputError(f"{source}: prefix lengths must decrease, finest first, and be positive, got {list(lengths)}")
    levels, count = [], len(texts)
    for length in lengths:
        prefixes = pd.Series([t[:length] for t in texts])
        groups = prefixes.groupby(prefixes, sort=True).indices
        if len(groups) >= count:
            continue
        count = len(groups)
        levels.append(HierarchyLevel(f"first {length} characters of the code",
                                     tuple(tuple(categories[i] for i in idx) for idx in groups.values()),
                                     tuple(groups)))
    return Hierarchy(tuple(categories), tuple(levels), source)


def prefix_hierarchy(categories: Sequence, *, source: str = "code prefixes") -> HierarchyRule | None:
    """The prefix rule of structured codes (module docstring): the lengths that merge codes and leave
    at least two groups, finest first; None when the codes have no such structure."""
    structure = code_structure(categories)
    if structure is None:
        return None
    length, shortest = structure
    texts = [value_text(c) for c in categories]
    lengths, count = [], len(set(texts))
    for cut in range(length - 1, shortest - 1, -1):
        groups = len({t[:cut] for t in texts})
        if 2 <= groups < count:
            lengths.append(cut)
            count = groups
    return HierarchyRule("prefixes", lengths=tuple(lengths)) if lengths else None


def nesting_columns(data: pd.DataFrame, key: str, candidates: Sequence[str]) -> tuple[str, ...]:
    """The coarser columns ``key`` nests in (each value of ``key`` lies in one value of the column, the
    column has at least two values and fewer than ``key``), as a chain from the finest: each column
    nests in the next. Records whose key is missing are left out; the key must have at least
    :data:`RECORDS_PER_VALUE` records per value on average: a column with few records per value nests
    in another by chance (with five records a value lies in one of two equally common values with
    probability 1/16, and every value must)."""
    candidates = [c for c in dict.fromkeys(candidates) if c != key and c in data.columns]
    present = data[key].notna()
    frame = data[[key, *candidates]]
    frame = frame if present.all() else frame.loc[present]
    n_key = frame[key].nunique()
    if n_key < 3 or len(frame) < RECORDS_PER_VALUE * n_key:
        return ()
    nested = []
    for column in candidates:
        n_column = frame[column].nunique()
        if 2 <= n_column < n_key and len(frame[[key, column]].drop_duplicates()) == n_key:
            nested.append((n_column, column))
    chain: list[str] = []
    for _, column in sorted(nested, key=lambda pair: -pair[0]):
        finer = chain[-1] if chain else None
        if finer is None or len(frame[[finer, column]].drop_duplicates()) == frame[finer].nunique():
            chain.append(column)
    return tuple(chain)


def column_hierarchy(data: pd.DataFrame, key: str, columns: Sequence[str]) -> Hierarchy:
    """The hierarchy of ``key`` along coarser ``columns`` of the file, finest first: level h groups the
    key's values by their value of ``columns[h - 1]`` (named by it). A key value lying in two values of
    a column is an error naming both."""
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise SDCInputError(f"{key}: hierarchy column {missing[0]!r} is not in the data")
    frame = data.loc[data[key].notna(), [key, *columns]]
    categories = tuple(_sorted(pd.unique(frame[key])))
    levels = []
    for column in columns:
        pairs = frame[[key, column]].drop_duplicates()
        split = pairs[pairs[key].duplicated(keep=False)]
        if not split.empty:
            value = split[key].iloc[0]
            within = split.loc[split[key] == value, column].tolist()
            raise SDCInputError(f"{key}: value {value_text(value)!r} lies in {len(within)} values of column "
                                f"{column!r} ({', '.join(map(value_text, within[:3]))}); a hierarchy column must "
                                "hold one value for each value of the key")
        parent = dict(zip(pairs[key], pairs[column]))
        members: dict[str, list] = {}
        for c in categories:
            members.setdefault(value_text(parent[c]), []).append(c)
        levels.append(HierarchyLevel(f"{column} (column of the file)", tuple(tuple(g) for g in members.values()),
                                     tuple(_group_name(column, value, members[value]) for value in members)))
    return Hierarchy(categories, tuple(levels), f"{key} within {', '.join(columns)}")


def _group_name(column: str, value: str, members: Sequence) -> str:
    """The name of the group of key values lying in ``value`` of the coarser ``column``: the column and
    the value ("region = North", "college = no"), since the value alone names nothing once the column,
    a copy of the key, is removed before release (psid1976's education 5-12 released as "no"); a bare
    number (a code without a value label, testdata2's water3 = 100) with the members too ("water3 =
    100: 4, 5, 6"). SPEC §8.2: a merged category gets a label that names it, its members when few."""
    if pd.isna(pd.to_numeric(value, errors="coerce")):
        return f"{column} = {value}"
    return f"{column} = {value}: {members_name(members)}"


def _series_125(width: float) -> float:
    """The 1-2-5 series number at or above ``width``."""
    exponent = np.floor(np.log10(width))
    for factor in (1, 2, 5, 10):
        if factor * 10**exponent >= width * (1 - 1e-12):
            return float(factor * 10**exponent)
    return float(10 ** (exponent + 1))


def band_widths(values: np.ndarray, *, age: bool, levels: int = 3) -> tuple[float, ...]:
    """Round band widths, finest first (module docstring); whole numbers for whole-number values."""
    if age:
        return tuple(float(w) for w in AGE_WIDTHS[:levels])
    span = float(np.max(values) - np.min(values))
    width = _series_125(max(span / BANDS, 1e-12))
    if whole_numbers(pd.Series(values)):
        width = max(width, 1.0)
    widths = [width]
    while len(widths) < levels:
        nxt = _series_125(widths[-1] * 1.5)
        while not np.isclose(nxt / widths[-1], round(nxt / widths[-1])):
            nxt = _series_125(nxt * 1.5)
        widths.append(nxt)
    return tuple(widths)


def draft_rule(data: pd.DataFrame, key: str, *, code_list: bool, columns: Sequence[str] = ()) -> HierarchyRule | None:
    """The hierarchy drafted for a key that is not ordinal and has none given (module docstring), in
    this order: the coarser ``columns`` of the file it nests in; the prefixes of structured codes;
    round-width bands for a whole-number age (:func:`~sdc_dagster.spec.scenario.is_age_name`), and
    for a numeric key without a code list (``code_list``: the spec lists its ``categories:``, the
    codes of a classification, which are never banded; SPEC §8.2) with at least :data:`MANY_VALUES`
    values. None: the key's rare categories merge into "Other" instead."""
    observed = data[key].dropna()
    nested = nesting_columns(data, key, columns) if columns else ()
    if nested:
        return HierarchyRule("columns", columns=nested)
    categories = observed.unique()
    prefixes = prefix_hierarchy(categories)
    if prefixes is not None:
        return prefixes
    numeric = pd.api.types.is_numeric_dtype(observed) and not pd.api.types.is_bool_dtype(observed)
    values = np.sort(categories.astype(float)) if numeric else None
    age = numeric and is_age_name(key) and whole_numbers(observed) and len(categories) >= 3
    if age or (numeric and not code_list and len(categories) >= MANY_VALUES):
        return HierarchyRule("bands", widths=band_widths(values, age=is_age_name(key)))
    return None


def two_classes(counts: Sequence[float], *, ordered: bool) -> tuple[list[int], list[int]] | None:
    """A key's coarsest useful level: its groups (categories, or the groups of its coarsest level,
    with their record ``counts``, in order when ``ordered``) merged into two classes, the least
    detail a released key keeps (one class releases nothing of it: ``limits.max_keys_not_released``).
    Returned as the positions into ``counts`` of each class; None with fewer than three groups
    (two are two classes already).

    * ordered (an ordinal or whole-number key, SPEC §8.2: adjacent ranges only): the groups up to
      the one holding the median record, and the groups above it (the median record's group goes
      to the upper class when it is the last one);
    * nominal (SPEC §8.2: rare categories into an explicit "other"): the most frequent group (the
      first of equals) against the others merged into one.

    Every group lies in one class, so the level coarsens the one it is made from (a lattice's
    levels nest, SPEC §3.1)."""
    counts = np.asarray(counts, dtype=float)
    if len(counts) < 3:
        return None
    if ordered:
        cumulative = np.cumsum(counts)
        cut = min(int(np.searchsorted(cumulative, cumulative[-1] / 2, side="left")) + 1, len(counts) - 1)
        return list(range(cut)), list(range(cut, len(counts)))
    modal = int(np.argmax(counts))
    return [modal], [i for i in range(len(counts)) if i != modal]
