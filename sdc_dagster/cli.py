"""The ``sdc`` command: draft, check and run a survey without the UI, or start the UI.

``sdc init SURVEY --from FILE``  drafts a commented survey spec from a data file into
              ``<data home>/specs/SURVEY.yaml`` (never overwriting one).
``sdc check SPEC [--data FILE]`` validates a spec (and a data file against it) without running anything.
``sdc run SURVEY WAVE [--file FILE]`` materialises one wave through the code location of the UI.
``sdc demo``  puts the bundled demo waves into the landing folder, registers them as partitions and
              materialises every asset (with its checks) in-process, then prints a summary.
``sdc ui``    starts the Dagster UI and daemon (``dagster dev``) on this code location.
``sdc audit WAVE [--plan P]`` prints a release manifest and recomputes the release to prove that it
              is byte-identical.
``sdc report SURVEY WAVE [--pdf]`` lists a wave's report files (HTML, JSON, the survey's index)
              and, with ``--pdf``, prints the HTML report to PDF with headless Chromium.

Exit status (``sdc run``, ``sdc check``, ``sdc init``): see the ``EXIT_*`` constants.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from sdc_dagster.files import atomic_path, process_alive, storage_problem, sweep_temporary_files, write_atomic, \
    write_atomic_with

import yaml

# Dagster's log (steps, warnings, failures with their Python tracebacks) goes to the run's event log
# (see `sdc ui`), not the terminal: `sdc` prints one line per asset, each withheld variant with its
# failed checks and a failure's innermost error message itself.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

EXIT_OK = 0
#: A step of the run failed for a reason other than the spec or the data (the message says which).
EXIT_RUN_FAILED = 1
#: Wrong command line: unknown survey, a spec that exists already (argparse uses 2 too).
EXIT_USAGE = 2
#: The run completed but a blocking release check failed: that variant is withheld.
EXIT_WITHHELD = 3
#: The survey spec is wrong (the message names the file, the line and the key).
EXIT_BAD_SPEC = 4
#: The data file is wrong or unreadable (the message names the column, the rule and the rows).
EXIT_BAD_DATA = 5

# `sdc` prints each spec it skips itself (sdc_dagster.definitions logs them for the UI's code location).
logging.getLogger("sdc_dagster.definitions").addHandler(logging.NullHandler())

#: Settings of the Dagster instance ``sdc`` creates: no telemetry, no community sign-up modal.
INSTANCE_DEFAULTS = {"telemetry": {"enabled": False}, "nux": {"enabled": False}}


def _instance_settings(dagster_home: Path) -> None:
    """Write :data:`INSTANCE_DEFAULTS` into ``dagster.yaml``, keeping every setting already there."""
    config_file = dagster_home / "dagster.yaml"
    config = (yaml.safe_load(config_file.read_text()) if config_file.exists() else None) or {}
    missing = {key: value for key, value in INSTANCE_DEFAULTS.items() if key not in config}
    if missing:
        write_atomic(config_file, yaml.safe_dump({**config, **missing}, sort_keys=False))


def _dagster_instance():
    """``DagsterInstance.get()`` for ``DAGSTER_HOME``, created under an exclusive file lock there.

    Creating the instance creates Dagster's SQLite tables on a new home; two ``sdc`` processes
    starting at once (two waves run side by side) would both create them, and one fails with
    "table runs already exists". The lock serialises that step only; the runs go on in parallel.
    (Where ``fcntl`` does not exist, Windows, there is no lock.)
    """
    from dagster import DagsterInstance

    try:
        import fcntl
    except ImportError:
        return DagsterInstance.get()
    with open(Path(os.environ["DAGSTER_HOME"]) / ".sdc-instance.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return DagsterInstance.get()


def _prepare_environment(home: str | None) -> Path:
    """Set ``SDC_HOME`` (resolved, so child processes agree) and ``DAGSTER_HOME`` (default: under
    it, with :data:`INSTANCE_DEFAULTS`), and return the data home."""
    if home:
        os.environ["SDC_HOME"] = str(Path(home).resolve())
    from sdc_dagster.resources.storage import sdc_home

    root = sdc_home()
    os.environ["SDC_HOME"] = str(root)
    os.environ.setdefault("DAGSTER_HOME", str(root / "dagster"))
    dagster_home = Path(os.environ["DAGSTER_HOME"])
    dagster_home.mkdir(parents=True, exist_ok=True)
    _instance_settings(dagster_home)
    sweep_temporary_files(root)  # half-written files of killed sdc processes
    return root


def _unsafe_names(command: str, out, *names: tuple[str, str | None]) -> bool:
    """Print the rule broken by each name given on the command line (``(kind, value)``, kinds of
    :data:`sdc_dagster.names.RULES`; None: not given) that is not a safe name; whether there was one."""
    from sdc_dagster.names import name_problem

    problems = [name_problem(kind, value) for kind, value in names if value is not None]
    for problem in filter(None, problems):
        print(f"sdc {command}: {problem}", file=out)
    return any(problems)


def _survey_specs(command: str, out, survey_name: str | None = None):
    """The specs that load (survey -> spec) and the broken spec files meant for ``survey_name``
    (:func:`sdc_dagster.spec.scan_specs`); every other broken spec file is skipped with one warning line."""
    from sdc_dagster.resources.storage import spec_folders
    from sdc_dagster.spec import scan_specs

    specs, broken = scan_specs(spec_folders())
    known = {spec.survey: spec for spec in specs}
    claimed = [b for b in broken if survey_name in b.surveys and survey_name not in known]
    for spec in broken:
        if spec not in claimed:
            print(f"sdc {command}: warning: skipped the survey spec {spec.summary()}", file=out, flush=True)
    return known, claimed


def _unknown_survey(command: str, survey_name: str, known, out) -> int:
    """Say that survey ``survey_name`` is unknown, listing ``known``; :data:`EXIT_USAGE`."""
    print(f"sdc {command}: no survey {survey_name!r}; known: {', '.join(sorted(known)) or 'none'} "
          "(draft one with: sdc init NAME --from FILE)", file=out)
    return EXIT_USAGE


def _known_surveys(outputs: Path) -> set[str]:
    """The surveys of the specs that load and of the folders in ``outputs`` (reports or releases of a
    survey whose spec is gone)."""
    from sdc_dagster.resources.storage import spec_folders
    from sdc_dagster.spec import scan_specs

    folders = {p.name for p in outputs.iterdir() if p.is_dir()} if outputs.is_dir() else set()
    return {spec.survey for spec in scan_specs(spec_folders())[0]} | folders


def prepare_demo_waves() -> dict[str, list[str]]:
    """Write the demo waves into the landing folder: survey -> wave names.

    testdata: sdcMicro's testdata as wave ``2024``; simulation: two waves ``w1`` and ``w2`` drawn
    from seed 000's simulation design (SPEC §5.7) with seeds 1 and 2.
    """
    from sdc_dagster.resources.storage import bundled_examples, landing_dir
    from sdc_dagster.simulation import simulate_survey

    landing = landing_dir()
    (landing / "testdata").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundled_examples() / "data" / "testdata.csv", landing / "testdata" / "2024.csv")
    (landing / "simulation").mkdir(parents=True, exist_ok=True)
    for seed, wave in ((1, "w1"), (2, "w2")):
        target = landing / "simulation" / f"{wave}.csv"
        if not target.exists():
            simulate_survey(500, random_state=seed).to_csv(target, index=False)
    return {"testdata": ["2024"], "simulation": ["w1", "w2"]}


def release_decision(survey_name: str, wave: str, plan: str) -> str:
    """"released" (the wave's one release), "eligible" (passes every blocking check, not the
    release) or "withheld: <failed blocking checks>" for the plan's latest decision of the wave."""
    from sdc_dagster.resources.storage import releases_dir
    from sdc_dagster import lineage

    decisions = lineage.list_decisions(releases_dir(), survey_name, wave, plan)
    if not decisions:
        return ""
    withheld = lineage.read_manifest(decisions[-1]).get("withheld")
    if withheld:
        return f"withheld: {', '.join(withheld)}"
    released = lineage.wave_release(releases_dir(), survey_name, wave)
    return "released" if released and released["plan"] == plan else "eligible"


