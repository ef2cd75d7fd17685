"""Information loss of protected grid tables (SPEC §9.10, §11.3).

* :func:`grid_information_loss`: per grid variable (sex, age, employed, place of birth, residence
  a year before, whichever the table publishes), absolute loss = published minus true
  persons (= minus the persons whose category is hidden) and relative loss (SPEC §11.3).
* :func:`secondary_suppression_cost`: cost of the secondary suppressions under the SPEC §9.10 cost
  functions (equal weight, persons represented, cell value, power / log transform).
* :func:`perturbation_loss`: loss of a table perturbed cell by cell (cell key method), per
  variable: mean absolute and relative deviation, share of cells changed and the distance measures
  of SPEC §9.10 (distances (4), (5), (6) of §9.1 averaged over cells).

The disclosure rules of grid tables (differencing, homogeneous cells, the size distribution of
cells) are in :mod:`sdc_dagster.risk.tables`, the map of hidden cells in
:mod:`sdc_dagster.report.maps`. All functions are vectorised over cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.loss.distance import partial_distances
from sdc_dagster.risk.tables import published_count_columns, published_variables
from sdc_dagster.validation import count_matrix


def _hidden(protected: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    return protected[list(columns)].isna().to_numpy()


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
    variables = dict(published_variables(original, protected) if variables is None else variables)
    require_columns(original, [total, *[c for cols in variables.values() for c in cols]], role="grid count column")
    require_columns(protected, [c for cols in variables.values() for c in cols], role="grid count column")
    _check_aligned(original, protected)
    population = int(count_matrix(original, [total], role="original counts").sum())
    rows = {}
    for name, cols in variables.items():
        true = count_matrix(original, cols, role="original counts")
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


def secondary_suppression_mask(original: pd.DataFrame, protected: pd.DataFrame, *, k: int = 3) -> pd.DataFrame:
    """Hidden category counts that are not primary (not 0 < c < k): the secondary suppressions."""
    cols = list(published_count_columns(original, protected))
    require_columns(original, cols, role="grid count column")
    require_columns(protected, cols, role="grid count column")
    _check_aligned(original, protected)
    true = count_matrix(original, cols, role="original counts")
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
        weights = count_matrix(original, cols, role="original counts").astype(np.float64)
    if power is not None:
        positive = weights > 0
        transformed = np.zeros_like(weights)
        if power == 0:
            transformed[positive] = np.log(weights[positive])
        else:
            transformed[positive] = weights[positive] ** float(power)
        weights = transformed
    return pd.Series((weights * secondary.to_numpy()).sum(axis=0), index=cols, name=f"cost_{cost}")


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
    variables = {"total": ("total",), **published_variables(original, perturbed)}
    columns = [c for cols in variables.values() for c in cols]
    require_columns(original, columns, role="grid count column")
    require_columns(perturbed, columns, role="grid count column")
    _check_aligned(original, perturbed)
    rows = {}
    for name, cols in variables.items():
        x = count_matrix(original, cols, role="original counts").ravel()
        y = count_matrix(perturbed, cols, role="perturbed counts").ravel()
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
