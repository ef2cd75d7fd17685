"""Tables in and out as statistical offices publish them and as tau-Argus exchanges them.

* :func:`published_table`: the office's layout of a protected table, one row per published cell:
  the dimension codes (the totals under their codes, ``"Total"`` for a flat dimension), the value
  (blank where suppressed), the cell's status as tau-Argus flags it (:data:`STATUS_LEGEND`) and,
  where an audit is given, the interval an intruder derives for each suppressed cell;
  :func:`write_published` writes it as CSV (``,`` or ``;``) or as an Excel workbook, byte for byte
  reproducible (:func:`sdc_dagster.files.pin_timestamp`).
* :func:`write_tau_argus`, :func:`read_tau_argus`: tau-Argus's tabular input (the tau-Argus manual's
  tabular data file and its metadata; the files sdcTable's ``createArgusInput(typ = "tabular")``
  and rtauargus's ``tab_rda`` write): a ``.tab`` file of one line per inner cell (its codes, then
  its value, frequency, largest contributions and status, separated by ``,``), its ``.rda``
  metadata (``<SEPARATOR>``, the status letters ``<SAFE>``/``<UNSAFE>``/``<PROTECT>``, per dimension
  ``<RECODEABLE>``, ``<TOTCODE>`` and for a hierarchy ``<HIERARCHICAL>``, ``<HIERCODELIST>``,
  ``<HIERLEADSTRING>``; ``<NUMERIC>`` the value, ``<FREQUENCY>`` the count, ``<MAXSCORE>`` the top
  contributions, ``<STATUS>``), one ``.hrc`` per hierarchical dimension
  (:mod:`sdc_dagster.tables.hierarchy_files`) and, for a suppression pattern, an a priori file
  (``.hst``, the tau-Argus manual's "a priori information": a suppressed cell's codes then ``u``, as
  rtauargus's ``tab_rda`` writes it).
  The metadata and the data are read by :mod:`sdc_dagster.datafiles.argus` (one reader of the
  Argus formats).
* :func:`contributions_from_top`: the contributors of a ``.tab`` whose lines carry their top
  contributions (``<MAXSCORE>``), for the dominance and p % rules on tau-Argus input.
* :func:`read_aggregated`: aggregated input (inner cells with a count or a sum) from a CSV written
  with ``;`` or ``,`` (or a workbook), through the project's one reading path
  (:func:`sdc_dagster.spec.reading.read_with_metadata`: separator, decimal mark and encoding detected).

A frequency table exchanged with tau-Argus carries its count as the one numeric column, as sdcTable
writes it (``freq`` ``<NUMERIC>``, no ``<FREQUENCY>``); a magnitude table its value (``<NUMERIC>``)
and its count (``<FREQUENCY>``). :func:`read_tau_argus` reads a table as frequency table when no
column is ``<FREQUENCY>``.

References
----------
Hundepool, A. et al. (2014), *tau-Argus manual* 4.1, Statistics Netherlands (tabular input, metadata
``.rda``, hierarchical code lists, a priori files, cell status). sdcTable (Meindl, B.),
``createArgusInput`` (``R/tauBatch_helpers.R``: ``create_tabdata_and_metadata``). rtauargus (Insee),
``tab_rda``. Hundepool, A. et al. (2012), *Statistical Disclosure Control*, Wiley, chapter 4 (publishing
a protected table: the suppressed cells, their status, the intruder's intervals).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.datafiles.argus import read_argus, read_rda, resolve_beside
from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import pin_timestamp, write_atomic
from sdc_dagster.names import check_name, inside
from sdc_dagster.numerics.decimals import original_decimals
from sdc_dagster.spec.reading import read_with_metadata
from sdc_dagster.tables.intruder import stacked_mask
from sdc_dagster.tables.hierarchy_files import LEADSTRING, read_hrc, write_hrc
from sdc_dagster.tables.model import TOTAL, Table, joint_model
from sdc_dagster.tables.primary import contributor_statistics
from sdc_dagster.validation import check_option

#: The status column of :func:`published_table`: tau-Argus's cell status letters (S safe, U unsafe,
#: M secondary, Z empty, as tau-Argus's table output and piargus, Statistics Netherlands' Python
#: interface to it, name them), with "X" for a suppressed cell when the primaries are not given.
STATUS_LEGEND = {
    "S": "safe: published",
    "U": "primary unsafe: suppressed by a primary (sensitivity) rule",
    "M": "secondary: suppressed to protect a primary unsafe cell",
    "Z": "empty: published, no contribution (frequency 0)",
    "X": "suppressed (primary or secondary not given)",
}
#: The status letters of the ``.tab`` files written (declared in the ``.rda``): safe, unsafe, protected.
TAB_STATUS = {"safe": "S", "unsafe": "U", "protect": "P"}
#: The number of largest contributions a ``.tab`` line carries (``<MAXSCORE>``; rtauargus writes 3).
TOP_CONTRIBUTIONS = 3
_SEPARATOR = ","


def _row_flags(table: Table, mask, role: str) -> np.ndarray:
    """``mask`` (a bool Series indexed like ``table.cells``, or an array) as one bool per row, the
    rows of a cell and its duplicates made equal (:func:`sdc_dagster.tables.intruder.stacked_mask`)."""
    return stacked_mask(joint_model([table]), [mask], role)


def _whole(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(np.all(finite == np.round(finite)))


def _input_decimals(table: Table) -> int | None:
    """The decimals a magnitude table's input values are published with (:func:`~sdc_dagster.numerics.decimals.original_decimals`:
    the contributions of microdata, else the inner cells of aggregated input); sums of such values
    have no more, so written at that precision they lose nothing but the binary floating-point
    noise of the summation (562.3000000000001). None for input measured to more than
    :data:`~sdc_dagster.numerics.decimals.MAX_RELEASED_DECIMALS` decimals: written as summed."""
    source = (table.contributions["value"].to_numpy(dtype=np.float64) if table.contributions is not None
              else table.published[table.inner_rows])
    return original_decimals(source)


def published_table(table: Table, suppressed, *, primary=None, intervals: pd.DataFrame | None = None) -> pd.DataFrame:
    """The office's layout of ``table`` protected by ``suppressed``: one row per published cell (the
    order of ``table.cells``), the dimension columns (codes; each dimension's total under its code,
    ``"Total"`` for a flat dimension), ``value`` (the count of a frequency table, the sum of a
    magnitude table, at the decimals of its input: :func:`_input_decimals`; blank where suppressed), ``status`` (one letter a cell):

    * ``S`` safe: published;
    * ``U`` primary unsafe: suppressed by a primary rule (in ``primary``);
    * ``M`` secondary: suppressed to protect a primary (suppressed, not in ``primary``);
    * ``Z`` empty: published with no contribution (frequency 0);
    * ``X`` suppressed, when ``primary`` is not given;

    the letters of tau-Argus (:data:`STATUS_LEGEND`). With ``intervals`` (the
    audit, :func:`sdc_dagster.tables.intruder.audit`), ``lo`` and ``up``: the interval an intruder
    derives for each suppressed cell, blank where published.

    ``suppressed``, ``primary``: bool Series indexed like ``table.cells`` (a cell and its duplicates,
    a parent with a single child, count as suppressed when any of their rows is). Raises
    :class:`SDCInputError` for masks of another length or index, a primary cell not suppressed, or
    intervals without ``lo``/``up`` or indexed otherwise.
    """
    hidden = _row_flags(table, suppressed, "suppressed")
    out = table.cells[table.names].copy()
    figures = table.published
    values = pd.array(np.where(hidden, np.nan, figures), dtype="Float64")
    if not table.magnitude or _whole(figures):
        values = values.round().astype("Int64")
    elif (decimals := _input_decimals(table)) is not None:
        values = values.round(decimals)
    out["value"] = values
    status = np.where(table.cells["freq"].to_numpy() == 0, "Z", "S").astype(object)
    if primary is None:
        status[hidden] = "X"
    else:
        unsafe = _row_flags(table, primary, "primary")
        if (unsafe & ~hidden).any():
            row = int(np.flatnonzero(unsafe & ~hidden)[0])
            cell = ", ".join(f"{n}={table.cells[n].iloc[row]!r}" for n in table.names)
            raise SDCInputError(f"primary: cell ({cell}) is primary unsafe but not suppressed")
        status[hidden] = "M"
        status[unsafe] = "U"
    out["status"] = status
    if intervals is not None:
        if not isinstance(intervals, pd.DataFrame) or not {"lo", "up"} <= set(intervals.columns):
            raise SDCInputError("intervals: must be the audit's DataFrame with columns 'lo', 'up' (tables.audit)")
        if not intervals.index.equals(table.cells.index):
            raise SDCInputError("intervals: must be indexed like table.cells (the audit of this table)")
        for bound in ("lo", "up"):
            out[bound] = pd.array(np.where(hidden, intervals[bound].to_numpy(dtype=np.float64), np.nan), dtype="Float64")
    return out.reset_index(drop=True)


def write_published(frame: pd.DataFrame, path, *, fmt: str = "csv", sep: str = ",", decimal: str = ".") -> Path:
    """Write a :func:`published_table` at ``path`` (atomically) as ``fmt``:

    * ``"csv"``: UTF-8, a header row, ``sep`` ``","`` or ``";"`` between fields, ``decimal`` ``"."``
      or ``","`` (with ``;``, as offices writing a decimal comma do), blank fields where suppressed,
      lines ended by LF;
    * ``"xlsx"``: the sheet ``table``, the header in the first row (openpyxl), blank cells where
      suppressed, and the sheet ``legend``: each status letter the table uses with its meaning
      (:data:`STATUS_LEGEND`), as a published workbook explains its flags to its readers; its
      write-time stamps pinned (:func:`sdc_dagster.files.pin_timestamp`), so that the same frame
      gives the same bytes and digest.

    Returns the path. Raises :class:`SDCInputError` for another format, separator or decimal mark, or a
    decimal mark equal to the separator.
    """
    check_option(fmt, "fmt", ("csv", "xlsx"))
    path = Path(path)
    if fmt == "csv":
        check_option(sep, "sep", (",", ";"))
        check_option(decimal, "decimal", (".", ","))
        if decimal == sep:
            raise SDCInputError(f"decimal: {decimal!r} is the separator too; write a decimal comma with sep=';'")
        text = frame.to_csv(index=False, sep=sep, decimal=decimal, na_rep="", lineterminator="\n")
        return write_atomic(path, text)
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)  # rows streamed to the file, not a workbook held in memory
    sheet = workbook.create_sheet("table")
    sheet.append([str(c) for c in frame.columns])
    for row in frame.astype(object).where(frame.notna(), None).itertuples(index=False, name=None):
        sheet.append(row)  # openpyxl takes a sheet row by row (published cells, not records)
    legend = workbook.create_sheet("legend")
    legend.append(["status", "meaning"])
    used = set(frame["status"]) if "status" in frame else set()
    for letter, meaning in STATUS_LEGEND.items():
        if letter in used:
            legend.append([letter, meaning])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return write_atomic(path, pin_timestamp(buffer.getvalue(), "xlsx"))


def _number_text(values: np.ndarray) -> list[str]:
    """Numbers as a ``.tab`` file writes them: whole numbers without decimals, others in Python's
    shortest form that reads back to the same float (no exponent: ``1e-05`` is written 0.00001)."""
    if _whole(values):
        return [str(int(v)) for v in values]
    return [np.format_float_positional(v, trim="-") for v in values]


def _decimals(texts: list[str]) -> int:
    return max((len(t.partition(".")[2]) for t in texts), default=0)


def write_tau_argus(table: Table, directory, name: str, *, suppressed=None) -> dict[str, Path]:
    """Write ``table`` as tau-Argus tabular input (module docstring) into ``directory``:
    ``<name>.tab``, ``<name>.rda``, ``<name>_<dimension>.hrc`` per hierarchical dimension and, with
    ``suppressed`` (a bool Series indexed like ``table.cells``), ``<name>.hst``: every suppressed
    cell (inner or total) as an a priori unsafe cell, and the ``.tab`` lines with their status
    (``S`` safe, ``U`` suppressed).

    The ``.tab`` holds every inner cell (zeros included), its dimension codes, then for a magnitude
    table ``value``, ``freq`` and (microdata) the largest contributions ``top1`` .. ``top3``, for a
    frequency table ``freq``; then ``status``. A value is written at the decimals of the input
    (:func:`_input_decimals`, as :func:`published_table` writes it: ``105.3``, not the summation's
    ``105.30000000000001`` with ``<DECIMALS> 15``). A magnitude table's ``freq`` is its number of
    contributors, each holding one (``tabulate(..., holding=)``; tau-Argus manual §4.2.3), the units
    its top contributions are of: the tau-Argus manual's tabular input gives a cell's number of
    contributors, which the frequency rule and the (n, k) rule's contributors read, so the records of
    a holding written as its count would make a cell of two holdings safe under ``freq`` n = 2. Returns the paths written: ``"tab"``, ``"rda"``,
    ``"hst"``, and ``"hrc:<dimension>"``. Raises :class:`SDCInputError` for an unsafe ``name``
    (:func:`sdc_dagster.names.check_name`, a file name) or a code holding the separator ``,`` or a
    quote.
    """
    check_name("partition key", name)
    directory = Path(directory)
    hidden = None if suppressed is None else _row_flags(table, suppressed, "suppressed")
    inner = table.cells.iloc[table.inner_rows]
    columns: dict[str, list[str]] = {}
    for d in table.dimensions:
        codes = inner[d.name].astype(str)
        bad = codes[codes.str.contains('[,"]', regex=True) | (codes != codes.str.strip()) | (codes == "")]
        if len(bad):
            raise SDCInputError(f"dimension {d.name!r}: code {bad.iloc[0]!r} cannot be written in a .tab file (empty, "
                                "blanks around it, or holding the separator ',' or a quote)")
        columns[d.name] = codes.tolist()
    rda = [f'<SEPARATOR> "{_SEPARATOR}"', *(f'<{k.upper()}> "{v}"' for k, v in TAB_STATUS.items())]
    paths: dict[str, Path] = {}
    for d in table.dimensions:
        rda += [d.name, "  <RECODEABLE>", f'  <TOTCODE> "{d.codes[0]}"']
        if d.text:
            hrc_name = f"{name}_{d.name}.hrc"
            check_name("partition key", hrc_name)
            hierarchy = pd.DataFrame({"parent": d.codes[d.parent[1:]], "child": d.codes[1:]}, dtype=object)
            paths[f"hrc:{d.name}"] = write_hrc(hierarchy, inside(directory, hrc_name), total=d.codes[0])
            rda += ["  <HIERARCHICAL>", f'  <HIERCODELIST> "{hrc_name}"', f'  <HIERLEADSTRING> "{LEADSTRING}"']
    numbers: list[tuple[str, str, np.ndarray]] = []
    if table.magnitude:
        values = inner["value"].to_numpy(dtype=np.float64)
        decimals = _input_decimals(table)  # sums at the input's decimals, as published_table writes them
        numbers.append(("value", "<NUMERIC>", values if decimals is None else np.round(values, decimals)))
        numbers.append(("freq", "<FREQUENCY>", table.contributors[table.inner_rows].astype(np.float64)))
        if table.contributions is not None:
            top = contributor_statistics(table, TOP_CONTRIBUTIONS).iloc[table.inner_rows]
            numbers += [(f"top{j}", "<MAXSCORE>", top[f"x{j}"].to_numpy()) for j in range(1, TOP_CONTRIBUTIONS + 1)]
    else:
        numbers.append(("freq", "<NUMERIC>", inner["freq"].to_numpy(dtype=np.float64)))
    for column, keyword, values in numbers:
        texts = _number_text(values)
        columns[column] = texts
        rda += [column, f"  {keyword}"]
        if keyword != "<FREQUENCY>":  # a count has none (rtauargus writes <DECIMALS> for the others)
            rda.append(f"  <DECIMALS> {_decimals(texts)}")
    if hidden is not None:
        columns["status"] = np.where(hidden[table.inner_rows], TAB_STATUS["unsafe"], TAB_STATUS["safe"]).tolist()
        rda += ["status", "  <STATUS>"]
    lines = pd.DataFrame(columns).to_csv(index=False, header=False, sep=_SEPARATOR, lineterminator="\r\n", quoting=3)
    paths["tab"] = write_atomic(inside(directory, f"{name}.tab"), lines)
    paths["rda"] = write_atomic(inside(directory, f"{name}.rda"), "".join(line + "\r\n" for line in rda))
    if hidden is not None:
        cells = table.cells.loc[hidden, table.names].astype(str)
        cells["status"] = "u"
        paths["hst"] = write_atomic(inside(directory, f"{name}.hst"),
                                    cells.to_csv(index=False, header=False, sep=_SEPARATOR, lineterminator="\r\n", quoting=3))
    return paths


def maxscore_columns(meta) -> list[str]:
    """The ``<MAXSCORE>`` columns (top contributions, largest first) of an ``.rda``'s metadata
    (:func:`sdc_dagster.datafiles.argus.read_rda`), in the order it lists them."""
    return [v.name for v in meta.variables if "maxscore" in v.flags]


def tab_measures(meta, name: str) -> dict:
    """The measures of tau-Argus tabular input as its ``.rda`` (``meta``:
    :func:`sdc_dagster.datafiles.argus.read_rda`; ``name``: the file's, for messages) declares them:
    ``{"freq": ..., "value": ..., "top": [...]}``, the ``<FREQUENCY>`` column and the ``<NUMERIC>``
    one, or without ``<FREQUENCY>`` (a frequency table, as sdcTable writes it) the one ``<NUMERIC>``
    column as the count and no value; ``top``: the ``<MAXSCORE>`` columns (:func:`maxscore_columns`).
    Raises :class:`SDCInputError` for several ``<FREQUENCY>`` columns, or no or several numeric
    columns where one is expected."""
    frequency = [v.name for v in meta.variables if "frequency" in v.flags]
    numeric = [v.name for v in meta.variables if "numeric" in v.flags and not v.flags & {"lowerpl", "upperpl"}]
    if len(frequency) > 1:
        raise SDCInputError(f"{name}: declares {len(frequency)} <FREQUENCY> columns ({', '.join(frequency)}); expected one")
    if frequency:
        names = {"freq": frequency[0], "value": numeric[0] if len(numeric) == 1 else None}
        if len(numeric) > 1:
            raise SDCInputError(f"{name}: declares {len(numeric)} <NUMERIC> columns ({', '.join(numeric)}); "
                                "expected one value column")
    else:
        if len(numeric) != 1:
            raise SDCInputError(f"{name}: declares no <FREQUENCY> column and {len(numeric)} <NUMERIC> columns; "
                                "a frequency table has one (its count)")
        names = {"freq": numeric[0], "value": None}
    names["top"] = maxscore_columns(meta)
    return names


def read_tau_argus(rda_path, *, tab_path=None) -> tuple[pd.DataFrame, dict[str, pd.DataFrame | None], dict[str, str | None]]:
    """Tau-Argus tabular input (module docstring): the inner cells of the ``.tab`` file (``tab_path``,
    default the ``.tab`` of the ``.rda``'s name beside it) as ``rda_path`` describes them, the
    dimensions and the names of the count and value columns, so that
    ``tabulate(cells, dimensions, freq=names["freq"], value=names["value"])`` rebuilds the table.

    * ``cells``: one row per line whose codes are all leaves (lines of totals and subtotals, which a
      ``.tab`` may hold, are left out: :func:`~sdc_dagster.tables.model.tabulate` adds them up), the
      codes as text, the numeric columns as numbers, the status as written;
    * ``dimensions``: per ``<RECODEABLE>`` column, its hierarchy (``parent``, ``child``) read from its
      ``<HIERCODELIST>`` below its ``<TOTCODE>``, or None for a flat dimension whose total is
      ``"Total"`` (a flat dimension with another total code becomes a one-level hierarchy);
    * ``names``: ``{"freq": ..., "value": ..., "top": [...]}``: the ``<FREQUENCY>`` column and the
      ``<NUMERIC>`` one, or without ``<FREQUENCY>`` (a frequency table, as sdcTable writes it) the one
      ``<NUMERIC>`` column as the count and no value; ``top``: the ``<MAXSCORE>`` columns (the
      largest contributions of each cell, largest first, as the ``.rda`` lists them; empty when
      none), which :func:`contributions_from_top` turns into contributors for the magnitude rules.

    Raises :class:`SDCInputError` naming the file and the line for a malformed ``.rda`` or ``.hrc``,
    a ``.tab`` that does not match the ``.rda``, no dimension, no or several numeric columns
    where one is expected.
    """
    rda_path = Path(rda_path)
    meta = read_rda(rda_path)
    if meta.separator is None:
        raise SDCInputError(f"{rda_path.name}: declares no <SEPARATOR>; tau-Argus tabular input is read in free format")
    if tab_path is None:
        tab_path = resolve_beside(rda_path.parent, f"{rda_path.stem}.tab")
        if tab_path is None:
            raise SDCInputError(f"{rda_path.name}: no {rda_path.stem}.tab beside it; give tab_path=")
    dims = [v for v in meta.variables if "recodable" in v.flags]
    if not dims:
        raise SDCInputError(f"{rda_path.name}: declares no dimension (a variable with <RECODEABLE>)")
    # hierarchical codes stay text (``01`` is not 1); flat codes are typed as a CSV reader types them
    read = read_argus(Path(tab_path), rda_path, text_columns=[
        v.name for v in meta.variables if v.hierarchy or "status" in v.flags])
    cells = read.data
    names = tab_measures(meta, rda_path.name)
    dimensions: dict[str, pd.DataFrame | None] = {}
    leaf = np.ones(len(cells), dtype=bool)
    for v in dims:
        total = v.totcode if v.totcode is not None else TOTAL
        if v.name in read.hierarchies:  # its <HIERCODELIST>, found beside the .rda by read_argus
            hierarchy = read_hrc(Path(read.hierarchies[v.name]), total=total, leadstring=v.leadstring or LEADSTRING)
            leaves = set(hierarchy["child"]) - set(hierarchy["parent"])
            dimensions[v.name] = hierarchy
        else:
            leaves = set(cells[v.name]) - {total}
            dimensions[v.name] = None if total == TOTAL else pd.DataFrame(
                {"parent": total, "child": sorted(leaves)}, dtype=object)
        leaf &= cells[v.name].isin(leaves).to_numpy()
    return cells.loc[leaf].reset_index(drop=True), dimensions, names


def read_apriori(path, dimensions: Sequence[str], *, separator: str = _SEPARATOR) -> pd.DataFrame:
    """The cells an a priori file (``.hst``, the tau-Argus manual's "a priori information", as
    :func:`write_tau_argus` and rtauargus's ``tab_rda`` write it) marks unsafe: one line per cell,
    its code on every one of ``dimensions`` (inner cells or totals, each total under its code), then
    ``u``. One column per dimension, the codes as text, one row per line (blank lines skipped).

    Only ``u`` (unsafe) is read: ``s`` (safe) would publish a cell the rules find unsafe, and ``p``
    (protected), ``c`` (a cost) and ``ml``/``pl`` (protection levels) are not a priori unsafety; each
    raises :class:`SDCInputError` naming the file, the line and the status, as does a line without a
    code for every dimension."""
    path = Path(path)
    rows = []
    width = len(dimensions) + 1
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        fields = [f.strip().strip('"') for f in line.split(separator)]
        if len(fields) < width:
            raise SDCInputError(f"{path.name}:{number}: expected a code for each of {', '.join(dimensions)} and then "
                                f"the status, got {line!r}")
        status = fields[len(dimensions)].lower()
        if status != "u":
            raise SDCInputError(f"{path.name}:{number}: status {fields[len(dimensions)]!r} is not read: only u "
                                "(a priori unsafe: the cell is suppressed as a primary)")
        rows.append(fields[:len(dimensions)])
    return pd.DataFrame(rows, columns=list(dimensions), dtype=object)


def contributions_from_top(cells: pd.DataFrame, dimensions: Sequence[str], *, value: str, freq: str,
                           top: Sequence[str]) -> pd.DataFrame:
    """The contributors of aggregated magnitude input whose lines carry their largest contributions
    (tau-Argus's tabular input with ``<MAXSCORE>`` columns, the tau-Argus manual §3.4 "tabular
    data": each cell's value, its number of contributors and its top-n contributions), one row per
    contributor, so that ``tabulate(rows, dimensions, value=value)`` gives the table with
    contributions the dominance, p % and pq rules read (:mod:`sdc_dagster.tables.primary`).

    A cell of value ``X``, ``n`` contributors and given top contributions ``x_1 >= ... >= x_k``
    (a 0 is no contributor) becomes those contributors plus ``n - k`` contributors of equal share
    ``(X - x_1 - ... - x_k) / (n - k)`` of the rest: each at most ``x_k`` when the input is
    consistent, so the top-n of a cell and of every total above it (whose top-n are the largest
    of its inner cells' tops, as tau-Argus computes them from tabular input: a contributor is
    assumed to be in one inner cell) and its total ``X`` are those of the input; the (n, k) rules
    with n <= k and the p % and pq rules therefore decide as on the microdata. Contributions are
    taken as >= 0 (the rules read them by absolute value).

    Raises :class:`SDCInputError` naming the cell for a count below the number of given
    contributions, top contributions above the value, a rest without contributors left for it, or
    a share above the smallest given top (the tops would not be the largest).
    """
    n = pd.to_numeric(cells[freq]).to_numpy(dtype=np.float64)
    total = pd.to_numeric(cells[value]).to_numpy(dtype=np.float64)
    tops = cells[list(top)].apply(pd.to_numeric).to_numpy(dtype=np.float64)
    given = (tops != 0).sum(axis=1)
    rest = total - tops.sum(axis=1)
    others = n - given
    tolerance = 1e-9 * np.maximum(np.abs(total), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(others > 0, rest / np.where(others > 0, others, 1), 0.0)
    smallest = np.where(given > 0, np.where(tops != 0, tops, np.inf).min(axis=1), np.inf)
    problems = (("its count is below the number of its top contributions", (n % 1 != 0) | (others < 0)),
                ("its top contributions exceed its value", rest < -tolerance),
                ("its value exceeds its top contributions and it has no other contributor",
                 (others == 0) & (rest > tolerance)),
                ("the share of its other contributors exceeds its smallest top contribution: the tops are not "
                 "the largest", share > smallest + tolerance))
    for why, bad in problems:
        if bad.any():
            row = cells.iloc[int(np.flatnonzero(bad)[0])]
            cell = ", ".join(f"{d}={row[d]!r}" for d in dimensions)
            raise SDCInputError(f"cell ({cell}): {why} ({value} {row[value]}, {freq} {row[freq]}, "
                                f"{', '.join(f'{t} {row[t]}' for t in top)})")
    line, rank = np.nonzero(tops != 0)
    count = np.maximum(others, 0).astype(np.int64)
    rows = np.concatenate([line, np.repeat(np.arange(len(cells)), count)])
    out = cells.iloc[rows][list(dimensions)].reset_index(drop=True)
    out[value] = np.concatenate([tops[line, rank], np.repeat(share, count)])
    return out


def read_aggregated(path, *, options: Mapping | None = None) -> pd.DataFrame:
    """Aggregated input (inner cells with their counts or sums, one row a cell): the records of a
    CSV file written with ``;`` or ``,`` (or of a workbook, a Parquet, SPSS or Stata file), read by
    the project's one reading path (:func:`sdc_dagster.spec.reading.read_with_metadata`): a CSV's
    separator, decimal mark, header and encoding are detected unless ``options`` (``sep``,
    ``decimal``, ``encoding``, ``header``; a workbook's ``sheet``) gives them. The frame is
    :func:`~sdc_dagster.tables.model.tabulate`'s ``data`` with ``freq=``/``value=``.
    Raises :class:`SDCInputError` naming the file (missing, empty, of an unknown format)."""
    return read_with_metadata(Path(path), options=options).data
