"""Information loss of protected grid tables (SPEC §9.10, §11.3, §11.4).

* :func:`grid_information_loss`: per grid variable (sex, age, employed, place of birth, residence
  a year before, whichever the table publishes), absolute loss = published minus true
  persons (= minus the persons whose category is hidden) and relative loss (SPEC §11.3).
* :func:`resident_size_distribution`: cells and residents in cells of 1, 2 and 3+ residents, and
  "potentially safe / unsafe" cells (SPEC §11.4, S002 Rys. 3).
* :func:`secondary_suppression_cost`: cost of the secondary suppressions under the SPEC §9.10 cost
  functions (equal weight, persons represented, cell value, power / log transform).
* :func:`difference_table` and :func:`differencing_disclosure`: resident versus national-definition
  counts per cell, by variable and size of difference, and the cells where publishing both tables
  discloses persons by differencing (SPEC §11.4); :func:`disclosing_differences` is the rule itself
  (also used by ``protect.grid.consistent_grid_suppression``).
* :func:`homogeneous_cells`: the cells of SPEC §11.2 OPEN item 4 (every resident in one category).
* :func:`perturbation_loss`: loss of a table perturbed cell by cell (cell key method), per
  variable: mean absolute and relative deviation, share of cells changed and the distance measures
  of SPEC §9.10 (distances (4), (5), (6) of §9.1 averaged over cells).
* :func:`suppression_map_png`: a PNG map of the cells with hidden categories (S002 Rys. 6–7).

All functions are vectorised over cells.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.grid_counts import GRID_VARIABLES as GRID_VARIABLE_REGISTRY
from sdc_dagster.grid_counts import grid_variables_of
from sdc_dagster.loss.distance import partial_distances

#: Category columns of the published grid table, by variable (SPEC §11.1).
GRID_VARIABLES: dict[str, tuple[str, ...]] = {v.prefix: v.columns for v in GRID_VARIABLE_REGISTRY}
#: Row labels of the S002 difference table for each category column (SEX1.., AGE1.., then the
#: further variables of the 2021 grid in the same style).
DIFFERENCE_LABELS: dict[str, str] = {
    column: column.replace("_", "").upper() for v in GRID_VARIABLE_REGISTRY for column in v.columns
}


def _published_variables(*tables: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """Variable -> category columns of the grid variables every table publishes (sex, age required)."""
    found = [grid_variables_of(t.columns, published=True) for t in tables]
    common = [v for v in found[0] if all(v in f for f in found[1:])]
    return {v.prefix: v.columns for v in common}


def _difference_columns(*tables: pd.DataFrame) -> tuple[str, ...]:
    return tuple(c for cols in _published_variables(*tables).values() for c in cols)


def _hidden(protected: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    return protected[list(columns)].isna().to_numpy()


def _true_counts(original: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    values = original[list(columns)]
    if values.isna().any().any():
        raise SDCInputError("original counts: must not contain missing values")
    return values.to_numpy(dtype=np.int64)


def _check_aligned(original: pd.DataFrame, protected: pd.DataFrame) -> None:
    if not original.index.equals(protected.index):
        raise SDCInputError("original and protected tables: must have the same rows (index)")


def grid_information_loss(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    *,
    variables: Mapping[str, Sequence[str]] | None = None,
    total: str = "total",
) -> pd.DataFrame:
    """Absolute and relative loss per variable from hidden category counts (SPEC §11.3).

    Parameters
    ----------
    original
        True counts per cell (``total`` and the category columns).
    protected
        The same rows with hidden counts as NA (e.g. from ``protect.grid_suppression``).
    variables
        Variable name -> its category columns; default every grid variable both tables publish
        (SPEC §11.1: sex, age and, when present, employed, birth, residence).
    total
        Column of the cell totals (the population base of the relative loss).

    Returns
    -------
    pandas.DataFrame
        Indexed by variable: ``absolute_loss`` (published minus true persons, <= 0),
        ``hidden_persons``, ``population``, ``relative_loss`` (hidden / population) and
        ``relative_loss_pct`` (the same in %).

    References
    ----------
    SPEC §11.3 (S002 Rys. 4–5): sex -91719, 0.25%; age -261560, 0.71% of 37019327.
    """
    variables = dict(_published_variables(original, protected) if variables is None else variables)
    require_columns(original, [total, *[c for cols in variables.values() for c in cols]], role="grid count column")
    require_columns(protected, [c for cols in variables.values() for c in cols], role="grid count column")
    _check_aligned(original, protected)
    population = int(_true_counts(original, [total]).sum())
    rows = {}
    for name, cols in variables.items():
        true = _true_counts(original, cols)
        hidden_persons = int(true[_hidden(protected, cols)].sum())
        rows[name] = {
            "absolute_loss": -hidden_persons,
            "hidden_persons": hidden_persons,
            "population": population,
            "relative_loss": hidden_persons / population if population else np.nan,
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["relative_loss_pct"] = 100.0 * out["relative_loss"]
    out.index.name = "variable"
    return out


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
    t = _true_counts(counts, [total])[:, 0]
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


def secondary_suppression_mask(original: pd.DataFrame, protected: pd.DataFrame, *, k: int = 3) -> pd.DataFrame:
    """Hidden category counts that are not primary (not 0 < c < k): the secondary suppressions."""
    cols = list(_difference_columns(original, protected))
    require_columns(original, cols, role="grid count column")
    require_columns(protected, cols, role="grid count column")
    _check_aligned(original, protected)
    true = _true_counts(original, cols)
    primary = (true > 0) & (true < k)
    return pd.DataFrame(_hidden(protected, cols) & ~primary, index=original.index, columns=cols)


def secondary_suppression_cost(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    *,
    k: int = 3,
    cost: str = "equal",
    power: float | None = None,
    values: pd.DataFrame | None = None,
) -> pd.Series:
    """Cost of the secondary suppressions per category column (SPEC §9.10).

    Parameters
    ----------
    original, protected
        True counts and the protected table (hidden = NA), same rows.
    k
        Primary threshold: hidden counts with 0 < c < k are primary and cost nothing here.
    cost
        ``"equal"``: 1 per suppressed cell (minimise the number of suppressions);
        ``"persons"``: the number of units (contributors) in the cell, i.e. its count;
        ``"value"``: the cell value, from ``values`` (a magnitude table with the same rows and
        columns) or, for a frequency table, the count itself.
    power
        Transform of the "persons" / "value" cost for skewed data: y = x^power (power != 0),
        y = log(x) (power = 0). None: no transform. Cells of value 0 cost 0 under a transform
        (nothing is hidden there, and log 0 / 0^negative are undefined).
    values
        Magnitude table for ``cost="value"``.

    Returns
    -------
    pandas.Series
        Cost per category column (sum it for the table's loss).
    """
    if cost not in {"equal", "persons", "value"}:
        raise SDCInputError(f"parameter cost: must be 'equal', 'persons' or 'value', got {cost!r}")
    secondary = secondary_suppression_mask(original, protected, k=k)
    cols = list(secondary.columns)
    if cost == "equal":
        if power is not None:
            raise SDCInputError("parameter power: only applies to cost='persons' or cost='value'")
        weights = np.ones(secondary.shape)
    elif cost == "value" and values is not None:
        require_columns(values, cols, role="value column")
        if not values.index.equals(original.index):
            raise SDCInputError("values: must have the same rows (index) as the counts")
        weights = values[cols].to_numpy(dtype=np.float64)
    else:
        weights = _true_counts(original, cols).astype(np.float64)
    if power is not None:
        positive = weights > 0
        transformed = np.zeros_like(weights)
        if power == 0:
            transformed[positive] = np.log(weights[positive])
        else:
            transformed[positive] = weights[positive] ** float(power)
        weights = transformed
    return pd.Series((weights * secondary.to_numpy()).sum(axis=0), index=cols, name=f"cost_{cost}")


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
    columns = _difference_columns(resident, national) if columns is None else tuple(columns)
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
    columns = _difference_columns(resident, national) if columns is None else tuple(columns)
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


def perturbation_loss(original: pd.DataFrame, perturbed: pd.DataFrame) -> pd.DataFrame:
    """Loss of a grid table perturbed cell by cell, per variable and over all its counts (SPEC §9.10).

    Parameters
    ----------
    original, perturbed
        The same cells (same index) with the count columns of the grid (``total`` and every grid
        variable both publish, e.g. ``grid_cell_key``'s perturbed columns and ``<name>_original``
        renamed back).

    Returns
    -------
    pandas.DataFrame
        Indexed by variable (``total``, ``sex``, ``age``, ...), over the counts of its columns and
        all cells: ``counts``, ``mean_absolute_deviation`` (mean |x* - x|),
        ``mean_relative_deviation`` (mean |x* - x| / x over counts x > 0),
        ``share_changed`` (share of counts with x* != x), ``max_absolute_deviation``, and the
        distance measures of SPEC §9.1 averaged over the counts: ``distance_max_abs`` (4),
        ``distance_max_sq`` (5), ``distance_arctan`` (6) (from ``loss.distance.partial_distances``).
    """
    variables = {"total": ("total",), **_published_variables(original, perturbed)}
    columns = [c for cols in variables.values() for c in cols]
    require_columns(original, columns, role="grid count column")
    require_columns(perturbed, columns, role="grid count column")
    _check_aligned(original, perturbed)
    rows = {}
    for name, cols in variables.items():
        x = _true_counts(original, cols).ravel()
        y = _true_counts(perturbed, cols).ravel()
        deviation = np.abs(y - x)
        pair = (pd.DataFrame({"v": x}), pd.DataFrame({"v": y}))
        row = {
            "counts": x.size,
            "mean_absolute_deviation": float(deviation.mean()) if x.size else np.nan,
            "mean_relative_deviation": float((deviation[x > 0] / x[x > 0]).mean()) if (x > 0).any() else np.nan,
            "share_changed": float((deviation > 0).mean()) if x.size else np.nan,
            "max_absolute_deviation": int(deviation.max()) if x.size else 0,
        }
        for label, measure in (("max_abs", "max_abs"), ("max_sq", "max_sq"), ("arctan", "arctan")):
            d = partial_distances(*pair, {"v": "continuous"}, continuous_distance=measure)["v"].to_numpy()
            row[f"distance_{label}"] = float(d.mean()) if d.size else np.nan
        rows[name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "variable"
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
    t = _true_counts(counts, [total])[:, 0]
    out = {}
    for variable in grid_variables_of(counts.columns, published=True):
        values = _true_counts(counts, variable.columns)
        if variable.complete_margin:
            out[variable.prefix] = (t >= k) & ((values > 0).sum(axis=1) == 1)
        else:
            out[variable.prefix] = (t >= k) & ((values[:, 0] == 0) | (values[:, 0] == t))
    frame = pd.DataFrame(out, index=counts.index)
    frame["any"] = frame.any(axis=1)
    return frame


def suppression_map_png(
    protected: pd.DataFrame,
    *,
    path: str | Path | None = None,
    northing: str = "northing_km",
    easting: str = "easting_km",
    title: str = "Cells with hidden categories",
) -> bytes:
    """PNG map of inhabited cells coloured by what is hidden (S002 Rys. 6–7).

    Colours: grey = nothing hidden; blue = sex only; orange = age only; red = sex and age.

    Returns
    -------
    bytes
        The PNG image (also written to ``path`` when given).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    cols = [*GRID_VARIABLES["sex"], *GRID_VARIABLES["age"]]
    require_columns(protected, [northing, easting, *cols], role="map column")
    sex_hidden = protected[list(GRID_VARIABLES["sex"])].isna().any(axis=1).to_numpy()
    age_hidden = protected[list(GRID_VARIABLES["age"])].isna().any(axis=1).to_numpy()
    north = protected[northing].to_numpy(dtype=np.float64)
    east = protected[easting].to_numpy(dtype=np.float64)
    fig = Figure(figsize=(7, 7), dpi=110)
    ax = fig.add_subplot()
    layers = [
        (~sex_hidden & ~age_hidden, "#d9d9d9", "nothing hidden"),
        (sex_hidden & ~age_hidden, "#3182bd", "sex hidden"),
        (~sex_hidden & age_hidden, "#fd8d3c", "age hidden"),
        (sex_hidden & age_hidden, "#de2d26", "sex and age hidden"),
    ]
    for mask, colour, label in layers:
        ax.scatter(east[mask], north[mask], s=1.0, c=colour, marker="s", linewidths=0, label=f"{label} ({mask.sum()})")
    ax.set_aspect("equal")
    ax.set_xlabel("easting (km, EPSG:3035)")
    ax.set_ylabel("northing (km, EPSG:3035)")
    ax.set_title(title)
    ax.legend(loc="upper right", markerscale=6, fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    png = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png
