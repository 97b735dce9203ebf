"""The worker: runs inside a release environment, drives one adapter, one cell at a time.

Started by the parent as ``<env python> -m bench.releases.worker module:Class`` with the
checkout on ``PYTHONPATH``. It answers on the pipe it was given as stdout, then points its own
stdout at stderr, so whatever an SDK prints never corrupts the protocol; stderr is the run's
``sdk.log``. One event loop lives as long as the worker, and the cells share HTTP clients
(``bench.sdk.clients.sharing``) exactly as they do in-process within a run.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import sys
from importlib.metadata import version
from typing import IO, Any

from bench.releases.protocol import decode_request, encode_harness_error, encode_result
from bench.sdk import clients, progress


def _protocol_stream() -> IO[str]:
    """The original stdout, kept for messages; fd 1 then goes to stderr."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, default=str) + "\n")
    channel.flush()


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)()


def serve(target: str) -> None:
    channel = _protocol_stream()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    try:
        adapter = _load(target)
        installed = version(adapter.distribution)
        for module in adapter.preload:  # before "ready": a worker starts outside any cell's clock
            importlib.import_module(module)
    except Exception as error:  # ImportError, PackageNotFoundError; a user's own modules raise anything
        _send(channel, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return
    _send(channel, {"ready": True, "sdk_version": installed, "python": sys.version.split()[0]})
    asyncio.run(_cells(adapter, channel))


async def _cells(adapter: Any, channel: IO[str]) -> None:
    """Cells in, reports out, until the parent closes stdin."""
    loop = asyncio.get_running_loop()
    own_task = adapter.task if type(adapter).__module__.startswith("bench.own") else None  # a user's agent
    async with clients.sharing():
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            cell, task, endpoint = decode_request(json.loads(line), own_task)
            try:
                with progress.reporting_to(lambda ago_s: _send(channel, {"progress": True, "ago_s": ago_s})):
                    result = await adapter.run(cell, task, endpoint)
            except Exception as error:  # escaped the adapter: a harness error, reported as such
                _send(channel, encode_harness_error(error, type(adapter).__module__))
                continue
            _send(channel, {"result": encode_result(result, task, type(adapter).__module__)})


if __name__ == "__main__":
    serve(sys.argv[1])
