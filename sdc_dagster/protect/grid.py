"""Primary and secondary suppression of 1-km grid tables (SPEC §11.1–§11.2).

Every inhabited grid cell publishes its total resident population T and the counts of the grid
variables of :data:`sdc_dagster.grid.counts.GRID_VARIABLES`: the margins of sex (``sex_1``,
``sex_2``), age group (``age_1``..``age_3``), place of birth (``birth_1``..``birth_3``) and residence
one year before (``residence_1``..``residence_3``), and the number of employed persons
(``employed``). Sex and age are always there; the other variables are protected when their columns
are present. The rule protects each variable separately with k-anonymity (primary suppression of
counts 1..k-1) and, for complete margins, the l = 2 part (secondary suppression so that no hidden
count can be recovered as T minus the published counts of its margin). ``employed`` is not a
complete margin (the non-employed count is not published), so a hidden employed count cannot be
recovered and needs no secondary suppression. Three-category margins (age, birth, residence) choose
their second hidden category by the strategies of §11.2 item 3, each with its own reference counts.

The whole table is processed at once with numpy boolean masks over cells; nothing loops over cells
in Python, so 197,000 cells take a few milliseconds.

:func:`consistent_grid_suppression` protects two published populations of the same cells (residents
and the national definition, SPEC §11.4) with one hidden pattern per cell, so that neither table
nor their difference reveals a hidden count or fewer than k persons.

OPEN decisions (SPEC §11.2) and how they are resolved here
----------------------------------------------------------
* Item 2, tie reading. ``tie_only=True`` (default): when the unsafe age group leaves two candidates,
  the one with the smaller count is hidden and the strategy only breaks ties (two equal safe
  counts, or two zero groups next to an unsafe one). ``tie_only=False``: the strategy decides in
  every case.
* Item 3, "fixed" in the zero tie: the same cyclic successor (1 -> 2, 2 -> 3, 3 -> 1) is hidden.
* Item 3, "distribution": reference counts N_1..N_3 of the categories in the population (national
  totals; the assets pass the national counts of every region); by default the column sums of the
  table. When both candidates have reference count 0 the draw is uniform.
* Item 4 (not treated, by design of the seed's rule): a cell with T >= k whose residents all fall in
  one category (e.g. sex = (T, 0)) publishes the category of every resident, which breaks strict
  l-diversity. The rule suppresses nothing there; :func:`sdc_dagster.loss.tables.homogeneous_cells`
  counts such cells so that they are reported rather than silently accepted.
* Contract default ``strategy="distribution"`` (the variant finally applied in the seed) differs
  from the "fixed" suggested in SPEC §12; CONTRACT.md is the public API and wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.grid.counts import GridVariable, grid_variables_of
from sdc_dagster.risk.tables import disclosing_differences
from sdc_dagster.validation import check_option, check_scalar, count_matrix

SEX_COLUMNS: tuple[str, str] = ("sex_1", "sex_2")
AGE_COLUMNS: tuple[str, str, str] = ("age_1", "age_2", "age_3")
STRATEGIES: tuple[str, ...] = ("fixed", "uniform", "distribution")


@dataclass(frozen=True)
class _Layout:
    """Where each grid variable's counts sit in the category matrix of a table."""

    variables: tuple[GridVariable, ...]

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(c for v in self.variables for c in v.columns)

    @property
    def counts(self) -> tuple[str, ...]:
        return ("total", *self.categories)

    def margins(self) -> list[tuple[GridVariable, slice]]:
        """Complete margins (secondary suppression applies) with their column slice."""
        out, start = [], 0
        for v in self.variables:
            width = len(v.columns)
            if v.complete_margin:
                out.append((v, slice(start, start + width)))
            start += width
        return out


def _layout(*tables: pd.DataFrame) -> _Layout:
    variables = [grid_variables_of(t.columns, published=True) for t in tables]
    if any(v != variables[0] for v in variables[1:]):
        raise SDCInputError("grid tables: both tables must publish the same grid variables")
    return _Layout(variables[0])


def _reference_counts(reference_counts, layout: _Layout, categories: np.ndarray) -> dict[str, np.ndarray]:
    """N per category of every three-category margin for "distribution": given, or column sums.

    ``reference_counts`` is None (column sums of ``categories``), a mapping or Series keyed by count
    column (a margin whose columns are all absent uses its column sums), or three numbers (age).
    """
    sums = categories.sum(axis=0).astype(np.float64)
    out = {}
    for v, cols in layout.margins():
        if len(v.columns) == 3:
            out[v.prefix] = sums[cols]
    if reference_counts is None:
        return out
    if isinstance(reference_counts, Mapping | pd.Series):
        for v, _ in layout.margins():
            if len(v.columns) != 3:
                continue
            given = [c for c in v.columns if c in reference_counts]
            if not given:
                continue
            missing = [c for c in v.columns if c not in reference_counts]
            if missing:
                raise SDCInputError(
                    f"reference_counts: no value for {missing[0]!r}; give one count per category "
                    f"{list(v.columns)}"
                )
            out[v.prefix] = _check_reference(np.array([reference_counts[c] for c in v.columns], dtype=np.float64))
        return out
    values = np.asarray(reference_counts, dtype=np.float64).ravel()
    if values.shape != (3,):
        raise SDCInputError("reference_counts: expected three counts (age groups 1, 2, 3) or a mapping by column")
    out["age"] = _check_reference(values)
    return out


