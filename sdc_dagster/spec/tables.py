"""The table spec: which protected tables a survey wave or a business file is published as.

One YAML file describes a *table set*: its source, the dimensions the tables cross (each with its
hierarchy), and one or more tables over them. Tables of one set that publish the same measure (the
same ``value``, ``freq`` and ``weight``) come from the same data and are *linked*: they are
protected jointly (Hundepool et al. 2012, "Statistical Disclosure Control", §4.4.3; tau-Argus
manual §4.4 "linked tables"), never table by table. Keys::

    tables: business                  # the set's name: asset key prefix, release folder
    title: ...                        # optional
    source: {survey: testdata}        # a survey of the spec folders (its waves are the partitions)
    # or    {file: data/business.csv, options: {sep: ";"}}   (relative to this file)
    # or    {tau_argus: data/turnover.rda}   (tau-Argus tabular input: .tab and .hrc beside it; its
    #                                         inner cells with the .rda's hierarchies and columns;
    #                                         apriori: data/turnover.hst, its a priori unsafe cells)
    dimensions:
      urbrur: {}                      # flat: the column's codes under "Total"
      water:  {hierarchy: {parents: {Total: [piped, well], piped: [1, 2], well: [3, 4]}}}
      sector4: {hierarchy: {columns: [sector2]}}   # nested in coarser columns, coarsest first
      nace:   {hierarchy: {prefixes: [1, 2, 4]}}    # code lengths of the levels, from the top
      region: {hierarchy: {file: regions.hrc, leadstring: "@"}}   # an Argus hierarchical code list
    published:
      turnover:
        dimensions: [sector4, geo]
        value: value                  # a magnitude table (default: a frequency table)
        freq: n                       # aggregated input: a column of counts per inner cell
        holding: company              # a holding's contributions count as one contributor
        weight: w                     # sampling weights: published values weighted
        request: asked                # boolean column of the request rule
        rules: [{rule: nk, n: 1, k: 85}, {rule: p, p: 10}]
        dominance_tie: strict         # strict (>, tau-Argus, sdcTable) or inclusive (>=, GaussSuppression)
        frozen: {suppressed: [{sector4: Industry, geo: Spain}], published: [{sector4: Total, geo: Total}]}
    protection: {method: optimal, cost: value, time_limit: 60}   # cost: value, count or {column: c}
    #           method: optimal (ILP), gauss (GaussSuppression) or hitas (tau-Argus's modular method)
    #           workers: 1   (method hitas: processes protecting the subtables of one level at once,
    #                         then bounding the audit's components)
    # or        {method: rounding, round_base: 3, max_round: 2, zero_candidates: false,
    #            identify_new: true, seed: 123}   (frequency tables of unweighted counts)
    # or        {method: cell_key, cell_key: {max_deviation: 2, variance: 1.05, threshold: 1, seed: 2021},
    #            delta: 0.1, top_k: 1, epsilon: [1]}   (unweighted tables; delta, top_k, epsilon for magnitudes)
    release: {formats: [csv, xlsx, tau_argus]}

``rules`` are those of :func:`sdc_dagster.tables.primary_suppression`; ``method`` one of
:data:`sdc_dagster.tables.METHODS` (secondary suppression) or ``rounding`` (:data:`PERTURBATIVE`:
small-count rounding, SmallCountRounding's parameters and defaults, ``max_round`` ``round_base - 1``,
``seed`` 123; the primaries are then reported, not suppressed, and linked tables must share their
dimensions, as :func:`sdc_dagster.tables.small_count_rounding` rounds them jointly) or ``cell_key``
(the p-table and record-key seed in the grid spec's ``cell_key`` section, SPEC §8.11, with
``delta``, ``top_k``, ``epsilon`` for magnitude tables, :func:`_cell_key`; unweighted microdata,
released as CSV or Excel); ``cost`` ``value`` (tau-Argus's default for magnitude tables),
``count`` (one per cell) or ``{column: c}`` (a cell costs the sum of the numeric column ``c`` over
its records, tau-Argus's cost variable). Every problem is a :class:`~sdc_dagster.spec.survey.SpecError` naming the key
(``published.turnover.rules[0]``), and :func:`load_table_spec` adds the YAML line, as
:func:`~sdc_dagster.spec.files.load_spec` does for survey specs.

Hierarchies become the parent/child frames :func:`sdc_dagster.tables.tabulate` takes
(:func:`dimension_hierarchy`); nested columns and code prefixes are completed from the data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.names import RULES as NAME_RULES
from sdc_dagster.names import name_problem
from sdc_dagster.protect.ptable import perturbation_table
from sdc_dagster.spec.files import located_error, read_yaml_file
from sdc_dagster.spec.hierarchies import value_text
from sdc_dagster.spec.problems import Problems, as_mapping, expect, spec_error
from sdc_dagster.spec.survey import SpecError
from sdc_dagster.spec.grid import CellKeySpec, parse_grid_spec, spec_parameters
from sdc_dagster.tables.cell_key import MAX_TOP_K, cell_key_magnitude
from sdc_dagster.tables.exchange import read_tau_argus
from sdc_dagster.tables.hierarchy_files import hierarchy_from_codes, hierarchy_from_columns, read_hrc
from sdc_dagster.tables.model import tabulate
from sdc_dagster.tables.primary import TIES, primary_suppression
from sdc_dagster.tables.secondary import METHODS
from sdc_dagster.validation import check_option, check_scalar

#: The perturbative methods of ``protection.method`` (beside the secondary suppression methods of
#: :data:`sdc_dagster.tables.METHODS`): ``rounding``, small-count rounding of the inner cells by PLS
#: (:func:`sdc_dagster.tables.small_count_rounding`, Langsrud & Heldal's SmallCountRounding), every
#: published cell the sum of its rounded inner cells; ``cell_key``, the cell key method (counts by
#: the p-table, magnitudes by :func:`sdc_dagster.tables.cell_key_magnitude`; Thompson, Broadfoot and
#: Elazar 2013; Hundepool et al., the Handbook's cell key method for magnitude tables).
PERTURBATIVE = ("rounding", "cell_key")
#: Every method of ``protection.method``.
ALL_METHODS = (*METHODS, *PERTURBATIVE)

#: ``protection.workers`` unless given (``method: hitas``): processes protecting the subtables of one
#: level at once (:func:`sdc_dagster.tables.secondary_suppression`). Measured on the 9,360-cell census
#: table of ``benchmarks/tables.py`` (2 cores shared, load 9): 28.6 s wall and 8.1 s CPU with 1 process,
#: 25.6 s wall and 12.7 s CPU with 2 (the spawned processes import the engine), the same pattern; so 1.
DEFAULT_WORKERS = 1
#: The parameters of ``protection`` for ``method: cell_key``: the p-table and seed of the record keys
#: (``cell_key``, the grid spec's section, :class:`sdc_dagster.spec.grid.CellKeySpec`) and the
#: magnitude parameters of :func:`sdc_dagster.tables.cell_key_magnitude`.
CELL_KEY_KEYS = ("cell_key", "delta", "top_k", "epsilon")
#: The parameters of ``protection`` for ``method: rounding`` (:func:`sdc_dagster.tables.small_count_rounding`).
ROUNDING_KEYS = ("round_base", "max_round", "zero_candidates", "identify_new", "seed")
#: How a cell's suppression is priced (:func:`sdc_dagster.tables.secondary_suppression` ``cost``).
COSTS = ("value", "count")
#: Formats the protected tables are written in (``release.formats``): the office's layout as CSV or
#: Excel (:func:`sdc_dagster.tables.write_published`), released; tau-Argus's ``.tab``/``.rda``/``.hrc``/``.hst``
#: (:func:`sdc_dagster.tables.write_tau_argus`), confidential (every inner cell's value and largest
#: contributions), written beside the report, never released
#: (:func:`sdc_dagster.releases.tables.exchange_files`).
TABLE_RELEASE_FORMATS = ("csv", "xlsx", "tau_argus")
#: The states of a frozen cell (``published.<table>.frozen``).
FROZEN = ("suppressed", "published")
#: The kinds of hierarchy of a dimension (``dimensions.<name>.hierarchy``).
HIERARCHY_KINDS = ("parents", "columns", "prefixes", "file")


@dataclass(frozen=True)
class DimensionSpec:
    """One dimension: its column and hierarchy. ``kind``: None (flat), ``"parents"`` (``parents``:
    code -> child codes, its root the total), ``"columns"`` (``columns``: coarser columns the
    dimension's codes nest in, coarsest first), ``"prefixes"`` (``prefixes``: the code lengths of
    the levels from the top, the finest the codes' own) or ``"file"`` (``file``: an Argus ``.hrc`` file, ``leadstring``)."""

    name: str
    kind: str | None = None
    parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    prefixes: tuple[int, ...] = ()
    file: Path | None = None
    leadstring: str = "@"


@dataclass(frozen=True)
class TableDef:
    """One published table: its dimensions (names of :attr:`TableSetSpec.dimensions`), measure
    (``value``: a magnitude column, ``freq``: a column of counts of aggregated input, ``weight``: a
    sampling weight), ``holding``, ``request``, primary ``rules`` and ``dominance_tie``, and the
    ``frozen`` pattern (``suppressed``/``published``: cells, each dimension -> code, that must be
    suppressed or published; :func:`sdc_dagster.tables.secondary_suppression` ``frozen``)."""

    name: str
    dimensions: tuple[str, ...]
    rules: tuple[Mapping[str, Any], ...]
    value: str | None = None
    freq: str | None = None
    holding: str | None = None
    weight: str | None = None
    request: str | None = None
    dominance_tie: str = "strict"
    frozen: Mapping[str, tuple] = field(default_factory=dict)

    @property
    def measure(self) -> tuple:
        """What the table publishes: tables of one set with the same measure are linked."""
        return (self.value, self.freq, self.weight)

    @property
    def columns(self) -> list[str]:
        """Every data column the table reads."""
        named = (self.value, self.freq, self.holding, self.weight, self.request)
        return [*self.dimensions, *(c for c in named if c is not None)]


@dataclass(frozen=True)
class TableSource:
    """Where the data come from: a survey's waves (``survey``), one business file (``file``,
    absolute, read with ``options`` by :func:`~sdc_dagster.spec.reading.read_with_metadata`), or
    tau-Argus tabular input (``tau_argus``: its ``.rda``, the ``.tab`` and ``.hrc`` files beside it;
    :func:`sdc_dagster.tables.read_tau_argus`), whose dimensions take the ``.rda``'s hierarchies
    unless the spec gives one, with its a priori file (``apriori``: an ``.hst`` whose cells are
    primaries, :func:`sdc_dagster.tables.read_apriori`)."""

    survey: str | None = None
    file: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    tau_argus: Path | None = None
    apriori: Path | None = None


@dataclass(frozen=True)
class TableSetSpec:
    """A table spec: the set's ``name``, ``source``, ``dimensions`` (name -> :class:`DimensionSpec`),
    the ``published`` tables (name -> :class:`TableDef`, spec order), the secondary ``method``,
    ``cost``, ``time_limit`` (seconds per integer programme; with ``method: optimal`` the budget of
    the whole row generation) and ``workers`` (processes protecting the subtables of one level at
    once with ``method: hitas``, then bounding the components of the ``table_audit``'s programme,
    :data:`DEFAULT_WORKERS` unless given; the pattern and the intervals do not depend on it), with
    ``method: rounding`` the
    ``rounding`` parameters (:data:`ROUNDING_KEYS`, ``seed`` as ``random_state``), with ``method:
    cell_key`` the ``cell_key`` parameters (:func:`_cell_key`), the release ``formats``, and the
    file it came from with its SHA-256 (``spec_path``, ``spec_sha256``)."""

    name: str
    source: TableSource
    dimensions: Mapping[str, DimensionSpec]
    published: Mapping[str, TableDef]
    method: str = "optimal"
    cost: str = "value"
    cost_column: bool = False
    time_limit: float = 600.0
    workers: int = 1
    rounding: Mapping[str, Any] = field(default_factory=dict)
    cell_key: Mapping[str, Any] = field(default_factory=dict)
    formats: tuple[str, ...] = ("csv",)
    title: str = ""
    spec_path: Path | None = None
    spec_sha256: str = ""

    def linked(self) -> list[list[str]]:
        """The table names in groups protected jointly: tables publishing the same measure (spec order)."""
        return _linked_groups(self.published)

    @property
    def columns(self) -> list[str]:
        """Every data column some table, hierarchy or the cost reads, in first-use order."""
        out: list[str] = []
        for table in self.published.values():
            for column in table.columns:
                out += [column] if column not in out else []
                if column in self.dimensions:
                    out += [c for c in self.dimensions[column].columns if c not in out]
        return out + ([self.cost] if self.cost_column and self.cost not in out else [])


def _name(problems: Problems, name, where: str, rule: str) -> bool:
    return problems.attempt(expect, isinstance(name, str) and name_problem(rule, name) is None, where,
                            f"a {rule}: {NAME_RULES[rule][1]}", default=False) is not False


def _hierarchy(name: str, raw, where: str, folder: Path, recorded: bool = False) -> DimensionSpec:
    if raw is None:
        return DimensionSpec(name)
    raw = as_mapping(raw, where)
    kinds = [k for k in HIERARCHY_KINDS if k in raw]
    extra = sorted(set(raw) - {*HIERARCHY_KINDS, "leadstring"}, key=str)
    expect(not extra, f"{where}.{extra[0]}" if extra else where, f"one of {list(HIERARCHY_KINDS)} (unknown key)")
    expect(len(kinds) == 1, where, f"exactly one of {list(HIERARCHY_KINDS)}, got {kinds or 'none'}")
    kind = kinds[0]
    at = f"{where}.{kind}"
    if kind == "parents":
        parents = as_mapping(raw["parents"], at)
        expect(bool(parents), at, "a mapping parent code -> its child codes")
        out = {}
        for parent, kids in parents.items():
            expect(isinstance(kids, list) and len(kids) > 0
                   and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in kids),
                   f"{at}.{parent}", "a non-empty list of child codes")
            out[value_text(parent)] = tuple(value_text(k) for k in kids)
        return DimensionSpec(name, "parents", parents=out)
    if kind == "columns":
        columns = raw["columns"]
        expect(isinstance(columns, list) and len(columns) > 0 and all(isinstance(c, str) for c in columns)
               and name not in columns, at, f"a non-empty list of coarser column names (not {name!r} itself)")
        return DimensionSpec(name, "columns", columns=tuple(columns))
    if kind == "prefixes":
        lengths = raw["prefixes"]
        expect(isinstance(lengths, list) and len(lengths) > 0
               and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lengths)
               and all(b > a for a, b in zip(lengths, lengths[1:])), at,
               "increasing positive code lengths of the levels, from the top (the finest the codes' own)")
        return DimensionSpec(name, "prefixes", prefixes=tuple(lengths))
    file = raw["file"]
    expect(isinstance(file, str) and file.strip() != "", at, "the path of an Argus .hrc file (relative to the spec)")
    path = (folder / file).resolve()
    expect(recorded or path.is_file(), at, f"an existing .hrc file, {path} is not one")
    leadstring = raw.get("leadstring", "@")
    expect(isinstance(leadstring, str) and leadstring != "", f"{where}.leadstring", "a non-empty text")
    return DimensionSpec(name, "file", file=path, leadstring=leadstring)


