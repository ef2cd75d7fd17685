"""Issue 34: files as other SDC tools publish them, unedited, give a release a methodologist would sign.

The corpus (``tests/data/realcorpus/``: sdcMicro's data sets as SPSS, Stata and CSV, the way an office
receives them; ``tests/data/arx_adult/adult.csv``: ARX's census-income extract, ``;``-separated) goes
through ``sdc init`` -> ``sdc check`` -> ``sdc run`` as a new user would (:mod:`run_corpus`). Every
released safe file, read back from its bytes, keeps the four properties of :mod:`release_properties`:
no original category counted more often than in the original, no fractional value in a whole-numbered
key, no key suppressed beyond the spec's utility limit, no more keys withheld or released as one
category than ``limits.max_keys_not_released`` allows, no value with more decimals than the original's.

:data:`WITHHELD` lists the files whose drafted targets no plan of the search's space meets within the
utility limits (the search's space always holds a plan meeting the risk target since issue 38, but the
limit of keys not released can rule out the only such plans). A file listed must be withheld cleanly (exit 3 "nothing released", a report, no traceback), never released
beyond the limits; every other file is released and checked.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE))

import release_properties  # noqa: E402
import run_corpus  # noqa: E402

FILES = sorted(p for p in (DATA / "realcorpus").iterdir() if p.suffix in run_corpus.SUFFIXES)
FILES.append(DATA / "arx_adult" / "adult.csv")

#: Files withheld today, with the check that binds (measured on the drafted specs, unedited): none.
#: Until issue 34's draft fitted the file, testdata2.dta (93 records, 8 categorical and 3 continuous
#: keys, l = 2) and the three files of 8 and 13 records (casc1.sav, francdat.sav, microdata.dta, 4
#: categorical keys each) were withheld: every plan meeting the targets released most keys as one
#: category, beyond limits.max_keys_not_released. The draft now keeps the keys the records support
#: (spec/roles.key_cap: one key for 8 records, two for 13, three for testdata2 at groups of 5 with its
#: continuous keys; testdata2's l = 2 on hhcivil is not drafted, no key in two classes meets it), each
#: decision listed for the methodologist to confirm (report.draft_decisions), and every key ends with
#: two classes before its top (search/space), so all are released. Files a methodologist would withhold
#: would be listed here with the reason.
WITHHELD: dict[str, str] = {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("realcorpus")
    for path in FILES:
        # 'testdata' names the bundled demo survey (sdc init refuses it): the office's copy is renamed
        name = "sdcmicro_testdata.sav" if path.name == "testdata.sav" else path.name
        shutil.copy(path, folder / name)
    return folder


def test_every_published_file_is_released_faithfully_or_withheld_cleanly(corpus, tmp_path, capsys):
    results = run_corpus.run_folder(corpus, tmp_path, jobs=2)
    checked = {r.file: release_properties.check_release(corpus / r.file, tmp_path / Path(r.file).stem,
                                                         run_corpus.survey_name(Path(r.file)))
               for r in results if r.ok}
    with capsys.disabled():
        print("\n" + run_corpus.table(results), flush=True)
        for name, properties in checked.items():
            print(f"{name}: {properties}", flush=True)
    assert len(results) == len(FILES)
    failures = []
    for r in results:
        cleanly = (r.init == 0 and r.check == 0 and r.run == 3 and r.report and not r.traceback)
        if r.file in WITHHELD and not (cleanly and not r.released):
            failures.append(f"{r.file}: expected withheld cleanly ({WITHHELD[r.file]}), got init {r.init}, check "
                            f"{r.check}, run {r.run}, released {r.released!r}, traceback {r.traceback}\n"
                            f"{r.output[-2500:]}")
        elif r.file not in WITHHELD and not r.ok:
            failures.append(f"{r.file}: init {r.init}, check {r.check}, run {r.run}, report {r.report}, "
                            f"traceback {r.traceback}\n{r.output[-2500:]}")
    failures += [f"{name}: {properties}" for name, properties in checked.items() if not properties.ok]
    assert not failures, "\n\n".join(failures)
