"""``sdc init SURVEY --from FILE`` drafts a survey spec; ``sdc check SPEC [--data FILE]`` validates
a spec, and a data file against it, without running anything."""

from __future__ import annotations

import sys
from pathlib import Path

from sdc_dagster.cli.home import prepare_environment, unsafe_names
from sdc_dagster.cli.status import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_OK, EXIT_USAGE
from sdc_dagster.files import write_atomic

def reader_options(*, sep: str | None = None, encoding: str | None = None, decimal: str | None = None,
                   header: bool | None = None, sheet: str | None = None) -> dict:
    """The reader options given on the command line (``--sep ';' --encoding cp1252 --decimal ,
    --no-header --sheet NAME``) as ``source.options``: ``\\t`` or ``tab`` is a tab; a sheet given
    by digits is its number counted from 0."""
    given = {"sep": "\t" if sep in ("\\t", "tab") else sep, "encoding": encoding, "decimal": decimal,
             "header": header, "sheet": int(sheet) if sheet is not None and sheet.isdigit() else sheet}
    return {key: value for key, value in given.items() if value is not None}


#: The formats (:data:`~sdc_dagster.spec.FORMATS`' values) whose reader takes each command-line reader
#: option, and the option's flag: pyreadstat's readers take an encoding, not a separator.
OPTION_FORMATS = {
    "sep": ("--sep", ("csv",)),
    "decimal": ("--decimal", ("csv",)),
    "header": ("--no-header", ("csv", "spreadsheet")),
    "sheet": ("--sheet", ("spreadsheet",)),
    "encoding": ("--encoding", ("csv", "spss", "stata", "sas", "xport", "argus")),
}


def options_problem(data_file: str | Path, options: dict | None) -> str:
    """Why reader ``options`` given on the command line do not apply to ``data_file`` ("wage.sav is
    read as spss: --sep applies to csv files only"), from the format it is read as
    (:func:`~sdc_dagster.spec.reading.describe_format`, its bytes before its name); "" when they
    apply, or when the file cannot be told (its reading then says why)."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.spec.reading import describe_format

    if not options:
        return ""
    try:
        fmt, _ = describe_format(Path(data_file))
    except SDCInputError:
        return ""
    wrong = [OPTION_FORMATS[key] for key in options if key in OPTION_FORMATS and fmt not in OPTION_FORMATS[key][1]]
    if not wrong:
        return ""
    return (f"{Path(data_file).name} is read as {fmt}: "
            + "; ".join(f"{flag} applies to {' and '.join(formats)} files only" for flag, formats in wrong))


def run_init(survey_name: str, data_file: str, *, spec_file: str | None = None, home: str | None = None,
             out=None, options: dict | None = None, max_keys: int | None = None) -> int:
    """Draft the spec of survey ``survey_name`` from ``data_file`` (:func:`sdc_dagster.spec.draft.draft_spec`)
    into ``spec_file`` (default ``<data home>/specs/<survey>.yaml``), with at most ``max_keys``
    categorical keys (default :data:`~sdc_dagster.spec.roles.MAX_CATEGORICAL_KEYS`); an existing file
    is never overwritten. ``options``: reader options given on the command line (:func:`reader_options`)."""
    out = out or sys.stdout
    prepare_environment(home)
    if unsafe_names("init", out, ("survey name", survey_name)):
        return EXIT_USAGE
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.names import inside
    from sdc_dagster.resources.storage import bundled_examples, user_specs_dir
    from sdc_dagster.spec import SpecError, load_spec, load_specs
    from sdc_dagster.spec.draft import draft_spec

    target = Path(spec_file) if spec_file else inside(user_specs_dir(), f"{survey_name}.yaml")
    if target.exists():
        print(f"sdc init: {target} exists; not overwritten (edit it, or delete it to draft again)", file=out)
        return EXIT_USAGE
    if survey_name in {s.survey for s in load_specs(bundled_examples())}:
        print(f"sdc init: {survey_name!r} is the name of a bundled demo survey; choose another name", file=out)
        return EXIT_USAGE
    if problem := options_problem(data_file, options):
        print(f"sdc init: {problem}", file=out)
        return EXIT_USAGE
    try:
        text = draft_spec(data_file, survey_name, options=options,
                          **({"max_keys": max_keys} if max_keys is not None else {}))
    except SDCInputError as exc:
        print(f"sdc init: {exc}", file=out)
        return EXIT_BAD_DATA
    try:
        write_atomic(target, text, exclusive=True)  # never overwrite, even a spec created meanwhile
    except FileExistsError:
        print(f"sdc init: {target} exists; not overwritten (edit it, or delete it to draft again)", file=out)
        return EXIT_USAGE
    try:
        spec = load_spec(target)
    except SpecError as exc:
        print(f"wrote {target}, but it needs an edit before sdc check accepts it: {exc}", file=out)
        return EXIT_BAD_SPEC
    roles = ", ".join(f"{len(spec.names(role))} {role}" for role in
                      ("categorical_key", "continuous_key", "sensitive", "direct_identifier") if spec.names(role))
    print(f"wrote {target}: {len(spec.variables)} variables ({roles}); every role is a guess with its reason.", file=out)
    if spec.report.draft_decisions:  # what the draft decided for the file to be releasable (report.draft_decisions)
        print(f"{len(spec.report.draft_decisions)} draft decision(s) to confirm (listed under report.draft_decisions "
              "and in the report's sign-off):", file=out)
        for decision in spec.report.draft_decisions:
            print(f"  - {decision}", file=out)
    print(f"Edit it, then: sdc check {target} --data {data_file}\n"
          f"          and: sdc run {survey_name} WAVE --file {data_file}", file=out)
    return EXIT_OK


def print_spec_errors(path: Path, exc, command: str, out) -> None:
    """Each problem of a spec's :class:`SpecError` after ``command:``, with the YAML line it points at."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for error in exc.errors:
        print(f"{command}: {error}", file=out)
        shown = _spec_line(path, lines, str(error))
        if shown:
            print(shown, file=out)


