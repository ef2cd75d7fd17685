"""Speed of categorical disclosure risk (SPEC §2–§3) on large synthetic microdata.

Targets (project issue "Categorical disclosure risk that agrees with sdcMicro to the digit"):
1,000,000 records x 7 keys with weights: frequencies + individual + global risk under 2 s and peak
memory under 1.5 GB; the same with 10% missing key values under 5 s. A last case has many
missingness patterns (12 keys, 10% of cells missing), the costly case for the sparse §2.4 counter.
Issue 37: model-based risk (sdcMicro ``modRisk``) on 1,000,000 records x 6 keys within 10 s.

Prints records/s, seconds and the process's peak resident memory (ru_maxrss: it includes DuckDB's
own allocations, which tracemalloc cannot see). Usage: ``python benchmarks/risk.py [--records N]``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from sdc_dagster.risk import (
    global_risk,
    individual_risk,
    key_frequencies,
    l_diversity,
    model_risk,
    population_uniqueness,
    unsafe_combinations,
)
from sdc_dagster.risk.categorical import risk_from_frequencies

KEYS = ["region", "sex", "age_group", "education", "labour", "marital", "household_size"]
CARDINALITIES = [16, 2, 18, 7, 4, 5, 9]


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """Skewed categorical keys (Zipf-like category shares) and integer-ish weights 50..500."""
    rng = np.random.default_rng(seed)
    data = {}
    for key, c in zip(KEYS, CARDINALITIES):
        share = 1.0 / np.arange(1, c + 1) ** 0.8
        data[key] = rng.choice(c, size=n, p=share / share.sum()).astype(np.int64)
    frame = pd.DataFrame(data)
    frame["weight"] = rng.uniform(50, 500, n).round()
    frame["hh"] = np.arange(n) // 3
    frame["sensitive"] = rng.integers(0, 6, n)
    return frame


def with_missing_cells(data: pd.DataFrame, share: float, seed: int = 1) -> pd.DataFrame:
    """``share`` of all key cells set to missing, independently."""
    rng = np.random.default_rng(seed)
    keys = data[KEYS].astype("float64").mask(rng.random((len(data), len(KEYS))) < share)
    return data.drop(columns=KEYS).join(keys)[data.columns]


def with_missing_records(data: pd.DataFrame, share: float, seed: int = 2) -> pd.DataFrame:
    """``share`` of the records get one missing key value (a random key), as after local suppression."""
    rng = np.random.default_rng(seed)
    keys = data[KEYS].astype("float64").to_numpy()
    rows = np.flatnonzero(rng.random(len(data)) < share)
    keys[rows, rng.integers(0, len(KEYS), len(rows))] = np.nan
    return data.drop(columns=KEYS).join(pd.DataFrame(keys, columns=KEYS, index=data.index))[data.columns]


def timed(label: str, n: int, fn) -> None:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{label:<58} {seconds:7.2f} s  {n / seconds:12,.0f} records/s  peak RSS {peak_mb:7.0f} MB")


def pipeline(data: pd.DataFrame) -> None:
    """Frequencies once, then individual and global risk from them (what an asset would do)."""
    freq = key_frequencies(data, KEYS, weight="weight")
    risk = risk_from_frequencies(freq["fk"].to_numpy(), freq["Fk"].to_numpy(), weighted=True)
    _ = (risk.mean(), risk.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    n = args.records
    data = synthetic(n)
    print(f"{n:,} records x {len(KEYS)} keys (cardinalities {CARDINALITIES}), weights")
    timed("complete keys: frequencies + individual + global risk", n, lambda: pipeline(data))
    timed("complete keys: global_risk(..., household=) alone", n,
          lambda: global_risk(data, KEYS, weight="weight", household="hh"))
    timed("complete keys: individual_risk alone", n, lambda: individual_risk(data, KEYS, weight="weight"))
    timed("complete keys: l_diversity (one sensitive variable)", n, lambda: l_diversity(data, KEYS, "sensitive"))
    timed("complete keys: unsafe_combinations k=3, max_dim=3", n, lambda: unsafe_combinations(data, KEYS))

    # 6 keys, 80,640 cells; last run (shared 2-core machine): 0.4-1.2 s per method with main effects,
    # 0.5 s with the two interactions (IPF), 4.6 s for them with weightedLLM (IRLS, 309 parameters)
    model_keys = KEYS[:6]
    for method in ("default", "CE", "PML", "weightedLLM", "IPF"):
        timed(f"model_risk, 6 keys, main effects, method {method}", n,
              lambda: model_risk(data, model_keys, weight="weight", method=method))
    interactions = "~" + " + ".join(model_keys) + " + region:age_group + sex:education"
    timed("model_risk, 6 keys, two interactions (308 parameters)", n,
          lambda: model_risk(data, model_keys, weight="weight", formula=interactions))
    timed("model_risk, 6 keys, two interactions, weightedLLM (IRLS)", n,
          lambda: model_risk(data, model_keys, weight="weight", formula=interactions, method="weightedLLM"))

    timed("population_uniqueness (Pitman, Zayatz), 7 keys, N = 50,000,000", n,
          lambda: population_uniqueness(data, KEYS, population_size=50_000_000))

    missing_records = with_missing_records(data, 0.10)
    timed("10% of records with a missing key: freq + indiv + global", n, lambda: pipeline(missing_records))
    missing_cells = with_missing_cells(data, 0.10)
    share = missing_cells[KEYS].isna().any(axis=1).mean()
    timed(f"10% of key cells missing ({share:.0%} of records): freq + indiv + global", n,
          lambda: pipeline(missing_cells))
    # Many missingness patterns: 12 keys of 5 equally likely values, 10% of cells missing, 100,000
    # records (about 1,160 patterns, the sparse path): 83.6 s before the probes of a pattern were
    # coded in one product, 9.2 s after.
    rng = np.random.default_rng(1)
    wide = pd.DataFrame(rng.integers(0, 5, size=(100_000, 12)).astype(float), columns=[f"k{j}" for j in range(12)])
    wide = wide.mask(rng.random(wide.shape) < 0.10)
    patterns = len(wide.isna().drop_duplicates())
    timed(f"100,000 x 12 keys, 10% of cells missing ({patterns:,} patterns): frequencies", len(wide),
          lambda: key_frequencies(wide, list(wide.columns)))
    print("(timings on a shared 2-core machine; other processes inflate them)")


if __name__ == "__main__":
    main()
