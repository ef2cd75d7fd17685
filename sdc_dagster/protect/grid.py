"""Primary and secondary suppression of 1-km grid tables (SPEC §11.1–§11.2).

Every inhabited grid cell publishes its total resident population T and two marginal
distributions: sex (``sex_1``, ``sex_2``) and age group (``age_1``, ``age_2``, ``age_3``). The rule
protects each margin separately with k-anonymity (primary suppression of counts 1..k-1) and the
l = 2 part (secondary suppression so that no hidden count can be recovered as T minus the
published counts of its margin).

The whole table is processed at once with numpy boolean masks over cells; nothing loops over cells
in Python, so 197,000 cells take a few milliseconds.

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

SEX_COLUMNS: tuple[str, str] = ("sex_1", "sex_2")
AGE_COLUMNS: tuple[str, str, str] = ("age_1", "age_2", "age_3")
COUNT_COLUMNS: tuple[str, ...] = ("total", *SEX_COLUMNS, *AGE_COLUMNS)
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
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise SDCInputError(f"parameter k: must be an integer >= 1, got {k!r}")
    if strategy not in STRATEGIES:
        raise SDCInputError(f"parameter strategy: must be one of {list(STRATEGIES)}, got {strategy!r}")
    totals = _count_matrix(counts, ["total"])[:, 0]
    sexes = _count_matrix(counts, SEX_COLUMNS)
    ages = _count_matrix(counts, AGE_COLUMNS)
    reference = _reference_age_counts(reference_counts, ages)
    rng = np.random.default_rng(random_state)

    sex_primary = (sexes > 0) & (sexes < k)
    # With two categories, one hidden count is T minus the other: hide both.
    sex_hidden = sex_primary | (sex_primary.sum(axis=1) == 1)[:, None]

    age_primary = (ages > 0) & (ages < k)
    age_hidden = age_primary | _secondary_age_choice(
        ages, age_primary, strategy=strategy, reference=reference, tie_only=tie_only, rng=rng
    )

    out = counts.copy()
    out["total"] = pd.arrays.IntegerArray(totals, np.zeros(len(totals), dtype=bool))
    for j, col in enumerate(SEX_COLUMNS):
        out[col] = pd.arrays.IntegerArray(sexes[:, j].copy(), sex_hidden[:, j].copy())
    for j, col in enumerate(AGE_COLUMNS):
        out[col] = pd.arrays.IntegerArray(ages[:, j].copy(), age_hidden[:, j].copy())
    return out


def primary_suppression_mask(counts: pd.DataFrame, *, k: int = 3) -> pd.DataFrame:
    """Boolean frame (indexed like ``counts``) of the category counts with 0 < c < k (SPEC §11.2 item 1)."""
    require_columns(counts, (*SEX_COLUMNS, *AGE_COLUMNS), role="grid count column")
    cols = [*SEX_COLUMNS, *AGE_COLUMNS]
    values = _count_matrix(counts, cols)
    return pd.DataFrame((values > 0) & (values < k), index=counts.index, columns=cols)
