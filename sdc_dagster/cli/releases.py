"""The releases of a wave: ``sdc audit`` recomputes and verifies them, ``sdc promote`` changes the
wave's one release, ``sdc report`` lists (and prints) its report."""

from __future__ import annotations

import sys
from pathlib import Path

from sdc_dagster.cli.home import known_surveys, prepare_environment, unknown_survey, unsafe_names
from sdc_dagster.cli.status import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE


def run_audit(wave: str, *, plan: str | None = None, survey_name: str | None = None, run: str | None = None,
              home: str | None = None, out=None) -> int:
    """Print the manifest of each release of ``wave`` (latest, or run ``run``) and verify it by
    recomputing its safe files, each listed with its verdict; exit status 0 only if every file of
    every release is byte-identical and no choice of the release stage waits for its report (a run
    killed between its release stage and its report, :func:`~sdc_dagster.releases.wave.staged_wave_release`:
    named, with how to finish it). A plan without a release (withheld) is named with its reasons;
    it makes the exit status :data:`EXIT_USAGE` only when it was asked for (``plan`` or ``run``) or
    the wave has no release at all."""
    import json

    out = out or sys.stdout
    prepare_environment(home)
    if unsafe_names("audit", out, ("wave id", wave), ("plan name", plan), ("survey name", survey_name)):
        return EXIT_USAGE
    if wave == "grid":  # the census grid release (sdc_dagster.releases.grid)
        return _audit_grid(run, out)
    from sdc_dagster.resources.storage import releases_dir
    from sdc_dagster.releases import manifest
    from sdc_dagster.releases.replay import recompute_release, verify_release
    from sdc_dagster.releases.wave import pending_words, staged_wave_release
    from sdc_dagster.releases.wave import wave_release as release_of_wave
    from sdc_dagster.spec.sources import file_sha256

    root = releases_dir()
    if survey_name is not None and survey_name not in (known := known_surveys(root)):
        return unknown_survey("audit", survey_name, known, out)
    candidates = [survey_name] if survey_name else sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    surveys = [s for s in candidates if (root / s / wave).is_dir()]
    if not surveys:
        print(f"no release of wave {wave!r} under {root}", file=out)
        return 2
    if len(surveys) > 1:
        print(f"wave {wave!r} exists in several surveys ({', '.join(surveys)}): name one with --survey", file=out)
        return 2
    folder = root / surveys[0] / wave
    plans = [plan] if plan else sorted(p.name for p in folder.iterdir() if p.is_dir())
    wave_release = release_of_wave(root, surveys[0], wave)
    status = 0
    staged = staged_wave_release(root, surveys[0], wave)
    if staged is not None:
        print(f"wave {wave} of {surveys[0]}: {pending_words(staged)}; finish it: sdc run {surveys[0]} {wave}",
              file=out)
        status = 1
    for name in plans:
        releases = manifest.list_releases(root, surveys[0], wave, name)
        if run:
            releases = [r for r in releases if r.name == run]
        if not releases:
            decisions = manifest.list_decisions(root, surveys[0], wave, name)
            withheld = manifest.read_manifest(decisions[-1]).get("withheld") if decisions and not run else None
            because = f": withheld by {', '.join(f'{c} ({why})' for c, why in withheld.items())}" if withheld else ""
            print(f"no release of plan {name!r} for wave {wave!r}" + (f" with run {run}" if run else "") + because,
                  file=out)
            # a plan named on the command line, or a wave without any release, has nothing to audit: a
            # usage error; a withheld alternative beside the wave's releases is said, not an audit failure
            if plan or run or not any(manifest.list_releases(root, surveys[0], wave, p) for p in plans):
                status = status or EXIT_USAGE
            continue
        verification = verify_release(releases[-1], recompute_release)
        role = "the wave's release" if wave_release and wave_release["folder"] == str(releases[-1]) \
            else "eligible alternative"
        print(f"== {surveys[0]} / {wave} / {name}: release {releases[-1].name} ({role})", file=out)
        print(json.dumps(verification.manifest, indent=2, sort_keys=True), file=out)
        for file, state in verification.files.items():
            print(f"  {file}: {state}", file=out)
        report_ok = True
        if role == "the wave's release" and "report" in wave_release:
            report = Path(wave_release["report"]["file"])
            report_ok = report.is_file() and file_sha256(report) == wave_release["report"]["sha256"]
            print(f"  report {report}: {'ok' if report_ok else 'is missing or differs from the hash in release.json'}",
                  file=out)
        verdict = "OK" if verification.ok and report_ok else "FAILED"
        print(f"audit {verdict}: {verification.detail}", file=out, flush=True)
        status = status or (0 if verification.ok and report_ok else 1)
    return status