def _table(name: str, raw, dimensions: list[str], problems: Problems) -> TableDef | None:
    """One table; ``dimensions``: the names the spec declares (a dimension whose hierarchy is wrong is
    reported there, not again for every table over it)."""
    where = f"published.{name}"
    raw = as_mapping(raw, where)
    known = {"dimensions", "value", "freq", "holding", "weight", "request", "rules", "dominance_tie", "frozen"}
    problems.unknown_keys(raw, where, known)
    dims = raw.get("dimensions")
    expect(isinstance(dims, list) and len(dims) > 0 and all(isinstance(d, str) for d in dims)
           and len(set(dims)) == len(dims), f"{where}.dimensions", "a non-empty list of distinct dimension names")
    for j, d in enumerate(dims):
        problems.attempt(expect, d in dimensions, f"{where}.dimensions[{j}]",
                         f"a dimension of the spec's 'dimensions' ({', '.join(dimensions)}), got {d!r}")
    columns = {}
    for key in ("value", "freq", "holding", "weight", "request"):
        if raw.get(key) is not None:
            problems.attempt(expect, isinstance(raw[key], str) and raw[key] not in dims, f"{where}.{key}",
                             "a column name (not a dimension)")
            columns[key] = raw[key]
    if "freq" in columns and ("holding" in columns or "request" in columns):
        problems.attempt(expect, False, f"{where}.freq", "no holding or request with aggregated input: they need "
                         "one row per contribution")
    if "request" in columns and "value" not in columns:
        problems.attempt(expect, False, f"{where}.request", "a magnitude table (value:) for the request rule")
    tie = raw.get("dominance_tie", "strict")
    problems.attempt(lambda: check_option(tie, f"{where}.dominance_tie", TIES, error=spec_error(f"{where}.dominance_tie")))
    rules = raw.get("rules")
    try:
        checked_rules(rules)
    except SDCInputError as error:
        text = str(error)
        at = f"{where}.{text.split(':')[0].split(' ')[0]}" if text.startswith("rules[") else f"{where}.rules"
        raise SpecError(f"{where}.{text}", key=at) from None
    rules = [rules] if isinstance(rules, Mapping) else rules
    frozen = problems.collect(_frozen, raw.get("frozen"), f"{where}.frozen", dims, default={})
    return TableDef(name, tuple(dims), tuple(dict(r) for r in rules), dominance_tie=tie, frozen=frozen, **columns)


