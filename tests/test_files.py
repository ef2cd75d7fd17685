"""Issue 25: the one atomic-write helper (sdc_dagster/files.py) never leaves a cut file or a
temporary file behind, and the start-up sweep removes only the leftovers of dead processes."""

import errno
import os
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from sdc_dagster.files import TEMPORARY_SUFFIX, storage_problem, sweep_temporary_files, write_atomic, write_atomic_with


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out" / "report.html"
    write_atomic(target, "old")

    def broken(path):
        path.write_text("half of the new")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with pytest.raises(OSError):
        write_atomic_with(target, broken)
    assert target.read_text() == "old" and sorted(p.name for p in target.parent.iterdir()) == ["report.html"]
    write_atomic_with(target, lambda path: pd.DataFrame({"a": [1]}).to_parquet(path))
    assert pd.read_parquet(target)["a"].tolist() == [1]


def test_exclusive_write_never_replaces_a_file(tmp_path):
    target = tmp_path / "spec.yaml"
    write_atomic(target, "mine", exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(target, "theirs", exclusive=True)
    assert target.read_text() == "mine" and len(list(tmp_path.iterdir())) == 1


def test_the_sweep_removes_the_leftovers_of_dead_processes_only(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    left = tmp_path / "releases" / f".protected.parquet.{dead_pid}{TEMPORARY_SUFFIX}"
    left.parent.mkdir()
    left.write_bytes(b"cut")
    live = tmp_path / f".2024.parquet.{os.getpid()}{TEMPORARY_SUFFIX}"
    live.write_bytes(b"being written")
    assert sweep_temporary_files(tmp_path) == [left]
    assert not left.exists() and live.exists()


def test_storage_problems_name_the_path_and_the_cause(monkeypatch):
    full = OSError(errno.ENOSPC, "No space left on device", "/data/home/x.parquet")
    assert storage_problem(RuntimeError("wrapped")) is None
    try:
        raise RuntimeError("step failed") from full
    except RuntimeError as exc:
        assert storage_problem(exc) == "/data/home/x.parquet: no space left on the device"
    try:  # a wrapper repeating the errno in its text still names the path of the OSError it wraps
        raise RuntimeError("write failed: [Errno 28] No space left on device") from full
    except RuntimeError as exc:
        assert storage_problem(exc) == "/data/home/x.parquet: no space left on the device"
    unnamed = OSError(errno.ENOSPC, "No space left on device")  # a buffered file flushed on close
    assert storage_problem(unnamed) == "the data home: no space left on the device"
    try:  # ... while Dagster's SQLite instance had failed: the error that names a path wins
        try:
            raise RuntimeError("(sqlite3.OperationalError) disk I/O error")
        finally:
            raise unnamed
    except OSError as exc:
        monkeypatch.setenv("DAGSTER_HOME", "/data/home/dagster")
        assert storage_problem(exc) == ("/data/home/dagster: the disk is full or failing "
                                        "((sqlite3.OperationalError) disk I/O error)")


def test_storage_problems_of_a_failed_step_serialised_by_another_process():
    """A step that failed in a run worker reaches ``sdc run`` as Dagster's serialised error: message,
    cause and context, no exception object."""
    def serialised(message, cause=None, context=None):
        return SimpleNamespace(message=message, cause=cause, context=context)

    full = serialised("OSError: [Errno 28] No space left on device: '/data/home/x.parquet'\n")
    assert storage_problem(serialised("dagster wrapper", cause=full)) == \
        "/data/home/x.parquet: no space left on the device"
    assert storage_problem(serialised("wrapper", context=serialised("PermissionError: [Errno 13] denied"))) == \
        "the data home: permission denied"
    assert storage_problem(serialised("ValueError: [Errno 2] No such file or directory: 'x'")) is None


def test_pin_timestamp_fixes_a_workbooks_write_times_and_refuses_a_zip_without_them():
    import io
    import zipfile

    from sdc_dagster.files import pin_timestamp

    def workbook(stamp: str, when: tuple) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(zipfile.ZipInfo("[Content_Types].xml", date_time=when), "<Types/>")
            archive.writestr(zipfile.ZipInfo("docProps/core.xml", date_time=when),
                             f'<cp:coreProperties><dcterms:created xsi:type="dcterms:W3CDTF">{stamp}</dcterms:created>'
                             f'<dcterms:modified xsi:type="dcterms:W3CDTF">{stamp}</dcterms:modified></cp:coreProperties>')
        return buffer.getvalue()

    first = pin_timestamp(workbook("2026-11-27T20:59:01Z", (2026, 11, 27, 20, 59, 2)), "xlsx")
    second = pin_timestamp(workbook("2031-01-02T03:04:05Z", (2031, 1, 2, 3, 4, 6)), "xlsx")
    assert first == second
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert archive.namelist() == ["[Content_Types].xml", "docProps/core.xml"]
        assert archive.getinfo("docProps/core.xml").date_time == (1980, 1, 1, 0, 0, 0)
        assert archive.read("docProps/core.xml").count(b">1970-01-01T00:00:00Z<") == 2
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(RuntimeError, match=r"no docProps/core.xml in the workbook"):
        pin_timestamp(buffer.getvalue(), "xlsx")
