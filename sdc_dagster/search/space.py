"""The search space of the plan search, generated from the data (SPEC §8.2, §8.3, §8.4, §8.5, §8.9; issues 22, 34).

Each categorical key gets a chain of generalisation levels, level 0 the original categories and each
level a coarsening of the one before (every group of level i lies inside one group of level i+1), so
that the levels of the keys form a lattice in which k-anonymity is monotone (SPEC §3.1: merging
categories never lowers a sample frequency). SPEC §8.2 says which merges a key's scale allows:

* the spec's ``hierarchy:`` when it gives one (a file, inline levels or a rule,
  :mod:`sdc_dagster.spec.hierarchies`, :mod:`sdc_dagster.spec.drafted_hierarchies`);
* an **ordinal** key only by adjacent ranges: with many numeric categories (at least
  :data:`MANY_VALUES`), round-width bands; otherwise its rarest range merged with its rarer neighbour,
  level by level (a group named "2 to 4");
* an **integer-valued** key (a whole-number age, code list or not; counts and years: numbers without
  a code list, ``categories:``, and with at least :data:`MANY_VALUES` distinct values): top and bottom
  coding of the tails (below the 5 % and above the 95 % quantile, cut at round numbers), then
  round-width bands (ages 5, 10 and 20 years, counts in the 1-2-5 series), each band named as
  sdcMicro's ``globalRecode`` prints it (``"(20,25]"``); whole-number keys get whole-number bounds;
* a **nominal** key only along a hierarchy drafted from the file (a coarser column it nests in, or the
  prefixes of structured codes) or, without one, by merging its rare categories (below 0.5 %, 1 %, 2 %,
  5 % and 10 % of the records) into one explicit group named "Other (7 categories)"; never by bands
  of its codes.

Every level is released as one ``recode`` step with ``groups`` and their ``names`` (the hierarchy's
label at that level, the band, "Other (...)"): the released file gives each merged group a code and a
label of its own (SPEC §8.2); the loss measures and the lattice code a merged group by its smallest
member. :meth:`KeyHierarchy.to_arx` gives a chain in ARX's hierarchy layout (SPEC §14.1).

Continuous keys get a ladder of rungs (:func:`continuous_steps`), from the least loss to the most:
MDAV microaggregation within the released key combinations (as drafted specs do), then across all
records up to groups of half the file, rank swapping, additive noise, rounding, top and bottom coding,
banding into intervals, and last the keys withheld from the release: whatever the linkage target,
some rung of the ladder meets it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.mv_top_coding import PULLED_ATTRIBUTE, mv_top_coding
from sdc_dagster.spec import SurveySpec, Variable
from sdc_dagster.spec.drafted_hierarchies import (MANY_VALUES, HierarchyRule, band_widths, draft_rule, is_age_name,
                                                  two_classes)
from sdc_dagster.spec.hierarchies import Hierarchy, HierarchyLevel, members_name, other_name, value_text

#: Shares of the records under which a category counts as rare, one level each.
RARE_SHARES = (0.005, 0.01, 0.02, 0.05, 0.10)
#: Tail quantiles of top and bottom coding.
TAILS = (0.05, 0.95)
#: Group sizes of MDAV microaggregation within the released key combinations (SPEC §8.5).
MICROAGGREGATION_K = (3, 4, 5, 6, 8, 10)
#: Group sizes of MDAV microaggregation across all records, up to half the records (and that half).
GLOBAL_MICROAGGREGATION_K = (3, 5, 10, 20, 50, 100, 200, 500, 1000)
#: Tail probabilities alpha of multivariate top coding (sdcMicro ``mvTopCoding``) before MDAV
#: microaggregation (k = 3) across all records: the records beyond the chi-square 1 - alpha quantile of
#: the robust Mahalanobis distance are pulled onto it first; a larger alpha pulls more records.
MV_TOP_CODING_ALPHA = (0.01, 0.025, 0.05, 0.1)
#: Files of more records have no multivariate top coding rungs: its robust (MCD) estimates take about a
#: second per 5,000 records of three keys (30 s at 100,000), once to find the outliers and again at
#: every rung the search tries.
MV_TOP_CODING_RECORDS = 5_000
RANK_SWAP_P = (5, 10, 15)
NOISE_AMOUNTS = (0.1, 0.2, 0.5, 1.0, 2.0)
#: Rounding bases as multiples of a key's standard deviation (each made a round number).
ROUNDING_SD = (0.1, 0.25, 0.5, 1.0, 2.0)
#: Shares of the records top and bottom coded, one tail each.
CODED_TAILS = (0.05, 0.10, 0.25)
#: Numbers of bands of a continuous key (equal frequency), most first.
BAND_COUNTS = (20, 10, 5, 3, 2)
#: Which search method (``search.methods``) makes which kind of level.
LEVEL_METHODS = {"hierarchy": "recode", "rare": "recode", "tails": "top_coding", "bands": "interval_recode",
                 "neighbours": "recode"}
#: Roles of the columns a key may nest in (a drafted hierarchy along a coarser column of the file).
NESTING_ROLES = ("categorical_key", "other")


@dataclass(frozen=True)
class KeyLevel:
    """One generalisation level of a key: its groups of original categories (one-member groups leave
    the category alone), the name of each group (parallel to ``groups``) and the level in words."""

    groups: tuple[tuple, ...]
    words: str
    names: tuple[str, ...] = ()

    def group_names(self) -> tuple[str, ...]:
        """The name of every group (members named by :func:`members_name` where none was given)."""
        return self.names or tuple(value_text(g[0]) if len(g) == 1 else members_name(g) for g in self.groups)

    def step(self, key: str) -> dict | None:
        """The spec step of this level: a ``recode`` with the merged groups and their names (None at
        level 0)."""
        merged = [(list(g), n) for g, n in zip(self.groups, self.group_names()) if len(g) > 1]
        if not merged:
            return None
        return {"method": "recode", "variable": key, "groups": [g for g, _ in merged], "names": [n for _, n in merged]}


@dataclass(frozen=True)
class KeyHierarchy:
    """The chain of levels of one key, level 0 first (the original categories)."""

    key: str
    levels: tuple[KeyLevel, ...]

    def words(self) -> list[str]:
        return [level.words for level in self.levels]

    def hierarchy(self) -> Hierarchy:
        """The chain as a :class:`~sdc_dagster.spec.hierarchies.Hierarchy` over the key's categories."""
        values = tuple(g[0] for g in self.levels[0].groups)
        return Hierarchy(values, tuple(HierarchyLevel(level.words, level.groups, level.group_names())
                                       for level in self.levels[1:]), source=self.key)

    def to_arx(self) -> pd.DataFrame:
        """The chain in ARX's hierarchy layout (SPEC §14.1; ``search.optimal_generalisation``'s input)."""
        return self.hierarchy().to_arx()


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _nice(low: float, high: float) -> float:
    """The roundest number in [low, high): fewest significant digits (multiples of 5 before others)."""
    span = max(high - low, 1e-12)
    for exponent in range(int(np.floor(np.log10(span))) + 1, -13, -1):
        for step in (10.0**exponent * 5, 10.0**exponent):
            candidate = np.ceil(low / step) * step
            if candidate < high:
                return float(candidate)
    return float(low)


