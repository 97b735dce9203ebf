"""Progress a cell makes where the provider cannot see it: the stall limit's second witness.

A cell's stall limit (:func:`bench.run.runner.drive`) counts from its last model call reaching
the provider, or answer completing. That is the whole story for an SDK in this process. It is
not for an SDK that spawns a program first: the Claude Agent SDK's bundled CLI burns about two
seconds of CPU before its first request, and at a load of 10 to 25 on two cores that start alone
took longer than the limit, so a slow cell was counted a stall (``NoModelCall``). Load must only
slow a cell down, so an adapter whose subprocess is working says so here (:func:`note_progress`),
and the driver counts it as the provider's events are counted.

The driver sets the callback around the adapter's call (:func:`reporting_to`); the adapter's
tasks inherit it, as they inherit every context variable. Outside a driven cell, or in a release
worker before the parent relays it (:mod:`bench.releases.worker`), a note goes nowhere. What
bounds a cell that keeps working without ever calling the provider is the adapter's own budget
(``CLI_START_CPU_S`` in the Claude adapter), not this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_LISTENER: ContextVar[Callable[[], None] | None] = ContextVar("cell_progress_listener", default=None)


def note_progress() -> None:
    """The cell is working (its subprocess used CPU since the last note): not a stall."""
    listener = _LISTENER.get()
    if listener is not None:
        listener()


@contextmanager
def reporting_to(listener: Callable[[], None]) -> Iterator[None]:
    """Notes made in this context, and in tasks created in it, call ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
