"""Disclosure risk of published grid tables (SPEC §11.2 item 4, §11.4).

* :func:`resident_size_distribution`: cells and residents in cells of 1, 2 and 3+ residents, and
  "potentially safe / unsafe" cells (SPEC §11.4, S002 Rys. 3).
* :func:`disclosing_differences`: the differencing rule (used by
  ``protect.grid.consistent_grid_suppression``); :func:`differencing_disclosure` and
  :func:`difference_table`: resident versus national-definition counts per cell, by variable and
  size of difference, and the cells where publishing both tables discloses persons (SPEC §11.4).
* :func:`homogeneous_cells`: the cells of SPEC §11.2 OPEN item 4 (every resident in one category).
* :func:`published_variables`: the grid variables every given table publishes (also the variables
  the loss measures of :mod:`sdc_dagster.loss.tables` compare).

All functions are vectorised over cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.grid.counts import GRID_VARIABLES as GRID_VARIABLE_REGISTRY
from sdc_dagster.grid.counts import grid_variables_of
from sdc_dagster.validation import count_matrix

#: Row labels of the S002 difference table for each category column (SEX1.., AGE1.., then the
#: further variables of the 2021 grid in the same style).
DIFFERENCE_LABELS: dict[str, str] = {
    column: column.replace("_", "").upper() for v in GRID_VARIABLE_REGISTRY for column in v.columns
}


def published_variables(*tables: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """Variable -> category columns of the grid variables every table publishes (sex, age required)."""
    found = [grid_variables_of(t.columns, published=True) for t in tables]
    common = [v for v in found[0] if all(v in f for f in found[1:])]
    return {v.prefix: v.columns for v in common}


def published_count_columns(*tables: pd.DataFrame) -> tuple[str, ...]:
    """The category columns of :func:`published_variables`, variable after variable."""
    return tuple(c for cols in published_variables(*tables).values() for c in cols)


def resident_size_distribution(counts: pd.DataFrame, *, total: str = "total", k: int = 3) -> pd.DataFrame:
    """Cells and residents by number of residents: 1, 2, ..., k-1, k+; safe/unsafe (SPEC §11.4).

    Parameters
    ----------
    counts
        One row per inhabited cell with the total residents.
    total
        Column of the cell totals.
    k
        Cells with fewer than k residents are "potentially unsafe" (S002 uses k = 3).

    Returns
    -------
    pandas.DataFrame
        Rows ``"1"``, ``"2"``, ..., ``"<k>+"``, ``"potentially safe"``, ``"potentially unsafe"``,
        ``"total"``; columns ``cells``, ``cells_pct``, ``residents``, ``residents_pct`` (percent of
        all inhabited cells / all residents, unrounded).
    """
    require_columns(counts, [total], role="grid count column")
    t = count_matrix(counts, [total], role="grid counts")[:, 0]
    if (t <= 0).any():
        raise SDCInputError(f"column {total!r}: inhabited cells must have at least one resident")
    n_cells = len(t)
    population = int(t.sum())
    labels, masks = [], []
    for size in range(1, k):
        labels.append(str(size))
        masks.append(t == size)
    labels += [f"{k}+", "potentially safe", "potentially unsafe", "total"]
    masks += [t >= k, t >= k, t < k, np.ones(n_cells, dtype=bool)]
    cells = np.array([m.sum() for m in masks], dtype=np.int64)
    residents = np.array([t[m].sum() for m in masks], dtype=np.int64)
    return pd.DataFrame(
        {
            "cells": cells,
            "cells_pct": 100.0 * cells / n_cells if n_cells else np.nan,
            "residents": residents,
            "residents_pct": 100.0 * residents / population if population else np.nan,
        },
        index=pd.Index(labels, name="residents_in_cell"),
    )


def _aligned_counts(
    resident: pd.DataFrame, national: pd.DataFrame, cell: str, columns: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables on the union of their cells (a cell missing from one has count 0 there)."""
    require_columns(resident, [cell, *columns], role="grid count column")
    require_columns(national, [cell, *columns], role="grid count column")
    for name, frame in (("resident", resident), ("national", national)):
        if frame[cell].duplicated().any():
            raise SDCInputError(f"{name} counts: column {cell!r} must identify cells uniquely")
    cells = pd.Index(resident[cell]).union(pd.Index(national[cell]))
    a = resident.set_index(cell)[list(columns)].reindex(cells, fill_value=0)
    b = national.set_index(cell)[list(columns)].reindex(cells, fill_value=0)
    return a, b