def _frozen(raw, where: str, dims: list[str]) -> dict[str, tuple]:
    """``frozen: {suppressed: [cells], published: [cells]}``, each cell a mapping of every dimension of
    the table to its code (as text)."""
    if raw is None:
        return {}
    raw = as_mapping(raw, where)
    extra = sorted(set(raw) - set(FROZEN), key=str)
    expect(not extra, f"{where}.{extra[0]}" if extra else where, f"only {list(FROZEN)}")
    out = {}
    for state, cells in raw.items():
        expect(isinstance(cells, list), f"{where}.{state}", "a list of cells, each {dimension: code} for every dimension")
        for j, cell in enumerate(cells):
            expect(isinstance(cell, Mapping) and sorted(map(str, cell)) == sorted(dims), f"{where}.{state}[{j}]",
                   f"a cell naming the code of every dimension of the table ({', '.join(dims)}), got {cell!r}")
        out[state] = tuple({str(d): value_text(c) for d, c in cell.items()} for cell in cells)
    return out


def checked_rules(rules) -> None:
    """Raise :class:`SDCInputError` (naming ``rules[i]`` and the parameter) unless ``rules`` are
    rules :func:`sdc_dagster.tables.primary_suppression` takes: they are applied to a one-cell table
    of one contributor, so that the function that applies them is the one that validates them."""
    probe = pd.DataFrame({"cell": ["a"], "value": [1.0], "request": [False]})
    primary_suppression(tabulate(probe, {"cell": None}, value="value", request="request"), rules)


