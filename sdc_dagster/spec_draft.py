"""Draft a survey spec from a data file: the starting point of a methodologist's own survey.

``sdc init SURVEY --from FILE`` calls :func:`draft_spec`. It reads the file once, with the
metadata statistical packages keep beside the values (through pyreadstat): SPSS and Stata value
labels become the category list (with the labels as comments), SPSS measurement levels (nominal,
ordinal, scale) become scales, SPSS user-missing codes become the variable's missing codes. Every
column gets a guessed role, and every guess says why in a comment, because a guess is only a
proposal: the methodologist decides which variables an intruder could know (SPEC §1.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from sdc_dagster.errors import SDCInputError
from sdc_dagster.names import check_name

# File types a draft can be made from, with the pyreadstat reader of each statistical format.
_READERS = {
    ".sav": "read_sav",
    ".zsav": "read_sav",
    ".dta": "read_dta",
    ".sas7bdat": "read_sas7bdat",
    ".xpt": "read_xport",
}
_FORMAT_NAMES = {".csv": "csv", ".parquet": "parquet", ".sav": "spss", ".zsav": "spss", ".dta": "stata",
                 ".sas7bdat": "sas", ".xpt": "xport"}

# Column names that usually mean a role, whatever the language of the survey (en, pl, es).
_IDENTIFIER_NAME = re.compile(r"(^|_)(id|ident|name|surname|nombre|apellido|nazwisko|imie|address|direccion|"
                              r"adres|phone|telefono|telefon|email|pesel|nif|dni|nie|ssn|passport)($|_)", re.I)
_WEIGHT_NAME = re.compile(r"weight|wgt|wght|^w$|^wt|peso|ponder|waga|factor", re.I)
_HOUSEHOLD_NAME = re.compile(r"hid|household|(^|_)hh|hogar|vivienda|gospodarstw|(^|_)gd($|_)", re.I)
_SENSITIVE_NAME = re.compile(r"health|disease|illness|religio|ethnic|crime|salud|enfermedad|zdrowie|choroba|"
                             r"civil|marital", re.I)

#: At most this many distinct values make a numeric column without labels a categorical variable.
MAX_CATEGORIES = 20
#: A household number has records of at most this many persons on average.
MAX_HOUSEHOLD_SIZE = 20
#: A column whose values are unique on more than this share of records identifies them on its own.
IDENTIFIER_SHARE = 0.95


@dataclass(frozen=True)
class DraftedVariable:
    """One column of the draft: its guessed role and scale, and why."""

    name: str
    role: str
    reason: str
    scale: str | None = None
    categories: tuple | None = None
    category_labels: dict | None = None
    missing: tuple = ()


@dataclass(frozen=True)
class FileContents:
    """A data file read with its metadata (empty where the format keeps none)."""

    data: pd.DataFrame
    value_labels: dict
    measures: dict
    user_missing: dict
    format: str
    column_labels: dict = field(default_factory=dict)


def read_with_metadata(path: Path) -> FileContents:
    """Values and metadata of a CSV, Parquet, SPSS, Stata, SAS or SAS transport file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in _FORMAT_NAMES:
        raise SDCInputError(f"{path.name}: cannot draft a spec from a {suffix or 'extension-less'} file; "
                            f"expected one of {sorted(_FORMAT_NAMES)}")
    fmt = _FORMAT_NAMES[suffix]
    try:
        if suffix == ".csv":
            return FileContents(pd.read_csv(path), {}, {}, {}, fmt)
        if suffix == ".parquet":
            return FileContents(pd.read_parquet(path), {}, {}, {}, fmt)
        import pyreadstat

        reader = getattr(pyreadstat, _READERS[suffix])
        # user_missing keeps SPSS user-missing codes as values, so the draft can list them
        options = {"user_missing": True} if suffix in (".sav", ".zsav", ".dta", ".sas7bdat") else {}
        data, meta = reader(str(path), **options)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
    except Exception as exc:  # pyreadstat's own error classes for corrupt files
        if type(exc).__module__.startswith("pyreadstat"):
            raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
        raise
    user_missing = {}
    for column, ranges in (getattr(meta, "missing_ranges", None) or {}).items():
        codes = [r["lo"] for r in ranges if r["lo"] == r["hi"]]
        if codes:
            user_missing[column] = tuple(codes)
    measures = {c: m for c, m in (getattr(meta, "variable_measure", None) or {}).items() if m != "unknown"}
    column_labels = {c: label for c, label in zip(meta.column_names, meta.column_labels or ()) if label}
    return FileContents(data, dict(meta.variable_value_labels or {}), measures, user_missing, fmt, column_labels)


