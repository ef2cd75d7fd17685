"""Generalisation hierarchies of categorical keys: read from the files methodologists keep, written
inline in a spec, and turned into the chain of levels the plan search walks (SPEC §8.2, §14.1).

A :class:`Hierarchy` is a domain of values (level 0) and a chain of levels, each a partition of the
domain into named groups that coarsens the level before (every group of level h lies inside one group
of level h + 1). That is ARX's hierarchy table read by levels (SPEC §14.1: one row per value, column 0
the value, column h its generalisation at level h, the last column the top ``*``); :meth:`Hierarchy.to_arx`
and :meth:`Hierarchy.from_arx` convert between the two.

Readers:

* :func:`read_arx_hierarchy`: ARX's hierarchy CSV (``;``-separated, no header; ARX Data Anonymization
  Tool, "Hierarchies" in its documentation; the adult example's ``adult_hierarchy_*.csv``);
* :func:`read_hrc`: the Argus hierarchical code list (``.hrc``, tau-Argus and mu-Argus manuals,
  "hierarchical codelist"): one code per line, its depth given by how many times the lead string
  (``<HIERLEADSTRING>``, default ``@``) precedes it, each code followed by its children; codes may be
  padded with blanks to the variable's width, the total is not listed. Leaves are the data's codes;
  a leaf above the deepest level stays itself until the levels reach its depth;
* an Argus code list (``.cdl``: ``code,label`` per line) names the groups of an ``.hrc`` file; it is
  read by :func:`sdc_dagster.datafiles.argus.read_codelist`, the reader that gives Argus data files
  their value labels (one reader of the format);
* :func:`spec_hierarchy`: a key's ``hierarchy:`` in a spec: a file (a path relative to the spec, the
  format by extension or content), inline levels, or a rule the data complete (code prefixes, a
  coarser column, round-width bands; :mod:`sdc_dagster.spec.drafted_hierarchies`).

Every problem is an :class:`~sdc_dagster.errors.SDCInputError` naming the file, the line and the rule:
a value listed twice (a value in two groups), a level that is not a coarsening of the one before, a
row of the wrong length, and (:meth:`Hierarchy.on_categories`) a value of the data the hierarchy
does not list.

References
----------
Prasser, F. & Kohlmayer, F. (2015), "Putting statistical disclosure control into practice: the ARX
data anonymization tool", in *Medical Data Privacy Handbook*, Springer (ARX's generalisation
hierarchies, one column per level). Hundepool, A. et al. (2014), *mu-Argus user's manual* 5.1 and
*tau-Argus manual* 4.1, Statistics Netherlands (hierarchical code lists ``.hrc``, ``<HIERLEADSTRING>``,
code lists ``.cdl``). Hundepool et al. (2012), *Statistical Disclosure Control*, Wiley, §3.4.2
(global recoding along a hierarchy).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdc_dagster.datafiles.argus import hrc_entries, read_codelist, read_text_file
from sdc_dagster.errors import SDCInputError

#: The top of an ARX hierarchy: every value generalised to one.
ARX_TOP = "*"
#: The default lead string of an Argus ``.hrc`` file (``<HIERLEADSTRING>``).
HRC_LEADSTRING = "@"
#: A merged group of at most this many members is named by all of them ("Bachelors, Masters,
#: Doctorate"); a larger one by its first and last member and the count.
MEMBERS_NAMED = 3


def value_text(value) -> str:
    """A category as text, the form hierarchies compare values in (CONTRACT: "values compared as
    strings"): a whole float as an integer (SPSS and Stata codes are read as floats, ``5.0`` is
    the code ``5``), a numpy scalar as its Python value."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_WHOLE_NUMBER = re.compile(r"^[+-]?[0-9]+(\.0*)?$")


def _match_text(value) -> str:
    """The text a data value and a hierarchy value are matched on: :func:`value_text` without
    surrounding blanks, a whole number without leading zeros (a code ``"01"`` in a hierarchy file is
    the code ``1`` a data file read as a number)."""
    text = value_text(value).strip()
    return str(int(float(text))) if _WHOLE_NUMBER.match(text) else text


