"""Whether the person running bench interrupted it (Ctrl-C, SIGTERM), told apart from code that
raises ``KeyboardInterrupt`` itself.

A user's agent may raise ``KeyboardInterrupt`` (or ``SystemExit``) inside a cell: that is the
cell's outcome, and the run goes on. A signal is the user's: the run must stop. Both arrive as
the same exception, so the signal handlers of a run are wrapped (:func:`watching`) to mark the
signal before the handler raises; a ``KeyboardInterrupt`` seen while nothing is marked was
raised by code, not by a signal (:func:`by_user`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM)
_SIGNALLED = threading.Event()


def by_user() -> bool:
    """Whether a watched signal arrived since the run began watching."""
    return _SIGNALLED.is_set()


def mark() -> None:
    """Note an interrupt of the user's (what a wrapped handler does before it runs)."""
    _SIGNALLED.set()


@contextmanager
def watching() -> Iterator[None]:
    """Wrap the current SIGINT and SIGTERM handlers so each marks the signal first; restored on
    exit. Signal handlers live in the main thread only: elsewhere (a run in a thread of its own,
    as the pytest fixture under a running loop) no signal can interrupt the run's thread, and
    nothing is wrapped. Entered inside ``asyncio.run``, so asyncio's own SIGINT handler (cancel
    the run, then raise) is the one wrapped, and still runs."""
    _SIGNALLED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in WATCHED}
    for number, handler in previous.items():
        if callable(handler):
            signal.signal(number, _marking(handler))
    try:
        yield
    finally:
        for number, handler in previous.items():
            if callable(handler):
                signal.signal(number, handler)


def _marking(handler: Callable[[int, FrameType | None], Any]) -> Callable[[int, FrameType | None], Any]:
    def marked(number: int, frame: FrameType | None) -> Any:
        mark()
        return handler(number, frame)

    return marked
