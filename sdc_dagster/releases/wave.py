"""The release record of a protected variant and its audit (SPEC §8, lineage).

:func:`record_release` writes a variant's release decision (its safe files when it passes every
blocking check, the withheld record otherwise) with the manifest that :func:`recompute_release`
replays byte for byte; :func:`release_provenance` is what the report shows of it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sdc_dagster import lineage, release_files
from sdc_dagster.pipeline.evaluation import headline_loss
from sdc_dagster.pipeline.protection import ProtectedVariant, check_records, protect
from sdc_dagster.sources import read_wave_file
from sdc_dagster.spec import Plan, SurveySpec, load_spec

# The risk figures a release record carries: name -> release check.
RISK_OF_RELEASE = {"k_violations": "k_anonymity", "global_risk": "global_risk", "linkage_risk": "linkage_risk"}


def plan_definition(plan: Plan) -> dict:
    """What a manifest records of a plan (``spec.plan`` of the manifest): steps, k, seed, description.
    :func:`recompute_release` replays a plan the spec does not name (the searched plan) from it."""
    return {"steps": list(plan.steps), "k": plan.k, "random_state": plan.random_state,
            "description": plan.description}


def release_risk(variant: ProtectedVariant) -> dict:
    """The risk figures of a variant's release record: the values of its risk checks
    (:data:`RISK_OF_RELEASE`)."""
    return {name: variant.checks[check].value for name, check in RISK_OF_RELEASE.items() if check in variant.checks}


def record_release(
    releases: Path,
    variant: ProtectedVariant,
    spec: SurveySpec,
    original: pd.DataFrame,
    *,
    run_id: str,
    input_file: Path,
    input_sha256: str,
) -> ProtectedVariant:
    """Write the release decision of ``variant`` under ``releases`` and return the variant with it.

    A variant failing a blocking check is withheld (no safe file, the withheld record names the
    checks); otherwise its safe files (:func:`~sdc_dagster.release_files.safe_files`: the
    published order and ids) are written. The manifest records the input snapshot
    (``input_file``, ``input_sha256``), the spec, the plan, the steps with their seeds, the risk
    checks' values, the headline loss against ``original`` (:func:`~sdc_dagster.pipeline.evaluation.headline_loss`),
    the check outcomes and the PRAM matrices (:func:`~sdc_dagster.lineage.write_release`)."""
    failures = variant.withheld_because
    # the published files only are shuffled and renumbered: the variant keeps the wave's order and
    # index, which residual risk and loss compare record by record
    safe = None if failures else release_files.safe_files(variant.data, spec, variant.plan, wave=variant.wave,
                                                          source=input_file, original=original)
    release = lineage.write_release(
        releases,
        survey=spec.survey,
        wave=variant.wave,
        plan=variant.name,
        run_id=run_id,
        protected=variant.data,
        files=safe.files if safe else None,
        order=safe.order if safe else None,
        categories=safe.categories if safe else None,
        input_file=input_file,
        input_sha256=input_sha256,
        spec_path=spec.spec_path,
        spec_sha256=spec.spec_hash,
        plan_definition=plan_definition(variant.plan),
        steps=variant.steps,
        risk=release_risk(variant),
        loss=headline_loss(original, variant.data, spec),
        checks=check_records(variant.checks),
        # the published PRAM matrices name the categories as the safe files code them
        matrices={v: safe.coding.matrix(v, m) for v, m in variant.matrices.items()} if safe else variant.matrices,
        withheld=failures,
    )
    return variant.recorded(release)


def release_provenance(folder: Path, manifest: dict) -> dict:
    """Where a plan's output comes from, as the report shows it: its seed, run, hashes of the spec,
    input and output, package versions, the path of its manifest (or withheld record) and the
    ``sdc audit`` command that recomputes a released output and compares it byte by byte."""
    released = "withheld" not in manifest
    record = Path(folder) / ("manifest.json" if released else "withheld.json")
    command = (f"sdc audit {manifest['wave']} --survey {manifest['survey']} --plan {manifest['plan']} "
               f"--run {manifest['run_id']}")
    return {
        "seed": manifest["spec"]["plan"].get("random_state"),
        "run_id": manifest["run_id"],
        "spec_sha256": manifest["spec"]["sha256"],
        "input_sha256": manifest["input"]["sha256"],
        "output_sha256": manifest["output"]["sha256"] if released else None,
        "packages": dict(manifest.get("packages", {})),
        "record": str(record),
        "audit_command": command if released else None,
    }


def recompute_release(input_file: Path, spec_copy: Path, manifest: dict) -> dict[str, bytes]:
    """Recompute a release's safe files (file name -> bytes, :func:`~sdc_dagster.release_files.safe_files`)
    from what its manifest records: the input snapshot, the spec text used, the wave and the plan
    (whose seed is in the spec; step seeds and the published order's seed derive from it, the
    survey, the wave and the plan name)."""
    spec = load_spec(spec_copy)
    data = read_wave_file(spec, input_file)
    recorded = manifest["spec"]["plan"]
    # the searched plan is not in the spec: it is replayed from the steps and seed its manifest records
    plan = spec.plan(manifest["plan"]) if manifest["plan"] in {p.name for p in spec.plans} else Plan(
        name=manifest["plan"], steps=tuple(recorded["steps"]), k=recorded["k"],
        random_state=recorded["random_state"], description=recorded.get("description", ""))
    protected = protect(data, spec, plan, wave=manifest["wave"]).data
    return release_files.safe_files(protected, spec, plan, wave=manifest["wave"], source=input_file,
                                    original=data).files