def _label(value: float) -> str:
    return "%.8g" % (value + 0.0)


def _band_names(values: np.ndarray, cuts: np.ndarray, edges: np.ndarray) -> list[str]:
    """The bands of a cut set as sdcMicro's globalRecode names intervals: "[a,b]" first, then "(a,b]"."""
    starts = np.r_[0, np.flatnonzero(cuts) + 1]
    bounds = [values[0]] + [edges[i] for i in np.flatnonzero(cuts)] + [values[-1]]
    return [("[" if i == 0 else "(") + f"{_label(bounds[i])},{_label(bounds[i + 1])}]" for i in range(len(starts))]


def _shown(names: Sequence[str]) -> str:
    """Group names as a list a reader can split ("spouse present, spouse not present"), the middle
    elided when more than 8."""
    shown = list(names) if len(names) <= 8 else [*names[:3], "...", *names[-3:]]
    return ", ".join(shown)


def _groups_from_cuts(categories: Sequence, cuts: np.ndarray) -> tuple[tuple, ...]:
    bounds = np.r_[0, np.flatnonzero(cuts) + 1, len(categories)]
    return tuple(tuple(_plain(c) for c in categories[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))


def _numeric_levels(values: np.ndarray, counts: np.ndarray, methods: set[str], widths: Sequence[float]) -> list[KeyLevel]:
    """Tails, then bands of each width (module docstring); ``values`` sorted distinct numbers. A band
    (b - w, b] is cut at multiples b of its width w, so whole widths give whole bounds."""
    edges = np.array([_nice(a, b) for a, b in zip(values[:-1], values[1:])])  # one round cut per gap
    cumulative = np.cumsum(counts) / counts.sum()
    levels, cuts = [], np.ones(len(values) - 1, dtype=bool)
    if "top_coding" in methods:
        tails = (cumulative[:-1] >= TAILS[0]) & (cumulative[:-1] < TAILS[1])
        if not tails.all():
            cuts = cuts & tails
            low, high = values[np.argmax(cumulative >= TAILS[0])], values[len(values) - 1 - np.argmax(cumulative[::-1] < TAILS[1])]
            levels.append((cuts.copy(), edges.copy(), f"tails coded: up to {_label(low)} and above {_label(high)} merged"))
    if "interval_recode" in methods:
        for w in widths:
            band = np.ceil(values[:-1] / w) != np.ceil(values[1:] / w)  # right-closed (b - w, b]
            band_edges = np.ceil(values[:-1] / w) * w
            new = cuts & band
            if new.sum() < cuts.sum() and new.any():
                edges = np.where(band, band_edges, edges)
                cuts = new
                levels.append((cuts.copy(), edges.copy(), f"bands cut at multiples of {_label(w)}"))
    out = []
    for c, e, words in levels:
        names = _band_names(values, c, e)
        out.append(KeyLevel(_groups_from_cuts(values, c), f"{words}: {len(names)} bands: {_shown(names)}", tuple(names)))
    return out


def _neighbour_levels(categories: list, counts: np.ndarray, n: int) -> list[KeyLevel]:
    """Ordered categories: the rarest range merged with its rarer neighbour until every range holds
    at least the level's share of the records (:data:`RARE_SHARES`); a range is named by its members
    (:func:`members_name`: "1, 2, 3", or "1 – 7 (7 categories)")."""
    order = [_plain(c) for c in categories]
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
        if (not levels or grouped != levels[-1].groups) and len(grouped) < len(categories):
            names = tuple(members_name(g, order=order) if len(g) > 1 else value_text(g[0]) for g in grouped)
            levels.append(KeyLevel(grouped, f"neighbours merged up to {share:.1%} of records: {', '.join(names)}", names))
    return levels


def _rare_levels(categories: list, counts: np.ndarray, n: int) -> list[KeyLevel]:
    """Nominal categories under each share of the records merged into one explicit "Other" group
    (SPEC §8.2), named by its members when few (:func:`~sdc_dagster.spec.hierarchies.other_name`: "Other (b, c, e)"); the rare
    categories of a share include those of the smaller ones, so each level coarsens the one before."""
    levels, previous = [], 0
    for share in RARE_SHARES:
        rare = counts < share * n
        if rare.sum() < 2 or rare.sum() == previous or rare.all():
            continue
        previous = int(rare.sum())
        other = _ordered(tuple(_plain(c) for c, r in zip(categories, rare) if r))
        name = other_name(other)
        kept = [(_plain(c),) for c, r in zip(categories, rare) if not r]
        groups = (*kept, other)
        names = (*(value_text(g[0]) for g in kept), name)
        levels.append(KeyLevel(groups, f"categories under {share:.1%} of records merged into {name!r}: "
                                       f"{', '.join(value_text(c) for c in other)}", names))
    return levels


def _ordered(members: tuple) -> tuple:
    """Members in the order of their codes (as given when they do not compare)."""
    try:
        return tuple(sorted(members))
    except TypeError:
        return members


def _hierarchy_levels(hierarchy: Hierarchy) -> list[KeyLevel]:
    """The levels of a hierarchy bound to the key's categories; a level that merges nothing more than
    the one before, or merges everything into one group, is left out."""
    levels, count = [], len(hierarchy.values)
    for level in hierarchy.levels:
        if 2 <= len(level.groups) < count:
            count = len(level.groups)
            merged = [n for g, n in zip(level.groups, level.names) if len(g) > 1]
            levels.append(KeyLevel(level.groups, f"{level.name}: {len(level.groups)} groups, merged: {_shown(merged)}",
                                   level.names))
    return levels


def key_hierarchy(values: pd.Series, variable: Variable, *, methods: Sequence[str] = ("recode", "interval_recode",
                  "top_coding"), max_level: int | None = None, data: pd.DataFrame | None = None,
                  columns: Sequence[str] = ()) -> KeyHierarchy:
    """The generalisation levels of one categorical key (module docstring).

    Parameters
    ----------
    values : the key's values in the wave (not modified).
    variable : the key's spec entry (scale, ``order:``, ``categories:``, ``hierarchy:``).
    methods : the search methods allowed (``search.methods``), see :data:`LEVEL_METHODS`.
    max_level : the deepest level kept (None: every level).
    data, columns : the wave and the columns a nominal key may nest in (a drafted hierarchy along a
        coarser column of the file, :func:`~sdc_dagster.spec.drafted_hierarchies.nesting_columns`).
    """
    observed = values.dropna()
    counts = observed.value_counts()
    categories = [_plain(c) for c in counts.index]
    original = KeyLevel(tuple((c,) for c in categories), f"original ({len(counts)} categories)",
                        tuple(value_text(c) for c in categories))
    allowed = set(methods)
    given = variable.hierarchy
    where = f"variables.{variable.name}.hierarchy"
    frame = data if data is not None else values.to_frame(variable.name)
    if isinstance(given, HierarchyRule):
        levels = _rule_levels(given, counts, categories, allowed, frame, variable.name)
    elif given is not None:
        levels = _hierarchy_levels(given.on_categories(categories, where=where)) if "recode" in allowed else []
    elif variable.scale == "ordinal" and variable.categories is not None:
        order = [c for c in variable.categories if c in counts.index]
        numbers = all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in order)
        if numbers and len(order) >= MANY_VALUES:
            ordered = np.array(order, float)
            levels = _numeric_levels(ordered, counts[order].to_numpy(), allowed, band_widths(ordered, age=is_age_name(variable.name)))
        else:
            levels = _neighbour_levels(order, counts[order].to_numpy(), len(observed)) if "recode" in allowed else []
    else:
        rule = draft_rule(frame, variable.name, code_list=variable.categories is not None, columns=columns)
        levels = _rule_levels(rule, counts, categories, allowed, frame, variable.name)
    levels = [original, *levels]
    if max_level is not None:
        levels = levels[:max_level + 1]
    return KeyHierarchy(variable.name, tuple(levels))


