"""The report's inputs of one wave (:class:`~sdc_dagster.report.ReportInputs`), gathered from the
values of the stages before it: the original's risk and contributions, the protected variants
(with their steps, seeds, release checks, PRAM matrices and release decisions), their evaluation
and the plan search.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.pipeline.evaluation import InformationLoss
from sdc_dagster.pipeline.protection import ProtectedVariant, checks_not_applicable, release_warnings, utility_changes
from sdc_dagster.pipeline.risk import Contributions, RiskScores
from sdc_dagster.search.outcome import PlanSearch
from sdc_dagster.pipeline.variant import released_keys, retained_records, values_changed
from sdc_dagster.releases.categories import ReleasedCoding
from sdc_dagster.releases.digests import package_versions
from sdc_dagster.releases.files import release_coding, wave_labels
from sdc_dagster.releases.manifest import keys_not_released, release_provenance
from sdc_dagster.report import MeasureNote, PlanSummary, Recommendation, ReportInputs, RunInfo, SignOff, recommend_plan
from sdc_dagster.spec.sources import source_metadata, value_labels
from sdc_dagster.spec import SurveySpec


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class WaveEvaluation:
    """The evaluation stage's results of a wave (:mod:`sdc_dagster.pipeline.evaluation`):
    ``residual`` (:func:`~sdc_dagster.pipeline.evaluation.residual_risk`), ``loss``
    (:func:`~sdc_dagster.pipeline.evaluation.information_loss`, with the notes of the measures it
    left out) and ``residual_contributions``
    (:func:`~sdc_dagster.pipeline.evaluation.residual_contributions`)."""

    residual: pd.DataFrame
    loss: InformationLoss
    residual_contributions: pd.DataFrame | None = None


def plan_summary(variant: ProtectedVariant, evaluation: WaveEvaluation,
                 utility: pd.DataFrame | None = None) -> PlanSummary:
    """What the report shows of one plan: its steps, residual risk, loss, release checks, the
    release decision (a released plan is linked to its manifest and to the release it supersedes;
    a withheld plan has no link and names the blocking checks it failed), the variables' global
    contributions before and after the plan, the PRAM matrices it used and its provenance
    (:func:`~sdc_dagster.releases.manifest.release_provenance`); ``utility``: its per-variable utility
    figures against the spec's limits (:func:`~sdc_dagster.pipeline.protection.utility_changes`);
    the variables it leaves without information (:func:`~sdc_dagster.releases.manifest.keys_not_released`)."""
    name = variant.name
    loss = evaluation.loss.plan(name)
    moved = None
    moved_table = evaluation.residual_contributions
    if moved_table is not None and name in moved_table.index.get_level_values("variant"):
        moved = moved_table.xs(name, level="variant")
    link, provenance = None, {}
    if variant.release is not None:
        folder, manifest = variant.release.folder, variant.release.manifest
        provenance = release_provenance(folder, manifest)
        if variant.release.published:
            previous = manifest["previous_release"]
            link = {
                "run_id": manifest["run_id"],
                "folder": str(folder),
                "previous_release": previous,
                "previous_folder": str(folder.parent / previous) if previous else None,
            }
    withheld = variant.withheld_because
    return PlanSummary(
        steps=variant.steps,
        residual_risk=evaluation.residual.loc[name].dropna().to_dict(),
        loss=loss.figures,
        topsis=loss.topsis,
        checks={check: bool(c.passed) for check, c in variant.checks.items()},
        releasable=not withheld,
        release=link,
        withheld_because=withheld,
        warnings=release_warnings(variant.checks),
        contributions=moved,
        pram_matrices=dict(variant.matrices),
        provenance=provenance,
        utility=utility,
        keys_not_released=keys_not_released(variant.data, variant.steps),
    )


def _utility_or_none(original: pd.DataFrame, variant: ProtectedVariant, spec: SurveySpec) -> pd.DataFrame | None:
    """:func:`~sdc_dagster.pipeline.protection.utility_changes`: those the variant kept from its
    release checks (:attr:`~sdc_dagster.pipeline.protection.ProtectedVariant.utility`), else computed
    now, or None where the variant's figures cannot be computed (its utility-limit checks then
    failed, saying why)."""
    kept = getattr(variant, "utility", None)  # None too for a variant stored before the field existed
    if kept is not None:
        return kept
    try:
        return utility_changes(original, variant.data, spec, variant.plan, released=variant.keys)
    except SDCInputError:
        return None


def suppressions_by_key(original: pd.DataFrame, protected: dict[str, pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Values each plan suppressed, per key variable (SPEC §8.3): values observed in the original
    record and missing in its release (index: keys; columns: plans; a key a plan does not release
    counts all of its observed values)."""
    counts = {}
    for name, frame in protected.items():
        matched = retained_records(original, frame, name)
        released = frame.reindex(columns=keys)
        counts[name] = (released.isna() & matched[keys].notna()).sum().astype("int64")
    return pd.DataFrame(counts, index=pd.Index(keys, name="variable"), dtype="int64")


