"""Information loss after targeted record swapping, sdcMicro's ``infoLoss``: the frequency tables of
the original and the swapped microdata compared cell by cell.

For the table variables v_1..v_p, every non-empty subset S of them (only the full set with
``only_inner_cells``) gives a frequency table; its cells are the value combinations of S observed
in either file, with x = the count in the original file and y = the count in the swapped file (0
where a file has no record of the cell). Per cell, the metrics of sdcMicro (R/infoLoss.R):

* ``absD``     = |x - y|
* ``relabsD``  = |x - y| / x, set to 0 where x = 0 (sdcMicro turns the infinite value into 0)
* ``abssqrtD`` = |sqrt(x) - sqrt(y)|

and the summaries sdcMicro returns: ``overview`` (the number and share of cells per "noise"
x - y), ``measures`` (per metric the quantiles ``probs`` of R's default type 7 and the mean, the
mean placed after the last quantile below 0.5), ``cumdistr`` (per metric the cumulative number and
share of cells: over the intervals of ``quantvals`` for the metrics in ``apply_quantvals``, labelled
as sdcMicro rewrites R's ``cut`` labels, "[0,0.02]", "[0,0.05]", ...; over the distinct values
otherwise), ``false_zero`` (cells x > 0, y = 0) and ``false_nonzero`` (x = 0, y > 0). With ``hid``
the tables count households: the first record of each household in each file. ``exclude_zeros``
leaves out the cells with y = 0.

The counts come from one GROUPING SETS query per file in DuckDB
(:func:`sdc_dagster.risk.frequencies.grouping_sets_counts`). A missing value in a table variable is a
value of its own. Deviation: sdcMicro merges the two files' cells on the variables' values alone,
so a margin cell (the variables outside S are NA there) and an inner cell whose values are missing
in those variables fall together; here cells are matched within their subset S.

References
----------
sdcMicro ``infoLoss`` (R/infoLoss.R, Gussenbauer); Hundepool et al. (2012) §5 (information loss
in frequency tables: absolute, relative and square-root deviations of cell counts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.frequencies import grouping_sets_counts
from sdc_dagster.validation import check_flag

SWAP_LOSS_METRICS = ("absD", "relabsD", "abssqrtD")
#: sdcMicro's defaults of ``probs``, ``quantvals`` and ``apply_quantvals``.
DEFAULT_PROBS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
DEFAULT_QUANTVALS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, np.inf)
DEFAULT_APPLY_QUANTVALS = ("relabsD", "abssqrtD")


def _abs_d(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(x - y)


def _rel_abs_d(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(x - y) / x
    return np.where(np.isinf(ratio), 0.0, ratio)


def _abs_sqrt_d(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(np.sqrt(x) - np.sqrt(y))


_METRICS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "absD": _abs_d, "relabsD": _rel_abs_d, "abssqrtD": _abs_sqrt_d,
}


@dataclass(frozen=True)
class SwapInformationLoss:
    """Result of :func:`swap_information_loss` (sdcMicro ``infoLoss``'s list).

    ``cells``: one row per table cell: the table variables (NA where a variable is not in the cell's
    subset: a margin), ``subset`` (index of the subset, in the order of R's ``combn`` by size),
    ``count_o``, ``count_s``. ``overview``: ``noise`` (count_o - count_s), ``cnt``, ``pct``.
    ``measures``: indexed by ``what`` ("Min", "10%", ..., "Mean", "Median", ..., "Max"), a column per
    metric (sorted by name, as sdcMicro's ``dcast``). ``cumdistr``: {metric: frame ``cat``, ``cnt``,
    ``pct``}. ``false_zero``, ``false_nonzero``: numbers of cells. ``exclude_zeros``: as given.
    """

    cells: pd.DataFrame
    overview: pd.DataFrame
    measures: pd.DataFrame
    cumdistr: dict[str, pd.DataFrame]
    false_zero: int
    false_nonzero: int
    exclude_zeros: bool


def _quantile_name(p: float) -> str:
    """R's name of a quantile (``quantile(names = TRUE)``), sdcMicro's Min / Median / Max."""
    if p == 0:
        return "Min"
    if p == 0.5:
        return "Median"
    if p == 1:
        return "Max"
    return f"{100 * p:.7g}%"


def _r_break_labels(breaks: np.ndarray) -> list[str]:
    """R's ``formatC(breaks, digits = d, width = 1)`` as ``cut`` labels them: d = 3 significant
    digits, more while two adjacent labels would be equal."""
    for digits in range(3, 13):
        labels = ["Inf" if b == np.inf else "-Inf" if b == -np.inf else f"{b:.{digits}g}" for b in breaks]
        if all(a != b for a, b in zip(labels[:-1], labels[1:])):
            return labels
    return labels


def _cumulative(values: np.ndarray, quantvals: np.ndarray | None) -> pd.DataFrame:
    """sdcMicro's ``cumdistr``: cumulative counts over the ``quantvals`` intervals (``cut(...,
    include.lowest = TRUE)``; labels "[q0,q1]", "[q0,q2]", ...) or over the sorted distinct values."""
    if quantvals is None:
        distinct, counts = np.unique(values, return_counts=True)
        labels = [f"{v:.15g}" for v in distinct]
    else:
        interval = np.searchsorted(quantvals, values, side="left")  # (q_{i-1}, q_i] -> i
        interval = np.where(values == quantvals[0], 1, interval)  # include.lowest: q_0 in the first
        inside = (interval >= 1) & (interval < len(quantvals))
        counts = np.bincount(interval[inside] - 1, minlength=len(quantvals) - 1)
        text = _r_break_labels(quantvals)
        labels = [f"[{text[0]},{upper}]" for upper in text[1:]]
    cumulative = np.cumsum(counts)
    return pd.DataFrame({"cat": labels, "cnt": cumulative,
                         "pct": cumulative / len(values) if len(values) else np.nan})


def _measures(values: np.ndarray, probs: np.ndarray) -> pd.Series:
    """sdcMicro's ``get_dist``: the quantiles (type 7) with the mean after the last one below 0.5."""
    quantiles = np.quantile(values, probs, method="linear") if len(values) else np.full(len(probs), np.nan)
    names = [_quantile_name(p) for p in probs]
    below = np.flatnonzero(probs < 0.5)
    at = int(below.max()) + 1 if len(below) else 0
    mean = float(values.mean()) if len(values) else np.nan
    return pd.Series([*quantiles[:at], mean, *quantiles[at:]], index=[*names[:at], "Mean", *names[at:]])


