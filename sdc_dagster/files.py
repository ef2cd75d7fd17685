"""Writing files so that nothing is ever half-written: one atomic-write helper for every file the
tool writes (Parquet outputs, releases, manifests, reports, specs, landed waves).

A file is written beside its target as ``.<name>.<pid>.sdc-tmp`` (same folder, so same filesystem),
flushed to disk (``fsync``) and renamed over the target (``os.replace``, atomic on POSIX and
Windows): a reader sees the old file or the new one, never a cut one. On any failure (a full disk,
a permission error, the writer raising) the temporary file is removed and the error propagates.
A process killed between the write and the rename leaves its temporary file;
:func:`sweep_temporary_files` removes those whose process is gone.

Released files are byte for byte reproducible (their SHA-256 digests are in the release manifest and
``sdc audit`` compares them): :func:`pin_timestamp` sets the write-time stamps the file formats carry
to a fixed time.
"""

from __future__ import annotations

import errno
import io
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

TEMPORARY_SUFFIX = ".sdc-tmp"

#: errno values that mean "the disk cannot take this write", reported as such to the user.
STORAGE_ERRNOS = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
                  errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                  errno.EPERM: "operation not permitted", errno.EIO: "input/output error"}


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY_SUFFIX}")


@contextmanager
def atomic_path(path: str | Path, *, exclusive: bool = False) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to (by any writer that takes a path, e.g.
    ``DataFrame.to_parquet``); on leaving the block without error it is fsynced and renamed over
    ``path``, otherwise removed. The parent folder is created. ``exclusive``: never replace an
    existing ``path`` (FileExistsError), even one created meanwhile (a hard link, not a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    try:
        yield temporary
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        if exclusive:
            os.link(temporary, path)
        else:
            os.replace(temporary, path)
    except OSError as exc:  # a failed write() names no file: name the one the user must make room for
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    finally:
        temporary.unlink(missing_ok=True)


def write_atomic(path: str | Path, data: bytes | str, *, encoding: str = "utf-8", exclusive: bool = False) -> Path:
    """Write ``data`` (bytes, or text in ``encoding``) to ``path`` atomically (module docstring);
    ``exclusive`` as in :func:`atomic_path`."""
    payload = data.encode(encoding) if isinstance(data, str) else data
    with atomic_path(path, exclusive=exclusive) as temporary:
        temporary.write_bytes(payload)
    return Path(path)


def write_atomic_with(path: str | Path, writer: Callable[[Path], object]) -> Path:
    """``writer(temporary_path)`` then the atomic rename of :func:`atomic_path`."""
    with atomic_path(path) as temporary:
        writer(temporary)
    return Path(path)


def sweep_temporary_files(root: str | Path) -> list[Path]:
    """Remove the temporary files under ``root`` left by processes that no longer run (killed
    between a write and its rename); those of running processes (another wave being written now)
    are kept. Returns the files removed."""
    removed = []
    for leftover in Path(root).rglob(f"*{TEMPORARY_SUFFIX}") if Path(root).is_dir() else ():
        pid = leftover.name[: -len(TEMPORARY_SUFFIX)].rsplit(".", 1)[-1]
        if pid.isdigit() and not process_alive(int(pid)):
            leftover.unlink(missing_ok=True)
            removed.append(leftover)
    return removed


@contextmanager
def exclusive_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, with its folder, if missing) for the block:
    one process (or open file) at a time, the others wait; released when the block ends, also when
    the process dies. Where ``fcntl`` does not exist (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def storage_problem(error) -> str | None:
    """"<path>: <cause>" when ``error`` (or an error it was raised from) is the disk refusing a
    write (:data:`STORAGE_ERRNOS`) or SQLite reporting a full or failing disk; otherwise None.
    An error without a path (a buffered file flushed on close) is named "the data home" only when
    no error along the chain names one.

    ``error`` is an exception, or an error serialised by the process that raised it (an object with
    ``message``, ``cause`` and ``context``, as Dagster reports a failed step): the errno is then read
    from the message (``[Errno 28] No space left on device: '<path>'``)."""
    seen = set()
    without_path = None
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        raised = isinstance(error, BaseException)
        text = str(error) if raised else error.message or ""
        if isinstance(error, OSError):
            number, where = error.errno, error.filename
        else:  # a raised error's text may repeat the errno of the OSError it wraps: not read
            match = None if raised else re.search(r"\[Errno (\d+)\] [^:]*(?:: '([^']*)')?", text)
            number, where = (int(match.group(1)), match.group(2)) if match else (None, None)
        if number in STORAGE_ERRNOS:
            if where:
                return f"{where}: {STORAGE_ERRNOS[number]}"
            without_path = without_path or f"the data home: {STORAGE_ERRNOS[number]}"
        if "database or disk is full" in text or "disk I/O error" in text:
            return f"{os.environ.get('DAGSTER_HOME', 'the Dagster instance')}: the disk is full or failing ({text.splitlines()[0]})"
        error = (error.__cause__ or error.__context__) if raised else (error.cause or error.context)
    return without_path


# write-time stamps of the released formats: (pattern, fixed value, bytes of the header searched);
# readstat's (SPSS, Stata, SAS transport) in the file header
_TIMESTAMPS = {
    "spss": (re.compile(rb"\d\d [A-Z][a-z]{2} \d\d\d\d:\d\d:\d\d"), b"01 Jan 7000:00:00", 128),
    "stata": (re.compile(rb"<timestamp>\x11\d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d</timestamp>"),
              b"<timestamp>\x1101 Jan 1970 00:00</timestamp>", 1024),
    "xport": (re.compile(rb"\d\d[A-Z]{3}\d\d:\d\d:\d\d:\d\d"), b"01JAN70:00:00:00", 640),
}
# an Office Open XML workbook: the document properties' creation and modification times (ECMA-376
# Part 2 §11, ``docProps/core.xml``, W3CDTF dates) and the ZIP entries' modification times
_XLSX_CORE = "docProps/core.xml"
_XLSX_DATES = re.compile(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:(?:created|modified)>)")
_XLSX_FIXED = rb"\g<1>1970-01-01T00:00:00Z\g<2>"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP entry can hold


def pin_timestamp(data: bytes, fmt: str) -> bytes:
    """``data`` (a file of format ``fmt``) with its write-time stamps set to a fixed time (module
    docstring): readstat's stamp in an SPSS, Stata or SAS transport header to 1970-01-01 00:00; an
    ``xlsx`` workbook's creation and modification times to 1970-01-01T00:00:00Z and its ZIP entries
    to 1980-01-01 00:00 (entries kept in their order, each compressed as it was). RuntimeError when
    the stamp is not where the writer puts it (the file would not be reproducible)."""
    if fmt == "xlsx":
        return _pin_xlsx(data)
    pattern, fixed, header = _TIMESTAMPS[fmt]
    pinned, found = pattern.subn(fixed, data[:header])
    if not found:
        raise RuntimeError(f"no write timestamp in the {fmt} header where readstat puts it: the release "
                           "would not be reproducible (has pyreadstat changed its file layout?)")
    return pinned + data[header:]


def _pin_xlsx(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        names = source.namelist()
        if _XLSX_CORE not in names:
            raise RuntimeError(f"no {_XLSX_CORE} in the workbook: its write time cannot be pinned")
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == _XLSX_CORE:
                content = _XLSX_DATES.sub(_XLSX_FIXED, content)
            pinned = zipfile.ZipInfo(info.filename, date_time=_ZIP_EPOCH)
            pinned.compress_type = info.compress_type
            pinned.external_attr = info.external_attr
            target.writestr(pinned, content)
    return out.getvalue()
