"""Reading survey wave files: CSV, Parquet, SPSS, Stata and SAS (the last three through pyreadstat).

A wave of survey S is the file ``<landing>/<S>/<wave>.<ext>``; when there is none, the spec's
``source.path`` (which may contain ``{wave}``) names it. The file on disk is never modified.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.schemas import microdata_schema, validate
from sdc_dagster.spec import FORMATS, SurveySpec


def locate_wave_file(spec: SurveySpec, wave: str, landing: Path) -> Path:
    """The file holding wave ``wave`` of the survey: the landing folder first, then ``source.path``."""
    folder = Path(landing) / spec.survey
    found = [folder / f"{wave}{ext}" for ext in FORMATS if (folder / f"{wave}{ext}").is_file()]
    if len(found) > 1:
        raise SDCInputError(f"wave {wave!r} of survey {spec.survey!r}: two files for one wave ({', '.join(p.name for p in found)})")
    if found:
        return found[0]
    if spec.source.path:
        base = spec.spec_path.parent if spec.spec_path else Path.cwd()
        candidate = (base / spec.source.path.format(wave=wave)).resolve()
        if candidate.is_file():
            return candidate
    raise SDCInputError(
        f"wave {wave!r} of survey {spec.survey!r}: no file {folder}/{wave}.<{'|'.join(e[1:] for e in FORMATS)}>"
        + (f" and source.path {spec.source.path!r} does not exist" if spec.source.path else "")
    )


def file_sha256(path: Path) -> str:
    """Content hash of a file (the data version of a raw input)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_survey_file(path: Path, *, format: str | None = None, options: dict | None = None) -> pd.DataFrame:
    """Read one wave file into a DataFrame; an unreadable or empty file raises SDCInputError."""
    path = Path(path)
    fmt = format or FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SDCInputError(f"{path.name}: unknown file type {path.suffix!r}; expected one of {sorted(FORMATS)}")
    options = dict(options or {})
    try:
        if fmt == "csv":
            data = pd.read_csv(path, **options)
        elif fmt == "parquet":
            data = pd.read_parquet(path, **options)
        else:
            import pyreadstat

            reader = {"spss": pyreadstat.read_sav, "stata": pyreadstat.read_dta, "sas": pyreadstat.read_sas7bdat}[fmt]
            data, _meta = reader(str(path), **options)
    except pd.errors.EmptyDataError as exc:
        raise SDCInputError(f"{path.name}: the file is empty") from exc
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
    except Exception as exc:  # pyreadstat raises its own error classes for corrupt files
        if type(exc).__module__.startswith("pyreadstat"):
            raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
        raise
    if data.shape[0] == 0:
        raise SDCInputError(f"{path.name}: the file holds no records")
    return data


def apply_missing_codes(data: pd.DataFrame, spec: SurveySpec) -> pd.DataFrame:
    """A copy of ``data`` in which each variable's missing-value codes are NA."""
    out = data.copy()
    for v in spec.variables:
        if v.missing_codes and v.name in out.columns:
            col = out[v.name]
            mask = col.isin(list(v.missing_codes))
            if mask.any():
                out[v.name] = col.mask(mask, np.nan if pd.api.types.is_float_dtype(col) else pd.NA)
    return out


@dataclass(frozen=True)
class Wave:
    """One validated survey wave and where it came from."""

    data: pd.DataFrame
    path: Path
    sha256: str


def read_wave_file(spec: SurveySpec, path: Path, *, source: str | None = None) -> pd.DataFrame:
    """Read one wave file with the spec's reader options, missing codes as NA, validated by the
    spec's schema (SchemaViolation names the column, the rule and the first offending rows)."""
    data = read_survey_file(path, format=spec.source.format, options=dict(spec.source.options))
    data = apply_missing_codes(data, spec)
    validate(data, microdata_schema(spec), source=source or f"{spec.survey} ({Path(path).name})")
    return data


def read_wave(spec: SurveySpec, wave: str, landing: Path) -> Wave:
    """Locate, read and validate a wave (missing-value codes become NA); the file is not modified."""
    path = locate_wave_file(spec, wave, landing)
    data = read_wave_file(spec, path, source=f"{spec.survey} wave {wave} ({path.name})")
    return Wave(data=data, path=path, sha256=file_sha256(path))
