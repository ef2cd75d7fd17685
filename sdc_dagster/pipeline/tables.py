"""The stages of the table chain: a survey wave or a business file turned into protected, audited
tables (issue 36 "in the lineage"; the table spec :mod:`sdc_dagster.spec.tables`).

``table_input`` -> :func:`tabulate_tables` (``tabulated``) -> :func:`primary_cells` (``primary``) ->
:func:`protect_tables` (``protected_tables``) -> :func:`audit_tables` (``table_audit``) -> the
report and the release (:mod:`sdc_dagster.releases.tables`). Each stage is a plain function (frames
in, frames out) the assets call once; :func:`run_tables` runs them all (the release's audit replay).

Every table frame after ``primary`` is the table's published cells (a column per dimension, its
codes as text, ``freq``, ``value`` for a magnitude table) with ``primary``, ``lower``, ``upper`` (the Handbook's
protection levels, :func:`sdc_dagster.tables.protection_levels`) and ``duplicate_of`` (the cell
it duplicates, :func:`duplicate_of`), then ``suppressed`` and
``status`` (``"safe"``, ``"primary"``, ``"secondary"``), then the audit's ``lo``, ``up`` (the
intruder's interval of each suppressed cell, NaN where published) and ``protected`` (the interval
meets the cell's protection; True for cells that are no primary).

With ``method: rounding`` (small-count rounding, :func:`round_tables`) nothing is suppressed:
``protected_tables`` gives each cell's ``published`` count (``status`` ``rounded`` where it differs
from ``freq``) and ``table_audit`` checks ``additive`` and ``small`` (:func:`audit_rounding`) instead
of the intruder's intervals. With ``method: cell_key`` (:func:`cell_key_tables`) likewise: each
cell's ``published`` count or value perturbed at its ``cell_key`` (``status`` ``perturbed`` where
it differs from the original), and ``table_audit`` checks ``as_ptable`` (:func:`audit_cell_key`).

Linked tables (same measure, :meth:`~sdc_dagster.spec.tables.TableSetSpec.linked`) are protected
and audited jointly: the audit's linear programme reads every published cell of every table of the
group (Hundepool et al. 2012, §4.4.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.protect.ptable import perturbation_table
from sdc_dagster.releases.digests import WaveSnapshot
from sdc_dagster.spec.schemas import validate
from sdc_dagster.spec.hierarchies import value_text
from sdc_dagster.spec.tables import TableSetSpec, dimension_hierarchy
from sdc_dagster.tables.intruder import protection_failures, stacked_mask
from sdc_dagster.tables.model import Table, joint_model
from sdc_dagster.tables.primary import contributor_statistics

#: The status of a published cell: suppressed (``primary``, ``secondary``) or, under small-count
#: rounding, ``rounded`` (published with another value than the original), under the cell key method
#: ``perturbed`` (likewise).
STATUSES = ("safe", "primary", "secondary", "rounded", "perturbed")
#: The column of a weighted measure (``weight × value``, or the weight alone for counts).
WEIGHTED = "_weighted"
#: The column of the cells holding each cell's cost of suppression, with ``cost: {column: c}``.
COST = "cost"


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class TabulatedTables:
    """The tables of a set as tabulated (name -> :class:`~sdc_dagster.tables.Table`, spec order),
    and the input they were made from (``source``: the file, its snapshot and SHA-256)."""

    tables: dict[str, Table]
    source: WaveSnapshot

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet: each table's published cells (codes as text)."""
        return {name: coded_cells(table) for name, table in self.tables.items()}


def coded_cells(table: Table) -> pd.DataFrame:
    """A table's published cells with every dimension's codes as text (:func:`value_text`: a flat
    dimension's codes and its ``"Total"`` in one column of one type, as Parquet and CSV store them)."""
    cells = table.cells.copy()
    for dimension in table.dimensions:  # each code's text once, then looked up by position
        texts = np.asarray([value_text(code) for code in dimension.codes], dtype=object)
        cells[dimension.name] = texts[dimension.codes.get_indexer(cells[dimension.name])]
    return cells


