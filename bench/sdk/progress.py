"""Progress a cell makes where the provider cannot see it: the stall limit's second witness.

A cell's stall limit (:func:`bench.run.runner.drive`) counts from its last model call reaching
the provider, or answer completing, on the event loop's own time (bench.run.runner._StallClock).
That is the whole story for an SDK in this process. It is not for one that spawns a program
first: the Claude Agent SDK's bundled CLI burns about two seconds of CPU before its first
request, and at a load of 10 to 25 on two cores that start alone took longer than the limit, so
a slow cell was counted a stall (``NoModelCall``). Load must only slow a cell down, so an
adapter whose subprocess is working says so here (:func:`note_progress`), and the driver counts
it as the provider's events are counted.

The driver sets the callback around the adapter's call (:func:`reporting_to`); the adapter's
tasks inherit it, as they inherit every context variable. A release worker sends its notes to
the parent, which notes them again (:mod:`bench.releases.worker`); outside a driven cell a note
goes nowhere. What
bounds a cell that keeps working without ever calling the provider is the adapter's own budget
(``CLI_WORK_CPU_S`` in the Claude adapter), not this module.

A cell driven in another process (a release, own-environment or Node worker) is starved where
the driver cannot see it: the run's event loop idles while the worker waits for a CPU. The pool
names that process here (:func:`note_worker`), and the driver credits the time it spent
runnable but waiting for a CPU (:func:`run_queue_wait_s`), as it credits its own loop's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_LISTENER: ContextVar[Callable[[float], None] | None] = ContextVar("cell_progress_listener", default=None)
_WORKERS: ContextVar[Callable[[int], None] | None] = ContextVar("cell_worker_listener", default=None)


def note_progress(ago_s: float = 0.0) -> None:
    """The cell was working ``ago_s`` seconds ago, or later: not a stall. A poller that saw work
    between two readings passes the time since the earlier one, so that work is never dated
    later than it can have happened (a hang after it still times out at the limit)."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(ago_s)


def note_worker(pid: int) -> None:
    """The cell runs in process ``pid`` from now on: its wait for a CPU is the cell's too."""
    listener = _WORKERS.get()
    if listener is not None:
        listener(pid)


@contextmanager
def reporting_to(listener: Callable[[float], None], on_worker: Callable[[int], None] | None = None) -> Iterator[None]:
    """Notes made in this context, and in tasks created in it, call ``listener(ago_s)``; a
    worker named in it calls ``on_worker(pid)``."""
    token = _LISTENER.set(listener)
    workers = _WORKERS.set(on_worker)
    try:
        yield
    finally:
        _WORKERS.reset(workers)
        _LISTENER.reset(token)


def run_queue_wait_s(pid: int | None = None) -> float:
    """Seconds a thread has spent runnable but waiting for a CPU: the calling thread's, or
    process ``pid``'s main thread's (the one a worker's event loop runs on). The second field of
    Linux's schedstat (nanoseconds); 0.0 where the kernel does not say (another OS, schedstats
    off, a process gone): there a loaded machine can still turn a slow cell into a timeout
    (README, Limitations)."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat"
    try:
        with open(path, "rb") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0
