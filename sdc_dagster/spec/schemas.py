"""pandera schemas derived from a survey spec, one per asset boundary.

``microdata_schema`` guards the raw wave (types, allowed categories, weights > 0, unique record id);
the others guard what the engine hands from one stage to the next. ``validate`` turns pandera's
failure report into one :class:`SchemaViolation` naming the column, the rule and the first
offending rows.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pandera.pandas as pa

from sdc_dagster.errors import SDCInputError, did_you_mean
from sdc_dagster.spec import SurveySpec


class SchemaViolation(SDCInputError):
    """Data broke schema rules; the message names the data (``source``), then each broken rule
    (``problems``: the column, the rule and offending rows), separated by "; "."""

    def __init__(self, source: str, problems: list[str]):
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = source
        self.problems = list(problems)

    def __reduce__(self):
        return type(self), (self.source, self.problems)


def _numeric() -> pa.Check:
    return pa.Check(
        lambda s: s.isna() | pd.to_numeric(s, errors="coerce").notna(), error="values must be numeric"
    )


def _positive() -> pa.Check:
    # Unparseable text is reported by _numeric and missing weights by not_nullable, not twice here.
    return pa.Check(lambda s: ~(pd.to_numeric(s, errors="coerce") <= 0), error="weights must be > 0")


def _in_categories(categories: list, numeric: bool) -> pa.Check:
    """The spec's ``categories:`` rule: every value is a listed category (a listed category may be
    absent). Numeric categories are compared by number, so a CSV column read as text because of one
    bad cell is reported once, by :func:`_numeric`, not on every row."""
    error = f"categories must be one of {categories}"
    if not numeric:
        return pa.Check.isin(categories, error=error)
    return pa.Check(
        lambda s: (values := pd.to_numeric(s, errors="coerce")).isna() | values.isin(categories), error=error
    )


def _not_entirely_missing() -> pa.Check:
    return pa.Check(lambda s: bool(s.notna().any()), error="not entirely missing")


def microdata_schema(spec: SurveySpec, *, protected: bool = False) -> pa.DataFrameSchema:
    """Schema of one survey wave (``protected``: of a protected variant, where keys may be NA and
    variables may have been removed or recoded).

    Rules of a raw wave: weights numeric, present and > 0; continuous keys numeric; a variable with
    ``categories:`` holds only those (a variable without them may carry any code, e.g. new codes in
    a new wave); every key variable has at least one value after the missing codes are applied (a
    key that is entirely missing cannot be assessed, SPEC §2); the record id is present and unique.
    """
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
            checks = [_numeric()] if v.numeric else []
            checks.append(_in_categories(list(v.categories), v.numeric))
        if v.role in ("categorical_key", "continuous_key") and not protected:
            checks.append(_not_entirely_missing())
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


def validate(
    data: pd.DataFrame,
    schema: pa.DataFrameSchema,
    *,
    source: str = "data",
    max_rows: int = 5,
    original_text: Callable[[], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Validate ``data`` against ``schema``; raise :class:`SchemaViolation` naming column, rule, rows.

    Every broken rule is reported at once (lazy validation): the column, the rule, the first
    ``max_rows`` offending rows (1-based data rows) and their values. ``original_text``, called only
    when validation fails, returns the cells as the file wrote them (same index and columns as
    ``data``); a value the reader turned into a missing one (``"n/a"``, a missing code) is then
    shown with its text, e.g. ``nan (file text 'n/a')``.

    A schema that coerces no dtype leaves the data as it is: pandera checks it in place and returns
    it, instead of checking a copy (on a 1,000,000-record wave 0.1-0.2 CPU s a validation).
    """
    coerces = schema.coerce or any(column.coerce for column in schema.columns.values())
    try:
        return schema.validate(data, lazy=True, inplace=not coerces)
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
        text = original_text() if original_text is not None else None
        lines = []
        for (column, check), group in cases.groupby(["column", "check"], dropna=False, sort=False):
            if check == "column_in_dataframe":
                lines += [f"column {missing!r} named in the spec is missing from the data"
                          + did_you_mean(missing, [c for c in data.columns if c not in schema.columns])
                          for missing in group["failure_case"].tolist()]
                continue
            where = f"column {column!r}" if column is not None and not pd.isna(column) else "the table"
            offending = [
                (index, value)
                for index, value in zip(group["index"].tolist(), group["failure_case"].tolist())
                if index is not None and not pd.isna(index)
            ][:max_rows]
            if not offending:  # a rule on the whole column, e.g. "not entirely missing"
                lines.append(f"{where} breaks rule {check!r}")
                continue
            rows = ", ".join(str(int(i) + 1) if isinstance(i, (int, float)) else str(i) for i, _ in offending)
            values = ", ".join(_shown_value(value, text, index, column) for index, value in offending)
            lines.append(f"{where} breaks rule {check!r}; first offending rows (1-based): {rows}; values: {values}")
        raise SchemaViolation(source, lines) from None


def _shown_value(value, text: pd.DataFrame | None, index, column) -> str:
    """``repr(value)``, with the file's text when the reader made the value missing."""
    shown = repr(value)
    if text is not None and pd.api.types.is_scalar(value) and pd.isna(value) and column in text.columns and index in text.index:
        shown += f" (file text {text.at[index, column]!r})"
    return shown
