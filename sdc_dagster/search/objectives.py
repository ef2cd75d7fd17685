"""What the generalisation search minimises, and the lower bounds that let it skip nodes.

Every objective gives, for a transformation whose classes are counted, its ``value``; and two
lower bounds the search prunes with (a node is skipped when a bound already reaches the best value
found): ``prior_bounds``, a bound of each node's own value computed without counting any class
(the search visits the nodes in its order and stops at the first whose bound reaches the best),
and ``counted_bound``, a bound a counted node gives the value of every one of its generalisations
(so one count can prune a whole cone). The built-in prior bounds are monotone along the lattice as
well, so a path upward through low bounds stays among the nodes that matter.

* ``"loss"``: SPEC §14.3's generalisation loss (ARX's default "Loss" metric). With record
  suppression the loss is not monotone (a generalisation may suppress fewer records, and a
  suppressed record costs s_r = 1): its bound is the loss of the same levels with no record
  suppressed, l_j⁰ = (Σ_r s_r⁰ - n/|D_j|) / (n - n/|D_j|) with every record at its generalised
  value. Suppression only raises s_r, so the loss is at least this bound; group sizes only grow up
  the hierarchy, so the bound is monotone. When no record is suppressed the loss equals it.
* ``"discernibility"``: Bayardo & Agrawal's discernibility metric C_DM = Σ_{|E| >= k} |E|² +
  Σ_{|E| < k} n·|E| (a suppressed class costs n per record; ARX's "Discernibility"). A record
  costs |E| or n, and in a generalisation its class only grows: in an eligible generalisation
  of a counted node it costs at least max(|E|, k) (its class there is at least as large, and at
  least k unless suppressed, when it costs n >= k), so Σ_E |E|·max(|E|, k) over the counted
  node's classes bounds every generalisation; with no counts, Σ|E|² >= n² / (number of classes)
  (Cauchy-Schwarz) with at most min(Π G_j, n) classes.
* ``"suppressed"``: the records suppressed (it only falls up the lattice: no bound but 0).
* a callable ``f(transformation) -> float`` of a :class:`Transformation`: every eligible node is
  evaluated, unless the callable carries ``f.lower_bound(levels) -> array``: for each row of the
  (N, m) array of level vectors (keys in order) a lower bound of f at that node (the caller's
  promise, e.g. a loss of the recoding alone that suppression only raises), which orders the visit
  and prunes as the prior bounds above do.

References
----------
SPEC §14.3; ARX Data Anonymization Tool 3.9, ``Metric.createLossMetric()`` and
``Metric.createDiscernabilityMetric()``. Bayardo, R. J. & Agrawal, R. (2005), "Data privacy through
optimal k-anonymization", *ICDE 2005*, 217-228 (the discernibility metric). Iyengar, V. S. (2002),
"Transforming data to satisfy privacy constraints", *KDD 2002*, 279-288 (the loss metric).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sdc_dagster.errors import SDCInputError
from sdc_dagster.search.coding import Classes, KeyCoding
from sdc_dagster.search.lattice import Lattice

OBJECTIVES = ("loss", "discernibility", "suppressed")


@dataclass(frozen=True)
class Transformation:
    """A counted transformation, what a callable objective receives: ``levels`` {key: level};
    ``class_sizes`` the records of each equivalence class (suppressed classes included) and
    ``class_weights`` their summed weights (the sizes without weights); ``suppressed`` the records
    in classes smaller than k; ``loss`` SPEC §14.3's L and ``key_losses`` its l_j."""

    levels: dict[str, int]
    class_sizes: np.ndarray
    class_weights: np.ndarray
    suppressed: int
    loss: float
    key_losses: dict[str, float]


class GeneralisationLoss:
    """SPEC §14.3 on the coded keys: s_r the share of the hierarchy's rows in record r's group (1 when
    suppressed), l_j = (Σ_r s_r - n/|D_j|) / (n - n/|D_j|), L = Π_j (1 + l_j)^(1/m) - 1; with weights
    each record counts its weight and n is their sum.

    Sums are taken as exactly rounded sums (:func:`math.fsum`), so a node's loss does not depend on
    the order its classes were counted in (the same value run to run, whatever was counted before)."""

    def __init__(self, keys: list[KeyCoding], masses: list[np.ndarray]):
        self.keys = keys
        self.total = math.fsum(masses[0]) if masses else 0.0
        # D_j Σ_r s_r with no record suppressed, per key and level: Σ_v mass_v · size(group of v)
        self.unsuppressed = [np.array([math.fsum(mass * key.sizes[h][key.level_codes[h]]) for h in range(key.height + 1)])
                             for key, mass in zip(keys, masses)]

    def key_losses(self, levels, extra) -> np.ndarray:
        """l_j of every key (``levels`` and ``extra`` broadcast: one row per node), ``extra`` the
        D_j Σ_r (1 - s_r⁰) that suppression adds."""
        out = []
        for j, key in enumerate(self.keys):
            scale = self.total * key.domain - self.total
            numerator = self.unsuppressed[j][levels[..., j]] + extra[..., j] - self.total
            out.append(numerator / scale if scale > 0 else numerator * 0.0)
        return np.stack(out, axis=-1)

    @staticmethod
    def aggregate(losses: np.ndarray) -> np.ndarray:
        """L = Π_j (1 + l_j)^(1/m) - 1, the keys multiplied in their order (one rounding path for
        every node, so that a loss and its bound compare exactly)."""
        m = losses.shape[-1]
        product = np.ones(losses.shape[:-1])
        for j in range(m):
            product = product * (1.0 + losses[..., j])
        return product ** (1.0 / m) - 1.0

    def unsuppressed_losses(self, levels: np.ndarray) -> np.ndarray:
        """L of each row of ``levels`` with no record suppressed (the bound, module docstring)."""
        return self.aggregate(self.key_losses(levels, np.zeros(levels.shape, dtype=float)))

    def suppressed_extra(self, levels: np.ndarray, classes: Classes, small: np.ndarray) -> np.ndarray:
        """D_j Σ_{suppressed r} (1 - s_r⁰) per key: a suppressed record's s_r rises to 1."""
        mass = classes.mass[small]
        return np.array([math.fsum(mass * (key.domain - key.sizes[h][classes.codes[small, j]]))
                         for j, (key, h) in enumerate(zip(self.keys, levels))])

    def of(self, levels: np.ndarray, classes: Classes, small: np.ndarray) -> tuple[float, np.ndarray]:
        """(L, l_j) of a counted transformation with its classes ``small`` suppressed."""
        losses = self.key_losses(levels[None, :], self.suppressed_extra(levels, classes, small)[None, :])
        return float(self.aggregate(losses)[0]), losses[0]


