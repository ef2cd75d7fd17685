"""Worker processes of the table computations: HiTaS's subtables (:mod:`sdc_dagster.tables.hitas`)
and the audit's independent components (:mod:`sdc_dagster.tables.intruder`).

``with Pool(workers) as pool: pool.map(fn, items)`` gives ``fn(item)`` for every item in order, in
``workers`` processes, or in this process when ``workers <= 1`` or there are fewer than two items
(no process is started for them). The processes are spawned, not forked: the engine may run inside
a threaded Dagster process, where a fork copies locks held by other threads.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor


class Pool:
    """``map(fn, items)`` in this process or in a pool of ``workers`` spawned processes (module text)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> Pool:
        if self.workers > 1:
            self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self

    def map(self, fn: Callable, items: Sequence) -> Iterator:
        if self.executor is None or len(items) < 2:
            return (fn(item) for item in items)
        return self.executor.map(fn, items)

    def __exit__(self, *exc) -> None:
        if self.executor is not None:
            self.executor.shutdown()