def _spec_line(spec_file: Path, lines: list[str], message: str) -> str:
    """The YAML line (of ``lines``, the spec's text) a :class:`SpecError` message points at
    (``file.yaml:12: ...``), numbered."""
    prefix = f"{spec_file.name}:"
    if not message.startswith(prefix):
        return ""
    number = message[len(prefix):].split(":", 1)[0]
    if not number.isdigit() or not 0 < int(number) <= len(lines):
        return ""
    return f"   {number} | {lines[int(number) - 1]}"


def run_check(spec_file: str, *, data_file: str | None = None, out=None, options: dict | None = None) -> int:
    """Validate a spec and, given ``data_file``, the data against it (the schema of ``raw_microdata``),
    read with the spec's ``source.options`` overridden by ``options`` (the command line's, see
    :func:`reader_options`); nothing is run or written. Every independent error of the spec (in YAML line order), or else of
    the data, is printed on its own line: the file, the line and key, and what was expected; or the
    column, the rule and the first offending rows."""
    out = out or sys.stdout
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.spec.schemas import SchemaViolation
    from sdc_dagster.spec.sources import read_wave_file
    from sdc_dagster.spec import SpecError, load_spec

    path = Path(spec_file)
    try:
        spec = load_spec(path)
    except SpecError as exc:
        print_spec_errors(path, exc, "sdc check", out)
        keys = "that key (the message says" if len(exc.errors) == 1 else f"those {len(exc.errors)} keys (each message says"
        print(f"hint: fix {keys} what is expected there) and run sdc check again; "
              "`sdc init NAME --from FILE` drafts a valid spec to compare with", file=out)
        return EXIT_BAD_SPEC
    plans = ", ".join(p.name for p in spec.plans)
    print(f"{path}: spec of survey {spec.survey!r} is valid ({len(spec.variables)} variables, "
          f"{len(spec.categorical_keys)} categorical keys, {len(spec.continuous_keys)} continuous keys, "
          f"plans: {plans})", file=out)
    if data_file is None:
        return EXIT_OK
    if problem := options_problem(data_file, options):
        print(f"sdc check: {problem}", file=out)
        return EXIT_USAGE
    try:
        data = read_wave_file(spec, Path(data_file), options=options)
    except SchemaViolation as exc:
        for problem in exc.problems:
            print(f"sdc check: {exc.source}: {problem}", file=out)
        return EXIT_BAD_DATA
    except SDCInputError as exc:
        print(f"sdc check: {exc}", file=out)
        return EXIT_BAD_DATA
    from sdc_dagster.search.space import hierarchy_problems

    problems = hierarchy_problems(data, spec)
    for problem in problems:
        print(f"sdc check: {data_file}: {problem}", file=out)
    if problems:
        return EXIT_BAD_DATA
    print(f"{data_file}: {len(data)} records match the spec", file=out)
    return EXIT_OK