def duplicate_of(table: Table, cells: pd.DataFrame) -> pd.Series:
    """For each published cell that duplicates an earlier one (the same inner cells under another
    code: a parent with a single child, sdcTable's "bogus codes", :attr:`Table.cell`), the codes of
    that first cell as text (``"sector4 Total, geo nonEU"``); ``""`` for every distinct cell. Counts
    of cells, primaries and suppressions count the rows with ``""`` only: each distinct cell once."""
    _, first, inverse = np.unique(table.cell, return_index=True, return_inverse=True)
    first_row = first[inverse]
    out = pd.Series("", index=cells.index, dtype=object)
    repeated = first_row != np.arange(len(first_row))
    if repeated.any():
        source = cells.iloc[first_row[repeated]]
        label = pd.Series("", index=source.index, dtype=object)
        for position, dimension in enumerate(table.names):
            label = label + ("" if position == 0 else ", ") + dimension + " " + source[dimension].astype(str)
        out.iloc[np.flatnonzero(repeated)] = label.to_numpy()
    return out


def distinct(cells: pd.DataFrame) -> pd.DataFrame:
    """The distinct published cells of a table's frame (:func:`duplicate_of`: duplicates left out)."""
    return cells[cells["duplicate_of"] == ""]


def input_schema(spec: TableSetSpec) -> pa.DataFrameSchema:
    """The boundary of the input: every column the spec reads present, no missing dimension code,
    numbers where a measure or the cost is read, counts and costs >= 0, weights > 0."""
    columns: dict[str, pa.Column] = {c: pa.Column(nullable=False, required=True) for c in spec.columns}
    for table in spec.published.values():
        for column in (table.value, table.freq, table.weight):
            if column is not None:
                checks = [pa.Check(lambda s: pd.to_numeric(s, errors="coerce").notna(), error="values must be numbers")]
                if column == table.freq:
                    checks.append(pa.Check(lambda s: pd.to_numeric(s, errors="coerce").fillna(0) >= 0,
                                           error="counts must be >= 0"))
                if column == table.weight:
                    checks.append(pa.Check(lambda s: pd.to_numeric(s, errors="coerce").fillna(1) > 0,
                                           error="weights must be > 0"))
                columns[column] = pa.Column(nullable=False, checks=checks)
    if spec.cost_column:
        columns[spec.cost] = pa.Column(nullable=False, checks=[
            pa.Check(lambda s: pd.to_numeric(s, errors="coerce").notna(), error="values must be numbers"),
            pa.Check(lambda s: pd.to_numeric(s, errors="coerce").fillna(0) >= 0, error="costs must be >= 0")])
    return pa.DataFrameSchema(columns, strict=False)


def cells_schema() -> pa.DataFrameSchema:
    """The boundary of a protected table: a known status, suppressed exactly where the status is not
    safe, every primary suppressed, no negative count."""
    return pa.DataFrameSchema(
        {
            "freq": pa.Column(float, pa.Check.ge(0)),
            "primary": pa.Column(bool),
            "suppressed": pa.Column(bool),
            "status": pa.Column(str, pa.Check.isin(STATUSES)),
        },
        checks=[
            pa.Check(lambda f: f["suppressed"] == (f["status"] != "safe"), error="suppressed where status is not safe"),
            pa.Check(lambda f: ~f["primary"] | f["suppressed"], error="every primary cell is suppressed"),
        ],
        strict=False,
    )


def read_table_input(spec: TableSetSpec, path: Path | None = None) -> pd.DataFrame:
    """The business file of the spec (``source.file``, or ``path``: its snapshot), read through the
    one read path (:func:`~sdc_dagster.spec.reading.read_with_metadata`, any format it knows), or
    the inner cells of its tau-Argus tabular input (``source.tau_argus``,
    :func:`sdc_dagster.tables.read_tau_argus`)."""
    if spec.source.tau_argus is not None:
        return tables.read_tau_argus(spec.source.tau_argus)[0]
    from sdc_dagster.spec.reading import read_with_metadata

    return read_with_metadata(path or spec.source.file, options=dict(spec.source.options), user_missing=True).data


def input_file(spec: TableSetSpec) -> Path:
    """The data file of a table set read from a file: the business file, or the ``.tab`` beside a
    tau-Argus ``.rda`` (what the release snapshots)."""
    if spec.source.tau_argus is None:
        return spec.source.file
    from sdc_dagster.datafiles.argus import resolve_beside

    rda = spec.source.tau_argus
    return resolve_beside(rda.parent, f"{rda.stem}.tab") or rda.with_suffix(".tab")


def top_columns(spec: TableSetSpec) -> list[str]:
    """The top-contribution columns of a tau-Argus source (its ``.rda``'s ``<MAXSCORE>`` columns,
    :func:`sdc_dagster.tables.exchange.maxscore_columns`); none for another source."""
    if spec.source.tau_argus is None:
        return []
    from sdc_dagster.datafiles.argus import read_rda
    from sdc_dagster.tables.exchange import maxscore_columns

    return maxscore_columns(read_rda(spec.source.tau_argus))


