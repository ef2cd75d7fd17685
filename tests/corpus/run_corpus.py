"""Take every file of a folder through ``sdc init`` -> ``sdc check`` -> ``sdc run``, unedited.

As a new user would: one survey per file, drafted by ``sdc init NAME --from FILE``, checked with
``sdc check SPEC --data FILE`` and run as wave 2024 with ``sdc run NAME 2024 --file FILE``, each
command a fresh ``sdc`` process in a data home of its own. Prints one row per file: rows, columns,
keys drafted, the exit status of each command, seconds, the released plan with its loss and the
plan search's seconds, the other plans (eligible or withheld), and whether a traceback appeared
anywhere in the output.

    python tests/corpus/run_corpus.py CORPUS_DIR [--jobs N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
import yaml

SUFFIXES = (".sav", ".dta", ".csv", ".parquet")
#: What a Python traceback leaves in the output: its header, Dagster's "Stack Trace:", a frame line.
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^Stack Trace:|^\s+File \".+\", line \d+", re.M)


@dataclass
class CorpusRun:
    """What the chain did on one file."""

    file: str
    rows: int = 0
    columns: int = 0
    categorical_keys: int = 0
    continuous_keys: int = 0
    init: int | None = None
    check: int | None = None
    run: int | None = None
    seconds: float = 0.0
    released: str = ""
    loss: float = float("nan")
    search_s: float = float("nan")
    eligible: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    report: bool = False
    traceback: bool = False
    output: str = ""

    @property
    def ok(self) -> bool:
        """Exit 0 for the run (a plan released), a report, no traceback anywhere."""
        return self.init == 0 and self.check == 0 and self.run == 0 and self.report and not self.traceback


def _sdc(args: list[str], home: Path, timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SDC_HOME", "SDC_SPECS", "DAGSTER_HOME")}
    command = [sys.executable, "-m", "sdc_dagster.cli", "--home", str(home), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=home)
    except subprocess.TimeoutExpired as exc:
        return -9, f"TIMEOUT after {timeout} s\n{exc.stdout or ''}{exc.stderr or ''}"
    return done.returncode, done.stdout + done.stderr


def survey_name(path: Path) -> str:
    """The survey name ``sdc init`` is given for a corpus file: its stem, made a legal name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", path.stem)
    return name if name[:1].isalpha() else f"s_{name}"


def run_file(path: Path, home: Path, *, timeout: float = 900.0) -> CorpusRun:
    """``sdc init`` -> ``sdc check`` -> ``sdc run`` on ``path`` in the data home ``home``."""
    path, home = Path(path).resolve(), Path(home)
    home.mkdir(parents=True, exist_ok=True)
    result, name, log = CorpusRun(path.name), survey_name(path), []
    started = time.monotonic()
    result.init, text = _sdc(["init", name, "--from", str(path)], home, timeout)
    log.append(text)
    spec_file = home / "specs" / f"{name}.yaml"
    if result.init == 0:
        spec = yaml.safe_load(spec_file.read_text())
        roles = [v.get("role") for v in spec["variables"].values()]
        result.columns = len(roles)
        result.categorical_keys = roles.count("categorical_key")
        result.continuous_keys = roles.count("continuous_key")
        result.check, text = _sdc(["check", str(spec_file), "--data", str(path)], home, timeout)
        log.append(text)
        result.run, text = _sdc(["run", name, "2024", "--file", str(path)], home, timeout)
        log.append(text)
        match = re.search(r"(\d+) records match the spec", log[1])
        result.rows = int(match.group(1)) if match else 0
    result.seconds = round(time.monotonic() - started, 1)
    result.output = "\n".join(log)
    result.traceback = bool(TRACEBACK.search(result.output))
    report = home / "reports" / name / "2024.json"
    result.report = report.is_file()
    release = home / "releases" / name / "2024" / "release.json"
    result.released = json.loads(release.read_text())["plan"] if release.is_file() else ""
    if result.report:
        for plan, figures in json.loads(report.read_text()).get("plans", {}).items():
            if plan == result.released:
                result.loss = figures.get("loss", {}).get("lambda_arctan", float("nan"))
            elif figures.get("releasable"):
                result.eligible.append(plan)
            else:
                result.withheld.append(plan)
    searched = home / "storage" / name / "plan_search" / "2024" / "summary.parquet"
    if searched.is_file():
        result.search_s = float(pd.read_parquet(searched)["seconds"].iloc[0])
    return result


def run_folder(folder: Path, work: Path, *, jobs: int = 1, only: list[str] | None = None,
               timeout: float = 900.0) -> list[CorpusRun]:
    """:func:`run_file` on every corpus file of ``folder``, ``jobs`` at a time, homes under ``work``."""
    files = sorted(p for p in Path(folder).iterdir() if p.suffix in SUFFIXES and (not only or p.stem in only))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda p: run_file(p, Path(work) / p.stem, timeout=timeout), files))


def table(results: list[CorpusRun]) -> str:
    """The corpus table: file, rows, columns, keys drafted, exits, seconds, the released plan with its
    information loss (lambda-arctan) and the plan search's seconds, the eligible and withheld plans."""
    frame = pd.DataFrame([{k: v for k, v in asdict(r).items() if k != "output"} for r in results])
    frame["eligible"] = frame["eligible"].map(", ".join)
    frame["withheld"] = frame["withheld"].map(", ".join)
    frame["ok"] = [r.ok for r in results]
    return frame.to_string(index=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--work", help="where the data homes go (default: a temporary folder)")
    parser.add_argument("--show", action="store_true", help="print the output of every file that failed")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="sdc-corpus-"))
    results = run_folder(Path(args.corpus), work, jobs=args.jobs, only=args.only)
    print(table(results))
    if args.show:
        for r in results:
            if not r.ok:
                print(f"\n===== {r.file}\n{r.output[-3000:]}")
    sys.exit(0 if all(r.ok for r in results) else 1)
