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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_LISTENER: ContextVar[Callable[[float], None] | None] = ContextVar("cell_progress_listener", default=None)


def note_progress(ago_s: float = 0.0) -> None:
    """The cell was working ``ago_s`` seconds ago, or later: not a stall. A poller that saw work
    between two readings passes the time since the earlier one, so that work is never dated
    later than it can have happened (a hang after it still times out at the limit)."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(ago_s)


@contextmanager
def reporting_to(listener: Callable[[float], None]) -> Iterator[None]:
    """Notes made in this context, and in tasks created in it, call ``listener(ago_s)``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
