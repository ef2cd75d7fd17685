"""Issue 38: an ``sdc`` process's allocator keeps the memory of freed arrays for the next ones
(sdc_dagster.cli.allocator): arrays of a 1M wave's columns allocated again and again no longer fault
every page in afresh from the system."""

import subprocess
import sys
import textwrap

import pytest

from sdc_dagster.cli import allocator

_FAULTS = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from sdc_dagster.cli.allocator import tune_allocator
    tuned = tune_allocator() if sys.argv[1] == "tuned" else None
    np.ones(3 << 20).sum()  # a first array of 24 MB, touched and freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):  # 20 more of the same size, as a wave chain's steps allocate them
        np.ones(3 << 20).sum()
    print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _page_faults(mode: str) -> tuple[str, int]:
    # numpy's huge pages (2 MB, one fault each) would hide the faults of 4 kB pages
    done = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True,
                          env={"NUMPY_MADVISE_HUGEPAGE": "0", "PATH": ""})
    tuned, faults = done.stdout.split()
    return tuned, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's (Linux)")
def test_a_tuned_process_reuses_freed_arrays_without_page_faults():
    tuned, faults = _page_faults("tuned")
    assert tuned == "True"
    # 20 arrays of 24 MB are 122,880 pages of 4 kB: all but a few served from the kept heap
    assert faults < 1_000
    # an untuned process gets each array from the system again (glibc's dynamic mmap threshold
    # rises to the freed block's size only after the first, so it may keep some)
    assert _page_faults("plain")[1] > faults


def test_the_settings_are_glibcs_mallopt_parameters_within_their_limits():
    settings = dict(allocator.SETTINGS)
    assert settings[-3] == 32 * 2 ** 20  # M_MMAP_THRESHOLD: at most HEAP_MAX_SIZE / 2 (64 MiB / 2) on 64-bit
    assert all(0 < value < 2 ** 31 for value in settings.values())  # mallopt takes a C int


def test_the_command_tunes_its_own_process_only(monkeypatch):
    calls = []
    monkeypatch.setattr("sdc_dagster.cli.tune_allocator", lambda: calls.append(1) or True)
    monkeypatch.setattr("sdc_dagster.cli.main", lambda argv=None: 0)
    monkeypatch.setattr("sdc_dagster.cli.os._exit", lambda code: calls.append(("exit", code)))
    from sdc_dagster.cli import command

    command()
    assert calls == [1, ("exit", 0)]