_SUMMARY_RISK = ("global_risk", "expected_reidentifications", "k3_violations", "suppressed_values", "linkage_risk")


def wave_summary(survey_name: str, wave: str) -> str:
    """Headline figures of one materialised wave, read back from the stored Parquet outputs, with
    each plan's release decision."""
    from sdc_dagster.resources.storage import reports_dir, stored_output

    residual = stored_output([survey_name, "residual_risk"], wave)
    loss = stored_output([survey_name, "information_loss"], wave)["summary"]
    # categorical-key figures where the spec has categorical keys, the linkage check's figure where
    # it has continuous keys (a file with continuous keys only has no k-anonymity)
    shown = [c for c in _SUMMARY_RISK if c in residual.columns]
    table = residual[shown].join(loss[[c for c in ("lambda_arctan", "topsis_mean") if c in loss.columns]], how="left")
    table["release"] = [
        "" if variant == "original" else release_decision(survey_name, wave, variant) for variant in table.index
    ]
    report = reports_dir() / survey_name / f"{wave}.html"
    return f"{table.to_string(float_format=lambda v: f'{v:.6g}')}\n   report: {report}"


def run_demo(home: str | None = None, *, out=None) -> int:
    """Materialise every survey asset for the demo waves and print what came out."""
    out = out or sys.stdout
    root = _prepare_environment(home)
    import warnings

    from dagster import BetaWarning

    warnings.filterwarnings("ignore", category=BetaWarning)

    from sdc_dagster.definitions import build_definitions

    waves = prepare_demo_waves()
    defs = build_definitions(specs=list(_survey_specs("demo", out)[0].values()))
    instance = _dagster_instance()
    print(f"SDC home: {root}", file=out)
    failures = 0
    for survey_name, wave_keys in waves.items():
        instance.add_dynamic_partitions(f"{survey_name}_waves", wave_keys)
        job = defs.resolve_job_def(f"{survey_name}_wave_job")
        for wave in wave_keys:
            print(f"\n== {survey_name} wave {wave}: materialising {job.name} ...", file=out, flush=True)
            result = job.execute_in_process(partition_key=wave, instance=instance, raise_on_error=False,
                                            run_config=QUIET, tags=_run_process_tags())
            if not result.success:
                failures += 1
                print(f"   FAILED (see the run in the UI: sdc ui)", file=out)
                continue
            print(wave_summary(survey_name, wave), file=out, flush=True)
    failures += run_grid_demo(defs, instance, out)
    return 1 if failures else 0


