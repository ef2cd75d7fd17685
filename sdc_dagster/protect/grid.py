"""Primary and secondary suppression of 1-km grid tables (SPEC §11.1–§11.2).

Every inhabited grid cell publishes its total resident population T and two marginal
distributions: sex (``sex_1``, ``sex_2``) and age group (``age_1``, ``age_2``, ``age_3``). The rule
protects each margin separately with k-anonymity (primary suppression of counts 1..k-1) and the
l = 2 part (secondary suppression so that no hidden count can be recovered as T minus the
published counts of its margin).

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
* Item 3, "distribution": reference counts N_1..N_3 of the age groups in the population; by default
  the column sums of the table. When both candidates have reference count 0 the draw is uniform.
* Item 4 (not treated, by design of the seed's rule): a cell with T >= k whose residents all fall in
  one category (e.g. sex = (T, 0)) publishes the category of every resident, which breaks strict
  l-diversity. The rule suppresses nothing there; :func:`sdc_dagster.loss.tables.homogeneous_cells`
  counts such cells so that they are reported rather than silently accepted.
* Contract default ``strategy="distribution"`` (the variant finally applied in the seed) differs
  from the "fixed" suggested in SPEC §12; CONTRACT.md is the public API and wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.loss.tables import disclosing_differences

SEX_COLUMNS: tuple[str, str] = ("sex_1", "sex_2")
AGE_COLUMNS: tuple[str, str, str] = ("age_1", "age_2", "age_3")
CATEGORY_COLUMNS: tuple[str, ...] = (*SEX_COLUMNS, *AGE_COLUMNS)
COUNT_COLUMNS: tuple[str, ...] = ("total", *CATEGORY_COLUMNS)
STRATEGIES: tuple[str, ...] = ("fixed", "uniform", "distribution")


def _count_matrix(counts: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The named count columns as an int64 matrix, after checking they are non-negative integers."""
    blocks = []
    for col in columns:
        series = counts[col]
        if series.isna().any():
            raise SDCInputError(f"column {col!r}: grid counts must not be missing")
        if not (pd.api.types.is_integer_dtype(series) or pd.api.types.is_float_dtype(series)):
            raise SDCInputError(f"column {col!r}: grid counts must be numeric, got {series.dtype}")
        values = series.to_numpy(dtype="float64")
        if (values < 0).any() or (values != np.floor(values)).any():
            raise SDCInputError(f"column {col!r}: grid counts must be non-negative integers")
        blocks.append(values.astype(np.int64))
    return np.column_stack(blocks) if blocks else np.empty((len(counts), 0), dtype=np.int64)


def _reference_age_counts(reference_counts, ages: np.ndarray) -> np.ndarray:
    """N_1..N_3 for the "distribution" strategy: given, or the column sums of the table."""
    if reference_counts is None:
        return ages.sum(axis=0).astype(np.float64)
    if isinstance(reference_counts, Mapping | pd.Series):
        missing = [c for c in AGE_COLUMNS if c not in reference_counts]
        if missing:
            raise SDCInputError(
                f"reference_counts: no value for {missing[0]!r}; give one count per age group "
                f"{list(AGE_COLUMNS)}"
            )
        values = np.array([reference_counts[c] for c in AGE_COLUMNS], dtype=np.float64)
    else:
        values = np.asarray(reference_counts, dtype=np.float64).ravel()
        if values.shape != (3,):
            raise SDCInputError("reference_counts: expected three counts (age groups 1, 2, 3)")
    if not np.isfinite(values).all() or (values < 0).any():
        raise SDCInputError("reference_counts: counts must be finite and non-negative")
    return values


