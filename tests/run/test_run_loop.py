"""The run's event loop and the interrupt flag (issue 25): a ``SystemExit`` or ``KeyboardInterrupt``
raised in a task goes to whoever awaits that task, as any exception does, and the loop goes on;
a signal of the user's still stops it."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator

import pytest

from bench.core import interrupts
from bench.run.runner import RunLoop


@pytest.fixture(autouse=True)
def no_interrupt() -> Iterator[None]:
    with interrupts.watching():  # clears the flag, restores the handlers after
        yield


async def _awaits_a_task_raising(error: BaseException) -> str:
    async def raising() -> None:
        raise error

    try:
        await asyncio.get_running_loop().create_task(raising())
    except BaseException as seen:
        return type(seen).__name__
    return "nothing"


@pytest.mark.parametrize("error", [SystemExit(7), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"])
def test_a_tasks_own_exit_reaches_whoever_awaits_it(error: BaseException) -> None:
    """asyncio lets these two out of the loop from any task (an SDK's, a user's); the run's loop
    leaves them with the task, where its awaiter (the cell) records them."""
    assert asyncio.run(_awaits_a_task_raising(error), loop_factory=RunLoop) == type(error).__name__


def test_a_keyboard_interrupt_after_a_signal_stops_the_loop() -> None:
    interrupts.mark()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(_awaits_a_task_raising(KeyboardInterrupt()), loop_factory=RunLoop)


def test_a_watched_signal_is_marked_before_its_handler_runs() -> None:
    seen: list[bool] = []
    signal.signal(signal.SIGTERM, lambda number, frame: seen.append(interrupts.by_user()))
    try:
        with interrupts.watching():
            assert not interrupts.by_user()
            signal.raise_signal(signal.SIGTERM)
        assert seen == [True]
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
