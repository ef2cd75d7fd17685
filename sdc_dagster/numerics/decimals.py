"""The decimals a variable is published with: the one notion behind every value written back at the
precision of the input (a microaggregated or noisy key rounded back, :func:`rounded_to_original_decimals`;
a published table's sums, :func:`sdc_dagster.tables.exchange.published_table`).

mu-Argus's metadata gives every numeric variable its number of decimals (``<DECIMALS>`` in the
``.rda`` file, 0 for an integer) and writes its output so; tau-Argus likewise publishes a
magnitude table with the decimals of its response variable (mu-Argus 5.1 and tau-Argus 4.2
manuals, "the metadata file"). Without such metadata the decimals are read from the values.

A variable recorded with more decimals than any coding (a log income, an age in years and months) has
no published precision to keep: its protected values are released with the decimals the protection
leaves meaningful (:func:`meaningful_decimals`): the change a method made is the value's uncertainty,
and a value is reported to the decimal of its uncertainty's second significant digit (JCGM 100:2008, "Evaluation of
measurement data: Guide to the expression of uncertainty in measurement" (GUM), 7.2.6).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

#: The most decimals a variable is read as coded with (:func:`original_decimals`; mu-Argus's
#: ``<DECIMALS>`` in practice 0 to a few): its protected values, and a published table's sums, keep
#: them. A variable recorded with more is measured, not coded: its protected values are released with
#: the decimals the protection leaves meaningful (:func:`released_decimals`).
MAX_RELEASED_DECIMALS = 4

#: The most decimals a stored value is read as recorded with (to 1e-12 relative, as
#: :func:`original_decimals` compares; a double holds 15 to 17 significant digits): a log income
#: written with 6 decimals (10.787497) or an age in years and months with 7 (37.6666667) is recognised
#: as such, and any value of magnitude 0.001 or more has at most 15.
RECORDED_DECIMALS = 15

#: Significant digits of the protection's change kept in a released value (GUM 7.2.6: an uncertainty
#: "usually suffices" with at most two significant digits; the value is rounded to the same decimal).
SIGNIFICANT_DIGITS_OF_CHANGE = 2


def original_decimals(values: np.ndarray, most: int = MAX_RELEASED_DECIMALS) -> int | None:
    """The number of decimals the observed ``values`` are published with: the least d in
    0..``most`` with every value equal to itself rounded to d decimals (to 1e-12 relative), None
    when more are needed or nothing is observed."""
    observed = values[~np.isnan(values)]
    if not len(observed):
        return None
    for decimals in range(most + 1):
        if np.allclose(observed, np.round(observed, decimals), rtol=1e-12, atol=0):
            return decimals
    return None


def meaningful_decimals(before: np.ndarray, after: np.ndarray) -> int | None:
    """The decimals a protected value carries meaning to: the decimal of the second significant digit
    (:data:`SIGNIFICANT_DIGITS_OF_CHANGE`) of u, the root mean square of the change ``after - before``
    over the values the protection changed (beyond 1e-12 relative, as :func:`original_decimals`),
    the change taken as the released value's standard uncertainty about the original (GUM 7.2.6); at
    least 0 (whole units: a coarser precision is a recode or a rounding step, not a rounding back).
    None when no value changed.

    E.g. MDAV groups of a log income: u = 0.064 gives 3 decimals (10.718 instead of 10.718007666666665);
    ages in years and months shifted by u = 0.64 years give 2 decimals."""
    both = ~(np.isnan(before) | np.isnan(after))
    changed = both & ~np.isclose(after, before, rtol=1e-12, atol=0)  # float error of a mean is no change
    change = after[changed] - before[changed]
    if not len(change):
        return None
    u = float(np.sqrt(np.mean(np.square(change))))
    return max(0, SIGNIFICANT_DIGITS_OF_CHANGE - 1 - math.floor(math.log10(u)))


def released_decimals(before: np.ndarray, after: np.ndarray) -> int | None:
    """The decimals protected values ``after`` of a variable published as ``before`` are released with.

    A variable coded to a published precision, at most :data:`MAX_RELEASED_DECIMALS` decimals
    (:func:`original_decimals`; mu-Argus's ``<DECIMALS>``, 0 for an integer), keeps it: the released
    file has the original's format. A variable recorded with more (a log income with 6 decimals, an
    age in years and months with 7, a ratio) has no coded precision to keep: it is released with the
    decimals the protection leaves meaningful (:func:`meaningful_decimals`), never more than it is
    recorded with (at most :data:`RECORDED_DECIMALS`). None when nothing bounds them (a variable
    recorded beyond a double's precision and left unchanged)."""
    coded = original_decimals(before)
    if coded is not None:
        return coded
    bounds = [decimals for decimals in (original_decimals(before, RECORDED_DECIMALS),
                                        meaningful_decimals(before, after)) if decimals is not None]
    return min(bounds) if bounds else None


def rounded_to_original_decimals(before: pd.DataFrame, after: pd.DataFrame,
                                 columns: Sequence[str]) -> tuple[pd.DataFrame, dict[str, int]]:
    """``after`` with each of ``columns`` rounded to the decimals it is released with
    (:func:`released_decimals`: those its values in ``before`` are coded with, else those the protection
    leaves meaningful; to the nearest, halves to even as numpy's and R's ``round``), and
    ``{column: decimals}`` of the columns rounded.

    A released age of 33.333 or 41.67 is a value no respondent can have, and tells the reader that
    the file was microaggregated or perturbed and by how much; so does an education of 7.772 years
    where the file gives two decimals, or 9.940000000000001; and a log income published with 6
    decimals released as the group mean 10.787497333333334 carries digits the protection made noise.
    mu-Argus's metadata gives every numeric variable its number of decimals (``<DECIMALS>`` in the
    .rda file, 0 for an integer) and releases it so; sdcMicro's ``microaggregation`` leaves the group
    means as computed. A whole-numbered column keeps an integer dtype where it had one (nullable
    ``Int64`` when values are missing)."""
    rounded: dict[str, int] = {}
    out = after
    for column in columns:
        if column not in before.columns or column not in after.columns:
            continue
        old, new = before[column], after[column]
        if not (pd.api.types.is_numeric_dtype(old) and pd.api.types.is_numeric_dtype(new)) \
                or pd.api.types.is_bool_dtype(old):
            continue
        old_values = old.to_numpy(dtype="float64", na_value=np.nan)
        new_values = new.to_numpy(dtype="float64", na_value=np.nan)
        decimals = released_decimals(old_values, new_values)
        if decimals is None:
            continue
        present = ~np.isnan(new_values)
        released = np.round(new_values, decimals)
        if np.array_equal(new_values[present], released[present]) and new.dtype == old.dtype:
            continue
        values = pd.Series(released, index=new.index)
        if decimals == 0 and pd.api.types.is_integer_dtype(old.dtype):
            values = values.astype(old.dtype if present.all() else "Int64")
        if out is after:
            out = after.copy()
        out[column] = values
        rounded[str(column)] = decimals
    return out, rounded
