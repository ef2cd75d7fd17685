"""A CSV file's dialect, detected: separator, quoting, header row, decimal mark and encoding.

Offices publish "CSV" in several dialects: ARX's examples are ``;``-separated, spreadsheet
programs in continental Europe write ``;`` with a decimal comma (``1,5``), register extracts come
without a header row, older exports are Windows-1252. Each part is detected once from the file and
can be given instead (``source.options`` in the spec, ``sdc init --sep ';' --encoding cp1252
--decimal , --no-header``); what was detected is said in :attr:`CsvDialect.notes`.

* **Encoding**: a byte order mark names UTF-8 (``utf-8-sig``) or UTF-16; otherwise a file that
  decodes as UTF-8 is UTF-8 (RFC 3629: other encodings' non-ASCII text is almost never valid
  UTF-8), else Windows-1252, else Latin-1 (ISO 8859-1, which decodes every byte; Windows-1252
  leaves five bytes undefined).
* **Separator**: among ``,`` ``;`` tab ``|``, the one that splits the sampled lines (quotes
  respected, RFC 4180) into the same number of fields, at least two, on the most lines (Python's
  ``csv.Sniffer`` rests on the same consistency idea).
* **Header row**: as R's ``read.table`` decides ``header`` when the first row has one field fewer,
  the first row is data, not names, when every column whose other values are all numbers has a
  number in the first row too; the columns are then named ``V1`` ... ``Vn`` as R names them.
* **Decimal comma**: with a separator other than ``,``, numbers written ``12,5`` (and none written
  ``12.5``) mean a decimal comma; numbers written ``7.504,32`` (a point between groups of three
  digits, then a comma), as German, Dutch or Italian spreadsheets export amounts, mean a decimal
  comma and a point between thousands (``thousands: '.'``), every other number with a point then
  being such a grouping (``1.234``: 1234).
* **Quoting**: fields in double quotes (RFC 4180); another quote character is ``quotechar``.
* **Title lines**: lines before the header that hold at most half as many fields as the records
  (a table's title, "Source: ..."), as statistical offices' exports and spreadsheets saved as CSV
  begin, are skipped (``skiprows``, pandas' option); read as the header, such a title made pandas
  take the other columns for a row index and drop them.
"""

from __future__ import annotations

import codecs
import csv
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError

#: The separators detection chooses among, in the order that breaks ties.
SEPARATORS = (",", ";", "\t", "|")
#: The dialect options a spec's ``source.options`` (and the command line) may give for a CSV.
DIALECT_KEYS = ("sep", "encoding", "decimal", "thousands", "header", "quotechar", "skiprows")
_SAMPLE_BYTES = 1 << 16
#: At most this many title lines are skipped before the header.
_MAX_TITLE_LINES = 5
_SEPARATOR_NAMES = {",": "','", ";": "';'", "\t": "tab", "|": "'|'"}
_ENCODING_NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 with a byte order mark", "utf-16": "UTF-16",
                   "cp1252": "Windows-1252", "latin-1": "Latin-1 (ISO 8859-1)"}
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")
_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_DECIMAL_POINT = re.compile(r"^\s*[+-]?\d*\.\d+\s*$")
#: Digits grouped by thousands with points, maybe then a decimal comma: 1.234, 7.504,32
_GROUPED_POINTS = re.compile(r"^\s*[+-]?\d{1,3}(\.\d{3})+(,\d+)?\s*$")
#: Both marks: 7.504,32 (a point between thousands, a decimal comma)
_GROUPED_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d{1,3}(\.\d{3})+,\d+\s*$")


@dataclass(frozen=True)
class CsvDialect:
    """How a CSV file is written. ``notes``: what was detected, in words, for the draft's comment."""

    sep: str = ","
    encoding: str = "utf-8"
    decimal: str = "."
    thousands: str | None = None
    header: bool = True
    quotechar: str = '"'
    skiprows: int | list = 0
    notes: tuple[str, ...] = ()

    def options(self) -> dict:
        """The dialect as ``source.options`` (the defaults left out but for the separator, the
        encoding and the header, which a reader of the spec wants to see)."""
        out: dict = {"sep": self.sep, "encoding": self.encoding}
        if self.decimal != ".":
            out["decimal"] = self.decimal
        if self.thousands is not None:
            out["thousands"] = self.thousands
        out["header"] = self.header
        if self.quotechar != '"':
            out["quotechar"] = self.quotechar
        if self.skiprows:
            out["skiprows"] = self.skiprows
        return out


def separator_name(sep: str) -> str:
    """``';'``, ``tab``: a separator as a message names it."""
    return _SEPARATOR_NAMES.get(sep, repr(sep))


