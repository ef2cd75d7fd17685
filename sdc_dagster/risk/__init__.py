"""Disclosure-risk measures (SPEC §2–§5). Public names follow ../CONTRACT.md."""
from sdc_dagster.risk.combined import combined_risk, global_combined_risk
from sdc_dagster.risk.continuous import (
    interval_risk,
    interval_risk_rmd,
    neighbourhood_counts,
    outlier_flags,
    record_linkage_risk,
)

from sdc_dagster.risk.categorical import (  # noqa: E402
    global_risk,
    household_risk,
    individual_risk,
    k_anonymity_violations,
    key_frequencies,
    risk_above_threshold,
)
from sdc_dagster.risk.combinations import unsafe_combinations  # noqa: E402
from sdc_dagster.risk.diversity import l_diversity, t_closeness  # noqa: E402
from sdc_dagster.risk.suda import suda2, suda2_attribute_contributions
