"""The contract's path of the variable contributions (CONTRACT.md: ``import
sdc_dagster.contribution as contribution``): the module is
:mod:`sdc_dagster.risk.contribution` (Shapley, solidarity and ESL values, SPEC §6)."""

from sdc_dagster.risk.contribution import contribution_values, contributions

__all__ = ["contribution_values", "contributions"]
