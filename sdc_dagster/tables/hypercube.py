"""Hypercubes: explicit moves of a flat table that keep every published cell, for protection and audit.

In a table without hierarchy (every dimension a flat list of categories under its total) a cell at
code positions ``(p_1, ..., p_m)`` (0 the dimension's total) lies on the hypercubes that take, in
every dimension, one alternative position ``a_d != p_d`` (another category or the total): its
``2^m`` *corners* replace any subset of the coordinates by the alternatives. With the inner vector
``u_d = e_{p_d} - e_{a_d}`` in a dimension where both are categories, and ``u_d = e_{p_d}`` or
``e_{a_d}`` (the category of the two) where one of them is the total, the move ``t · u_1 ⊗ ... ⊗ u_m``
of the inner cells changes exactly the corners (a total is the sum of its categories, so the sign
of a dimension whose alternative is the total is not flipped) and no other published cell: the
primary's corner gains ``t``, every other corner ``± t``. The move is feasible for the intruder
(``z >= 0``, every published cell unchanged) when every corner is suppressed and, for ``t > 0``,
``t`` is at most the value of every inner corner of sign ``-``, for ``t < 0`` at most that of every
inner corner of sign ``+`` (the primary's among them when it is an inner cell). So the primary's
interval contains ``[b - t_down, b + t_up]`` (the two minima).

This is the hypercube method of GHMiter (Repsilber 2002, "Sicherung personenbezogener Daten in
Tabellen"; tau-Argus's "hypercube" method, Hundepool et al. 2012, "Statistical Disclosure
Control", §4.4.2; the tau-Argus manual, "GHMiter"), which protects a primary by the cheapest
hypercube whose decreasing corners are large enough. Here it serves two ends (issue 36):

* the repair of a Gauss pattern (:mod:`sdc_dagster.tables.secondary`) suppresses, for a primary
  the audit finds short in a flat table, the corners of its cheapest hypercube that meets the
  primary's requirement (:func:`cheapest`), instead of two capacity programmes per failing primary
  and round;
* the pass/fail audit (:func:`sdc_dagster.tables.intruder.intervals` with ``enough``) takes the
  range of every fully suppressed hypercube (:func:`ranges`) as a certificate: a feasible point of
  the intruder's programme, so the primary's true interval contains it. A certificate proves a
  pass; a primary it does not prove passing still gets its linear programme.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

import numpy as np

from sdc_dagster.tables.hitas import subtables
from sdc_dagster.tables.model import JointModel

#: Hypercubes whose candidacy is looked at once (rows x hypercubes of each): bounds the memory.
BATCH = 1 << 21


def flat_shape(model: JointModel) -> tuple[int, ...] | None:
    """The number of codes of each dimension (its total first) when ``model`` is one table whose
    dimensions are all flat with at least two categories (no duplicate cells, rows in the order of
    the codes' product, as :func:`sdc_dagster.tables.model.tabulate` builds them); else None."""
    if len(model.tables) != 1:
        return None
    dimensions = model.tables[0].dimensions
    for d in dimensions:
        if len(d.codes) < 3 or d.parent[0] != -1 or (d.parent[1:] != 0).any():
            return None
    return tuple(len(d.codes) for d in dimensions)


def _scan(shape: tuple[int, ...], rows: np.ndarray, values: np.ndarray, cost: np.ndarray | None,
          blocked: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """For every primary row of ``rows`` (flat cell positions) and every hypercube of it (the
    alternatives in C order, ``shape[d] - 1`` per dimension): ``t_down``, ``t_up`` (module text,
    from the inner corners' ``values``), and when ``cost`` is given the summed ``cost`` of its
    corners and whether a corner is ``blocked``. Arrays of shape (len(rows), hypercubes)."""
    m = len(shape)
    alternatives = tuple(n - 1 for n in shape)
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(m)])
    position = np.unravel_index(rows, shape)
    own, other, cross = [], [], []
    for d in range(m):
        p = position[d].reshape((-1,) + (1,) * m)
        j = np.arange(alternatives[d]).reshape((1,) + tuple(alternatives[d] if e == d else 1 for e in range(m)))
        a = j + (j >= p)  # every code but the primary's own
        own.append(p)
        other.append(a)
        cross.append(np.where((p != 0) & (a != 0), -1, 1))  # both categories: the sign flips
    full = (len(rows),) + alternatives
    t_down, t_up = np.full(full, np.inf), np.full(full, np.inf)
    total = np.zeros(full) if cost is not None else None
    stop = np.zeros(full, dtype=bool) if cost is not None else None
    for subset in range(1 << m):
        taken = [(subset >> d) & 1 for d in range(m)]
        coordinate = [other[d] if taken[d] else own[d] for d in range(m)]
        cell = sum(c * s for c, s in zip(coordinate, strides))
        cell = np.broadcast_to(cell, full)
        sign = reduce(np.multiply, [cross[d] for d in range(m) if taken[d]], np.ones((1,) * (m + 1), dtype=int))
        inner = reduce(np.logical_and, [c != 0 for c in coordinate])
        value = np.where(inner, values[cell], np.inf)
        t_up = np.where(sign < 0, np.minimum(t_up, value), t_up)
        t_down = np.where(sign > 0, np.minimum(t_down, value), t_down)
        if cost is not None:
            total += cost[cell]
            stop |= blocked[cell]
    n = int(np.prod(alternatives))
    out = (t_down.reshape(len(rows), n), t_up.reshape(len(rows), n))
    if cost is not None:
        out += (total.reshape(len(rows), n), stop.reshape(len(rows), n))
    return out


