"""``sdc table check SPEC`` and ``sdc table run SPEC [--wave W] [--file F]``: a table spec checked, or its chain
run headless (:mod:`sdc_dagster.assets.tables`, recorded in the UI's run history); ``sdc audit
tables --survey SET`` replays a table release (:func:`run_table_audit`)."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from sdc_dagster.cli.home import (dagster_instance, prepare_environment, run_job, run_process_tags, spec_catalogue,
                                  start_up_collection, unsafe_names)
from sdc_dagster.cli.specs import print_spec_errors
from sdc_dagster.cli.status import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_WITHHELD


def _load(command: str, spec_file: str, out):
    """The table spec of ``spec_file``, or None after printing each of its problems (file, line, key)
    and the YAML line it points at, as ``sdc check`` prints a survey spec's."""
    from sdc_dagster.spec import SpecError
    from sdc_dagster.spec.tables import load_table_spec

    path = Path(spec_file)
    try:
        return load_table_spec(path)
    except SpecError as exc:
        print_spec_errors(path, exc, f"sdc table {command}", out)
        print(f"hint: fix {'that key' if len(exc.errors) == 1 else f'those {len(exc.errors)} keys'} (each message "
              "says what is expected there) and run sdc table check again", file=out)
        return None


def describe(spec) -> list[str]:
    """One line per table of a set: its dimensions, measure, rules (with the tie convention when a
    magnitude rule reads it), and which tables it is linked with."""
    from sdc_dagster.tables.primary import MAGNITUDE_RULES

    lines = []
    for name, table in spec.published.items():
        measure = (f"value {table.value}" + (f", count {table.freq}" if table.freq else "") if table.value
                   else f"counts {table.freq}" if table.freq else "counts")
        extras = [f"{k} {getattr(table, k)}" for k in ("holding", "weight", "request") if getattr(table, k)]
        rules = ", ".join(" ".join(f"{k}={v}" if k != "rule" else str(v) for k, v in r.items()) for r in table.rules)
        # the tie convention of the magnitude rules only (a frequency rule has no tie to break)
        ties = f" (ties {table.dominance_tie})" if any(r["rule"] in MAGNITUDE_RULES for r in table.rules) else ""
        group = next(g for g in spec.linked() if name in g)
        linked = f"; linked with {', '.join(g for g in group if g != name)}" if len(group) > 1 else ""
        lines.append(f"   {name}: {' x '.join(table.dimensions)}; {measure}{''.join('; ' + e for e in extras)}; "
                     f"rules {rules}{ties}{linked}")
    return lines


def run_table_check(spec_file: str, *, data_file: str | None = None, home: str | None = None, out=None) -> int:
    """Validate a table spec and its data (the business file, ``data_file``, or nothing for a survey
    source without ``data_file``: the survey's own waves are checked by ``sdc check``): the input
    schema, every hierarchy and the tabulation. Nothing is written."""
    out = out or sys.stdout
    spec = _load("check", spec_file, out)
    if spec is None:
        return EXIT_BAD_SPEC
    from sdc_dagster.pipeline.tables import input_file

    source = f"survey {spec.source.survey!r}" if spec.source.survey else str(spec.source.tau_argus or input_file(spec))
    print(f"{spec_file}: table spec {spec.name!r} is valid ({len(spec.published)} tables from {source}, "
          f"method {spec.method}, cost by {spec.cost})", file=out)
    for line in describe(spec):
        print(line, file=out)
    if spec.source.survey is not None:
        prepare_environment(home)
        surveys, _ = spec_catalogue("table check", out, spec.source.survey)
        if spec.source.survey not in surveys:
            print(f"sdc table check: source.survey names {spec.source.survey!r}, which has no spec (known: "
                  f"{', '.join(sorted(surveys)) or 'none'})", file=out)
            return EXIT_BAD_SPEC
        household = surveys[spec.source.survey].household_id
        for name, table in spec.published.items():
            if household and table.value and table.holding is None:  # the survey knows its households
                print(f"   note: {name}: each person of a household ({household}) is a contributor of its own; "
                      f"holding: {household} counts a household as one (tau-Argus manual's holdings), as a cell "
                      "of one household's members needs", file=out)
        if data_file is None:
            return EXIT_OK
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.pipeline.tables import read_table_input, table_input, tabulate_tables

    try:
        if data_file is not None and spec.source.survey is not None:
            from sdc_dagster.spec.sources import read_wave_file

            data = read_wave_file(surveys[spec.source.survey], Path(data_file))
        elif data_file is not None:
            from sdc_dagster.spec.reading import read_with_metadata

            data = read_with_metadata(Path(data_file), options=dict(spec.source.options)).data
        else:
            data = read_table_input(spec)
        made = tabulate_tables(spec, table_input(spec, data, source=str(data_file or input_file(spec))))
    except SDCInputError as exc:
        print(f"sdc table check: bad data: {exc}", file=out)
        return EXIT_BAD_DATA
    print("   data: " + ", ".join(f"{name} {len(t.cells)} cells" for name, t in made.items()), file=out)
    return EXIT_OK


