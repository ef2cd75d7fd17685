"""Per-variable utility figures a release is bounded by: the share of each categorical key's values
suppressed, the share of records whose categorical keys changed, and for continuous keys the
relative change of each mean and variance and the change of each correlation.

These are the per-variable forms of the information-loss measures of Hundepool et al. (2012),
*Statistical Disclosure Control*, ch. 3 on information loss (means, variances, covariances and correlations before and
after masking, after Domingo-Ferrer, Mateo-Sanz & Torra 2001) and of the suppression counts that
sdcMicro's ``print(sdcObj, "ls")`` reports per key. Unlike the averaged measures of
:mod:`sdc_dagster.loss.moments` they name the variable that lost most, so that a limit can be set
on each and a report can say which one binds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.loss.moments import correlation_matrix
from sdc_dagster.validation import check_pair, continuous_values

#: The columns of :func:`utility_changes`.
CHANGE_COLUMNS = ("measure", "variable", "before", "after", "change")


def _released_originals(original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | None = None
                        ) -> pd.DataFrame:
    """The original records ``protected`` releases (its index labels, in its order), of ``columns``
    (all when None): ``original`` itself, not a copy, when it releases every record in order (every
    plan but a subsample; on 1,000,000 records the copy of the wave cost 0.4 CPU s a call)."""
    frame = original if protected.index.equals(original.index) else original.loc[protected.index]
    return frame if columns is None else frame[list(columns)]


def suppressed_shares(original: pd.DataFrame, protected: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Per categorical key, the share of its observed values that the release suppressed: values
    observed in the original record and missing in its release, over the values observed in the
    original (0 for a key with no observed value). ``protected`` holds the released records (a
    subset of ``original``'s index); a key it does not release counts every value as suppressed."""
    matched = _released_originals(original, protected, keys)
    released = protected.reindex(columns=list(keys))
    observed = matched.notna()
    hidden = (released.isna() & observed).sum()
    counts = observed.sum()
    return (hidden / counts.where(counts > 0)).fillna(0.0).astype(float).rename("suppressed")


def records_changed_share(original: pd.DataFrame, protected: pd.DataFrame, keys: Sequence[str]) -> float:
    """The share of released records at least one of whose categorical keys is released with another
    value than in ``original``: suppressed, or perturbed (PRAM, swapping); pass the original with
    the plan's recodes applied (:func:`sdc_dagster.pipeline.protection.utility_changes` does) so that
    a value released as its merged category is not a change. A value missing in both files is
    unchanged; a key the release drops changes every record where it was observed. 0 without keys
    or records."""
    if not len(keys) or not len(protected):
        return 0.0
    matched = _released_originals(original, protected, keys)
    released = protected.reindex(columns=list(keys))
    changed = np.zeros(len(protected), dtype=bool)
    for key in keys:
        before, after = matched[key], released[key]
        same = before.eq(after).fillna(False).to_numpy(dtype=bool) | (before.isna() & after.isna()).to_numpy()
        changed |= ~same
    return float(changed.mean())


def _relative(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """(after - before) / |before|, signed; NaN where ``before`` is 0 (undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(before != 0, (after - before) / np.abs(before), np.nan)


def utility_changes(original: pd.DataFrame, protected: pd.DataFrame, categorical: Sequence[str],
                    continuous: Sequence[str], *, generalised: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every per-variable utility figure of a release, one row each (columns :data:`CHANGE_COLUMNS`).

    * ``suppressed`` (one row per categorical key): ``change`` = :func:`suppressed_shares`;
      ``before`` / ``after`` = the key's observed values in the original and the release;
    * ``records changed`` (variable ``"categorical keys"``, with categorical keys):
      ``change`` = :func:`records_changed_share` against ``generalised`` (the original with the
      plan's recodes applied; the original itself when None);
    * ``mean`` and ``variance`` (one row per continuous key): the statistic before and after on each
      file's observed values (sample variance, divisor n - 1) and ``change`` = (after - before) /
      |before|, signed, NaN where the original statistic is 0 (Hundepool et al. 2012, ch. 3;
      SPEC §9.4 eq (9) and §9.6 per variable);
    * ``correlation`` (one row per pair of continuous keys, variable ``"a–b"``): Pearson's r before
      and after (pairwise complete records) and ``change`` = r* - r. The change of a correlation is
      absolute: its relative change is unbounded where r is near 0 (a change from 0.001 to 0.003 is
      +200 % and means nothing), while r lies in [-1, 1] on every variable's scale.

    ``original`` and ``protected``: the released records (``protected``'s index, a subset of
    ``original``'s) are compared.
    """
    rows = []
    matched = _released_originals(original, protected)
    if categorical:
        shares = suppressed_shares(original, protected, categorical)
        for key in categorical:
            after = int(protected[key].notna().sum()) if key in protected.columns else 0
            rows.append(("suppressed", key, int(matched[key].notna().sum()), after, float(shares[key])))
        rows.append(("records changed", "categorical keys", len(matched), len(protected),
                     records_changed_share(original if generalised is None else generalised, protected,
                                           categorical)))
    columns = check_pair(matched, protected, list(continuous)) if continuous else []
    if columns:
        x = np.column_stack([continuous_values(matched, c, "original") for c in columns])
        y = np.column_stack([continuous_values(protected, c, "protected") for c in columns])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.nanmean(x, axis=0), np.nanmean(y, axis=0)
            variances = np.nanvar(x, axis=0, ddof=1), np.nanvar(y, axis=0, ddof=1)
        for measure, (before, after) in (("mean", means), ("variance", variances)):
            change = _relative(before, after)
            rows += [(measure, c, float(b), float(a), float(d)) for c, b, a, d in zip(columns, before, after, change)]
        if len(columns) >= 2:
            r, r_star = correlation_matrix(x, "pearson"), correlation_matrix(y, "pearson")
            for j in range(len(columns)):
                for l in range(j + 1, len(columns)):
                    rows.append(("correlation", f"{columns[j]}–{columns[l]}", float(r[j, l]), float(r_star[j, l]),
                                 float(r_star[j, l] - r[j, l])))
    return pd.DataFrame(rows, columns=list(CHANGE_COLUMNS))
