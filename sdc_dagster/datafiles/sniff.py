"""What a data file is, by its first bytes (its "magic number"), whatever its name says.

An office sends ``survey.csv`` that is an Excel workbook, ``data.xls`` that is an HTML page, a
``.sav`` that is a Stata file: the extension alone would read them with the wrong reader and report
an encoding error. The signatures are the formats' own:

* ZIP (``PK\\x03\\x04``): an Office Open XML workbook holds ``xl/workbook.xml`` (ECMA-376 Part 2);
  an OpenDocument spreadsheet's first entry ``mimetype`` reads
  ``application/vnd.oasis.opendocument.spreadsheet`` (OASIS ODF 1.2, Part 3 §3.3);
* OLE2 compound file (``D0 CF 11 E0 A1 B1 1A E1``, [MS-CFB] §2.2): a legacy ``.xls`` workbook;
* Parquet: ``PAR1`` at both ends (Apache Parquet file format);
* SPSS: ``$FL2`` (``.sav``) or ``$FL3`` (``.zsav``) (the SPSS system file header record);
* Stata: ``<stata_dta>`` (formats 117-119), or the byte of a format 102-115 followed by a byte
  order (1 or 2) and the file type 1 (Stata's ``dta`` documentation);
* SAS: the 32-byte ``sas7bdat`` magic; SAS transport: ``HEADER RECORD*******LIBRARY HEADER RECORD``;
* gzip, PDF, HTML: named, so that the error says what the file is.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

_SAS7BDAT_MAGIC = bytes.fromhex("000000000000000000000000c2ea8160b31411cfbd92080009c7318c181f1011")
_OLE2 = bytes.fromhex("d0cf11e0a1b11ae1")


@dataclass(frozen=True)
class Content:
    """What a file's bytes are: the format it is read as (``None`` when no reader takes it) and the
    words that name it in a message (``an Excel workbook (xlsx)``)."""

    format: str | None
    description: str


def content_of(path: Path) -> Content | None:
    """The :class:`Content` of the file at ``path`` by its first bytes, or ``None`` for anything else
    (text, and every format without a signature, e.g. CSV or an Argus ``.asc``)."""
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(b"PK\x03\x04"):
        return _zip_content(path)
    if head.startswith(_OLE2):
        return Content("spreadsheet", "an Excel 97-2003 workbook (xls)")
    if head.startswith(b"PAR1"):
        return Content("parquet", "a Parquet file")
    if head.startswith((b"$FL2", b"$FL3")):
        return Content("spss", "an SPSS system file (sav)")
    if head.startswith(b"<stata_dta>") or (len(head) >= 4 and 102 <= head[0] <= 115 and head[1] in (1, 2)
                                            and head[2] == 1 and head[3] == 0):
        return Content("stata", "a Stata data file (dta)")
    if head.startswith(_SAS7BDAT_MAGIC):
        return Content("sas", "a SAS data set (sas7bdat)")
    if head.startswith(b"HEADER RECORD*******LIBRARY HEADER RECORD"):
        return Content("xport", "a SAS transport file (xpt)")
    if head.startswith(b"\x1f\x8b"):
        return Content(None, "a gzip archive (unpack it first)")
    if head.startswith(b"%PDF"):
        return Content(None, "a PDF document, not a data file")
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html", b"<table")):
        return Content(None, "an HTML page (a table saved under a spreadsheet's name); open it in a "
                             "spreadsheet program and save it as .xlsx or CSV")
    return None


def _zip_content(path: Path) -> Content:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            mimetype = archive.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
    except (zipfile.BadZipFile, OSError, KeyError):
        return Content(None, "a damaged ZIP archive")
    if "xl/workbook.xml" in names or "xl/workbook.bin" in names:
        return Content("spreadsheet", "an Excel workbook (xlsx)")
    if mimetype == "application/vnd.oasis.opendocument.spreadsheet":
        return Content("spreadsheet", "an OpenDocument spreadsheet (ods)")
    return Content(None, "a ZIP archive (unpack it first)")
