"""Reading survey wave files: CSV (in its detected dialect), Parquet, SPSS, Stata, SAS, SAS
transport, Excel and OpenDocument workbooks, Argus data with their ``.rda`` (through the one reading
path, :func:`sdc_dagster.spec.reading.read_with_metadata`).

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
from sdc_dagster.names import check_name
from sdc_dagster.numerics.kept import KeptResults
from sdc_dagster.spec.schemas import microdata_schema, validate
from sdc_dagster.datafiles.dialect import read_text_cells
from sdc_dagster.spec import FORMATS, SurveySpec
from sdc_dagster.spec.reading import file_format, read_with_metadata
from sdc_dagster.validation import check_records_for_k


def locate_wave_file(spec: SurveySpec, wave: str, landing: Path) -> Path:
    """The file holding wave ``wave`` of the survey: the landing folder first, then ``source.path``.
    An unsafe wave id (:func:`~sdc_dagster.names.check_name`) is refused before any file is looked at."""
    check_name("wave id", wave)
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


def source_metadata(spec: SurveySpec) -> Path | None:
    """The spec's ``source.metadata`` (an Argus ``.rda``), relative to the spec's folder; None when
    the spec names none."""
    if not spec.source.metadata:
        return None
    base = spec.spec_path.parent if spec.spec_path else Path.cwd()
    return (base / spec.source.metadata).resolve()


def read_survey_file(path: Path, *, default_format: str | None = None, options: dict | None = None,
                     metadata: str | Path | None = None) -> pd.DataFrame:
    """Read one wave file by its format (:func:`~sdc_dagster.spec.reading.file_format`: the extension,
    or the content when that says otherwise; ``default_format`` for a file without an extension)
    through the one reading path (:func:`~sdc_dagster.spec.reading.read_with_metadata`),
    user-missing codes as missing; an unreadable or empty file raises SDCInputError naming the file
    and the format it was read as."""
    return read_with_metadata(path, options=options, default_format=default_format, metadata=metadata,
                              user_missing=False).data


def value_labels(path: Path, *, default_format: str | None = None, metadata: str | Path | None = None) -> dict[str, dict]:
    """The value labels of a wave file, ``{column: {code: label}}`` (SPSS and Stata keep them, read
    from the file's metadata only; Argus data have them in the code lists their ``.rda`` names;
    empty for CSV, Parquet, workbooks and SAS files). For display: the data keep their codes. An
    unreadable file raises SDCInputError naming it."""
    path = Path(path)
    fmt = file_format(path, default=default_format, metadata=metadata)
    if fmt == "argus":
        return read_with_metadata(path, default_format=fmt, metadata=metadata).value_labels
    if fmt not in ("spss", "stata"):
        return {}
    import pyreadstat

    reader = pyreadstat.read_sav if fmt == "spss" else pyreadstat.read_dta
    try:
        _, meta = reader(str(path), metadataonly=True)
    except Exception as exc:  # pyreadstat raises its own error classes for corrupt files
        if isinstance(exc, (OSError, ValueError, UnicodeDecodeError)) or type(exc).__module__.startswith("pyreadstat"):
            raise SDCInputError(f"{path.name}: cannot read its value labels as {fmt} ({exc})") from exc
        raise
    return {column: dict(labels) for column, labels in (meta.variable_value_labels or {}).items() if labels}


def read_csv_text(path: Path, *, options: dict | None = None) -> pd.DataFrame:
    """The cells of a CSV wave exactly as written (strings, nothing made missing), rows as
    :func:`read_survey_file` numbers them (the same dialect); used to name the original text in
    error messages."""
    return read_text_cells(path, options)


def apply_missing_codes(data: pd.DataFrame, spec: SurveySpec) -> pd.DataFrame:
    """A copy of ``data`` in which each variable's missing-value codes are NA (a text column, e.g.
    one with an unparseable cell, also matches the codes' text: ``"-999"``)."""
    out = data.copy()
    for v in spec.variables:
        if v.missing_codes and v.name in out.columns:
            col = out[v.name]
            mask = col.isin(list(v.missing_codes))
            if col.dtype == object:
                mask |= col.astype(str).str.strip().isin([str(code) for code in v.missing_codes])
            if mask.any():
                out[v.name] = col.mask(mask, np.nan if pd.api.types.is_float_dtype(col) else pd.NA)
    return out


