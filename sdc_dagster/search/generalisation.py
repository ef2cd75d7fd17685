"""The globally optimal generalisation of categorical keys along their hierarchies, with record
suppression (SPEC §14; CONTRACT "Generalisation search").

Every transformation (a level per key, SPEC §14.1) generalises each key to its hierarchy's labels
at that level; records in equivalence classes smaller than k are suppressed whole (every key ``*``,
ARX's convention) and a transformation is eligible when at most floor(s·n) records are suppressed
(SPEC §14.2). :func:`optimal_generalisation` returns the eligible transformation of least
objective (SPEC §14.3's loss by default), proven optimal over the whole lattice by predictive
tagging and lower bounds (:mod:`sdc_dagster.search.flash`) on classes rolled up from integer
codes (:mod:`sdc_dagster.search.coding`).

References
----------
SPEC §14; Kohlmayer, F. et al. (2012), "Flash: efficient, stable and optimal k-anonymity",
*PASSAT/SocialCom 2012*, 708-717; Prasser, F. & Kohlmayer, F. (2015), "Putting statistical
disclosure control into practice: the ARX data anonymization tool", *Medical Data Privacy
Handbook*, Springer; Sweeney, L. (2002), "Achieving k-anonymity privacy protection using
generalization and suppression", *IJUFKS* 10(5), 571-588.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.keys import key_columns, pack_codes
from sdc_dagster.search.clock import OVERRUN, flash_check_charge
from sdc_dagster.search.coding import Classes, ClassCounter, KeyCoding, key_coding
from sdc_dagster.search.flash import Check, flash
from sdc_dagster.search.lattice import Lattice
from sdc_dagster.search.objectives import GeneralisationLoss, Transformation, objective_for
from sdc_dagster.spec.hierarchies import ARX_TOP, Hierarchy
from sdc_dagster.validation import check_scalar, weight_values


#: The largest lattice searched: its nodes' levels, tags and bounds are held in memory (about 40 bytes
#: a node with 9 keys).
MAX_NODES = 20_000_000


@dataclass(frozen=True)
class Generalisation:
    """The result of :func:`optimal_generalisation`.

    ``levels`` {key: level}; ``loss`` SPEC §14.3's L of the transformation (whatever the objective)
    and ``key_losses`` its l_j; ``suppressed`` the records suppressed; ``data`` the released frame;
    ``nodes_total`` the transformations of the lattice; ``nodes_checked`` those whose classes were
    counted; ``optimal`` True only when the result is proven optimal over the whole lattice;
    ``objective`` its name and ``value`` the result's value of it; ``bound`` a lower bound on the
    optimum (``value`` itself when optimal); ``seconds`` the search's time (the wall clock, reported
    only); ``clock_stopped`` whether the CPU clock's guard, not the checks' charges, ended a search
    under ``budget_seconds`` (:mod:`sdc_dagster.search.clock`: then not the same cut run to run)."""

    levels: dict[str, int]
    loss: float
    suppressed: int
    data: pd.DataFrame = field(repr=False)
    nodes_total: int
    nodes_checked: int
    optimal: bool
    objective: str
    value: float
    bound: float
    key_losses: dict[str, float]
    seconds: float
    clock_stopped: bool = False

    @property
    def summary(self) -> str:
        """"optimal over N transformations (n checked)" or "best of n checked of N, bound B"."""
        if self.optimal:
            return (f"optimal over {self.nodes_total:,} transformations ({self.nodes_checked:,} checked); "
                    f"{self.objective} {self.value:.6g}")
        return (f"best of {self.nodes_checked:,} checked of {self.nodes_total:,} transformations: "
                f"{self.objective} {self.value:.6g}, bound {self.bound:.6g}"
                + ("; stopped by the CPU clock's guard (its CPU seconds past "
                   f"{OVERRUN:g} times budget_seconds), not by the checks' charges" if self.clock_stopped else ""))


def _hierarchy(key: str, given) -> Hierarchy:
    if isinstance(given, Hierarchy):
        return given
    if not isinstance(given, pd.DataFrame):
        raise SDCInputError(f"hierarchy of {key!r}: expected a DataFrame in ARX's layout (column 0 the value, "
                            f"column h its generalisation at level h), got {type(given).__name__}")
    return Hierarchy.from_arx(given, source=f"hierarchy of {key!r}")


def suppression_limit(share: float, n: int) -> int:
    """floor(s·n) records (SPEC §14.2), with s read as the decimal it is written as (5 % of 30,162
    is 1,508; 0.29 of 100 is 29, not the 28 binary floating point would give)."""
    return int(Fraction(str(share)) * n // 1)


def released_data(data: pd.DataFrame, keys: list[KeyCoding], levels: tuple[int, ...], k: int) -> pd.DataFrame:
    """``data`` with each key replaced by its label at its level (level 0: unchanged) and the keys of
    records in classes smaller than k set to ``*`` (SPEC §14.2, ARX's suppression)."""
    generalised = np.column_stack([key.level_codes[h][key.codes] for key, h in zip(keys, levels)])
    radices = np.array([key.groups(h) for key, h in zip(keys, levels)], dtype=np.int64)
    classes, _ = pd.factorize(pack_codes([generalised], radices)[0])
    small = np.bincount(classes)[classes] < k
    out = data.copy()
    for j, (key, h) in enumerate(zip(keys, levels)):
        if h == 0 and not small.any():
            continue
        column = key.labels[h][generalised[:, j]] if h else out[key.name].to_numpy(dtype=object)
        column = np.where(small, ARX_TOP, column)
        out[key.name] = pd.Series(column, index=out.index, dtype=object)
    return out


def optimal_generalisation(data: pd.DataFrame, hierarchies: Mapping, *, k: int, max_suppressed_records: float = 0.0,
                           objective: str | Callable[[Transformation], float] = "loss", weight: str | None = None,
                           budget_seconds: float | None = None,
                           progress: Callable[[int, int, str], None] | None = None) -> Generalisation:
    """The eligible transformation of least ``objective`` over the whole generalisation lattice
    (SPEC §14; ARX's Flash).

    Parameters
    ----------
    data : the records; the keys are the columns ``hierarchies`` names.
    hierarchies : {key column: DataFrame in ARX's layout (SPEC §14.1: column 0 the value, column h
        its generalisation at level h, the last column the top)}, or a
        :class:`~sdc_dagster.spec.hierarchies.Hierarchy`; values compared as strings.
    k : the k of k-anonymity.
    max_suppressed_records : s, the share of records that may be suppressed whole: a transformation
        is eligible when its classes smaller than k hold at most floor(s·n) records (SPEC §14.2).
    objective : ``"loss"`` (SPEC §14.3), ``"discernibility"`` (Bayardo & Agrawal 2005),
        ``"suppressed"`` (records suppressed) or a function of a
        :class:`~sdc_dagster.search.objectives.Transformation` returning a number to minimise
        (every eligible node is counted, unless the function carries ``lower_bound``, a vectorised
        lower bound per level vector: :mod:`sdc_dagster.search.objectives`).
    weight : a column of sampling weights: the loss counts each record by its weight (n their sum);
        k-anonymity and the suppression limit count records (SPEC §3.1). Only with ``"loss"`` or a
        callable objective.
    budget_seconds : stop the search after this many seconds with the best found (``optimal``
        False, ``bound`` a lower bound on the optimum); None: search until proven. The seconds are
        charged, not read from a clock: each transformation checked costs
        :func:`~sdc_dagster.search.clock.flash_check_charge` of the records' distinct key
        combinations and the keys (measured once on the reference machine), so a budget cuts the
        search at the same transformation run to run; the CPU clock stops it only past
        :data:`~sdc_dagster.search.clock.OVERRUN` times the budget (``clock_stopped``).
    progress : called with (transformations settled, transformations in all, a note naming the
        nodes checked and the best so far) about once a second and at the end (the plan search's
        ``Progress``).

    Returns
    -------
    :class:`Generalisation`. Ties between transformations of equal value go to the lowest level
    vector in lexicographic order (keys in the order of ``hierarchies``), so the result is the same
    run to run.

    Raises
    ------
    SDCInputError : fewer records than k ("k-anonymity with k = K is impossible with N records"),
        a key not in the data, a value of the data its hierarchy does not list (naming the column
        and the value), a missing key value, a bad hierarchy, k or s out of range, an unknown
        objective. NotComputable (an SDCInputError) for a lattice of more than :data:`MAX_NODES`.
    """
    start = time.perf_counter()
    if not isinstance(data, pd.DataFrame):
        raise SDCInputError(f"data: expected a DataFrame, got {type(data).__name__}")
    if not isinstance(hierarchies, Mapping) or not hierarchies:
        raise SDCInputError("hierarchies: expected a mapping {key column: hierarchy}, at least one key")
    names = key_columns(data, list(hierarchies))
    k = check_scalar(k, "k", integer=True, low=1)
    share = check_scalar(max_suppressed_records, "max_suppressed_records", low=0, high=1)
    if budget_seconds is not None:
        budget_seconds = check_scalar(budget_seconds, "budget_seconds", low=0, closed="neither")
    n = len(data)
    if n < k:
        raise SDCInputError(f"k-anonymity with k = {k} is impossible with {n} records")
    weights = weight_values(data, weight)
    keys = [key_coding(data[name], _hierarchy(name, hierarchies[name]), name) for name in names]
    masses = [np.bincount(key.codes, weights=weights, minlength=len(key.level_codes[0])).astype(float) for key in keys]
    loss = GeneralisationLoss(keys, masses)
    chosen = objective_for(objective, loss, keys, n, k, weights is not None)
    nodes = int(np.prod([float(key.height + 1) for key in keys]))
    if nodes > MAX_NODES:
        raise NotComputable(f"the generalisation lattice of {', '.join(names)} has {nodes:,} transformations, more than "
                            f"the {MAX_NODES:,} the search holds in memory; give fewer keys or shorter hierarchies")
    counter = ClassCounter(keys, weights)
    lattice = Lattice([key.height for key in keys])
    limit = suppression_limit(share, n)

    def transformation(levels: np.ndarray, classes: Classes) -> tuple[Transformation, np.ndarray]:
        small = classes.counts < k
        total, key_losses = loss.of(levels, classes, small)
        return Transformation({name: int(h) for name, h in zip(names, levels)}, classes.counts, classes.mass,
                              int(classes.counts[small].sum()), total, dict(zip(names, key_losses.tolist()))), small

    def check(node: int) -> Check:
        levels = lattice.levels[node].astype(np.int64)
        classes = counter.classes(levels)
        small = classes.counts < k
        suppressed = int(classes.counts[small].sum())
        bound = chosen.counted_bound(classes) if chosen.counted_bounds else -np.inf
        if suppressed > limit:
            return Check(False, suppressed, None, bound)
        found, small = transformation(levels, classes)
        return Check(True, suppressed, chosen.value(found, classes, small), bound)

    def report(done: int, total: int, checked: int, best: float) -> None:
        found = f"best {chosen.name} so far {best:.6g}" if np.isfinite(best) else "none meeting the criteria yet"
        progress(done, total, f"{checked:,} transformations checked; {found}")

    outcome = flash(lattice, check, chosen.prior_bounds(lattice),
                    unsuppressed_value=chosen.unsuppressed_value, counted_bounds=chosen.counted_bounds,
                    budget_seconds=budget_seconds, check_seconds=flash_check_charge(len(counter.base.counts), len(keys)),
                    progress=report if progress else None)
    levels = lattice.levels[outcome.node].astype(np.int64)
    found, _ = transformation(levels, counter.classes(levels))
    return Generalisation(
        levels=found.levels, loss=found.loss, suppressed=found.suppressed,
        data=released_data(data, keys, tuple(levels.tolist()), k), nodes_total=lattice.size,
        nodes_checked=outcome.checked, optimal=outcome.optimal, objective=chosen.name, value=outcome.value,
        bound=outcome.bound, key_losses=found.key_losses, seconds=time.perf_counter() - start,
        clock_stopped=outcome.overrun)
