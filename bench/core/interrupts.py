"""Whether the person running bench interrupted it (Ctrl-C, SIGTERM), told apart from code that
raises ``KeyboardInterrupt`` itself.

A user's agent may raise ``KeyboardInterrupt`` (or ``SystemExit``) inside a cell: that is the
cell's outcome, and the run goes on. A signal is the user's: the run must stop. Both arrive as
the same exception, so the signal handlers of a run are wrapped (:func:`watching`) to mark the
signal before the handler raises; a ``KeyboardInterrupt`` seen while nothing is marked was
raised by code, not by a signal (:func:`by_user`).
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM)
_SIGNALLED = threading.Event()
_WATCHED_IN_THREADS: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = {}
"""The run watched in each thread other than the main one (its loop and main task), by thread id."""


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
        yield from _watched_in_thread()
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


def _watched_in_thread() -> Iterator[None]:
    """No signal reaches this thread: its run's loop and task are kept for :func:`interrupt_thread`."""
    try:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
    except RuntimeError:  # not inside a loop: nothing to cancel
        task = None
    if task is None:
        yield
        return
    ident = threading.get_ident()
    _WATCHED_IN_THREADS[ident] = (loop, task)
    try:
        yield
    finally:
        _WATCHED_IN_THREADS.pop(ident, None)


def _marking(handler: Callable[[int, FrameType | None], Any]) -> Callable[[int, FrameType | None], Any]:
    def marked(number: int, frame: FrameType | None) -> Any:
        mark()
        return handler(number, frame)

    return marked


def interrupt_thread(thread: threading.Thread) -> None:
    """Interrupt the user's way a run that goes on in ``thread``, not the main one. A kernel's
    interrupt (Jupyter's SIGINT) reaches only the main thread, which waits for the run's thread:
    without this the run would go on behind the notebook's back. The interrupt is marked, then a
    run watched in that thread (:func:`watching`) has its main task cancelled, which is what
    asyncio's own SIGINT handler does in the main thread; a thread with no watched run (the
    ``--procs`` parent's wait for its children) gets ``KeyboardInterrupt`` at its next Python
    step, as a signal raises it in the main thread (CPython's ``PyThreadState_SetAsyncExc``)."""
    if thread.ident is None:  # never started
        return
    mark()
    if (watched := _WATCHED_IN_THREADS.get(thread.ident)) is not None:
        loop, task = watched
        loop.call_soon_threadsafe(task.cancel)
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(KeyboardInterrupt))
