"""Microdata described by an Argus metadata file (``.rda``), as mu-Argus and tau-Argus publish it.

The format, as the Argus manuals (mu-Argus 5.1 user's manual §4.2 "Metadata file"; tau-Argus 4.2
user's manual §5.2) and the Argus sources (``muargus/io/MetaReader.java``) define it:

* Before the first variable, ``<SEPARATOR> ","`` makes the data **free format** (fields separated by
  that string, one record a line; ``<NAMESINFRONT>``: the first line holds the names); without it
  the data are **fixed width** (``.asc``). ``<SPSS>`` describes an SPSS file (read the ``.sav``).
* A line that does not start with ``<`` declares a variable: ``NAME START LENGTH [MISSING1
  [MISSING2]]`` in fixed format, ``NAME LENGTH [MISSING1 [MISSING2]]`` in free format (START counts
  columns from 1; a missing code may be quoted).
* The indented ``<KEYWORD> [value]`` lines below it describe that variable: ``<RECODABLE>``
  (``<RECODEABLE>``), ``<CODELIST> "file.cdl"``, ``<IDLEVEL> n``, ``<NUMERIC>``, ``<DECIMALS> n``,
  ``<WEIGHT>``, ``<HOUSE_ID>`` (``<HHID>``), ``<HOUSEHOLD>``, ``<RECORDKEY>``, ``<HIERARCHICAL>``,
  ``<HIERCODELIST> "file.hrc"``, ``<HIERLEADSTRING> "@"``, ``<MISSING> codes``; the others
  (``<SUPPRESSWEIGHT>``, ``<TRUNCABLE>``, tau-Argus's cell-key settings ...) are read and ignored.
* Tabular data (the tau-Argus manual's metadata of tabular input; sdcTable's
  ``createArgusInput(typ = "tabular")``): ``<SAFE>``, ``<UNSAFE>``, ``<PROTECT>`` before the first
  variable give the status letters of the ``.tab`` file; a variable may be declared by its name
  alone in free format; ``<TOTCODE> "Total"`` names a dimension's total; ``<FREQUENCY>``,
  ``<MAXSCORE>`` (a top contribution), ``<STATUS>``, ``<LOWERPL>``/``<UPPERPL>`` mark the columns;
  a line may carry several keywords (``<NUMERIC> <LOWERPL>``).
* A hierarchical code list (``.hrc``, the Argus manuals' "hierarchical codelist";
  :func:`hrc_entries`): one code a line, preceded by the lead string once per level below the top
  (the total is not listed), each code followed by its children.
* A code list (``.cdl``) holds ``code,label`` lines; codes are compared with their blanks trimmed.
  Its path, like a hierarchy's, is relative to the ``.rda``'s folder (and found whatever the case of
  its letters, since the Argus tools run on Windows: ``Demofree.rda`` names ``regio.cdl`` for
  ``Regio.cdl``).

What the declarations become (:class:`ArgusFile`): code lists are value labels; the missing codes
are user-missing codes (they stay in the data as values, the spec lists them as ``missing:``);
``<NUMERIC>`` is measured "scale" and ``<RECODABLE>`` "nominal"; and the roles the metadata declare,
which the draft takes as given (:data:`ROLE_OF_KEYWORD`): ``<RECORDKEY>`` record_id, ``<WEIGHT>``
weight, ``<HOUSE_ID>``/``<HHID>`` household_id, ``<IDLEVEL>`` 1 or 2 (the most identifying levels
of mu-Argus) categorical_key. ``<IDLEVEL>`` 0 (not identifying) and 3+ and ``<HOUSEHOLD>``
(a household-level variable) give no role: the draft judges them from the data.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sdc_dagster.datafiles.dialect import detect_encoding
from sdc_dagster.errors import SDCInputError

#: The spec role of each Argus keyword that declares one.
ROLE_OF_KEYWORD = {"<RECORDKEY>": "record_id", "<WEIGHT>": "weight", "<HOUSE_ID>": "household_id",
                   "<HHID>": "household_id"}
#: The mu-Argus identification levels that make a categorical key.
KEY_LEVELS = (1, 2)
_FLAGS = {"<RECODABLE>": "recodable", "<RECODEABLE>": "recodable", "<NUMERIC>": "numeric",
          "<HIERARCHICAL>": "hierarchical", "<HOUSEHOLD>": "household", "<FREQUENCY>": "frequency",
          "<MAXSCORE>": "maxscore", "<STATUS>": "status", "<LOWERPL>": "lowerpl", "<UPPERPL>": "upperpl",
          **{k: k for k in ROLE_OF_KEYWORD}}
#: The status letters of a tau-Argus ``.tab`` file declared before the first variable (keyword -> role).
STATUS_KEYWORDS = {"<SAFE>": "safe", "<UNSAFE>": "unsafe", "<PROTECT>": "protect"}


@dataclass
class ArgusVariable:
    """One variable of an ``.rda`` file."""

    name: str
    line: int
    start: int | None
    length: int | None  # None: a free-format variable declared by its name alone (tabular metadata)
    missing: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    codelist: str | None = None
    hierarchy: str | None = None
    idlevel: int | None = None
    totcode: str | None = None
    leadstring: str | None = None
    keyword_lines: dict[str, int] = field(default_factory=dict)  # keyword -> its line in the .rda


@dataclass(frozen=True)
class ArgusMetadata:
    """An ``.rda`` file: the separator of free-format data (None: fixed width), whether the names are
    in the data's first line, the variables in file order and the status letters of tabular data
    (``{"safe": "S", ...}`` as declared by ``<SAFE>``, ``<UNSAFE>``, ``<PROTECT>``)."""

    path: Path
    separator: str | None
    names_in_front: bool
    variables: tuple[ArgusVariable, ...]
    status_codes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ArgusFile:
    """Data read with their ``.rda``: the records and what the metadata declare (see the module
    docstring)."""

    data: pd.DataFrame
    value_labels: dict
    user_missing: dict
    measures: dict
    roles: dict
    hierarchies: dict
    notes: tuple[str, ...]


def _tokens(path: Path, number: int, line: str) -> list[str]:
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:
        raise SDCInputError(f"{path.name}:{number}: cannot read {line.strip()!r} ({exc})") from exc


def _integer(path: Path, number: int, value: str, what: str) -> int:
    if not re.fullmatch(r"\d+", value or ""):
        raise SDCInputError(f"{path.name}:{number}: {what} must be a whole number, got {value!r}")
    return int(value)


def read_rda(path: Path) -> ArgusMetadata:
    """Parse an Argus ``.rda`` metadata file (see the module docstring); SDCInputError names the file,
    the line and what was expected."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SDCInputError(f"{path}: cannot read the Argus metadata ({exc.strerror})") from exc
    if raw.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"RDX", b"RDA")):
        raise SDCInputError(f"{path.name}: is an R workspace (saved by R's save()), not Argus metadata; "
                            "export the data frame from R as CSV, SPSS or Stata")
    text = raw.decode("utf-8") if _utf8(raw) else raw.decode("cp1252", errors="replace")
    separator, names_in_front, variables, status_codes = None, False, [], {}
    current: ArgusVariable | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        tokens = _tokens(path, number, line)
        keyword = tokens[0].upper()
        if not keyword.startswith("<"):
            if separator is None:
                start, rest = (_integer(path, number, tokens[1] if len(tokens) > 1 else "", f"the start of {tokens[0]}"),
                               tokens[2:])
            else:
                start, rest = None, tokens[1:]
            if separator is not None and not rest:  # free format: the name alone (tabular metadata)
                current = ArgusVariable(tokens[0], number, None, None)
                variables.append(current)
                continue
            length = _integer(path, number, rest[0] if rest else "", f"the length of {tokens[0]}")
            current = ArgusVariable(tokens[0], number, start, length, missing=[m for m in rest[1:3] if m.strip()])
            variables.append(current)
            continue
        value = tokens[1] if len(tokens) > 1 else None
        if current is not None:
            current.keyword_lines[keyword] = number
        if current is None:
            if keyword == "<SEPARATOR>":
                if not value:
                    raise SDCInputError(f'{path.name}:{number}: <SEPARATOR> needs the separator, e.g. <SEPARATOR> ","')
                separator = value
            elif keyword == "<NAMESINFRONT>":
                names_in_front = True
            elif keyword in STATUS_KEYWORDS:
                if not value:
                    raise SDCInputError(f'{path.name}:{number}: {keyword} needs its status letter, e.g. {keyword} "S"')
                status_codes[STATUS_KEYWORDS[keyword]] = value
            elif keyword == "<SPSS>":
                raise SDCInputError(f"{path.name}: describes an SPSS file (<SPSS>); read the .sav file itself")
            continue
        if keyword in _FLAGS:
            current.flags.add(_FLAGS[keyword])
            # further keywords on the line (sdcTable writes "<NUMERIC> <LOWERPL>")
            current.flags.update(_FLAGS[t.upper()] for t in tokens[1:] if t.upper() in _FLAGS)
        elif keyword == "<TOTCODE>":
            current.totcode = value
        elif keyword == "<HIERLEADSTRING>":
            current.leadstring = value
        elif keyword == "<CODELIST>":
            current.codelist = value
        elif keyword == "<HIERCODELIST>":
            current.hierarchy = value
        elif keyword == "<IDLEVEL>":
            current.idlevel = _integer(path, number, value or "", f"<IDLEVEL> of {current.name}")
        elif keyword == "<MISSING>":
            current.missing += [m for m in tokens[1:] if m.strip()]
    if not variables:
        raise SDCInputError(f"{path.name}: declares no variable (expected lines 'NAME START LENGTH' "
                            "or, after <SEPARATOR>, 'NAME LENGTH')")
    names = [v.name for v in variables]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise SDCInputError(f"{path.name}: variables declared twice: {doubled}")
    return ArgusMetadata(path, separator, names_in_front, tuple(variables), status_codes)


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def resolve_beside(folder: Path, name: str) -> Path | None:
    """The file ``name`` relative to ``folder`` (or absolute), matched whatever the case of its
    letters when the exact name is absent; None when there is none."""
    candidate = Path(name) if Path(name).is_absolute() else folder / name
    if candidate.is_file():
        return candidate
    if candidate.parent.is_dir():
        lowered = candidate.name.lower()
        for other in sorted(candidate.parent.iterdir()):
            if other.name.lower() == lowered and other.is_file():
                return other
    return None


