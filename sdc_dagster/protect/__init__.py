"""Protection (SDC) methods (SPEC §8, §11). Public names follow ../CONTRACT.md."""
from sdc_dagster.protect.grid import grid_suppression  # noqa: E402,F401  (SPEC §11.2)
from sdc_dagster.protect.cellkey import (  # noqa: E402,F401  (SPEC §8.11)
    PerturbationTable,
    assign_record_keys,
    cell_key_perturb,
    grid_cell_key,
    perturbation_table,
)
from sdc_dagster.protect.record_swapping import RecordSwapResult, targeted_record_swap  # noqa: E402,F401  (SPEC §8.10)
from sdc_dagster.protect.recode import (  # noqa: E402,F401  (SPEC §8.2)
    bottom_coding,
    interval_recode,
    merge_mapping,
    recode,
    top_bottom_coding,
    top_coding,
)
from sdc_dagster.protect.suppression import (  # noqa: E402,F401  (SPEC §8.3)
    local_suppression,
    risk_suppression,
    suppression_counts,
)
from sdc_dagster.protect.microaggregation import microaggregation  # noqa: E402,F401  (SPEC §8.6)
from sdc_dagster.protect.noise import add_noise  # noqa: E402,F401  (SPEC §8.5)
from sdc_dagster.protect.pram import PramResult, invariant_matrix, pram  # noqa: E402,F401  (SPEC §8.8)
from sdc_dagster.protect.rank_swapping import rank_swap  # noqa: E402,F401  (SPEC §8.9)
from sdc_dagster.protect.rounding import rounding  # noqa: E402,F401  (SPEC §8.7)
from sdc_dagster.protect.subsampling import subsample  # noqa: E402,F401  (SPEC §8.4)
from sdc_dagster.protect.plan import (  # noqa: E402,F401  (SPEC §8 protection plans)
    PLAN_METHODS,
    PlanResult,
    apply_plan,
    remove_variables,
    validate_plan,
)
from sdc_dagster.protect.grid import consistent_grid_suppression  # noqa: E402,F401  (SPEC §11.2, §11.4)