def members_name(members: Sequence, labels: Mapping | None = None, order: Sequence | None = None) -> str:
    """The name of a merged group that has no name of its own (SPEC §8.2: "a label that names it (its
    members ...)"), the one naming of merged groups everywhere (hierarchies, the search's levels, the
    released files): its members' labels (``labels``: member -> text, the source's value labels; else
    the codes) when at most :data:`MEMBERS_NAMED`, else the first and last with the count, " – "
    between them when the members are a run of adjacent categories of ``order`` (the variable's
    categories in order) and ", …, " when they are not or the order is unknown."""
    labels = labels or {}
    texts = [str(labels[m]) if m in labels else value_text(m) for m in members]
    if len(texts) <= MEMBERS_NAMED:
        return ", ".join(texts)
    order = list(order) if order is not None else []
    positions = [order.index(m) for m in members if m in order]
    adjacent = (len(positions) == len(texts)
                and positions == list(range(positions[0], positions[0] + len(texts))))
    return f"{texts[0]}{' – ' if adjacent else ', …, '}{texts[-1]} ({len(texts)} categories)"


def other_name(members: Sequence, labels: Mapping | None = None, order: Sequence | None = None) -> str:
    """The explicit "Other" group of rare nominal categories (SPEC §8.2): "Other (b, c, e)", named by
    its members when at most :data:`MEMBERS_NAMED`, else "Other (N categories)"."""
    if len(members) <= MEMBERS_NAMED:
        return f"Other ({members_name(members, labels, order)})"
    return f"Other ({len(members)} categories)"


def labelled_name(name: str, members: Sequence, labels: Mapping, order: Sequence | None = None) -> str:
    """A group's ``name`` with the members' codes that :func:`members_name` wrote into it (alone, at its
    end as in a drafted hierarchy's "water3 = 100: 4, 5, 6", or inside "Other (...)") replaced by
    their labels: the search and the hierarchies name groups from the codes they see, the released
    file from the source's value labels. A name written otherwise is returned as given."""
    if not labels or not any(m in labels for m in members):
        return name
    for made in dict.fromkeys((members_name(members, order=order), members_name(members))):
        for tail in (made, made + ")"):
            if name == tail or name.endswith(" " + tail) or name.endswith("(" + tail):
                head = name[: len(name) - len(tail)]
                return head + members_name(members, labels, order) + tail[len(made):]
    return name


@dataclass(frozen=True)
class HierarchyLevel:
    """One level: a partition of the hierarchy's values into groups, each with a name (the hierarchy's
    label at this level; a one-member group is named by its label or its value)."""

    name: str
    groups: tuple[tuple, ...]
    names: tuple[str, ...]

    def merged(self) -> list[tuple[tuple, str]]:
        """The groups of more than one value, with their names."""
        return [(g, n) for g, n in zip(self.groups, self.names) if len(g) > 1]


