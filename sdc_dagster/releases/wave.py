"""The releases of a wave (SPEC §8): each plan's release decision and the wave's one release.

:func:`release_wave` is the release stage: it receives the wave's protected variants and their
evaluation, writes each plan's decision (:func:`record_release`: its safe files when it passes every
blocking check, the withheld record otherwise, with the manifest that
:func:`~sdc_dagster.releases.replay.recompute_release` replays byte for byte) and publishes the
wave's one *release*, the eligible variant named by ``<releases>/<survey>/<wave>/release.json``:
the plan the report's decision rule recommends, or later the plan a methodologist promotes (``sdc
promote``, :func:`publish_wave_release`). The stage's choice is staged (``release.staged.json``,
:func:`stage_wave_release`) and becomes the wave's release only when the report that explains it,
written next, is filed (:func:`file_report`): a run killed in between leaves the previous release
current and its own choice staged, never a release without its report. The other eligible variants
stay as alternatives. When the wave releases nothing, the stage asks the plan search what it would
take (:func:`~sdc_dagster.pipeline.relaxations.what_it_would_take`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from sdc_dagster.files import write_atomic
from sdc_dagster.names import inside
from sdc_dagster.pipeline import relaxations
from sdc_dagster.pipeline.evaluation import PlanLoss
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.pipeline.protection import ProtectedVariant, check_records
from sdc_dagster.pipeline.report_inputs import WaveEvaluation, recommended_plan
from sdc_dagster.search.outcome import PlanSearch
from sdc_dagster.releases.digests import WaveSnapshot
from sdc_dagster.releases.files import safe_files
from sdc_dagster.releases.manifest import MANIFEST, Release, ReleaseRecord, list_decisions, write_release
from sdc_dagster.report import Recommendation
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec import Plan, SurveySpec

WAVE_RELEASE = "release.json"
# the release stage's choice, until the report that explains it is filed (stage_wave_release)
STAGED_RELEASE = "release.staged.json"

# The risk figures a release record carries: name -> release check.
RISK_OF_RELEASE = {"k_violations": "k_anonymity", "global_risk": "global_risk", "linkage_risk": "linkage_risk"}


def plan_definition(plan: Plan) -> dict:
    """What a manifest records of a plan (``spec.plan`` of the manifest): steps, k, seed, description.
    :func:`~sdc_dagster.releases.replay.recompute_release` replays a plan the spec does not name (the
    searched plan) from it."""
    return {"steps": list(plan.steps), "k": plan.k, "random_state": plan.random_state,
            "description": plan.description}


def release_risk(variant: ProtectedVariant) -> dict:
    """The risk figures of a variant's release record: the values of its risk checks
    (:data:`RISK_OF_RELEASE`)."""
    return {name: variant.checks[check].value for name, check in RISK_OF_RELEASE.items() if check in variant.checks}


def record_release(releases: Path, variant: ProtectedVariant, spec: SurveySpec, original: pd.DataFrame, *,
                   run_id: str, source: WaveSnapshot, loss: PlanLoss) -> ProtectedVariant:
    """Write the release decision of ``variant`` under ``releases`` and return the variant with it.

    A variant failing a blocking check is withheld (no safe file, the withheld record names the
    checks); otherwise its safe files (:func:`~sdc_dagster.releases.files.safe_files`: the
    published order and ids, against ``original``) are written. The manifest records the input
    snapshot (``source``, the raw wave as ``raw_microdata`` read it), the spec, the plan, the steps
    with their seeds, the risk checks' values, the headline loss the evaluation computed (``loss``,
    its :attr:`~sdc_dagster.pipeline.evaluation.PlanLoss.headline`:
    :func:`~sdc_dagster.pipeline.evaluation.headline_loss`), the check outcomes and the PRAM
    matrices (:func:`~sdc_dagster.releases.manifest.write_release`)."""
    failures = variant.withheld_because
    # the published files only are shuffled and renumbered: the variant keeps the wave's order and
    # index, which residual risk and loss compare record by record
    safe = None if failures else safe_files(variant.data, spec, variant.plan, wave=variant.wave,
                                            source=source.snapshot, original=original)
    release = write_release(releases, ReleaseRecord(
        survey=spec.survey,
        wave=variant.wave,
        plan=variant.name,
        run_id=run_id,
        protected=variant.data,
        source=source,
        spec_path=spec.spec_path,
        spec_sha256=spec.spec_hash,
        plan_definition=plan_definition(variant.plan),
        steps=variant.steps,
        risk=release_risk(variant),
        loss=loss.headline,
        checks=check_records(variant.checks),
        safe=safe,
        # the published PRAM matrices name the categories as the safe files code them
        matrices={v: safe.coding.matrix(v, m) for v, m in variant.matrices.items()} if safe else variant.matrices,
        withheld=failures,
    ))
    return variant.recorded(release)


def _eligible_record(releases: Path, survey: str, wave: str, plan: str, reason: str) -> dict:
    """The wave's release record of the latest decision of ``plan`` (plan, run id, run folder, why);
    ValueError when that decision is withheld or missing."""
    decisions = list_decisions(releases, survey, wave, plan)
    if not decisions or not (decisions[-1] / MANIFEST).is_file():
        state = "withheld" if decisions else "never materialised"
        raise ValueError(f"plan {plan!r} of wave {wave!r} is {state}: only an eligible plan (every blocking "
                         "check passed) can be the wave's release")
    folder = decisions[-1]
    return {"survey": survey, "wave": wave, "plan": plan, "run_id": folder.name, "folder": str(folder),
            "reason": reason}


def _write_record(target: Path, record: dict) -> None:
    write_atomic(target, json.dumps(record, indent=2, sort_keys=True).encode())


def publish_wave_release(releases: Path, survey: str, wave: str, plan: str | None, *, reason: str) -> dict | None:
    """Make the latest eligible variant of ``plan`` the wave's one release (``release.json`` in the
    wave's folder: plan, run id, run folder, why, and the wave's report with its SHA-256 as the
    current record names it: ``sdc promote`` keeps the wave's report); ``plan=None`` withdraws the
    wave's release. Raises ValueError when the plan's latest decision is withheld or missing, or
    when a decision of the release stage still waits for its report (:func:`staged_wave_release`:
    the run that made it did not finish, so the plans' latest decisions are not the ones the wave's
    report explains)."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    if plan is None:
        target.unlink(missing_ok=True)
        return None
    if (staged := staged_wave_release(releases, survey, wave)) is not None:
        raise ValueError(f"wave {wave!r}: {pending_words(staged)}; run the wave again (sdc run) before "
                         "choosing its release")
    record = _eligible_record(releases, survey, wave, plan, reason)
    if (before := wave_release(releases, survey, wave)) and "report" in before:
        record["report"] = before["report"]
    _write_record(target, record)
    return record


