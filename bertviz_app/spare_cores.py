"""Long analyses (an explanation's integrated gradients, blank-out and head silencings) on the cores torch leaves
idle. The server runs every pass on one torch thread (limits.THREADS: OpenMP threads that outnumber free cores spin
against each other), so on two cores one Explain used one. Here its batches, which are independent, are shared
between the calling thread and helper threads, each running whole batches on one torch thread: no thread ever waits
on another inside an operation, so a busy core slows only its own batches.

Fairness to other visitors: a helper runs at a lower priority (nice +10 on Linux), so another visitor's pass, on a
thread of normal priority, takes the core first; the explanation then goes on at the calling thread's pace alone.
The batches are the same whoever runs them and the results are assembled in their order, so the numbers are the
same bit for bit with or without helpers. With one helper two batches are alive at once: twice a memory budget's
batch (targets.batch_size_for) at the peak."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")
Report = Callable[[float], None]
HELPER_NICENESS = 10


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def spare_cores() -> int:
    """Cores this process may use beyond torch's intra-op threads (0 when torch already uses them all)."""
    return max(0, cores() - torch.get_num_threads())


def workers_now() -> float:
    """How many threads' worth of work a long analysis can expect now: its own, plus the spare cores left idle by
    the machine's recent load (the load average of the last minute; on a busy machine a helper gets little)."""
    try:
        idle = max(0.0, (os.cpu_count() or 1) - os.getloadavg()[0])
    except OSError:  # no load average on this system
        idle = 0.0
    return 1.0 + min(float(spare_cores()), idle)


def _lower_priority() -> None:
    if sys.platform == "linux":  # a thread's own id names it alone only on Linux; elsewhere it would be the process
        tid = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + HELPER_NICENESS))
        except OSError:
            pass  # a sandbox that forbids it: the helper runs at normal priority


def in_chunks(work: Callable[[int, Report], T], count: int, report: Report | None = None,
              helpers: int | None = None) -> list[T]:
    """[work(0, told), ..., work(count - 1, told)], the calls shared between this thread and `helpers` helper threads
    (default: `spare_cores()`, at most count - 1). told(amount): a call's progress, passed to `report` on this thread
    only (a progress bar's; a helper's as soon as this thread is free to tell it). Torch's grad and inference modes,
    which belong to a thread, are the caller's in every helper. An exception in any call is raised here.

    This thread never waits long on a helper that a busy machine starves: once no call is left to start, it runs a
    helper's unfinished call itself when that call has taken half as long again as this thread's own took, and keeps
    whichever result comes first (the same, bit for bit; its progress told once); a helper still running then stops
    after its call."""
    helpers = min(spare_cores() if helpers is None else helpers, count - 1)
    if helpers <= 0:
        told = report or (lambda amount: None)
        return [work(i, told) for i in range(count)]
    shared = _Shared(work, count, report)
    for k in range(helpers):
        threading.Thread(target=shared.help, daemon=True, name=f"spare-core-{k}").start()
    try:
        return shared.lead()
    finally:
        with shared.changed:
            shared.stop = True


class _Shared:
    """The calls of one `in_chunks` and what is known of them, under one lock (`changed`, notified at every news)."""

    def __init__(self, work, count: int, report: Report | None):
        self.work, self.count, self.report = work, count, report
        self.changed = threading.Condition()
        self.next, self.stop = 0, False
        self.results: dict = {}
        self.started: dict[int, float] = {}  # call -> when a helper started it
        self.errors: list[BaseException] = []
        self.progress: dict[tuple[int, bool], float] = {}  # (call, by a helper) -> its progress so far
        self.shown: dict[int, float] = {}  # call -> its progress told: the most of either runner's
        self.untold = 0.0
        self.grad, self.inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    def take(self, helper: bool) -> int | None:
        with self.changed:
            if self.stop or self.errors or self.next >= self.count:
                return None
            self.next += 1
            if helper:
                self.started[self.next - 1] = time.monotonic()
            return self.next - 1

    def run(self, i: int, helper: bool) -> None:
        def told(amount: float) -> None:
            with self.changed:
                mine = self.progress[i, helper] = self.progress.get((i, helper), 0.0) + amount
                if mine > self.shown.get(i, 0.0):
                    self.untold += mine - self.shown.get(i, 0.0)
                    self.shown[i] = mine
                    self.changed.notify_all()
            if not helper:
                self.tell()

        value = self.work(i, told)
        with self.changed:
            self.results.setdefault(i, value)
            self.changed.notify_all()

    def tell(self) -> None:  # on the calling thread only
        with self.changed:
            amount, self.untold = self.untold, 0.0
        if amount and self.report is not None:
            self.report(amount)

    def help(self) -> None:
        _lower_priority()
        try:
            with torch.inference_mode(self.inference), torch.set_grad_enabled(self.grad):
                while (i := self.take(True)) is not None:
                    self.run(i, True)
        except BaseException as error:  # noqa: BLE001 (raised again on the calling thread)
            with self.changed:
                self.errors.append(error)
                self.changed.notify_all()

    def lead(self) -> list:
        own = 0.0  # the longest of this thread's calls
        while (i := self.take(False)) is not None:
            begun = time.monotonic()
            self.run(i, False)
            own = max(own, time.monotonic() - begun)
        while True:  # what the helpers still run
            with self.changed:
                if self.errors:
                    raise self.errors[0]
                left = [i for i in range(self.count) if i not in self.results]
                late = [i for i in left if time.monotonic() - self.started[i] >= 1.5 * own]
                if left and not late:
                    self.changed.wait(max(0.01, min(self.started[i] for i in left) + 1.5 * own - time.monotonic()))
            self.tell()
            if not left:
                return [self.results[i] for i in range(self.count)]
            if late:
                self.run(late[0], False)
