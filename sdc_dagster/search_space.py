"""The search space of the plan search, generated from the data (SPEC §8.2, §8.3, §8.4, §8.5, §8.9; issue 22).

Each categorical key gets a chain of generalisation levels, level 0 the original categories and each
level a coarsening of the one before (every group of level i lies inside one group of level i+1), so
that the levels of the keys form a lattice in which k-anonymity is monotone (SPEC §3.1: merging
categories never lowers a sample frequency):

* the spec's ``hierarchy:`` of a key when it gives one;
* an ordered key (ordinal scale, or numbers with at least :data:`MANY_VALUES` distinct values):
  top and bottom coding of the tails (below the 5 % and above the 95 % quantile, cut at round
  numbers), then bands of round widths w, 2w, 4w (ages: 5, 10 and 20 years), each band named as
  sdcMicro's ``globalRecode`` prints it (``"(20,25]"``); an ordered key with few categories merges
  its rarest category with its rarer neighbour, level by level;
* a nominal key: its rare categories merged, step by step (below 0.5 %, 1 %, 2 %, 5 % and 10 % of
  the records), first among the codes that share a leading character (occupation or region
  codes: ``511`` with ``512``), then across them.

Every level is released as one ``recode`` step with ``groups`` (each group merged into its smallest
code, SPEC §8.2), so the released codes stay categories of the variable and the loss measures compare
them; the level's words carry the band names.

Continuous keys get candidate steps, weakest first: MDAV microaggregation (k = 3, 4, 5, 6, 8, 10) within
the released key combinations (as drafted specs do), rank swapping (p = 5, 10, 15 %) and additive
noise (noise SD 0.1, 0.2 and 0.5 times the standard deviation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.protect.recode import merge_mapping
from sdc_dagster.spec import SurveySpec, Variable

#: A numeric key with at least this many distinct values is generalised into bands.
MANY_VALUES = 15
#: Shares of the records under which a nominal category counts as rare, one level each.
RARE_SHARES = (0.005, 0.01, 0.02, 0.05, 0.10)
#: Tail quantiles of top and bottom coding.
TAILS = (0.05, 0.95)
MICROAGGREGATION_K = (3, 4, 5, 6, 8, 10)
RANK_SWAP_P = (5, 10, 15)
NOISE_AMOUNTS = (0.1, 0.2, 0.5)
#: Which search method (``search.methods``) makes which kind of level.
LEVEL_METHODS = {"hierarchy": "recode", "rare": "recode", "tails": "top_coding", "bands": "interval_recode",
                 "neighbours": "recode"}


@dataclass(frozen=True)
class KeyLevel:
    """One generalisation level of a key: its groups of original categories (each merged into its
    smallest code; one-member groups leave the category alone) and the level in words."""

    groups: tuple[tuple, ...]
    words: str

    def step(self, key: str) -> dict | None:
        """The spec step of this level: a ``recode`` with the merged groups (None at level 0)."""
        merged = [list(g) for g in self.groups if len(g) > 1]
        return {"method": "recode", "variable": key, "groups": merged} if merged else None


@dataclass(frozen=True)
class KeyHierarchy:
    """The chain of levels of one key, level 0 first (the original categories)."""

    key: str
    levels: tuple[KeyLevel, ...]

    def words(self) -> list[str]:
        return [level.words for level in self.levels]


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _show(value) -> str:
    """A category in words: a whole float as an integer (SPSS and Stata codes are read as floats)."""
    value = _plain(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _nice(low: float, high: float) -> float:
    """The roundest number in [low, high): fewest significant digits (multiples of 5 before others)."""
    span = max(high - low, 1e-12)
    for exponent in range(int(np.floor(np.log10(span))) + 1, -13, -1):
        for step in (10.0**exponent * 5, 10.0**exponent):
            candidate = np.ceil(low / step) * step
            if candidate < high:
                return float(candidate)
    return float(low)


def _nice_width(span: float, bands: int) -> float:
    """A width from 1, 2, 5 x 10^e giving about ``bands`` bands over ``span``."""
    raw = span / bands
    exponent = np.floor(np.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * 10**exponent >= raw:
            return float(factor * 10**exponent)
    return float(10 ** (exponent + 1))


def _label(value: float) -> str:
    return "%.8g" % (value + 0.0)


def _band_words(values: np.ndarray, cuts: np.ndarray, edges: np.ndarray) -> str:
    """The bands of a cut set as sdcMicro's globalRecode names intervals: "[a,b]" first, "(a,b]"."""
    starts = np.r_[0, np.flatnonzero(cuts) + 1]
    bounds = [values[0]] + [edges[i] for i in np.flatnonzero(cuts)] + [values[-1]]
    labels = [("[" if i == 0 else "(") + f"{_label(bounds[i])},{_label(bounds[i + 1])}]" for i in range(len(starts))]
    shown = labels if len(labels) <= 8 else labels[:3] + ["..."] + labels[-3:]
    return f"{len(labels)} bands " + " ".join(shown)


