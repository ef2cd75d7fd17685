"""``sdc run SURVEY WAVE [--file FILE]``: one wave materialised through the job of the UI's code
location, with a line per asset, the wave's summary and its release decision."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

from sdc_dagster.cli.home import dagster_instance, fail_abandoned_runs, prepare_environment, run_job, \
    run_process_tags, spec_catalogue, start_up_collection, unknown_survey, unsafe_names
from sdc_dagster.cli.status import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_WITHHELD
from sdc_dagster.files import storage_problem, write_atomic_with

# Dagster's log (steps, warnings, failures with their Python tracebacks) goes to the run's event log
# (see `sdc ui`), not the terminal: `sdc` prints one line per asset, each withheld variant with its
# failed checks and a failure's innermost error message itself.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def release_decision(survey_name: str, wave: str, plan: str) -> str:
    """"released" (the wave's one release), "eligible" (passes every blocking check, not the
    release) or "withheld: <failed blocking checks>" for the plan's latest decision of the wave."""
    from sdc_dagster.releases.manifest import list_decisions, read_manifest
    from sdc_dagster.releases.wave import wave_release
    from sdc_dagster.resources.storage import releases_dir

    decisions = list_decisions(releases_dir(), survey_name, wave, plan)
    if not decisions:
        return ""
    withheld = read_manifest(decisions[-1]).get("withheld")
    if withheld:
        return f"withheld: {', '.join(withheld)}"
    released = wave_release(releases_dir(), survey_name, wave)
    return "released" if released and released["plan"] == plan else "eligible"


_SUMMARY_RISK = ("global_risk", "expected_reidentifications", "k3_violations", "suppressed_values", "linkage_risk")


def wave_summary(survey_name: str, wave: str) -> str:
    """Headline figures of one materialised wave, read back from the stored Parquet outputs, with
    each plan's release decision."""
    from sdc_dagster.resources.storage import reports_dir, stored_output

    residual = stored_output([survey_name, "residual_risk"], wave)
    loss = stored_output([survey_name, "information_loss"], wave).summary
    # categorical-key figures where the spec has categorical keys, the linkage check's figure where
    # it has continuous keys (a file with continuous keys only has no k-anonymity)
    shown = [c for c in _SUMMARY_RISK if c in residual.columns]
    table = residual[shown].join(loss[[c for c in ("lambda_arctan", "topsis_mean") if c in loss.columns]], how="left")
    table["release"] = [
        "" if variant == "original" else release_decision(survey_name, wave, variant) for variant in table.index
    ]
    report = reports_dir() / survey_name / f"{wave}.html"
    return f"{table.to_string(float_format=lambda v: f'{v:.6g}')}\n   report: {report}"


# Error classes of the engine that mean "the data is wrong" when a step fails with them.
_DATA_ERRORS = ("SDCInputError", "SchemaViolation")


def data_error(error):
    """The engine's data error (:data:`_DATA_ERRORS`) along a serialised error's cause chain, or None."""
    while error is not None:
        if error.cls_name in _DATA_ERRORS:
            return error
        error = error.cause or error.context
    return None


