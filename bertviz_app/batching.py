"""Inputs that arrive together, run together: when a class presses Analyze at once, the new inputs that wait while
the model is busy go through it as one padded batch (cheaper per input than alone: docs/ARCHITECTURE.md,
"Measured"), each still answered on its own. Nothing waits for a batch to
fill: a lone input runs at once, alone, so a notebook never notices."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class _Job(Generic[Item, Result]):
    def __init__(self, item: Item):
        self.item = item
        self.done = threading.Event()
        self.result: Result | None = None
        self.error: BaseException | None = None


class Batcher(Generic[Item, Result]):
    """`submit(item)` from any thread returns `run_many(items)[k]` for its item, where `items` are the items waiting
    when a pass could start. At most `at_once` passes run at a time; a pass takes the waiting items in order of
    arrival, up to `max_items` and while `fits(items)` (the first always goes). A pass that raises is retried one
    item at a time, so that one input's failure is its own."""

    def __init__(self, run_many: Callable[[Sequence[Item]], Sequence[Result]], at_once: int = 1,
                 max_items: int = 16, fits: Callable[[Sequence[Item]], bool] = lambda items: True):
        if at_once < 1 or max_items < 1:
            raise ValueError(f"a batcher needs at least one pass at once and one item per pass, got {at_once} and "
                             f"{max_items}")
        self.run_many, self.max_items, self.fits = run_many, max_items, fits
        self.at_once = at_once
        self._passes = threading.BoundedSemaphore(at_once)
        self._waiting: deque[_Job] = deque()
        self._lock = threading.Lock()

    def submit(self, item: Item) -> Result:
        job = _Job(item)
        with self._lock:
            self._waiting.append(job)
        while not job.done.is_set():
            with self._passes:
                jobs = self._take()
                if jobs:
                    self._run(jobs)
                    continue
            job.done.wait()  # nothing left to take: another pass holds this job
        if job.error is not None:
            raise job.error
        return job.result

    def _take(self) -> list[_Job]:
        with self._lock:
            jobs = [self._waiting.popleft()] if self._waiting else []
            while self._waiting and len(jobs) < self.max_items and self.fits(
                    [j.item for j in jobs] + [self._waiting[0].item]):
                jobs.append(self._waiting.popleft())
        return jobs

    def _run(self, jobs: list[_Job]) -> None:
        try:
            results = list(self.run_many([job.item for job in jobs]))
            if len(results) != len(jobs):
                raise RuntimeError(f"a batch of {len(jobs)} items gave {len(results)} results")
        except BaseException as error:
            if len(jobs) > 1:
                for job in jobs:
                    self._run([job])
                return
            jobs[0].error = error
        else:
            for job, result in zip(jobs, results):
                job.result = result
        for job in jobs:
            job.done.set()