def _check_reference(values: np.ndarray) -> np.ndarray:
    if not np.isfinite(values).all() or (values < 0).any():
        raise SDCInputError("reference_counts: counts must be finite and non-negative")
    return values


def _secondary_choice(
    counts: np.ndarray,
    primary: np.ndarray,
    *,
    strategy: str,
    reference: np.ndarray,
    tie_only: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Mask of the categories of a three-category margin hidden by secondary suppression (SPEC §11.2 items 2–3)."""
    n = len(counts)
    # One uniform draw per cell, drawn for every cell, so the outcome for a cell depends only on
    # the seed and its row position, not on which other cells happened to need a draw.
    draws = rng.random(n)
    rows = np.flatnonzero(primary.sum(axis=1) == 1)
    secondary = np.zeros_like(primary)
    if rows.size == 0:
        return secondary
    unsafe = primary[rows].argmax(axis=1)
    succ = (unsafe + 1) % 3  # cyclic successor: the "fixed" choice, eqs (1)-(3)
    other = (unsafe + 2) % 3
    if strategy == "fixed":
        pick_succ = np.ones(rows.size, dtype=bool)
    elif strategy == "uniform":
        pick_succ = draws[rows] < 0.5
    else:
        # eqs (7)-(9): P(hide a) = 1 - N_a / (N_a + N_b) = N_b / (N_a + N_b)
        n_succ, n_other = reference[succ], reference[other]
        pair = n_succ + n_other
        p_succ = np.divide(n_other, pair, out=np.full(rows.size, 0.5), where=pair > 0)
        pick_succ = draws[rows] < p_succ
    if tie_only:
        c_succ = counts[rows, succ]
        c_other = counts[rows, other]
        pick_succ = np.where(c_succ < c_other, True, np.where(c_succ > c_other, False, pick_succ))
    secondary[rows, np.where(pick_succ, succ, other)] = True
    return secondary


def grid_suppression(
    counts: pd.DataFrame,
    *,
    k: int = 3,
    strategy: str = "distribution",
    reference_counts=None,
    tie_only: bool = True,
    random_state=None,
) -> pd.DataFrame:
    """Primary and secondary suppression of a 1-km grid table (SPEC §11.2).

    Parameters
    ----------
    counts
        One row per inhabited grid cell with integer columns ``total``, ``sex_1``, ``sex_2``,
        ``age_1``, ``age_2``, ``age_3`` and, when published, ``employed``, ``birth_1..3``,
        ``residence_1..3``. Other columns (cell id, coordinates...) are carried through.
    k
        k-anonymity threshold: a category count c with 0 < c < k is primarily suppressed.
    strategy
        How the second category of a three-category margin is chosen (SPEC §11.2 item 3):
        ``"fixed"`` (cyclic successor of the unsafe category), ``"uniform"`` (each candidate with
        probability 0.5) or ``"distribution"`` (candidate a hidden with probability N_b / (N_a + N_b)).
    reference_counts
        Population counts N for ``"distribution"``: a mapping or Series keyed by count column
        (e.g. ``age_1``..``age_3``, ``birth_1``..``birth_3``; national totals in the assets) or a
        sequence of three numbers (age groups). Default: the column sums of ``counts``.
    tie_only
        True: the strategy only breaks ties (equal candidate counts); otherwise the smaller
        candidate is hidden. False: the strategy decides whenever a second category must be hidden.
    random_state
        int seed or numpy Generator for the random strategies.

    Returns
    -------
    pandas.DataFrame
        A copy of ``counts`` (same index and columns) whose count columns are nullable ``Int64``;
        suppressed category counts are ``pd.NA``. ``total`` is never suppressed.

    References
    ----------
    SPEC §11.1-§11.2; S002 (Klimanek, Józefowski, Młodak 2023), eqs (1)–(9) and Rys. 2.
    """
    layout = _layout(counts)
    check_scalar(k, "k", integer=True, low=1)
    check_option(strategy, "strategy", STRATEGIES)
    totals = count_matrix(counts, ["total"])[:, 0]
    categories = count_matrix(counts, layout.categories)
    reference = _reference_counts(reference_counts, layout, categories)
    rng = np.random.default_rng(random_state)
    hidden = _secondary_suppression(
        (categories > 0) & (categories < k),
        categories,
        layout,
        strategy=strategy,
        reference=reference,
        tie_only=tie_only,
        rng=rng,
    )
    return _published(counts, layout, totals, categories, hidden)


def _secondary_suppression(
    hidden: np.ndarray,
    categories: np.ndarray,
    layout: _Layout,
    *,
    strategy: str,
    reference: dict[str, np.ndarray],
    tie_only: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """The l = 2 step (SPEC §11.2 item 2) on the current hidden mask: no margin keeps one hidden count.

    Two-category margins (sex): a single hidden count is T minus the other, so both are hidden.
    Three-category margins (age, birth, residence, in that order, each drawing its own numbers): one
    of the two remaining categories is added by :func:`_secondary_choice` (``categories`` gives the
    counts compared under ``tie_only``). Margins with 0 or >= 2 hidden counts, and ``employed``
    (not a complete margin), are left alone.
    """
    out = hidden.copy()
    for v, cols in layout.margins():
        part = hidden[:, cols]
        if part.shape[1] == 2:
            out[:, cols] = part | (part.sum(axis=1) == 1)[:, None]
        else:
            out[:, cols] = part | _secondary_choice(
                categories[:, cols], part, strategy=strategy, reference=reference[v.prefix], tie_only=tie_only, rng=rng
            )
    return out


def _published(
    counts: pd.DataFrame, layout: _Layout, totals: np.ndarray, categories: np.ndarray, hidden: np.ndarray
) -> pd.DataFrame:
    """A copy of ``counts`` with nullable Int64 count columns; hidden category counts are NA."""
    out = counts.copy()
    out["total"] = pd.arrays.IntegerArray(totals.copy(), np.zeros(len(totals), dtype=bool))
    for j, col in enumerate(layout.categories):
        out[col] = pd.arrays.IntegerArray(categories[:, j].copy(), hidden[:, j].copy())
    return out


CELL_ID = "cell_id"
#: Upper bound on the consolidation passes of :func:`consistent_grid_suppression` (one suffices).
_MAX_CONSISTENCY_PASSES = 4


def _cell_keys(first: pd.DataFrame, second: pd.DataFrame) -> tuple[pd.Index, pd.Index]:
    """The cell keys of both tables: the ``cell_id`` column when both have it, else the index."""
    has_first, has_second = CELL_ID in first.columns, CELL_ID in second.columns
    if has_first != has_second:
        which = "first" if has_first else "second"
        raise SDCInputError(
            f"column {CELL_ID!r}: only the {which} table has it; give it in both tables (cells are "
            f"matched by it) or in neither (cells are matched by the index)"
        )
    keys = []
    for name, frame in (("first", first), ("second", second)):
        index = pd.Index(frame[CELL_ID]) if has_first else frame.index
        label = f"column {CELL_ID!r}" if has_first else "index"
        if index.hasnans:
            raise SDCInputError(f"{name} table, {label}: cell keys must not be missing")
        if index.has_duplicates:
            raise SDCInputError(f"{name} table, {label}: must identify cells uniquely (one row per cell)")
        keys.append(index)
    return keys[0], keys[1]


def consistent_grid_suppression(
    first: pd.DataFrame,
    second: pd.DataFrame,
    *,
    k: int = 3,
    strategy: str = "distribution",
    reference_counts=None,
    tie_only: bool = True,
    random_state=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Suppress two grid tables of the same cells consistently (SPEC §11.2, §11.4 differencing).

    The 1-km grid publishes two populations per cell, e.g. residents and the population by the
    national definition. Suppressing each table on its own (:func:`grid_suppression`) leaves two
    leaks: a count hidden in one table may be published in the other, and a published category
    whose two counts differ by 1..k-1 discloses those persons by subtraction (SPEC §11.4; the rule
    is :func:`sdc_dagster.loss.tables.disclosing_differences`, shared with
    ``differencing_disclosure``). This function closes both, vectorised over cells:

    0. each table is suppressed by :func:`grid_suppression` (primary 0 < c < k, secondary l = 2),
       both on the union of cells, with the same seed and the same reference counts, so that a
       random tie break draws the same number for a cell in both tables;
    1. (a) one hidden pattern per cell: a category hidden in either table is hidden in both;
    2. (b) a category whose difference ``first - second`` is in 1..k-1 (either sign) is hidden in both;
    3. (c) the secondary rule of SPEC §11.2 item 2 is re-applied to the joint pattern (a margin with
       exactly one hidden count gets a second one, chosen exactly as :func:`grid_suppression`
       chooses it), and 1–3 repeat until nothing changes. Step (b) does not depend on the pattern
       and (c) only turns margins with one hidden count into margins with two, so one pass
       reaches the fixed point; the loop is bounded at a few vectorised passes as a guard.

    Totals are never hidden (SPEC §11.1). Afterwards both tables have the same hidden pattern on
    every common cell, neither publishes a count in 1..k-1 nor a margin with a single hidden count,
    no published category has a difference in 1..k-1, and published values are the originals.
    Each table's pattern contains the one :func:`grid_suppression` gives it on the union-aligned rows
    (consistency only adds suppressions).

    Parameters
    ----------
    first, second
        One row per cell, integer columns ``total``, ``sex_1``, ``sex_2``, ``age_1``, ``age_2``,
        ``age_3`` and the other grid variables' columns when published (both tables the same);
        other columns are carried through. Cells are matched by the ``cell_id`` column
        when both tables have it, otherwise by the index (keys must be unique). A cell may be present
        in only one table (inhabited under one definition only): it counts as all-zero in the other
        table, as in ``differencing_disclosure``, so its differences are its own counts (already
        primarily suppressed when in 1..k-1); nothing is published for it in the other table, so
        the consistency rule (a) has nothing to align there.
    k
        k-anonymity threshold for counts and for differences.
    strategy, tie_only
        As in :func:`grid_suppression`. When the joint pattern needs a second age group (step c),
        the counts compared under ``tie_only`` are the persons hidden in both tables together
        (``first + second`` per category).
    reference_counts
        Reference counts for ``"distribution"`` as in :func:`grid_suppression`. Default: the
        column sums of both tables together, used for both tables.
    random_state
        int seed, numpy Generator or SeedSequence.

    Returns
    -------
    tuple of two pandas.DataFrame
        Copies of ``first`` and ``second`` (same index, columns and row order) with nullable
        ``Int64`` count columns; hidden category counts are ``pd.NA``.

    Notes
    -----
    Not covered (by design of SPEC §11): the totals are always published, so a difference of the
    two totals in 1..k-1 stays visible (which categories those persons have is protected by (b));
    neither are sums of hidden categories across the two tables (T minus the published counts of
    a margin) checked for small differences.

    References
    ----------
    SPEC §11.2 (rules), §11.4 (difference table, differencing between the two populations); S002.
    """
    layout = _layout(first, second)
    check_scalar(k, "k", integer=True, low=1)
    check_option(strategy, "strategy", STRATEGIES)
    keys_first, keys_second = _cell_keys(first, second)
    columns = list(layout.counts)
    values_first = count_matrix(first, columns)
    values_second = count_matrix(second, columns)

    # Union of cells: first's cells in its order, then the cells only in second.
    cells = keys_first.append(keys_second[~keys_second.isin(keys_first)])
    pos_first = np.arange(len(keys_first))
    pos_second = cells.get_indexer(keys_second)
    n = len(cells)
    counts_first = np.zeros((n, len(columns)), dtype=np.int64)
    counts_second = np.zeros_like(counts_first)
    counts_first[pos_first] = values_first
    counts_second[pos_second] = values_second
    categories_both = counts_first[:, 1:] + counts_second[:, 1:]
    reference = _reference_counts(reference_counts, layout, categories_both)
    reference_by_column = {
        c: value for v, _ in layout.margins() if v.prefix in reference for c, value in zip(v.columns, reference[v.prefix])
    }

    rng = np.random.default_rng(random_state)
    table_seed = int(rng.integers(2**63 - 1))
    hidden = np.zeros((n, len(layout.categories)), dtype=bool)
    for matrix in (counts_first, counts_second):
        single = grid_suppression(
            pd.DataFrame(matrix, columns=columns),
            k=k,
            strategy=strategy,
            reference_counts=reference_by_column,
            tie_only=tie_only,
            random_state=table_seed,
        )
        hidden |= single[list(layout.categories)].isna().to_numpy()  # (a)
    hidden |= disclosing_differences(counts_first[:, 1:], counts_second[:, 1:], k=k)  # (b)

    for _ in range(_MAX_CONSISTENCY_PASSES):  # (c), until stable
        if not any((hidden[:, cols].sum(axis=1) == 1).any() for _, cols in layout.margins()):
            break
        hidden = _secondary_suppression(
            hidden, categories_both, layout, strategy=strategy, reference=reference, tie_only=tie_only, rng=rng
        )
    else:  # pragma: no cover - one pass always reaches the fixed point (see docstring)
        raise RuntimeError("consistent_grid_suppression: the hidden pattern did not stabilise")

    return (
        _published(first, layout, values_first[:, 0], values_first[:, 1:], hidden[pos_first]),
        _published(second, layout, values_second[:, 0], values_second[:, 1:], hidden[pos_second]),
    )
