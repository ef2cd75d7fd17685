"""Census grid benchmark: the composed chain as published, step by step (seconds, peak memory).

The chain (generation aside) is what the Dagster assets run, through the same step functions
(``sdc_dagster.pipeline.grid``, ``.grid_swap``): read every region -> targeted record swapping (13-variable persons, households
matched on size) -> swapped persons written back per region -> national totals (DuckDB over every
region) -> per region: tabulation of the 13 figures of both populations (DuckDB over Parquet), cell
key method (ONS record keys, p-table D=2, V=1.05, js=1) and consistent suppression ("distribution"
with the national totals). Regions run one after the other here; the multiprocess executor runs
them in parallel.

Targets (issue 15): the whole chain for 10 million persons in at most 20 s and for 37 million in at
most 90 s, under 8 GB, on 2 cores.

    .venv/bin/python benchmarks/grid.py --persons 1000000
    .venv/bin/python benchmarks/grid.py --persons 10000000

Timings are wall-clock on whatever else the machine is running; peak memory is the process's
maximum resident set size (DuckDB runs in-process, so it is included).
"""

import argparse
import resource
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from sdc_dagster.synthetic.census import write_census_by_region
from sdc_dagster.spec.grid import CellKeySpec, SuppressionSpec, SwapSpec
from sdc_dagster.pipeline.grid import (
    CELL_KEY_COLUMNS,
    cell_key_region,
    national_reference_counts,
    national_totals,
    suppress_region,
    tabulate_region,
)
from sdc_dagster.pipeline.grid_swap import read_census_files, swap_census, write_swapped_regions


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


TIMES: dict[str, float] = {}


@contextmanager
def timed(step: str):
    t = time.perf_counter()
    yield
    TIMES[step] = TIMES.get(step, 0.0) + time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--persons", type=int, default=1_000_000, help="resident persons")
    parser.add_argument("--workdir", type=Path, default=None, help="folder for the region files (reused)")
    parser.add_argument("--region-km", type=int, default=100)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sdc_grid_bench_"))
    census = workdir / f"census_{args.persons}"
    t = time.perf_counter()
    if not census.is_dir():
        write_census_by_region(census, args.persons, random_state=2021, region_km=args.region_km)
    regions = sorted(p.stem for p in census.glob("*.parquet"))
    print(f"persons {args.persons:,} in {len(regions)} regions; census ready in {time.perf_counter() - t:.1f} s "
          "(generation, not part of the chain)")

    with timed("read regions"):
        persons = read_census_files([census / f"{r}.parquet" for r in regions])
    with timed("swap"):
        result = swap_census(persons, SwapSpec())
    swapped = workdir / f"swapped_{args.persons}"
    with timed("write swapped regions"):
        write_swapped_regions(swapped, persons, result.data, result.swapped_with, regions)
    n_households = int(result.swapped_with.size)
    del persons, result
    with timed("national totals"):
        totals = national_totals(sorted(swapped.glob("*.parquet")))
    reference = national_reference_counts(totals)
    cells = hidden = 0
    for region in regions:
        path = swapped / f"{region}.parquet"
        with timed("tabulate (2 populations)"):
            counts = tabulate_region(path, "resident")
            national = tabulate_region(path, "national")
        with timed("cell key"):
            region_persons = pd.read_parquet(path, columns=CELL_KEY_COLUMNS)
            perturbed, _ = cell_key_region(region_persons, CellKeySpec())
        with timed("suppression"):
            resident, _ = suppress_region(counts, national, reference, SuppressionSpec(), region)
        cells += len(perturbed)
        hidden += int(resident.drop(columns=["cell_id", "northing_km", "easting_km"]).isna().to_numpy().sum())
    total = sum(TIMES.values())
    print(f"{n_households:,} households, {cells:,} cells, {hidden:,} suppressed counts")
    for step, seconds in TIMES.items():
        print(f"  {step:<26} {seconds:6.1f} s")
    print(f"  {'whole chain':<26} {total:6.1f} s; peak RSS {peak_gb():.2f} GB")


if __name__ == "__main__":
    main()
