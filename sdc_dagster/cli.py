"""The ``sdc`` command: run the pipeline without the UI, or start the UI.

``sdc demo``  puts the bundled demo waves into the landing folder, registers them as partitions and
              materialises every asset (with its checks) in-process, then prints a summary.
``sdc ui``    starts the Dagster UI and daemon (``dagster dev``) on this code location.
``sdc audit WAVE [--plan P]`` prints a release manifest and recomputes the release to prove that it
              is byte-identical.
``sdc report SURVEY WAVE [--pdf]`` lists a wave's report files (HTML, JSON, the survey's index)
              and, with ``--pdf``, prints the HTML report to PDF with headless Chromium.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
DEMO_TESTDATA = CHECKOUT / "examples" / "data" / "testdata.csv"
# Dagster's step-by-step DEBUG log goes to the run's event log (see `sdc ui`), not the terminal.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _prepare_environment(home: str | None) -> Path:
    """Set ``SDC_HOME`` and ``DAGSTER_HOME`` (under it) and return the data home."""
    if home:
        os.environ["SDC_HOME"] = str(Path(home).resolve())
    from resources.storage import sdc_home

    root = sdc_home()
    os.environ.setdefault("DAGSTER_HOME", str(root / "dagster"))
    dagster_home = Path(os.environ["DAGSTER_HOME"])
    dagster_home.mkdir(parents=True, exist_ok=True)
    if not (dagster_home / "dagster.yaml").exists():
        (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return root


def prepare_demo_waves() -> dict[str, list[str]]:
    """Write the demo waves into the landing folder: survey -> wave names.

    testdata: sdcMicro's testdata as wave ``2024``; simulation: two waves ``w1`` and ``w2`` drawn
    from seed 000's simulation design (SPEC §5.7) with seeds 1 and 2.
    """
    from resources.storage import landing_dir
    from sdc_dagster.simulation import simulate_survey

    landing = landing_dir()
    (landing / "testdata").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEMO_TESTDATA, landing / "testdata" / "2024.csv")
    (landing / "simulation").mkdir(parents=True, exist_ok=True)
    for seed, wave in ((1, "w1"), (2, "w2")):
        target = landing / "simulation" / f"{wave}.csv"
        if not target.exists():
            simulate_survey(500, random_state=seed).to_csv(target, index=False)
    return {"testdata": ["2024"], "simulation": ["w1", "w2"]}


def release_decision(survey_name: str, wave: str, plan: str) -> str:
    """"released" or "withheld: <failed blocking checks>" for the plan's latest decision of the wave."""
    from resources.storage import releases_dir
    from sdc_dagster import lineage

    decisions = lineage.list_decisions(releases_dir(), survey_name, wave, plan)
    if not decisions:
        return ""
    withheld = lineage.read_manifest(decisions[-1]).get("withheld")
    return f"withheld: {', '.join(withheld)}" if withheld else "released"


def wave_summary(survey_name: str, wave: str) -> str:
    """Headline figures of one materialised wave, read back from the stored Parquet outputs, with
    each plan's release decision."""
    from resources.storage import reports_dir, stored_output

    residual = stored_output([survey_name, "residual_risk"], wave)
    loss = stored_output([survey_name, "information_loss"], wave)["summary"]
    table = residual[["global_risk", "expected_reidentifications", "k3_violations", "suppressed_values"]].join(
        loss[["lambda_arctan", "topsis_mean"]], how="left"
    )
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

    from dagster import BetaWarning, DagsterInstance

    warnings.filterwarnings("ignore", category=BetaWarning)

    from sdc_dagster.definitions import build_definitions

    waves = prepare_demo_waves()
    defs = build_definitions()
    instance = DagsterInstance.get()
    print(f"SDC home: {root}", file=out)
    failures = 0
    for survey_name, wave_keys in waves.items():
        instance.add_dynamic_partitions(f"{survey_name}_waves", wave_keys)
        job = defs.resolve_job_def(f"{survey_name}_wave_job")
        for wave in wave_keys:
            print(f"\n== {survey_name} wave {wave}: materialising {job.name} ...", file=out, flush=True)
            result = job.execute_in_process(partition_key=wave, instance=instance, raise_on_error=False, run_config=QUIET)
            if not result.success:
                failures += 1
                print(f"   FAILED (see the run in the UI: sdc ui)", file=out)
                continue
            print(wave_summary(survey_name, wave), file=out, flush=True)
    failures += run_grid_demo(defs, instance, out)
    return 1 if failures else 0


