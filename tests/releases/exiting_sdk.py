"""A worker-side adapter for tests/releases/test_pool_exiting_worker.py: an SDK that ends its own
process mid-cell (``os._exit``, as a native crash or a library's hard exit does), after one model
call, once per marker file: the next worker finds the marker and answers."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import ClassVar

import httpx

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable

MARKER = "MISFIT_TEST_EXIT_MARKER"
HOW = "MISFIT_TEST_EXIT_HOW"
"""``code``: ``os._exit(EXIT_CODE)``; ``signal``: killed by SIGKILL, as the kernel's OOM killer does."""
EXIT_CODE = 3


class Exiting(Adapter):
    name: ClassVar[str] = "exiting"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.builtin("test")}

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": task.prompt}]}
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"{endpoint.openai_base_url}/chat/completions", json=body)
        marker = Path(os.environ[MARKER])
        if not marker.exists():
            marker.write_text("exited once", encoding="utf-8")
            os.write(2, b"exiting: a native library gave up\n")
            if os.environ.get(HOW) == "signal":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(EXIT_CODE)
        return AdapterResult(output={"status": answer.status_code})
