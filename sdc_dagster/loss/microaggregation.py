"""Within-group information loss of microaggregation, SSE/TSS (SPEC §9.5).

Missing values are skipped pairwise: a value takes part only when it is observed in both the
original and the released file (item non-response that stayed missing, or a suppressed value, is
not compared); every sum runs over the compared values of each variable, and the number of values
compared is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import check_pair, continuous_values


@dataclass(frozen=True)
class WithinGroupLoss:
    """Variance decomposition of microaggregation groups (SPEC §9.5).

    Attributes
    ----------
    sse, ssa, tss : float
        Within-group, between-group and total sums of squared Euclidean norms; tss = ssa + sse
        when the released values are the group means (or the groups are given).
    n_groups : int
        Number of groups.
    value : float
        lambda = SSE / TSS, in [0, 1] for microaggregation.
    compared : int
        Number of values (records x variables) compared: observed in both files.
    """

    sse: float
    ssa: float
    tss: float
    n_groups: int
    value: float
    compared: int


def within_group_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str], *,
                      groups: pd.Series | None = None) -> WithinGroupLoss:
    """SSE/TSS of perturbed continuous variables, SPEC §9.5 eq (10).

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` numeric in both. A value missing in either file is not compared.
    columns : sequence of str
        The (interval / ratio) variables, e.g. those microaggregated jointly.
    groups : Series, optional
        Group label of each record (index like ``original``): SSE and SSA are taken around the
        group means of the compared original values. Default: each record's released value stands
        for its group mean, SSE = sum (x_ij - x*_ij)^2 and SSA = sum (x*_ij - xbar_j)^2. For
        microaggregation the released values are the group means, so this is eq (10) exactly;
        for any other perturbation (noise, rank swapping, rounding) SSE is the squared error of
        the release, never a false 0, and SSE/TSS may exceed 1.

    Returns
    -------
    WithinGroupLoss
        SSE, SSA and TSS (around xbar_j, the mean of the compared original values of variable j),
        the number of groups (default: distinct released vectors) and of values compared.

    References
    ----------
    Młodak (S003) eq (10); Domingo-Ferrer and Mateo-Sanz (2002).
    """
    columns = check_pair(original, protected, columns)
    x = np.column_stack([continuous_values(original, c, "original") for c in columns])
    y = np.column_stack([continuous_values(protected, c, "protected") for c in columns])
    compared = ~np.isnan(x) & ~np.isnan(y)
    count = compared.sum(axis=0)
    grand_mean = np.where(compared, x, 0.0).sum(axis=0) / np.maximum(count, 1)
    if groups is None:
        labels = protected[columns].groupby(columns, sort=False, dropna=False).ngroup().to_numpy()
        centre = y
    else:
        if not isinstance(groups, pd.Series) or not groups.index.equals(original.index) or groups.isna().any():
            raise SDCInputError("groups: a Series indexed like original with a label for every record is required")
        labels = pd.factorize(groups)[0]
        n_groups = int(labels.max()) + 1 if labels.size else 0
        sizes = np.column_stack([np.bincount(labels, weights=compared[:, j], minlength=n_groups)
                                 for j in range(x.shape[1])])
        sums = np.column_stack([np.bincount(labels, weights=np.where(compared[:, j], x[:, j], 0.0),
                                            minlength=n_groups) for j in range(x.shape[1])])
        centre = (sums / np.maximum(sizes, 1))[labels]
    n_groups = int(labels.max()) + 1 if labels.size else 0
    sse = float(np.where(compared, (x - centre) ** 2, 0.0).sum())
    ssa = float(np.where(compared, (centre - grand_mean) ** 2, 0.0).sum())
    tss = float(np.where(compared, (x - grand_mean) ** 2, 0.0).sum())
    if tss == 0:
        raise SDCInputError(
            f"original: columns {columns} are constant on the {int(count.sum())} compared values, "
            "so TSS = 0 and SSE/TSS is undefined"
        )
    return WithinGroupLoss(sse=sse, ssa=ssa, tss=tss, n_groups=n_groups, value=sse / tss,
                           compared=int(count.sum()))