# over 10 parameters, kept: public (exported by sdc_dagster.loss), keyword-only, sdcMicro's infoLoss
# arguments one to one
def swap_information_loss(
    original: pd.DataFrame,
    swapped: pd.DataFrame,
    table_vars: Sequence[str],
    *,
    metric: Sequence[str] = SWAP_LOSS_METRICS,
    custom_metric: Mapping[str, Callable] | None = None,
    hid: str | None = None,
    probs: Sequence[float] = DEFAULT_PROBS,
    quantvals: Sequence[float] = DEFAULT_QUANTVALS,
    apply_quantvals: Sequence[str] = DEFAULT_APPLY_QUANTVALS,
    exclude_zeros: bool = False,
    only_inner_cells: bool = False,
    con: duckdb.DuckDBPyConnection | None = None,
) -> SwapInformationLoss:
    """Information loss of the frequency tables of ``table_vars`` after record swapping, sdcMicro's
    ``infoLoss(data, data_swapped, table_vars, ...)`` (module docstring for the formulas).

    Parameters
    ----------
    original, swapped : the microdata before and after swapping (any numbers of records).
    table_vars : the variables of the table (at least one), in both files.
    metric : some of "absD", "relabsD", "abssqrtD".
    custom_metric : {name: f(x, y)} further metrics, each returning one number per cell.
    hid : household id column: count households (first record of each) instead of persons.
    probs : quantile levels in [0, 1] of ``measures``.
    quantvals : at least two increasing break points of ``cumdistr`` for ``apply_quantvals``.
    apply_quantvals : the metrics whose ``cumdistr`` uses ``quantvals``.
    exclude_zeros : leave out the cells empty in the swapped file.
    only_inner_cells : only the table of all ``table_vars`` (no margins).
    con : DuckDB connection (default: the shared one).

    Returns
    -------
    :class:`SwapInformationLoss`.

    Raises
    ------
    SDCInputError : a column missing from a file, an unknown metric, a custom metric that does not
        return one number per cell, probs outside [0, 1], fewer than two or unsorted quantvals.
    """
    table_vars = list(require_columns(original, table_vars, role="original table variable"))
    require_columns(swapped, table_vars, role="swapped table variable")
    if not table_vars:
        raise SDCInputError("table_vars: name at least one variable")
    if len(set(table_vars)) != len(table_vars):
        raise SDCInputError(f"table_vars: must be distinct, got {table_vars}")
    metric = [metric] if isinstance(metric, str) else list(metric)
    unknown = [m for m in metric if m not in _METRICS]
    if unknown:
        raise SDCInputError(f"metric: must be some of {', '.join(SWAP_LOSS_METRICS)} (custom_metric for others), "
                            f"got {unknown[0]!r}")
    metrics = {m: _METRICS[m] for m in metric}
    for name, function in (custom_metric or {}).items():
        if not callable(function):
            raise SDCInputError(f"custom_metric[{name!r}]: must be a function f(x, y), got {function!r}")
        metrics[str(name)] = function
    if not metrics:
        raise SDCInputError("metric: name at least one metric (or give custom_metric)")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 1 or not len(probs) or not ((probs >= 0) & (probs <= 1)).all():
        raise SDCInputError(f"probs: must be numbers in [0, 1], got {list(probs)}")
    quantvals = np.asarray(quantvals, dtype=np.float64)
    if quantvals.ndim != 1 or len(quantvals) < 2 or np.isnan(quantvals).any() or (np.diff(quantvals) <= 0).any():
        raise SDCInputError(f"quantvals: must be two or more increasing break points, got {list(quantvals)}")
    apply_quantvals = [apply_quantvals] if isinstance(apply_quantvals, str) else list(apply_quantvals)
    check_flag(exclude_zeros, "exclude_zeros")
    check_flag(only_inner_cells, "only_inner_cells")
    if hid is not None:
        require_columns(original, [hid], role="household id column")
        require_columns(swapped, [hid], role="household id column")
        original = original.drop_duplicates(subset=hid, keep="first")
        swapped = swapped.drop_duplicates(subset=hid, keep="first")

    if only_inner_cells:
        subsets = [table_vars]
    else:
        subsets = [list(c) for size in range(1, len(table_vars) + 1) for c in combinations(table_vars, size)]
    keys = ["subset", *table_vars]
    counts = [grouping_sets_counts(frame, table_vars, subsets, con=con)[[*keys, "n"]].rename(columns={"n": name})
              for frame, name in ((original, "count_o"), (swapped, "count_s"))]
    cells = counts[0].merge(counts[1], how="outer", on=keys, sort=False)
    cells[["count_o", "count_s"]] = cells[["count_o", "count_s"]].fillna(0).astype("int64")
    cells = cells.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)
    if exclude_zeros:
        cells = cells[cells["count_s"] != 0].reset_index(drop=True)

    x = cells["count_o"].to_numpy(dtype=np.float64)
    y = cells["count_s"].to_numpy(dtype=np.float64)
    noise = pd.Series(x - y).value_counts().sort_index()
    overview = pd.DataFrame({"noise": noise.index.to_numpy(), "cnt": noise.to_numpy(),
                             "pct": noise.to_numpy() / len(cells) if len(cells) else np.nan})
    measures, cumdistr = {}, {}
    for name, function in metrics.items():
        values = np.asarray(function(x, y), dtype=np.float64)
        if values.shape != x.shape:
            raise SDCInputError(f"metric {name!r}: must return one number per table cell ({len(x)}), "
                                f"got shape {values.shape}")
        measures[name] = _measures(values, probs)
        cumdistr[name] = _cumulative(values, quantvals if name in apply_quantvals else None)
    table = pd.DataFrame({name: measures[name] for name in sorted(measures)})
    table.index.name = "what"
    return SwapInformationLoss(
        cells=cells,
        overview=overview,
        measures=table,
        cumdistr=cumdistr,
        false_zero=int(((x != 0) & (y == 0)).sum()),
        false_nonzero=int(((x == 0) & (y != 0)).sum()),
        exclude_zeros=bool(exclude_zeros),
    )