def parse_table_spec(raw, *, spec_path: Path | None = None, text: str = "", recorded: bool = False) -> TableSetSpec:
    """A :class:`TableSetSpec` from a parsed YAML document (module text); every independent
    problem found in one pass, raised as one :class:`SpecError`. Paths are relative to
    ``spec_path``'s folder; ``text`` is the file's text (its SHA-256 is the spec's). ``recorded``: the
    spec copy of a release read for its replay, whose business file and ``.hrc`` files need not
    exist any more (the replay reads the copies the release recorded,
    :func:`sdc_dagster.releases.tables.recompute_table_release`)."""
    problems = Problems()
    raw = as_mapping(raw, "spec")
    problems.unknown_keys(raw, "spec", {"tables", "title", "source", "dimensions", "published", "protection",
                                        "release"})
    folder = Path(spec_path).parent if spec_path else Path.cwd()
    name = raw.get("tables")
    _name(problems, name, "tables", "survey name")
    source = problems.collect(_source, raw.get("source"), folder, recorded)
    dims_raw = as_mapping(raw.get("dimensions"), "dimensions")
    expect(bool(dims_raw), "dimensions", "a mapping of at least one dimension")
    dimensions = {}
    for dim, entry in dims_raw.items():
        at = f"dimensions.{dim}"
        entry = {} if entry is None else entry
        if problems.attempt(as_mapping, entry, at) is None:
            continue
        problems.unknown_keys(entry, at, {"hierarchy"})
        spec = problems.collect(_hierarchy, str(dim), entry.get("hierarchy"), f"{at}.hierarchy", folder, recorded)
        if spec is not None:
            dimensions[str(dim)] = spec
    published_raw = as_mapping(raw.get("published"), "published")
    expect(bool(published_raw), "published", "a mapping of at least one table name -> its table")
    published = {}
    for table_name, entry in published_raw.items():
        if not _name(problems, table_name, f"published.{table_name}", "plan name"):
            continue
        table = problems.collect(_table, str(table_name), entry, [str(d) for d in dims_raw], problems)
        if table is not None:
            published[str(table_name)] = table
    protection = problems.attempt(as_mapping, raw.get("protection") or {}, "protection") or {}
    problems.unknown_keys(protection, "protection", {"method", "cost", "time_limit", "workers", *ROUNDING_KEYS,
                                                         *CELL_KEY_KEYS})
    method = protection.get("method", "optimal")
    problems.attempt(lambda: check_option(method, "protection.method", ALL_METHODS,
                                          error=spec_error("protection.method")))
    rounding = _rounding(problems, protection, method, published) if method == "rounding" else {}
    cell_key = _cell_key(problems, protection, published) if method == "cell_key" else {}
    for key in CELL_KEY_KEYS:
        problems.attempt(expect, key not in protection or method == "cell_key", f"protection.{key}",
                         f"only with method: cell_key (the method is {method!r})")
    for key in ROUNDING_KEYS:
        problems.attempt(expect, key not in protection or method == "rounding", f"protection.{key}",
                         f"only with method: rounding (the method is {method!r})")
    for key in ("cost", "time_limit"):
        problems.attempt(expect, key not in protection or method not in PERTURBATIVE, f"protection.{key}",
                         f"only with a suppression method ({', '.join(METHODS)}): {method} suppresses nothing")
    cost = protection.get("cost", "value")
    problems.attempt(expect, cost in COSTS or (isinstance(cost, Mapping) and list(cost) == ["column"]
                                               and isinstance(cost["column"], str)), "protection.cost",
                     f"one of {list(COSTS)} or {{column: <a numeric column>}}, got {cost!r}")
    time_limit = protection.get("time_limit", 600.0)
    problems.attempt(lambda: check_scalar(time_limit, "protection.time_limit", low=0, closed="neither",
                                          error=spec_error("protection.time_limit")))
    problems.attempt(expect, "workers" not in protection or method == "hitas", "protection.workers",
                     f"only with method: hitas (its subtables are protected in parallel; the method is {method!r})")
    workers = problems.attempt(lambda: check_scalar(protection.get("workers", DEFAULT_WORKERS), "protection.workers",
                                                    low=1, integer=True, error=spec_error("protection.workers")),
                               default=DEFAULT_WORKERS)
    release = problems.attempt(as_mapping, raw.get("release") or {}, "release") or {}
    problems.unknown_keys(release, "release", {"formats"})
    formats = release.get("formats", ["csv"])
    if problems.attempt(expect, isinstance(formats, list) and len(formats) > 0, "release.formats",
                        f"a non-empty list of {list(TABLE_RELEASE_FORMATS)}, got {formats!r}", default=False) is None:
        for j, fmt in enumerate(formats):
            problems.attempt(lambda fmt=fmt, where=f"release.formats[{j}]": check_option(
                fmt, where, TABLE_RELEASE_FORMATS, error=spec_error(where)))
            problems.attempt(expect, fmt != "tau_argus" or method != "cell_key", f"release.formats[{j}]",
                             "csv or xlsx with method: cell_key (tau-Argus's .tab would hold the original cells, "
                             "not the perturbed ones)")
    if isinstance(source, TableSource) and source.tau_argus is not None:
        problems.collect(_tau_argus_measures, source.tau_argus, published, problems)
    for group in _linked_groups(published):
        kinds = {bool(published[t].value or published[t].weight) for t in group}
        problems.attempt(expect, len(kinds) == 1, f"published.{group[-1]}", "linked tables all magnitude or all "
                         "frequency tables")
    if problems.errors:
        raise SpecError.combine(problems.errors)
    return TableSetSpec(
        name=name, source=source, dimensions=dimensions, published=published, method=method,
        cost=cost if isinstance(cost, str) else cost["column"], cost_column=not isinstance(cost, str),
        time_limit=float(time_limit), workers=workers,
        rounding=rounding or {},
        cell_key=cell_key or {}, formats=tuple(formats), title=str(raw.get("title", "")),
        spec_path=Path(spec_path).resolve() if spec_path else None,
        spec_sha256=hashlib.sha256(text.encode()).hexdigest() if text else "",
    )