def read_codelist(path: Path) -> dict[str, str]:
    """An Argus code list: ``{code: label}`` from its ``code,label`` lines (blanks trimmed, quotes
    around a label removed; a line without a comma is skipped, as mu-Argus does)."""
    text = read_text_file(path, what="code list")
    labels = {}
    for line in text.splitlines():
        code, comma, label = line.partition(",")
        if comma:
            labels[code.strip()] = label.strip().strip('"').strip()
    return labels


def _typed(text: pd.DataFrame) -> pd.DataFrame:
    """Columns of text as numbers where every non-blank value is one (whole numbers as integers
    when nothing is blank), as a CSV reader would type them; blanks are missing."""
    stripped = text.apply(lambda col: col.str.strip()).replace("", pd.NA)
    out = {}
    for name in stripped.columns:
        column = stripped[name]
        numbers = pd.to_numeric(column, errors="coerce")
        if numbers.notna().sum() == column.notna().sum():
            if numbers.notna().all() and (numbers % 1 == 0).all():
                numbers = numbers.astype("int64")
            out[name] = numbers
        else:
            out[name] = column.astype(object).where(column.notna(), None)
    return pd.DataFrame(out, index=text.index)


def _code(value: str, numeric: bool):
    if numeric:
        number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
        if pd.notna(number):
            return int(number) if float(number).is_integer() else float(number)
    return value


