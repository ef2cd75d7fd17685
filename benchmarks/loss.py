"""Benchmark: every distance and moment measure plus TOPSIS on 1,000,000 records x 10 variables.

Target (issue "Information loss, TOPSIS and the release report"): under 10 s in all.
Run: .venv/bin/python benchmarks/loss.py [n_records]
"""

import sys
import time

import numpy as np
import pandas as pd

from sdc_dagster.loss import distance_loss, inverse_correlation_loss, moment_losses, topsis_loss


def synthetic_files(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """6 continuous, 2 ordinal, 2 nominal variables; noise, recoding, swaps and 1% suppression."""
    rng = np.random.default_rng(seed)
    original, protected, scales = {}, {}, {}
    for j in range(6):
        x = rng.lognormal(8, 1, n)
        y = x * (1 + rng.normal(0, 0.05, n))
        y[rng.random(n) < 0.01] = np.nan
        original[f"c{j}"], protected[f"c{j}"], scales[f"c{j}"] = x, y, "continuous"
    for j in range(2):
        x = rng.integers(1, 9, n)
        original[f"o{j}"], protected[f"o{j}"], scales[f"o{j}"] = x, np.where(x % 2 == 0, x - 1, x), "ordinal"
    for j in range(2):
        x = rng.integers(1, 6, n)
        y = np.where(rng.random(n) < 0.1, rng.integers(1, 6, n), x)
        original[f"n{j}"], protected[f"n{j}"], scales[f"n{j}"] = x, y, "nominal"
    return pd.DataFrame(original), pd.DataFrame(protected), scales


def timed(label: str, function, *args, **kwargs) -> float:
    start = time.perf_counter()
    function(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"{label:<42s} {elapsed:8.3f} s")
    return elapsed


def main(n: int = 1_000_000) -> None:
    original, protected, scales = synthetic_files(n)
    continuous = [c for c, s in scales.items() if s == "continuous"]
    print(f"{n:,} records x {len(scales)} variables ({len(continuous)} continuous)")
    total = 0.0
    for variant in ("max_abs", "max_sq", "arctan", "scaled_arctan", "max_value"):
        total += timed(f"distance_loss {variant}", distance_loss, original, protected, scales,
                       continuous_distance=variant, c=0.001)
    total += timed("distance_loss arctan, hidden rule A", distance_loss, original, protected, scales, hidden_rule="A")
    total += timed("moment_losses (all §9.4/§9.6/§9.7 forms)", moment_losses, original, protected, continuous)
    total += timed("topsis_loss arctan empirical", topsis_loss, original, protected, scales)
    total += timed("topsis_loss max_abs theoretical", topsis_loss, original, protected, scales,
                   continuous_distance="max_abs", pattern="theoretical")
    print(f"{'TOTAL distance + moment + TOPSIS':<42s} {total:8.3f} s  (target < 10 s)")
    # Kendall tau-b (S003's choice) costs O(n log n) per pair in scipy: reported separately
    timed("inverse_correlation_loss kendall (2 x 15 pairs)", inverse_correlation_loss, original, protected,
          method="kendall", columns=continuous)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