def _tau_argus_measures(rda: Path, published: Mapping[str, TableDef], problems: Problems) -> None:
    """Every table of tau-Argus tabular input reads the measures its ``.rda`` declares
    (:func:`sdc_dagster.tables.exchange.tab_measures`): ``freq`` its ``<FREQUENCY>`` column (of a
    frequency table, its one ``<NUMERIC>`` count) and ``value`` its ``<NUMERIC>`` value (none for a
    frequency table). A ``.tab`` line is an inner cell, not a contribution: read without its count,
    each line would be one contributor holding 100 % of its cell, and every cell would fail the
    dominance rule (tau-Argus manual, tabular input). Each problem is recorded in ``problems``."""
    from sdc_dagster.datafiles.argus import read_rda
    from sdc_dagster.tables.exchange import tab_measures

    try:
        names = tab_measures(read_rda(rda), rda.name)
    except SDCInputError as error:
        raise SpecError(f"source.tau_argus: {error}", key="source.tau_argus") from None
    for name, table in published.items():
        problems.attempt(expect, table.freq == names["freq"], f"published.{name}.freq",
                         f"freq: {names['freq']} (tau-Argus input is one line per inner cell: its count is the "
                         f"column {rda.name} declares {'<FREQUENCY>' if names['value'] else '<NUMERIC>'}), "
                         f"got {table.freq!r}")
        problems.attempt(expect, table.value == names["value"], f"published.{name}.value",
                         (f"value: {names['value']} (the <NUMERIC> column of {rda.name})" if names["value"] else
                          f"no value ({rda.name} declares no <FREQUENCY> column: a frequency table)")
                         + f", got {table.value!r}")