def protected_distributions(
    original: pd.DataFrame, protected: dict[str, pd.DataFrame], spec: SurveySpec,
    codings: dict[str, ReleasedCoding] | None = None,
) -> tuple[dict[str, dict[str, pd.Series]], list[str]]:
    """The values of every quasi-identifier some plan changed or suppressed, before and after each
    plan that releases it (for the report's distribution plots), and which of them are continuous.
    Variables in spec order. ``codings``: each plan's released coding
    (:func:`~sdc_dagster.releases.files.release_coding`): a plan's merged categories are shown as
    its safe files release them, code and label (:meth:`~sdc_dagster.releases.categories.ReleasedCoding.shown`),
    never under one member's code."""
    matched = {name: retained_records(original, frame, name) for name, frame in protected.items()}
    codings = codings or {}
    distributions = {}
    for variable in released_keys(spec, original).quasi_identifiers:
        after = {name: codings[name].shown(variable, frame[variable]) if name in codings else frame[variable]
                 for name, frame in protected.items() if variable in frame.columns}
        moved = any(
            values_changed(matched[name][variable], values) or values.isna().sum() != matched[name][variable].isna().sum()
            for name, values in after.items()
        )
        if moved:
            distributions[variable] = {"original": original[variable], **after}
    return distributions, [v for v in spec.continuous_keys if v in distributions]


#: The information loss the report and the release weigh the plans by: distance measure (1) with
#: arctan distances (SPEC §9.1 eq (6)), the figure every release manifest carries.
LOSS_MEASURE = "lambda_arctan"


def risk_measure(spec: SurveySpec) -> str:
    """The residual risk the report weighs the plans by: global risk (SPEC §3.3) with categorical
    keys, else the linkage risk of the continuous keys (SPEC §4.1)."""
    return "global_risk" if spec.categorical_keys else "linkage_risk"


def recommended_plan(spec: SurveySpec, evaluation: WaveEvaluation,
                     variants: dict[str, ProtectedVariant]) -> Recommendation:
    """The plan the report's decision rule recommends for release
    (:data:`~sdc_dagster.report.decision.RECOMMENDATION_RULE`: among the plans passing every
    blocking check, the Pareto-optimal one of least information loss, ``lambda_arctan`` of SPEC
    §9.1 eq (6), against the residual :func:`risk_measure`), from the evaluation of the variants:
    the choice the release stage publishes and the report explains."""
    names = list(variants)
    residual = evaluation.residual
    points = pd.DataFrame(
        {"risk": [float(residual.loc[name].get(risk_measure(spec), np.nan)) if name in residual.index else np.nan
                  for name in names],
         "loss": [evaluation.loss.plan(name).figures.get(LOSS_MEASURE, np.nan) for name in names],
         "releasable": [not variants[name].withheld_because for name in names]},
        index=pd.Index(names, name="plan"),
    )
    return recommend_plan(points)


def design_statement(spec: SurveySpec) -> str:
    """Which weight and household id the risk used (SPEC §3.2, §3.5), or that there was none: for
    the report's decision section and ``sdc run``'s summary."""
    weight = (f"weight {spec.weight!r}" if spec.weight else
              "no weight (each record stands for itself: the risks are sample risks)")
    household = (f"household id {spec.household_id!r}" if spec.household_id else
                 "no household id (no household risk)")
    return f"{weight}; {household}"


#: The run tag naming the file the user gave ``sdc run SURVEY WAVE --file FILE`` (its name; the run
#: reads the copy landed as ``<wave><suffix>``): the report's header names it (:func:`run_info`).
DATA_FILE_TAG = "sdc/data_file"


def run_info(spec: SurveySpec, run_id: str, started: float, partition: str, data_file: str | Path,
             data_sha256: str, given_file: str | Path | None = None) -> RunInfo:
    """The run a wave's report belongs to (:class:`~sdc_dagster.report.inputs.RunInfo`): ``started``
    is the run's start as a POSIX timestamp, kept with the offset of this machine's local time;
    ``data_file`` the wave file as it landed and ``data_sha256`` the digest of its bytes (the
    snapshot's, as the release manifests record it); ``given_file`` the file the user gave (the run's
    :data:`DATA_FILE_TAG`; the landed file is its byte copy, so the digest is the given file's too):
    the header names it, with the landed copy beside it when its name differs; the spec digest and
    the software versions those of the release lineage (``SurveySpec.spec_hash``,
    :func:`sdc_dagster.releases.digests.package_versions`)."""
    landed = Path(data_file).name
    given = Path(given_file).name if given_file else landed
    return RunInfo(run_id=run_id, started=datetime.fromtimestamp(started).astimezone(), partition=partition,
                   data_file=given, data_sha256=data_sha256, spec_sha256=spec.spec_hash,
                   packages=package_versions(), landed_file="" if given == landed else landed)


