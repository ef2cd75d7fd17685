"""Variable classification: the spec's roles and scales (SPEC §1.1–1.2) next to suggestions from the data.

Two data-driven suggestions a methodologist wants to see before trusting a spec:
* a column whose values are unique on more than ``identifier_share`` of the records is a likely
  direct identifier (it identifies records on its own);
* a cardinality-based scale: numeric columns with more than ``continuous_min_distinct`` distinct
  values look continuous, the rest categorical.

It also notes the spec's listed categories that a wave lacks (valid: ``categories:`` is a rule on the
values, not a promise that every category occurs).
"""

from __future__ import annotations

import pandas as pd

from sdc_dagster.spec import SurveySpec

_ROLE_FOR_SCALE = {"continuous": "continuous_key", "nominal": "categorical_key"}


def classify_variables(
    data: pd.DataFrame,
    spec: SurveySpec,
    *,
    identifier_share: float = 0.95,
    continuous_min_distinct: int = 20,
) -> pd.DataFrame:
    """One row per column of ``data``: spec role and scale, distinct counts and the suggestions.

    Returns columns ``variable, role, scale, n_distinct, unique_share, suggested_role,
    suggested_scale, note``; ``role`` is ``"unspecified"`` for columns the spec does not name.
    ``unique_share`` is the share of records whose value occurs once.
    """
    n = len(data)
    declared = {v.name: v for v in spec.variables}
    rows = []
    for column in data.columns:
        values = data[column]
        counts = values.value_counts(dropna=True)
        n_distinct = int(counts.shape[0])
        unique_share = float((counts == 1).sum() / n) if n else 0.0
        numeric = pd.api.types.is_numeric_dtype(values)
        suggested_scale = "continuous" if numeric and n_distinct > continuous_min_distinct else "nominal"
        spec_var = declared.get(column)
        role = spec_var.role if spec_var else "unspecified"
        scale = spec_var.scale if spec_var else None
        suggested_role = None
        notes = []
        if unique_share > identifier_share and role not in ("record_id", "direct_identifier"):
            suggested_role = "direct_identifier"
            notes.append(f"unique on {unique_share:.1%} of records: likely a direct identifier")
        elif role in ("categorical_key", "continuous_key", "unspecified"):
            suggested_role = _ROLE_FOR_SCALE[suggested_scale]
            if role != "unspecified" and suggested_role != role:
                notes.append(f"{n_distinct} distinct values suggest a {suggested_scale} variable")
        if spec_var and scale in ("nominal", "ordinal") and suggested_scale == "continuous":
            notes.append("declared categorical but has many distinct numeric values")
        if spec_var and spec_var.categories is not None:
            listed = pd.Index(spec_var.categories, dtype=object)
            absent = listed[~listed.isin(counts.index)].tolist()
            if absent:
                notes.append(f"listed categories absent from this wave: {absent}")
        rows.append(
            {
                "variable": str(column),
                "role": role,
                "scale": scale,
                "n_distinct": n_distinct,
                "unique_share": unique_share,
                "suggested_role": suggested_role,
                "suggested_scale": suggested_scale,
                "note": "; ".join(notes),
            }
        )
    return pd.DataFrame(rows)