def _rounding(problems: Problems, protection: Mapping, method: str, published: Mapping[str, TableDef]) -> dict[str, Any]:
    """The parameters of small-count rounding (:func:`sdc_dagster.tables.small_count_rounding`),
    checked: ``round_base`` an integer >= 2 (default 3), ``max_round`` an integer in
    [0, round_base) (default ``round_base - 1``), ``zero_candidates`` and ``identify_new`` booleans
    (defaults False and True, SmallCountRounding's), ``seed`` an integer >= 0 (default 123); every
    table a frequency table of unweighted counts, linked tables over the same dimensions. Each
    problem is recorded in ``problems``."""
    base = protection.get("round_base", 3)
    problems.attempt(lambda: check_scalar(base, "protection.round_base", integer=True, low=2,
                                          error=spec_error("protection.round_base")))
    top = protection.get("max_round")
    if top is not None and isinstance(base, int):
        problems.attempt(lambda: check_scalar(top, "protection.max_round", integer=True, low=0, high=base - 1,
                                              error=spec_error("protection.max_round")))
    for key, default in (("zero_candidates", False), ("identify_new", True)):
        problems.attempt(expect, isinstance(protection.get(key, default), bool), f"protection.{key}",
                         f"true or false, got {protection.get(key)!r}")
    seed = protection.get("seed", 123)
    problems.attempt(lambda: check_scalar(seed, "protection.seed", integer=True, low=0,
                                          error=spec_error("protection.seed")))
    for name, table in published.items():
        problems.attempt(expect, table.value is None and table.weight is None, f"published.{name}",
                         f"a frequency table of unweighted counts with method: {method} (small-count rounding "
                         f"rounds counts), got {'value ' + table.value if table.value else 'weight ' + str(table.weight)}")
        problems.attempt(expect, not table.frozen, f"published.{name}.frozen",
                         f"no frozen cells with method: {method} (nothing is suppressed)")
    for group in _linked_groups(published):
        problems.attempt(expect, len({tuple(sorted(published[t].dimensions)) for t in group}) == 1,
                         f"published.{group[-1]}", f"the dimensions of the tables it is linked with ({', '.join(group)}) "
                         "with method: rounding (linked tables are rounded jointly over their common inner cells)")
    return {"round_base": int(base), "max_round": None if top is None else int(top),
            "zero_candidates": bool(protection.get("zero_candidates", False)),
            "identify_new": bool(protection.get("identify_new", True)), "random_state": int(seed)}