def table_input(spec: TableSetSpec, data: pd.DataFrame, *, source: str = "table input") -> pd.DataFrame:
    """The columns the spec reads, validated (:func:`input_schema`; a :class:`SchemaViolation` names
    ``source``, the column and the rule), whole-number codes as integers (a code ``1.0`` read from a
    file with missing values is the code ``1``)."""
    columns = spec.columns + [c for c in top_columns(spec) if c not in spec.columns]
    require_columns(data, columns, role=f"{source}: column")
    frame = validate(data[columns].copy(), input_schema(spec), source=source)
    measures = {c for t in spec.published.values() for c in (t.value, t.freq, t.weight) if c is not None}
    measures |= set(top_columns(spec))
    measures |= {spec.cost} if spec.cost_column else set()
    for column in frame.columns:
        if column in measures:
            frame[column] = pd.to_numeric(frame[column])
        elif pd.api.types.is_float_dtype(frame[column]) and (frame[column] % 1 == 0).all():
            frame[column] = frame[column].astype(np.int64)
    return frame


def _hierarchies(spec: TableSetSpec, data: pd.DataFrame) -> dict:
    """Every dimension's hierarchy (:func:`~sdc_dagster.spec.tables.dimension_hierarchy`) over ``data``."""
    return {name: dimension_hierarchy(d, data, spec.source) for name, d in spec.dimensions.items()}


def tabulate_tables(spec: TableSetSpec, data: pd.DataFrame) -> dict[str, Table]:
    """Every table of the spec (name -> :class:`~sdc_dagster.tables.Table`) from the validated input;
    with ``cost: {column: c}`` each table's cells gain the column ``cost``: the sum of ``c`` per cell.

    Sampling weights: the published value is the weighted sum (``weight × value``; for a frequency
    table the weighted count) while the frequency rule counts the respondents (unweighted). The
    dominance and p % rules read each respondent's weighted contribution ``w·x`` as one contributor:
    a simplification, neither GaussSuppression's default (unweighted contributions against the
    weighted cell, ``FindDominantCells``) nor the treatment of weights of Hundepool et al. 2012
    (p. 151, GaussSuppression's ``tauArgusDominance = TRUE``).

    A magnitude table of tau-Argus input whose ``.rda`` names top contributions (``<MAXSCORE>``,
    :func:`top_columns`) is tabulated from its contributors
    (:func:`sdc_dagster.tables.contributions_from_top`), so the dominance, p % and pq rules apply;
    its published values stay the input's sums (the contributors' equal shares of a rest may differ
    from them by the rounding of the shares)."""
    hierarchies = _hierarchies(spec, data)
    tops = top_columns(spec)
    out = {}
    for name, table in spec.published.items():
        frame, value, freq = data, table.value, table.freq
        if tops and table.value is not None and table.freq is not None:
            try:
                frame = tables.contributions_from_top(data, table.dimensions, value=table.value, freq=table.freq,
                                                      top=tops)
            except SDCInputError as error:
                raise SDCInputError(f"table {name!r}: {spec.source.tau_argus.name}: {error}") from None
            freq = None  # each row one contributor: the count is the rows'
        if table.weight is not None:
            weight = data[table.weight].to_numpy(dtype=np.float64)
            measure = weight if table.value is None else weight * data[table.value].to_numpy(dtype=np.float64)
            frame, value = data.assign(**{WEIGHTED: measure}), WEIGHTED
        dimensions = {d: hierarchies[d] for d in table.dimensions}
        try:
            out[name] = tables.tabulate(frame, dimensions, freq=freq, value=value, holding=table.holding,
                                        request=table.request)
            if freq is None and table.freq is not None:  # from top contributions: the input's exact sums
                out[name].cells["value"] = tables.tabulate(data, dimensions, freq=table.freq,
                                                           value=table.value).cells["value"].to_numpy()
            if spec.cost_column:  # tau-Argus's cost variable: its sum over each cell's records
                out[name].cells[COST] = tables.tabulate(data, dimensions, value=spec.cost).cells["value"].to_numpy()
        except SDCInputError as error:
            raise SDCInputError(f"table {name!r}: {error}") from None
    return out


