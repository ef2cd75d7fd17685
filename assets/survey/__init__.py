"""The survey asset chain, built once per survey spec and partitioned by wave.

raw_microdata -> variable_classification -> key_frequencies -> risk_scores -> risk_contributions
-> protected_<plan> (one asset per protection plan; plan_search -> protected_searched) -> residual_risk,
residual_contributions, information_loss -> release -> sdc_report

One small factory per asset, one module per stage (:mod:`.ingest`, :mod:`.risk`,
:mod:`.protection`, :mod:`.evaluation`, :mod:`.release`, :mod:`.report`); :func:`build_survey_assets` assembles them
in chain order. Each asset receives its upstream assets as arguments, calls one function of
:mod:`sdc_dagster.pipeline`, and attaches its headline figures as metadata; locations come from the
``home`` resource (:class:`~sdc_dagster.resources.home.SdcHome`).
"""

from dataclasses import dataclass

from dagster import AssetsDefinition

from sdc_dagster.assets.survey.evaluation import information_loss_asset, residual_contributions_asset, residual_risk_asset
from sdc_dagster.assets.survey.ingest import raw_microdata_asset, variable_classification_asset
from sdc_dagster.assets.survey.protection import plan_search_asset, protected_asset, protected_searched_asset
from sdc_dagster.assets.survey.release import release_asset
from sdc_dagster.assets.survey.report import sdc_report_asset
from sdc_dagster.assets.survey.risk import key_frequencies_asset, risk_contributions_asset, risk_scores_asset
from sdc_dagster.spec import SurveySpec


@dataclass(frozen=True)
class SurveyAssets:
    """The assets of one survey, in chain order."""

    spec: SurveySpec
    assets: list[AssetsDefinition]


def build_survey_assets(spec: SurveySpec) -> SurveyAssets:
    """Every asset of the survey chain for ``spec``, under key prefix and group ``spec.survey``."""
    return SurveyAssets(
        spec=spec,
        assets=[
            raw_microdata_asset(spec),
            variable_classification_asset(spec),
            key_frequencies_asset(spec),
            risk_scores_asset(spec),
            risk_contributions_asset(spec),
            *(protected_asset(spec, plan) for plan in spec.plans),
            *((plan_search_asset(spec), protected_searched_asset(spec)) if spec.search.enabled else ()),
            residual_risk_asset(spec),
            residual_contributions_asset(spec),
            information_loss_asset(spec),
            release_asset(spec),
            sdc_report_asset(spec),
        ],
    )


__all__ = ["SurveyAssets", "build_survey_assets"]
