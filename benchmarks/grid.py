"""Census grid benchmarks: prints seconds and peak memory for each route (targets in the issue).

Targets at full scale (37,019,327 persons, 197,130 cells, about 15 million households):
route 1 (DuckDB tabulation over Parquet + suppression) < 90 s and < 8 GB peak; targeted record
swapping < 5 min; cell key method on 197,000 cells x 5 tables < 10 s.

    .venv/bin/python benchmarks/grid.py --fraction 0.1      # 3.7 million persons
    .venv/bin/python benchmarks/grid.py                     # full scale (writes ~0.5 GB Parquet)

Timings are wall-clock on whatever else the machine is running; peak memory is the process's
maximum resident set size (DuckDB runs in-process, so it is included).
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import duckdb
import pandas as pd

from sdc_dagster.census import SEED_RESIDENTS, write_census_parquet
from sdc_dagster.grid_counts import tabulate_grid
from sdc_dagster.protect.cellkey import assign_record_keys, grid_cell_key, perturbation_table
from sdc_dagster.protect.grid import grid_suppression
from sdc_dagster.protect.record_swapping import targeted_record_swap


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fraction", type=float, default=1.0, help="share of the 37 million persons")
    parser.add_argument("--workdir", type=Path, default=None, help="folder for the Parquet file")
    parser.add_argument("--skip-swap", action="store_true")
    args = parser.parse_args()
    n_persons = int(SEED_RESIDENTS * args.fraction)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sdc_grid_bench_"))
    path = workdir / f"census_{n_persons}.parquet"

    t = time.perf_counter()
    if not path.exists():
        write_census_parquet(path, n_persons, random_state=2021)
    print(f"persons {n_persons:,}; census Parquet {path.stat().st_size / 1e6:.0f} MB "
          f"written in {time.perf_counter() - t:.1f} s")

    # Route 1: DuckDB over Parquet, then suppression (memory limit keeps DuckDB under budget).
    con = duckdb.connect(config={"memory_limit": "6GB"})
    t = time.perf_counter()
    counts = tabulate_grid(path, where="resident", con=con)
    t_tab = time.perf_counter() - t
    t = time.perf_counter()
    protected = grid_suppression(counts, strategy="distribution", random_state=1)
    t_sup = time.perf_counter() - t
    print(f"route 1: tabulate {len(counts):,} cells {t_tab:.1f} s + suppress {t_sup:.3f} s "
          f"= {t_tab + t_sup:.1f} s; peak RSS so far {peak_gb():.2f} GB; "
          f"hidden counts {int(protected.iloc[:, 2:].isna().to_numpy().sum()):,}")

    persons = pd.read_parquet(path, columns=["household_id", "cell_id", "region", "sex", "age_group",
                                             "household_size", "resident"])
    persons = persons[persons["resident"]].reset_index(drop=True)
    persons["record_key"] = assign_record_keys(persons, random_state=3)
    table = perturbation_table(2, 1.05)
    t = time.perf_counter()
    perturbed = grid_cell_key(persons, record_key_col="record_key", ptable=table, con=con)
    t_ck = time.perf_counter() - t
    keys = perturbed[["total_original"]]
    t = time.perf_counter()
    for col in ("total", "sex_1", "sex_2", "age_1", "age_2"):
        table.lookup(perturbed[f"{col}_original"].to_numpy(), (perturbed[f"{col}_original"] % 97 / 97).to_numpy())
    t_lookup = time.perf_counter() - t
    print(f"cell key: {len(keys):,} cells x 6 tables from {len(persons):,} persons {t_ck:.1f} s "
          f"(of which p-table lookups for 5 tables {t_lookup:.3f} s)")

    if not args.skip_swap:
        t = time.perf_counter()
        result = targeted_record_swap(
            persons,
            hid="household_id",
            hierarchy=["region", "cell_id"],
            similar=[["household_size"]],
            risk_variables=["sex", "age_group"],
            swaprate=0.05,
            k_anonymity=3,
            random_state=4,
        )
        t_swap = time.perf_counter() - t
        print(f"swapping: {result.swapped_with.size:,} households in {t_swap:.1f} s; swapped "
              f"{result.n_swapped_households:,}, risky {result.n_risky_households:,}, "
              f"unmatched {result.n_unmatched_households:,}")
    print(f"peak RSS {peak_gb():.2f} GB")


if __name__ == "__main__":
    main()
