"""Disclosure-risk measures (SPEC §2–§5). Public names follow CONTRACT.md."""

from sdc_dagster.numerics.distance import gower_distances  # SPEC §4.1
from sdc_dagster.risk.categorical import (  # SPEC §2, §3.1–3.5
    GlobalRiskThreshold,
    exact_risk,
    global_risk,
    global_risk_threshold,
    household_risk,
    individual_risk,
    k_anonymity_violations,
    key_frequencies,
    risk_above_threshold,
    risk_table,
    summarise_risk,
)
from sdc_dagster.risk.combinations import risky_cells, unsafe_combinations  # SPEC §3.10
from sdc_dagster.risk.combined import combined_risk, global_combined_risk  # SPEC §5
from sdc_dagster.risk.intervals import (  # SPEC §4.2–§4.4
    RankIntervalDisclosure,
    interval_risk,
    interval_risk_rmd,
    outlier_flags,
    rank_interval_disclosure,
)
from sdc_dagster.risk.linkage import MAX_ONE_TO_ONE_LINKAGE, RecordLinkageRisk, record_linkage_risk  # SPEC §4.1
from sdc_dagster.risk.model_risk import formula_on_keys, model_risk  # SPEC §3.9 (sdcMicro modRisk, Skinner & Shlomo 2008)
from sdc_dagster.risk.neighbourhood import neighbourhood_counts  # SPEC §5.2
from sdc_dagster.risk.population_uniqueness import (  # ARX: Pitman (Hoshino 2001), Zayatz (1991)
    PopulationUniqueness,
    population_uniqueness,
)
from sdc_dagster.risk.diversity import group_l_diversity, l_diversity, matched_l_diversity, t_closeness  # SPEC §3.6, §3.7
from sdc_dagster.risk.suda import suda2, suda2_attribute_contributions, suda2_max_size  # SPEC §3.8
from sdc_dagster.risk.tables import (  # SPEC §11.2, §11.4
    difference_table,
    differencing_disclosure,
    disclosing_differences,
    homogeneous_cells,
    resident_size_distribution,
)

__all__ = [
    "MAX_ONE_TO_ONE_LINKAGE",
    "RankIntervalDisclosure",
    "RecordLinkageRisk",
    "GlobalRiskThreshold",
    "combined_risk",
    "difference_table",
    "differencing_disclosure",
    "disclosing_differences",
    "exact_risk",
    "global_combined_risk",
    "global_risk",
    "gower_distances",
    "global_risk_threshold",
    "homogeneous_cells",
    "household_risk",
    "individual_risk",
    "interval_risk",
    "interval_risk_rmd",
    "k_anonymity_violations",
    "key_frequencies",
    "group_l_diversity",
    "l_diversity",
    "matched_l_diversity",
    "model_risk",
    "formula_on_keys",
    "neighbourhood_counts",
    "outlier_flags",
    "PopulationUniqueness",
    "population_uniqueness",
    "rank_interval_disclosure",
    "record_linkage_risk",
    "resident_size_distribution",
    "risk_above_threshold",
    "risk_table",
    "risky_cells",
    "suda2",
    "suda2_attribute_contributions",
    "suda2_max_size",
    "summarise_risk",
    "t_closeness",
    "unsafe_combinations",
]