def _audit_grid(run: str | None, out) -> int:
    """``sdc audit grid``: the latest (or run ``run``'s) grid release, its manifest, each table file
    with its verdict; 0 if every file is byte-identical to its recomputation."""
    import json

    from sdc_dagster.releases.replay import audit_grid_release
    from sdc_dagster.resources.storage import releases_dir

    verification = audit_grid_release(releases_dir(), run=run)
    if verification is None:
        print(f"no grid release under {releases_dir() / 'grid'}" + (f" for run {run}" if run else ""), file=out)
        return 2
    print(f"== census grid: release {verification.manifest['run_id']}", file=out)
    print(json.dumps(verification.manifest, indent=2, sort_keys=True), file=out)
    for file, state in verification.files.items():
        print(f"  {file}: {state}", file=out)
    print(f"audit {'OK' if verification.ok else 'FAILED'}: {verification.detail}", file=out, flush=True)
    return 0 if verification.ok else 1


def run_promote(survey_name: str, wave: str, plan: str, *, home: str | None = None, out=None) -> int:
    """Make ``plan``'s latest eligible variant the wave's one release in place of the
    recommendation (:func:`sdc_dagster.releases.wave.publish_wave_release`); :data:`EXIT_USAGE` for an
    unsafe name, an unknown survey or wave, or a plan that is withheld or never materialised."""
    out = out or sys.stdout
    prepare_environment(home)
    if unsafe_names("promote", out, ("survey name", survey_name), ("wave id", wave), ("plan name", plan)):
        return EXIT_USAGE
    from sdc_dagster.releases.wave import publish_wave_release, wave_release
    from sdc_dagster.resources.storage import releases_dir

    root = releases_dir()
    if survey_name not in (known := known_surveys(root)):
        return unknown_survey("promote", survey_name, known, out)
    if not (root / survey_name / wave).is_dir():
        print(f"sdc promote: no materialised wave {wave!r} of survey {survey_name!r} under {root}", file=out)
        return EXIT_USAGE
    before = wave_release(root, survey_name, wave)
    try:
        record = publish_wave_release(root, survey_name, wave, plan, reason="promoted with sdc promote")
    except ValueError as exc:
        print(f"sdc promote: {exc}", file=out)
        return EXIT_USAGE
    was = f" (was {before['plan']})" if before and before["plan"] != plan else ""
    print(f"sdc promote: wave {wave} of {survey_name} now releases plan {plan}{was}: {record['folder']}", file=out)
    return EXIT_OK


def run_report(survey_name: str, wave: str, *, pdf: bool = False, home: str | None = None, out=None) -> int:
    """List the report files of a wave (:func:`sdc_dagster.report.export_report`), printing the PDF
    with ``pdf``; :data:`EXIT_USAGE` for an unsafe name, an unknown survey or a wave without report,
    :data:`EXIT_RUN_FAILED` (one line naming what to install) when no browser can print the PDF."""
    out = out or sys.stdout
    prepare_environment(home)
    if unsafe_names("report", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.names import inside
    from sdc_dagster.report import export_report
    from sdc_dagster.resources.storage import reports_dir

    if survey_name not in (known := known_surveys(reports_dir())):
        return unknown_survey("report", survey_name, known, out)
    try:
        paths = export_report(inside(reports_dir(), survey_name), wave, pdf=pdf)
    except SDCInputError as error:
        print(f"sdc report: {error}", file=out)
        return EXIT_USAGE
    except RuntimeError as error:  # the PDF: no browser to print with (BrowserNotFound), or it failed
        print(f"sdc report: {error}", file=out)
        return EXIT_RUN_FAILED
    print("\n".join(f"{kind}: {path}" for kind, path in paths.items()), file=out)
    return EXIT_OK
