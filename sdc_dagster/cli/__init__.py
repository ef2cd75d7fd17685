"""The ``sdc`` command: draft, check and run a survey without the UI, or start the UI.

``sdc init SURVEY --from FILE``  drafts a commented survey spec from a data file into
              ``<data home>/specs/SURVEY.yaml`` (never overwriting one); ``--sep``, ``--encoding``,
              ``--decimal``, ``--no-header``, ``--sheet`` say how the file is written instead of
              detecting it.
``sdc check SPEC [--data FILE]`` validates a spec (and a data file against it, the same options
              overriding the spec's ``source.options``) without running anything.
``sdc run SURVEY WAVE [--file FILE]`` materialises one wave through the code location of the UI.
``sdc demo``  puts the bundled demo waves into the landing folder, registers them as partitions and
              materialises every asset (with its checks) in-process, then prints a summary.
``sdc ui``    starts the Dagster UI and daemon (``dagster dev``) on this code location.
``sdc audit WAVE [--plan P]`` prints a release manifest and recomputes the release to prove that it
              is byte-identical.
``sdc audit tables --survey SET [--run R]`` replays the latest release of a table set.
``sdc table check SPEC [--data FILE]`` validates a table spec (and its data) without running anything.
``sdc table run SPEC [--wave W] [--file FILE]`` runs a table spec's chain (tabulate, protect, audit, release) headless.
``sdc plan SURVEY WAVE [--write]`` searches the protection plans of a wave and prints the front.
``sdc promote SURVEY WAVE PLAN`` makes another eligible plan the wave's one release.
``sdc report SURVEY WAVE [--pdf]`` lists a wave's report files (HTML, JSON, the survey's index)
              and, with ``--pdf``, prints the HTML report to PDF with headless Chromium.

One module per command or pair of commands (``specs``: init, check; ``run``; ``demo``; ``plans``;
``releases``: audit, promote, report; ``tables``: table check, run and audit; ``ui``); ``home`` prepares the data home and the Dagster
instance every command uses. Exit status: the ``EXIT_*`` constants of :mod:`sdc_dagster.cli.status`.
"""

from __future__ import annotations

import argparse
import os
import sys

from sdc_dagster.cli.demo import run_demo
from sdc_dagster.cli.plans import run_plan
from sdc_dagster.cli.releases import run_audit, run_promote, run_report
from sdc_dagster.cli.run import run_wave
from sdc_dagster.cli.specs import reader_options, run_check, run_init
from sdc_dagster.cli.tables import run_table, run_table_audit, run_table_check
from sdc_dagster.cli.allocator import tune_allocator
from sdc_dagster.cli.status import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_WITHHELD
from sdc_dagster.cli.ui import run_ui
from sdc_dagster.files import storage_problem


def main(argv: list[str] | None = None) -> int:
    """``sdc``: the commands below. A disk that refuses a write anywhere (the data home, the
    Dagster instance) ends in one line naming the path and the cause, exit 1; every file is written
    atomically (:mod:`sdc_dagster.files`), so nothing half-written stays behind."""
    try:
        return _main(argv)
    except Exception as exc:
        problem = storage_problem(exc)
        if problem is None:
            raise
        print(f"sdc: cannot write {problem}; free space (or fix the permissions) and run the command again",
              file=sys.stdout, flush=True)
        return EXIT_RUN_FAILED


def command() -> None:
    """The ``sdc`` console script and ``python -m sdc_dagster.cli``: :func:`main`, then the process
    ends with its status as soon as the exit handlers have run (``atexit``: the shared DuckDB
    database closed, logs flushed), without interpreter finalisation. Worker threads of the C++
    libraries (DuckDB, Arrow, HiGHS) torn down during finalisation can race it: under load a
    finished ``sdc run`` whose release was filed aborted with "terminate called without an active
    exception" (exit -6; CI, cascref.parquet), and the office's scheduler would have seen a failed
    run. An exception out of :func:`main` ends the usual way (traceback, exit 1). The process's
    memory allocator is tuned for the chain's large arrays first (:mod:`sdc_dagster.cli.allocator`)."""
    import atexit

    tune_allocator()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(int(code or 0))


def _reader_arguments(parser: argparse.ArgumentParser, how: str) -> None:
    """The options that say how a data file is written (the CSV dialect, a workbook's sheet)."""
    group = parser.add_argument_group(f"how the data file is written ({how})")
    group.add_argument("--sep", help="CSV separator: , ; | or tab")
    group.add_argument("--encoding", help="CSV encoding, e.g. utf-8, utf-8-sig, cp1252, latin-1")
    group.add_argument("--decimal", help="decimal mark of the CSV's numbers: . or ,")
    header = group.add_mutually_exclusive_group()
    header.add_argument("--no-header", dest="header", action="store_false", default=None,
                        help="the first row is data (columns V1..Vn)")
    header.add_argument("--header", dest="header", action="store_true", help="the first row names the columns")
    group.add_argument("--sheet", help="the workbook's sheet, by name or by its number counted from 0")


def _given_reader_options(args: argparse.Namespace) -> dict:
    return reader_options(sep=args.sep, encoding=args.encoding, decimal=args.decimal, header=args.header,
                          sheet=args.sheet)