def _cell_key(problems: Problems, protection: Mapping, published: Mapping[str, TableDef]) -> dict[str, Any]:
    """The parameters of the cell key method, checked: ``cell_key`` the p-table and the seed of the
    record keys exactly as the grid spec takes them (``max_deviation`` D, ``variance`` V,
    ``threshold`` js, ``seed``; :func:`sdc_dagster.spec.grid.parse_grid_spec`, SPEC §8.11, the
    sdcTools ptable's parameters), ``delta`` in (0, 1] (default 0.1), ``top_k`` in 1..6 (default 1)
    and ``epsilon`` (default ``[1]``) as :func:`sdc_dagster.tables.cell_key_magnitude` takes them
    (the Handbook's cell key method for magnitude tables, cellKey's ``ck_params_nums``); every table
    unweighted (record keys are per record). Each problem is recorded in ``problems``."""
    section = protection.get("cell_key") or {}
    grid = problems.attempt(lambda: _grid_cell_key(section))
    delta = protection.get("delta", 0.1)
    problems.attempt(lambda: check_scalar(delta, "protection.delta", low=0, high=1, closed="right",
                                          error=spec_error("protection.delta")))
    top_k = protection.get("top_k", 1)
    problems.attempt(lambda: check_scalar(top_k, "protection.top_k", integer=True, low=1, high=MAX_TOP_K,
                                          error=spec_error("protection.top_k")))
    epsilon = protection.get("epsilon", [1.0])
    if isinstance(top_k, int):  # cell_key_magnitude's own check of the weights
        problems.attempt(lambda: _checked_epsilon_key(epsilon, top_k))
    for name, table in published.items():
        problems.attempt(expect, table.weight is None, f"published.{name}",
                         f"an unweighted table with method: cell_key (record keys are drawn per record), "
                         f"got weight {table.weight}")
        problems.attempt(expect, not table.frozen, f"published.{name}.frozen",
                         "no frozen cells with method: cell_key (nothing is suppressed)")
        problems.attempt(expect, table.freq is None, f"published.{name}.freq",
                         f"microdata (one row per record, no count column) with method: cell_key (record keys are "
                         f"drawn per record), got freq {table.freq}")
    if grid is None:
        return {}
    return {**spec_parameters(grid), "delta": float(delta) if isinstance(delta, (int, float)) else delta,
            "top_k": top_k, "epsilon": [float(e) for e in epsilon] if isinstance(epsilon, list) else epsilon}


def _checked_epsilon_key(epsilon, top_k: int) -> None:
    """``epsilon`` checked by the function that applies it: :func:`sdc_dagster.tables.cell_key_magnitude`
    on a one-cell table of one record (as the rules are, :func:`checked_rules`), keyed ``protection.epsilon``."""
    probe = pd.DataFrame({"cell": ["a"], "value": [1.0]})
    try:
        cell_key_magnitude(probe, {"cell": None}, value="value", ptable=perturbation_table(1, 0.5), delta=1,
                           top_k=top_k, epsilon=epsilon, seed=0)
    except (SDCInputError, TypeError, ValueError) as error:
        raise SpecError(f"protection.{error}" if isinstance(error, SDCInputError) else
                        f"protection.epsilon: a list of numbers, got {epsilon!r}", key="protection.epsilon") from None


def _grid_cell_key(section) -> CellKeySpec:
    """The grid spec's ``cell_key`` section (:func:`sdc_dagster.spec.grid.parse_grid_spec`), its
    p-table built once so that its own rules are checked (:func:`sdc_dagster.protect.ptable.perturbation_table`),
    errors keyed ``protection.cell_key``."""
    try:
        grid = parse_grid_spec({"routes": ["cell_key"], "cell_key": section}, source="protection").cell_key
        perturbation_table(grid.max_deviation, grid.variance, threshold=grid.threshold)  # the p-table's own rules
    except SDCInputError as error:
        raise SpecError(f"protection.cell_key: {error}" if "key 'cell_key." not in str(error) else str(error),
                        key="protection.cell_key") from None
    return grid


def _linked_groups(published: Mapping[str, TableDef]) -> list[list[str]]:
    groups: dict[tuple, list[str]] = {}
    for name, table in published.items():
        groups.setdefault(table.measure, []).append(name)
    return list(groups.values())