def detect_encoding(path: Path, *, expected: str = "CSV text") -> tuple[str, str]:
    """The encoding of a text file and how it was told (see the module docstring). A file with NUL
    bytes (and no UTF-16 mark) is not text: SDCInputError naming it and what was ``expected``."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if head.startswith(codecs.BOM_UTF8):
            return "utf-8-sig", "a UTF-8 byte order mark"
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return "utf-16", "a UTF-16 byte order mark"
        fh.seek(0)
        first = fh.read(8192)
        if b"\x00" in first:
            raise SDCInputError(f"{path.name}: is not a text file (a NUL byte at byte {first.index(0)}); "
                                f"expected {expected}")
        fh.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            for block in iter(lambda: fh.read(1 << 20), b""):
                decoder.decode(block)
            decoder.decode(b"", final=True)
            return "utf-8", "every byte sequence is valid UTF-8"
        except UnicodeDecodeError:
            pass
        fh.seek(0)
        try:
            for block in iter(lambda: fh.read(1 << 20), b""):
                block.decode("cp1252")
            return "cp1252", "not valid UTF-8"
        except UnicodeDecodeError:
            return "latin-1", "neither UTF-8 nor Windows-1252"


def _sample_lines(path: Path, encoding: str, *, blank: bool = False) -> list[str]:
    """The first complete lines of the file (about 64 KB), decoded; the blank ones too with ``blank``."""
    with open(path, "rb") as fh:
        raw = fh.read(_SAMPLE_BYTES)
        complete = len(raw) < _SAMPLE_BYTES
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(raw, final=complete)
    lines = text.splitlines()
    if not complete and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    return lines if blank else [line for line in lines if line.strip()]


def _split(lines: list[str], sep: str, quotechar: str) -> list[list[str]]:
    return list(csv.reader(lines, delimiter=sep, quotechar=quotechar))


def detect_separator(lines: list[str], quotechar: str = '"') -> str:
    """The separator of :data:`SEPARATORS` that splits the most of ``lines`` into one same number
    (at least two) of fields; between two that do so equally (``1;2,5`` splits in two either way),
    the one whose fields are numbers more often (a decimal comma, also after points between
    thousands, counting with a separator other than ``,``); ``,`` when none splits the lines."""
    best, best_score = ",", (0.0, 0.0)
    for sep in SEPARATORS:
        rows = _split(lines, sep, quotechar)
        counts = Counter(len(row) for row in rows)
        if not counts:
            continue
        fields, lines_with = counts.most_common(1)[0]
        if fields < 2:
            continue
        cells = [cell for row in rows for cell in row]
        numbers = sum(bool(_INTEGER.match(c) or _DECIMAL_POINT.match(c)
                           or (sep != "," and (_DECIMAL_COMMA.match(c) or _GROUPED_DECIMAL_COMMA.match(c))))
                      for c in cells)
        score = (lines_with / len(lines), numbers / len(cells))
        if score > best_score:
            best, best_score = sep, score
    return best


def _numeric_cells(cells: pd.DataFrame, decimal: str, thousands: str | None = None) -> pd.DataFrame:
    """Which cells of a frame of text are numbers (``decimal`` the decimal mark, ``thousands`` the
    mark between groups of digits, if any)."""
    text = cells.apply(lambda col: col.str.strip())
    if thousands is not None:
        text = text.apply(lambda col: col.str.replace(thousands, "", regex=False))
    if decimal != ".":
        text = text.apply(lambda col: col.str.replace(decimal, ".", regex=False))
    return text.apply(lambda col: pd.to_numeric(col, errors="coerce")).notna()


def first_row_is_header(cells: pd.DataFrame, decimal: str = ".", *, quoted: list[bool] | None = None,
                        thousands: str | None = None) -> bool:
    """Whether the first row of ``cells`` (text, one row per record, the first row included) names
    the columns: False when some column has numbers in every other non-empty cell and every such
    column has a number in its first row too (R's rule of thumb, see the module docstring).
    ``quoted``: which first-row cells are written in quotes where the records' are not: such a cell
    is text, as R's ``write.csv`` quotes the names ``"1","2"`` of columns of numbers. ``thousands``:
    the mark between groups of digits, if any."""
    if len(cells) < 2:
        return True
    cells = cells.fillna("").astype(str)
    numeric = _numeric_cells(cells, decimal, thousands)
    if quoted is not None and len(quoted) == cells.shape[1]:
        numeric.iloc[0] = numeric.iloc[0] & ~pd.Series(quoted, index=cells.columns)
    filled = cells.apply(lambda col: col.str.strip() != "")
    body_numeric = (numeric.iloc[1:] | ~filled.iloc[1:]).all() & filled.iloc[1:].any()
    if not body_numeric.any():
        return True
    first_numeric = numeric.iloc[0] | ~filled.iloc[0]
    return not bool(first_numeric[body_numeric].all())


def _quoted_fields(line: str, sep: str, quotechar: str) -> list[bool] | None:
    """Which fields of ``line`` are written in quotes (None when a quoted field holds the separator,
    so that the raw split does not give the fields)."""
    if len(sep) != 1:
        return None
    raw = next(csv.reader([line], delimiter=sep, quoting=csv.QUOTE_NONE))
    parsed = next(csv.reader([line], delimiter=sep, quotechar=quotechar))
    if len(raw) != len(parsed):
        return None
    return [len(f.strip()) >= 2 and f.strip()[0] == quotechar and f.strip()[-1] == quotechar for f in raw]


def _quoted_names(lines: list[str], sep: str, quotechar: str) -> list[bool] | None:
    """Which first-line fields are quoted where the second line's are not (names quoted, numbers
    bare, as R's ``write.csv`` writes them); None when that cannot be told."""
    if len(lines) < 2:
        return None
    first, second = _quoted_fields(lines[0], sep, quotechar), _quoted_fields(lines[1], sep, quotechar)
    if first is None or second is None or len(first) != len(second):
        return None
    return [a and not b for a, b in zip(first, second)]


def _title_lines(rows: list[list[str]]) -> int:
    """How many of the first ``rows`` (non-blank lines split into fields) are title lines: at most
    :data:`_MAX_TITLE_LINES` holding at most half as many fields as most rows do (two or more),
    followed by a row that holds that many (the header)."""
    counts = [len(row) for row in rows]
    if len(counts) < 3:
        return 0
    fields = Counter(counts).most_common(1)[0][0]
    titles = 0
    while titles < min(_MAX_TITLE_LINES, len(counts) - 2) and counts[titles] <= fields // 2:
        titles += 1
    return titles if fields >= 2 and counts[titles] == fields else 0


def _raw_lines_before(lines: list[str], titles: int) -> int:
    """The number of raw lines (blank ones included, of ``lines``) before the first non-blank line
    after ``titles`` non-blank ones: the ``skiprows`` that skips those titles."""
    seen = 0
    for number, line in enumerate(lines):
        if line.strip():
            if seen == titles:
                return number
            seen += 1
    return len(lines)


def _decimal_marks(rows: list[list[str]]) -> tuple[str, str | None]:
    """The decimal mark and the thousands mark (None: none) of the numbers in ``rows`` of a file
    separated by other than ``,`` (see the module docstring): ``(",", ".")`` when some number is
    written ``7.504,32`` and every number with a point is so grouped (``1.234``); else ``(",",
    None)`` when numbers are written ``12,5`` and none ``12.5``; else ``(".", None)``."""
    cells = [cell for row in rows for cell in row]
    points = [cell for cell in cells if _DECIMAL_POINT.match(cell)]
    if any(_GROUPED_DECIMAL_COMMA.match(cell) for cell in cells) and all(_GROUPED_POINTS.match(c) for c in points):
        return ",", "."
    if points:
        return ".", None
    return ("," if any(_DECIMAL_COMMA.match(cell) for cell in cells) else "."), None


def csv_dialect(path: Path, given: Mapping | None = None) -> CsvDialect:
    """The dialect of the CSV file at ``path``: each of :data:`DIALECT_KEYS` that ``given`` holds is
    taken as given (``header: false`` for no header row), the others are detected."""
    given = dict(given or {})
    notes = []
    if "encoding" in given:
        encoding = str(given["encoding"])
    else:
        encoding, why = detect_encoding(path)
        notes.append(f"encoding {_ENCODING_NAMES.get(encoding, encoding)} ({why})")
    try:
        lines = _sample_lines(path, encoding)
    except LookupError as exc:
        raise SDCInputError(f"{path.name}: unknown encoding {encoding!r} in source.options.encoding") from exc
    quotechar = str(given.get("quotechar", '"'))
    if "sep" in given:
        sep = str(given["sep"])
    else:
        sep = detect_separator(lines, quotechar)
        notes.append(f"separator {separator_name(sep)}")
    rows = _split(lines, sep, quotechar) if len(sep) == 1 else [line.split(sep) for line in lines]
    if "skiprows" in given:
        skiprows = given["skiprows"]
        if isinstance(skiprows, int) and not isinstance(skiprows, bool):
            lines = [line for line in _sample_lines(path, encoding, blank=True)[skiprows:] if line.strip()]
            rows = _split(lines, sep, quotechar) if len(sep) == 1 else [line.split(sep) for line in lines]
    else:
        titles = _title_lines(rows)
        skiprows = _raw_lines_before(_sample_lines(path, encoding, blank=True), titles) if titles else 0
        if titles:
            notes.append(f"{'the first line holds' if titles == 1 else f'the first {titles} lines hold'} "
                         f"{len(rows[0])} field{'' if len(rows[0]) == 1 else 's'} where the records hold "
                         f"{len(rows[titles])}: "
                         f"{'a title' if titles == 1 else 'titles'} above the header, skipped (skiprows: {skiprows})")
            lines, rows = lines[titles:], rows[titles:]
    if "decimal" in given:
        decimal, thousands = str(given["decimal"]), given.get("thousands")
    else:
        decimal, thousands = _decimal_marks(rows[1:]) if sep != "," else (".", None)
        if thousands is not None:
            notes.append(f"decimal comma and {thousands!r} between thousands (numbers written 1.234,5)")
        elif decimal == ",":
            notes.append("decimal comma (numbers written 1,5)")
    thousands = None if thousands is None else str(thousands)
    if "header" in given:
        header = given["header"] if isinstance(given["header"], bool) else True  # a pandas row number: names there
    else:
        width = max((len(row) for row in rows), default=0)
        cells = pd.DataFrame([row + [""] * (width - len(row)) for row in rows], dtype=object)
        header = first_row_is_header(cells, decimal, quoted=_quoted_names(lines, sep, quotechar), thousands=thousands)
        if not header:
            notes.append("no header row (the first row holds numbers where the other rows do), so the "
                         "columns are named V1..Vn as R names them")
    return CsvDialect(sep=sep, encoding=encoding, decimal=decimal, thousands=thousands, header=header,
                      quotechar=quotechar, skiprows=skiprows, notes=tuple(notes))


def default_names(count: int) -> list[str]:
    """``V1`` ... ``Vn``: R's names for the columns of a file without a header row."""
    return [f"V{i}" for i in range(1, count + 1)]


def pandas_options(dialect: CsvDialect, options: Mapping | None = None) -> dict:
    """``pandas.read_csv`` keyword arguments for ``dialect``, with the other reader options of
    ``options`` (those not in :data:`DIALECT_KEYS`) passed on."""
    out = {k: v for k, v in (options or {}).items() if k not in DIALECT_KEYS}
    out.update(sep=dialect.sep, encoding=dialect.encoding, decimal=dialect.decimal, quotechar=dialect.quotechar)
    if dialect.thousands is not None:
        out["thousands"] = dialect.thousands
    if dialect.skiprows:
        out["skiprows"] = dialect.skiprows
    header = (options or {}).get("header")
    if isinstance(header, int) and not isinstance(header, bool):
        out["header"] = header  # a pandas row number: passed on as pandas reads it
    elif not dialect.header:
        out["header"] = None
    if dialect.sep not in SEPARATORS and len(dialect.sep) > 1:
        out["engine"] = "python"  # a regular-expression separator
    return out


def read_csv(path: Path, options: Mapping | None = None, *, as_text: bool = False) -> tuple[pd.DataFrame, CsvDialect]:
    """The records of a CSV file in its dialect (:func:`csv_dialect`, ``options`` giving any part of
    it) and the dialect. ``as_text``: every cell as written (strings, nothing made missing). A file
    read as one column whose values hold another separator is an error naming that separator."""
    dialect = csv_dialect(path, options)
    kwargs = pandas_options(dialect, options)
    if as_text:
        for key in ("dtype", "converters", "na_values", "parse_dates"):
            kwargs.pop(key, None)
        kwargs.update(dtype=str, keep_default_na=False, na_filter=False)
    data = pd.read_csv(path, **kwargs)
    if kwargs.get("header", 0) is None and "names" not in kwargs:
        data.columns = default_names(data.shape[1])
    if not as_text:
        _refuse_one_column_of_records(path, data, dialect)
    return data, dialect


def _refuse_one_column_of_records(path: Path, data: pd.DataFrame, dialect: CsvDialect) -> None:
    """A file read as a single column whose values (most of them) hold another candidate separator
    was read with the wrong separator: SDCInputError naming the separator it probably has."""
    if data.shape[1] != 1 or data.empty:
        return
    values = pd.concat([pd.Series([str(data.columns[0])]), data.iloc[:1000, 0].astype(str)], ignore_index=True)
    for sep in SEPARATORS:
        if sep == dialect.sep:
            continue
        holding = values.str.contains(re.escape(sep), regex=True)
        if holding.mean() >= 0.5:
            counts = values[holding].str.count(re.escape(sep))
            raise SDCInputError(
                f"{path.name}: read as one column with separator {separator_name(dialect.sep)}, but "
                f"{int(holding.sum())} of its first {len(values)} lines hold {separator_name(sep)} "
                f"(up to {int(np.max(counts))} times): the separator is probably {separator_name(sep)}; "
                f"give it as source.options.sep in the spec (sdc init --sep {sep!r})"
            )


def read_text_cells(path: Path, options: Mapping | None = None) -> pd.DataFrame:
    """The cells of a CSV file exactly as written (strings, nothing made missing), rows numbered as
    :func:`read_csv` numbers them: for naming the original text in error messages."""
    return read_csv(path, options, as_text=True)[0]