def spec_column_order(data: pd.DataFrame, spec: SurveySpec) -> pd.DataFrame:
    """``data`` with the spec's variables first, in spec order, then the other columns by name, so that
    a wave gives the same frame (and byte-identical outputs) whatever its file's column order."""
    declared = [v.name for v in spec.variables if v.name in data.columns]
    known = set(declared)
    others = sorted((c for c in data.columns if c not in known), key=str)
    return data[declared + others]


def numbers_from_text(data: pd.DataFrame, spec: SurveySpec) -> pd.DataFrame:
    """Variables that must be numeric (:attr:`~sdc_dagster.spec.Variable.numeric`) but were read as
    text (e.g. a Parquet or SPSS string column holding ``"3"``) as numbers; call after validation,
    which guarantees every value parses."""
    text = [v.name for v in spec.variables if v.numeric and v.name in data.columns and data[v.name].dtype == object]
    if not text:
        return data
    return data.assign(**{name: pd.to_numeric(data[name]) for name in text})


@dataclass(frozen=True)
class Wave:
    """One validated survey wave and where it came from."""

    data: pd.DataFrame
    path: Path
    sha256: str
    format: str = ""


#: The wave file ``sdc run`` read and validated before landing it, for the ingest stage of the same
#: run (:func:`read_wave_file`'s ``keep``): by the file's SHA-256, the spec and the reader options.
_LANDED = KeptResults(1)


def read_wave_file(spec: SurveySpec, path: Path, *, source: str | None = None,
                   options: dict | None = None, keep: bool = False, sha256: str | None = None) -> pd.DataFrame:
    """Read one wave file by its extension, missing codes as NA, validated by the spec's schema
    (SchemaViolation names the column, the rule, the first offending rows and, for a CSV, the text
    of values that were read as missing), numeric variables as numbers, columns in spec order. A
    file of fewer records than the spec's k is refused (:func:`~sdc_dagster.validation.check_records_for_k`).

    The spec's ``source.options`` are reader options for its ``source.format``: they apply to files
    of that format (to every file when the spec names no format); ``options`` (the command line's
    ``--sep`` ...) override them. The spec's ``source.metadata`` is the Argus ``.rda`` of the files.

    ``keep``: the frame is kept for the next read of a file of the same content (SHA-256; ``sha256``
    when the caller has it) with the same spec and options, which takes it instead of reading and
    validating the file again: ``sdc run`` reads the file it lands, and its ingest stage reads the
    landed copy (on 1,000,000 records 1.5-1.9 CPU s a read). Only one frame is kept, and only until
    it is taken.
    """
    path = Path(path)
    metadata = source_metadata(spec)
    fmt = file_format(path, default=spec.source.format, metadata=metadata)
    options = {**(dict(spec.source.options) if spec.source.format in (None, fmt) else {}), **(options or {})}
    landed = None
    if keep or len(_LANDED):
        landed = (sha256 or file_sha256(path), spec.spec_hash or repr(spec), fmt, repr(sorted(options.items())),
                  str(metadata))
        kept = _LANDED.take(landed)
        if kept is not None:
            return kept
    contents = read_with_metadata(path, options=options, default_format=fmt, metadata=metadata, user_missing=False)
    data = apply_missing_codes(contents.data, spec)
    where = source or f"{spec.survey} ({path.name}, {fmt})"
    validate(
        data,
        microdata_schema(spec),
        source=where,
        original_text=(lambda: read_csv_text(path, options=contents.source_options)) if fmt == "csv" else None,
    )
    check_records_for_k(len(data), spec.risk.k, source=where)
    data = spec_column_order(numbers_from_text(data, spec), spec)
    if keep:
        _LANDED.put(landed, data)
    return data


def read_wave(spec: SurveySpec, wave: str, landing: Path) -> Wave:
    """Locate, read and validate a wave (missing-value codes become NA); the file is not modified."""
    path = locate_wave_file(spec, wave, landing)
    fmt = file_format(path, default=spec.source.format, metadata=source_metadata(spec))
    sha256 = file_sha256(path)
    data = read_wave_file(spec, path, source=f"{spec.survey} wave {wave} ({path.name}, {fmt})", sha256=sha256)
    return Wave(data=data, path=path, sha256=sha256, format=fmt)