def run_table(spec_file: str, *, wave: str | None = None, data_file: str | None = None, home: str | None = None,
              out=None) -> int:
    """Run the table chain of a spec headless (of wave ``wave`` of its survey), a line per step as
    it completes, then each table's suppressions and where the release and report went.

    ``data_file``: for a survey source, the wave's file, validated and copied into the landing
    folder first (as ``sdc run --file``); for a business file source, the file read instead of
    ``source.file`` (same options; the release records its snapshot, which the replay reads). A
    tau-Argus source takes no ``data_file`` (its ``.rda`` names the ``.tab``: edit the spec).

    Returns :data:`EXIT_OK`, :data:`EXIT_WITHHELD` (a release check failed: nothing released),
    :data:`EXIT_BAD_SPEC`, :data:`EXIT_BAD_DATA`, :data:`EXIT_RUN_FAILED` or :data:`EXIT_USAGE`."""
    with start_up_collection() as started:
        return _run_table(spec_file, wave, data_file, home, out or sys.stdout, started)


def _run_table(spec_file: str, wave: str | None, data_file: str | None, home: str | None, out, started) -> int:
    prepare_environment(home)
    spec = _load("run", spec_file, out)
    if spec is None:
        return EXIT_BAD_SPEC
    if spec.source.survey is not None and wave is None:
        print(f"sdc table run: {spec.name} reads survey {spec.source.survey!r}: name its wave with --wave", file=out)
        return EXIT_USAGE
    if spec.source.survey is None and wave is not None:
        print(f"sdc table run: {spec.name} reads the file {spec.source.tau_argus or spec.source.file}: it has no waves "
              "(no --wave)", file=out)
        return EXIT_USAGE
    if unsafe_names("table run", out, ("wave id", wave)):
        return EXIT_USAGE
    if data_file is not None and spec.source.tau_argus is not None:
        print(f"sdc table run: {spec.name} reads tau-Argus input {spec.source.tau_argus}: its .rda names the .tab "
              "(no --file; edit source.tau_argus)", file=out)
        return EXIT_USAGE
    if data_file is not None and spec.source.file is not None:
        path = Path(data_file).resolve()
        if not path.is_file():
            print(f"sdc table run: bad data: {data_file}: no such file", file=out)
            return EXIT_BAD_DATA
        spec = replace(spec, source=replace(spec.source, file=path))
    import warnings

    from dagster import BetaWarning

    warnings.filterwarnings("ignore", category=BetaWarning)
    from sdc_dagster.definitions import build_definitions

    surveys = []
    if spec.source.survey is not None:
        known, _ = spec_catalogue("table run", out, spec.source.survey)
        if spec.source.survey not in known:
            print(f"sdc table run: source.survey names {spec.source.survey!r}, which has no spec", file=out)
            return EXIT_BAD_SPEC
        surveys = [known[spec.source.survey]]
        if data_file is not None:
            from sdc_dagster.cli.run import land_wave_file
            from sdc_dagster.errors import SDCInputError

            try:
                land_wave_file(surveys[0], wave, Path(data_file))
            except SDCInputError as exc:
                print(f"sdc table run: bad data: {exc}", file=out)
                return EXIT_BAD_DATA
    job = build_definitions(specs=surveys, grid=False, tables=[spec]).resolve_job_def(f"{spec.name}_tables_job")
    started()
    with dagster_instance() as instance:
        if wave is not None:
            instance.add_dynamic_partitions(f"{spec.source.survey}_waves", [wave])
        return _materialise(job, instance, spec, wave, out)


