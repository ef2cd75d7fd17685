"""Speed of the variable contributions (SPEC §6): prints seconds, records/s, peak memory, speed-up.

Targets (project issue "Combined ... risk and each variable's share of it, exact and fast"):
100,000 records x 10 variables (6 categorical, 4 continuous): Shapley and solidarity each < 5 s;
1,000,000 records x 12 variables (8 + 4) < 60 s with peak memory < 4 GB; 20 variables on 10,000
records completes. The naive reference builds every record's full truth table over 2^m
coalitions (pandas group sizes per categorical subset) and evaluates the value formula on it,
vectorised over records; it is run on the 100,000-record case and checked to agree.

Missing values (SPEC §5.8, issue "missing values in the combined measure"): with 10% of every
quasi-identifier missing, Shapley + solidarity on 100,000 x 10 take at most 2x the complete-data
time; both values together (:func:`contribution_values`, one pass) on 1,000,000 x 12 take less
than Shapley alone did before the shared pass (25.7 s measured on the shared machine).

Run: .venv/bin/python benchmarks/contributions.py [--skip-million]
"""

from __future__ import annotations

import argparse
import itertools
import resource
import time

import numpy as np
import pandas as pd

from sdc_dagster.risk.contribution import contribution_values, contributions, game_values
from sdc_dagster.risk.combined import prepare_combined

# Categorical cardinalities and probabilities in the spirit of SPEC §5.7 (skewed categories).
_CARDS = [2, 7, 7, 6, 5, 4, 3, 9, 3, 4, 2, 5, 3, 2, 4, 3]


def synthetic_survey(n: int, h: int, c: int, seed: int = 0) -> tuple[pd.DataFrame, list[str], list[str], dict]:
    rng = np.random.default_rng(seed)
    frame = {}
    for j in range(h):
        card = _CARDS[j % len(_CARDS)]
        p = rng.dirichlet(np.full(card, 2.0))
        frame[f"C{j}"] = rng.choice(card, size=n, p=p)
    draws = [lambda: rng.uniform(2000, 10000, n), lambda: rng.normal(50, 10, n), lambda: rng.f(5, 20, n), lambda: rng.lognormal(8, 1, n)]
    for j in range(c):
        frame[f"Y{j}"] = draws[j % len(draws)]()
    categorical, continuous = [f"C{j}" for j in range(h)], [f"Y{j}" for j in range(c)]
    # Precisions scaled so that a few percent of values are unsafe at any n.
    precision = {y: min(0.5, 0.02 * 1000 / n * 10) for y in continuous}
    return pd.DataFrame(frame), categorical, continuous, precision


def with_missing(data: pd.DataFrame, share: float, seed: int = 0) -> pd.DataFrame:
    """A copy of ``data`` with ``share`` of the values of every column set missing (seeded)."""
    rng = np.random.default_rng(seed)
    return data.mask(rng.random(data.shape) < share)


def naive_values(data, categorical, continuous, precision, value, *, k=3, chunk=10_000) -> np.ndarray:
    """Reference: full truth table of every record (records x 2^m), then the value formula."""
    h, c = len(categorical), len(continuous)
    m = h + c
    unsafe_cont = prepare_combined(data, categorical, continuous, precision, k=k).unsafe_continuous
    cat_unsafe = np.zeros((len(data), 1 << h), dtype=bool)
    for r in range(1, h + 1):
        for subset in itertools.combinations(range(h), r):
            cols = [categorical[j] for j in subset]
            size = data.groupby(cols)[cols[0]].transform("size").to_numpy()
            cat_unsafe[:, sum(1 << j for j in subset)] = size < k
    coalitions = np.arange(1 << m)
    cat_part, cont_part = coalitions & ((1 << h) - 1), coalitions >> h
    out = np.empty((len(data), m))
    for start in range(0, len(data), chunk):
        stop = start + chunk
        cont_hit = (unsafe_cont[start:stop].astype(np.int64) @ (1 << np.arange(c)))[:, None] & cont_part[None, :]
        table = cat_unsafe[start:stop][:, cat_part] | (cont_hit != 0)
        out[start:stop] = game_values(table, value)
    return out


def peak_memory_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux reports kB


def timed(label, n, fn):
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    print(f"{label:<58} {seconds:8.2f} s  {n / seconds:12,.0f} records/s  peak RSS {peak_memory_gb():5.2f} GB")
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-million", action="store_true", help="skip the 1,000,000-record case")
    args = parser.parse_args()

    n = 100_000
    data, cat, cont, prec = synthetic_survey(n, 6, 4)
    contributions(data.head(1000), cat, cont, prec)  # warm-up: imports and DuckDB start-up
    data, cat, cont, prec = synthetic_survey(n, 6, 4)
    for value in ("shapley", "solidarity"):
        (fast, global_), fast_s = timed(f"{n:,} records, 6+4 variables, {value}", n, lambda: contributions(data, cat, cont, prec, value=value))
        naive, naive_s = timed(f"  naive brute force over 2^10 coalitions, {value}", n, lambda: naive_values(data, cat, cont, prec, value))
        print(f"  speed-up {naive_s / fast_s:6.1f}x, max |difference| {np.abs(naive - fast.to_numpy()).max():.2e}, "
              f"unsafe records {int((fast.sum(axis=1) > 0).sum()):,}")
    print("  global Shapley:", global_.round(4).to_dict())

    both = ("shapley", "solidarity")
    missing = with_missing(data, 0.10, seed=3)
    complete_s, missing_s = [], []  # best of 3: the machine is shared, single timings are noisy
    for _ in range(3):
        complete_s.append(timed(f"{n:,} records, 6+4 variables, shapley + solidarity in one pass", n,
                                lambda: contribution_values(data, cat, cont, prec, values=both))[1])
        missing_s.append(timed(f"{n:,} records, 6+4 variables, 10% missing, shapley + solidarity", n,
                               lambda: contribution_values(missing, cat, cont, prec, values=both))[1])
    print(f"  missing / complete time ratio (best of 3) {min(missing_s) / min(complete_s):5.2f} (target <= 2)")

    if not args.skip_million:
        n = 1_000_000
        data, cat, cont, prec = synthetic_survey(n, 8, 4, seed=1)
        timed(f"{n:,} records, 8+4 variables, shapley", n, lambda: contributions(data, cat, cont, prec))
        timed(f"{n:,} records, 8+4 variables, shapley + solidarity in one pass (target < 25.7 s)", n,
              lambda: contribution_values(data, cat, cont, prec, values=both))
        missing = with_missing(data, 0.10, seed=4)
        del data
        timed(f"{n:,} records, 8+4 variables, 10% missing, shapley + solidarity", n,
              lambda: contribution_values(missing, cat, cont, prec, values=both))
        del missing

    n = 10_000
    for h, c in ((12, 8),):
        data, cat, cont, prec = synthetic_survey(n, h, c, seed=2)
        timed(f"{n:,} records, {h}+{c} = {h + c} variables, shapley", n, lambda: contributions(data, cat, cont, prec))
        missing = with_missing(data, 0.10, seed=5)
        timed(f"{n:,} records, {h}+{c} = {h + c} variables, 10% missing, shapley", n,
              lambda: contributions(missing, cat, cont, prec))


if __name__ == "__main__":
    main()