def _source(raw, folder: Path, recorded: bool = False) -> TableSource:
    raw = as_mapping(raw, "source")
    kinds = [k for k in ("survey", "file", "tau_argus") if k in raw]
    expect(len(kinds) == 1, "source", f"exactly one of 'survey' (a survey of the spec folders), 'file' or "
                                      f"'tau_argus' (an .rda of tabular input), got {kinds or 'none'}")
    extra = sorted(set(raw) - {"survey", "file", "tau_argus", "apriori", "options"}, key=str)
    expect(not extra, f"source.{extra[0]}" if extra else "source", "only survey, file, tau_argus (with apriori) "
                                                                     "and options")
    expect("apriori" not in raw or "tau_argus" in raw, "source.apriori", "only with tau_argus (the a priori file "
                                                                           "of tau-Argus tabular input)")
    if "tau_argus" in raw:
        expect(isinstance(raw["tau_argus"], str) and raw["tau_argus"].strip() != "", "source.tau_argus",
               "the path of a tau-Argus .rda file (relative to the spec)")
        path = (folder / raw["tau_argus"]).resolve()
        expect(path.is_file(), "source.tau_argus", f"an existing .rda file, {path} is not one")
        apriori = None
        if "apriori" in raw:
            expect(isinstance(raw["apriori"], str) and raw["apriori"].strip() != "", "source.apriori",
                   "the path of a tau-Argus a priori file (.hst, relative to the spec)")
            apriori = (folder / raw["apriori"]).resolve()
            expect(apriori.is_file(), "source.apriori", f"an existing .hst file, {apriori} is not one")
        return TableSource(tau_argus=path, apriori=apriori)
    if "survey" in raw:
        expect(isinstance(raw["survey"], str) and name_problem("survey name", raw["survey"]) is None,
               "source.survey", "the name of a survey spec")
        return TableSource(survey=raw["survey"])
    expect(isinstance(raw["file"], str) and raw["file"].strip() != "", "source.file",
           "the path of a CSV file (relative to the spec)")
    path = (folder / raw["file"]).resolve()
    expect(recorded or path.is_file(), "source.file", f"an existing file, {path} is not one")
    options = as_mapping(raw.get("options") or {}, "source.options")
    return TableSource(file=path, options=dict(options))


def load_table_spec(path: str | Path) -> TableSetSpec:
    """Read and validate a table spec file; a :class:`SpecError` reads ``<file>:<line>: <key>: ...``
    (one line per independent problem), as :func:`~sdc_dagster.spec.files.load_spec`'s."""
    path = Path(path)
    text, node, raw = read_yaml_file(path, "table spec file")
    try:
        return parse_table_spec(raw, spec_path=path.resolve(), text=text)
    except SpecError as exc:
        raise located_error(path, node, exc) from None


def table_spec_files(folders) -> list[Path]:
    """The ``*.yaml`` files of ``folders`` (folder order, then file name)."""
    return [p for folder in folders if Path(folder).is_dir() for p in sorted(Path(folder).glob("*.yaml"))]


# ---------------------------------------------------------------- hierarchies from the spec and the data


def dimension_hierarchy(dimension: DimensionSpec, data: pd.DataFrame,
                        source: TableSource | None = None) -> pd.DataFrame | None:
    """The ``parent``, ``child`` frame of a dimension (None: flat) as
    :func:`sdc_dagster.tables.tabulate` takes it, its root ``"Total"`` unless the spec names its own
    (``parents``), through the readers of :mod:`sdc_dagster.tables.hierarchy_files`: an ``.hrc``
    file (:func:`~sdc_dagster.tables.hierarchy_files.read_hrc`), the dimension's codes classified by
    their leading characters (``prefixes``: the code lengths of the levels from the top, the finest
    the codes' own; :func:`~sdc_dagster.tables.hierarchy_files.hierarchy_from_codes`) or nested in
    coarser columns of ``data`` (:func:`~sdc_dagster.tables.hierarchy_files.hierarchy_from_columns`);
    a dimension without one, of a tau-Argus ``source``, takes the ``.rda``'s
    (:func:`sdc_dagster.tables.read_tau_argus`).

    Raises :class:`SDCInputError` naming the dimension, then what the reader found wrong."""
    if dimension.kind is None:
        return None if source is None or source.tau_argus is None else read_tau_argus(source.tau_argus)[1].get(
            dimension.name)
    try:
        if dimension.kind == "parents":
            pairs = [(p, c) for p, kids in dimension.parents.items() for c in kids]
            return pd.DataFrame(pairs, columns=["parent", "child"], dtype=object)
        if dimension.kind == "file":
            return read_hrc(dimension.file, leadstring=dimension.leadstring)
        if dimension.kind == "prefixes":
            return hierarchy_from_codes(data[dimension.name].dropna().map(value_text), dimension.prefixes)
        return hierarchy_from_columns(data, [*dimension.columns, dimension.name])
    except SDCInputError as error:
        raise SDCInputError(f"dimension {dimension.name!r}: {error}") from None
