"""Issue 34: files as other SDC tools publish them, unedited, give a release a methodologist would sign.

The corpus (``tests/data/realcorpus/``: sdcMicro's data sets as SPSS, Stata and CSV, the way an office
receives them; ``tests/data/arx_adult/adult.csv``: ARX's census-income extract, ``;``-separated) goes
through ``sdc init`` -> ``sdc check`` -> ``sdc run`` as a new user would (:mod:`run_corpus`), and each
released safe file, read back from its bytes, keeps the three properties of :mod:`release_properties`:
no original category counted more often than in the original, no fractional value in a whole-numbered
key, no key suppressed beyond the spec's utility limit.
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


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("realcorpus")
    for path in FILES:
        # 'testdata' names the bundled demo survey (sdc init refuses it): the office's copy is renamed
        name = "sdcmicro_testdata.sav" if path.name == "testdata.sav" else path.name
        shutil.copy(path, folder / name)
    return folder


def test_every_published_file_is_released_faithfully(corpus, tmp_path, capsys):
    results = run_corpus.run_folder(corpus, tmp_path, jobs=2)
    checked = {r.file: release_properties.check_release(corpus / r.file, tmp_path / Path(r.file).stem,
                                                         run_corpus.survey_name(Path(r.file)))
               for r in results if r.ok}
    with capsys.disabled():
        print("\n" + run_corpus.table(results), flush=True)
        for name, properties in checked.items():
            print(f"{name}: {properties}", flush=True)
    assert len(results) == len(FILES)
    failures = [f"{r.file}: init {r.init}, check {r.check}, run {r.run}, report {r.report}, "
                f"traceback {r.traceback}\n{r.output[-2500:]}" for r in results if not r.ok]
    failures += [f"{name}: {properties}" for name, properties in checked.items() if not properties.ok]
    assert not failures, "\n\n".join(failures)