def _secondary_age_choice(
    ages: np.ndarray,
    primary: np.ndarray,
    *,
    strategy: str,
    reference: np.ndarray,
    tie_only: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Mask of the age groups hidden by secondary suppression (SPEC §11.2 items 2–3)."""
    n = len(ages)
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
        c_succ = ages[rows, succ]
        c_other = ages[rows, other]
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
        ``age_1``, ``age_2``, ``age_3``. Other columns (cell id, coordinates...) are carried through.
    k
        k-anonymity threshold: a category count c with 0 < c < k is primarily suppressed.
    strategy
        How the second age group to hide is chosen (SPEC §11.2 item 3): ``"fixed"`` (cyclic
        successor of the unsafe group), ``"uniform"`` (each candidate with probability 0.5) or
        ``"distribution"`` (candidate a hidden with probability N_b / (N_a + N_b)).
    reference_counts
        Population counts N of the age groups for ``"distribution"``: a mapping or Series keyed by
        ``age_1``..``age_3`` or a sequence of three numbers. Default: the column sums of ``counts``.
    tie_only
        True: the strategy only breaks ties (equal candidate counts); otherwise the smaller
        candidate is hidden. False: the strategy decides whenever a second group must be hidden.
    random_state
        int seed or numpy Generator for the random strategies.

    Returns
    -------
    pandas.DataFrame
        A copy of ``counts`` (same index and columns) whose six count columns are nullable
        ``Int64``; suppressed category counts are ``pd.NA``. ``total`` is never suppressed.

    References
    ----------
    SPEC §11.2; S002 (Klimanek, Józefowski, Młodak 2023), eqs (1)–(9) and Rys. 2.
    """
    require_columns(counts, COUNT_COLUMNS, role="grid count column")
    _check_parameters(k, strategy)
    totals = _count_matrix(counts, ["total"])[:, 0]
    sexes = _count_matrix(counts, SEX_COLUMNS)
    ages = _count_matrix(counts, AGE_COLUMNS)
    reference = _reference_age_counts(reference_counts, ages)
    rng = np.random.default_rng(random_state)

    sex_hidden, age_hidden = _secondary_suppression(
        (sexes > 0) & (sexes < k),
        (ages > 0) & (ages < k),
        ages,
        strategy=strategy,
        reference=reference,
        tie_only=tie_only,
        rng=rng,
    )
    return _published(counts, totals, np.hstack([sexes, ages]), np.hstack([sex_hidden, age_hidden]))


def _check_parameters(k, strategy: str) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise SDCInputError(f"parameter k: must be an integer >= 1, got {k!r}")
    if strategy not in STRATEGIES:
        raise SDCInputError(f"parameter strategy: must be one of {list(STRATEGIES)}, got {strategy!r}")


def _secondary_suppression(
    sex_hidden: np.ndarray,
    age_hidden: np.ndarray,
    ages: np.ndarray,
    *,
    strategy: str,
    reference: np.ndarray,
    tie_only: bool,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The l = 2 step (SPEC §11.2 item 2) on the current hidden masks: no margin keeps one hidden count.

    Sex: a single hidden count is T minus the other, so both are hidden. Age: one of the two
    remaining groups is added by :func:`_secondary_age_choice` (``ages`` gives the counts compared
    under ``tie_only``). Margins with 0 or >= 2 hidden counts are left alone.
    """
    sex_out = sex_hidden | (sex_hidden.sum(axis=1) == 1)[:, None]
    age_out = age_hidden | _secondary_age_choice(
        ages, age_hidden, strategy=strategy, reference=reference, tie_only=tie_only, rng=rng
    )
    return sex_out, age_out


def _published(counts: pd.DataFrame, totals: np.ndarray, categories: np.ndarray, hidden: np.ndarray) -> pd.DataFrame:
    """A copy of ``counts`` with nullable Int64 count columns; hidden category counts are NA."""
    out = counts.copy()
    out["total"] = pd.arrays.IntegerArray(totals.copy(), np.zeros(len(totals), dtype=bool))
    for j, col in enumerate(CATEGORY_COLUMNS):
        out[col] = pd.arrays.IntegerArray(categories[:, j].copy(), hidden[:, j].copy())
    return out


def primary_suppression_mask(counts: pd.DataFrame, *, k: int = 3) -> pd.DataFrame:
    """Boolean frame (indexed like ``counts``) of the category counts with 0 < c < k (SPEC §11.2 item 1)."""
    require_columns(counts, (*SEX_COLUMNS, *AGE_COLUMNS), role="grid count column")
    cols = [*SEX_COLUMNS, *AGE_COLUMNS]
    values = _count_matrix(counts, cols)
    return pd.DataFrame((values > 0) & (values < k), index=counts.index, columns=cols)


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
        ``age_3``; other columns are carried through. Cells are matched by the ``cell_id`` column
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
        (``first + second`` per group).
    reference_counts
        Reference age-group counts N_1..N_3 for ``"distribution"`` (mapping, Series or three
        numbers). Default: the column sums of both tables together, used for both tables.
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
    require_columns(first, COUNT_COLUMNS, role="grid count column")
    require_columns(second, COUNT_COLUMNS, role="grid count column")
    _check_parameters(k, strategy)
    keys_first, keys_second = _cell_keys(first, second)
    values_first = _count_matrix(first, COUNT_COLUMNS)
    values_second = _count_matrix(second, COUNT_COLUMNS)

    # Union of cells: first's cells in its order, then the cells only in second.
    cells = keys_first.append(keys_second[~keys_second.isin(keys_first)])
    pos_first = np.arange(len(keys_first))
    pos_second = cells.get_indexer(keys_second)
    n = len(cells)
    counts_first = np.zeros((n, len(COUNT_COLUMNS)), dtype=np.int64)
    counts_second = np.zeros_like(counts_first)
    counts_first[pos_first] = values_first
    counts_second[pos_second] = values_second
    ages_both = counts_first[:, 3:] + counts_second[:, 3:]
    if reference_counts is None:
        reference = ages_both.sum(axis=0).astype(np.float64)
    else:
        reference = _reference_age_counts(reference_counts, ages_both)

    rng = np.random.default_rng(random_state)
    table_seed = int(rng.integers(2**63 - 1))
    hidden = np.zeros((n, len(CATEGORY_COLUMNS)), dtype=bool)
    for matrix in (counts_first, counts_second):
        single = grid_suppression(
            pd.DataFrame(matrix, columns=list(COUNT_COLUMNS)),
            k=k,
            strategy=strategy,
            reference_counts=reference,
            tie_only=tie_only,
            random_state=table_seed,
        )
        hidden |= single[list(CATEGORY_COLUMNS)].isna().to_numpy()  # (a)
    hidden |= disclosing_differences(counts_first[:, 1:], counts_second[:, 1:], k=k)  # (b)

    n_sex = len(SEX_COLUMNS)
    for _ in range(_MAX_CONSISTENCY_PASSES):  # (c), until stable
        sex_hidden, age_hidden = hidden[:, :n_sex], hidden[:, n_sex:]
        if not ((sex_hidden.sum(axis=1) == 1).any() or (age_hidden.sum(axis=1) == 1).any()):
            break
        sex_hidden, age_hidden = _secondary_suppression(
            sex_hidden, age_hidden, ages_both, strategy=strategy, reference=reference, tie_only=tie_only, rng=rng
        )
        hidden = np.hstack([sex_hidden, age_hidden])
    else:  # pragma: no cover - one pass always reaches the fixed point (see docstring)
        raise RuntimeError("consistent_grid_suppression: the hidden pattern did not stabilise")

    return (
        _published(first, values_first[:, 0], values_first[:, 1:], hidden[pos_first]),
        _published(second, values_second[:, 0], values_second[:, 1:], hidden[pos_second]),
    )