def report_inputs(
    spec: SurveySpec,
    wave: str,
    original: pd.DataFrame,
    risk_scores: RiskScores,
    contributions: Contributions,
    evaluation: WaveEvaluation,
    variants: dict[str, ProtectedVariant],
    *,
    search: PlanSearch | None = None,
    source: Path | None = None,
    run: RunInfo | None = None,
) -> ReportInputs:
    """Gather the wave's results into the report's inputs.

    ``risk_scores`` and ``contributions``: the original wave's risk (with its unsafe combinations,
    SPEC §3.10) and contributions; ``evaluation``: the evaluation of the variants; ``variants``: the
    wave's protected variants in plan order (the spec's plans, then the searched plan), each with
    its release decision (:func:`plan_summary`), whose suppressions per key and distributions
    before and after the report shows (a plan's merged categories as its safe files code and label
    them); ``search``: the plan search the searched plan comes from (its front and figures, and
    what it would take when it recommends no plan); ``source``: the wave file, whose SPSS / Stata
    value labels (:func:`~sdc_dagster.spec.sources.value_labels`) the report shows next to the codes; ``run``: the run
    (:func:`run_info`) its header shows. The sign-off block is pre-filled with the spec's ``report:``
    names. The report lists the measure notes of the risk, contribution and loss stages."""
    plans = {name: plan_summary(variant, evaluation, _utility_or_none(original, variant, spec))
             for name, variant in variants.items()}
    keys = released_keys(spec, original).categorical
    protected = {name: variant.data for name, variant in variants.items()}
    metadata = wave_labels(source, spec) if source is not None and protected else None
    codings = {name: release_coding(original, spec, variant.plan, labels=metadata) for name, variant in variants.items()}
    for name, coding in codings.items():  # PRAM matrices name the categories as the safe files show them
        matrices = {v: coding.matrix(v, m, shown=True) for v, m in plans[name].pram_matrices.items()}
        plans[name] = replace(plans[name], pram_matrices=matrices)
    distributions, continuous = (protected_distributions(original, protected, spec, codings) if protected
                                 else ({}, []))
    contributions_global = contributions.global_
    residual = evaluation.residual
    return ReportInputs(
        survey=spec.survey,
        wave=wave,
        n_records=len(original),
        keys=spec.categorical_keys,
        risk_before={
            **residual.loc["original"].dropna().to_dict(),
            **({"records_above_threshold": risk_scores.figures["records_above_threshold"]} if keys else {}),
        },
        risk_per_record=risk_scores.table,
        # empty when the games could not be played on the wave (a measure note says why)
        contributions_global=None if contributions_global.empty else contributions_global,
        contributions_per_record=None if contributions_global.empty else {
            value: contributions.per_record.filter(like=f"{value}_").rename(columns=lambda c: c.split("_", 1)[1])
            for value in ("shapley", "solidarity")
        },
        plans=plans,
        k=spec.risk.k if spec.categorical_keys else None,
        risk_threshold=spec.risk.individual_risk_threshold if spec.categorical_keys else None,
        max_global_risk=spec.risk.max_global_risk if spec.categorical_keys else None,
        max_linkage_risk=spec.risk.max_linkage_risk if spec.continuous_keys else None,
        design=design_statement(spec),
        not_applicable=checks_not_applicable(spec),
        risk_measure=risk_measure(spec),
        loss_measure=LOSS_MEASURE,
        suppressions=suppressions_by_key(original, protected, keys) if protected else None,
        unsafe_by_variable=risk_scores.unsafe_by_variable if keys else None,
        unsafe_by_category=risk_scores.unsafe_by_category if keys else None,
        distributions=distributions,
        continuous=continuous,
        measure_notes=[*risk_scores.notes, *contributions.notes, *evaluation.loss.notes],
        search_front=search.front if search is not None else None,
        search=search.summary if search is not None else None,
        what_it_would_take=search.advice if search is not None else None,
        value_labels=(value_labels(source, default_format=spec.source.format, metadata=source_metadata(spec))
                      if source is not None else {}),
        run=run,
        sign_off=SignOff(prepared_by=spec.report.prepared_by, reviewed_by=spec.report.reviewed_by,
                         draft_decisions=spec.report.draft_decisions),
    )