def two_class_level(hierarchy: KeyHierarchy, values: pd.Series, variable: Variable) -> KeyLevel | None:
    """The last level of ``hierarchy`` merged into two classes (:func:`_two_class_level`), for the
    lattice with the keys' tops (:func:`search_space` with ``withhold``): the coarsest detail a key
    keeps before its top. None after a hierarchy given level by level (a file, inline levels: the
    methodologist's own, kept as given) or when the last level has two groups or fewer."""
    if variable.hierarchy is not None and not isinstance(variable.hierarchy, HierarchyRule):
        return None
    counts = values.dropna().value_counts()
    categories = [_plain(c) for c in counts.index]
    ordinal = variable.scale == "ordinal" or (variable.scale != "nominal" and _numbers(categories))
    rank = ({c: i for i, c in enumerate(variable.categories)} if variable.scale == "ordinal" and variable.categories
            else {c: c for c in categories} if ordinal else None)
    return _two_class_level(hierarchy.levels[-1], counts, rank)


def _numbers(categories: list) -> bool:
    return all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) for c in categories)


def _two_class_level(coarsest: KeyLevel, counts: pd.Series, rank: dict | None) -> KeyLevel | None:
    """The key's coarsest useful level below its top: the groups of its coarsest level merged into two
    classes (:func:`~sdc_dagster.spec.drafted_hierarchies.two_classes`: adjacent ranges split after
    the median record for an ordered key, the most frequent group against the others merged into
    "Other" for a nominal one), so that a small file can keep a key with some detail where its
    levels stop at more groups than its records can fill (13 records and a key of 10 categories, no
    category under 10 % of them). ``rank``: an ordered key's categories -> their place in its order
    (None: nominal). None when the coarsest level has two groups or fewer."""
    ordered = rank is not None
    groups = list(coarsest.groups)
    if ordered:
        groups = [tuple(sorted(g, key=rank.get)) for g in sorted(groups, key=lambda g: min(rank[c] for c in g))]
    sizes = [float(counts.loc[list(g)].sum()) for g in groups]
    classes = two_classes(sizes, ordered=ordered)
    if classes is None:
        return None
    merged = [tuple(c for i in positions for c in groups[i]) for positions in classes]
    if ordered:  # adjacent ranges, named by their members as the neighbour levels name them
        order = [c for g in groups for c in g]
        names = tuple(members_name(g, order=order) if len(g) > 1 else value_text(g[0]) for g in merged)
    else:
        kept = coarsest.group_names()[coarsest.groups.index(groups[classes[0][0]])]
        other = merged[1] = _ordered(merged[1])
        names = (kept, other_name(other))
    return KeyLevel(tuple(merged), f"two classes: {' and '.join(names)}", names)


