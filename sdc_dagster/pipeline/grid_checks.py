"""The release rules and loss figures of the protected grid tables (SPEC §8.11, §9.10, §11.2-11.4).

Each rule returns a :class:`~sdc_dagster.pipeline.protection.CheckOutcome`, as the survey's release
checks do: ``passed``, ``value`` (the breaches found: the sum of the breach counts in ``figures``),
the ``rule`` in words, ``blocking`` (every grid rule is) and ``figures`` (every count it read); the
assets report them as asset checks, the tests and a notebook read them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.grid.counts import GRID_COUNT_COLUMNS, grid_variables_of
from sdc_dagster.loss.tables import grid_information_loss, perturbation_loss, secondary_suppression_cost
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.risk.tables import (
    difference_table,
    differencing_disclosure,
    disclosing_differences,
    homogeneous_cells,
    resident_size_distribution,
)


def category_columns(table: pd.DataFrame) -> list[str]:
    """The published category columns of a grid table (every variable but the total)."""
    return [c for v in grid_variables_of(table.columns, published=True) for c in v.columns]


def hidden_counts(protected: pd.DataFrame) -> dict[str, int]:
    """Hidden (NA) category counts of a suppressed table, and per variable the cells with one hidden."""
    hidden = protected[category_columns(protected)].isna()
    out = {"hidden_counts": int(hidden.to_numpy().sum())}
    for v in grid_variables_of(protected.columns, published=True):
        out[f"cells_with_hidden_{v.prefix}"] = int(hidden[list(v.columns)].any(axis=1).sum())
    return out


def differencing_exposure(
    resident: pd.DataFrame,
    national: pd.DataFrame,
    resident_protected: pd.DataFrame,
    national_protected: pd.DataFrame,
    *,
    k: int = 3,
) -> dict[str, int]:
    """Cells whose resident/national difference discloses persons (SPEC §11.4), by outcome.

    A category difference in 1..k-1 (``disclosing_differences``) is readable when the category is
    known in both tables: published, or 0 because the cell is absent (uninhabited) there.

    * ``blocked``: disclosing cells where no disclosing category is readable any more;
    * ``blocked_beyond_primary``: of those, cells in both tables with a disclosing category whose
      two counts are both outside 1..k-1 (the primary rule alone would have published it);
    * ``still_disclosed``: disclosing cells with a readable disclosing category (0 when protected
      consistently).
    """
    cols = category_columns(resident)
    cells = pd.Index(resident["cell_id"]).union(pd.Index(national["cell_id"]))

    def aligned(frame: pd.DataFrame, fill):
        return frame.set_index("cell_id")[cols].reindex(cells, fill_value=fill)

    res, nat = aligned(resident, 0).to_numpy(np.int64), aligned(national, 0).to_numpy(np.int64)
    in_res = cells.isin(resident["cell_id"])[:, None]
    in_nat = cells.isin(national["cell_id"])[:, None]
    known_res = aligned(resident_protected.assign(**{c: resident_protected[c].notna() for c in cols}), True)
    known_nat = aligned(national_protected.assign(**{c: national_protected[c].notna() for c in cols}), True)
    disclosing = disclosing_differences(res, nat, k=k)
    readable = disclosing & known_res.to_numpy(bool) & known_nat.to_numpy(bool)
    flagged = disclosing.any(axis=1)
    still = readable.any(axis=1)
    safe_counts = ~((res > 0) & (res < k)) & ~((nat > 0) & (nat < k))
    beyond = (disclosing & safe_counts & in_res & in_nat).any(axis=1)
    return {
        "blocked": int((flagged & ~still).sum()),
        "blocked_beyond_primary": int((beyond & ~still).sum()),
        "still_disclosed": int(still.sum()),
    }


def consistent_with_resident_table(
    resident_protected: pd.DataFrame, national_protected: pd.DataFrame, differencing: dict[str, int]
) -> CheckOutcome:
    """Same hidden pattern on the cells of both tables, and no disclosing difference published (SPEC §11.4)."""
    cols = category_columns(resident_protected)
    res = resident_protected.set_index("cell_id")[cols].isna()
    nat = national_protected.set_index("cell_id")[cols].isna()
    common = res.index.intersection(nat.index)
    differing = int((res.loc[common].to_numpy() != nat.loc[common].to_numpy()).any(axis=1).sum())
    return CheckOutcome(
        passed=differing == 0 and differencing["still_disclosed"] == 0,
        value=differing + differencing["still_disclosed"],
        rule="the same hidden pattern as the resident table on the cells of both tables, and no category "
        "published whose resident/national difference discloses persons",
        blocking=True,
        figures={
            "common_cells": len(common),
            "cells_with_different_patterns": differing,
            "cells_still_disclosed_by_differencing": differencing["still_disclosed"],
            "cells_differencing_blocked": differencing["blocked"],
        },
    )


def no_small_published_counts(suppressed: pd.DataFrame, *, k: int = 3) -> CheckOutcome:
    """No published count in 1..k-1 in any grid variable and no complete margin with exactly one
    hidden count (SPEC §11.2)."""
    small = 0
    single_hidden = 0
    for variable in grid_variables_of(suppressed.columns, published=True):
        values = suppressed[list(variable.columns)]
        numeric = values.to_numpy(dtype="float64", na_value=np.nan)
        small += int(((numeric > 0) & (numeric < k)).sum())
        if variable.complete_margin:
            single_hidden += int((values.isna().sum(axis=1) == 1).sum())
    return CheckOutcome(
        passed=small == 0 and single_hidden == 0,
        value=small + single_hidden,
        rule=f"no published count in 1..{k - 1} and no complete margin with exactly one hidden count",
        blocking=True,
        figures={"published_counts_below_k": small, "margins_with_one_hidden_count": single_hidden},
    )


def original_and_perturbed(perturbed: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The original and the perturbed counts of a cell key table, each with the figures' names."""
    names = [c for c in GRID_COUNT_COLUMNS if c in perturbed.columns]
    original = perturbed[[f"{c}_original" for c in names]].set_axis(names, axis=1)
    return original, perturbed[names]