def read_argus(data_path: Path, rda_path: Path, *, text_columns: Sequence[str] = ()) -> ArgusFile:
    """The records of ``data_path`` as ``rda_path`` describes them, with the metadata's labels,
    missing codes, measures, roles and hierarchy files (see the module docstring). ``text_columns``
    stay text as written (codes matched against an ``.hrc``: ``01`` is not the number 1)."""
    data_path, rda_path = Path(data_path), Path(rda_path)
    meta = read_rda(rda_path)
    encoding, _ = detect_encoding(data_path, expected=f"text data as {rda_path.name} describes them")
    names = [v.name for v in meta.variables]
    try:
        if meta.separator is None:
            width = max(v.start + v.length - 1 for v in meta.variables)
            text = pd.read_fwf(data_path, colspecs=[(v.start - 1, v.start - 1 + v.length) for v in meta.variables],
                               names=names, dtype=str, header=None, encoding=encoding, keep_default_na=False,
                               na_filter=False, delimiter="\n")
            shown = f"fixed width, {len(names)} variables in columns 1-{width}"
        else:
            text = pd.read_csv(data_path, sep=meta.separator, header=0 if meta.names_in_front else None,
                               dtype=str, encoding=encoding, keep_default_na=False, na_filter=False,
                               engine="python" if len(meta.separator) > 1 else "c")
            if text.shape[1] != len(names):
                raise SDCInputError(f"{data_path.name}: {text.shape[1]} fields a record, but {rda_path.name} "
                                    f"declares {len(names)} variables ({', '.join(names)})")
            text.columns = names
            shown = f"free format, separator {meta.separator!r}"
    except pd.errors.EmptyDataError as exc:
        raise SDCInputError(f"{data_path.name}: the file is empty (read with {rda_path.name})") from exc
    except (ValueError, pd.errors.ParserError) as exc:
        raise SDCInputError(f"{data_path.name}: cannot be read as {rda_path.name} describes it ({exc})") from exc
    kept = [c for c in text_columns if c in text.columns]
    data = _typed(text.drop(columns=kept))
    for column in kept:
        data[column] = text[column].str.strip()
    data = data[list(text.columns)]
    folder = rda_path.parent
    value_labels, user_missing, measures, roles, hierarchies = {}, {}, {}, {}, {}
    for v in meta.variables:
        numeric = pd.api.types.is_numeric_dtype(data[v.name])
        if v.codelist:
            found = resolve_beside(folder, v.codelist)
            if found is None:
                raise SDCInputError(f"{rda_path.name}:{v.keyword_lines['<CODELIST>']}: {v.name}'s <CODELIST> {v.codelist!r} is not in {folder}")
            value_labels[v.name] = {_code(code, numeric): label for code, label in read_codelist(found).items()}
        # a code that is not a number cannot occur in a numeric column ("X" for a one-digit code)
        codes = [c for c in (_code(m.strip(), numeric) for m in v.missing) if not (numeric and isinstance(c, str))]
        if codes:
            user_missing[v.name] = tuple(dict.fromkeys(codes))
        if "numeric" in v.flags:
            measures[v.name] = "scale"
        elif "recodable" in v.flags:
            measures[v.name] = "nominal"
        declared = [ROLE_OF_KEYWORD[k] for k in ROLE_OF_KEYWORD if k in v.flags]
        if declared:
            roles[v.name] = declared[0]
        elif v.idlevel in KEY_LEVELS:
            roles[v.name] = "categorical_key"
        if v.hierarchy:
            found = resolve_beside(folder, v.hierarchy)
            if found is None:
                raise SDCInputError(f"{rda_path.name}:{v.keyword_lines['<HIERCODELIST>']}: {v.name}'s <HIERCODELIST> {v.hierarchy!r} is not in {folder}")
            hierarchies[v.name] = str(found.resolve())
    notes = (f"Argus data described by {rda_path.name} ({shown})",)
    return ArgusFile(data, value_labels, user_missing, measures, roles, hierarchies, notes)


