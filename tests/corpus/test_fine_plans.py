"""Issue 38 on the two files the plan search used to release with every categorical key as one
category: ARX's census-income extract (``tests/data/arx_adult/adult.csv``, 30,162 records, eight keys
drafted) and sdcMicro's ``free1`` (``tests/data/realcorpus/free1.csv``, 4,000 records, eight
categorical and three continuous keys, weighted), each drafted by ``sdc init`` and run unedited
(:mod:`run_corpus`).

What a methodologist checks, read from the released bytes with no function of sdc-dagster:

* **k reached**: every released record with all its categorical keys present shares them with at
  least k - 1 other released records (checked on those records only: a record with a key missing
  matches any value there, SPEC §2.4, which the release's own k-anonymity check counts);
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
    safe = release_properties._read(release_properties._safe_file(folder))
    released = [key for key in keys if key in safe.columns]

    complete = safe[released].dropna()
    counts = complete.astype(str).groupby(released)[released[0]].transform("size")
    assert (counts.to_numpy() >= k).all(), f"{int((counts.to_numpy() < k).sum())} complete records below k = {k}"

    categories = {key: safe[key].dropna().nunique() for key in released}
    detailed = [key for key, n in categories.items() if n > 1]
    assert len(detailed) * 2 >= len(keys), f"categories per released key: {categories}"

    summary = pd.read_parquet(home / "storage" / survey / "plan_search" / "2024" / "summary.parquet").iloc[0]
    assert summary["optimality"].startswith("optimal over ") or ", bound " in summary["optimality"], summary["optimality"]

    properties = release_properties.check_release(copy, home, survey)
    assert properties.ok, properties
    print(f"\n{original.name}: plan {json.loads((home / 'releases' / survey / '2024' / 'release.json').read_text())['plan']}"
          f", categories per key {categories}, loss {result.loss:.4g}, search {summary['optimality']}")