def _rule_levels(rule: HierarchyRule | None, counts: pd.Series, categories: list, allowed: set[str],
                 frame: pd.DataFrame, key: str) -> list[KeyLevel]:
    """The levels of a hierarchy rule (given or drafted, :func:`draft_rule`): bands drawn with the
    key's counts, columns and prefixes resolved on the wave; without a rule, the rare categories
    merged into "Other"."""
    if rule is not None and rule.kind == "bands":
        if not pd.api.types.is_numeric_dtype(counts.index) or pd.api.types.is_bool_dtype(counts.index):
            raise SDCInputError(f"variables.{key}.hierarchy: bands need numbers, and {key!r} holds "
                                f"{counts.index.dtype} values such as {value_text(counts.index[0])!r}")
        order = np.sort(counts.index.to_numpy())
        return _cast_levels(order, _numeric_levels(order.astype(float), counts[order].to_numpy(), allowed, rule.widths))
    if "recode" not in allowed:
        return []
    if rule is not None:
        return _hierarchy_levels(rule.resolve(frame, key).on_categories(categories, where=f"variables.{key}.hierarchy"))
    return _rare_levels(categories, counts.to_numpy(), int(counts.sum()))


def _cast_levels(order: np.ndarray, levels: list[KeyLevel]) -> list[KeyLevel]:
    """Band levels over the key's own categories (int or float) instead of the floats they were cut on."""
    as_float = order.astype(float)
    return [KeyLevel(tuple(tuple(_plain(order[np.searchsorted(as_float, c)]) for c in g) for g in level.groups),
                     level.words, level.names) for level in levels]


