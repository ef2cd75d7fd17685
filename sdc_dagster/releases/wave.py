"""The releases of a wave (SPEC §8): each plan's release decision and the wave's one release.

:func:`record_release` writes a variant's release decision (its safe files when it passes every
blocking check, the withheld record otherwise) with the manifest that
:func:`~sdc_dagster.releases.replay.recompute_release` replays byte for byte. A wave has one
*release*, the eligible variant named by ``<releases>/<survey>/<wave>/release.json``
(:func:`publish_wave_release`): the report's recommendation when the wave's report is written, or
the plan a methodologist promotes (``sdc promote``). The other eligible variants stay as alternatives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from sdc_dagster.files import write_atomic
from sdc_dagster.names import inside
from sdc_dagster.pipeline.evaluation import headline_loss
from sdc_dagster.pipeline.protection import ProtectedVariant, check_records
from sdc_dagster.releases.digests import WaveSnapshot
from sdc_dagster.releases.files import safe_files
from sdc_dagster.releases.manifest import MANIFEST, ReleaseRecord, list_decisions, write_release
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec import Plan, SurveySpec

WAVE_RELEASE = "release.json"

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
                   run_id: str, source: WaveSnapshot) -> ProtectedVariant:
    """Write the release decision of ``variant`` under ``releases`` and return the variant with it.

    A variant failing a blocking check is withheld (no safe file, the withheld record names the
    checks); otherwise its safe files (:func:`~sdc_dagster.releases.files.safe_files`: the
    published order and ids) are written. The manifest records the input snapshot (``source``, the
    raw wave as ``raw_microdata`` read it), the spec, the plan, the steps with their seeds, the risk
    checks' values, the headline loss against ``original`` (:func:`~sdc_dagster.pipeline.evaluation.headline_loss`),
    the check outcomes and the PRAM matrices (:func:`~sdc_dagster.releases.manifest.write_release`)."""
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
        loss=headline_loss(original, variant.data, spec),
        checks=check_records(variant.checks),
        safe=safe,
        # the published PRAM matrices name the categories as the safe files code them
        matrices={v: safe.coding.matrix(v, m) for v, m in variant.matrices.items()} if safe else variant.matrices,
        withheld=failures,
    ))
    return variant.recorded(release)


def publish_wave_release(releases: Path, survey: str, wave: str, plan: str | None, *, reason: str,
                         report: Path | None = None) -> dict | None:
    """Make the latest eligible variant of ``plan`` the wave's one release (``release.json`` in the
    wave's folder: plan, run id, run folder, why, and the wave's report with its SHA-256, ``report``
    or else the one the previous record names); ``plan=None`` withdraws the wave's release (no
    plan is eligible). Raises ValueError when the plan's latest decision is withheld or missing."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    if plan is None:
        target.unlink(missing_ok=True)
        return None
    decisions = list_decisions(releases, survey, wave, plan)
    if not decisions or not (decisions[-1] / MANIFEST).is_file():
        state = "withheld" if decisions else "never materialised"
        raise ValueError(f"plan {plan!r} of wave {wave!r} is {state}: only an eligible plan (every blocking "
                         "check passed) can be the wave's release")
    folder = decisions[-1]
    record = {"survey": survey, "wave": wave, "plan": plan, "run_id": folder.name,
              "folder": str(folder), "reason": reason}
    if report is not None:
        record["report"] = {"file": str(report), "sha256": file_sha256(report)}
    elif (before := wave_release(releases, survey, wave)) and "report" in before:
        record["report"] = before["report"]
    write_atomic(target, json.dumps(record, indent=2, sort_keys=True).encode())
    return record


def wave_release(releases: Path, survey: str, wave: str) -> dict | None:
    """The wave's release record written by :func:`publish_wave_release`, or None."""
    target = inside(releases, survey, wave) / WAVE_RELEASE
    return json.loads(target.read_text()) if target.is_file() else None
