"""Small-count rounding of frequency tables (PLS-inspired, Langsrud & Heldal 2018).

Langsrud, Ø. and Heldal, J. (2018), "An Algorithm for Small Count Rounding of Tabular Data",
Privacy in Statistical Databases, Valencia; Statistics Norway's R package SmallCountRounding
(``PLSrounding`` / ``RoundViaDummy``), whose parameters and defaults this module follows.

The published cells are sums of the inner cells, ``z = M y`` (:class:`~sdc_dagster.tables.model.Table`:
``M`` is :attr:`Table.matrix`). Instead of rounding published cells one by one (which breaks
additivity), small *inner* cells are rounded to 0 or the rounding base ``b`` and every published
cell is recomputed from the rounded inner cells, so the published table stays exactly additive.

Algorithm (one pass; RoundViaDummy's ``PlsRoundSparseSingle`` and ``Pls1Round``):

1. candidates: inner cells with ``y < maxRound + 1`` that are not multiples of ``b`` (and, with
   ``zero_candidates``, the multiples of ``b`` below ``maxRound + 1``, zeros included) below a
   published cell with ``0 < z < maxRound + 1``; a candidate keeps ``y - y mod b`` and its remainder
   ``r = y mod b`` is rounded;
2. ``nR = round((sum r + sum y_original - sum y_current) / b)`` of the candidates get ``b`` (the
   number that keeps the grand total closest), the others 0;
3. the candidates to get ``b`` are chosen greedily as in partial least squares: with ``X`` the
   candidates' rows of ``M^T`` restricted to the published cells some but not all candidates fall in,
   and ``t = X^T r + (z_original - z_current)`` those cells' targets, the criterion
   ``c = X t - b X X^T e`` (``e`` the chosen indicator) is the gradient of ``-||t - b X^T e||^2 / 2``;
   the candidate of largest ``c`` is chosen next, then exchanges (drop the chosen cell of smallest
   ``c`` unless it is the last one added, add the best) improve the fit until none helps.
   Ties go to the first candidate in a seeded random order (``random_state``; SmallCountRounding's
   ``rndSeed = 123``: the R package draws the order with R's generator, so a tie may go the other way).

Passes repeat (``identify_new``) while a published cell is still in ``1..b-1`` (with ``maxRound >=
b`` and ``identify_new=True``: still below ``maxRound + 1`` and not a multiple of ``b``); afterwards
the inner cells an intruder reads straight off the rounded table (SSBtools ``Reduce0exact`` with
``reduceByColSums``: cells under a published zero, and a cell alone in what remains of a published
cell once the known cells are taken out) are rounded too when they are small non-multiples of ``b``
(SmallCountRounding's default ``easyCheck``). More than ``max_iter_rows`` candidates are rounded
in random batches (``maxIterRows``).

Conventions: the inner cells are all combinations of the dimensions' leaves (zeros included, as
SmallCountRounding's ``extend0``), so ``zero_candidates`` may round an empty combination up to ``b``;
``roundBase = 1`` (SmallCountRounding's special algorithm), ``forceInner``, ``preRounded``,
``leverageCheck``, ``step`` and ``plsWeights`` are not offered.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import sparse

from sdc_dagster.errors import SDCInputError
from sdc_dagster.tables.model import Table, joint_model
from sdc_dagster.validation import check_scalar

#: SmallCountRounding's ``rndSeed``: the default seed of the tie-breaking order.
DEFAULT_SEED = 123


def _integer_counts(counts) -> np.ndarray:
    values = np.asarray(counts, dtype=np.float64)
    if values.ndim != 1:
        raise SDCInputError("counts: must be one-dimensional (one count per inner cell)")
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise SDCInputError(f"counts: inner cell {position} is {values[position]:g}; small-count rounding rounds counts (integers >= 0)")
    return values.astype(np.int64)


def _pls_choose(x: sparse.csr_matrix, base: int, target: np.ndarray, n_round: int, rng: np.random.Generator) -> np.ndarray:
    """0 or ``base`` per candidate: ``n_round`` of them ``base``, chosen greedily (step 3 of the
    module text; SmallCountRounding's ``Pls1Round`` with ``step = 1``). ``x``: candidates x cells."""
    n = x.shape[0]
    chosen = np.zeros(n, dtype=np.int64)
    if n_round == n:
        return np.full(n, base, dtype=np.int64)
    gram = sparse.csc_matrix(base * (x @ x.T), dtype=np.int64)  # candidates sharing published cells

    def shift(cell: int, sign: int) -> None:
        """Update the criterion for ``cell`` taken (sign -1) or given back (+1): its gram column."""
        start, stop = gram.indptr[cell], gram.indptr[cell + 1]
        criterion[gram.indices[start:stop]] += sign * gram.data[start:stop]

    criterion = np.asarray(x @ target, dtype=np.int64).ravel()
    free = list(rng.permutation(n))  # tie-breaking order
    taken: list[int] = []  # most recently added first

    def up() -> None:
        k = int(np.argmax(criterion[free]))  # the first of the largest, in the seeded order
        cell = free.pop(k)
        chosen[cell] = base
        taken.insert(0, cell)
        shift(cell, -1)

    def down() -> bool:
        k = int(np.argmin(criterion[taken]))
        if k == 0:  # the worst chosen cell is the one just added: no exchange improves
            return False
        cell = taken.pop(k)
        chosen[cell] = 0
        free.insert(0, cell)
        shift(cell, +1)
        return True

    while len(taken) < n_round:  # forward: at most n_round steps over the candidates, not records
        up()
    for _ in range(n_round + 100):  # exchanges, bounded as in Pls1Round
        if not down():
            break
        while len(taken) < n_round:
            up()
    return chosen


def _one_pass(x: sparse.csr_matrix, y: np.ndarray, z: np.ndarray, rows: np.ndarray, *, base: int,
              total_drift: int, z_exact: np.ndarray, split_base: bool, rng: np.random.Generator):
    """Round the inner cells ``rows`` (bool) once; returns the new inner and published values."""
    block = x[rows]  # candidates x published cells
    y_rows = y[rows]
    k = len(y_rows)
    covered = np.asarray(block.sum(axis=0)).ravel()
    informative = np.flatnonzero((covered > 0) & (covered < k))  # cells some but not all candidates fall in
    sub = block[:, informative]
    target = np.asarray(sub.T @ y_rows).ravel()
    if split_base and len(informative) and k:
        kept = y_rows - y_rows % base
        y_rows = y_rows % base
        target = target - np.asarray(sub.T @ kept).ravel()
    else:
        kept = np.zeros(k, dtype=np.int64)
    n_round = int(np.clip(np.round((y_rows.sum() + total_drift) / base), 0, k))  # R's round: half to even
    target = target + (z_exact[informative] - z[informative])
    if n_round == 0:
        rounded = np.zeros(k, dtype=np.int64)
    elif len(informative) == 0:  # no cell tells the candidates apart: a random draw
        rounded = np.zeros(k, dtype=np.int64)
        rounded[rng.choice(k, size=n_round, replace=False)] = base
    else:
        rounded = _pls_choose(sub, base, target, n_round, rng)
    new_y = y.copy()
    new_y[rows] = rounded + kept
    new_z = z + np.asarray(block.T @ (rounded - y_rows)).ravel().astype(np.int64)
    return new_y, new_z


def revealed_cells(x: sparse.csr_matrix, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Inner cells an intruder reads exactly off the published cells ``z`` (bool per inner cell).

    SSBtools ``Reduce0exact`` with ``reduceByColSums = TRUE`` (SmallCountRounding's ``easyCheck``),
    repeated until nothing changes: every inner cell below a published zero is known (0); a
    published cell with a single unknown inner cell left reveals it (its value less the known ones).
    ``x``: inner cells x published cells (``M^T``); ``y``: the inner values behind ``z``.
    """
    n, m = x.shape
    known = np.zeros(n, dtype=bool)
    open_cols = np.ones(m, dtype=bool)
    rest = z.astype(np.int64).copy()
    xt = x.T.tocsr()
    while True:
        zero = open_cols & (rest == 0)
        under_zero = ~known & (np.asarray(x[:, zero].sum(axis=1)).ravel() > 0)
        known |= under_zero
        open_cols &= ~zero
        unknown_per_col = np.asarray(xt @ (~known).astype(np.int64)).ravel()
        single = open_cols & (unknown_per_col == 1)
        found = ~known & (np.asarray(x[:, single].sum(axis=1)).ravel() > 0)
        if not found.any():
            return known
        known |= found
        rest = rest - np.asarray(xt @ np.where(found, y, 0)).ravel()
        open_cols &= np.asarray(xt @ (~known).astype(np.int64)).ravel() > 0


def pls_rounding(
    counts,
    matrix: sparse.spmatrix,
    *,
    round_base: int = 3,
    max_round: int | None = None,
    zero_candidates=False,
    identify_new: bool | None = True,
    max_iter_rows: int = 1000,
    random_state=DEFAULT_SEED,
    max_iter: int = 10_000,
) -> np.ndarray:
    """The rounded inner counts (int64) of inner ``counts`` published through ``matrix``.

    Parameters (SmallCountRounding's names in brackets; see the module text for the algorithm)
    ----------
    counts
        Inner-cell counts (integers >= 0).
    matrix
        Published cells x inner cells, 0/1 (:attr:`Table.matrix`; a formula's model matrix transposed).
    round_base
        ``b >= 2`` [``roundBase``, default 3].
    max_round
        Inner cells below published cells of at most ``max_round`` are rounded [``maxRound``,
        default ``b - 1``].
    zero_candidates
        True (or a bool per inner cell): zeros and multiples of ``b`` below ``max_round + 1`` may be
        rounded up to ``b`` [``zeroCandidates``, default False].
    identify_new
        After a pass, look for published cells still to round: True (cells below ``max_round + 1``
        that are not multiples of ``b``), None (R's ``NA``, the older rule: published cells in
        ``1..b-1``), False (only the first pass's candidates) [``identifyNew``, default True].
    max_iter_rows
        Candidates rounded per pass at most, in random batches [``maxIterRows``, default 1000].
    random_state
        Seed of the tie-breaking order and the batches [``rndSeed``, default 123].
    max_iter
        Passes at most [``maxIter``]; more raise.

    Raises :class:`SDCInputError` for counts that are not integers >= 0, a matrix of another
    width, ``round_base < 2`` or ``max_round < round_base - 1`` while ``identify_new`` is not False.
    """
    y0 = _integer_counts(counts)
    base = check_scalar(round_base, "round_base", integer=True, low=2)
    max_round = base - 1 if max_round is None else check_scalar(max_round, "max_round", integer=True, low=0)
    if identify_new not in (True, False, None):
        raise SDCInputError(f"identify_new: must be True, False or None (SmallCountRounding's NA), got {identify_new!r}")
    check_scalar(max_iter_rows, "max_iter_rows", integer=True, low=1)
    if not sparse.issparse(matrix) or matrix.shape[1] != len(y0):
        raise SDCInputError(f"matrix: must be a sparse matrix of published cells x {len(y0)} inner cells")
    max_base = int(max_round) + 1
    if identify_new is not False and max_base < base:
        raise SDCInputError("max_round: cannot be below round_base - 1 unless identify_new is False (SmallCountRounding)")
    identify_base = base if identify_new is None else max_base
    x = sparse.csr_matrix(matrix.T, dtype=np.int64)
    if isinstance(zero_candidates, bool | np.bool_):
        zeros = np.full(len(y0), bool(zero_candidates))
    else:
        zeros = np.asarray(zero_candidates, dtype=bool)
        if zeros.shape != y0.shape:
            raise SDCInputError(f"zero_candidates: must be True, False or one bool per inner cell ({len(y0)})")
    zeros &= y0 % base == 0
    rng = np.random.default_rng(random_state)

    z_exact = np.asarray(x.T @ y0).ravel()
    to_round = (z_exact > 0) & (z_exact < max_base)
    small = (y0 < max_base) & ((y0 % base > 0) | zeros)
    force = small & (np.asarray(x[:, to_round].sum(axis=1)).ravel() > 0)
    y, z = y0.copy(), z_exact.copy()
    pending = np.zeros(len(z), dtype=bool)
    for iteration in range(max_iter):
        if iteration == 0 or identify_new is False:
            rows = force.copy()
        else:
            if identify_base != base:
                small_now = (y < identify_base) & (y % base > 0)
            else:
                small_now = (y > 0) & (y < base)
            rows = (small_now & (np.asarray(x[:, pending].sum(axis=1)).ravel() > 0)) | force
        if rows.sum() > max_iter_rows:
            batch = rng.choice(np.flatnonzero(rows), size=int(max_iter_rows), replace=False)
            rows = np.zeros(len(y), dtype=bool)
            rows[batch] = True
        y, z = _one_pass(x, y, z, rows, base=base, total_drift=int(y0.sum() - y.sum()), z_exact=z_exact,
                         split_base=bool(force.any()), rng=rng)
        if identify_base != base:
            pending = (z < identify_base) & (z % base > 0)
        else:
            pending = (z > 0) & (z < base)
        force &= ~rows
        if identify_new is False:
            done = not force.any()
        else:
            done = not force.any() and (not pending.any() or not rows.any())
        if done and identify_new is not False and force.sum() == 0 and pending.any():
            warnings.warn(
                f"small-count rounding: {int(pending.sum())} published cells are still small and no inner cell "
                "below them can be rounded (SmallCountRounding warns the same)",
                stacklevel=2,
            )
        if done:
            revealed = revealed_cells(x, z, y) & (y < max_base) & (y % base > 0)
            if not revealed.any():
                return y
            force |= revealed
    raise SDCInputError(f"small-count rounding: not finished after max_iter = {max_iter} passes")


def small_count_rounding(
    table_or_tables,
    *,
    round_base: int = 3,
    max_round: int | None = None,
    zero_candidates=False,
    identify_new: bool | None = True,
    max_iter_rows: int = 1000,
    random_state=DEFAULT_SEED,
):
    """Small-count rounding of a frequency table, or of linked frequency tables jointly.

    Rounds the inner cells by :func:`pls_rounding` (parameters there, SmallCountRounding's
    defaults) and recomputes every published cell from them, so each table stays additive and
    every published count below ``round_base`` becomes 0 (with the default ``max_round``).

    Linked tables (a list) are rounded jointly over their common inner cells (they must share
    their dimensions; hierarchies may differ, as in :func:`~sdc_dagster.tables.joint_model`); a
    cell published by several tables (same codes over the same inner cells) counts once in the
    criterion.

    Returns, for a table, a DataFrame indexed like ``table.cells``: its dimension columns,
    ``original``, ``rounded``, ``difference`` (rounded - original) and ``inner`` (the row is an
    inner cell), with ``attrs["parameters"]`` (the parameters and the seed, for the release
    manifest); for a list, one such frame per table.
    """
    single = isinstance(table_or_tables, Table)
    tables = [table_or_tables] if single else list(table_or_tables) if isinstance(table_or_tables, list | tuple) else None
    if not tables or not all(isinstance(t, Table) for t in tables):
        raise SDCInputError("small_count_rounding: give a Table or a non-empty list of Tables (from tables.tabulate)")
    for position, t in enumerate(tables):
        if t.magnitude:
            raise SDCInputError(f"small_count_rounding: table {position} is a magnitude table; small-count rounding rounds counts")
    if len({tuple(sorted(t.names)) for t in tables}) > 1:
        raise SDCInputError(
            "small_count_rounding: linked tables must share their dimensions (hierarchies may differ); "
            "otherwise their common inner cells are not known"
        )
    if single:
        counts, matrix, split = tables[0].published[tables[0].inner_rows], tables[0].matrix, [tables[0].matrix]
    else:
        model = joint_model(tables)
        counts = model.start
        names = sorted(tables[0].names)
        codes = pd.concat([t.cells[names].astype(str) for t in tables], ignore_index=True)
        # the same cell: the same codes over the same inner cells (a code may name other leaves in
        # another hierarchy); rows compared by a fixed random projection of their inner cells
        codes["inner cells"] = model.matrix @ np.random.default_rng(0).random(model.matrix.shape[1])
        once = ~codes.duplicated().to_numpy()
        matrix = model.matrix[np.flatnonzero(once)]
        split = [model.matrix[start:stop] for start, stop in zip(model.offsets[:-1], model.offsets[1:])]
    rounded = pls_rounding(counts, matrix, round_base=round_base, max_round=max_round, zero_candidates=zero_candidates,
                           identify_new=identify_new, max_iter_rows=max_iter_rows, random_state=random_state)
    parameters = {
        "method": "small-count rounding (PLS, SmallCountRounding)", "round_base": int(round_base),
        "max_round": int(round_base) - 1 if max_round is None else int(max_round),
        "zero_candidates": bool(np.any(zero_candidates)), "identify_new": identify_new,
        "max_iter_rows": int(max_iter_rows), "seed": random_state if isinstance(random_state, int) else None,
    }
    out = []
    for t, rows in zip(tables, split):
        frame = t.cells[t.names].copy()
        frame["original"] = t.cells["freq"].to_numpy(dtype=np.int64)
        frame["rounded"] = np.asarray(rows @ rounded).ravel().astype(np.int64)
        frame["difference"] = frame["rounded"] - frame["original"]
        inner = np.zeros(len(frame), dtype=bool)
        inner[t.inner_rows] = True
        frame["inner"] = inner
        frame.attrs["parameters"] = dict(parameters)
        out.append(frame)
    return out[0] if single else out