def search_space(data: pd.DataFrame, spec: SurveySpec, *, withhold: bool = False) -> dict[str, KeyHierarchy]:
    """The levels of every categorical key of ``spec`` on the wave ``data``, restricted by the spec's
    ``search:`` (keys in ``keep`` only at level 0, ``max_level``, ``methods``); with ``withhold``,
    each key that may be recoded (not in ``keep``, no ``max_level`` given) also gets the top of its
    hierarchy (:func:`withheld_level`), and before it the key in two classes (:func:`two_class_level`)."""
    options = spec.search
    columns = [v.name for v in spec.variables
               if v.role in NESTING_ROLES and v.scale != "continuous" and v.name in data.columns]
    space = {
        key: key_hierarchy(data[key], spec.variable(key), methods=options.methods,
                           max_level=0 if key in options.keep else options.max_level, data=data, columns=columns)
        for key in spec.categorical_keys
    }
    if withhold and options.max_level is None and "recode" in options.methods:
        # before each top, the key in two classes (issue 34): the least detail a released key keeps
        two = {key: two_class_level(h, data[key], spec.variable(key)) for key, h in space.items()}
        space = {key: replace(h, levels=(*h.levels, *((two[key],) if two[key] is not None else ()), top))
                 if key not in options.keep and (top := withheld_level(h.levels[0])) is not None else h
                 for key, h in space.items()}
    return space


