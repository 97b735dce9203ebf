"""The Strands Agents adapter: ``Agent(model=..., structured_output_model=Model)`` and the older
``agent.structured_output(Model, prompt)``, on ``OpenAIModel``, ``OpenAIResponsesModel`` and
``AnthropicModel`` pointed at the local provider.

strands-agents runs in an environment of its own, locked by ``environment.txt`` (one lock for the
SDK and its providers, so the harness's pins stay untouched: bench.sdk.environment); this module
declares the cells and imports no SDK, ``calls.py`` imports strands and runs them in the worker.

What each cell is (research.md has the source lines, paths under site-packages/strands):

- tool, variants ``default`` / ``hardened`` / ``stream``: the agent's structured-output option.
  The output type becomes a tool (tools/structured_output/structured_output_tool.py); the model
  answers in the agent loop, and when it ends its turn without the tool the loop appends the
  structured-output prompt and forces that tool (event_loop/event_loop.py:387-404). A
  ``ValidationError`` goes back to the model as an error tool result (structured_output_tool.py:
  124-146), with no budget of its own. ``default`` is ``invoke_async``; ``hardened`` adds the
  task's check as a model validator (a wrong answer is a ValidationError fed back like any other);
  ``stream`` is ``stream_async``, its last event's result kept. Every provider streams the model
  call either way (OpenAIConfig ``stream`` defaults to True, models/openai.py:61; Anthropic's
  ``messages.stream``), so the three variants differ in entry point, not on the wire.
- variant ``structured_output``: the deprecated ``Agent.structured_output_async(Model, prompt)``
  (agent/agent.py:1095-1161), the provider's own ``structured_output``: Chat Completions'
  ``beta.chat.completions.parse(response_format=Model)`` (native, models/openai.py:843-900), the
  Responses API's ``responses.parse(text_format=Model)`` (native, models/openai_responses.py:510),
  Anthropic's one forced tool (tool, models/anthropic.py:1182). One call, no re-ask.
"""

from __future__ import annotations

from typing import ClassVar

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

STRUCTURED_OUTPUT = "structured_output"
"""The variant of the deprecated ``Agent.structured_output(Model, prompt)``: the provider's own
structured-output call, outside the agent loop."""

MODEL_CLASS = {
    Protocol.CHAT: "OpenAIModel",
    Protocol.RESPONSES: "OpenAIResponsesModel",
    Protocol.ANTHROPIC: "AnthropicModel",
}
"""The strands model provider of each protocol (strands.models.openai / openai_responses / anthropic)."""

_METHOD_MODE = {Protocol.CHAT: Mode.NATIVE, Protocol.RESPONSES: Mode.NATIVE, Protocol.ANTHROPIC: Mode.TOOL}
"""The mode of each provider's ``structured_output`` (models/openai.py:871, openai_responses.py:532,
anthropic.py:1197)."""

_METHOD_CALL = {
    Protocol.CHAT: "client.beta.chat.completions.parse(response_format=Model) (models/openai.py:870)",
    Protocol.RESPONSES: "client.responses.parse(text_format=Model) (models/openai_responses.py:532)",
    Protocol.ANTHROPIC: "one tool from the model, forced, streamed (models/anthropic.py:1182-1230)",
}

_LOOP_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "Agent(model, structured_output_model=Model).invoke_async(prompt); the structured-output tool",
    Variant.HARDENED: (
        "Agent(model, structured_output_model=Model with a model_validator raising task.check).invoke_async(prompt)"
    ),
    Variant.STREAM: "Agent(model, structured_output_model=Model).stream_async(prompt), the last event's result",
}

_NO_PROMPTED = (
    "strands has no prompted structured output: the agent's option is always the structured-output tool "
    "(tools/structured_output/structured_output_tool.py), and a provider's structured_output uses its API's "
    "own parse or a forced tool (models/openai.py:843, anthropic.py:1182)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """The agent option is a tool on every provider; the older method is the provider's own call."""
    model = MODEL_CLASS[protocol]
    if variant == STRUCTURED_OUTPUT:
        if mode is not _METHOD_MODE[protocol]:
            return None
        return Support.builtin(f"Agent({model}(...)).structured_output_async(Model, prompt): {_METHOD_CALL[protocol]}")
    if mode is Mode.TOOL:
        return Support.builtin(f"{_LOOP_NOTES[variant]} on {model}")
    if variant != Variant.DEFAULT:
        return None
    if mode is Mode.PROMPTED:
        return Support.unsupported(_NO_PROMPTED)
    if protocol is Protocol.ANTHROPIC:
        return Support.unsupported(
            "AnthropicModel picks its mechanism itself, forced tool first; native output_config only once the model "
            "rejected a forced tool choice (models/_native_output.py, anthropic.py:1162-1180): no user setting"
        )
    return None  # native on the OpenAI protocols is the structured_output variant's cell


class StrandsAdapter(Adapter):
    """strands-agents 1.62.0 in its own environment: its structured-output option and method."""

    name: ClassVar[str] = "strands-agents"
    distribution: ClassVar[str] = "strands-agents"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, (*VARIANTS, STRUCTURED_OUTPUT), _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "strands-agents[openai,anthropic]"
    preload: ClassVar[tuple[str, ...]] = ("adapters.strands_agents.calls",)
    """Imports strands, its providers, openai and anthropic before the worker reports ready."""
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=1.10"
    time_limit_s: ClassVar[float] = 20.0
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        if cell.variant == STRUCTURED_OUTPUT:
            return (
                "Agent.structured_output is one provider call outside the agent loop: the agent's tools are never "
                "offered (agent/agent.py:1151)"
            )
        return super().tool_support(cell)

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the strands environment's worker; ``calls`` imports the SDK."""
        from adapters.strands_agents.calls import run

        return await run(cell, task, endpoint, cell.variant == STRUCTURED_OUTPUT)
