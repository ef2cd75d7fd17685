"""Asset checks guarding the release rules (SPEC §3.1, §3.3, §8.1).

For each protection plan: the protected variant is k-anonymous for the plan's k, its global risk
is under the spec's threshold, and it carries no direct identifier. For the original wave: the
global risk is checked against the same threshold (a warning: it is what protection must fix).
"""

from __future__ import annotations

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, AssetKey, asset_check

from assets.survey import protected_key
from sdc_dagster import survey
from sdc_dagster.spec import SurveySpec


def build_survey_checks(spec: SurveySpec) -> list[AssetChecksDefinition]:
    """The release checks of every plan of ``spec`` and the global-risk check of ``risk_scores``."""
    checks: list[AssetChecksDefinition] = []

    def plan_checks(plan) -> list[AssetChecksDefinition]:
        key = protected_key(spec, plan.name)
        made = []
        for name, description in (
            ("k_anonymity", f"every record's key is shared by at least {plan.k} records (fk >= k, SPEC §3.1)"),
            ("global_risk", f"global risk <= {spec.risk.max_global_risk} (SPEC §3.3)"),
            ("no_direct_identifier", "no direct identifier column is released (SPEC §8.1)"),
        ):

            def check(protected: pd.DataFrame, _name=name) -> AssetCheckResult:
                outcome = survey.release_checks(protected, spec, plan)[_name]
                return AssetCheckResult(
                    passed=bool(outcome["passed"]),
                    severity=AssetCheckSeverity.ERROR,
                    metadata={"value": outcome["value"], "rule": outcome["rule"]},
                )

            made.append(asset_check(asset=key, name=name, description=description)(check))
        return made

    for plan in spec.plans:
        checks.extend(plan_checks(plan))

    @asset_check(
        asset=AssetKey([spec.survey, "risk_scores"]),
        name="global_risk_before_protection",
        description=f"global risk of the unprotected wave <= {spec.risk.max_global_risk} (SPEC §3.3)",
    )
    def original_global_risk(risk_scores: pd.DataFrame) -> AssetCheckResult:
        value = float(risk_scores["risk"].mean())
        return AssetCheckResult(
            passed=value <= spec.risk.max_global_risk,
            severity=AssetCheckSeverity.WARN,
            metadata={"global_risk": value, "threshold": spec.risk.max_global_risk},
        )

    checks.append(original_global_risk)
    return checks
