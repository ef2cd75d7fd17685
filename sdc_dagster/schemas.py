"""pandera schemas derived from a survey spec, one per asset boundary.

``microdata_schema`` guards the raw wave (types, allowed categories, weights > 0, unique record id);
the others guard what the engine hands from one stage to the next. ``validate`` turns pandera's
failure report into one :class:`SchemaViolation` naming the column, the rule and the first
offending rows.
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec import SurveySpec


class SchemaViolation(SDCInputError):
    """Data broke a schema rule; the message names the column, the rule and offending rows."""


def _numeric() -> pa.Check:
    return pa.Check(
        lambda s: s.isna() | pd.to_numeric(s, errors="coerce").notna(), error="values must be numeric"
    )


def _positive() -> pa.Check:
    return pa.Check(lambda s: pd.to_numeric(s, errors="coerce") > 0, error="weights must be > 0")


def microdata_schema(spec: SurveySpec, *, protected: bool = False) -> pa.DataFrameSchema:
    """Schema of one survey wave (``protected``: of a protected variant, where keys may be NA and
    variables may have been removed or recoded)."""
    columns: dict[str, pa.Column] = {}
    for v in spec.variables:
        checks = []
        nullable = True
        if v.role == "weight":
            checks = [_numeric(), _positive()]
            nullable = False
        elif v.role == "record_id":
            nullable = False
        elif v.role == "continuous_key":
            checks = [_numeric()]
        elif v.categories is not None and not protected:
            checks = [pa.Check.isin(list(v.categories), error=f"categories must be one of {list(v.categories)}")]
        columns[v.name] = pa.Column(
            checks=checks,
            nullable=nullable,
            unique=v.role == "record_id",
            required=not protected or v.role in ("weight", "record_id"),
            coerce=False,
        )
    return pa.DataFrameSchema(columns, name=f"{spec.survey}_microdata", strict=False)


key_frequencies_schema = pa.DataFrameSchema(
    {
        "fk": pa.Column(float, pa.Check.ge(1)),
        "Fk": pa.Column(float, pa.Check.gt(0)),
    },
    name="key_frequencies",
    strict=False,
)

risk_scores_schema = pa.DataFrameSchema(
    {
        "fk": pa.Column(float, pa.Check.ge(1)),
        "Fk": pa.Column(float, pa.Check.gt(0)),
        "risk": pa.Column(float, pa.Check.in_range(0, 1)),
    },
    name="risk_scores",
    strict=False,
)

classification_schema = pa.DataFrameSchema(
    {
        "variable": pa.Column(str, unique=True),
        "role": pa.Column(str),
        "scale": pa.Column(str, nullable=True),
        "n_distinct": pa.Column(int, pa.Check.ge(0)),
        "unique_share": pa.Column(float, pa.Check.in_range(0, 1)),
        "suggested_role": pa.Column(str, nullable=True),
        "suggested_scale": pa.Column(str, nullable=True),
    },
    name="variable_classification",
    strict=False,
)


def validate(data: pd.DataFrame, schema: pa.DataFrameSchema, *, source: str = "data", max_rows: int = 5) -> pd.DataFrame:
    """Validate ``data`` against ``schema``; raise :class:`SchemaViolation` naming column, rule, rows."""
    try:
        return schema.validate(data, lazy=True)
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
        lines = []
        for (column, check), group in cases.groupby(["column", "check"], dropna=False, sort=False):
            if check == "column_in_dataframe":
                missing = ", ".join(map(repr, group["failure_case"].tolist()))
                lines.append(f"column {missing} named in the spec is missing from the data")
                continue
            idx = [i for i in group["index"].tolist() if i is not None and not pd.isna(i)]
            rows = ", ".join(str(int(i) + 1) if isinstance(i, (int, float)) else str(i) for i in idx[:max_rows])
            values = ", ".join(map(repr, group["failure_case"].tolist()[:max_rows]))
            where = f"column {column!r}" if column is not None and not pd.isna(column) else "the table"
            detail = f"; first offending rows (1-based): {rows}; values: {values}" if rows else f" ({values})"
            lines.append(f"{where} breaks rule {check!r}{detail}")
        raise SchemaViolation(f"{source}: " + "; ".join(lines)) from None