def disclosing_differences(first, second, *, k: int = 3) -> np.ndarray:
    """Where a difference between two published counts discloses persons (SPEC §11.4).

    The shared rule of :func:`differencing_disclosure` and of the consistent grid suppression
    (``protect.grid.consistent_grid_suppression``): a difference d = first - second with
    0 < |d| < k isolates fewer than k persons counted under one definition only.

    Parameters
    ----------
    first, second
        Integer count arrays of the same shape (cells x categories), aligned cell by cell.
    k
        Threshold: differences of 1..k-1 persons (either sign) disclose.

    Returns
    -------
    numpy.ndarray
        Boolean array of the same shape.
    """
    diff = np.abs(np.asarray(first, dtype=np.int64) - np.asarray(second, dtype=np.int64))
    return (diff > 0) & (diff < k)


def differencing_disclosure(
    resident: pd.DataFrame,
    national: pd.DataFrame,
    *,
    cell: str = "cell_id",
    k: int = 3,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per cell, resident minus national counts and whether the difference discloses persons.

    Publishing both tables reveals, by subtraction, the persons counted under one definition only.
    A difference d with 0 < |d| < k in some category isolates fewer than k persons: the cell is
    flagged (SPEC §11.4 "challenges").

    Returns
    -------
    pandas.DataFrame
        Indexed by cell id: ``diff_<column>`` (resident - national, int64) for each column and
        ``discloses`` (bool).
    """
    columns = published_count_columns(resident, national) if columns is None else tuple(columns)
    a, b = _aligned_counts(resident, national, cell, columns)
    diff = a.to_numpy(dtype=np.int64) - b.to_numpy(dtype=np.int64)
    out = pd.DataFrame(diff, index=a.index, columns=[f"diff_{c}" for c in columns])
    out["discloses"] = disclosing_differences(a.to_numpy(), b.to_numpy(), k=k).any(axis=1)
    return out


def difference_table(
    resident: pd.DataFrame,
    national: pd.DataFrame,
    *,
    cell: str = "cell_id",
    differences: Sequence[int] = (-2, -1, 1, 2),
    n_cells: int | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Cells by variable and size of difference resident minus national (SPEC §11.4 table).

    Parameters
    ----------
    resident, national
        Grid counts of the two population definitions (one row per cell, ``cell`` column).
    differences
        The differences tabulated (S002: -2, -1, +1, +2).
    n_cells
        Base of the percentages; default the number of cells in the union of both tables. (S002's
        printed percentages imply a base slightly below its 197130 cells, SPEC §13.13.)

    Returns
    -------
    pandas.DataFrame
        Rows SEX1, SEX2, AGE1, AGE2, AGE3 (then EMPLOYED, BIRTH1.., RESIDENCE1.. when both
        tables publish them; ``columns`` picks); columns a MultiIndex (difference, ``count`` / ``pct``).
    """
    columns = published_count_columns(resident, national) if columns is None else tuple(columns)
    diffs = differencing_disclosure(resident, national, cell=cell, columns=columns)
    base = len(diffs) if n_cells is None else int(n_cells)
    if base <= 0:
        raise SDCInputError("n_cells: the percentage base must be positive")
    data = {}
    for d in differences:
        counts = np.array([(diffs[f"diff_{c}"].to_numpy() == d).sum() for c in columns], dtype=np.int64)
        data[(d, "count")] = counts
        data[(d, "pct")] = 100.0 * counts / base
    out = pd.DataFrame(data, index=pd.Index([DIFFERENCE_LABELS.get(c, c) for c in columns], name="variable"))
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["difference", "measure"])
    return out


def homogeneous_cells(counts: pd.DataFrame, *, k: int = 3, total: str = "total") -> pd.DataFrame:
    """Cells with T >= k whose residents all share one category of a variable (SPEC §11.2 item 4).

    The suppression rule leaves these published although they disclose every resident's category.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``counts``: one bool column per published variable (``sex``, ``age``, and
        ``employed`` — all or none employed —, ``birth``, ``residence`` when present) and ``any``.
    """
    require_columns(counts, [total], role="grid count column")
    t = count_matrix(counts, [total], role="grid counts")[:, 0]
    out = {}
    for variable in grid_variables_of(counts.columns, published=True):
        values = count_matrix(counts, variable.columns, role="grid counts")
        if variable.complete_margin:
            out[variable.prefix] = (t >= k) & ((values > 0).sum(axis=1) == 1)
        else:
            out[variable.prefix] = (t >= k) & ((values[:, 0] == 0) | (values[:, 0] == t))
    frame = pd.DataFrame(out, index=counts.index)
    frame["any"] = frame.any(axis=1)
    return frame
