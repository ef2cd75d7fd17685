"""Workbooks: ``.xlsx``/``.xlsm`` (Office Open XML), ``.xls`` (Excel 97-2003) and ``.ods``
(OpenDocument), read through calamine (the Rust reader behind ``pandas.read_excel(engine=
"calamine")``).

One sheet is read, the first unless ``source.options.sheet`` names another (by name, or by its
number counted from 0). Its first row is the header unless it looks like data, by the rule CSV
files are read with (:func:`~sdc_dagster.datafiles.dialect.first_row_is_header`): the columns are
then ``V1`` ... ``Vn``. Cells keep the types the workbook stores (numbers, text, dates); a column of
whole numbers is read as integers, as from a CSV.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from sdc_dagster.datafiles.dialect import default_names, first_row_is_header
from sdc_dagster.errors import SDCInputError

#: The options a spec's ``source.options`` may give for a workbook.
SPREADSHEET_KEYS = ("sheet", "header")


def _column_names(row: list) -> list[str]:
    """The header row's cells as column names, as a CSV header reads: a whole number without its
    ``.0``, an empty cell ``V<i>``, a repeated name ``name.1``, ``name.2`` (pandas' rule)."""
    names, seen = [], {}
    for i, value in enumerate(row, 1):
        if value is None or (isinstance(value, float) and pd.isna(value)):
            name = f"V{i}"
        elif isinstance(value, float) and value.is_integer():
            name = str(int(value))
        else:
            name = str(value).strip()
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        else:
            seen[name] = 0
        names.append(name)
    return names


def _without_title_and_note_rows(cells: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The table of a sheet without the title rows above it and the note rows below it (a table's
    title, "Source: ..." lines), as statistical offices lay out a published sheet: leading and
    trailing rows that fill less than half of the columns with text only (a row holding a number
    is a record, however empty). Returns the table and how many rows were
    left out above and below."""
    width = cells.shape[1]
    if width < 2:
        return cells, 0, 0
    numbers = cells.apply(lambda column: pd.to_numeric(column, errors="coerce")).notna().any(axis=1)
    full = ((cells.notna().sum(axis=1) >= width / 2) | numbers).to_numpy()  # a row with a number is data
    if not full.any():
        return cells, 0, 0
    first, last = int(full.argmax()), len(full) - 1 - int(full[::-1].argmax())
    table = cells.iloc[first:last + 1].dropna(axis=1, how="all").reset_index(drop=True)
    return table, first, len(full) - 1 - last


def sheet_names(path: Path) -> list[str]:
    """The names of the workbook's sheets, in workbook order."""
    from python_calamine import CalamineWorkbook

    try:
        return list(CalamineWorkbook.from_path(str(path)).sheet_names)
    except Exception as exc:  # calamine raises its own error classes for damaged workbooks
        raise SDCInputError(f"{path.name}: cannot be read as a workbook ({exc})") from exc


def read_spreadsheet(path: Path, options: Mapping | None = None) -> tuple[pd.DataFrame, tuple[str, ...], dict]:
    """One sheet of a workbook as records, what was detected (in words) and the options that read it
    again (``sheet``, ``header``)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(SPREADSHEET_KEYS))
    if unknown:
        raise SDCInputError(f"{path.name}: source.options {unknown} do not apply to a workbook; "
                            f"expected only {list(SPREADSHEET_KEYS)}")
    names = sheet_names(path)
    if not names:
        raise SDCInputError(f"{path.name}: the workbook has no sheet")
    sheet = options.get("sheet", 0)
    if isinstance(sheet, int) and not isinstance(sheet, bool):
        if not 0 <= sheet < len(names):
            raise SDCInputError(f"{path.name}: no sheet number {sheet} (counted from 0); its sheets are {names}")
        sheet = names[sheet]
    elif sheet not in names:
        raise SDCInputError(f"{path.name}: no sheet {sheet!r}; its sheets are {names}")
    try:
        cells = pd.read_excel(path, sheet_name=sheet, header=None, engine="calamine")
    except Exception as exc:  # calamine raises its own error classes for damaged workbooks
        raise SDCInputError(f"{path.name}: cannot read sheet {sheet!r} ({exc})") from exc
    cells = cells.dropna(how="all").dropna(axis=1, how="all").reset_index(drop=True)
    if cells.empty:
        raise SDCInputError(f"{path.name}: sheet {sheet!r} is empty")
    notes = [f"sheet {sheet!r}" + (f" (the first of {len(names)}: {', '.join(names)}; source.options.sheet "
                                    "chooses another)" if len(names) > 1 and sheet == names[0] else "")]
    cells, above, below = _without_title_and_note_rows(cells)
    if above or below:
        notes.append(f"{above} title row(s) above the table and {below} note row(s) below it left out "
                     "(rows of text filling less than half the table's columns)")
    if isinstance(options.get("header"), bool):
        header = options["header"]
    else:
        header = first_row_is_header(cells.astype(object).where(cells.notna(), "").astype(str))
        if not header:
            notes.append("no header row (the first row holds numbers where the other rows do), so the "
                         "columns are named V1..Vn as R names them")
    if header:
        data = cells.iloc[1:].reset_index(drop=True)
        data.columns = _column_names(cells.iloc[0].tolist())
    else:
        data = cells.copy()
        data.columns = default_names(cells.shape[1])
    data = data.infer_objects()
    whole = [c for c in data.columns if pd.api.types.is_float_dtype(data[c]) and data[c].notna().all()
             and (data[c] % 1 == 0).all()]
    if whole:
        data = data.astype({c: "int64" for c in whole})
    return data, tuple(notes), {"sheet": sheet, "header": header}