def _materialise(job, instance, spec, wave: str | None, out) -> int:
    from dagster import DagsterEventType
    from dagster._core.utils import make_new_run_id

    from sdc_dagster.cli.run import QUIET, data_error

    run_id = make_new_run_id()
    started = time.monotonic()
    failures = []

    def progress(entry) -> None:
        event = entry.dagster_event
        if event is None:
            return
        at = f"   {time.monotonic() - started:6.1f}s  "
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            print(at + event.step_materialization_data.materialization.asset_key.to_user_string(), file=out, flush=True)
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            check = event.event_specific_data
            print(at + f"  check {check.check_name}: {'passed' if check.passed else 'FAILED'}", file=out, flush=True)
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            failures.append(event.step_failure_data.error)
            print(at + f"{event.step_key} FAILED", file=out, flush=True)

    instance.add_event_listener(run_id, progress)
    print(f"== tables {spec.name}" + (f" wave {wave}" if wave else "") + f": run {run_id} of {job.name}",
          file=out, flush=True)
    result = run_job(job, instance, run_id=run_id, partition_key=wave, run_config=QUIET, tags=run_process_tags())
    if not result.success:
        data_errors = [e for e in (data_error(f) for f in failures) if e is not None]
        error = data_errors[0] if data_errors else (failures[0] if failures else None)
        while not data_errors and error is not None and error.cause is not None:
            error = error.cause
        message = error.message.strip() if error is not None else "see the run in the UI (sdc ui)"
        print(f"sdc table run: {'bad data' if data_errors else 'failed'}: {message}", file=out)
        return EXIT_BAD_DATA if data_errors else EXIT_RUN_FAILED
    return EXIT_WITHHELD if print_table_summary(spec, wave, out) else EXIT_OK


def print_table_summary(spec, wave: str | None, out) -> bool:
    """Each table's distinct cells (a duplicate, a parent with a single child, counted once), primary and
    secondary suppressions, and the release (or why it is
    withheld) with the report, read from the latest release record; whether it was withheld."""
    from sdc_dagster.releases.manifest import read_manifest
    from sdc_dagster.releases.tables import FILE_WAVE, list_table_releases
    from sdc_dagster.resources.storage import releases_dir, reports_dir

    folders = list_table_releases(releases_dir(), spec.name, wave or FILE_WAVE, withheld=True)
    manifest = read_manifest(folders[-1])
    for name, figures in manifest["published"].items():
        duplicates = figures["cells"] - figures["distinct_cells"]
        cells = f"{figures['cells']} cells" if not duplicates else (
            f"{figures['distinct_cells']} distinct cells ({figures['cells']} published, {duplicates} "
            f"{'a duplicate' if duplicates == 1 else 'duplicates'} of another code's cell)")
        if "rounded" in figures:
            print(f"   {name}: {cells}, {figures['rounded']} changed by rounding to base "
                  f"{manifest['rounding']['round_base']} ({figures['primary']} unsafe under the rules)", file=out)
        elif "perturbed" in figures:
            print(f"   {name}: {cells}, {figures['perturbed']} changed by the cell key method (seed "
                  f"{manifest['cell_key']['seed']}; {figures['primary']} unsafe under the rules)", file=out)
        else:
            print(f"   {name}: {cells}, {figures['primary']} primary and {figures['secondary']} "
                  "secondary suppressions", file=out)
    report = reports_dir() / "tables" / spec.name / f"{wave or FILE_WAVE}.html"
    withheld = manifest.get("withheld")
    if withheld:
        print(f"   WITHHELD: {'; '.join(f'{c}: {why}' for c, why in withheld.items())}", file=out)
    else:
        print(f"   released: {folders[-1]}", file=out)
    if manifest.get("exchange"):
        print(f"   tau-Argus files (confidential, not released): {manifest['exchange']['folder']}", file=out)
    print(f"   report: {report}", file=out, flush=True)
    return bool(withheld)


def run_table_audit(name: str | None, *, wave: str | None = None, run: str | None = None, out=None) -> int:
    """``sdc audit tables --survey SET [--wave W] [--run R]``: the latest (or run ``run``'s) release of
    table set ``SET``, its manifest, each table file with its verdict; 0 if every file is
    byte-identical to its replay, 1 if not, 2 when there is no such release."""
    import json

    from sdc_dagster.releases.tables import audit_table_release
    from sdc_dagster.resources.storage import releases_dir

    out = out or sys.stdout
    if name is None:
        print("sdc audit tables: name the table set with --survey SET (its spec's `tables:`)", file=out)
        return EXIT_USAGE
    verification = audit_table_release(releases_dir(), name, wave=wave, run=run)
    if verification is None:
        print(f"no release of table set {name!r} under {releases_dir() / 'tables'}"
              + (f" for run {run}" if run else ""), file=out)
        return EXIT_USAGE
    manifest = verification.manifest
    print(f"== tables {name} / {manifest['wave']}: release {manifest['run_id']}", file=out)
    print(json.dumps(manifest, indent=2, sort_keys=True), file=out)
    for file, state in verification.files.items():
        print(f"  {file}: {state}", file=out)
    print(f"audit {'OK' if verification.ok else 'FAILED'}: {verification.detail}", file=out, flush=True)
    return EXIT_OK if verification.ok else EXIT_RUN_FAILED
