"""Issue 38 on the two files the plan search used to release with every categorical key as one
category: ARX's census-income extract (``tests/data/arx_adult/adult.csv``, 30,162 records, eight keys
drafted) and sdcMicro's ``free1`` (``tests/data/realcorpus/free1.csv``, 4,000 records, eight
categorical and three continuous keys, weighted), each drafted by ``sdc init`` and run unedited
(:mod:`run_corpus`).

What a methodologist checks, read from the released bytes with no function of sdc-dagster:

* **k reached**: every released record's keys are compatible with those of at least k - 1 other
  released records (SPEC §2.4: a missing value matches any value; :func:`compatible_frequencies`);
* **detail kept**: not every categorical key is released as one category; at least half of them keep
  two or more categories (the search's Flash finds plans meeting the target with detail left, where
  the walk in loss order ran out of budget before any);
* **the search says what it proved**: "optimal over N plans" or "best of N checked ..., bound B";
* the issue-34 properties of :mod:`release_properties` (faithful categories, whole numbers, the
  suppression limit).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE))

import release_properties  # noqa: E402
import run_corpus  # noqa: E402

FILES = [DATA / "arx_adult" / "adult.csv", DATA / "realcorpus" / "free1.csv"]


def compatible_frequencies(keys: pd.DataFrame) -> np.ndarray:
    """Per record, the records whose keys are compatible with its own (SPEC §2.4, sdcMicro's
    ``freqCalc``): equal in every key or missing in one of the two; a record missing every key
    counts n and is added to no other record's count. Computed per pair of missing-value patterns
    (the keys record i misses, those record j misses) by counting the records j of their pattern on
    the keys neither misses."""
    missing = keys.isna().to_numpy()
    text = keys.astype(str).to_numpy()
    patterns, pattern_of = np.unique(missing, axis=0, return_inverse=True)
    pattern_of = pattern_of.ravel()
    f = np.zeros(len(keys), dtype=np.int64)
    columns = np.arange(keys.shape[1])
    for q, own in enumerate(patterns):
        rows_i = np.flatnonzero(pattern_of == q)
        if own.all():
            f[rows_i] = len(keys)
            continue
        for p, other in enumerate(patterns):
            if other.all():
                continue
            rows_j = np.flatnonzero(pattern_of == p)
            shared = columns[~own & ~other]
            if not len(shared):
                f[rows_i] += len(rows_j)
                continue
            counts = pd.DataFrame(text[rows_j][:, shared]).value_counts()
            matched = pd.MultiIndex.from_arrays([text[rows_i][:, c] for c in shared]) if len(shared) > 1 else \
                pd.Index(text[rows_i][:, shared[0]])
            if len(shared) == 1:
                counts.index = counts.index.get_level_values(0)
            f[rows_i] += counts.reindex(matched).fillna(0).to_numpy(dtype=np.int64)
    return f


@pytest.mark.parametrize("original", FILES, ids=lambda p: p.name)
def test_drafted_spec_releases_a_plan_that_keeps_detail(original, tmp_path):
    copy = tmp_path / original.name
    shutil.copy(original, copy)
    home = tmp_path / "home"
    result = run_corpus.run_file(copy, home)
    assert result.ok, result.output[-3000:]
    survey = run_corpus.survey_name(copy)
    folder = release_properties.released_folder(home, survey)
    spec = yaml.safe_load((folder / "spec.yaml").read_text())
    keys = [name for name, v in spec["variables"].items() if v.get("role") == "categorical_key"]
    k = spec["risk"]["k"]
    _, safe = release_properties.read_safe_file(folder)
    released = [key for key in keys if key in safe.columns]

    f = compatible_frequencies(safe[released])
    assert (f >= k).all(), f"{int((f < k).sum())} released records below k = {k}"

    categories = {key: safe[key].dropna().nunique() for key in released}
    detailed = [key for key, n in categories.items() if n > 1]
    assert len(detailed) * 2 >= len(keys), f"categories per released key: {categories}"

    summary = pd.read_parquet(home / "storage" / survey / "plan_search" / "2024" / "summary.parquet").iloc[0]
    assert summary["optimality"].startswith("optimal over ") or ", bound " in summary["optimality"], summary["optimality"]

    properties = release_properties.check_release(copy, home, survey)
    assert properties.ok, properties
    print(f"\n{original.name}: plan {json.loads((home / 'releases' / survey / '2024' / 'release.json').read_text())['plan']}"
          f", categories per key {categories}, loss {result.loss:.4g}, search {summary['optimality']}")


def test_compatible_frequencies_reproduce_the_spec_examples():
    """SPEC §2.4's example (S004 Table 7.2): f = 2, 2, 3; and a record missing one key matching both
    values of it (f = 3, 3, 6, 4, 4, 4)."""
    table = pd.DataFrame({"sex": ["M", "M", "M"], "education": ["complete", "incomplete", None],
                          "status": ["employed"] * 3})
    assert compatible_frequencies(table).tolist() == [2, 2, 3]
    regions = pd.DataFrame({"region": [1, 1, None, 2, 2, 2], "sex": [1] * 6})
    assert compatible_frequencies(regions).tolist() == [3, 3, 6, 4, 4, 4]