def hrc_entries(text: str, *, source: str, leadstring: str = "@") -> list[tuple[int, str, int]]:
    """The codes of an Argus hierarchical code list (``.hrc``, tau-Argus and mu-Argus manuals,
    "hierarchical codelist"): ``(depth, code, line)`` in file order, depth 0 for the codes right
    below the total (which the file does not list), the lead string (``<HIERLEADSTRING>``, default ``@``)
    repeated once per level below that; a code is followed by its children. Codes may be padded with
    blanks (sdcTable pads them to the variable's width); blank lines are skipped.

    Raises :class:`SDCInputError` naming ``source`` and the line: an empty lead string, a lead string
    without a code, a code more than one level below the code before it (the first code must be at
    depth 0), a code listed twice, no code at all.
    """
    if not leadstring:
        raise SDCInputError(f"{source}: the lead string of an .hrc file cannot be empty")
    pattern = re.compile(f"^((?:{re.escape(leadstring)})*)(.*)$")
    codes: list[tuple[int, str, int]] = []
    first: dict[str, int] = {}
    for line, row in enumerate(text.splitlines(), 1):
        if not row.strip():
            continue
        lead, code = pattern.match(row).groups()
        depth, code = len(lead) // len(leadstring), code.strip()
        if not code:
            raise SDCInputError(f"{source} line {line}: no code after the lead string {leadstring!r}")
        previous = codes[-1][0] if codes else -1
        if depth > previous + 1:
            raise SDCInputError(f"{source} line {line}: {code!r} is at depth {depth} but follows a code at depth "
                                f"{max(previous, 0)}" + ("" if codes else " (the first code must be at depth 0)")
                                + f"; a code's children follow it, one {leadstring!r} deeper")
        if code in first:
            raise SDCInputError(f"{source} line {line}: code {code!r} is listed again (first on line {first[code]}); "
                                "each code must have one place in the hierarchy")
        first[code] = line
        codes.append((depth, code, line))
    if not codes:
        raise SDCInputError(f"{source}: the hierarchy file is empty")
    return codes


def read_text_file(path: Path, *, what: str) -> str:
    """The text of an Argus file (``.hrc``, ``.cdl``): UTF-8 (with or without a byte order mark),
    else Windows-1252, the encoding of the Argus tools on Windows (a byte it leaves undefined read
    as U+FFFD); SDCInputError naming the file when it cannot be read."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SDCInputError(f"{path}: cannot read the {what} ({exc.strerror})") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")
