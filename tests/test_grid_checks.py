"""The grid's release rules are the survey's CheckOutcome: passed, the breaches found, the rule in
words, blocking, and the figures counted (SPEC §8.11, §11.2, §11.4), on tables small enough to
count by hand."""

import pandas as pd

from sdc_dagster.pipeline.grid_checks import cell_key_bounded, consistent_with_resident_table, no_small_published_counts
from sdc_dagster.pipeline.protection import CheckOutcome

NA = pd.NA


def table(rows) -> pd.DataFrame:
    """cell_id, total, sex_1, sex_2, age_1, age_2, age_3 (nullable: NA is hidden)."""
    columns = ["cell_id", "total", "sex_1", "sex_2", "age_1", "age_2", "age_3"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({c: "Int64" for c in columns[1:]})


def test_no_small_published_counts_counts_small_counts_and_single_hidden_margins():
    # cell a: sex_2 = 2 published (1..k-1 with k = 3); cell b: age has exactly one hidden count
    # (age_2), sex two; cell c is safe.
    suppressed = table([("a", 9, 7, 2, 3, 3, 3), ("b", 8, NA, NA, 4, NA, 4), ("c", 6, 3, 3, 0, 3, 3)])
    outcome = no_small_published_counts(suppressed, k=3)
    assert isinstance(outcome, CheckOutcome)
    assert outcome == CheckOutcome(
        passed=False, value=2, blocking=True,
        rule="no published count in 1..2 and no complete margin with exactly one hidden count",
        figures={"published_counts_below_k": 1, "margins_with_one_hidden_count": 1})
    assert no_small_published_counts(suppressed.drop(index=[0, 1]), k=3).passed
    # with k = 4, cell c's published 3s are small: 4 of them (sex_1, sex_2, age_2, age_3)
    assert no_small_published_counts(suppressed.drop(index=[0, 1]), k=4).value == 4


def test_consistent_with_resident_table_compares_hidden_patterns_on_common_cells():
    resident = table([("a", 9, 5, 4, NA, NA, 5), ("b", 8, 4, 4, 4, 0, 4)])
    national = table([("a", 10, 5, 5, NA, 5, NA), ("c", 6, 3, 3, 0, 3, 3)])
    differencing = {"blocked": 2, "blocked_beyond_primary": 0, "still_disclosed": 1}
    outcome = consistent_with_resident_table(resident, national, differencing)
    assert (outcome.passed, outcome.value, outcome.blocking) == (False, 2, True)  # cell a differs, 1 disclosed
    assert outcome.figures == {"common_cells": 1, "cells_with_different_patterns": 1,
                               "cells_still_disclosed_by_differencing": 1, "cells_differencing_blocked": 2}
    assert consistent_with_resident_table(resident, resident, {**differencing, "still_disclosed": 0}).passed


def test_cell_key_bounded_counts_deviations_and_small_counts():
    perturbed = pd.DataFrame({
        "total": [5, 0, 1], "total_original": [4, 1, 2],  # row 3 publishes a 1 (in 1..js, js = 1)
        "sex_1": [3, 1, 0], "sex_1_original": [0, 1, 0],  # row 1: deviation 3 > D = 2 from a zero; row 2 a 1
    })
    outcome = cell_key_bounded(perturbed, max_deviation=2, threshold=1)
    assert (outcome.passed, outcome.value, outcome.blocking) == (False, 3, True)
    assert outcome.figures == {"violations": 1, "published_counts_in_1_to_js": 2, "max_deviation": 2, "figures": 2}
    assert outcome.rule == "every perturbed count non-negative, within 2 of the original, zeros kept zero and none in 1..1"