def _plain(value):
    """A YAML-friendly Python scalar (integers stay integers)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() else float(value)
    return value


def _whole_numbers(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and bool(np.all(np.mod(values.dropna().to_numpy(float), 1) == 0))


def guess_variable(name: str, values: pd.Series, *, labels: dict | None = None, measure: str | None = None,
                   missing: tuple = ()) -> DraftedVariable:
    """The role (SPEC §1.1) and scale (§1.2) a column most likely has, with the reason.

    Rules, first match wins: named like an identifier or text unique per record -> direct
    identifier; named like a weight and positive -> weight; named like a household number and
    repeated (households of a plausible size) -> household id; consecutive whole numbers, one per
    record -> record id; labelled, measured nominal/ordinal or with at most
    :data:`MAX_CATEGORIES` whole-number codes (or text) -> categorical key (sensitive when named like
    health, religion, ethnicity, crime or marital status); other numbers -> continuous key.
    """
    observed = values[~values.isin(missing)].dropna() if missing else values.dropna()
    n = len(values)
    counts = observed.value_counts()
    unique_share = float((counts == 1).sum() / n) if n else 0.0
    numeric = pd.api.types.is_numeric_dtype(values)
    if _IDENTIFIER_NAME.search(name) and unique_share > IDENTIFIER_SHARE / 2:
        return DraftedVariable(name, "direct_identifier",
                               f"named like an identifier and unique on {unique_share:.0%} of records; it is "
                               "removed before release")
    if not numeric and unique_share > IDENTIFIER_SHARE:
        return DraftedVariable(name, "direct_identifier",
                               f"text unique on {unique_share:.0%} of records: it identifies them on its own")
    if _WEIGHT_NAME.search(name) and numeric and len(observed) and (observed > 0).all():
        return DraftedVariable(name, "weight", "named like a weight, every value positive")
    if (_HOUSEHOLD_NAME.search(name) and _whole_numbers(values)
            and len(observed) / MAX_HOUSEHOLD_SIZE <= len(counts) < len(observed)):
        return DraftedVariable(name, "household_id",
                               f"named like a household number; {len(counts)} households for {len(observed)} records")
    if (numeric and _whole_numbers(values) and unique_share > IDENTIFIER_SHARE and not labels
            and observed.max() - observed.min() + 1 == len(counts)):
        return DraftedVariable(name, "record_id",
                               "consecutive whole numbers, one per record: a record number")
    categorical = bool(labels) or measure in ("nominal", "ordinal") or not numeric or (
        _whole_numbers(values) and len(counts) <= MAX_CATEGORIES)
    if categorical:
        codes = sorted({_plain(v) for v in observed.unique()} | {_plain(v) for v in (labels or {})}, key=str)
        if all(isinstance(c, (int, float)) for c in codes):
            codes = sorted(codes)
        scale = "ordinal" if measure == "ordinal" else "nominal"
        why = ("value labels" if labels else f"measured {measure}" if measure in ("nominal", "ordinal")
               else "text values" if not numeric else f"{len(counts)} distinct codes")
        if _SENSITIVE_NAME.search(name):
            return DraftedVariable(name, "sensitive", f"{why}; named like a sensitive attribute (l-diversity target)",
                                   scale, tuple(codes), labels or None, missing)
        return DraftedVariable(name, "categorical_key",
                               f"{why}: a categorical quasi-identifier an intruder may know; set role: other if not",
                               scale, tuple(codes), labels or None, missing)
    why = f"measured {measure}" if measure == "scale" else f"{len(counts)} distinct numeric values"
    return DraftedVariable(name, "continuous_key",
                           f"{why}: a continuous quasi-identifier; set role: other if an intruder cannot know it",
                           "continuous", missing=missing)


# Roles a spec gives to one column at most.
_SINGLE_ROLES = ("weight", "household_id", "record_id")


def _one_of_each(drafted: list[DraftedVariable]) -> list[DraftedVariable]:
    """The first guess of each single-column role stands; later ones become ``other``, saying so."""
    first: dict[str, str] = {}
    out = []
    for v in drafted:
        if v.role in _SINGLE_ROLES:
            if v.role in first:
                v = DraftedVariable(v.name, "other", f"looks like a {v.role} too, but {first[v.role]!r} was taken "
                                    f"as the survey's {v.role}; swap them if this one is right", "continuous")
            else:
                first[v.role] = v.name
        out.append(v)
    return out


def column_type(values: pd.Series) -> str:
    """The type of a column as the draft states it: integer, number, text, date or boolean."""
    if pd.api.types.is_bool_dtype(values):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(values):
        return "date"
    if pd.api.types.is_numeric_dtype(values):
        return "integer" if _whole_numbers(values) else "number"
    return "text"


def _flow(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10_000).strip()
    return text.removesuffix("...").strip()  # a scalar is dumped as a document with an end marker


def draft_spec(path: str | Path, survey: str) -> str:
    """A commented YAML survey spec for the data file ``path``, accepted by ``sdc check``.

    Parameters
    ----------
    path : a ``.csv``, ``.parquet``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat`` or ``.xpt`` file.
    survey : the survey's name (a letter, then letters, digits or ``_``).

    Returns
    -------
    The spec text: every column with its type (and SPSS/Stata variable label) and its guessed role
    with a comment giving the reason, value labels as commented categories, SPSS user-missing codes as ``missing:``, the risk parameters of
    SPEC §12 and one protection plan (local suppression to 3-anonymity) to start from.
    """
    path = Path(path)
    check_name("survey name", survey)
    contents = read_with_metadata(path)
    drafted = [
        guess_variable(str(c), contents.data[c], labels=contents.value_labels.get(c),
                       measure=contents.measures.get(c), missing=contents.user_missing.get(c, ()))
        for c in contents.data.columns
    ]
    drafted = _one_of_each(drafted)
    lines = [
        f"# Survey spec drafted by `sdc init` from {path.name} ({len(contents.data)} records,",
        f"# {contents.data.shape[1]} columns). Every role below is a GUESS with its reason: check each one,",
        "# above all which variables an intruder could know (the keys), then run `sdc check` on this file.",
        f"survey: {survey}",
        f"title: {_flow(path.stem)}",
        "source:",
        f"  path: {_flow(str(path.resolve()))}",
        f"  format: {contents.format}",
        "variables:",
    ]
    for v in drafted:
        entry = {"role": v.role}
        if v.scale is not None:
            entry["scale"] = v.scale
        if v.categories is not None:
            entry["order" if v.scale == "ordinal" else "categories"] = list(v.categories)
        if v.missing:
            entry["missing"] = [_plain(m) for m in v.missing]
        if v.role == "continuous_key":
            entry["precision"] = 0.01
        lines.append(f"  {_flow(v.name)}: {_flow(entry)}")
        label = contents.column_labels.get(v.name)
        lines.append(f"    # type: {column_type(contents.data[v.name])}" + (f"; label: {label}" if label else ""))
        lines.append(f"    # guess: {v.reason}")
        if v.category_labels:
            shown = ", ".join(f"{_plain(code)} = {label}" for code, label in v.category_labels.items())
            lines.append(f"    # labels: {shown}")
    keys = [v.name for v in drafted if v.role == "categorical_key"]
    lines += [
        "risk:",
        "  k: 3                          # k-anonymity threshold (SPEC §3.3)",
        "  l: 2                          # l-diversity of sensitive variables (SPEC §3.6)",
        "  max_global_risk: 0.01         # expected share of re-identified records allowed (SPEC §3.4)",
        "  individual_risk_threshold: 0.05",
        "plans:",
        "  suppress_k3:",
        "    description: local suppression of the categorical keys to 3-anonymity (a plan to start from)",
        "    k: 3",
        "    steps:",
        "      - {method: local_suppression, k: 3}",
    ]
    if not keys:
        lines.insert(3, "# No column looked like a categorical key: give at least one the role categorical_key.")
    return "\n".join(lines) + "\n"
