"""A hung smolagents cell is ended at the cell's limit, and the thread its synchronous
``agent.run`` ran in ends too: the model's client times out at twice the limit (adapter.py), and
its retry reaches a run the runner has closed by then. The provider would hold the answer for an
hour, so a thread that ends proves the timeout path, not a quick answer."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import ClassVar

import pytest

from adapters.smolagents.adapter import THREAD_PREFIX, SmolagentsAdapter
from bench.core.vocabulary import Mode, Outcome
from bench.provider import LocalProvider
from tests.adapters.smolagents.conftest import SmolagentsRunner
from tests.cell_runner import CellRun, cell_of

pytestmark = pytest.mark.slow


class ShortLimit(SmolagentsAdapter):
    time_limit_s: ClassVar[float] = 1.0


def test_a_stalled_call_is_a_timeout_and_its_thread_ends(provider: LocalProvider) -> None:
    adapter = ShortLimit()
    runner = SmolagentsRunner(provider, adapter)
    before = {thread.ident for thread in threading.enumerate()}
    ran: CellRun = asyncio.run(runner(cell_of(adapter, mode=Mode.TOOL), [{"slow": 3600}]))
    assert ran.stopped is Outcome.TIMEOUT
    started = time.monotonic()
    for thread in threading.enumerate():
        if thread.name.startswith(THREAD_PREFIX):
            thread.join(timeout=60)
            assert not thread.is_alive(), thread.name
    assert time.monotonic() - started < 60
    left = [t.name for t in threading.enumerate() if t.ident not in before and not t.name.startswith("asyncio_")]
    assert left == [], left