def cell_key_bounded(perturbed: pd.DataFrame, *, max_deviation: int, threshold: int = 0) -> CheckOutcome:
    """In every figure: perturbed counts non-negative, within D of the original, zeros stay zero,
    none in 1..js (SPEC §8.11)."""
    bad = 0
    small = 0
    original, after_all = original_and_perturbed(perturbed)
    for col in original.columns:
        before, after = original[col], after_all[col]
        off = (after < 0) | ((after - before).abs() > max_deviation) | ((before == 0) & (after != 0))
        bad += int(off.sum())
        small += int(((after >= 1) & (after <= threshold)).sum())
    return CheckOutcome(
        passed=bad == 0 and small == 0,
        value=bad + small,
        rule=f"every perturbed count non-negative, within {max_deviation} of the original, zeros kept zero "
        f"and none in 1..{threshold}",
        blocking=True,
        figures={"violations": bad, "published_counts_in_1_to_js": small, "max_deviation": max_deviation,
                 "figures": len(original.columns)},
    )


def cell_key_loss(perturbed: pd.DataFrame) -> pd.DataFrame:
    """Loss of the cell key route per variable: deviations, share changed, SPEC §9.1 distances."""
    return perturbation_loss(*original_and_perturbed(perturbed))


@dataclass(frozen=True)
class SuppressionLoss:
    """Loss of one region's suppressed grid (SPEC §11.3-11.4, §9.10): ``tables`` (loss, size
    distribution, secondary costs, flat difference table) and the headline cell counts."""

    tables: dict[str, pd.DataFrame]
    homogeneous_cells: int
    cells_disclosed_by_differencing: int
    differencing: dict[str, int]


def suppression_loss(
    counts: pd.DataFrame, suppressed: pd.DataFrame, national: pd.DataFrame, suppressed_national: pd.DataFrame
) -> SuppressionLoss:
    """Information loss, secondary suppression cost, difference table and differencing outcome of a region."""
    costs = pd.DataFrame(
        {cost: secondary_suppression_cost(counts, suppressed, cost=cost) for cost in ("equal", "persons")}
    )
    differences = difference_table(counts, national)
    flat_differences = differences.copy()
    flat_differences.columns = [f"{d:+d}_{measure}" for d, measure in differences.columns]
    return SuppressionLoss(
        tables={
            "loss": grid_information_loss(counts, suppressed),
            "size_distribution": resident_size_distribution(counts),
            "secondary_costs": costs,
            "differences": flat_differences,
        },
        homogeneous_cells=int(homogeneous_cells(counts)["any"].sum()),
        cells_disclosed_by_differencing=int(differencing_disclosure(counts, national)["discloses"].sum()),
        differencing=differencing_exposure(counts, national, suppressed, suppressed_national),
    )