class Objective:
    """A named objective (module docstring): its value on counted classes and its two bounds."""

    name = "objective"
    #: whether counted nodes give their generalisations a bound beyond the prior one
    counted_bounds = False

    def __init__(self, loss: GeneralisationLoss, keys: list[KeyCoding], n: int, k: int):
        self.loss, self.keys, self.n, self.k = loss, keys, n, k

    def prior_bounds(self, lattice: Lattice) -> np.ndarray:
        return np.full(lattice.size, -np.inf)

    def unsuppressed_value(self, prior_bound: float) -> float | None:
        """The value of an eligible node known to suppress no record, without counting; None when
        it needs the counts."""
        return None

    def counted_bound(self, classes: Classes) -> float:
        return -np.inf

    def value(self, transformation: Transformation, classes: Classes, small: np.ndarray) -> float:
        raise NotImplementedError


class LossObjective(Objective):
    name = "loss"

    def prior_bounds(self, lattice):
        return self.loss.unsuppressed_losses(lattice.levels.astype(np.int64))

    def unsuppressed_value(self, prior_bound):
        return prior_bound

    def value(self, transformation, classes, small):
        return transformation.loss


class DiscernibilityObjective(Objective):
    name = "discernibility"
    counted_bounds = True

    def prior_bounds(self, lattice):
        groups = np.ones(lattice.size)
        for j, key in enumerate(self.keys):
            groups = groups * np.array([key.groups(h) for h in range(key.height + 1)], dtype=float)[lattice.levels[:, j]]
        # n² / classes, nudged down one part in 10¹² so that rounding never lifts it above Σ|E|²
        return float(self.n) ** 2 / np.minimum(groups, self.n) * (1 - 1e-12)

    def counted_bound(self, classes):
        counts = classes.counts
        return float(np.sum(counts * np.maximum(counts, self.k)))

    def value(self, transformation, classes, small):
        counts = classes.counts
        return float(np.sum(counts[~small] * counts[~small]) + self.n * np.sum(counts[small]))


class SuppressedObjective(Objective):
    name = "suppressed"

    def prior_bounds(self, lattice):
        return np.zeros(lattice.size)

    def unsuppressed_value(self, prior_bound):
        return 0.0

    def value(self, transformation, classes, small):
        return float(transformation.suppressed)


class CallableObjective(Objective):
    name = "callable"

    def __init__(self, function: Callable[[Transformation], float], *args):
        super().__init__(*args)
        self.function = function
        self.name = getattr(function, "__name__", "callable")

    def prior_bounds(self, lattice):
        bound = getattr(self.function, "lower_bound", None)
        if bound is None:
            return super().prior_bounds(lattice)
        bounds = np.asarray(bound(lattice.levels.astype(np.int64)), dtype=float)
        if bounds.shape != (lattice.size,) or np.isnan(bounds).any():
            raise SDCInputError(f"objective {self.name!r}: lower_bound must return one number per row of levels "
                                f"({lattice.size:,}), got shape {bounds.shape}")
        return bounds

    def value(self, transformation, classes, small):
        value = self.function(transformation)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise SDCInputError(f"objective {self.name!r} returned {value!r}; it must return a number") from None
        if math.isnan(value):
            raise SDCInputError(f"objective {self.name!r} returned NaN for levels {transformation.levels}; "
                                "it must return a number to compare")
        return value


def objective_for(objective, loss: GeneralisationLoss, keys: list[KeyCoding], n: int, k: int,
                  weighted: bool) -> Objective:
    """The :class:`Objective` named by ``objective`` (one of :data:`OBJECTIVES`) or wrapping a callable."""
    if callable(objective):
        return CallableObjective(objective, loss, keys, n, k)
    if objective not in OBJECTIVES:
        raise SDCInputError(f"objective {objective!r} is not known; expected one of {', '.join(OBJECTIVES)} "
                            "or a function of a search.Transformation")
    if weighted and objective != "loss":
        raise SDCInputError(f"objective {objective!r} counts sample records; weight= applies to the objective "
                            "'loss' (SPEC §14.3 over the weighted records)")
    cls = {"loss": LossObjective, "discernibility": DiscernibilityObjective, "suppressed": SuppressedObjective}[objective]
    return cls(loss, keys, n, k)