def stage_wave_release(releases: Path, survey: str, wave: str, plan: str | None, *, reason: str,
                       run_id: str) -> dict | None:
    """The release stage's choice for the wave, staged (``release.staged.json`` in the wave's
    folder) until the report that explains it is filed (:func:`file_report`): ``plan``'s latest
    eligible variant (the record :func:`publish_wave_release` would write, without a report), or
    ``plan=None``, no plan eligible. The wave's release (``release.json``) is left as it is: a run
    killed before its report leaves the previous release, with its own report, current, and the
    staged record says which run did not finish (``sdc audit`` names it). Returns the staged record,
    None for ``plan=None``."""
    record = (_eligible_record(releases, survey, wave, plan, reason) if plan is not None
              else {"survey": survey, "wave": wave, "plan": None, "reason": reason})
    _write_record(inside(releases, survey, wave) / STAGED_RELEASE, {**record, "run_id": run_id})
    return record if plan is not None else None


def wave_release(releases: Path, survey: str, wave: str) -> dict | None:
    """The wave's release record written by :func:`file_report` or :func:`publish_wave_release`, or None."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    return json.loads(target.read_text()) if target.is_file() else None


def staged_wave_release(releases: Path, survey: str, wave: str) -> dict | None:
    """The release stage's choice still waiting for its report (:func:`stage_wave_release`), or None:
    after a finished run there is none."""
    target = inside(releases, survey, wave) / STAGED_RELEASE
    staged = json.loads(target.read_text()) if target.is_file() else None
    current = wave_release(releases, survey, wave)
    if staged is not None and current is not None and "report" in current and \
            (current["run_id"], current["plan"]) == (staged["run_id"], staged["plan"]):
        return None  # filed: the run was killed between writing release.json and removing the staged record
    return staged


def pending_words(staged: dict) -> str:
    """A staged choice in words: which run made it and what is missing."""
    chosen = f"plan {staged['plan']}" if staged["plan"] is not None else "no plan"
    return (f"run {staged['run_id']} chose {chosen} but never filed the report that explains it (the run did not "
            "finish): that choice is not released")


def file_report(releases: Path, survey: str, wave: str, write: Callable[[], Path], *, run_id: str) -> dict | None:
    """Write the wave's report (``write()``, which returns its file) explaining the decisions of the
    release stage of run ``run_id``, and file it: the choice that stage staged
    (:func:`stage_wave_release`) becomes the wave's release (``release.json``, with the report's
    SHA-256; its staged record removed) or, when it chose no plan, the wave's release is withdrawn;
    a report written again for the current release (no staged choice) is recorded in it. Returns
    the wave's release record, None when the wave has none.

    A report that cannot be written withdraws the wave's release (and the staged choice), and the
    error propagates: a wave is never released without the report that explains its decision
    (issue 25). A choice staged by another run (two runs of one wave at once) raises RuntimeError
    before the report is written."""
    folder = inside(releases, survey, wave)
    staged = staged_wave_release(releases, survey, wave)
    if staged is not None and staged["run_id"] != run_id:
        raise RuntimeError(f"wave {wave!r}: the report explains run {run_id}'s release decisions, but the choice "
                           f"waiting for its report is run {staged['run_id']}'s; run the wave again")
    try:
        report = write()
    except BaseException:
        publish_wave_release(releases, survey, wave, None, reason="the report could not be written")
        (folder / STAGED_RELEASE).unlink(missing_ok=True)
        raise
    record = wave_release(releases, survey, wave) if staged is None else staged
    if record is None or record["plan"] is None:
        (folder / WAVE_RELEASE).unlink(missing_ok=True)
        (folder / STAGED_RELEASE).unlink(missing_ok=True)
        return None
    record = {**record, "report": {"file": str(report), "sha256": file_sha256(report)}}
    _write_record(folder / WAVE_RELEASE, record)
    (folder / STAGED_RELEASE).unlink(missing_ok=True)  # after release.json: a kill in between is a finished filing
    return record


@dataclass(frozen=True)
class WaveRelease:
    """The release stage's result of a wave (:func:`release_wave`): ``decisions``, plan -> the
    decision written for its variant (:class:`~sdc_dagster.releases.manifest.Release`: an eligible
    release or the withheld record), in plan order; ``recommendation``, the plan the report's
    decision rule chose and why; ``released``, the wave's release record as staged
    (:func:`stage_wave_release`: ``release.json`` once the report is filed, :func:`file_report`),
    None when no plan is eligible; ``run_id``, the run of the stage, whose report files it;
    ``search``, the plan search with what it would take when the wave releases nothing
    (:attr:`~sdc_dagster.search.outcome.PlanSearch.advice`), None when the spec does not search."""

    decisions: dict[str, Release]
    recommendation: Recommendation
    released: dict | None
    run_id: str
    search: PlanSearch | None = None

    @property
    def advice(self) -> dict | None:
        """What it would take to release a plan, when the wave releases nothing and the spec searches."""
        return self.search.advice if self.search is not None else None

    def recorded(self, variants: dict[str, ProtectedVariant]) -> dict[str, ProtectedVariant]:
        """``variants`` each with the decision written for it."""
        return {name: variant.recorded(self.decisions[name]) for name, variant in variants.items()}

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python: one row per plan
        (``eligible``, ``released``, the run folder of its decision)."""
        released = self.released["plan"] if self.released else None
        return {"": pd.DataFrame(
            {"eligible": [d.published for d in self.decisions.values()],
             "released": [name == released for name in self.decisions],
             "folder": [str(d.folder) for d in self.decisions.values()]},
            index=pd.Index(list(self.decisions), name="plan"))}


