"""Data files read with the metadata statistical packages keep beside the values (through
pyreadstat): SPSS and Stata value labels, SPSS measurement levels and user-missing codes, column
labels. The spec draft (:mod:`sdc_dagster.spec.draft`) and the release files read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sdc_dagster.errors import SDCInputError

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

@dataclass(frozen=True)
class FileContents:
    """A data file read with its metadata (empty where the format keeps none)."""

    data: pd.DataFrame
    value_labels: dict
    measures: dict
    user_missing: dict
    format: str
    column_labels: dict = field(default_factory=dict)
    #: column -> role of the spec vocabulary declared by the file's metadata (an Argus ``.rda``'s
    #: ``<RECORDKEY>``, ``<WEIGHT>``, ``<HHID>``, ``<IDLEVEL>``); the draft takes them as given.
    roles: dict[str, str] = field(default_factory=dict)


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
