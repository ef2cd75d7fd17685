"""Information-loss measures (SPEC §9, §10). Public names follow CONTRACT.md."""

from sdc_dagster.loss.association import association_loss, contingency_association, regression_loss
from sdc_dagster.loss.distance import (
    LossResult,
    descriptive_statistics,
    distance_loss,
    distance_losses,
    partial_distances,
)
from sdc_dagster.loss.entropy import backward_probabilities, ebil
from sdc_dagster.loss.limits import records_changed_share, suppressed_shares, utility_changes
from sdc_dagster.loss.microaggregation import WithinGroupLoss, within_group_loss
from sdc_dagster.loss.mlodak import VariablesLoss, il_correl, il_variables  # sdcMicro IL_correl, IL_variables (Mlodak)
from sdc_dagster.loss.moments import (
    correlation_loss,
    covariance_loss,
    inverse_correlation_loss,
    mean_loss,
    mean_max_loss,
    moment_losses,
    variance_arctan_loss,
)
from sdc_dagster.loss.swapping import SwapInformationLoss, swap_information_loss  # sdcMicro infoLoss
from sdc_dagster.loss.tables import (  # SPEC §9.10, §11.3
    grid_information_loss,
    secondary_suppression_cost,
    secondary_suppression_mask,
)
from sdc_dagster.loss.topsis import topsis_loss, topsis_scores, topsis_summary
from sdc_dagster.loss.utility import d_utility, d_utility_summary
