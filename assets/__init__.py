"""Dagster orchestration of the sdc-dagster engine: survey and grid asset chains, checks, automation."""

import warnings

from dagster import BetaWarning

# dagster-pandera's schema types and user data versions are marked beta in Dagster 1.13, which the
# project pins; the warning would repeat for every survey chain at every code-location load.
warnings.filterwarnings("ignore", category=BetaWarning)