def apriori_cells(spec: TableSetSpec) -> pd.DataFrame | None:
    """The cells tau-Argus input marks unsafe a priori, one column per dimension of its ``.rda``
    (codes as text, :func:`value_text`): the ``.tab`` lines whose ``<STATUS>`` is the ``.rda``'s
    ``<UNSAFE>`` letter (default ``U``) and every cell of the spec's ``source.apriori`` file
    (:func:`sdc_dagster.tables.read_apriori`), as tau-Argus reads them (tau-Argus manual: the status
    of tabular input; a priori information). None for another source. Raises :class:`SDCInputError`
    naming the ``.tab`` and the cell for a status letter other than the safe and unsafe ones
    (protected, ``P``, is not read: it would publish a cell whatever the rules say)."""
    if spec.source.tau_argus is None:
        return None
    from sdc_dagster.datafiles.argus import read_rda
    from sdc_dagster.tables.exchange import TAB_STATUS

    rda = spec.source.tau_argus
    meta = read_rda(rda)
    dimensions = [v.name for v in meta.variables if "recodable" in v.flags]
    status = [v.name for v in meta.variables if "status" in v.flags]
    found = [pd.DataFrame(columns=dimensions, dtype=object)]
    if status:
        cells = tables.read_tau_argus(rda)[0]
        letters = cells[status[0]].astype(str).str.strip()
        safe = meta.status_codes.get("safe", TAB_STATUS["safe"])
        unsafe = meta.status_codes.get("unsafe", TAB_STATUS["unsafe"])
        other = ~letters.isin([safe, unsafe])
        if other.any():
            row = cells.loc[other].iloc[0]
            raise SDCInputError(f"{rda.stem}.tab: cell ({', '.join(f'{d}={row[d]!r}' for d in dimensions)}) has status "
                                f"{row[status[0]]!r}: only {safe} (safe) and {unsafe} (a priori unsafe) are read")
        found.append(cells.loc[letters == unsafe, dimensions].map(value_text))
    if spec.source.apriori is not None:
        found.append(tables.read_apriori(spec.source.apriori, dimensions, separator=meta.separator or ","))
    return pd.concat(found, ignore_index=True).drop_duplicates().astype(object)


def _apriori_flags(name: str, table: Table, cells: pd.DataFrame, apriori: pd.DataFrame) -> np.ndarray:
    """The rows of ``cells`` (:func:`coded_cells` of ``table``) that are ``apriori`` cells, a cell and
    its duplicates together; raises :class:`SDCInputError` naming the table for a priori cells of a
    table over other dimensions, or a cell it does not publish."""
    dimensions = list(apriori.columns)
    if sorted(table.names) != sorted(dimensions):
        raise SDCInputError(f"table {name!r}: the tau-Argus input marks cells unsafe a priori over "
                            f"{', '.join(dimensions)}; the table crosses {', '.join(table.names)}")
    published = pd.MultiIndex.from_frame(cells[dimensions].astype(str))
    wanted = pd.MultiIndex.from_frame(apriori.astype(str))
    missing = ~wanted.isin(published)
    if missing.any():
        first = wanted[int(np.flatnonzero(missing)[0])]
        raise SDCInputError(f"table {name!r}: the a priori unsafe cell ({', '.join(f'{d}={c!r}' for d, c in zip(dimensions, first))}) "
                            "is not a cell of the table")
    flagged = published.isin(wanted)
    return np.isin(table.cell, table.cell[flagged])


def primary_cells(spec: TableSetSpec, tabulated: dict[str, Table]) -> dict[str, pd.DataFrame]:
    """Each table's cells with ``primary`` (:func:`sdc_dagster.tables.primary_suppression` under
    the table's rules and tie convention; of tau-Argus input also the cells it marks unsafe a priori,
    :func:`apriori_cells`, which need not be exactly derivable: level 0 unless a rule gives one), its
    protection levels ``lower``, ``upper`` and
    ``duplicate_of`` (:func:`duplicate_of`; and ``cost``, each cell's cost of suppression, with
    ``cost: {column: c}``)."""
    out = {}
    apriori = apriori_cells(spec)
    for name, table in tabulated.items():
        definition = spec.published[name]
        rules, tie = list(definition.rules), definition.dominance_tie
        cells = coded_cells(table)
        cells["primary"] = tables.primary_suppression(table, rules, dominance_tie=tie)
        if apriori is not None and len(apriori):
            cells["primary"] = cells["primary"].to_numpy() | _apriori_flags(name, table, cells, apriori)
        cells[["lower", "upper"]] = tables.protection_levels(table, rules, dominance_tie=tie)
        cells["duplicate_of"] = duplicate_of(table, cells)
        out[name] = cells
    return out