def _positive_int(text: str) -> int:
    """An argument that must be a whole number of at least 1 (argparse reports anything else)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _main(argv: list[str] | None) -> int:
    return _dispatch(_parser().parse_args(argv))


def _parser() -> argparse.ArgumentParser:
    """The ``sdc`` command line: one sub-command per task, its exit statuses in the epilog."""
    parser = argparse.ArgumentParser(
        prog="sdc", description="Statistical disclosure control pipeline (Dagster).",
        epilog=f"exit status: {EXIT_OK} success, {EXIT_RUN_FAILED} run failed, {EXIT_USAGE} usage, "
               f"{EXIT_WITHHELD} a blocking release check failed, {EXIT_BAD_SPEC} bad spec, {EXIT_BAD_DATA} bad data",
    )
    parser.add_argument("--home", help="data home (default: $SDC_HOME, else ./.sdc_home if it exists, else the "
                                       "per-user data folder)")
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="draft a survey spec from a data file (.csv .sav .zsav .dta .sas7bdat .xpt "
                                       ".parquet .xlsx .xls .ods, Argus .asc with its .rda)")
    init.add_argument("survey")
    init.add_argument("--from", dest="data_file", required=True, metavar="FILE")
    init.add_argument("--spec", help="where to write it (default: <data home>/specs/SURVEY.yaml)")
    _reader_arguments(init, "instead of detecting it")
    init.add_argument("--max-keys", type=_positive_int, default=None, metavar="N",
                      help="draft at most N categorical keys (default 8: MAX_CATEGORICAL_KEYS of "
                           "sdc_dagster.spec.roles)")
    check = sub.add_parser("check", help="validate a spec, and a data file against it, without running anything")
    check.add_argument("spec")
    check.add_argument("--data", metavar="FILE")
    _reader_arguments(check, "instead of the spec's source.options")
    run = sub.add_parser("run", help="materialise one wave of one survey (recorded in the UI's run history)")
    run.add_argument("survey")
    run.add_argument("wave")
    run.add_argument("--file", metavar="FILE", help="the wave's data file (copied into the landing folder)")
    run.add_argument("--verbose", action="store_true", help="also print Dagster's log lines (stack traces included)")
    sub.add_parser("demo", help="materialise every asset for the bundled demo waves and print a summary")
    ui = sub.add_parser("ui", help="start the Dagster UI on this code location")
    ui.add_argument("--port", type=int, default=3000)
    audit = sub.add_parser("audit", help="print a release manifest and verify it by recomputing the output")
    audit.add_argument("wave", help="the wave; `grid` for the census grid, `tables` for a table set (--survey SET)")
    audit.add_argument("--plan", help="one protection plan (default: every plan of the wave)")
    audit.add_argument("--survey", help="the survey (needed when several surveys have this wave)")
    audit.add_argument("--run", help="a release's run id (default: the latest release)")
    table = sub.add_parser("table", help="check or run a table spec (protected tables of a survey wave or a file)")
    table_sub = table.add_subparsers(dest="table_command", required=True)
    table_check = table_sub.add_parser("check", help="validate a table spec, and its data, without running anything")
    table_check.add_argument("spec")
    table_check.add_argument("--data", metavar="FILE", help="a data file to check (default: the spec's business file)")
    table_run = table_sub.add_parser("run", help="tabulate, protect, audit and release the tables of a spec")
    table_run.add_argument("spec")
    table_run.add_argument("--wave", help="the survey wave (a spec reading a survey)")
    table_run.add_argument("--file", metavar="FILE", help="the data file: the wave's (copied into the landing folder, "
                                                          "as sdc run --file) or the business file instead of the spec's")
    plan = sub.add_parser("plan", help="search the protection plans of a wave and print the front (risk vs loss)")
    plan.add_argument("survey")
    plan.add_argument("wave")
    plan.add_argument("--file", metavar="FILE", help="the wave's data file (default: the landed file of the wave)")
    plan.add_argument("--write", action="store_true", help="append the front's plans to the spec as named plans")
    promote = sub.add_parser("promote", help="make another eligible plan the wave's one release")
    promote.add_argument("survey")
    promote.add_argument("wave")
    promote.add_argument("plan")
    report = sub.add_parser("report", help="a wave's report files (HTML, JSON, index); --pdf also prints the PDF")
    report.add_argument("survey")
    report.add_argument("wave")
    report.add_argument("--pdf", action="store_true", help="print the report to <wave>.pdf with headless Chromium")
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    """Run the sub-command ``args.command`` with its arguments; its exit status."""
    if args.command == "init":
        return run_init(args.survey, args.data_file, spec_file=args.spec, home=args.home,
                        options=_given_reader_options(args), max_keys=args.max_keys)
    if args.command == "check":
        return run_check(args.spec, data_file=args.data, options=_given_reader_options(args))
    if args.command == "run":
        return run_wave(args.survey, args.wave, data_file=args.file, home=args.home, verbose=args.verbose)
    if args.command == "demo":
        return run_demo(args.home)
    if args.command == "table":
        if args.table_command == "check":
            return run_table_check(args.spec, data_file=args.data, home=args.home)
        return run_table(args.spec, wave=args.wave, data_file=args.file, home=args.home)
    if args.command == "audit" and args.wave == "tables":
        from sdc_dagster.cli.home import prepare_environment

        prepare_environment(args.home)
        return run_table_audit(args.survey, run=args.run)
    if args.command == "audit":
        return run_audit(args.wave, plan=args.plan, survey_name=args.survey, run=args.run, home=args.home)
    if args.command == "plan":
        return run_plan(args.survey, args.wave, data_file=args.file, write=args.write, home=args.home)
    if args.command == "promote":
        return run_promote(args.survey, args.wave, args.plan, home=args.home)
    if args.command == "report":
        return run_report(args.survey, args.wave, pdf=args.pdf, home=args.home)
    return run_ui(args.home, args.port)
