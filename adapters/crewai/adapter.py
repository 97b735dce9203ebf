"""The CrewAI adapter: a one-agent ``Crew`` whose ``Task`` declares the output type, as CrewAI's docs
write it, on CrewAI's own ``LLM`` class pointed at the local provider.

crewai 1.15.30 cannot be installed beside the harness's pins (environment.in), so it runs in an
environment of its own, locked by ``environment.txt`` (``Adapter.environment``, bench.sdk.environment):
this module declares the cells and imports no SDK; ``calls.py`` imports crewai and runs them, in the
worker only. Paths below are under that environment's site-packages/crewai (research.md has them).

What reaches the wire: ``Task(output_pydantic=M)`` (or ``output_json=M``) becomes the agent executor's
``response_model`` (agent/core.py:1300-1304), which the LLM class sends as the provider's native
structured output: ``response_format`` json_schema on Chat Completions, through the openai
client's ``beta.chat.completions.parse(response_format=M)`` (llms/providers/openai/completion.py:
2663-2676), ``text.format`` json_schema on Responses (``LLM(api="responses")``, :1091-1100), and on
Anthropic ``output_format`` for the models CrewAI lists as having it, else a forced ``structured_output``
tool (llms/providers/anthropic/completion.py:82-125, 1103-1121). So:

- native: Chat and Responses; Anthropic with ``claude-sonnet-4-5`` (on CrewAI's list);
- tool: Anthropic with the endpoint's ``claude-sonnet-4-6`` (not on the list: the forced tool);
- prompted: none. CrewAI also writes the schema into the task prompt (agent/utils.py:74-91), but
  always hands the type to the LLM too: no option keeps it off the request.

Variants: ``default`` is ``Task(output_pydantic=M)``; ``output_json`` is ``Task(output_json=M)``, whose
answer is ``CrewOutput.json_dict``; ``hardened`` adds CrewAI's documented validation, a task
``guardrail`` returning ``(False, reason)`` on the task's check, re-run up to ``guardrail_max_retries``
(default 3, task.py:279, 1464-1512); ``stream`` is ``LLM(stream=True)``.
"""

from __future__ import annotations

from typing import ClassVar

from adapters.crewai.settings import GUARDRAIL_MAX_RETRIES, NATIVE_ANTHROPIC_MODEL, OUTPUT_JSON
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import (
    MODES,
    PROTOCOLS,
    VARIANTS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    Support,
    SupportTable,
    grid,
)

_WIRE: dict[tuple[Mode, Protocol], str] = {
    (Mode.NATIVE, Protocol.CHAT): "LLM('openai/<model>', base_url=...): response_format json_schema",
    (Mode.NATIVE, Protocol.RESPONSES): "LLM('openai/<model>', api='responses'): text.format json_schema",
    (Mode.NATIVE, Protocol.ANTHROPIC): f"LLM('anthropic/{NATIVE_ANTHROPIC_MODEL}'): output_format json_schema",
    (Mode.TOOL, Protocol.ANTHROPIC): "LLM('anthropic/<model off CrewAI's native list>'): forced structured_output tool",
}
"""How each cell's request is declared; the LLM class decides from the protocol and model name."""

_TASK: dict[Variant | str, str] = {
    Variant.DEFAULT: "Task(output_pydantic=Model)",
    OUTPUT_JSON: "Task(output_json=Model)",
    Variant.HARDENED: f"Task(output_pydantic=Model, guardrail=check); guardrail_max_retries={GUARDRAIL_MAX_RETRIES}",
    Variant.STREAM: "Task(output_pydantic=Model); LLM(stream=True)",
}

_NO_PROMPTED = (
    "Task(output_pydantic/output_json) always hands the type to the LLM as response_model "
    "(agent/core.py:1300-1304), which sends it as the provider's structured output: no prompted-only option"
)
_NO_OPENAI_TOOL = (
    "CrewAI's OpenAI LLM sends response_model as response_format / text.format json_schema "
    "(llms/providers/openai/completion.py:2663-2670, 1091-1100): it has no output-tool option"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    if mode is Mode.PROMPTED:
        return Support.unsupported(_NO_PROMPTED) if variant == Variant.DEFAULT else None
    wire = _WIRE.get((mode, protocol))
    if wire is None:
        return Support.unsupported(_NO_OPENAI_TOOL) if variant == Variant.DEFAULT else None
    return Support.builtin(f"{_TASK[variant]}; {wire}")


class CrewAIAdapter(Adapter):
    """crewai 1.15.30 in its own environment: ``Crew(agents=[agent], tasks=[task]).akickoff()``."""

    name: ClassVar[str] = "crewai"
    distribution: ClassVar[str] = "crewai"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, (*VARIANTS, OUTPUT_JSON), _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "crewai[anthropic]"
    preload: ClassVar[tuple[str, ...]] = ("adapters.crewai.calls",)
    """Imports crewai (seconds of CPU: its event bus, providers, tools) before the worker reports ready."""
    supported_releases: ClassVar[str] = ">=1.0"
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 2

    def tool_support(self, cell: Cell) -> str | None:
        return (
            "not wired yet: the harness tool as a crewai BaseTool on the agent (research.md, 'Tools'); "
            "the cells run without tools"
        )

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the crewai environment's worker; ``calls`` imports the SDK."""
        from adapters.crewai.calls import run

        return await run(cell, task, endpoint)