def rounded_schema() -> pa.DataFrameSchema:
    """The boundary of a rounded table: whole published counts >= 0, nothing suppressed, ``rounded``
    exactly where the published count differs from the original."""
    return pa.DataFrameSchema(
        {
            "freq": pa.Column(float, pa.Check.ge(0)),
            "published": pa.Column(float, [pa.Check.ge(0), pa.Check(lambda s: s % 1 == 0, error="whole counts")]),
            "suppressed": pa.Column(bool, pa.Check(lambda s: ~s, error="nothing suppressed")),
            "status": pa.Column(str, pa.Check.isin(("safe", "rounded"))),
        },
        checks=[pa.Check(lambda f: (f["status"] == "rounded") == (f["published"] != f["freq"]),
                         error="rounded where the published count differs from the original")],
        strict=False,
    )


def round_tables(spec: TableSetSpec, tabulated: dict[str, Table],
                 primary: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``method: rounding``: each table's cells with ``published`` (the count released), nothing
    ``suppressed`` and ``status`` ``rounded`` where it differs from the original ``freq``: small-count
    rounding of every linked group at once (:func:`sdc_dagster.tables.small_count_rounding` with the
    spec's ``rounding`` parameters and seed; Langsrud and Heldal's PLS method, SmallCountRounding):
    the inner cells are rounded and every published cell is the sum of its rounded inner cells, so
    the tables stay additive and no published count is left in 1..round_base - 1. ``primary`` (the
    rules' unsafe cells) is kept for the report; rounding, not suppression, protects them.
    Validated by :func:`rounded_schema`."""
    out = {}
    for group in spec.linked():
        rounded = tables.small_count_rounding([tabulated[n] for n in group], **spec.rounding)
        for name, frame in zip(group, rounded):
            cells = primary[name].copy()
            cells["published"] = frame["rounded"].to_numpy(dtype=np.float64)
            cells["suppressed"] = False
            cells["status"] = np.where(cells["published"] != cells["freq"], "rounded", "safe")
            out[name] = validate(cells, rounded_schema(), source=f"rounded table {name!r}")
    return {name: out[name] for name in spec.published}


def cell_key_schema() -> pa.DataFrameSchema:
    """The boundary of a table perturbed by the cell key method: a published count or value in every
    cell, nothing suppressed, the status ``perturbed`` exactly where the published figure differs
    from the original (``value`` for a magnitude table, else ``freq``)."""
    status = "perturbed"
    return pa.DataFrameSchema(
        {
            "freq": pa.Column(float, pa.Check.ge(0)),
            "published": pa.Column(float, nullable=False),
            "suppressed": pa.Column(bool, pa.Check(lambda s: ~s, error="nothing suppressed")),
            "status": pa.Column(str, pa.Check.isin(("safe", status))),
        },
        checks=[pa.Check(lambda f: (f["status"] == status) == (f["published"] != f[_measure(f)]),
                         error=f"{status} where the published figure differs from the original")],
        strict=False,
    )


def _measure(cells: pd.DataFrame) -> str:
    """The column of a table's original published figure: ``value`` (magnitude table) or ``freq``."""
    return "value" if "value" in cells else "freq"


def cell_key_tables(spec: TableSetSpec, data: pd.DataFrame,
                    primary: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``method: cell_key``: each table's cells with its ``cell_key``, the ``published`` figure,
    nothing ``suppressed`` and ``status`` ``perturbed`` where it differs from the original. The
    record keys are drawn uniform in [0, 1) with the spec's seed; a cell's key is the sum of its
    records' keys mod 1, so a cell has the same key in every table (SPEC §8.11; Thompson, Broadfoot
    and Elazar 2013). A frequency table's counts get the count method's noise from the p-table of
    ``max_deviation`` D, ``variance`` V and ``threshold`` js (:func:`sdc_dagster.protect.ptable.perturbation_table`,
    sdcTools ptable), ``n' = n + v(n, ck)``; a magnitude table's values that of the cell key method
    for magnitudes (:func:`sdc_dagster.tables.cell_key_magnitude`: Handbook on SDC, cellKey's
    ``top_contr`` with ``delta``, ``top_k``, ``epsilon``), its counts left as tabulated. The rules'
    unsafe cells (``primary``) are kept for the report; the noise, not suppression, protects them.
    ``data`` is the validated input (:func:`table_input`). Validated by :func:`cell_key_schema`."""
    parameters = spec.cell_key
    ptable = perturbation_table(parameters["max_deviation"], parameters["variance"], threshold=parameters["threshold"])
    hierarchies = _hierarchies(spec, data)
    out = {}
    for name, table in spec.published.items():
        magnitude = table.value is not None
        frame = data if magnitude else data.assign(**{WEIGHTED: 1.0})  # counts: the count method at the same keys
        perturbed = tables.cell_key_magnitude(
            frame, {d: hierarchies[d] for d in table.dimensions}, value=table.value if magnitude else WEIGHTED,
            ptable=ptable, delta=parameters["delta"], top_k=parameters["top_k"], epsilon=parameters["epsilon"],
            seed=parameters["seed"], holding=table.holding, count_ptable=None if magnitude else ptable)
        cells = primary[name].copy()
        cells["cell_key"] = perturbed["cell_key"].to_numpy()
        cells["published"] = perturbed["perturbed_value" if magnitude else "perturbed_freq"].to_numpy(dtype=np.float64)
        cells["suppressed"] = False
        cells["status"] = np.where(cells["published"] != cells[_measure(cells)], "perturbed", "safe")
        out[name] = validate(cells, cell_key_schema(), source=f"cell key table {name!r}")
    return out


def protect_tables(spec: TableSetSpec, tabulated: dict[str, Table],
                   primary: dict[str, pd.DataFrame], data: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Each table's cells with ``suppressed`` and ``status``: with ``method: rounding``
    :func:`round_tables`, else the secondary suppression of every linked group at once (:func:`sdc_dagster.tables.secondary_suppression` with the spec's method,
    cost, the primaries' protection levels and the tables' frozen cells, :func:`frozen_cells`),
    validated by :func:`cells_schema`; with ``method: optimal`` each frame's ``attrs["optimality"]``
    says whether the pattern is proven optimal or the best found within the time limit, with its
    bound and gap (:class:`sdc_dagster.tables.Optimality`). With ``method: cell_key`` :func:`cell_key_tables` of ``data``
    (the validated input; the record keys are drawn per record)."""
    if spec.method == "rounding":
        return round_tables(spec, tabulated, primary)
    if spec.method == "cell_key":
        if data is None:
            raise SDCInputError("protect_tables: method cell_key draws record keys, give the input data")
        return cell_key_tables(spec, data, primary)
    out = {}
    for group in spec.linked():
        cost = [primary[n][COST] for n in group] if spec.cost_column else spec.cost
        frozen = [frozen_cells(spec, n, primary[n]) for n in group]
        patterns = tables.secondary_suppression(
            [tabulated[n] for n in group], [primary[n]["primary"] for n in group], method=spec.method,
            protection=[primary[n][["lower", "upper"]] for n in group], cost=cost, time_limit=spec.time_limit,
            workers=spec.workers,
            frozen=frozen if any(f.notna().any() for f in frozen) else None)
        for name, suppressed in zip(group, patterns):
            cells = primary[name].copy()
            cells["suppressed"] = suppressed.to_numpy()
            cells["status"] = np.where(cells["primary"], "primary", np.where(cells["suppressed"], "secondary", "safe"))
            out[name] = validate(cells, cells_schema(), source=f"protected table {name!r}")
            if "optimality" in suppressed.attrs:  # what the optimal method proved (tables.Optimality)
                out[name].attrs["optimality"] = str(suppressed.attrs["optimality"])
    return {name: out[name] for name in spec.published}


def frozen_cells(spec: TableSetSpec, name: str, cells: pd.DataFrame) -> pd.Series:
    """The table's frozen pattern as :func:`sdc_dagster.tables.secondary_suppression` takes it: True
    (must be suppressed), False (must be published), NA (free) per cell. Raises
    :class:`SDCInputError` naming the table and a frozen cell that is not one of its cells."""
    table = spec.published[name]
    out = pd.Series(pd.NA, index=cells.index, dtype="boolean")
    keys = pd.MultiIndex.from_frame(cells[list(table.dimensions)])
    for state, listed in table.frozen.items():
        wanted = pd.MultiIndex.from_tuples([tuple(c[d] for d in table.dimensions) for c in listed])
        found = keys.get_indexer(wanted)
        if (found < 0).any():
            missing = listed[int(np.flatnonzero(found < 0)[0])]
            raise SDCInputError(f"table {name!r}: frozen {state} cell {missing} is not a cell of the table")
        out.iloc[found] = state == "suppressed"
    return out


def audit_tables(spec: TableSetSpec, tabulated: dict[str, Table],
                 protected: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each protected table with the intruder's interval ``lo``, ``up`` of every suppressed cell
    (:func:`sdc_dagster.tables.intruder.audit` over every table of its linked group together) and
    ``protected``: whether a primary's interval meets its protection levels, or without levels is
    at least one unit wide (:func:`sdc_dagster.tables.intruder.protection_failures`, the test every
    pattern of :func:`sdc_dagster.tables.secondary_suppression` passes), its components bounded in
    ``spec.workers`` processes (the intervals do not depend on it). With ``method: rounding``
    :func:`audit_rounding`, with ``method: cell_key`` :func:`audit_cell_key`."""
    if spec.method == "rounding":
        return audit_rounding(spec, tabulated, protected)
    if spec.method == "cell_key":
        return audit_cell_key(spec, tabulated, protected)
    out = {}
    for group in spec.linked():
        model = joint_model([tabulated[n] for n in group])
        suppressed = stacked_mask(model, [protected[n]["suppressed"] for n in group], "suppressed")
        primary = stacked_mask(model, [protected[n]["primary"] for n in group], "primary")
        lower = np.concatenate([protected[n]["lower"].to_numpy(dtype=np.float64) for n in group])
        upper = np.concatenate([protected[n]["upper"].to_numpy(dtype=np.float64) for n in group])
        failing, lo, up = protection_failures(model, suppressed, primary, lower, upper, workers=spec.workers)
        for name, a, b, fails in zip(group, model.split(lo), model.split(up), model.split(failing)):
            cells = protected[name].copy()
            published = ~cells["suppressed"].to_numpy()
            cells["lo"] = np.where(published, np.nan, a)
            cells["up"] = np.where(published, np.nan, b)
            cells["protected"] = ~fails
            out[name] = cells
    return {name: out[name] for name in spec.published}


def audit_rounding(spec: TableSetSpec, tabulated: dict[str, Table],
                   protected: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each rounded table (:func:`round_tables`) with the two properties small-count rounding
    promises, checked cell by cell from the published counts alone: ``additive`` (the cell equals
    the sum of the published counts of the inner cells below it, ``M z' = b'``) and ``small`` (its
    published count is in 1..round_base - 1, which rounding must leave none of)."""
    base = spec.rounding["round_base"]
    out = {}
    for name, cells in protected.items():
        table = tabulated[name]
        published = cells["published"].to_numpy(dtype=np.float64)
        totals = table.matrix @ published[table.inner_rows]
        audited = cells.copy()
        audited["additive"] = np.isclose(published, totals, rtol=0, atol=1e-9)
        audited["small"] = (published >= 1) & (published <= base - 1)
        out[name] = audited
    return out


def audit_cell_key(spec: TableSetSpec, tabulated: dict[str, Table],
                   protected: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each table of the cell key method (:func:`cell_key_tables`) with ``as_ptable``: its published
    figure is one the p-table allows at its recorded cell key. A count ``n`` must be published as
    ``n + v`` with ``v`` the p-table's noise at row ``n`` and key ``ck`` (SPEC §8.11, the lookup
    ``F(v - 1) <= ck < F(v)`` of :meth:`~sdc_dagster.protect.ptable.PerturbationTable.lookup`); a
    value ``X`` with top contributions ``x_1..x_k`` must keep its sign and move by at most
    ``D · delta · sum_j epsilon_j · x_j`` (each of the k steps adds ``delta · epsilon_j · x_j · v_j``
    with ``|v_j| <= D``; Handbook on SDC, cell key method for magnitude tables)."""
    parameters = spec.cell_key
    ptable = perturbation_table(parameters["max_deviation"], parameters["variance"], threshold=parameters["threshold"])
    out = {}
    for name, cells in protected.items():
        published = cells["published"].to_numpy(dtype=np.float64)
        audited = cells.copy()
        if "value" in cells:
            stats = contributor_statistics(tabulated[name], parameters["top_k"])
            reach = parameters["max_deviation"] * parameters["delta"] * sum(
                e * stats[f"x{j + 1}"].to_numpy(dtype=np.float64) for j, e in enumerate(parameters["epsilon"]))
            value = cells["value"].to_numpy(dtype=np.float64)
            audited["as_ptable"] = ((np.abs(published - value) <= reach * (1 + 1e-9))
                                    & (np.sign(published) * np.sign(value) >= 0))
        else:
            counts = cells["freq"].to_numpy(dtype=np.int64)
            noise = ptable.lookup(counts, cells["cell_key"].to_numpy(dtype=np.float64))
            audited["as_ptable"] = published == counts + noise
        out[name] = audited
    return out


def _outcome(figures: dict[str, int], rule: str) -> CheckOutcome:
    total = sum(figures.values())
    return CheckOutcome(passed=total == 0, value=total, rule=rule, blocking=True,
                        figures={name: float(v) for name, v in figures.items()})


def protection_checks(protected: dict[str, pd.DataFrame]) -> dict[str, CheckOutcome]:
    """The release rules of the protected tables, each a blocking :class:`CheckOutcome` (``figures``:
    the failing cells per table): ``primaries_suppressed`` (every primary cell is suppressed; not for
    rounded or perturbed tables, :func:`round_tables`, :func:`cell_key_tables`, whose ``published``
    figures protect them) and ``cells_valid`` (no published count is negative, nor a perturbed
    figure whose original is not, and no published cell is empty: a missing value)."""
    invalid = {}
    for name, cells in protected.items():
        shown = cells[~cells["suppressed"]]
        if "published" in cells:  # perturbed: a figure turned negative (a value already negative may stay so)
            negative = (shown["published"] < 0) & (shown[_measure(shown)] >= 0)
            invalid[name] = int(negative.sum() + shown["published"].isna().sum())
        else:
            invalid[name] = int((shown["freq"] < 0).sum() + shown[_measure(shown)].isna().sum())
    valid = _outcome(invalid, "no published count is negative and no published cell is empty")
    if any("published" in cells for cells in protected.values()):  # rounded: nothing is suppressed
        return {"cells_valid": valid}
    return {
        "primaries_suppressed": _outcome({n: int((c["primary"] & ~c["suppressed"]).sum()) for n, c in protected.items()},
                                         "every primary (unsafe) cell is suppressed"),
        "cells_valid": valid,
    }


def audit_check(audited: dict[str, pd.DataFrame]) -> dict[str, CheckOutcome]:
    """``audit_passed``: every primary's audit interval meets its protection levels (or, without
    levels, is at least 1 wide; :func:`audit_tables`), a blocking :class:`CheckOutcome`. For rounded
    tables (:func:`audit_rounding`) instead ``additive`` (every published cell is the sum of its
    published inner cells) and ``no_small_counts`` (no published count in 1..round_base - 1); for
    tables of the cell key method (:func:`audit_cell_key`) ``perturbed_as_ptable`` (every published
    figure one the p-table allows at its cell key)."""
    if any("as_ptable" in cells for cells in audited.values()):
        return {"perturbed_as_ptable": _outcome({n: int((~c["as_ptable"]).sum()) for n, c in audited.items()},
                                                "every published figure is perturbed from its cell key as the "
                                                "p-table says")}
    if any("additive" in cells for cells in audited.values()):
        return {"additive": _outcome({n: int((~c["additive"]).sum()) for n, c in audited.items()},
                                     "every published cell is the sum of the published inner cells below it"),
                "no_small_counts": _outcome({n: int(distinct(c)["small"].sum()) for n, c in audited.items()},
                                            "no published count is in 1..round_base - 1")}
    return {"audit_passed": _outcome({n: int((~c["protected"]).sum()) for n, c in audited.items()},
                                     "every primary's audit interval meets its protection levels (or, without "
                                     "levels, is at least 1 wide): no primary is disclosed by the published cells")}


def table_checks(audited: dict[str, pd.DataFrame]) -> dict[str, CheckOutcome]:
    """Every release rule of a table set (:func:`protection_checks` and :func:`audit_check`)."""
    return {**protection_checks(audited), **audit_check(audited)}


def withheld_because(checks: dict[str, CheckOutcome]) -> dict[str, str]:
    """The failed blocking checks of a table set ({check: what failed}); empty when it may be released."""
    return {name: f"{c.value} cells: {c.rule}" for name, c in checks.items() if c.blocking and not c.passed}


def run_tables(spec: TableSetSpec, data: pd.DataFrame, *,
               source: str = "table input") -> tuple[dict[str, Table], dict[str, pd.DataFrame]]:
    """Every stage from the input to the audited tables (the chain of the assets, in one call): the
    tabulated tables and their audited cells."""
    data = table_input(spec, data, source=source)
    tabulated = tabulate_tables(spec, data)
    protected = protect_tables(spec, tabulated, primary_cells(spec, tabulated), data)
    return tabulated, audit_tables(spec, tabulated, protected)