def run_grid_demo(defs, instance, out) -> int:
    """Generate the demo census and run the grid chain (regions, national swap, routes); failures."""
    from sdc_dagster.pipeline.grid import prepare_demo_census
    from sdc_dagster.resources.storage import sdc_home

    regions = prepare_demo_census(sdc_home())
    instance.add_dynamic_partitions("grid_regions", regions)
    print("\n== census grid: validate regions, swap nationally, tabulate and protect each region ...", file=out,
          flush=True)
    outcome = run_grid_chain(defs, instance, regions, run_config=QUIET)
    if outcome.get("swap"):
        from dagster import AssetKey

        metadata = instance.get_latest_materialization_event(AssetKey("census_swapped")).asset_materialization.metadata
        print(
            f"   {metadata['swapped_households'].value} of {metadata['households'].value} households swapped "
            f"({metadata['risky_households'].value} at risk)",
            file=out,
        )
    for region in regions:
        if outcome.get(f"grid:{region}"):
            print(f"   region {region}:", grid_summary(region).strip(), file=out, flush=True)
    return sum(not ok for ok in outcome.values())


def run_grid_chain(defs, instance, regions, *, region_job: str = "grid_region_job",
                   run_config: dict | None = None) -> dict[str, bool]:
    """Run the grid jobs of ``defs`` in process: validate every region, swap nationally, then each
    region's ``region_job`` (the routes of the grid spec), then the release.

    ``run_config``: one config for every job of the chain (each job gets the ops it has and the rest,
    e.g. loggers, as given). Returns the success of every run, keyed ``census:<region>``, ``swap``,
    ``grid:<region>`` and ``release`` (the manifest and report, when everything before succeeded).
    """
    config = run_config or {}

    def run(job_name: str, partition_key: str | None = None) -> bool:
        job = defs.resolve_job_def(job_name)
        ops = {k: v for k, v in config.get("ops", {}).items() if k in job.graph.node_dict}
        own = {**{k: v for k, v in config.items() if k != "ops"}, "ops": ops}
        return job.execute_in_process(partition_key=partition_key, instance=instance, raise_on_error=False,
                                      run_config=own).success

    outcome = {f"census:{region}": run("census_region_job", region) for region in regions}
    outcome["swap"] = run("census_swap_job")
    if not outcome["swap"]:
        return outcome
    outcome.update({f"grid:{region}": run(region_job, region) for region in regions})
    if all(outcome.values()):
        outcome["release"] = run("grid_release_job")
    return outcome


def grid_summary(region: str) -> str:
    """Suppression figures of one grid region, read back from the stored outputs."""
    from sdc_dagster.resources.storage import stored_output

    suppressed = stored_output(["grid_suppressed"], region)
    hidden = int(suppressed.drop(columns="total").select_dtypes("number").isna().sum().sum())
    return f"   {len(suppressed)} cells, {int(suppressed['total'].sum())} residents, {hidden} category counts suppressed"