def withheld_level(original: KeyLevel) -> KeyLevel | None:
    """The top of a key's hierarchy: every category merged into one group ("*" in ARX's hierarchies,
    Prasser et al. 2014; Hundepool et al. 2012, §3.4.2.1 on global recoding), so that the key tells
    nothing and every record shares its value. A lattice with every key's top holds a k-anonymous
    plan without suppression whenever the file has k records; the plan search adds it when no plan
    of the data's own levels meets the target. None for a key of one category."""
    members = tuple(g[0] for g in original.groups)
    if len(members) < 2:
        return None
    name = f"Withheld ({len(members)} categories)"
    return KeyLevel((_ordered(members),), f"withheld: its {len(members)} categories released as one, {name!r}",
                    (name,))


def hierarchy_problems(data: pd.DataFrame, spec: SurveySpec) -> list[str]:
    """What stops the spec's ``hierarchy:`` of a categorical key from applying to the wave ``data``
    (a value of the data missing from a hierarchy file, a key value in two values of a hierarchy
    column), one message per key; empty when every given hierarchy applies."""
    problems = []
    for key in spec.categorical_keys:
        variable = spec.variable(key)
        if variable.hierarchy is None or key not in data.columns:
            continue
        try:
            key_hierarchy(data[key], variable, data=data)
        except SDCInputError as exc:
            problems.append(str(exc))
    return problems


@dataclass(frozen=True)
class ContinuousRung:
    """One rung of the continuous keys' ladder (:func:`continuous_steps`): the ``method`` of its
    chain (the rungs of one chain grow stronger, the search bisects along it), its plan ``steps``
    and what it does in ``words``."""

    method: str
    steps: tuple[dict, ...]
    words: str


def _round_base(value: float, whole: bool) -> float:
    """The roundest number in [value, 2 value) (:func:`_nice`), at least 1 for a whole-numbered key
    (whose released values stay whole)."""
    base = _nice(value, 2 * value) if value > 0 else 1.0
    return max(base, 1.0) if whole else base


def _bands(values: np.ndarray, count: int) -> tuple[list[float], list[float]] | None:
    """Equal-frequency bands of ``values`` (observed, sorted): breaks at the data values of the
    quantiles i/count (numpy's "lower", so every break is a value some record has; repeated breaks
    merged) and each band's representative, the lower median of its values (a value a record has);
    None when fewer than two bands remain."""
    breaks = np.unique(np.quantile(values, np.linspace(0, 1, count + 1), method="lower"))
    breaks[-1] = values[-1]
    breaks = np.unique(breaks)
    if len(breaks) < 3:
        return None
    # right-closed (b_i, b_i+1], the first band [b_0, b_1]: interval_recode's coding
    position = np.clip(np.searchsorted(breaks, values, side="left") - 1, 0, len(breaks) - 2)
    labels = [float(np.quantile(values[position == i], 0.5, method="lower")) for i in range(len(breaks) - 1)]
    return [float(b) for b in breaks], labels


