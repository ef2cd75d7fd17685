"""The plan search's lattice on the keys' integer codes (:func:`sdc_dagster.search.wave.search_wave`).

:class:`CodedLattice`: per key and generalisation level the recoded values and their codes, coded
once per search, and a node's key digits and frequencies (SPEC §2.4); :class:`RolledCounts`: every
node's equivalence classes rolled up from the records counted once (ARX's roll-up on integer
codes); the nodes (:func:`lattice_nodes`, cut to :data:`MAX_NODES` by :func:`cut_space`), their
recode-only loss per key and level (:func:`level_bounds`, SPEC §9.1 measure (1)) and the records
below l-diversity (:func:`records_below_l`, SPEC §3.6).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

import numpy as np
import pandas as pd

from sdc_dagster.risk.frequencies import digit_key_frequencies
from sdc_dagster.keys import category_codes, renumbered_digits
from sdc_dagster.search.coding import ClassCounter, KeyCoding
from sdc_dagster.search.space import KeyHierarchy
from sdc_dagster.protect.suppression import codes_below_l
from sdc_dagster.risk.categorical import risk_from_frequencies
from sdc_dagster.spec import SurveySpec
from sdc_dagster.pipeline.evaluation import headline_loss
from sdc_dagster.pipeline.variant import released_keys, two_values
from sdc_dagster.validation import weight_values


#: The lattice is cut (deepest levels first) to at most this many nodes.
MAX_NODES = 200_000

#: A node's global risk from its classes is compared with the target with this relative margin: the
#: node is settled above the target without evaluation only when it is clearly above it (the sums of
#: the evaluation may round differently).
RISK_MARGIN = 1e-9


class CodedLattice:
    """The recoded key values of every level and their codes, and the frequency checks of nodes
    (module docstring).

    Per key and level: ``values`` (one value per record, as the level's recode releases it) and
    ``codes`` (their :func:`~sdc_dagster.keys.category_codes` and radix), coded once per search;
    a node's key digits are its levels' codes side by side, exactly what
    :func:`~sdc_dagster.keys.key_digits` gives for the recoded keys."""

    def __init__(self, data: pd.DataFrame, spec: SurveySpec, space: dict[str, KeyHierarchy]):
        self.keys = list(space)
        self.weight = spec.weight if spec.weight in data.columns else None
        self.weights = weight_values(data, self.weight)
        self.index = data.index
        self.values = {}  # key -> [values of level 0, level 1, ...] (arrays, one per record)
        self.codes = {}  # key -> [(codes, radix) of level 0, level 1, ...]
        for key, hierarchy in space.items():
            codes, categories = category_codes(data[key])
            numeric = pd.api.types.is_numeric_dtype(data[key])
            arrays, coded = [], []
            for level in hierarchy.levels:
                mapping = {c: min(g) for g in level.groups for c in g}
                lookup = np.array([np.nan if numeric else None] + [mapping.get(c, c) for c in categories],
                                  dtype=float if numeric else object)
                arrays.append(lookup[codes])
                # category_codes of the recoded values, from the few recoded categories: equal values
                # share a code, numbered by first appearance in the records
                merged, _ = category_codes(pd.Series(lookup))
                level_codes, radix = renumbered_digits(merged[codes][:, None])
                coded.append((level_codes[:, 0], int(radix[0])))
            self.values[key] = arrays
            self.codes[key] = coded
        # the keys with at least two observed categories (a key released as one category loses them),
        # and the spec's keys in the wave (categorical and continuous: the share of keys not released)
        self.varied = [two_values(data[key]) for key in self.keys]
        self.key_count = len(released_keys(spec, data).quasi_identifiers)
        # the sensitive variables' codes (from 0, -1 missing), when the spec asks l-diversity
        sensitive = [v for v in spec.names("sensitive") if v in data.columns] if spec.risk.l is not None else []
        self.sensitive = {v: category_codes(data[v])[0] - 1 for v in sensitive} if self.keys else {}

    def digits(self, node: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The node's key digits and radices (:func:`~sdc_dagster.keys.key_digits` of its keys)."""
        digits = np.empty((len(self.index), len(self.keys)), dtype=np.int64, order="F")
        radices = np.empty(len(self.keys), dtype=np.int64)
        for j, (key, level) in enumerate(zip(self.keys, node)):
            digits[:, j], radices[j] = self.codes[key][level]
        return digits, radices

    def not_released(self, digits: np.ndarray) -> list[str]:
        """The keys whose ``digits`` (a node's, after any suppression) release them as one category:
        at least two observed categories in the wave, at most one nonzero code left (what
        :func:`~sdc_dagster.pipeline.variant.keys_lost` finds in the released frame)."""
        out = []
        for j, key in enumerate(self.keys):
            observed = digits[:, j][digits[:, j] > 0]
            if self.varied[j] and not (observed.size and (observed != observed[0]).any()):
                out.append(key)
        return out

    def not_released_share(self, digits: np.ndarray) -> float:
        """The share of the spec's keys (categorical and continuous) that :meth:`not_released` finds,
        bounded by ``limits.max_keys_not_released``; 0 without keys."""
        return len(self.not_released(digits)) / self.key_count if self.key_count else 0.0

    def frequencies(self, digits: np.ndarray, radices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per record (f, F) of keys with these digits, SPEC §2.4 (what ``risk.key_frequencies``
        gives for the keys they code, with the wave's weights)."""
        return digit_key_frequencies(digits, radices, weights=self.weights)

    def released(self, node: tuple[int, ...], digits: np.ndarray) -> dict[str, np.ndarray]:
        """Per key, the node's values with those whose digit is 0 (missing or suppressed) missing:
        what :func:`~sdc_dagster.protect.suppression.apply_suppression` leaves of the recoded keys."""
        out = {}
        for j, (key, level) in enumerate(zip(self.keys, node)):
            values = self.values[key][level]
            suppressed = (digits[:, j] == 0) & (self.codes[key][level][0] > 0)
            if suppressed.any():
                values = values.copy()
                values[suppressed] = np.nan
            out[key] = values
        return out

    def frame(self, node: tuple[int, ...], digits: np.ndarray) -> pd.DataFrame:
        """The node's recoded keys with the suppression of ``digits`` (:meth:`released`) and the
        weight, as a frame."""
        frame = pd.DataFrame(self.released(node, digits), index=self.index)
        if self.weight:
            frame[self.weight] = self.weights
        return frame


class RolledCounts:
    """The equivalence classes of every node, rolled up from the records counted once
    (:class:`~sdc_dagster.search.coding.ClassCounter`, ARX's roll-up on integer codes) instead of a
    count of the records per node.

    The key codes are those of :class:`CodedLattice` (level h of a key as its codes 1..G_h, level 0 the
    categories): each level's codes are a function of the categories' codes, so every node's classes
    are the categories' combinations with each key mapped to its level. A node is rolled up from a
    counted specialisation only when every key's levels nest (each level a merge of the groups of
    every finer one, as a hierarchy is); else from the categories' combinations.

    Only for a wave whose keys have no missing value (:meth:`of`): then a record's frequency
    with missing values matching any value (SPEC §2.4) is its class's count, and the counts are
    exact; with missing values the search keeps its per-node compatible counts."""

    def __init__(self, lattice: CodedLattice):
        coded = []
        nested = True
        for key in lattice.keys:
            base = lattice.codes[key][0][0]
            levels, sizes = [], []
            for codes, radix in lattice.codes[key]:
                mapping = np.zeros(lattice.codes[key][0][1], dtype=np.int64)
                mapping[base] = codes - 1
                levels.append(mapping[1:])
                sizes.append(np.ones(radix - 1, dtype=np.int64))
            for finer in range(len(levels)):
                for coarser in range(finer + 1, len(levels)):
                    # nested: equal codes at the finer level have equal codes at the coarser one
                    pairs = np.unique(np.column_stack([levels[finer], levels[coarser]]), axis=0)
                    nested = nested and len(pairs) == len(np.unique(levels[finer]))
            coded.append(KeyCoding(key, base - 1, tuple(levels), tuple(sizes),
                                   tuple(np.arange(len(s)).astype(object) for s in sizes), len(sizes[0])))
        self.n = len(lattice.index)
        self.weighted = lattice.weights is not None
        self.counter = ClassCounter(coded, lattice.weights, cache_cells=10_000_000 if nested else 0)

    @classmethod
    def of(cls, lattice: CodedLattice) -> RolledCounts | None:
        """The rolled-up counts of the lattice's nodes; None when a key has a missing value (or
        there is no key): the per-node compatible counts are kept then."""
        if not lattice.keys or not all((lattice.codes[key][0][0] > 0).all() for key in lattice.keys):
            return None
        return cls(lattice)

    def classes(self, node: tuple[int, ...]):
        """The node's :class:`~sdc_dagster.search.coding.Classes` (counts, summed weights)."""
        return self.counter.classes(np.asarray(node, dtype=np.int64))

    def global_risk(self, classes) -> float:
        """SPEC §3.3's global risk of the node's records as its classes release them (no value
        suppressed): the mean individual risk (SPEC §3.2: 1/f without weights, the approximation on
        (f, F) with them) over the records, each class counting its records."""
        risks = risk_from_frequencies(classes.counts, classes.mass, weighted=self.weighted)
        return float(np.sum(risks * classes.counts) / self.n)


def level_bounds(data: pd.DataFrame, spec: SurveySpec, lattice: CodedLattice) -> list[np.ndarray]:
    """Per key and level, the recode-only loss of that key alone (headline_loss's lambda_arctan,
    SPEC §9.1 eq (1)); the loss of recodes of several keys is their sum (measure (1) is a mean of
    per-value partial distances over the values compared, which recoding does not change).

    Level 0 releases the key as it is: its figure is that of the wave itself, for every key. A
    deeper level changes that key only, so the partial distances of the other columns are not
    computed (``unchanged``). A level that releases the key as one category (its top) counts each
    of its observed values as lost (d = 1, :func:`~sdc_dagster.pipeline.variant.keys_lost`),
    as headline_loss does for the released plan.

    Why the walk's pruning stays sound with that rule. The walk needs two properties, not the
    monotonicity of the loss along the lattice (Flash's traversal never assumes it, and a level's
    loss need not grow with the level for a chain that is not nested):

    * *additivity*: measure (1) divides by C + R, the values compared plus the values of the keys
      not released, which is the count of observed values of the original's keys whatever the node
      (a key not released moves its values from C to R), so a node's recode-only loss is the sum of
      its keys' figures;
    * *suppression only raises it* (the recode-only loss is a lower bound of the node's loss with
      suppression and continuous steps): a suppressed value has d = 1 >= its partial distance
      before; a key that suppression leaves with one category, or none, moves all its values to
      d = 1; a key already released as one category stays so.

    Within a nested chain the figure is moreover monotone (a record keeps its value only while it
    is the smallest member of its group, and groups only grow; the top, d = 1 on every value, is
    the largest figure a level can have, d <= 1): tested in tests/test_search.py."""
    unchanged_wave = headline_loss(data, data, spec, topsis=False).get("lambda_arctan", np.nan)
    bounds = []
    for key in lattice.keys:
        figures = [unchanged_wave]
        others = [c for c in data.columns if c != key]
        for values in lattice.values[key][1:]:
            protected = data.copy(deep=False)
            protected[key] = values if values.dtype == object else pd.Series(values, index=data.index).astype(
                data[key].dtype if not data[key].isna().any() else float)
            figures.append(headline_loss(data, protected, spec, unchanged=others, topsis=False).get("lambda_arctan",
                                                                                                     np.nan))
        bounds.append(np.asarray(figures) - figures[0])
    return bounds


def lattice_nodes(space: dict[str, KeyHierarchy]) -> np.ndarray:
    counts = [len(h.levels) for h in space.values()]
    if not counts:
        return np.zeros((1, 0), dtype=int)
    return np.array(list(product(*[range(c) for c in counts])), dtype=int).reshape(-1, len(counts))


def cut_space(space: dict[str, KeyHierarchy]) -> dict[str, KeyHierarchy]:
    """The space with the deepest levels of the keys with most levels dropped until the lattice has at
    most :data:`MAX_NODES` nodes; a key's top (one group, :func:`~sdc_dagster.search.space.withheld_level`)
    is kept while a level below it can go."""
    space = dict(space)
    while np.prod([len(h.levels) for h in space.values()], dtype=float) > MAX_NODES:
        key = max(space, key=lambda k: len(space[k].levels))
        levels = space[key].levels
        top = levels[-1:] if len(levels) > 2 and len(levels[-1].groups) == 1 else ()
        space[key] = replace(space[key], levels=(*levels[:len(levels) - 1 - len(top)], *top))
    return space


def records_below_l(lattice: CodedLattice, digits: np.ndarray, radices: np.ndarray, spec: SurveySpec) -> int:
    """Records whose key group (the records their keys coded by ``digits`` match, a suppressed value
    matching any value, as :func:`~sdc_dagster.risk.l_diversity` and k-anonymity count them) holds fewer than ``risk.l`` distinct
    values of a sensitive variable, or an entropy below log(l) when ``risk.l_diversity`` is
    "entropy" (SPEC §3.6, :func:`~sdc_dagster.protect.suppression.codes_below_l`; exp(entropy) never
    exceeds the distinct count, so the entropy rule implies the distinct one): the blocking
    l-diversity of the release checks. 0 when the spec asks none."""
    if not lattice.sensitive:
        return 0
    return int(codes_below_l(digits, radices, list(lattice.sensitive.values()), l=spec.risk.l,
                             entropy=spec.risk.l_diversity == "entropy").sum())