def release_wave(releases: Path, spec: SurveySpec, wave: str, raw: RawWave, variants: dict[str, ProtectedVariant],
                 evaluation: WaveEvaluation, *, run_id: str, search: PlanSearch | None = None,
                 note: Callable[[str], None] | None = None) -> WaveRelease:
    """The release stage of wave ``wave`` (SPEC §8): write the release decision of every plan's variant
    under ``releases`` (:func:`record_release`, against the wave as ``raw_microdata`` read it, with the
    headline loss ``evaluation`` computed for it: a plan without one raises ValueError before any
    decision is written), then
    stage the plan the report's decision rule recommends from ``evaluation``
    (:func:`~sdc_dagster.pipeline.report_inputs.recommended_plan`) as the wave's one release, or no
    plan when none is eligible (:func:`stage_wave_release`; the report files it). Then,
    and only then, with a plan ``search``: what it would take to release one
    (:func:`~sdc_dagster.pipeline.relaxations.what_it_would_take`, ``note`` called with a line per
    relaxed search)."""
    losses = {name: evaluation.loss.plan(name) for name in variants}
    unevaluated = [name for name, loss in losses.items() if not loss.headline]
    if unevaluated:  # before any decision is written
        raise ValueError(f"wave {wave}: plan(s) {', '.join(unevaluated)} have no information loss in the evaluation; "
                         "the release stage records the loss the evaluation computed")
    decisions = {name: record_release(releases, variant, spec, raw.data, run_id=run_id, source=raw.source,
                                      loss=losses[name]).release
                 for name, variant in variants.items()}
    chosen = recommended_plan(spec, evaluation, variants)
    released = stage_wave_release(releases, spec.survey, wave, chosen.plan, run_id=run_id,
                                  reason="recommended by the report's decision rule" if chosen.plan
                                  else "no plan passes every blocking check")
    if released is None and search is not None and search.found is not None:
        advice = relaxations.what_it_would_take(raw.data, spec, search.found, wave=wave, note=note)
        search = replace(search, advice=advice.record() if advice is not None else None)
    if search is not None:  # the finished search stays with the plan search's own value
        search = replace(search, found=None)
    return WaveRelease(decisions=decisions, recommendation=chosen, released=released, run_id=run_id, search=search)
