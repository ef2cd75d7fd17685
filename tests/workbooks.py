"""Tiny Excel (.xlsx) and OpenDocument (.ods) workbooks written by hand with ``zipfile``, for the
tests of the workbook reader (the project reads workbooks, it never writes them, so no writer
library is a dependency). Only the parts every reader needs: ECMA-376 Part 1 §12 (the package, the
workbook, one worksheet part per sheet, inline strings) and OASIS ODF 1.2 (mimetype, manifest,
content.xml with one table per sheet).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"


def _column(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _xlsx_cell(ref: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<c r="{ref}"><v>{value}</v></c>'
    return f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(value))}</t></is></c>'


def write_xlsx(path: Path, sheets: dict[str, list[list]]) -> Path:
    """An .xlsx file with one worksheet per entry of ``sheets`` (rows of numbers, text or None)."""
    names = list(sheets)
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, len(names) + 1))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml",
                   '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                   '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/>'
                   '<Override PartName="/xl/workbook.xml" '
                   'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
                   f"{overrides}</Types>")
        z.writestr("_rels/.rels", f'<Relationships xmlns="{_PKG}"><Relationship Id="rId1" '
                                  f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><sheets>' + "".join(
            f'<sheet name="{escape(name)}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(names, 1))
            + "</sheets></workbook>")
        z.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{_PKG}">' + "".join(
            f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(names) + 1)) + "</Relationships>")
        for i, name in enumerate(names, 1):
            rows = "".join(
                f'<row r="{r}">' + "".join(_xlsx_cell(f"{_column(c)}{r}", v) for c, v in enumerate(row)) + "</row>"
                for r, row in enumerate(sheets[name], 1))
            z.writestr(f"xl/worksheets/sheet{i}.xml", f'<worksheet xmlns="{_MAIN}"><sheetData>{rows}</sheetData></worksheet>')
    return path


def _ods_cell(value) -> str:
    if value is None:
        return "<table:table-cell/>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<table:table-cell office:value-type="float" office:value="{value}"><text:p>{value}</text:p></table:table-cell>'
    return f'<table:table-cell office:value-type="string"><text:p>{escape(str(value))}</text:p></table:table-cell>'


def write_ods(path: Path, sheets: dict[str, list[list]]) -> Path:
    """An .ods file with one table per entry of ``sheets``."""
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
    tables = "".join(
        f'<table:table table:name="{escape(name)}">' + "".join(
            "<table:table-row>" + "".join(_ods_cell(v) for v in row) + "</table:table-row>" for row in rows)
        + "</table:table>" for name, rows in sheets.items())
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("META-INF/manifest.xml",
                   '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                   'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                   '<manifest:file-entry manifest:full-path="/" '
                   'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
                   '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                   "</manifest:manifest>")
        z.writestr("content.xml", f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} '
                                  f'office:version="1.2"><office:body><office:spreadsheet>{tables}'
                                  "</office:spreadsheet></office:body></office:document-content>")
    return path