def land_wave_file(spec, wave: str, data_file: Path) -> Path:
    """Copy ``data_file`` into the landing folder as wave ``wave`` (what the landing sensor watches),
    once it is read and validated against the spec: a rejected file never replaces the wave's
    landed file (the copy goes beside it, then is renamed over it). A file of another type already
    landed for that wave is an error."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.names import inside
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.spec.sources import file_format, read_wave_file
    from sdc_dagster.spec import FORMATS

    if not data_file.is_file():
        raise SDCInputError(f"{data_file}: no such file")
    file_format(data_file)  # an unknown file type fails here, naming it
    target = inside(landing_dir(), spec.survey, f"{wave}{data_file.suffix.lower()}")
    folder = target.parent
    others = [folder / f"{wave}{ext}" for ext in FORMATS if (folder / f"{wave}{ext}").is_file()]
    if any(other != target for other in others):
        raise SDCInputError(f"wave {wave!r} of survey {spec.survey!r}: {others[0]} is already landed; "
                            "remove it or use another wave name")
    # bad data raises here; the frame is kept for the ingest stage, which reads the landed copy
    read_wave_file(spec, data_file, source=f"{spec.survey} wave {wave} ({data_file.name})", keep=True)
    folder.mkdir(parents=True, exist_ok=True)
    if target.resolve() != data_file.resolve():
        write_atomic_with(target, lambda temporary: shutil.copyfile(data_file, temporary))
    return target


def run_wave(survey_name: str, wave: str, *, data_file: str | None = None, home: str | None = None,
             out=None, verbose: bool = False) -> int:
    """Materialise wave ``wave`` of a survey through the job of the UI's code location (recorded in
    the instance under ``DAGSTER_HOME``, so the run is in the UI's history), printing a line per
    materialised asset, then the summary of ``sdc demo`` and the report path.

    Returns :data:`EXIT_OK`, or :data:`EXIT_WITHHELD` naming the failed blocking checks (and, when
    the wave releases nothing and the spec searches, what it would take: the closest plans and the cheapest change
    of target or scenario that makes one eligible, :mod:`sdc_dagster.pipeline.relaxations`),
    :data:`EXIT_BAD_SPEC`, :data:`EXIT_BAD_DATA`, :data:`EXIT_RUN_FAILED`, :data:`EXIT_USAGE`."""
    with start_up_collection() as started:
        return _run_wave(survey_name, wave, data_file, home, out or sys.stdout, verbose, started)


def _run_wave(survey_name: str, wave: str, data_file: str | None, home: str | None, out, verbose: bool,
              started) -> int:
    """:func:`run_wave`; ``started`` ends its start-up (:func:`~sdc_dagster.cli.home.start_up_collection`)
    once the job is built."""
    prepare_environment(home)
    if unsafe_names("run", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    from dagster import BetaWarning

    warnings.filterwarnings("ignore", category=BetaWarning)
    from sdc_dagster.definitions import build_definitions
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.spec.sources import locate_wave_file
    from sdc_dagster.pipeline.report_inputs import design_statement

    specs, broken = spec_catalogue("run", out, survey_name)
    if broken:
        for error in (error for spec in broken for error in spec.error.errors):
            print(f"sdc run: bad spec: {error}", file=out)
        return EXIT_BAD_SPEC
    if survey_name not in specs:
        return unknown_survey("run", survey_name, specs, out)
    spec = specs[survey_name]
    job = build_definitions(specs=[spec], grid=False).resolve_job_def(f"{survey_name}_wave_job")
    started()
    try:
        source = land_wave_file(spec, wave, Path(data_file)) if data_file else locate_wave_file(spec, wave, landing_dir())
    except SDCInputError as exc:
        print(f"sdc run: bad data: {exc}", file=out)
        return EXIT_BAD_DATA
    with dagster_instance() as instance:
        return _materialise_wave(job, instance, spec.survey, wave, source, out,
                                 design=f"   design: {design_statement(spec)}", verbose=verbose,
                                 given=Path(data_file) if data_file else None)


def _materialise_wave(job, instance, survey_name: str, wave: str, source: Path, out, *, design: str = "",
                      verbose: bool = False, given: Path | None = None) -> int:
    """The run of :func:`run_wave` with its progress lines; the exit status. Every event of the run,
    with the stack trace of a failed step, goes to ``<data home>/logs/<survey>/<wave>/<run id>.log``;
    ``verbose`` also shows Dagster's own log lines on the console. ``given``: the file the user gave
    (``--file``), landed as ``source``: its name goes with the run as the tag
    :data:`~sdc_dagster.pipeline.report_inputs.DATA_FILE_TAG`, for the report's header."""
    from dagster import DagsterEventType
    from dagster._core.utils import make_new_run_id

    from sdc_dagster.names import inside
    from sdc_dagster.pipeline.relaxations import advice_lines
    from sdc_dagster.pipeline.report_inputs import DATA_FILE_TAG
    from sdc_dagster.releases.wave import pending_words, staged_wave_release, wave_release
    from sdc_dagster.search.wave import PROGRESS_PREFIX
    from sdc_dagster.resources.storage import releases_dir, sdc_home

    instance.add_dynamic_partitions(f"{survey_name}_waves", [wave])
    run_id = make_new_run_id()
    withheld: dict[str, dict] = {}
    advice: list[dict] = []  # the release stage's "what it would take", when the wave releases nothing
    failures: list = []
    started = time.monotonic()
    log_file = inside(sdc_home(), "logs", survey_name, wave, f"{run_id}.log")
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log = log_file.open("a", encoding="utf-8")

    def progress(entry) -> None:
        log.write(f"{entry.timestamp:.3f} {logging.getLevelName(entry.level)} {entry.step_key or '-'} "
                  f"{entry.user_message}\n")
        event = entry.dagster_event
        if event is not None and event.event_type == DagsterEventType.STEP_FAILURE:
            log.write(event.step_failure_data.error.to_string() + "\n")
        log.flush()
        if event is None:
            if entry.level == logging.INFO and entry.user_message.startswith(PROGRESS_PREFIX):
                print(f"   {time.monotonic() - started:6.1f}s  {entry.user_message}", file=out, flush=True)
            return
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            name = materialization.asset_key.to_user_string()
            reasons = materialization.metadata.get("withheld_because")
            if materialization.metadata.get("what_it_would_take") is not None:
                advice[:] = [materialization.metadata["what_it_would_take"].value]
            line = f"   {time.monotonic() - started:6.1f}s  {name}"
            if reasons is not None and reasons.value:
                withheld[name] = reasons.value
                line += "  WITHHELD: " + "; ".join(f"{check}: {why}" for check, why in reasons.value.items())
            print(line, file=out, flush=True)
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            failures.append((event.step_key, event.step_failure_data.error))
            # the report is written; its blocking check failing is the decision to release nothing
            what = ("  check wave_released: no plan released (the report says why)"
                    if _no_release(event.step_key, event.step_failure_data.error) else " FAILED")
            print(f"   {time.monotonic() - started:6.1f}s  {event.step_key}{what}", file=out, flush=True)

    instance.add_event_listener(run_id, progress)
    print(f"== {survey_name} wave {wave} ({source.name}): run {run_id} of {job.name}, "
          f"DAGSTER_HOME {os.environ['DAGSTER_HOME']}", file=out, flush=True)
    for abandoned in fail_abandoned_runs(instance):
        print(f"   run {abandoned} was killed before it finished: marked failed", file=out, flush=True)
    if (staged := staged_wave_release(releases_dir(), survey_name, wave)) is not None:
        print(f"   {pending_words(staged)}; this run decides again", file=out, flush=True)

    def logged_warning(message, category, filename, lineno, file=None, line=None) -> None:
        log.write(f"{time.time():.3f} WARNING - {category.__name__}: {message} ({filename}:{lineno})\n")

    try:
        with warnings.catch_warnings():
            if not verbose:  # a library's warning goes to the run's log: the console shows progress only
                warnings.showwarning = logged_warning
            result = run_job(job, instance, run_id=run_id, partition_key=wave,
                             run_config={} if verbose else QUIET,
                             tags={**run_process_tags(), **({DATA_FILE_TAG: given.name} if given else {})})
    finally:
        log.close()
    # the report's blocking "wave_released" check fails the run when no plan is released: that is
    # a decision (exit 3), not a failure
    decided = [(step, error) for step, error in failures if not _no_release(step, error)]
    if not result.success and decided:
        return _failed_run(decided, log_file, out)
    print(wave_summary(survey_name, wave), file=out, flush=True)
    if design:
        print(design, file=out, flush=True)
    released = wave_release(releases_dir(), survey_name, wave)
    for name, reasons in withheld.items():
        print(f"sdc run: {name} withheld, failed blocking check(s): {', '.join(reasons)}", file=out)
    if released is None:
        print(f"sdc run: nothing released for wave {wave}: no plan passes every blocking check", file=out)
        for line in (advice_lines(advice[0]) if advice else []):
            print(f"   {line}", file=out)
        return EXIT_WITHHELD
    print(f"sdc run: released plan {released['plan']} ({released['folder']})", file=out)
    lost = not_released_line(Path(released["folder"]))
    if lost:
        print(f"   {lost}", file=out)
    return EXIT_OK


