"""Within-group information loss of microaggregation, SSE/TSS (SPEC §9.5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss.distance import check_pair, continuous_values


@dataclass(frozen=True)
class WithinGroupLoss:
    """Variance decomposition of microaggregation groups (SPEC §9.5).

    Attributes
    ----------
    sse, ssa, tss : float
        Within-group, between-group and total sums of squared Euclidean norms; tss = ssa + sse.
    n_groups : int
        Number of groups.
    value : float
        lambda = SSE / TSS in [0, 1].
    """

    sse: float
    ssa: float
    tss: float
    n_groups: int
    value: float


def within_group_loss(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str], *,
                      groups: pd.Series | None = None) -> WithinGroupLoss:
    """SSE/TSS of microaggregated variables, SPEC §9.5 eq (10).

    Parameters
    ----------
    original, protected : DataFrame
        Same index; ``columns`` numeric in both, without missing values.
    columns : sequence of str
        The microaggregated (interval / ratio) variables, aggregated jointly.
    groups : Series, optional
        Group label of each record (index like ``original``). Default: records with the same
        released vector in ``protected`` form one group (what microaggregation releases).

    Returns
    -------
    WithinGroupLoss
        SSE, SSA and TSS of the original values around their group means and grand mean.

    References
    ----------
    Młodak (S003) eq (10); Domingo-Ferrer and Mateo-Sanz (2002).
    """
    columns = check_pair(original, protected, columns)
    x = np.column_stack([continuous_values(original, c, "original") for c in columns])
    if np.isnan(x).any():
        raise SDCInputError("original: SSE/TSS needs every value of the microaggregated columns (found NA)")
    if groups is None:
        released = protected[columns]
        if released.isna().to_numpy().any():
            raise SDCInputError("protected: groups cannot be read from released vectors with NA; pass groups")
        labels = released.groupby(columns, sort=False).ngroup().to_numpy()
    else:
        if not isinstance(groups, pd.Series) or not groups.index.equals(original.index) or groups.isna().any():
            raise SDCInputError("groups: a Series indexed like original with a label for every record is required")
        labels = pd.factorize(groups)[0]
    n_groups = int(labels.max()) + 1 if labels.size else 0
    sizes = np.bincount(labels, minlength=n_groups).astype(float)
    group_means = np.column_stack([np.bincount(labels, weights=x[:, j], minlength=n_groups)
                                   for j in range(x.shape[1])]) / sizes[:, None]
    grand_mean = x.mean(axis=0)
    sse = float(((x - group_means[labels]) ** 2).sum())
    ssa = float((sizes[:, None] * (group_means - grand_mean) ** 2).sum())
    tss = float(((x - grand_mean) ** 2).sum())
    if tss == 0:
        raise SDCInputError(f"original: columns {columns} are constant, so TSS = 0 and SSE/TSS is undefined")
    return WithinGroupLoss(sse=sse, ssa=ssa, tss=tss, n_groups=n_groups, value=sse / tss)
