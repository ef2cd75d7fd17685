"""``sdc demo``: the bundled demo waves and the demo census, materialised in-process, with a summary."""

from __future__ import annotations

import shutil
import sys

from sdc_dagster.cli.home import _dagster_instance, _prepare_environment, _run_process_tags, _survey_specs
from sdc_dagster.cli.run import QUIET, wave_summary

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
    from sdc_dagster.assets.grid import prepare_demo_census, run_grid_chain
    from sdc_dagster.resources.storage import sdc_home

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
    from sdc_dagster.resources.storage import stored_output

    suppressed = stored_output(["grid_suppressed"], region)
    hidden = int(suppressed.drop(columns="total").select_dtypes("number").isna().sum().sum())
    return f"   {len(suppressed)} cells, {int(suppressed['total'].sum())} residents, {hidden} category counts suppressed"