def _groups_from_cuts(categories: Sequence, cuts: np.ndarray) -> tuple[tuple, ...]:
    bounds = np.r_[0, np.flatnonzero(cuts) + 1, len(categories)]
    return tuple(tuple(_plain(c) for c in categories[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))


def _numeric_levels(values: np.ndarray, counts: np.ndarray, methods: set[str], age: bool) -> list[KeyLevel]:
    """Tails, then bands of width w, 2w, 4w (module docstring); ``values`` sorted distinct numbers."""
    edges = np.array([_nice(a, b) for a, b in zip(values[:-1], values[1:])])  # one round cut per gap
    cumulative = np.cumsum(counts) / counts.sum()
    levels, cuts = [], np.ones(len(values) - 1, dtype=bool)
    if "top_coding" in methods:
        tails = (cumulative[:-1] >= TAILS[0]) & (cumulative[:-1] < TAILS[1])
        if not tails.all():
            cuts = cuts & tails
            low, high = values[np.argmax(cumulative >= TAILS[0])], values[len(values) - 1 - np.argmax(cumulative[::-1] < TAILS[1])]
            levels.append((cuts.copy(), f"tails coded: up to {_label(low)} and above {_label(high)} merged"))
    if "interval_recode" in methods:
        width = 5.0 if age else _nice_width(values[-1] - values[0], 20)
        for factor in (1, 2, 4):
            w = width * factor
            band = np.ceil(values[:-1] / w) != np.ceil(values[1:] / w)  # right-closed (b - w, b]
            band_edges = np.ceil(values[:-1] / w) * w
            new = cuts & band
            if new.sum() < cuts.sum() and new.any():
                edges = np.where(band, band_edges, edges)
                cuts = new
                levels.append((cuts.copy(), f"{_label(w)}-wide bands"))
    return [KeyLevel(_groups_from_cuts(values, c), f"{words}: {_band_words(values, c, edges)}") for c, words in levels]


def _neighbour_levels(categories: list, counts: np.ndarray, n: int) -> list[KeyLevel]:
    """Ordered categories: the rarest group merged with its rarer neighbour until every group holds
    at least the level's share of the records (:data:`RARE_SHARES`)."""
    groups = [[c] for c in categories]
    sizes = list(counts)
    levels = []
    for share in RARE_SHARES:
        while len(groups) > 2 and min(sizes) < share * n:
            i = int(np.argmin(sizes))
            j = i - 1 if i == len(groups) - 1 or (i > 0 and sizes[i - 1] <= sizes[i + 1]) else i + 1
            a, b = sorted((i, j))
            groups[a:b + 1] = [groups[a] + groups[b]]
            sizes[a:b + 1] = [sizes[a] + sizes[b]]
        grouped = tuple(tuple(_plain(c) for c in g) for g in groups)
        if not levels or grouped != levels[-1].groups:
            if len(grouped) < len(categories):
                words = ", ".join(f"{_show(g[0])}-{_show(g[-1])}" if len(g) > 1 else _show(g[0]) for g in grouped)
                levels.append(KeyLevel(grouped, f"neighbours merged up to {share:.1%} of records: {words}"))
    return levels


def _family(category) -> str:
    text = str(category)
    return text[0] if len(text) > 1 else ""


def _rare_levels(categories: list, counts: np.ndarray, n: int) -> list[KeyLevel]:
    """Nominal categories: those below a share of the records merged, first within their family
    (shared leading character), then across families (module docstring)."""
    families = [_family(c) for c in categories]
    family_sizes = pd.Series(families).value_counts()
    has_families = (family_sizes > 1).sum() >= 2 and all(families)
    levels, previous = [], None
    for share in RARE_SHARES:
        rare = counts < share * n
        stages = ([True] if has_families and previous is None else []) + [False]
        for within_family in stages:
            merged: dict = {}
            for category, family, is_rare in zip(categories, families, rare):
                label = (family if within_family else "") if is_rare else ("own", category)
                merged.setdefault(label, []).append(_plain(category))
            groups = tuple(tuple(g) for g in merged.values())
            if len(groups) == len(categories) or groups == previous or len(groups) < 2:
                continue
            if previous is not None and not _coarsens(previous, groups):
                continue
            rare_words = ", ".join(_show(c) for g in groups if len(g) > 1 for c in g)
            where = " within codes sharing their first character" if within_family else ""
            levels.append(KeyLevel(groups, f"categories under {share:.1%} of records merged{where}: {rare_words}"))
            previous = groups
    return levels


def _coarsens(finer: tuple[tuple, ...], coarser: tuple[tuple, ...]) -> bool:
    mapping = merge_mapping(coarser)
    return all(len({mapping.get(c, c) for c in group}) == 1 for group in finer)


def key_hierarchy(values: pd.Series, variable: Variable, *, methods: Sequence[str] = ("recode", "interval_recode",
                  "top_coding"), max_level: int | None = None) -> KeyHierarchy:
    """The generalisation levels of one categorical key (module docstring).

    Parameters
    ----------
    values : the key's values in the wave (not modified).
    variable : the key's spec entry (scale, ``order:``, ``hierarchy:``).
    methods : the search methods allowed (``search.methods``), see :data:`LEVEL_METHODS`.
    max_level : the deepest level kept (None: every level).
    """
    observed = values.dropna()
    counts = observed.value_counts()
    original = KeyLevel(tuple((_plain(c),) for c in counts.index), f"original ({len(counts)} categories)")
    allowed = set(methods)
    if variable.hierarchy:
        levels = [KeyLevel(tuple(tuple(g) for g in level) + tuple((c,) for c in original.groups
                                                                 if all(c[0] not in g for g in level)),
                           f"spec hierarchy level {i}") for i, level in enumerate(variable.hierarchy, 1)]
        levels = levels if "recode" in allowed else []
    elif variable.scale == "ordinal" and variable.categories is not None:
        order = [c for c in variable.categories if c in counts.index]
        numeric = all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in order)
        if numeric and len(order) >= MANY_VALUES:
            levels = _numeric_levels(np.array(order, float), counts[order].to_numpy(), allowed, _is_age(variable.name))
        else:
            levels = _neighbour_levels(order, counts[order].to_numpy(), len(observed)) if "recode" in allowed else []
    elif pd.api.types.is_numeric_dtype(observed) and len(counts) >= MANY_VALUES:
        order = np.sort(counts.index.to_numpy())
        levels = _numeric_levels(order.astype(float), counts[order].to_numpy(), allowed, _is_age(variable.name))
        levels = [KeyLevel(tuple(tuple(_cast(order, c) for c in g) for g in level.groups), level.words)
                  for level in levels]
    else:
        levels = _rare_levels(list(counts.index), counts.to_numpy(), len(observed)) if "recode" in allowed else []
    levels = [original, *levels]
    if max_level is not None:
        levels = levels[:max_level + 1]
    return KeyHierarchy(variable.name, tuple(levels))


