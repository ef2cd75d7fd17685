"""``sdc demo``: the bundled demo waves, the demo table specs (``examples/tables``) and the demo census,
materialised in-process, with a summary."""

from __future__ import annotations

import shutil
import sys

from sdc_dagster.cli.home import (dagster_instance, prepare_environment, run_job, run_process_tags, spec_catalogue,
                                  start_up_collection)
from sdc_dagster.cli.run import QUIET, wave_summary

def prepare_demo_waves() -> dict[str, list[str]]:
    """Write the demo waves into the landing folder: survey -> wave names.

    testdata: sdcMicro's testdata as wave ``2024``; simulation: two waves ``w1`` and ``w2`` drawn
    from seed 000's simulation design (SPEC §5.7) with seeds 1 and 2.
    """
    from sdc_dagster.resources.storage import bundled_examples, landing_dir
    from sdc_dagster.synthetic.survey import simulate_survey

    landing = landing_dir()
    (landing / "testdata").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundled_examples() / "data" / "testdata.csv", landing / "testdata" / "2024.csv")
    (landing / "simulation").mkdir(parents=True, exist_ok=True)
    for seed, wave in ((1, "w1"), (2, "w2")):
        target = landing / "simulation" / f"{wave}.csv"
        if not target.exists():
            simulate_survey(500, random_state=seed).to_csv(target, index=False)
    return {"testdata": ["2024"], "simulation": ["w1", "w2"]}


def run_demo(home: str | None = None, *, out=None) -> int:
    """Materialise every survey asset for the demo waves and print what came out."""
    with start_up_collection() as started:
        return _run_demo(home, out or sys.stdout, started)


def _run_demo(home: str | None, out, started) -> int:
    """:func:`run_demo`; ``started`` ends its start-up (:func:`~sdc_dagster.cli.home.start_up_collection`)
    once the definitions are built and the instance is open."""
    root = prepare_environment(home)
    import warnings

    from dagster import BetaWarning

    warnings.filterwarnings("ignore", category=BetaWarning)

    from sdc_dagster.definitions import build_definitions, table_specs
    from sdc_dagster.resources.storage import bundled_examples

    waves = prepare_demo_waves()
    table_sets = table_specs([bundled_examples() / "tables"])
    defs = build_definitions(specs=list(spec_catalogue("demo", out)[0].values()), tables=table_sets)
    instance = dagster_instance()
    started()
    print(f"SDC home: {root}", file=out)
    failures = 0
    for survey_name, wave_keys in waves.items():
        instance.add_dynamic_partitions(f"{survey_name}_waves", wave_keys)
        job = defs.resolve_job_def(f"{survey_name}_wave_job")
        for wave in wave_keys:
            print(f"\n== {survey_name} wave {wave}: materialising {job.name} ...", file=out, flush=True)
            result = run_job(job, instance, partition_key=wave, run_config=QUIET, tags=run_process_tags())
            if not result.success:
                failures += 1
                print(f"   FAILED (see the run in the UI: sdc ui)", file=out)
                continue
            print(wave_summary(survey_name, wave), file=out, flush=True)
    failures += run_table_demo(defs, instance, table_sets, waves, out)
    failures += run_grid_demo(defs, instance, out)
    return 1 if failures else 0


def run_table_demo(defs, instance, table_sets, waves: dict[str, list[str]], out) -> int:
    """Run the chain of every demo table spec (each wave of its survey, or its business file once)
    and print each table's suppressions and the release; failures (a failed run or a withheld set)."""
    from sdc_dagster.cli.tables import print_table_summary

    failures = 0
    for spec in table_sets:
        job = defs.resolve_job_def(f"{spec.name}_tables_job")
        for wave in waves.get(spec.source.survey, []) if spec.source.survey else [None]:
            print(f"\n== tables {spec.name}" + (f" wave {wave}" if wave else "") + f": materialising {job.name} ...",
                  file=out, flush=True)
            result = run_job(job, instance, partition_key=wave, run_config=QUIET, tags=run_process_tags())
            if not result.success:
                failures += 1
                print("   FAILED (see the run in the UI: sdc ui)", file=out)
                continue
            failures += print_table_summary(spec, wave, out)
    return failures


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
    region's ``region_job`` (the routes of the grid spec), then the release. The grid spec is the
    ``grid_spec`` resource of ``defs``.

    ``run_config``: one config for every job of the chain (loggers, say). Returns the success of
    every run, keyed ``census:<region>``, ``swap``, ``grid:<region>`` and ``release`` (the manifest
    and report, when everything before succeeded).
    """

    def run(job_name: str, partition_key: str | None = None) -> bool:
        job = defs.resolve_job_def(job_name)
        return run_job(job, instance, partition_key=partition_key, run_config=run_config or {}).success

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