def _multivariate_outliers(data: pd.DataFrame, columns: list[str]) -> bool:
    """Whether multivariate top coding at the weakest rung (alpha = :data:`MV_TOP_CODING_ALPHA`\[0],
    robust estimates seeded 0) pulls any record of ``columns``; False where it cannot run (too few
    complete records, an exact fit of the MCD)."""
    try:
        coded = mv_top_coding(data, columns, alpha=MV_TOP_CODING_ALPHA[0], random_state=0)
    except SDCInputError:
        return False
    return coded.attrs[PULLED_ATTRIBUTE] > 0


def continuous_steps(data: pd.DataFrame, spec: SurveySpec) -> list[ContinuousRung]:
    """The ladder of the continuous keys, rung by rung from the least loss to the most, among the
    methods the spec's ``search.methods`` allows, in chains of one method each (within a chain each rung
    is stronger than the one before). With categorical keys the last rung withholds every continuous
    key, so that a ladder with ``remove_variables`` allowed always reaches any linkage target (a
    release without continuous keys has nothing to link on, SPEC §4.1); without them it keeps one
    (a release keeps at least one key), whose bands and rounding are then the strongest rungs:

    1. MDAV microaggregation (Domingo-Ferrer & Mateo-Sanz 2002; sdcMicro ``microaggregation``,
       method "mdav") within the released key combinations, groups of k = 3 ... 10
       (:data:`MICROAGGREGATION_K`);
    2. MDAV microaggregation across all records, groups of 3 up to half the records
       (:data:`GLOBAL_MICROAGGREGATION_K`): a record alone in its key combination keeps no amount of
       its own;
    2a. only when ``search.methods`` names ``mv_top_coding`` (it is not a default), on files of at most
       :data:`MV_TOP_CODING_RECORDS` records whose keys have multivariate outliers: multivariate top
       coding (sdcMicro ``mvTopCoding``; robust MCD estimates, Rousseeuw & Van Driessen 1999) at
       alpha = 1 %, 2.5 %, 5 %, 10 % (:data:`MV_TOP_CODING_ALPHA`), then MDAV microaggregation with
       k = 3 across all records: the outliers, which MDAV leaves in groups whose means are still far
       from the rest, are pulled in first;
    3. rank swapping (Moore 1996; sdcMicro ``rankSwap``) within p = 5, 10, 15 % of the ranks;
    4. additive noise (sdcMicro ``addNoise``, "additive") of 0.1 up to 2 standard deviations;
    5. rounding of each key to a round base of 0.1 up to 2 of its standard deviations
       (Hundepool et al. 2012, §3.4.2.6);
    6. top and bottom coding (Hundepool et al. 2012, §3.4.2.4; sdcMicro ``topBotCoding``) of 5, 10
       and 25 % of the records at each end, each tail released as the value at its quantile;
    7. banding (global recoding of a continuous key into intervals, Hundepool et al. 2012, §3.4.2.1;
       sdcMicro ``globalRecode``) into 20, 10, 5, 3 and 2 equal-frequency bands, each band released as
       the median of its values, so that the key stays a number and its mean moves little;
    8. withholding keys from the release (SPEC §8.1's ``remove_variables``): the key with the most
       distinct values first, then the next, up to every continuous key (all but the one with the
       fewest distinct values when there is no categorical key).

    Integer-valued keys get whole-number bases, bands and tails (microaggregation and noise are
    rounded back to the original decimals by :func:`~sdc_dagster.numerics.decimals.rounded_to_original_decimals`).
    """
    columns = [c for c in spec.continuous_keys if c in data.columns]
    if not columns:
        return []
    methods = spec.search.methods
    n = len(data)
    rungs: list[ContinuousRung] = []
    values = {c: np.sort(pd.to_numeric(data[c], errors="coerce").dropna().to_numpy(float)) for c in columns}
    whole = {c: bool(len(v)) and bool(np.all(v == np.round(v))) for c, v in values.items()}
    if "microaggregation" in methods:
        if spec.categorical_keys:
            strata = {"strata": list(spec.categorical_keys)}
            rungs += [ContinuousRung("microaggregation", ({"method": "microaggregation", "columns": columns, "k": k,
                                                           **strata},),
                                     f"MDAV microaggregation, k={k}, within the released key combinations")
                      for k in MICROAGGREGATION_K if k <= n]
        sizes = sorted({k for k in GLOBAL_MICROAGGREGATION_K if k <= n // 2} | ({n // 2} if n // 2 >= 3 else set()))
        if not spec.categorical_keys:
            sizes = sorted(set(sizes) | {k for k in MICROAGGREGATION_K if k <= n})
        rungs += [ContinuousRung("microaggregation_all", ({"method": "microaggregation", "columns": columns, "k": k},),
                                 f"MDAV microaggregation, k={k}, across all records") for k in sizes]
    if "mv_top_coding" in methods and n <= MV_TOP_CODING_RECORDS and _multivariate_outliers(data, columns):
        rungs += [ContinuousRung("mv_top_coding",
                                 ({"method": "mv_top_coding", "columns": columns, "alpha": alpha},
                                  {"method": "microaggregation", "columns": columns, "k": 3}),
                                 f"multivariate top coding of the records beyond the {1 - alpha:.1%} chi-square "
                                 "quantile of their robust Mahalanobis distance, then MDAV microaggregation, k=3, "
                                 "across all records")
                  for alpha in MV_TOP_CODING_ALPHA]
    if "rank_swap" in methods:
        rungs += [ContinuousRung("rank_swap", ({"method": "rank_swap", "columns": columns, "p": p},),
                                 f"rank swapping within {p} % of the ranks") for p in RANK_SWAP_P]
    if "noise" in methods:
        rungs += [ContinuousRung("noise", ({"method": "noise", "columns": columns, "amount": a},),
                                 f"additive noise of {a:g} standard deviations") for a in NOISE_AMOUNTS]
    spread = {c: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for c, v in values.items()}
    varying = [c for c in columns if spread[c] > 0]
    if "rounding" in methods and varying:
        for share in ROUNDING_SD:
            bases = {c: _round_base(share * spread[c], whole[c]) for c in varying}
            rungs.append(ContinuousRung(
                "rounding", tuple({"method": "rounding", "columns": [c], "base": bases[c]} for c in varying),
                f"rounding to multiples of {share:g} standard deviations ("
                + ", ".join(f"{c} to {_label(bases[c])}" for c in varying) + ")"))
    if "top_coding" in methods and varying:
        for tail in CODED_TAILS:
            steps = []
            for c in varying:
                low = float(np.quantile(values[c], tail, method="higher"))
                high = float(np.quantile(values[c], 1 - tail, method="lower"))
                if low < high:
                    steps += [{"method": "bottom_coding", "variable": c, "value": low, "replacement": low},
                              {"method": "top_coding", "variable": c, "value": high, "replacement": high}]
            if steps:
                rungs.append(ContinuousRung("top_coding", tuple(steps),
                                            f"top and bottom coding of {tail:.0%} of the records at each end"))
    if "interval_recode" in methods and varying:
        for count in BAND_COUNTS:
            steps = []
            for c in varying:
                banded = _bands(values[c], count)
                if banded is not None:
                    steps.append({"method": "interval_recode", "variable": c, "breaks": banded[0],
                                  "labels": banded[1]})
            if steps:
                rungs.append(ContinuousRung("interval_recode", tuple(steps),
                                            f"banding into at most {count} equal-frequency bands, each released as "
                                            "its median"))
    if "remove_variables" in methods:
        ranked = sorted(columns, key=lambda c: (-data[c].nunique(), columns.index(c)))
        # a release keeps at least one key: without categorical keys, the last continuous one stays
        most = len(ranked) if spec.categorical_keys else len(ranked) - 1
        rungs += [ContinuousRung("remove_variables", ({"method": "remove_variables", "variables": ranked[:i]},),
                                 f"{', '.join(ranked[:i])} not released")
                  for i in range(1, most + 1)]
    return rungs