def not_released_line(folder: Path) -> str:
    """What the released plan (its release ``folder``) leaves without information, from its manifest's
    ``output.keys_not_released``, in words: "not released: age, region: released as one category;
    income: withheld"; empty when every key is released (or the manifest predates the field)."""
    from sdc_dagster.releases.manifest import read_manifest
    from sdc_dagster.report.content import not_released_words

    listed = (read_manifest(folder).get("output") or {}).get("keys_not_released") or []
    words = not_released_words({entry["variable"]: entry["released_as"] for entry in listed})
    return f"not released: {words}" if words else ""


def _failed_run(decided: list, log_file: Path, out) -> int:
    """What ``sdc run`` prints of a failed run (``decided``: its failed steps with their errors, the
    report's ``wave_released`` check left out) and its exit status: :data:`EXIT_BAD_DATA` for the
    engine's data error (its message names the file, column and rule), else :data:`EXIT_RUN_FAILED`
    (a full disk named as such)."""
    data_errors = [(step, data_error(error)) for step, error in decided if data_error(error) is not None]
    step, error = (data_errors or decided)[0]
    # the engine's data error names the file, column and rule; otherwise the user code's error,
    # not Dagster's wrapper
    while not data_errors and error is not None and error.cause is not None:
        error = error.cause
    message = error.message.strip() if error is not None else "see the run in the UI (sdc ui)"
    full = next(filter(None, (storage_problem(error) for _, error in decided)), None)
    if full:
        print(f"   the run's log: {log_file}", file=out)
        print(f"sdc run: cannot write {full} in {step}; free space (or fix the permissions) and run again",
              file=out)
        return EXIT_RUN_FAILED
    if data_errors:  # the class name says nothing to the user; the message says what is wrong
        message = re.sub(rf"^[\w.]*{error.cls_name}: ", "", message)
    print(f"   the run's log, with the stack trace: {log_file}", file=out)
    print(f"sdc run: {'bad data' if data_errors else 'failed'} in {step}: {message}", file=out)
    return EXIT_BAD_DATA if data_errors else EXIT_RUN_FAILED


def _no_release(step: str, error) -> bool:
    """Whether a step failure is the report's blocking ``wave_released`` check (no plan released)."""
    return step.endswith("sdc_report") and error is not None and "wave_released" in (error.message or "")
