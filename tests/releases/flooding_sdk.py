"""A worker-side adapter for tests/releases/test_pool_flooding_worker.py: an SDK that floods its
stderr (8 MiB, far past a pipe's buffer and the per-cell log bound) before its model call."""

from __future__ import annotations

import os
from typing import ClassVar

import httpx

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable

FLOOD_BYTES = 8 << 20


class Flooding(Adapter):
    name: ClassVar[str] = "flooding"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.builtin("test")}

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        line = b"W" * 1023 + b"\n"
        for _ in range(FLOOD_BYTES // len(line)):  # fd 2 itself, as C code or a child process writes
            os.write(2, line)
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": task.prompt}]}
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"{endpoint.openai_base_url}/chat/completions", json=body)
        return AdapterResult(output={"status": answer.status_code})
