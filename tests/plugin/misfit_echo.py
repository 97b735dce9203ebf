"""A third-party adapter: the official openai client's own structured-output helper
(``chat.completions.parse``) as the system under test.

Registered for the tests only (entry point ``openai-parse`` in the dist-info folder next to this
file, put on sys.path and PYTHONPATH by tests/conftest.py): never installed, so a user's
``bench run`` never plans it.

With ``MISFIT_ECHO_TEST_VARIANTS=1`` (set by the tests only) it also lists two variants that
exist to test the runner: ``loop`` keeps asking until it gets a parsed object (a user's naive
retry loop), which the runner must stop at the call cap as ``runaway``; ``broken`` fails in its
own setup code, which the runner must record as ``harness_error`` and go on.
"""

from __future__ import annotations

import os
from typing import ClassVar

import openai

from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, ReportedUsage, Support, SupportTable


class OpenAIParseAdapter(Adapter):
    name: ClassVar[str] = "openai-parse"
    distribution: ClassVar[str] = "openai"
    support: ClassVar[SupportTable] = {
        (Mode.NATIVE, Protocol.CHAT, Variant.DEFAULT): Support.builtin(""),
        (Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.unsupported(""),
    }
    time_limit_s: ClassVar[float] = 10.0

    def cells(self) -> list[Cell]:
        """The declared table, plus the two runner-test variants when the tests ask for them."""
        cells = super().cells()
        if os.environ.get("MISFIT_ECHO_TEST_VARIANTS") == "1":
            extra = ("loop", "broken")
            cells += [Cell(self.name, Mode.NATIVE, v, Protocol.CHAT, False, ModeSupport.BUILTIN) for v in extra]
        return cells

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        if cell.variant == "broken":
            raise RuntimeError("adapter bug: this is the harness's fault, not the SDK's")
        client = openai.AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key, max_retries=0)
        async with client:
            while True:
                try:
                    completion = await client.chat.completions.parse(
                        model=endpoint.openai_model,
                        messages=[{"role": "user", "content": task.prompt}],
                        response_format=task.output_model,
                    )
                except Exception as error:  # the SDK's own exception: recorded, not judged
                    if cell.variant == "loop":
                        continue
                    return AdapterResult(exception=error)
                message = completion.choices[0].message
                usage = ReportedUsage(completion.usage.prompt_tokens, completion.usage.completion_tokens)
                if message.parsed is None and cell.variant == "loop":
                    continue
                return AdapterResult(output=message.parsed, usage=usage)
