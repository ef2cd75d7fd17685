"""The memory allocator of an ``sdc`` process, tuned for the wave chain's large arrays (issue 38).

The chain allocates and frees arrays of the wave's length hundreds of times: on 1,000,000 records a
column of float64 is 8 MB, three continuous keys 24 MB. glibc's ``malloc`` serves a block above its
*mmap threshold* with a fresh ``mmap`` and returns it to the system when freed, and it gives the top
of its heap back (``trim``) once more than the *trim threshold* is free there; every page of memory
obtained again from the system is then zeroed by the kernel on its first touch (a page fault). The
threshold starts at 128 kB and rises only as far as the largest block freed so far (glibc's dynamic
threshold), so much of that memory comes from the system again and again: in a 1M-record ``sdc run``
about 3.2 million page faults and 25-40 of its CPU seconds spent in the kernel (system time).

:func:`tune_allocator` sets, with ``mallopt`` (glibc ``malloc.h``; the same settings as the
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_TOP_PAD_`` environment variables,
mallopt(3)): the mmap threshold to its largest value, 32 MiB (blocks below it come from the heap,
whose freed memory the next array reuses without faults), the trim threshold to 1 GiB (the heap is
not handed back between steps; the process's peak memory is unchanged, since its peak is the
largest the heap ever is) and a top pad of 256 MiB (the heap grows in large steps). The 1M wave
measured back to back on the shared 2-core machine (``benchmarks/wave.py``'s wave): 118.5 s user +
27.4 s system as it was, 101.5 s + 18.1 s with these settings given as the environment variables
(the trim threshold 16 GiB there; ``mallopt`` takes a C int), peak memory 3.62 GB and 3.70 GB; the
branch with :func:`tune_allocator` (and the kept results of :mod:`sdc_dagster.numerics.kept`) had
1.20 million page faults where the base had 3.38 million.

Only an ``sdc`` command's own process is tuned (:func:`sdc_dagster.cli.command`), where the process
ends with the command; the engine used as a library leaves its host's allocator alone. Elsewhere
than glibc (macOS, Windows, musl) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt's parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

#: (parameter, value) set by :func:`tune_allocator`: the mmap threshold at glibc's maximum on 64-bit
#: systems (HEAP_MAX_SIZE / 2), the trim threshold and the top pad (module docstring).
SETTINGS = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 1 << 30), (_M_TOP_PAD, 256 << 20))


def tune_allocator() -> bool:
    """Set :data:`SETTINGS` with glibc's ``mallopt``; whether every setting was accepted (False, and
    nothing changed, where the C library is not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(parameter, value) == 1 for parameter, value in SETTINGS)
