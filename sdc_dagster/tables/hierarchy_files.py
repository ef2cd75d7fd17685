"""A table dimension's hierarchy (parent/child pairs, its root the total, as
:func:`~sdc_dagster.tables.model.tabulate` takes it) from the files and codes offices keep.

* :func:`read_hrc`, :func:`write_hrc`: tau-Argus's hierarchical code list (``.hrc``; the tau-Argus
  manual's "hierarchical codelist", Statistics Netherlands; the files sdcTable's
  ``createArgusInput`` and rtauargus's ``write_hrc2`` write): one code a line, the lead string
  (``<HIERLEADSTRING>``, default ``@``) repeated once per level below the top, each code followed
  by its children; the total is not listed (the ``.rda`` names it, ``<TOTCODE>``). The lines are
  parsed by :func:`sdc_dagster.datafiles.argus.hrc_entries`, the one reader of the format (the
  survey keys' hierarchies read it too, :func:`sdc_dagster.spec.hierarchies.read_hrc`).
* :func:`hierarchy_from_codes`: codes whose leading characters classify them (ISCO-08: unit group
  ``5111`` in minor group ``511``, sub-major group ``51``, major group ``5``; NACE Rev. 2 with its
  section letter: ``A011`` in ``A01`` in ``A``; NUTS: ``PL213`` in ``PL21`` in ``PL2``): each code's
  parent is its prefix at the next shorter of the given lengths.
* :func:`hierarchy_from_columns`: nested columns of the data (county within region), coarsest first.

Every hierarchy returned is checked as the table model checks it
(:func:`~sdc_dagster.tables.model.hierarchical_dimension`: one root, one parent per code, no cycle).

References
----------
Hundepool, A. et al. (2014), *tau-Argus manual* 4.1, Statistics Netherlands (hierarchical code lists,
``<HIERLEADSTRING>``, ``<TOTCODE>``). International Labour Office (2012), *ISCO-08*, Vol. 1,
structure; Eurostat (2008), *NACE Rev. 2*, structure; Eurostat (2020), *NUTS*, code structure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.datafiles.argus import hrc_entries, read_text_file
from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.files import write_atomic
from sdc_dagster.tables.model import TOTAL, hierarchical_dimension

#: The default lead string of an ``.hrc`` file (``<HIERLEADSTRING>``).
LEADSTRING = "@"


def _hrc_source(path_or_text) -> tuple[str, str]:
    """(text, name used in messages): a :class:`~pathlib.Path`, or a ``str`` without a line break
    that names an existing file or ends in ``.hrc``, is read (UTF-8, else Windows-1252); any other
    ``str`` is the text."""
    one_line = isinstance(path_or_text, str) and "\n" not in path_or_text and "\r" not in path_or_text
    if isinstance(path_or_text, Path) or (one_line and (Path(path_or_text).is_file()
                                                        or path_or_text.lower().endswith(".hrc"))):
        path = Path(path_or_text)
        if not path.is_file():
            raise SDCInputError(f"{path}: no such .hrc file")
        return read_text_file(path, what=".hrc file"), path.name
    if not isinstance(path_or_text, str):
        raise SDCInputError(f"read_hrc: expected a path or the text of an .hrc file, got {type(path_or_text).__name__}")
    return path_or_text, "hrc text"


def read_hrc(path_or_text, *, total: str = TOTAL, leadstring: str = LEADSTRING) -> pd.DataFrame:
    """The hierarchy of a tau-Argus ``.hrc`` file (module docstring) as ``parent``, ``child`` pairs in
    file order; the codes at depth 0 are the children of ``total`` (the dimension's ``<TOTCODE>``).

    ``path_or_text``: a path, or the text of the file. Raises :class:`SDCInputError` naming the file
    and the line: a code more than one level below the code before it, a lead string without a code,
    a code listed twice or equal to the total, an empty file.
    """
    text, source = _hrc_source(path_or_text)
    entries = hrc_entries(text, source=source, leadstring=leadstring)
    parents, stack = [], []
    for depth, code, line in entries:
        if code == total:
            raise SDCInputError(f"{source} line {line}: code {code!r} is the total; the total is not listed in an .hrc file")
        del stack[depth:]
        parents.append(stack[-1] if stack else total)
        stack.append(code)
    return pd.DataFrame({"parent": parents, "child": [code for _, code, _ in entries]}, dtype=object)


def hrc_text(hierarchy: pd.DataFrame, *, total: str = TOTAL, leadstring: str = LEADSTRING) -> str:
    """The text of the ``.hrc`` file of ``hierarchy`` (``parent``, ``child`` pairs whose root is
    ``total``): every code but the total, depth first in the order of the pairs, preceded by
    ``leadstring`` once per level below the top, lines ended by CR LF as the Argus tools (Windows)
    and sdcTable write them. Raises :class:`SDCInputError` for a hierarchy the table model refuses,
    a root other than ``total``, and a code that the file could not give back (empty, with blanks
    around it, starting with the lead string, or holding a line break)."""
    dimension = hierarchical_dimension("hierarchy", hierarchy)
    root = dimension.codes[0]
    if root != str(total):
        raise SDCInputError(f"hierarchy: its root is {root!r}, not the total {total!r}; give total={root!r}")
    codes = dimension.codes[1:]
    for code in codes:
        if not code or code != code.strip() or code.startswith(leadstring) or "\n" in code or "\r" in code:
            raise SDCInputError(f"hierarchy: code {code!r} cannot be written in an .hrc file (empty, blanks around "
                                f"it, a line break, or starting with the lead string {leadstring!r})")
    lines = [leadstring * (int(level) - 1) + code for code, level in zip(codes, dimension.level[1:])]
    return "".join(line + "\r\n" for line in lines)


def write_hrc(hierarchy: pd.DataFrame, path, *, total: str = TOTAL, leadstring: str = LEADSTRING) -> Path:
    """Write ``hierarchy`` as a tau-Argus ``.hrc`` file at ``path`` (:func:`hrc_text`; atomically,
    UTF-8); returns the path."""
    return write_atomic(Path(path), hrc_text(hierarchy, total=total, leadstring=leadstring))


def hierarchy_from_codes(codes: Sequence, levels: Sequence[int] = (1, 2, 4), *, total: str = TOTAL) -> pd.DataFrame:
    """The hierarchy of codes classified by their leading characters (module docstring).

    ``levels``: the lengths of the codes at each level, from the top (``[1, 2, 4]``: ISCO's major
    group ``5``, sub-major group ``51``, unit group ``5111``); every code (as text, blanks around it
    removed) must have one of them. A code's parent is its prefix at the next shorter length, the
    codes of the shortest length are the children of ``total``; prefixes that are not among
    ``codes`` are added (codes of the data at the finest level give the whole tree). Codes are
    listed in sorted order under each parent. Raises :class:`SDCInputError` naming a code whose
    length is not a level, and for levels that are not increasing positive whole numbers.
    """
    lengths = list(levels)
    if (not lengths or any(not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1 for n in lengths)
            or any(b <= a for a, b in zip(lengths, lengths[1:]))):
        raise SDCInputError(f"levels: must be increasing positive code lengths, from the top level, got {lengths}")
    text = pd.Series(pd.unique(pd.Series(list(codes), dtype=object).dropna().astype(str).str.strip()), dtype=object)
    if text.empty:
        raise SDCInputError("codes: no code given")
    length = text.str.len()
    wrong = ~length.isin(lengths)
    if wrong.any():
        bad = text[wrong].iloc[0]
        raise SDCInputError(f"codes: {bad!r} has {len(bad)} characters; every code must have one of the level lengths {lengths}")
    if (text == str(total)).any():
        raise SDCInputError(f"codes: {total!r} is the total; it cannot be a code")
    # every code and its prefixes at the shorter levels
    nodes = pd.unique(pd.concat([text[length >= n].str[:n] for n in lengths], ignore_index=True))
    nodes = pd.Series(sorted(nodes), dtype=object)
    size = nodes.str.len()
    parents = pd.Series(str(total), index=nodes.index, dtype=object)
    for shorter, longer in zip(lengths, lengths[1:]):
        below = size == longer
        parents[below] = nodes[below].str[:shorter]
    hierarchy = pd.DataFrame({"parent": parents.to_list(), "child": nodes.to_list()}, dtype=object)
    hierarchical_dimension("codes", hierarchy)
    return hierarchy


def hierarchy_from_columns(data: pd.DataFrame, columns: Sequence[str], *, total: str = TOTAL) -> pd.DataFrame:
    """The hierarchy of nested columns of ``data``, coarsest first (``["region", "county"]``: each
    county within one region, the regions below ``total``); codes as text, in sorted order under each
    parent. The finest column is the table's dimension (``data`` holds its codes).

    Raises :class:`SDCInputError` naming the column and the value: a missing column or value, a value
    of a finer column lying in two values of the coarser one, a code in two columns.
    """
    columns = list(columns)
    if not columns:
        raise SDCInputError("columns: give the nested columns, coarsest first")
    require_columns(data, columns, role="hierarchy column")
    frame = data[columns]
    for column in columns:
        if frame[column].isna().any():
            raise SDCInputError(f"hierarchy column {column!r}: row {int(np.flatnonzero(frame[column].isna().to_numpy())[0])} is missing")
    frame = frame.astype(str).drop_duplicates()
    pairs = [pd.DataFrame({"parent": total, "child": sorted(frame[columns[0]].unique())}, dtype=object)]
    for coarse, fine in zip(columns, columns[1:]):
        links = frame[[coarse, fine]].drop_duplicates().sort_values([coarse, fine])
        split = links[fine].duplicated(keep=False)
        if split.any():
            value = links.loc[split, fine].iloc[0]
            within = links.loc[links[fine] == value, coarse].tolist()
            raise SDCInputError(f"hierarchy column {fine!r}: value {value!r} lies in {len(within)} values of {coarse!r} "
                                f"({', '.join(map(repr, within[:3]))}); each value must lie in one value of the coarser column")
        pairs.append(pd.DataFrame({"parent": links[coarse].to_numpy(), "child": links[fine].to_numpy()}, dtype=object))
    hierarchy = pd.concat(pairs, ignore_index=True)
    twice = hierarchy["child"][hierarchy["child"].duplicated()]
    if len(twice):
        raise SDCInputError(f"hierarchy columns {columns}: code {twice.iloc[0]!r} is a value of two of them; "
                            "codes must differ between levels")
    hierarchical_dimension("+".join(columns), hierarchy)
    return hierarchy