def run_audit(wave: str, *, plan: str | None = None, survey_name: str | None = None, run: str | None = None,
              home: str | None = None, out=None) -> int:
    """Print the manifest of each release of ``wave`` (latest, or run ``run``) and verify it by
    recomputing its safe files, each listed with its verdict; exit status 0 only if every file of
    every release is byte-identical."""
    import json

    out = out or sys.stdout
    _prepare_environment(home)
    if _unsafe_names("audit", out, ("wave id", wave), ("plan name", plan), ("survey name", survey_name)):
        return EXIT_USAGE
    if wave == "grid":  # the census grid release (sdc_dagster.pipeline.grid_release)
        return _audit_grid(run, out)
    from sdc_dagster.resources.storage import releases_dir
    from sdc_dagster import lineage
    from sdc_dagster.pipeline.audit import recompute_release
    from sdc_dagster.sources import file_sha256

    root = releases_dir()
    if survey_name is not None and survey_name not in (known := _known_surveys(root)):
        return _unknown_survey("audit", survey_name, known, out)
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
    wave_release = lineage.wave_release(root, surveys[0], wave)
    status = 0
    for name in plans:
        releases = lineage.list_releases(root, surveys[0], wave, name)
        if run:
            releases = [r for r in releases if r.name == run]
        if not releases:
            decisions = lineage.list_decisions(root, surveys[0], wave, name)
            withheld = lineage.read_manifest(decisions[-1]).get("withheld") if decisions and not run else None
            because = f": withheld by {', '.join(f'{c} ({why})' for c, why in withheld.items())}" if withheld else ""
            print(f"no release of plan {name!r} for wave {wave!r}" + (f" with run {run}" if run else "") + because,
                  file=out)
            status = 2
            continue
        verification = lineage.verify_release(releases[-1], recompute_release)
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

    from sdc_dagster.pipeline.grid_release import audit_grid_release
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


def run_init(survey_name: str, data_file: str, *, spec_file: str | None = None, home: str | None = None,
             out=None) -> int:
    """Draft the spec of survey ``survey_name`` from ``data_file`` (:func:`sdc_dagster.spec.draft.draft_spec`)
    into ``spec_file`` (default ``<data home>/specs/<survey>.yaml``); an existing file is never overwritten."""
    out = out or sys.stdout
    _prepare_environment(home)
    if _unsafe_names("init", out, ("survey name", survey_name)):
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
    try:
        text = draft_spec(data_file, survey_name)
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
    print(f"wrote {target}: {len(spec.variables)} variables ({roles}); every role is a guess with its reason.\n"
          f"Edit it, then: sdc check {target} --data {data_file}\n"
          f"          and: sdc run {survey_name} WAVE --file {data_file}", file=out)
    return EXIT_OK


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


def run_check(spec_file: str, *, data_file: str | None = None, out=None) -> int:
    """Validate a spec and, given ``data_file``, the data against it (the schema of ``raw_microdata``);
    nothing is run or written. Every independent error of the spec (in YAML line order), or else of
    the data, is printed on its own line: the file, the line and key, and what was expected; or the
    column, the rule and the first offending rows."""
    out = out or sys.stdout
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.schemas import SchemaViolation
    from sdc_dagster.sources import read_wave_file
    from sdc_dagster.spec import SpecError, load_spec

    path = Path(spec_file)
    try:
        spec = load_spec(path)
    except SpecError as exc:
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for error in exc.errors:
            print(f"sdc check: {error}", file=out)
            shown = _spec_line(path, lines, str(error))
            if shown:
                print(shown, file=out)
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
    try:
        data = read_wave_file(spec, Path(data_file))
    except SchemaViolation as exc:
        for problem in exc.problems:
            print(f"sdc check: {exc.source}: {problem}", file=out)
        return EXIT_BAD_DATA
    except SDCInputError as exc:
        print(f"sdc check: {exc}", file=out)
        return EXIT_BAD_DATA
    print(f"{data_file}: {len(data)} records match the spec", file=out)
    return EXIT_OK


# Error classes of the engine that mean "the data is wrong" when a step fails with them.
_DATA_ERRORS = ("SDCInputError", "SchemaViolation")


def _data_error(error):
    """The engine's data error (:data:`_DATA_ERRORS`) along a serialised error's cause chain, or None."""
    while error is not None:
        if error.cls_name in _DATA_ERRORS:
            return error
        error = error.cause or error.context
    return None


