"""Data files read with what they say about themselves: the one reading path of ``sdc init`` (the
draft), ``sdc check --data`` and the wave ingest.

* The format comes from the extension (:data:`~sdc_dagster.spec.FORMATS`) unless the bytes say
  otherwise (:mod:`sdc_dagster.datafiles.sniff`): an Excel workbook named ``.csv`` is read as a
  workbook, a CSV named ``.xls`` as CSV, a PDF named ``.csv`` is refused naming what it is. A text
  file with an Argus ``.rda`` of the same name beside it (or the spec's ``source.metadata``) is
  read as the ``.rda`` describes it.
* CSV files in their detected dialect (:mod:`sdc_dagster.datafiles.dialect`: separator, quoting,
  header row, decimal comma, encoding); workbooks through calamine
  (:mod:`sdc_dagster.datafiles.spreadsheets`); Argus ``.asc``/``.rda``/``.cdl``
  (:mod:`sdc_dagster.datafiles.argus`); Parquet through pyarrow; SPSS, Stata, SAS and SAS
  transport through pyreadstat, with their value labels, SPSS measurement levels and user-missing
  codes, column labels.

The reader options (``source.options``) that read the file again are returned with what was
detected, so that the draft writes them into the spec and says what it found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sdc_dagster.datafiles.argus import read_argus, resolve_beside
from sdc_dagster.datafiles.dialect import read_csv
from sdc_dagster.datafiles.sniff import content_of
from sdc_dagster.datafiles.spreadsheets import read_spreadsheet
from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec.survey import FORMATS

# The pyreadstat reader of each statistical format.
_READERS = {"spss": "read_sav", "stata": "read_dta", "sas": "read_sas7bdat", "xport": "read_xport"}
# Extensions of text data that an Argus .rda beside them (or the spec's source.metadata) describes.
_ARGUS_TEXT = (".asc", ".csv", ".txt", ".dat")
_BINARY = ("parquet", "spss", "stata", "sas", "xport", "spreadsheet")


@dataclass(frozen=True)
class FileContents:
    """A data file read with its metadata (empty where the format keeps none).

    ``roles``: the spec role a column's metadata declare (Argus ``<WEIGHT>``, ``<IDLEVEL>`` ...;
    :mod:`sdc_dagster.datafiles.argus`), which the draft takes as given. ``hierarchies``: column ->
    path of the hierarchy file the metadata name (an Argus ``.hrc``). ``notes``: what was detected
    (the dialect, the sheet, the real format of a misnamed file), in words. ``source_options``: the
    ``source.options`` that read the file as it was read. ``metadata_path``: the Argus ``.rda``
    read with it.
    """

    data: pd.DataFrame
    value_labels: dict
    measures: dict
    user_missing: dict
    format: str
    column_labels: dict = field(default_factory=dict)
    #: column -> role of the spec vocabulary declared by the file's metadata (an Argus ``.rda``'s
    #: ``<RECORDKEY>``, ``<WEIGHT>``, ``<HHID>``, ``<IDLEVEL>``); the draft takes them as given.
    roles: dict[str, str] = field(default_factory=dict)
    hierarchies: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    source_options: dict = field(default_factory=dict)
    metadata_path: str | None = None


def argus_metadata(path: Path, metadata: str | Path | None = None) -> Path | None:
    """The Argus ``.rda`` that describes the data file ``path``: ``metadata`` when given (an error
    when it does not exist), else an ``.rda`` of the same name beside it (whatever the case of its
    letters) that is Argus text, not an R workspace; None when there is none."""
    path = Path(path)
    if metadata is not None:
        found = Path(metadata)
        if not found.is_file():
            raise SDCInputError(f"{path.name}: its Argus metadata {found} (source.metadata) does not exist")
        return found
    if path.suffix.lower() not in _ARGUS_TEXT:
        return None
    found = resolve_beside(path.parent, f"{path.stem}.rda")
    if found is None:
        return None
    with open(found, "rb") as fh:
        head = fh.read(4)
    return None if head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zX", b"RDX", b"RDA")) else found


def describe_format(path: Path, *, default: str | None = None, metadata: str | Path | None = None) -> tuple[str, str | None]:
    """The format a data file is read as and, when its bytes contradict its name, the sentence that
    says so (``survey.csv is an Excel workbook (xlsx); read as a workbook``). A file that no reader
    takes (a PDF, an archive) or of an unknown type raises SDCInputError naming what it is."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not suffix and default is not None:
        fmt = default
    elif suffix == ".rda":
        raise SDCInputError(f"{path.name} is Argus metadata (or an R workspace), not data: give the data file "
                            f"it describes ({path.stem}.asc or {path.stem}.csv), which is read with it")
    elif suffix not in FORMATS:
        raise SDCInputError(
            f"{path.name}: unknown file type {suffix or '(no extension)'!r}; expected one of {sorted(FORMATS)}"
            + ("" if suffix else " or a source.format in the spec")
        )
    else:
        fmt = FORMATS[suffix]
    if not path.is_file():
        return fmt, None
    content = content_of(path)
    if content is not None and content.format != fmt:
        if content.format is None:
            raise SDCInputError(f"{path.name} is {content.description}; expected {_expected(fmt)}")
        return content.format, f"{path.name} is {content.description}, whatever its name says; read as such"
    if content is None and fmt in _BINARY:
        with open(path, "rb") as fh:
            head = fh.read(8192)
        if head and b"\x00" not in head:
            if fmt == "spreadsheet":  # a CSV export named .xls, as many web applications write them
                return "csv", f"{path.name} is a text file, not {_expected(fmt)}; read as CSV"
            raise SDCInputError(f"{path.name}: cannot be read as {fmt}: it is a text file, not {_expected(fmt)}"
                                " (if it is CSV, name it .csv)")
    if fmt in ("csv", "argus") and argus_metadata(path, metadata) is not None:
        return "argus", None
    return fmt, None