def _batches(shape: tuple[int, ...], rows: np.ndarray):
    """Slices of ``rows`` whose hypercubes (one candidate flag each, :func:`_closed_ranges`) number
    at most :data:`BATCH`."""
    size = max(1, BATCH // int(np.prod([n - 1 for n in shape])))
    for begin in range(0, len(rows), size):
        yield slice(begin, begin + size)


def ranges(shape: tuple[int, ...], rows: np.ndarray, values: np.ndarray, suppressed: np.ndarray,
           total_free: tuple[bool, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lo, up) per row of ``rows``: ``b - max t_down`` and ``b + max t_up`` over the hypercubes of
    the row whose every corner is ``suppressed`` (bool per cell), ``b`` where none is. Each bound is
    the primary's value at a feasible point of the intruder's programme (module text), so its
    interval contains ``[lo, up]``. ``total_free[d]`` False: no corner at the total of dimension d
    (the subtables of :func:`leaf_ranges`); default: every total may be one.

    Only a hypercube whose ``m`` corners next to the row (one coordinate replaced by the
    alternative) are suppressed can be fully suppressed: those candidates are found first, from
    ``m`` masks (rows x alternatives of one dimension), and only their ``2^m`` corners are read. On
    a municipality subtable of the 10^6-cell census table (15 x 3 x 9 x 11 codes, 834 primaries,
    960 hypercubes each) that reads the corners of a few thousand candidates instead of all 800,640
    hypercubes' (0.02 s instead of 0.23 s CPU an audit; issue 36, sixth pass)."""
    rows = np.asarray(rows, dtype=np.int64)
    total_free = (True,) * len(shape) if total_free is None else tuple(total_free)
    lo, up = values[rows].astype(np.float64), values[rows].astype(np.float64)
    for part in _batches(shape, rows):
        down, rise = _closed_ranges(shape, rows[part], values, suppressed, total_free)
        lo[part] -= down
        up[part] += rise
    return lo, up


def _closed_ranges(shape: tuple[int, ...], rows: np.ndarray, values: np.ndarray, suppressed: np.ndarray,
                   total_free: tuple[bool, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(max t_down, max t_up) per row over its fully suppressed hypercubes, 0 where none is
    (:func:`ranges`)."""
    m = len(shape)
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(m)], dtype=np.int64)
    position = np.unravel_index(rows, shape)
    alternatives = []  # per dimension: rows x (shape[d] - 1), every code but the row's own
    candidate = np.ones((len(rows),) + tuple(n - 1 for n in shape), dtype=bool)
    for d in range(m):
        j = np.arange(shape[d] - 1)[None, :]
        a = j + (j >= position[d][:, None])
        alternatives.append(a)
        edge = suppressed[rows[:, None] + (a - position[d][:, None]) * strides[d]]
        if not total_free[d]:  # neither the row nor a corner at this dimension's total
            edge &= (a != 0) & (position[d][:, None] != 0)
        candidate &= edge.reshape((len(rows),) + tuple(shape[d] - 1 if e == d else 1 for e in range(m)))
    down, rise = np.zeros(len(rows)), np.zeros(len(rows))
    found = np.nonzero(candidate)
    which = found[0]
    if not len(which):
        return down, rise
    own = [position[d][which] for d in range(m)]
    other = [alternatives[d][which, found[d + 1]] for d in range(m)]
    corners = [[other[d] if (subset >> d) & 1 else own[d] for d in range(m)] for subset in range(1 << m)]
    cells = [sum(c * s for c, s in zip(coordinate, strides)) for coordinate in corners]
    closed = reduce(np.logical_and, [suppressed[cell] for cell in cells])
    which = which[closed]
    if not len(which):
        return down, rise
    cells = [cell[closed] for cell in cells]
    corners = [[c[closed] for c in coordinate] for coordinate in corners]
    own, other = corners[0], corners[-1]
    cross = [np.where((p != 0) & (a != 0), -1, 1) for p, a in zip(own, other)]  # both categories: the sign flips
    t_down, t_up = np.full(len(which), np.inf), np.full(len(which), np.inf)
    for subset, (coordinate, cell) in enumerate(zip(corners, cells)):
        sign = reduce(np.multiply, [cross[d] for d in range(m) if (subset >> d) & 1], np.ones(len(which), dtype=int))
        value = np.where(reduce(np.logical_and, [c != 0 for c in coordinate]), values[cell], np.inf)  # inner corners
        t_up = np.where(sign < 0, np.minimum(t_up, value), t_up)
        t_down = np.where(sign > 0, np.minimum(t_down, value), t_down)
    np.maximum.at(down, which, t_down)
    np.maximum.at(rise, which, t_up)
    return down, rise


def leaf_ranges(model: JointModel, rows: np.ndarray, suppressed: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(lo, up) per stacked row of ``rows``: the hull of its hypercube ranges (:func:`ranges`) in
    every *leaf subtable* of a single table containing it, None for linked tables. A flat table is
    its own leaf subtable. In a hierarchical table a leaf subtable is a HiTaS subtable
    (:func:`sdc_dagster.tables.hitas.subtables`: a parent and its direct children in every
    dimension) whose children are all leaves, at least two a dimension. Its hypercubes are moves of
    the whole table too when no corner lies at a parent other than its dimension's root: in a
    dimension whose two coordinates are sibling leaves the move's vector ``e_p - e_a`` sums to 0
    over every code above them (so no cell outside the subtable changes), and ``e_c`` with the
    root as the other coordinate changes only ``c``'s cells and the root's, both in the subtable;
    the corners are inner cells or cells of the subtable, as in a flat table. A corner at a
    non-root parent would move that parent's ancestors, outside the subtable, so those hypercubes
    are left out (``total_free``). On the 10^6-cell census table the pass/fail audit of the whole
    table settles with them the primaries of its 225 municipality subtables without the
    decompositions of :func:`sdc_dagster.tables.intruder.certificates` (issue 36, sixth pass)."""
    if len(model.tables) != 1:
        return None
    shape = flat_shape(model)
    if shape is not None:
        return ranges(shape, rows, model.published, suppressed)
    table = model.tables[0]
    lo, up = model.published[rows].astype(np.float64), model.published[rows].astype(np.float64)
    where = np.full(len(model.published), -1)
    where[rows] = np.arange(len(rows))
    branches = [np.bincount(d.parent[d.parent >= 0], minlength=len(d.codes)) > 0 for d in table.dimensions]
    for group in subtables(table):
        for sub in group:
            children = [codes[1:] for codes in sub.codes]
            if any(len(c) < 2 or branch[c].any() for c, branch in zip(children, branches)):
                continue  # not a leaf subtable
            hit = where[sub.rows]
            inside = np.flatnonzero(hit >= 0)
            if not len(inside):
                continue
            total_free = tuple(bool(d.parent[codes[0]] < 0) for d, codes in zip(table.dimensions, sub.codes))
            low, high = ranges(tuple(len(c) for c in sub.codes), inside, model.published[sub.rows],
                               suppressed[sub.rows], total_free)
            lo[hit[inside]] = np.minimum(lo[hit[inside]], low)
            up[hit[inside]] = np.maximum(up[hit[inside]], high)
    return lo, up


def cheapest(shape: tuple[int, ...], rows: np.ndarray, values: np.ndarray, costs: np.ndarray,
             suppressed: np.ndarray, never: np.ndarray,
             meets: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """GHMiter's choice for each primary of ``rows`` in turn: the hypercube meeting the primary's
    requirement (``meets(row, lo, up) -> bool``, broadcast over the hypercubes) with none of its
    corners ``never`` suppressed and the least cost of its corners not yet suppressed; its corners
    are suppressed before the next primary is looked at (the next one may reuse them). Returns
    (the pattern ``suppressed`` grown, bool per cell; the rows that found a hypercube)."""
    suppressed = suppressed.copy()
    found = np.zeros(len(rows), dtype=bool)
    alternatives = tuple(n - 1 for n in shape)
    m = len(shape)
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(m)])
    for k, row in enumerate(rows.tolist()):  # primaries in turn: each pick changes the next costs
        t_down, t_up, price, stop = _scan(shape, np.array([row]), values, np.where(suppressed, 0.0, costs),
                                          never & ~suppressed)
        b = values[row]
        fits = np.asarray(meets(np.array([row]), b - t_down[0], b + t_up[0]), dtype=bool) & ~stop[0]
        if not fits.any():
            continue
        choice = np.argmin(np.where(fits, price[0], np.inf))
        position = np.array(np.unravel_index(row, shape))
        j = np.array(np.unravel_index(choice, alternatives))
        a = j + (j >= position)
        corners = np.array([[a[d] if (subset >> d) & 1 else position[d] for d in range(m)] for subset in range(1 << m)])
        suppressed[corners @ strides] = True
        found[k] = True
    return suppressed, found