@dataclass(frozen=True)
class Hierarchy:
    """A key's domain ``values`` (level 0) and its ``levels`` (1, 2, ...), each coarsening the one
    before. ``source`` says where it came from (a file name, ``"spec"``, a drafting rule);
    ``complete``: whether every value of the data must be listed (a file) or unlisted values stay
    alone at every level (inline levels that name only the groups merged)."""

    values: tuple
    levels: tuple[HierarchyLevel, ...]
    source: str = "spec"
    complete: bool = True

    def __post_init__(self):
        check_levels(self.values, self.levels, self.source)

    @classmethod
    def from_arx(cls, frame: pd.DataFrame, *, source: str = "ARX hierarchy") -> Hierarchy:
        """A hierarchy from ARX's layout (SPEC §14.1): column 0 the value, column h its
        generalisation at level h (groups are the values sharing a label); labels compared as text."""
        table = frame.astype(str)
        if table.shape[1] < 1 or table.empty:
            raise SDCInputError(f"{source}: an ARX hierarchy needs at least one row and one column")
        return _from_columns([table[c].tolist() for c in table.columns], source=source,
                             lines=list(range(1, len(table) + 1)))

    def to_arx(self) -> pd.DataFrame:
        """The hierarchy in ARX's layout (SPEC §14.1; the input of ``search.optimal_generalisation``):
        column 0 each value as text, column h its group's name at level h, the last column the top
        ``*`` (added when the last level has more than one group)."""
        columns = {0: [value_text(v) for v in self.values]}
        for h, level in enumerate(self.levels, 1):
            name_of = {v: n for g, n in zip(level.groups, level.names) for v in g}
            columns[h] = [name_of[v] for v in self.values]
        if not self.levels or len(self.levels[-1].groups) > 1:
            columns[len(columns)] = [ARX_TOP] * len(self.values)
        return pd.DataFrame(columns)

    def on_categories(self, categories: Sequence, *, where: str = "") -> Hierarchy:
        """The hierarchy over the data's ``categories`` (their own values and types), matched by
        text (:func:`value_text`): values the data lack are dropped from every group (a group left
        empty disappears), a category the hierarchy lacks is an error when it is ``complete``, else
        a group of its own at every level."""
        where = f"{where}: " if where else ""
        by_text = {_match_text(c): c for c in categories}
        known = {_match_text(v) for v in self.values}
        unknown = [c for t, c in by_text.items() if t not in known]
        if unknown and self.complete:
            shown = ", ".join(repr(value_text(c)) for c in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
            raise SDCInputError(f"{where}value {shown} of the data is not in the hierarchy ({self.source}); "
                                "every value of the data must have a row in it")
        levels = []
        for level in self.levels:
            groups, names = [], []
            for group, name in zip(level.groups, level.names):
                present = tuple(by_text[t] for t in (_match_text(v) for v in group) if t in by_text)
                if present:
                    groups.append(present)
                    names.append(name)
            groups += [(c,) for c in unknown]
            names += [value_text(c) for c in unknown]
            levels.append(HierarchyLevel(level.name, tuple(groups), tuple(names)))
        values = tuple(c for t, c in by_text.items() if t in known) + tuple(unknown)
        return Hierarchy(values, tuple(levels), self.source, complete=True)


def check_levels(values: Sequence, levels: Sequence[HierarchyLevel], source: str) -> None:
    """Each level a partition of ``values`` with one name per group, distinct within the level, and a
    coarsening of the level before (SPEC §14.1); :class:`~sdc_dagster.errors.SDCInputError` otherwise."""
    texts = [value_text(v) for v in values]
    if len(set(texts)) != len(texts):
        twice = next(t for t in texts if texts.count(t) > 1)
        raise SDCInputError(f"{source}: value {twice!r} is listed twice; each value must appear once")
    previous = {t: i for i, t in enumerate(texts)}  # level 0: every value its own group
    for h, level in enumerate(levels, 1):
        if len(level.names) != len(level.groups):
            raise SDCInputError(f"{source}: level {h} has {len(level.groups)} groups and {len(level.names)} names")
        if len(set(level.names)) != len(level.names):
            twice = next(n for n in level.names if level.names.count(n) > 1)
            raise SDCInputError(f"{source}: level {h} names two groups {twice!r}; each group needs its own name")
        group_of = {}
        for g, group in enumerate(level.groups):
            for v in group:
                t = value_text(v)
                if t in group_of:
                    raise SDCInputError(f"{source}: level {h} puts value {t!r} in two groups "
                                        f"({level.names[group_of[t]]!r} and {level.names[g]!r})")
                group_of[t] = g
        if set(group_of) != set(texts):
            odd = next(iter(sorted(set(group_of) ^ set(texts))))
            raise SDCInputError(f"{source}: level {h} does not place every value in one group (value {odd!r})")
        seen: dict[int, int] = {}
        for t in texts:
            if seen.setdefault(previous[t], group_of[t]) != group_of[t]:
                raise SDCInputError(
                    f"{source}: level {h} is not a coarsening of level {h - 1}: value {t!r} leaves its group of "
                    f"level {h - 1} for {level.names[group_of[t]]!r} while the others of that group go to "
                    f"{level.names[seen[previous[t]]]!r}")
        previous = group_of


def _from_columns(columns: list[list[str]], *, source: str, lines: list[int],
                  labels: Mapping[str, str] | None = None, level_names: Sequence[str] | None = None) -> Hierarchy:
    """A hierarchy from ARX-like columns of labels (column 0 the values); ``lines`` the file line of
    each row, named in the errors: a value listed twice, a label of level h - 1 that goes to two
    labels of level h (not a coarsening). ``labels`` renames group labels (an Argus code list)."""
    values = columns[0]
    first: dict[str, int] = {}
    for row, value in enumerate(values):
        if value in first:
            raise SDCInputError(f"{source} line {lines[row]}: value {value!r} is listed again (first on line "
                                f"{lines[first[value]]}); each value must have one row")
        first[value] = row
    levels = []
    for h in range(1, len(columns)):
        parent: dict[str, tuple[str, int]] = {}
        for row, (finer, coarser) in enumerate(zip(columns[h - 1], columns[h])):
            if h > 1 and parent.setdefault(finer, (coarser, row))[0] != coarser:
                raise SDCInputError(
                    f"{source} line {lines[row]}: {finer!r} of level {h - 1} is generalised to {coarser!r} at level {h}, "
                    f"but to {parent[finer][0]!r} on line {lines[parent[finer][1]]}: each level must coarsen the one "
                    "before (a group of level h - 1 lies in one group of level h)")
        members: dict[str, list[str]] = {}
        for value, label in zip(values, columns[h]):
            members.setdefault(label, []).append(value)
        names = [(labels or {}).get(label, label) for label in members]
        if len(set(names)) != len(names):  # two codes with one label: the codes name them apart
            names = [f"{(labels or {}).get(c, c)} ({c})" for c in members]
        name = level_names[h - 1] if level_names else f"level {h} of {source}"
        levels.append(HierarchyLevel(name, tuple(tuple(g) for g in members.values()), tuple(names)))
    return Hierarchy(tuple(values), tuple(levels), source)


def _read_text(path: Path) -> str:
    """The text of a hierarchy file: UTF-8 (with or without BOM), else Windows-1252 (Argus files)."""
    return read_text_file(path, what="hierarchy file")


def read_arx_hierarchy(path: str | Path, *, separator: str | None = None) -> Hierarchy:
    """ARX's hierarchy CSV: one row per value, column 0 the value, column h its generalisation at level h,
    the last column the top (SPEC §14.1; ARX writes ``;``, no header).

    Parameters
    ----------
    path : the file (UTF-8, else Windows-1252).
    separator : the column separator; None takes ``;``, a tab or ``,``, whichever splits the first row.

    Returns
    -------
    :class:`Hierarchy` with the values as text, a level per column after the first (the top included),
    groups named by the file's labels.

    Raises
    ------
    SDCInputError : naming the file and the line: a row with another number of columns than the
        first, a value listed twice, a label of level h - 1 generalised to two labels of level h.
    """
    path = Path(path)
    text = _read_text(path)
    numbered = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise SDCInputError(f"{path.name}: the hierarchy file is empty")
    if separator is None:
        separator = next((s for s in (";", "\t", ",") if s in numbered[0][1]), ";")
    rows = list(csv.reader([line for _, line in numbered], delimiter=separator))
    width = len(rows[0])
    for (line, _), row in zip(numbered, rows):
        if len(row) != width:
            raise SDCInputError(f"{path.name} line {line}: {len(row)} columns, expected {width} as on line "
                                f"{numbered[0][0]} (one column per level)")
    columns = [[row[h].strip() for row in rows] for h in range(width)]
    return _from_columns(columns, source=path.name, lines=[line for line, _ in numbered])


def read_hrc(path: str | Path, *, leadstring: str = HRC_LEADSTRING, labels: Mapping[str, str] | None = None) -> Hierarchy:
    """An Argus hierarchical code list (module docstring).

    Parameters
    ----------
    path : the ``.hrc`` file: one code per line, preceded by the lead string once per level of depth.
    leadstring : the variable's ``<HIERLEADSTRING>`` (default ``@``).
    labels : code -> label (a code list, :func:`read_codelist`) naming the groups; default the codes.

    Returns
    -------
    :class:`Hierarchy` over the leaves (the codes without children, as text). With D the depth of the
    deepest code, level h (1..D) replaces every code deeper than D - h by its ancestor at depth D - h.

    Raises
    ------
    SDCInputError : naming the file and the line: a code deeper than one below the code before it
        (the first code not at depth 0), a lead string without a code, a code listed twice.
    """
    path = Path(path)
    codes = hrc_entries(_read_text(path), source=path.name, leadstring=leadstring)
    leaves, ancestors, stack = [], [], []
    for i, (depth, code, line) in enumerate(codes):
        del stack[depth:]
        stack.append(code)
        if i + 1 == len(codes) or codes[i + 1][0] <= depth:
            leaves.append((code, line))
            ancestors.append(list(stack))
    deepest = max(len(a) for a in ancestors) - 1
    columns = [[code for code, _ in leaves]]
    for h in range(1, deepest + 1):
        columns.append([a[min(len(a) - 1, deepest - h)] for a in ancestors])
    names = [f"depth {deepest - h} of {path.name}" for h in range(1, deepest + 1)]
    return _from_columns(columns, source=path.name, lines=[line for _, line in leaves], labels=labels,
                         level_names=names)


def hierarchy_files_beside(path: str | Path, columns: Sequence[str]) -> dict[str, Path]:
    """The hierarchy files beside a data file named as ARX names them: ``<data stem>_hierarchy_<column>.csv``
    (ARX's examples, e.g. ``adult_hierarchy_age.csv`` beside ``adult.csv``), column -> path, matched
    whatever the case of the letters; columns without such a file are absent."""
    path = Path(path)
    prefix = f"{path.stem}_hierarchy_".lower()
    wanted = {str(c).lower(): c for c in columns}
    found = {}
    for other in sorted(path.parent.iterdir()) if path.parent.is_dir() else ():
        name = other.name.lower()
        if other.is_file() and name.startswith(prefix) and name.endswith(".csv"):
            column = wanted.get(name[len(prefix):-len(".csv")])
            if column is not None:
                found.setdefault(column, other)
    return found


def read_hierarchy_file(path: str | Path, **options) -> Hierarchy:
    """A hierarchy file by its extension (``.hrc``: :func:`read_hrc`; ``.csv``/``.txt``:
    :func:`read_arx_hierarchy`), else by its content (a first line starting with the lead string or
    without a separator reads as ``.hrc``)."""
    path = Path(path)
    if not path.is_file():
        raise SDCInputError(f"{path}: no such hierarchy file")
    suffix = path.suffix.lower()
    hrc_options = {k: v for k, v in options.items() if k in ("leadstring", "labels")}
    if suffix == ".hrc":
        return read_hrc(path, **hrc_options)
    if suffix in (".csv", ".txt"):
        return read_arx_hierarchy(path, separator=options.get("separator"))
    first = next((line for line in _read_text(path).splitlines() if line.strip()), "")
    if first.startswith(options.get("leadstring") or HRC_LEADSTRING) or not any(s in first for s in ";,\t"):
        return read_hrc(path, **hrc_options)
    return read_arx_hierarchy(path, separator=options.get("separator"))


def inline_hierarchy(levels: Sequence, *, where: str = "hierarchy") -> Hierarchy:
    """A hierarchy written in a spec: a list of levels, each either a list of groups (lists of
    categories merged, the existing form) or ``{name: ..., groups: {group name: [categories]}}``
    (or ``groups:`` a list). Categories a level does not list stay alone at that level; groups without
    a name are named by their members (:func:`members_name`)."""
    if not isinstance(levels, list) or not levels:
        raise SDCInputError(f"{where}: expected a non-empty list of levels")
    values: dict[str, Any] = {}
    parsed = []
    for h, level in enumerate(levels):
        at = f"{where}[{h}]"
        name, groups = f"level {h + 1}", level
        if isinstance(level, Mapping):
            unknown = sorted(set(level) - {"name", "groups"}, key=str)
            if unknown:
                raise SDCInputError(f"{at}.{unknown[0]}: unknown key; expected 'name' and 'groups'")
            name, groups = str(level.get("name", name)), level.get("groups")
        if isinstance(groups, Mapping):
            named = [(str(n), g) for n, g in groups.items()]
        elif isinstance(groups, list):
            named = [(None, g) for g in groups]
        else:
            raise SDCInputError(f"{at}: expected a list of groups, each a non-empty list of categories, "
                                "or a mapping group name -> categories")
        level_groups = []
        for n, g in named:
            if not isinstance(g, list) or not g or any(isinstance(c, (list, Mapping)) for c in g):
                raise SDCInputError(f"{at}: expected a list of groups, each a non-empty list of categories, got {g!r}")
            for c in g:
                values.setdefault(value_text(c), c)
            level_groups.append((n if n is not None else members_name(g), tuple(g)))
        parsed.append((name, level_groups))
    built = []
    for h, (name, level_groups) in enumerate(parsed):
        listed = {value_text(c) for _, g in level_groups for c in g}
        alone = [(value_text(v), (v,)) for t, v in values.items() if t not in listed]
        groups = [g for _, g in level_groups] + [g for _, g in alone]
        names = [n for n, _ in level_groups] + [n for n, _ in alone]
        members = [value_text(c) for g in groups for c in g]
        if len(set(members)) != len(members):
            twice = next(m for m in members if members.count(m) > 1)
            raise SDCInputError(f"{where}[{h}]: category {twice!r} is in two groups; each category in one group at most")
        built.append(HierarchyLevel(name, tuple(groups), tuple(names)))
    try:
        return Hierarchy(tuple(values.values()), tuple(built), "spec", complete=False)
    except SDCInputError as exc:
        raise SDCInputError(f"{where}: {str(exc).removeprefix('spec: ')}") from None
