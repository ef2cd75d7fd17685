"""What a protected variant still releases of the spec's quasi-identifiers, derived in one place.

A plan may remove a key (a recode to nothing, a dropped column) or records (a subsample): every
stage that compares a variant with the original (release checks, residual risk, loss, the report)
asks which keys the variant still has (:func:`released_keys`) and which original records it
releases (:func:`retained_records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.releases.manifest import ONE_CATEGORY, WITHHELD_VARIABLE
from sdc_dagster.spec import SurveySpec


@dataclass(frozen=True)
class ReleasedKeys:
    """The spec's quasi-identifiers a variant still releases, in spec order, and its design columns
    (``weight``, ``household``: None when the spec names none or the variant dropped it)."""

    categorical: list[str]
    continuous: list[str]
    weight: str | None
    household: str | None

    @property
    def quasi_identifiers(self) -> list[str]:
        return self.categorical + self.continuous


def released_keys(spec: SurveySpec, frame: pd.DataFrame) -> ReleasedKeys:
    """The :class:`ReleasedKeys` of ``frame`` (the original wave or one of its protected variants)."""
    return ReleasedKeys(
        categorical=[k for k in spec.categorical_keys if k in frame.columns],
        continuous=[k for k in spec.continuous_keys if k in frame.columns],
        weight=spec.weight if spec.weight in frame.columns else None,
        household=spec.household_id if spec.household_id in frame.columns else None,
    )


def two_values(values: pd.Series) -> bool:
    """Whether at least two distinct values are observed (``nunique() >= 2``, without hashing every
    value)."""
    observed = values.dropna().to_numpy()
    return bool(len(observed) and (observed != observed[0]).any())


def keys_lost(spec: SurveySpec, original: pd.DataFrame, protected: pd.DataFrame, *,
                      unchanged: Sequence[str] = ()) -> dict[str, str]:
    """``{key: how}`` for each quasi-identifier of ``original`` that the variant ``protected``
    releases nothing of: ``"withheld"`` (not in the file: ``remove_variables``, the continuous
    ladder's last rung) or ``"one category"`` (at least two distinct observed values in the original
    records it releases, at most one in the release: every record in the same merged class, the
    hierarchy's top, ARX's "*", one band covering everything, or every value suppressed). The one
    rule of a key not released: the loss counts each observed value of such a key as lost (d = 1,
    :func:`~sdc_dagster.pipeline.evaluation.headline_loss`, SPEC §9.1), and the utility limit
    ``limits.max_keys_not_released`` bounds their share of the keys
    (:func:`~sdc_dagster.pipeline.protection.release_checks`). A file that releases a key so carries
    none of its information, whatever a composite measure says (Hundepool et al. 2012, "Statistical
    Disclosure Control", §3.4 on information loss per variable). ``unchanged``: keys known to be
    released as they are (not read)."""
    matched = retained_records(original, protected, "variant")
    out = {}
    for key in released_keys(spec, original).quasi_identifiers:
        if key not in protected.columns:
            out[key] = WITHHELD_VARIABLE
        elif key not in unchanged and not two_values(protected[key]) and two_values(matched[key]):
            out[key] = ONE_CATEGORY
    return out


def retained_records(original: pd.DataFrame, protected: pd.DataFrame, name: str) -> pd.DataFrame:
    """The original records a variant releases, in its order (all of them unless it subsampled)."""
    if protected.index.equals(original.index):
        return original
    if not protected.index.is_unique or not protected.index.isin(original.index).all():
        raise SDCInputError(
            f"protected variant {name!r}: its records must keep the index labels of the original "
            "(a subset of them) so that loss can be measured record by record"
        )
    return original.loc[protected.index]


def loss_scales(spec: SurveySpec, released: ReleasedKeys) -> dict[str, str]:
    """Scales of the quasi-identifiers a variant still releases (``released``: its :class:`ReleasedKeys`)."""
    keys = released.quasi_identifiers
    return {v: s for v, s in spec.scales.items() if v in keys}


def ordinal_orders(spec: SurveySpec, scales: dict[str, str]) -> dict[str, list]:
    """The spec's ``order:`` of each ordinal variable, for the ordinal distance (SPEC §9.1 (3))."""
    return {
        v: list(spec.variable(v).categories)
        for v, s in scales.items()
        if s == "ordinal" and spec.variable(v).categories is not None
    }


def values_changed(original: pd.Series, protected: pd.Series) -> bool:
    """Whether a variable's released values differ from the original where both are observed."""
    both = original.notna() & protected.notna()
    return bool((original[both].to_numpy() != protected[both].to_numpy()).any())


def perturbed(original: pd.DataFrame, protected: pd.DataFrame, columns: list[str]) -> list[str]:
    """The continuous keys of ``columns`` whose released values differ from the original ones
    (beyond rounding; a value missing in both counts as equal)."""
    return [c for c in columns
            if not np.allclose(protected[c].to_numpy(float), original[c].to_numpy(float), equal_nan=True)]


def same_release(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two variants release exactly the same records and values (same index, columns,
    dtypes and values; missing values where the other has them). The plan search often recommends a
    plan that one of the spec's plans already is (testdata: local suppression then microaggregation
    within the keys), under another name: the evaluation computes its figures once for both.
    Compared column by column, so that two variants that differ stop at their first differing
    column: on 1M records (the 100k wave's variants ten times) 7-20 ms a differing pair, 50 ms an equal one."""
    if a is b:
        return True
    if a.shape != b.shape or not a.columns.equals(b.columns) or not a.index.equals(b.index):
        return False
    return all(a[c].dtype == b[c].dtype and a[c].equals(b[c]) for c in a.columns)
