"""One model of a published table: its inner cells and one sparse matrix from inner to published cells.

A table crosses dimensions. Each dimension is a tree of codes: a flat dimension is its codes under
"Total"; a hierarchical one is given as parent/child pairs whose single root is the dimension's
total. The *inner cells* are the combinations of the leaves of every dimension; every published
cell is the sum of the inner cells below it. With ``A_d`` the 0/1 matrix from the leaves of
dimension d to its codes (a code covers the leaves below it), the matrix from the inner cells to the
published cells is the Kronecker product ``A_1 ⊗ A_2 ⊗ ... ⊗ A_m`` (Hundepool et al. 2012,
"Statistical Disclosure Control", §4.4: a table is a linear system ``M z = b`` with ``z >= 0``; the
same model matrix as Statistics Norway's GaussSuppression ``ModelMatrix`` and sdcTable's
constraints, here built once and shared by the primary rules, the audit and the suppression).

* Duplicate cells: a parent with a single child covers the same leaves as that child, so it is the
  same cell (sdcTable's "bogus codes"). Both rows are kept in :attr:`Table.cells` (an office prints
  both), they share one row of :attr:`Table.matrix` up to identity (:attr:`Table.cell`, the distinct
  cell of each row), and therefore their status, values and interval.
* Linked tables (several tables over shared dimensions, Hundepool et al. 2012 §4.4.3) are modelled
  jointly by :func:`joint_model`: the inner cells of the union of their dimensions, one block of
  rows per table.
* Frequency tables count records (or take a column of counts of aggregated input); magnitude tables
  sum ``value`` and keep the contributions per contributor (a holding's contributions summed: it
  counts as one contributor) for the primary rules of :mod:`sdc_dagster.tables.primary`.

The aggregation of microdata runs in DuckDB (:mod:`sdc_dagster.risk.frequencies`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pandas as pd
from scipy import sparse

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.frequencies import connect

#: The code of a flat dimension's total.
TOTAL = "Total"


@dataclass(frozen=True, eq=False)
class Dimension:
    """A dimension's codes as a tree.

    ``codes``: every code in published order (root first, then depth first); ``leaves``: the codes
    without children (the inner categories); ``matrix``: codes x leaves, 1 where the code covers the
    leaf; ``level``: depth of each code (0 for the total); ``parent``: position of each code's parent
    (-1 for the root); ``group``: the distinct cell of each code (codes covering the same leaves, a
    parent with a single child, share a group); ``text``: codes are compared as text (a hierarchy).
    """

    name: str
    codes: pd.Index
    leaves: pd.Index
    matrix: sparse.csr_matrix
    level: np.ndarray
    parent: np.ndarray
    group: np.ndarray
    text: bool = False

    @property
    def leaf_position(self) -> np.ndarray:
        """Position in ``codes`` of each leaf."""
        return self.codes.get_indexer(self.leaves)


def _tree(name: str, children: dict, root, *, text: bool) -> Dimension:
    """The :class:`Dimension` of the tree ``children`` (code -> its child codes) below ``root``."""
    codes, level, parent = [], [], []
    stack = [(root, 0, -1)]
    while stack:  # depth-first over the codes of the hierarchy (not over records)
        code, depth, up = stack.pop()
        position = len(codes)
        codes.append(code)
        level.append(depth)
        parent.append(up)
        stack.extend((c, depth + 1, position) for c in reversed(children.get(code, [])))
    is_leaf = [not children.get(c) for c in codes]
    leaf_index = np.cumsum(is_leaf) - 1
    n = len(codes)
    # every code covers the leaves of its subtree: walk each leaf up to the root
    rows, cols = [], []
    for position in np.flatnonzero(is_leaf):
        up = position
        while up != -1:
            rows.append(up)
            cols.append(leaf_index[position])
            up = parent[up]
    matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, int(sum(is_leaf))))
    # a parent with a single child is the same cell as the child: group codes by the bottom of
    # their chain of single children
    position_of = {code: position for position, code in enumerate(codes)}
    group_of = np.arange(n)
    for position in range(n - 1, -1, -1):
        kids = children.get(codes[position], [])
        if len(kids) == 1:
            group_of[position] = group_of[position_of[kids[0]]]
    _, group = np.unique(group_of, return_inverse=True)
    return Dimension(
        name=name,
        codes=pd.Index(codes, dtype=object),
        leaves=pd.Index([c for c, leaf in zip(codes, is_leaf) if leaf], dtype=object),
        matrix=matrix,
        level=np.asarray(level, dtype=np.int64),
        parent=np.asarray(parent, dtype=np.int64),
        group=group.astype(np.int64),
        text=text,
    )


def flat_dimension(name: str, codes: Sequence) -> Dimension:
    """A flat dimension: the sorted ``codes`` under ``"Total"``."""
    codes = list(pd.unique(pd.Series(list(codes), dtype=object)))
    if TOTAL in codes:
        raise SDCInputError(f"dimension {name!r}: the code {TOTAL!r} is reserved for the dimension's total")
    try:
        codes = sorted(codes)
    except TypeError:
        codes = sorted(codes, key=str)
    return _tree(name, {TOTAL: codes}, TOTAL, text=False)


def hierarchical_dimension(name: str, hierarchy: pd.DataFrame) -> Dimension:
    """A dimension from a frame of ``parent``, ``child`` pairs; its single root is the total.

    Raises :class:`SDCInputError` for a missing column, a child with two parents, a cycle or more
    than one root, naming the dimension and the code.
    """
    require_columns(hierarchy, ["parent", "child"], role=f"hierarchy of dimension {name!r}: column")
    parents = hierarchy["parent"].astype(str).tolist()
    kids = hierarchy["child"].astype(str).tolist()
    twice = pd.Index(kids)[pd.Index(kids).duplicated()]
    if len(twice):
        raise SDCInputError(f"hierarchy of dimension {name!r}: code {twice[0]!r} has more than one parent")
    roots = sorted(set(parents) - set(kids))
    if len(roots) != 1:
        raise SDCInputError(
            f"hierarchy of dimension {name!r}: must have exactly one root (the total), found {roots or 'none (a cycle)'}"
        )
    children: dict[str, list[str]] = {}
    for p, c in zip(parents, kids):
        children.setdefault(p, []).append(c)
    dimension = _tree(name, children, roots[0], text=True)
    if len(dimension.codes) != len(set(parents) | set(kids)):
        raise SDCInputError(f"hierarchy of dimension {name!r}: contains a cycle not reachable from {roots[0]!r}")
    return dimension


@dataclass(frozen=True, eq=False)
class Table:
    """A table: its published cells and the sparse matrix from its inner cells to them.

    ``cells``: one row per published cell (a column per dimension, ``"freq"``, and ``"value"`` for a
    magnitude table); ``matrix``: published rows x inner cells (CSR, 0/1); ``cell``: the distinct
    cell of each row (a parent with a single child shares its child's); ``inner_rows``: the row of
    ``cells`` that is each inner cell; ``contributions``: per contributor and inner cell the
    contribution (columns ``inner_cell``, ``unit``, ``value``, ``request``; ``None`` for aggregated input), a holding
    being one unit; ``contributors``: per row the number of contributors (holdings with
    ``holding=``; for counts the count itself).
    """

    dimensions: tuple[Dimension, ...]
    cells: pd.DataFrame
    matrix: sparse.csr_matrix
    cell: np.ndarray
    inner_rows: np.ndarray
    contributions: pd.DataFrame | None
    contributors: np.ndarray
    magnitude: bool

    @property
    def names(self) -> list[str]:
        """The dimension names, in the order of the columns of :attr:`cells`."""
        return [d.name for d in self.dimensions]

    @property
    def published(self) -> np.ndarray:
        """The published values ``b`` (value for a magnitude table, else freq), one per row."""
        return self.cells["value" if self.magnitude else "freq"].to_numpy(dtype=np.float64)


def _dimension(name: str, spec, data: pd.DataFrame) -> Dimension:
    if spec is None:
        return flat_dimension(name, data[name].dropna().unique())
    if isinstance(spec, pd.DataFrame):
        return hierarchical_dimension(name, spec)
    raise SDCInputError(
        f"dimension {name!r}: must be None (flat) or a DataFrame with columns 'parent', 'child', got {type(spec).__name__}"
    )


def _leaf_index(dimension: Dimension, column: pd.Series) -> np.ndarray:
    """The leaf number of every value of ``column``; codes compared as text for a hierarchy."""
    if column.isna().any():
        raise SDCInputError(f"dimension {dimension.name!r}: has missing values (row {int(np.flatnonzero(column.isna())[0])})")
    values = column.astype(str) if dimension.text else column
    found = dimension.leaves.get_indexer(pd.Index(values, dtype=object))
    if (found < 0).any():
        outside = np.flatnonzero(found < 0)
        bad = values.iloc[int(outside[0])]
        where = "a code above the leaves" if bad in set(dimension.codes) else "not in its hierarchy"
        raise SDCInputError(
            f"dimension {dimension.name!r}: value {bad!r} is {where} (data row {int(outside[0]) + 1:,}, 1-based; "
            f"{len(outside):,} row{'s' if len(outside) != 1 else ''} coded outside its leaves); data must be coded at the leaves"
        )
    return found.astype(np.int64)


def tabulate(
    data: pd.DataFrame,
    dimensions: Mapping[str, pd.DataFrame | None],
    *,
    freq: str | None = None,
    value: str | None = None,
    holding: str | None = None,
    request: str | None = None,
) -> Table:
    """The :class:`Table` of ``data`` over ``dimensions``.

    ``data`` is microdata (one row per contribution; ``value`` the magnitude, ``holding`` the column
    of the enterprise group whose contributions count as one contributor, tau-Argus manual §4.2
    "holdings") or inner cells of aggregated input (``freq`` a column of counts; ``value`` then sums
    per inner cell and no contributions are known). ``dimensions``: {column: None (flat: its codes
    plus "Total") or a DataFrame of ``parent``, ``child`` (its root is the total)}.

    Raises :class:`SDCInputError` naming the column for a missing column, missing or non-numeric
    values, a negative count, a code outside the dimension's hierarchy or above its leaves.
    """
    if not isinstance(dimensions, Mapping) or not dimensions:
        raise SDCInputError("dimensions: must be a non-empty mapping {column: None or hierarchy DataFrame}")
    names = require_columns(data, list(dimensions), role="dimension")
    if holding is not None and freq is not None:
        raise SDCInputError("holding: needs microdata (one row per contribution), not counts (freq=)")
    dims = tuple(_dimension(n, dimensions[n], data) for n in names)
    shape = tuple(len(d.leaves) for d in dims)
    n_inner = int(np.prod(shape))
    inner = np.ravel_multi_index([_leaf_index(d, data[d.name]) for d in dims], shape) if len(data) else np.zeros(0, np.int64)

    frame = _contributions(data, inner, freq=freq, value=value, holding=holding, request=request)
    inner_freq, inner_value, units = _inner_sums(frame, n_inner, microdata=freq is None)

    matrix = reduce(lambda a, b: sparse.kron(a, b, format="csr"), [d.matrix for d in dims]).tocsr()
    code_shape = tuple(len(d.codes) for d in dims)
    index = pd.MultiIndex.from_product([d.codes for d in dims], names=names)
    cells = index.to_frame(index=False)
    cells["freq"] = matrix @ inner_freq
    if value is not None:
        cells["value"] = matrix @ inner_value
    group_shape = tuple(int(d.group.max()) + 1 for d in dims)
    grid = np.meshgrid(*[d.group for d in dims], indexing="ij")
    cell = np.ravel_multi_index([g.ravel() for g in grid], group_shape)
    _, cell = np.unique(cell, return_inverse=True)
    inner_rows = np.ravel_multi_index(
        [g.ravel() for g in np.meshgrid(*[d.leaf_position for d in dims], indexing="ij")], code_shape
    )
    contributions = units if (units is not None and value is not None) else None
    if holding is not None:
        contributors = _distinct_units(matrix, units)
    else:
        contributors = cells["freq"].to_numpy(dtype=np.float64)
    return Table(
        dimensions=dims,
        cells=cells,
        matrix=matrix,
        cell=cell.astype(np.int64),
        inner_rows=inner_rows.astype(np.int64),
        contributions=contributions,
        contributors=contributors,
        magnitude=value is not None,
    )


def _contributions(data: pd.DataFrame, inner: np.ndarray, *, freq: str | None, value: str | None,
                   holding: str | None, request: str | None) -> pd.DataFrame:
    """One row per record of ``data``: its ``inner_cell``, ``freq`` (1 for microdata), ``value`` (0
    without one), ``unit`` (its holding's code, tau-Argus manual §4.2, else the record) and
    ``request`` (the request rule's flag); :func:`tabulate`'s input checks."""
    frame = pd.DataFrame({"inner_cell": inner.astype(np.int64)})
    for role, column in (("freq", freq), ("value", value)):
        if column is not None:
            require_columns(data, [column], role=f"{role} column")
            numbers = pd.to_numeric(data[column], errors="coerce")
            if numbers.isna().any():
                row = int(np.flatnonzero(numbers.isna().to_numpy())[0])
                raise SDCInputError(f"{role} column {column!r}: row {row} is missing or not a number ({data[column].iloc[row]!r})")
            frame[role] = numbers.to_numpy(dtype=np.float64)
    if freq is not None and (frame["freq"] < 0).any():
        row = int(np.flatnonzero(frame["freq"].to_numpy() < 0)[0])
        raise SDCInputError(f"freq column {freq!r}: row {row} is negative ({frame['freq'].iloc[row]:g}); counts are >= 0")
    if freq is None:
        frame["freq"] = 1.0
    if holding is not None:
        require_columns(data, [holding], role="holding column")
        codes = pd.factorize(data[holding])[0]
        if (codes < 0).any():
            raise SDCInputError(f"holding column {holding!r}: row {int(np.flatnonzero(codes < 0)[0])} is missing")
        frame["unit"] = codes.astype(np.int64)
    else:
        frame["unit"] = np.arange(len(frame), dtype=np.int64)
    if value is None:
        frame["value"] = 0.0
    if request is not None:
        if freq is not None or value is None:
            raise SDCInputError("request: needs microdata with value= (the request rule is a magnitude rule)")
        require_columns(data, [request], role="request column")
        if data[request].isna().any() or not pd.api.types.is_bool_dtype(data[request]):
            raise SDCInputError(f"request column {request!r}: must be boolean (True: the contributor asked for protection)")
    frame["request"] = data[request].to_numpy(dtype=bool) if request is not None else False
    return frame


def _inner_sums(frame: pd.DataFrame, n_inner: int, *, microdata: bool) \
        -> tuple[np.ndarray, np.ndarray, pd.DataFrame | None]:
    """Counted in DuckDB: each inner cell's frequency and value sums, and for microdata the value
    and request flag per (inner cell, unit), a holding's contributions summed."""
    db = connect()
    db.register("sdc_table_input", frame)
    try:
        sums = db.execute(
            "SELECT inner_cell, sum(freq) AS freq, sum(value) AS value FROM sdc_table_input GROUP BY inner_cell"
        ).df()
        units = None
        if microdata:  # contributions per unit (a holding's units summed) and inner cell
            units = db.execute(
                "SELECT inner_cell, unit, sum(value) AS value, bool_or(request) AS request FROM sdc_table_input "
                "GROUP BY inner_cell, unit ORDER BY inner_cell, unit"
            ).df()
    finally:
        db.unregister("sdc_table_input")
    inner_freq = np.zeros(n_inner)
    inner_value = np.zeros(n_inner)
    inner_freq[sums["inner_cell"].to_numpy()] = sums["freq"].to_numpy()
    inner_value[sums["inner_cell"].to_numpy()] = sums["value"].to_numpy()
    return inner_freq, inner_value, units


def cover_pairs(matrix: sparse.csr_matrix) -> pd.DataFrame:
    """(``inner_cell``, ``row``) for every published row covering every inner cell (the nonzeros)."""
    coo = matrix.tocoo()
    return pd.DataFrame({"inner_cell": coo.col.astype(np.int64), "row": coo.row.astype(np.int64)})


def _distinct_units(matrix: sparse.csr_matrix, units: pd.DataFrame) -> np.ndarray:
    """Per published row the number of distinct units (holdings) with a contribution below it."""
    db = connect()
    db.register("sdc_table_units", units)
    db.register("sdc_table_cover", cover_pairs(matrix))
    try:
        counted = db.execute(
            "SELECT c.row, count(DISTINCT u.unit) AS n FROM sdc_table_units u JOIN sdc_table_cover c USING (inner_cell) GROUP BY c.row"
        ).df()
    finally:
        db.unregister("sdc_table_units")
        db.unregister("sdc_table_cover")
    out = np.zeros(matrix.shape[0])
    out[counted["row"].to_numpy()] = counted["n"].to_numpy()
    return out


@dataclass(frozen=True, eq=False)
class JointModel:
    """Linked tables modelled together: inner cells of the union of their dimensions.

    ``matrix``: the rows of every table stacked (table 0's rows first), inner cells of the joint
    classification as columns; ``offsets``: where each table's rows start; ``published``: ``b``, the
    published values of all rows; ``cell``: a distinct cell id per stacked row (unique across tables);
    ``start``: a point of the joint inner cells reproducing every table (``M start = b``, ``start >= 0``);
    ``shape``: the number of leaves of each dimension of the joint classification (the inner cells
    are their combinations, the last dimension varying fastest).
    """

    tables: tuple[Table, ...]
    matrix: sparse.csr_matrix
    offsets: np.ndarray
    published: np.ndarray
    cell: np.ndarray
    start: np.ndarray
    shape: tuple[int, ...] = ()

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """``values`` of the stacked rows, one array per table."""
        return np.split(np.asarray(values), self.offsets[1:-1])


def joint_model(tables: Sequence[Table]) -> JointModel:
    """The :class:`JointModel` of linked tables (a single table is its own model).

    A dimension shared by several tables (same name) must have the same leaves in each (its
    hierarchies may differ: tau-Argus's and GaussSuppression's linked tables with alternative
    hierarchies); a table without a dimension sums over it. When all tables share the same
    dimensions their inner cells must agree (they come from the same data); otherwise a point of
    the joint inner cells is found by linear programming (the tables are consistent iff one exists).
    """
    tables = tuple(tables)
    if not tables or not all(isinstance(t, Table) for t in tables):
        raise SDCInputError("tables: must be a Table or a non-empty list of Tables (from tables.tabulate)")
    if len({t.magnitude for t in tables}) > 1:
        raise SDCInputError("linked tables: must all be frequency tables or all magnitude tables")
    leaves: dict[str, pd.Index] = {}
    for position, t in enumerate(tables):
        for d in t.dimensions:
            if d.name in leaves and not leaves[d.name].sort_values().equals(d.leaves.sort_values()):
                raise SDCInputError(
                    f"linked tables: dimension {d.name!r} of table {position} has other leaves than in an earlier table"
                )
            leaves.setdefault(d.name, d.leaves)
    names = list(leaves)
    blocks, cells, offsets, published = [], [], [0], []
    for t in tables:
        parts = []
        for name in names:
            own = next((d for d in t.dimensions if d.name == name), None)
            if own is None:
                parts.append(sparse.csr_matrix(np.ones((1, len(leaves[name])))))
            else:  # columns in the joint leaf order
                parts.append(own.matrix[:, own.leaves.get_indexer(leaves[name])])
        # the rows of a table's Kronecker product run over its dimensions in the joint order: reorder
        joint_order = [n for n in names if n in t.names]
        block = reduce(lambda a, b: sparse.kron(a, b, format="csr"), parts).tocsr()
        rows = _row_permutation(t, joint_order)
        blocks.append(block[rows])
        cells.append(t.cell + (max(c.max() for c in cells) + 1 if cells else 0))
        offsets.append(offsets[-1] + block.shape[0])
        published.append(t.published)
    matrix = sparse.vstack(blocks, format="csr")
    b = np.concatenate(published)
    start = _joint_start(tables, matrix, b)
    shape = tuple(len(leaves[n]) for n in names)
    return JointModel(tables, matrix, np.asarray(offsets), b, np.concatenate(cells), start, shape)


def _row_permutation(table: Table, joint_order: list[str]) -> np.ndarray:
    """For each row of ``table``, the row of the Kronecker product over ``joint_order``."""
    dims = {d.name: d for d in table.dimensions}
    shape = tuple(len(dims[n].codes) for n in joint_order)
    positions = [dims[n].codes.get_indexer(table.cells[n]) for n in joint_order]
    return np.ravel_multi_index(positions, shape)


def _joint_start(tables, matrix, b) -> np.ndarray:
    """A point of the joint inner cells reproducing every table (see :func:`joint_model`)."""
    first = tables[0]
    if all(t.names == first.names for t in tables):  # same inner cells: the first table's
        z = first.published[first.inner_rows]
        if not np.allclose(matrix @ z, b, rtol=1e-9, atol=1e-6):
            raise SDCInputError("linked tables: their inner cells differ; linked tables must come from the same data")
        return z
    from scipy.optimize import linprog

    result = linprog(np.zeros(matrix.shape[1]), A_eq=matrix, b_eq=b, bounds=(0, None), method="highs")
    if result.status != 0:
        raise SDCInputError("linked tables: no table of the joint inner cells reproduces them all; they are not from the same data")
    return result.x


def implied_rows(table: Table, published: np.ndarray) -> np.ndarray:
    """The published rows of ``table`` implied by other published rows: a cell whose children in
    some dimension, two or more, are all published is their sum. Every implied row follows from
    the published rows that are not implied (its children are strictly smaller cells), so an
    intruder's linear programme may leave the implied rows out. A parent with a single child is
    not implied by it: both rows are one cell (:attr:`Table.cell`), of which the programme keeps
    one row; were the parent implied by the child and the child left out as the parent's
    duplicate, the cell would be lost (the audit then found a Total x Portugal of the business
    table unbounded above, [0, inf], where the published grand total bounds it)."""
    published = np.asarray(published, dtype=bool)
    n = len(table.cells)
    shape = tuple(len(d.codes) for d in table.dimensions)
    position = np.unravel_index(np.arange(n), shape)
    implied = np.zeros(n, dtype=bool)
    for axis, d in enumerate(table.dimensions):
        up = d.parent[position[axis]]
        below = up >= 0
        parent_position = [p[below] for p in position]
        parent_position[axis] = up[below]
        parent_row = np.ravel_multi_index(parent_position, shape)
        published_children = np.bincount(parent_row, weights=published[below], minlength=n)
        children = np.bincount(d.parent[d.parent >= 0], minlength=len(d.codes))[position[axis]]
        implied |= (children > 1) & (published_children == children)
    return implied & published


def relations(table: Table) -> sparse.csr_matrix:
    """The additive relations of ``table`` as a relations x rows 0/1 matrix: for every dimension and
    every row whose code there has children, the row and its children rows (parent = sum of the
    children). A suppressed cell whose relation has every other member published is exactly
    derivable, whatever the rest of the table."""
    n = len(table.cells)
    shape = tuple(len(d.codes) for d in table.dimensions)
    position = np.unravel_index(np.arange(n), shape)
    rel, member = [], []
    for axis, d in enumerate(table.dimensions):
        up = d.parent[position[axis]]
        below = np.flatnonzero(up >= 0)
        parent_position = [p[below] for p in position]
        parent_position[axis] = up[below]
        parent_row = np.ravel_multi_index(parent_position, shape)
        parents = np.unique(parent_row)
        rel += [axis * n + parent_row, axis * n + parents]
        member += [below, parents]
    rel, member = np.concatenate(rel), np.concatenate(member)
    used, rel = np.unique(rel, return_inverse=True)
    return sparse.csr_matrix((np.ones(len(rel)), (rel, member)), shape=(len(used), n))