def _land_wave_file(spec, wave: str, data_file: Path) -> Path:
    """Copy ``data_file`` into the landing folder as wave ``wave`` (what the landing sensor watches),
    once it is read and validated against the spec: a rejected file never replaces the wave's
    landed file (the copy goes beside it, then is renamed over it). A file of another type already
    landed for that wave is an error."""
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.names import inside
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.sources import file_format, read_wave_file
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
    read_wave_file(spec, data_file, source=f"{spec.survey} wave {wave} ({data_file.name})")  # bad data raises here
    folder.mkdir(parents=True, exist_ok=True)
    if target.resolve() != data_file.resolve():
        write_atomic_with(target, lambda temporary: shutil.copyfile(data_file, temporary))
    return target


def run_wave(survey_name: str, wave: str, *, data_file: str | None = None, home: str | None = None,
             out=None, verbose: bool = False) -> int:
    """Materialise wave ``wave`` of a survey through the job of the UI's code location (recorded in
    the instance under ``DAGSTER_HOME``, so the run is in the UI's history), printing a line per
    materialised asset, then the summary of ``sdc demo`` and the report path.

    Returns :data:`EXIT_OK`, or :data:`EXIT_WITHHELD` naming the failed blocking checks,
    :data:`EXIT_BAD_SPEC`, :data:`EXIT_BAD_DATA`, :data:`EXIT_RUN_FAILED`, :data:`EXIT_USAGE`."""
    out = out or sys.stdout
    _prepare_environment(home)
    if _unsafe_names("run", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    import warnings

    from dagster import BetaWarning

    warnings.filterwarnings("ignore", category=BetaWarning)
    from sdc_dagster.definitions import build_definitions
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.sources import locate_wave_file
    from sdc_dagster.pipeline.report_inputs import design_statement

    specs, broken = _survey_specs("run", out, survey_name)
    if broken:
        for error in (error for spec in broken for error in spec.error.errors):
            print(f"sdc run: bad spec: {error}", file=out)
        return EXIT_BAD_SPEC
    if survey_name not in specs:
        return _unknown_survey("run", survey_name, specs, out)
    spec = specs[survey_name]
    defs = build_definitions(specs=[spec])
    try:
        source = _land_wave_file(spec, wave, Path(data_file)) if data_file else locate_wave_file(spec, wave, landing_dir())
    except SDCInputError as exc:
        print(f"sdc run: bad data: {exc}", file=out)
        return EXIT_BAD_DATA
    job = defs.resolve_job_def(f"{survey_name}_wave_job")
    with _dagster_instance() as instance:
        return _materialise_wave(job, instance, spec.survey, wave, source, out,
                                 design=f"   design: {design_statement(spec)}", verbose=verbose)


def _materialise_wave(job, instance, survey_name: str, wave: str, source: Path, out, *, design: str = "",
                      verbose: bool = False) -> int:
    """The run of :func:`run_wave` with its progress lines; the exit status. Every event of the run,
    with the stack trace of a failed step, goes to ``<data home>/logs/<survey>/<wave>/<run id>.log``;
    ``verbose`` also shows Dagster's own log lines on the console."""
    from dagster import DagsterEventType
    from dagster._core.utils import make_new_run_id

    from sdc_dagster.names import inside
    from sdc_dagster.resources.storage import sdc_home

    instance.add_dynamic_partitions(f"{survey_name}_waves", [wave])
    run_id = make_new_run_id()
    withheld: dict[str, dict] = {}
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
            return
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            name = materialization.asset_key.to_user_string()
            reasons = materialization.metadata.get("withheld_because")
            line = f"   {time.monotonic() - started:6.1f}s  {name}"
            if reasons is not None and reasons.value:
                withheld[name] = reasons.value
                line += "  WITHHELD: " + "; ".join(f"{check}: {why}" for check, why in reasons.value.items())
            print(line, file=out, flush=True)
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            failures.append((event.step_key, event.step_failure_data.error))
            print(f"   {time.monotonic() - started:6.1f}s  {event.step_key} FAILED", file=out, flush=True)

    instance.add_event_listener(run_id, progress)
    print(f"== {survey_name} wave {wave} ({source.name}): run {run_id} of {job.name}, "
          f"DAGSTER_HOME {os.environ['DAGSTER_HOME']}", file=out, flush=True)
    for abandoned in _fail_abandoned_runs(instance):
        print(f"   run {abandoned} was killed before it finished: marked failed", file=out, flush=True)
    try:
        result = job.execute_in_process(partition_key=wave, instance=instance, raise_on_error=False,
                                        run_config={} if verbose else QUIET, run_id=run_id, tags=_run_process_tags())
    finally:
        log.close()
    # the report's blocking "wave_released" check fails the run when no plan is released: that is
    # a decision (exit 3), not a failure
    decided = [(step, error) for step, error in failures if not _no_release(step, error)]
    if not result.success and decided:
        data_errors = [(step, _data_error(error)) for step, error in decided if _data_error(error) is not None]
        step, error = (data_errors or decided)[0]
        # the engine's data error names the file, column and rule; otherwise the user code's error,
        # not Dagster's wrapper
        while not data_errors and error is not None and error.cause is not None:
            error = error.cause
        message = error.message.strip() if error is not None else "see the run in the UI (sdc ui)"
        full = _serialised_storage_problem(decided)
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
    print(wave_summary(survey_name, wave), file=out, flush=True)
    if design:
        print(design, file=out, flush=True)
    from sdc_dagster import lineage
    from sdc_dagster.resources.storage import releases_dir

    released = lineage.wave_release(releases_dir(), survey_name, wave)
    for name, reasons in withheld.items():
        print(f"sdc run: {name} withheld, failed blocking check(s): {', '.join(reasons)}", file=out)
    if released is None:
        print(f"sdc run: nothing released for wave {wave}: no plan passes every blocking check", file=out)
        return EXIT_WITHHELD
    print(f"sdc run: released plan {released['plan']} ({released['folder']})", file=out)
    return EXIT_OK


def _serialised_storage_problem(failures: list) -> str | None:
    """"<path>: <cause>" when a failed step's error (Dagster's serialised chain) is the disk refusing a
    write (:data:`sdc_dagster.files.STORAGE_ERRNOS`), else None."""
    from sdc_dagster.files import STORAGE_ERRNOS

    for _, error in failures:
        while error is not None:
            match = re.search(r"\[Errno (\d+)\] [^:]*(?:: '([^']*)')?", error.message or "")
            if match and int(match.group(1)) in STORAGE_ERRNOS:
                return f"{match.group(2) or 'the data home'}: {STORAGE_ERRNOS[int(match.group(1))]}"
            error = error.cause or error.context
    return None


def _no_release(step: str, error) -> bool:
    """Whether a step failure is the report's blocking ``wave_released`` check (no plan released)."""
    return step.endswith("sdc_report") and error is not None and "wave_released" in (error.message or "")


def run_plan(survey_name: str, wave: str, *, data_file: str | None = None, write: bool = False,
             home: str | None = None, out=None) -> int:
    """Search the plans of a wave (:func:`sdc_dagster.pipeline.search.search_wave`, with the spec's
    ``search:`` options, whether or not the wave chain searches) and print the front; with
    ``write``, add the front's plans to the spec file as named plans ``search_<n>``
    (:func:`~sdc_dagster.protect.plan_search.front_as_yaml`) that can be edited and run like any other."""
    out = out or sys.stdout
    _prepare_environment(home)
    if _unsafe_names("plan", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    import yaml

    from sdc_dagster.pipeline import search
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.protect.plan_search import front_as_yaml
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.sources import file_format, locate_wave_file, read_wave_file
    from sdc_dagster.spec import SpecError, load_spec, spec_text_with_plans

    specs, broken = _survey_specs("plan", out, survey_name)
    if survey_name not in specs:
        for error in (error for spec in broken for error in spec.error.errors):
            print(f"sdc plan: bad spec: {error}", file=out)
        return EXIT_BAD_SPEC if broken else _unknown_survey("plan", survey_name, specs, out)
    spec = specs[survey_name]
    try:
        path = Path(data_file) if data_file else locate_wave_file(spec, wave, landing_dir())
        data = read_wave_file(spec, path, source=f"{spec.survey} wave {wave} ({path.name}, "
                                                 f"{file_format(path, default=spec.source.format)})")
        print(f"== {survey_name} wave {wave} ({path.name}, {len(data)} records): searching ...", file=out, flush=True)
        started = time.monotonic()
        found = search.search_wave(data, spec, progress=lambda line: print(
            f"   {time.monotonic() - started:6.1f}s  {line}", file=out, flush=True))
    except SDCInputError as exc:
        print(f"sdc plan: bad data: {exc}", file=out)
        return EXIT_BAD_DATA
    print(f"{found.nodes_evaluated} of {found.nodes_total} plans evaluated in {found.seconds:.1f} s "
          f"({'exhaustive' if found.exhaustive else found.bound})", file=out)
    if not found.front:
        print("sdc plan: no plan of the search space meets the risk target", file=out)
        return EXIT_WITHHELD
    with pd_display():
        print(found.front_frame().set_index("plan").to_string(), file=out)
    if found.recommended is not None:
        print(f"recommended: {found.recommended.plan.description}", file=out)
    if not write:
        return EXIT_OK
    plans = yaml.safe_load(front_as_yaml(found.front, taken=[p.name for p in spec.plans]))["plans"]
    text = spec_text_with_plans(spec.spec_path.read_text(), plans)
    try:
        with atomic_path(spec.spec_path) as candidate:
            candidate.write_text(text, encoding="utf-8")
            load_spec(candidate)  # the spec is replaced only by a spec that loads
    except SpecError as exc:
        print(f"sdc plan: the spec with the searched plans does not load: {exc}", file=out)
        return EXIT_BAD_SPEC
    print(f"sdc plan: added {', '.join(plans)} to {spec.spec_path}", file=out)
    return EXIT_OK


def pd_display():
    """Print every column of a table (pandas' option context)."""
    import pandas as pd

    return pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 80)


def run_promote(survey_name: str, wave: str, plan: str, *, home: str | None = None, out=None) -> int:
    """Make ``plan``'s latest eligible variant the wave's one release in place of the
    recommendation (:func:`sdc_dagster.lineage.publish_wave_release`); :data:`EXIT_USAGE` for an
    unsafe name, an unknown survey or wave, or a plan that is withheld or never materialised."""
    out = out or sys.stdout
    _prepare_environment(home)
    if _unsafe_names("promote", out, ("survey name", survey_name), ("wave id", wave), ("plan name", plan)):
        return EXIT_USAGE
    from sdc_dagster import lineage
    from sdc_dagster.resources.storage import releases_dir

    root = releases_dir()
    if survey_name not in (known := _known_surveys(root)):
        return _unknown_survey("promote", survey_name, known, out)
    if not (root / survey_name / wave).is_dir():
        print(f"sdc promote: no materialised wave {wave!r} of survey {survey_name!r} under {root}", file=out)
        return EXIT_USAGE
    before = lineage.wave_release(root, survey_name, wave)
    try:
        record = lineage.publish_wave_release(root, survey_name, wave, plan, reason="promoted with sdc promote")
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
    _prepare_environment(home)
    if _unsafe_names("report", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.names import inside
    from sdc_dagster.report import export_report
    from sdc_dagster.resources.storage import reports_dir

    if survey_name not in (known := _known_surveys(reports_dir())):
        return _unknown_survey("report", survey_name, known, out)
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


#: Seconds `sdc ui` waits for `dagster dev` to stop its services before ending what is left.
UI_GRACE_SECONDS = 5.0


def _end_process_group(group: int, grace: float) -> None:
    """SIGTERM every process left in process group ``group``, then SIGKILL after ``grace`` seconds."""
    if not hasattr(os, "killpg"):
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


#: Tags of a run started by ``sdc run`` or ``sdc demo``: the process that executes it, on which host.
RUN_PROCESS_TAGS = ("sdc/pid", "sdc/host")


def _run_process_tags() -> dict[str, str]:
    import socket

    return dict(zip(RUN_PROCESS_TAGS, (str(os.getpid()), socket.gethostname())))


def _fail_abandoned_runs(instance) -> list[str]:
    """Mark failed the runs ``sdc`` started on this host whose process is gone (killed mid-way: they
    would stay STARTED forever); runs of live processes (other waves running now) and runs the UI's
    daemon started are left alone. Returns the run ids marked."""
    import socket

    from dagster import DagsterRunStatus, RunsFilter

    host = socket.gethostname()
    marked = []
    statuses = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
    for run in instance.get_runs(filters=RunsFilter(statuses=statuses, tags={"sdc/host": host})):
        pid = run.tags.get("sdc/pid", "")
        if pid.isdigit() and not process_alive(int(pid)):
            instance.report_run_failed(run, message=f"the sdc process {pid} that ran it ended before the run "
                                                    "finished (killed); nothing of this run was released")
            marked.append(run.run_id)
    return marked


def _cancel_unfinished_runs(message: str) -> None:
    """Mark the runs still starting or started in the instance as canceled (their processes are gone)."""
    from dagster import DagsterRunStatus, RunsFilter

    with _dagster_instance() as instance:
        statuses = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
        for run in instance.get_runs(filters=RunsFilter(statuses=statuses)):
            instance.report_run_canceled(run, message=message)


def run_ui(home: str | None = None, port: int = 3000, *, out=None) -> int:
    """Start ``dagster dev`` (webserver and daemon) on this code location, in its own process group.

    The first SIGINT (Ctrl-C) or SIGTERM asks ``dagster dev`` to stop its services; whatever is still
    running :data:`UI_GRACE_SECONDS` later (run workers of runs in flight, code servers) is terminated
    with the whole group, and runs left unfinished are marked canceled. A second signal ends the
    group at once."""
    out = out or sys.stderr
    root = _prepare_environment(home)
    import sdc_dagster

    command = [sys.executable, "-m", "dagster", "dev", "-m", "sdc_dagster.definitions", "-a", "defs", "-p", str(port)]
    # The code server and run workers import sdc_dagster from where this process did.
    package_root = str(Path(sdc_dagster.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    signals: list[int] = []
    started: list[subprocess.Popen] = []

    def stop(signum, frame) -> None:
        signals.append(signum)
        if not started:
            return
        if len(signals) == 1:
            print("\nsdc ui: stopping the Dagster webserver and daemon ...", file=out, flush=True)
            started[0].send_signal(signal.SIGINT)
        else:
            _end_process_group(started[0].pid, 0.0)

    # Handlers first: a child inherits an ignored SIGINT (a shell's background job) but not a handler,
    # so `dagster dev` always gets the default SIGINT behaviour (stop its services).
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    process = subprocess.Popen(command, cwd=root, env=env, start_new_session=True)
    started.append(process)
    if signals:
        process.send_signal(signal.SIGINT)
    try:
        while process.poll() is None and not signals:
            time.sleep(0.2)
        deadline = time.monotonic() + UI_GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        _end_process_group(process.pid, 2.0)
        process.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _cancel_unfinished_runs("sdc ui stopped while the run was in flight")
    print("sdc ui: stopped", file=out, flush=True)
    return EXIT_OK if signals else process.returncode


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


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="sdc", description="Statistical disclosure control pipeline (Dagster).",
        epilog=f"exit status: {EXIT_OK} success, {EXIT_RUN_FAILED} run failed, {EXIT_USAGE} usage, "
               f"{EXIT_WITHHELD} a blocking release check failed, {EXIT_BAD_SPEC} bad spec, {EXIT_BAD_DATA} bad data",
    )
    parser.add_argument("--home", help="data home (default: $SDC_HOME, else ./.sdc_home if it exists, else the "
                                       "per-user data folder)")
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="draft a survey spec from a data file (.sav .zsav .dta .sas7bdat .xpt .csv .parquet)")
    init.add_argument("survey")
    init.add_argument("--from", dest="data_file", required=True, metavar="FILE")
    init.add_argument("--spec", help="where to write it (default: <data home>/specs/SURVEY.yaml)")
    check = sub.add_parser("check", help="validate a spec, and a data file against it, without running anything")
    check.add_argument("spec")
    check.add_argument("--data", metavar="FILE")
    run = sub.add_parser("run", help="materialise one wave of one survey (recorded in the UI's run history)")
    run.add_argument("survey")
    run.add_argument("wave")
    run.add_argument("--file", metavar="FILE", help="the wave's data file (copied into the landing folder)")
    run.add_argument("--verbose", action="store_true", help="also print Dagster's log lines (stack traces included)")
    sub.add_parser("demo", help="materialise every asset for the bundled demo waves and print a summary")
    ui = sub.add_parser("ui", help="start the Dagster UI on this code location")
    ui.add_argument("--port", type=int, default=3000)
    audit = sub.add_parser("audit", help="print a release manifest and verify it by recomputing the output")
    audit.add_argument("wave")
    audit.add_argument("--plan", help="one protection plan (default: every plan of the wave)")
    audit.add_argument("--survey", help="the survey (needed when several surveys have this wave)")
    audit.add_argument("--run", help="a release's run id (default: the latest release)")
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
    args = parser.parse_args(argv)
    if args.command == "init":
        return run_init(args.survey, args.data_file, spec_file=args.spec, home=args.home)
    if args.command == "check":
        return run_check(args.spec, data_file=args.data)
    if args.command == "run":
        return run_wave(args.survey, args.wave, data_file=args.file, home=args.home, verbose=args.verbose)
    if args.command == "demo":
        return run_demo(args.home)
    if args.command == "audit":
        return run_audit(args.wave, plan=args.plan, survey_name=args.survey, run=args.run, home=args.home)
    if args.command == "plan":
        return run_plan(args.survey, args.wave, data_file=args.file, write=args.write, home=args.home)
    if args.command == "promote":
        return run_promote(args.survey, args.wave, args.plan, home=args.home)
    if args.command == "report":
        return run_report(args.survey, args.wave, pdf=args.pdf, home=args.home)
    return run_ui(args.home, args.port)


if __name__ == "__main__":
    sys.exit(main())
