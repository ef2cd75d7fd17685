"""Protection (SDC) methods (SPEC §8, §11). Public names follow CONTRACT.md."""

from sdc_dagster.protect.cellkey import assign_record_keys, cell_key_perturb, cell_key_table, grid_cell_key  # SPEC §8.11
from sdc_dagster.protect.grid import consistent_grid_suppression, grid_suppression  # SPEC §11.2, §11.4
from sdc_dagster.protect.microaggregation import microaggregation, microaggregation_gower  # SPEC §8.6
from sdc_dagster.protect.mv_top_coding import mv_top_coding  # sdcMicro mvTopCoding
from sdc_dagster.protect.noise import add_noise  # SPEC §8.5
from sdc_dagster.protect.optimal_suppression import OptimalSuppression, optimal_local_suppression  # SPEC §8.3
from sdc_dagster.protect.plan import PLAN_METHODS, PlanResult, apply_plan, remove_variables, validate_plan
from sdc_dagster.protect.pram import PramResult, invariant_matrix, pram  # SPEC §8.8
from sdc_dagster.protect.ptable import PerturbationTable, perturbation_table  # SPEC §8.11
from sdc_dagster.protect.rank_swapping import rank_swap  # SPEC §8.9
from sdc_dagster.protect.recode import (  # SPEC §8.2
    bottom_coding,
    global_recode,
    interval_recode,
    merge_mapping,
    recode,
    top_bottom_coding,
    top_coding,
)
from sdc_dagster.protect.record_swapping import RecordSwapResult, targeted_record_swap  # SPEC §8.10
from sdc_dagster.protect.rounding import rounding  # SPEC §8.7
from sdc_dagster.protect.subsampling import subsample  # SPEC §8.4
from sdc_dagster.protect.suppression import local_suppression, risk_suppression, suppression_counts  # SPEC §8.3

__all__ = [
    "OptimalSuppression",
    "PLAN_METHODS",
    "PerturbationTable",
    "PlanResult",
    "PramResult",
    "RecordSwapResult",
    "add_noise",
    "apply_plan",
    "assign_record_keys",
    "bottom_coding",
    "cell_key_perturb",
    "cell_key_table",
    "consistent_grid_suppression",
    "global_recode",
    "grid_cell_key",
    "grid_suppression",
    "interval_recode",
    "invariant_matrix",
    "local_suppression",
    "merge_mapping",
    "microaggregation",
    "microaggregation_gower",
    "mv_top_coding",
    "optimal_local_suppression",
    "perturbation_table",
    "pram",
    "rank_swap",
    "recode",
    "remove_variables",
    "risk_suppression",
    "rounding",
    "subsample",
    "suppression_counts",
    "targeted_record_swap",
    "top_bottom_coding",
    "top_coding",
    "validate_plan",
]
