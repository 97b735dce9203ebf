"""A worker-side adapter for tests/releases/test_pool_starved_worker.py: an SDK's work before
its model call, done in the worker process, where the provider sees nothing of it; then one
model call."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

import httpx

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable

STARVED_CPU_S = 0.4
"""Under the test's stall limit in CPU; at a fifth of a core over it in wall time."""


class Computing(Adapter):
    name: ClassVar[str] = "computing"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.builtin("test")}

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        start = time.thread_time()
        while time.thread_time() - start < STARVED_CPU_S:
            sum(range(10_000))
            await asyncio.sleep(0)
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": task.prompt}]}
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"{endpoint.openai_base_url}/chat/completions", json=body)
        return AdapterResult(output={"status": answer.status_code})
