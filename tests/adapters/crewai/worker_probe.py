"""Run inside CrewAI's own environment by test_crewai_worker.py: a few cells through
``adapters.crewai.calls.run`` against run URLs the test opened, while every ``socket.connect`` is
recorded; prints one JSON line: the addresses connected to and the threads alive after each cell."""

import asyncio
import contextlib
import json
import socket
import sys
import threading

CONNECTED: list[str] = []
_connect = socket.socket.connect


def _recording_connect(self: socket.socket, address: object) -> None:
    CONNECTED.append(str(address[0] if isinstance(address, tuple) else address))
    _connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _recording_connect  # type: ignore[method-assign,assignment]

from adapters.crewai.adapter import CrewAIAdapter  # noqa: E402
from adapters.crewai.calls import run  # noqa: E402
from bench.core.vocabulary import ModeSupport  # noqa: E402
from bench.scenarios.tasks import get_task  # noqa: E402
from bench.sdk.adapter import Endpoint  # noqa: E402


async def main(roots: list[str], stalled: str) -> dict[str, object]:
    cells = [cell for cell in CrewAIAdapter().cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
    threads: list[list[str]] = []
    for root, cell in zip(roots, cells, strict=False):
        await run(cell, get_task("person"), Endpoint(root))
        threads.append(sorted(thread.name for thread in threading.enumerate()))
    with contextlib.suppress(TimeoutError):  # a cell cancelled mid-request, as the runner's time limit does
        await asyncio.wait_for(run(cells[0], get_task("person"), Endpoint(stalled)), timeout=1.0)
    await asyncio.sleep(0)
    threads.append(sorted(thread.name for thread in threading.enumerate()))
    return {"connected": sorted(set(CONNECTED)), "threads": threads, "cells": len(cells)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[2:], sys.argv[1]))))