def _cast(order: np.ndarray, value: float):
    """The original category (int or float) a float band member stands for."""
    return _plain(order[np.searchsorted(order.astype(float), value)])


def _is_age(name: str) -> bool:
    return "age" in name.lower().replace("_", " ").split() or name.lower() in ("age", "alter", "edad", "wiek")


def search_space(data: pd.DataFrame, spec: SurveySpec) -> dict[str, KeyHierarchy]:
    """The levels of every categorical key of ``spec`` on the wave ``data``, restricted by the spec's
    ``search:`` (keys in ``keep`` only at level 0, ``max_level``, ``methods``)."""
    options = spec.search
    return {
        key: key_hierarchy(data[key], spec.variable(key), methods=options.methods,
                           max_level=0 if key in options.keep else options.max_level)
        for key in spec.categorical_keys
    }


def continuous_steps(spec: SurveySpec) -> list[dict]:
    """The candidate steps for the continuous keys, weakest first (module docstring), among the
    methods the spec's ``search.methods`` allows; microaggregation is stratified by the categorical
    keys (as released), so that within a released key combination no amount singles out a record."""
    columns = spec.continuous_keys
    if not columns:
        return []
    methods = spec.search.methods
    steps = []
    if "microaggregation" in methods:
        strata = {"strata": list(spec.categorical_keys)} if spec.categorical_keys else {}
        steps += [{"method": "microaggregation", "columns": list(columns), "k": k, **strata} for k in MICROAGGREGATION_K]
    if "rank_swap" in methods:
        steps += [{"method": "rank_swap", "columns": list(columns), "p": p} for p in RANK_SWAP_P]
    if "noise" in methods:
        steps += [{"method": "noise", "columns": list(columns), "amount": a} for a in NOISE_AMOUNTS]
    return steps