def run_grid_demo(defs, instance, out) -> int:
    """Generate the demo census and run the grid chain (regions, national swap, routes); failures."""
    from assets.grid import prepare_demo_census, run_grid_chain
    from resources.storage import sdc_home

    regions = prepare_demo_census(sdc_home())
    instance.add_dynamic_partitions("grid_regions", regions)
    print("\n== census grid: validate regions, swap nationally, tabulate and protect each region ...", file=out,
          flush=True)
    outcome = run_grid_chain(instance, regions, resources=defs.resources, run_config=QUIET)
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


def grid_summary(region: str) -> str:
    """Suppression figures of one grid region, read back from the stored outputs."""
    from resources.storage import stored_output

    suppressed = stored_output(["grid_suppressed"], region)
    hidden = int(suppressed.drop(columns="total").select_dtypes("number").isna().sum().sum())
    return f"   {len(suppressed)} cells, {int(suppressed['total'].sum())} residents, {hidden} category counts suppressed"


def run_audit(wave: str, *, plan: str | None = None, survey_name: str | None = None, run: str | None = None,
              home: str | None = None, out=None) -> int:
    """Print the manifest of each release of ``wave`` (latest, or run ``run``) and verify it by
    recomputing the protected output; exit status 0 only if every release is byte-identical."""
    import json

    out = out or sys.stdout
    _prepare_environment(home)
    if wave == "grid":  # the census grid release (assets/grid.py)
        from assets.grid import run_grid_audit

        return run_grid_audit(run=run, out=out)
    from resources.storage import releases_dir
    from sdc_dagster import lineage, survey

    root = releases_dir()
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
    status = 0
    for name in plans:
        releases = lineage.list_releases(root, surveys[0], wave, name)
        if run:
            releases = [r for r in releases if r.name == run]
        if not releases:
            print(f"no release of plan {name!r} for wave {wave!r}" + (f" with run {run}" if run else ""), file=out)
            status = 2
            continue
        verification = lineage.verify_release(releases[-1], survey.recompute_release)
        print(f"== {surveys[0]} / {wave} / {name}: release {releases[-1].name}", file=out)
        print(json.dumps(verification.manifest, indent=2, sort_keys=True), file=out)
        verdict = "OK" if verification.ok else "FAILED"
        print(f"audit {verdict}: {verification.detail}", file=out, flush=True)
        status = status or (0 if verification.ok else 1)
    return status


def run_ui(home: str | None = None, port: int = 3000) -> int:
    """Start ``dagster dev`` (webserver and daemon) on this code location."""
    _prepare_environment(home)
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster if dagster.exists() else "dagster"), "dev", "-w", str(CHECKOUT / "workspace.yaml"), "-p", str(port)]
    return subprocess.call(command, cwd=CHECKOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sdc", description="Statistical disclosure control pipeline (Dagster).")
    parser.add_argument("--home", help="data home (default: $SDC_HOME or .sdc_home in the checkout)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="materialise every asset for the bundled demo waves and print a summary")
    ui = sub.add_parser("ui", help="start the Dagster UI on this code location")
    ui.add_argument("--port", type=int, default=3000)
    audit = sub.add_parser("audit", help="print a release manifest and verify it by recomputing the output")
    audit.add_argument("wave")
    audit.add_argument("--plan", help="one protection plan (default: every plan of the wave)")
    audit.add_argument("--survey", help="the survey (needed when several surveys have this wave)")
    audit.add_argument("--run", help="a release's run id (default: the latest release)")
    report = sub.add_parser("report", help="a wave's report files (HTML, JSON, index); --pdf also prints the PDF")
    report.add_argument("survey")
    report.add_argument("wave")
    report.add_argument("--pdf", action="store_true", help="print the report to <wave>.pdf with headless Chromium")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(args.home)
    if args.command == "audit":
        return run_audit(args.wave, plan=args.plan, survey_name=args.survey, run=args.run, home=args.home)
    if args.command == "report":
        from resources.storage import reports_dir
        from sdc_dagster.errors import SDCInputError
        from sdc_dagster.report import export_report

        _prepare_environment(args.home)
        try:
            paths = export_report(reports_dir() / args.survey, args.wave, pdf=args.pdf)
        except SDCInputError as error:
            print(error, file=sys.stderr)
            return 2
        print("\n".join(f"{kind}: {path}" for kind, path in paths.items()))
        return 0
    return run_ui(args.home, args.port)


if __name__ == "__main__":
    sys.exit(main())
