"""What the release report needs: plain pandas / dict fields filled by the orchestration layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd


@dataclass(frozen=True)
class MeasureNote:
    """A measure this wave does not have in full, and why.

    ``status`` "not applicable": the measure is undefined on these data (a key with one observed
    category, a variable without spread, no sensitive variable, ...) and was left out, the wave
    going on without it; "limited": it was computed under a restriction the reason states (SUDA2
    with a lowered ``max_size``). ``variant``: "original" or the plan whose variant it concerns.
    """

    measure: str
    reason: str
    variant: str = "original"
    status: str = "not applicable"


@dataclass(frozen=True)
class RunInfo:
    """The run a report belongs to, for its header: the same run gives the same header, whenever the
    report is rendered.

    ``started``: when the run started, a timezone-aware datetime in the local time of the machine
    that ran it (the header writes it in UTC and with that local offset); ``run_id``: the Dagster run
    id; ``partition``: the Dagster partition (the wave); ``data_file`` and ``data_sha256``: the name
    of the file the user gave and the SHA-256 of its bytes (the digest of its snapshot, as in the
    release lineage); ``spec_sha256``: the spec's digest as the release manifests record it;
    ``packages``: ``{package: version}``, sdc-dagster's first (:func:`sdc_dagster.releases.digests.package_versions`);
    ``landed_file``: the name of its copy in the landing folder the run read (``2024.sav`` for
    ``casc1.sav``), empty when the run read the file under its own name.
    """

    run_id: str
    started: datetime
    partition: str
    data_file: str
    data_sha256: str
    spec_sha256: str
    packages: dict[str, str] = field(default_factory=dict)
    landed_file: str = ""

    def __post_init__(self):
        if self.started.tzinfo is None:
            raise ValueError("RunInfo.started: a timezone-aware datetime is required (the run's UTC offset)")


@dataclass(frozen=True)
class SignOff:
    """The sign-off block's names, pre-filled from the spec's ``report:`` (empty: a line to sign on),
    and the draft's decisions to confirm (``report.draft_decisions``, written by ``sdc init``)."""

    prepared_by: str = ""
    reviewed_by: str = ""
    draft_decisions: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class PlanSummary:
    """One protection plan applied to the wave, with its outcome.

    Attributes
    ----------
    steps : list of dict
        The protection steps in order, e.g. ``{"method": "local_suppression", "k": 3}``;
        each dict becomes a row of the plan's step table.
    residual_risk : dict
        Risk after protection, same keys as ``ReportInputs.risk_before`` (numbers).
    loss : dict
        ``{measure name: value}``: every information-loss measure computed for the plan.
    topsis : Series
        Per-record TOPSIS information loss (SPEC §10) in [0, 1].
    checks : dict
        ``{release check name: passed}``.
    releasable : bool
        Whether the plan passes every blocking release check (a plan that does not is withheld).
    release : dict or None
        The release this plan's output was written as: ``run_id``, ``folder`` (of its manifest)
        and ``previous_release`` / ``previous_folder`` (the release it supersedes, if any);
        None when the variant was withheld.
    withheld_because : dict
        ``{blocking check name: why it failed}``; empty for a releasable plan.
    warnings : dict
        ``{non-blocking check name: why it failed}``.
    contributions : DataFrame or None
        The variables' global contributions to the risk (SPEC §6.6) before and after the plan:
        index = variables, columns ``<value>_before`` and ``<value>_after`` for each value
        (e.g. "shapley", "solidarity").
    pram_matrices : dict
        ``{variable: transition matrix}`` (rows = original category, columns = released
        category, probabilities) of each PRAM step of the plan (SPEC §8.8).
    provenance : dict
        Where the plan's output comes from: ``seed`` (the plan's random_state), ``run_id``,
        ``spec_sha256``, ``input_sha256``, ``output_sha256`` (None when withheld), ``packages``
        (``{name: version}``), ``record`` (path of the manifest or withheld record) and
        ``audit_command`` (the ``sdc audit`` command that replays the release).
    utility : DataFrame or None
        The plan's per-variable utility figures against the spec's limits, one row each: columns
        ``measure`` ("suppressed", "records changed", "mean", "variance", "correlation"),
        ``variable``, ``before``, ``after``, ``change`` (a share suppressed or of records changed,
        a signed relative change of a mean or variance, r* - r of a correlation), ``limit`` and
        ``used`` (|change| / limit; above 1 the limit is exceeded)
        (:func:`sdc_dagster.pipeline.protection.utility_changes`).
    keys_not_released : dict
        ``{variable: how}`` of the variables the plan leaves without information: "withheld",
        "one category", "every value suppressed" (:func:`sdc_dagster.releases.manifest.keys_not_released`).
    """

    steps: list[dict]
    residual_risk: dict
    loss: dict
    topsis: pd.Series
    checks: dict
    releasable: bool
    release: dict | None = None
    withheld_because: dict = field(default_factory=dict)
    warnings: dict = field(default_factory=dict)
    contributions: pd.DataFrame | None = None
    pram_matrices: dict[str, pd.DataFrame] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    utility: pd.DataFrame | None = None
    keys_not_released: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ReportInputs:
    """Everything shown in the release report of one survey wave.

    Attributes
    ----------
    survey, wave : str
        Names shown in the title.
    n_records : int
        Records in the wave.
    keys : list of str
        The categorical key variables.
    risk_before : dict
        Risk of the unprotected wave, ``{measure name: number}``; recommended names
        ``global_risk``, ``expected_reidentifications``, ``k2_violations``, ``k3_violations``,
        ``k5_violations`` and, with households, ``household_risk`` and
        ``household_expected_reidentifications``. Any other numeric entries are shown too.
    risk_per_record : DataFrame
        Columns ``fk`` and ``risk`` (optionally ``combined_risk``), one row per record.
    contributions_global : DataFrame or None
        Index = variables, columns ``shapley`` and ``solidarity``.
    contributions_per_record : dict or None
        ``{value name: DataFrame records x variables}`` (e.g. "shapley", "solidarity").
    plans : dict
        ``{plan name: PlanSummary}``.
    risk_measure : str
        Entry of ``risk_before`` / ``residual_risk`` used as the x axis of the risk-utility map.
    loss_measure : str
        Entry of ``PlanSummary.loss`` used as the information loss (y axis of the map, and the
        utility the recommendation maximises: utility = 1 - loss); default the distance measure
        with arctan distances (SPEC §9.1 eq (1), (6)), in [0, 1] and comparable across plans.
    k : int or None
        The k of k-anonymity the spec asks for; ``risk_threshold``: the individual-risk threshold;
        ``max_global_risk``: the global-risk target; ``max_linkage_risk``: the record-linkage
        target of a spec with continuous keys (each None when unknown or not applicable).
    not_applicable : dict
        ``{release check: why it does not apply to this spec}`` (e.g. k-anonymity without
        categorical keys), stated in the decision section.
    design : str
        Which weight and household id the risk used, or that there was none
        (:func:`sdc_dagster.pipeline.report_inputs.design_statement`), stated in the decision section.
    suppressions : DataFrame or None
        Values suppressed by each plan: index = key variables, columns = plans (counts).
    unsafe_by_variable, unsafe_by_category : DataFrame or None
        The unsafe combinations of the unprotected wave (SPEC §3.10; the two tables of
        :func:`~sdc_dagster.risk.unsafe_combinations`).
    distributions : dict
        ``{variable: {"original": Series, <plan>: Series}}``: the values of each protected
        variable before and after each plan (a plan that does not release it is left out).
    continuous : list of str
        The variables of ``distributions`` drawn as continuous (histograms and quantiles); the
        others are drawn as categories.
    measure_notes : list of MeasureNote
        The measures left out as not applicable or computed with a limit, with the reason.
    value_labels : dict
        ``{variable: {code: label}}``: the value labels of the SPSS / Stata source
        (:func:`sdc_dagster.spec.sources.value_labels`), shown next to the codes ("4 (Burgenland)");
        display only, empty for a file without labels.
    search_front : DataFrame or None
        The front of a plan search: one row per searched candidate on it, columns ``global_risk``
        and ``loss`` (fractions, the loss by ``loss_measure``), drawn as a step line on the
        risk-utility map; None without a search.
    search : dict or None
        The plan search in figures (:func:`sdc_dagster.search.outcome.search_summary`: nodes evaluated,
        bound, seconds, the recommended plan and the runner-up with their loss, the loss a stricter
        target would cost); None without a search.
    what_it_would_take : dict or None
        When the plan search recommends no plan, what it would take
        (:meth:`sdc_dagster.pipeline.relaxations.WhatItWouldTake.record`: the closest plans with their
        binding checks, the cheapest changes of target or scenario that make a plan eligible); None
        otherwise.
    run : RunInfo or None
        The run the report belongs to (date and time, data file and digest, versions, spec digest,
        run id), shown in the header; None outside a run (the header says so).
    sign_off : SignOff
        The names the sign-off block is pre-filled with.
    """

    survey: str
    wave: str
    n_records: int
    keys: list[str]
    risk_before: dict
    risk_per_record: pd.DataFrame
    contributions_global: pd.DataFrame | None
    contributions_per_record: dict[str, pd.DataFrame] | None
    plans: dict[str, PlanSummary] = field(default_factory=dict)
    risk_measure: str = "global_risk"
    loss_measure: str = "lambda_arctan"
    k: int | None = None
    risk_threshold: float | None = None
    max_global_risk: float | None = None
    max_linkage_risk: float | None = None
    not_applicable: dict[str, str] = field(default_factory=dict)
    design: str = ""
    suppressions: pd.DataFrame | None = None
    unsafe_by_variable: pd.DataFrame | None = None
    unsafe_by_category: pd.DataFrame | None = None
    distributions: dict[str, dict[str, pd.Series]] = field(default_factory=dict)
    continuous: list[str] = field(default_factory=list)
    measure_notes: list[MeasureNote] = field(default_factory=list)
    value_labels: dict[str, dict] = field(default_factory=dict)
    search_front: pd.DataFrame | None = None
    search: dict | None = None
    what_it_would_take: dict | None = None
    run: RunInfo | None = None
    sign_off: SignOff = field(default_factory=SignOff)