def _expected(fmt: str) -> str:
    return {"csv": "CSV text", "parquet": "a Parquet file", "spss": "an SPSS file", "stata": "a Stata file",
            "sas": "a SAS data set", "xport": "a SAS transport file", "spreadsheet": "a workbook",
            "argus": "Argus data described by an .rda file"}.get(fmt, fmt)


def file_format(path: Path, *, default: str | None = None, metadata: str | Path | None = None) -> str:
    """The format a data file is read as (:func:`describe_format`)."""
    return describe_format(path, default=default, metadata=metadata)[0]


def read_with_metadata(path: Path, *, options: Mapping | None = None, default_format: str | None = None,
                       metadata: str | Path | None = None, user_missing: bool = True) -> FileContents:
    """Values and metadata of a data file (see the module docstring).

    Parameters
    ----------
    path : a ``.csv``, ``.parquet``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``,
        ``.xlsx``, ``.xlsm``, ``.xls``, ``.ods`` or ``.asc`` file (by its content when that differs).
    options : reader options (a spec's ``source.options``): the CSV dialect's ``sep``, ``encoding``,
        ``decimal``, ``header``, ``quotechar``; a workbook's ``sheet`` and ``header``; other keys
        are passed on to pandas or pyreadstat.
    default_format : the format of a file without an extension (a spec's ``source.format``).
    metadata : the Argus ``.rda`` of the file (default: the one beside it).
    user_missing : keep SPSS/Stata user-missing codes as values (the draft lists them) rather than
        reading them as missing.

    Returns
    -------
    :class:`FileContents`. Every failure is an SDCInputError naming the file and what was expected.
    """
    path = Path(path)
    fmt, misnamed = describe_format(path, default=default_format, metadata=metadata)
    if not path.is_file():
        raise SDCInputError(f"{path}: no such file")
    options = dict(options or {})
    notes = (misnamed,) if misnamed else ()
    try:
        contents = _read(path, fmt, options, metadata, user_missing)
    except pd.errors.EmptyDataError as exc:
        raise SDCInputError(f"{path.name}: the file is empty (read as {fmt})") from exc
    except UnicodeDecodeError as exc:
        raise SDCInputError(
            f"{path.name}: cannot be read as {fmt} ({exc}); if it is {fmt} in another encoding, "
            "set source.options.encoding in the spec"
        ) from exc
    except (OSError, ValueError, TypeError, LookupError, pd.errors.ParserError) as exc:
        if isinstance(exc, SDCInputError):
            raise
        raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
    except Exception as exc:  # pyreadstat raises its own error classes for corrupt files
        if type(exc).__module__.startswith("pyreadstat"):
            raise SDCInputError(f"{path.name}: cannot be read as {fmt} ({exc})") from exc
        raise
    if contents.data.shape[0] == 0:
        raise SDCInputError(f"{path.name}: the file holds no records (read as {fmt})")
    return replace(contents, notes=notes + contents.notes)


def _read(path: Path, fmt: str, options: dict, metadata, user_missing: bool) -> FileContents:
    if fmt == "csv":
        data, dialect = read_csv(path, options)
        return FileContents(data, {}, {}, {}, fmt, notes=dialect.notes,
                            source_options={**dialect.options(), **options})
    if fmt == "spreadsheet":
        data, notes, used = read_spreadsheet(path, options)
        return FileContents(data, {}, {}, {}, fmt, notes=notes, source_options={**options, **used})
    if fmt == "argus":
        rda = argus_metadata(path, metadata)
        if rda is None:
            raise SDCInputError(f"{path.name}: Argus data need their .rda metadata: there is no "
                                f"{path.stem}.rda beside it and no source.metadata in the spec")
        argus = read_argus(path, rda)
        return FileContents(argus.data, argus.value_labels, argus.measures, argus.user_missing, fmt,
                            roles=argus.roles, hierarchies=argus.hierarchies, notes=argus.notes,
                            metadata_path=str(rda.resolve()))
    if fmt == "parquet":
        return FileContents(pd.read_parquet(path, **options), {}, {}, {}, fmt, source_options=options)
    import pyreadstat

    reader = getattr(pyreadstat, _READERS[fmt])
    # user_missing keeps SPSS user-missing codes as values, so the draft can list them
    extra = {"user_missing": True} if user_missing and fmt in ("spss", "stata", "sas") else {}
    data, meta = reader(str(path), **{**extra, **options})
    missing = {}
    for column, ranges in (getattr(meta, "missing_ranges", None) or {}).items():
        codes = [r["lo"] for r in ranges if r["lo"] == r["hi"]]
        if codes:
            missing[column] = tuple(codes)
    measures = {c: m for c, m in (getattr(meta, "variable_measure", None) or {}).items() if m != "unknown"}
    column_labels = {c: label for c, label in zip(meta.column_names, meta.column_labels or ()) if label}
    return FileContents(data, dict(meta.variable_value_labels or {}), measures, missing, fmt, column_labels,
                        source_options=options)
