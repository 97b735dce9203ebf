"""The AutoGen AgentChat adapter: ``AssistantAgent(model_client=..., output_content_type=Model)``
run with ``run()`` and ``run_stream()``, in its own environment.

autogen-core 0.7.5 pins ``protobuf>=5.29.3,<5.30`` against the harness's protobuf 7.36.2
(constraints.txt), so the SDK runs in an environment of its own, locked by ``environment.txt``
(``Adapter.environment``, bench.sdk.environment): this module declares the cells and imports no
SDK; ``calls.py`` imports autogen and runs them, in the worker only. Paths below are under that
environment's site-packages (autogen-agentchat / autogen-ext 0.7.5); research.md has the lines.

What the agent can express:

- native on Chat Completions: ``output_content_type`` reaches the model client as
  ``json_output=Model`` on every model call (autogen_agentchat/agents/_assistant_agent.py:1096,
  1113, 1437, 1452); ``OpenAIChatCompletionClient`` sends it through the official client's
  ``beta.chat.completions.parse(response_format=Model)`` (models/openai/_openai_client.py:684), or
  ``beta.chat.completions.stream`` when streaming (:1118). The agent validates the text itself
  with ``Model.model_validate_json`` (_assistant_agent.py:1154, 1476): no re-ask, no budget.
- nothing else: ``AnthropicChatCompletionClient`` raises ``ValueError("Structured output is
  currently not supported for Anthropic models")`` for a ``json_output`` type before any request
  (models/anthropic/_anthropic_client.py:581, 799); AutoGen has no Responses API client; the agent
  has no output tool and no prompted mode (``output_content_type`` is always ``json_output``).

Variants: ``default`` is the docs' shortest code (``reflect_on_tool_use`` left None, so True with
an output type, _assistant_agent.py:842-844; ``max_tool_iterations=1``); ``hardened`` is the docs'
multi-step tool example, ``max_tool_iterations=5`` (_assistant_agent.py:362-406): a failed tool call
can be followed by another before the reflection; ``stream`` is ``run_stream()`` with
``model_client_stream=True`` (tokens streamed from the client), its ``TaskResult`` kept;
``no_reflection`` is ``reflect_on_tool_use=False``, where a tool call's result is the answer
(a ``ToolCallSummaryMessage``, :1498-1534), so it differs from ``default`` on the tool scenarios.
"""

from __future__ import annotations

from typing import Any, ClassVar

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

NO_REFLECTION = "no_reflection"
"""The variant with ``reflect_on_tool_use=False``: after a tool call the tool's result is the answer."""

HARDENED_TOOL_ITERATIONS = 5
"""The hardened cells' ``max_tool_iterations``, as the AssistantAgent docs' example 4 sets it."""

SETTINGS: dict[Variant | str, dict[str, Any]] = {
    Variant.DEFAULT: {},
    Variant.HARDENED: {"max_tool_iterations": HARDENED_TOOL_ITERATIONS, "reflect_on_tool_use": True},
    Variant.STREAM: {"model_client_stream": True},
    NO_REFLECTION: {"reflect_on_tool_use": False},
}
"""The ``AssistantAgent`` keyword arguments of each variant, on top of ``output_content_type``."""

_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "run(task=prompt); reflect_on_tool_use defaults to True, max_tool_iterations=1",
    Variant.HARDENED: f"run(task=prompt); max_tool_iterations={HARDENED_TOOL_ITERATIONS}, reflect_on_tool_use=True",
    Variant.STREAM: "run_stream(task=prompt) with model_client_stream=True, the final TaskResult",
    NO_REFLECTION: "run(task=prompt); reflect_on_tool_use=False: a tool call's summary is the final message",
}

_DECLARATION = (
    "AssistantAgent(model_client=OpenAIChatCompletionClient(...), output_content_type=Model): "
    "json_output=Model, beta.chat.completions.parse(response_format=Model)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """One rule: native on Chat Completions runs; every other cell says what AutoGen lacks."""
    if variant == NO_REFLECTION and (mode is not Mode.NATIVE or protocol is not Protocol.CHAT):
        return None
    if protocol is Protocol.RESPONSES:
        return Support.unsupported(
            "AutoGen has no Responses API model client: autogen_ext.models.openai offers only Chat Completions "
            "clients (OpenAIChatCompletionClient, AzureOpenAIChatCompletionClient)"
        )
    if protocol is Protocol.ANTHROPIC:
        return Support.unsupported(
            "AnthropicChatCompletionClient raises ValueError('Structured output is currently not supported for "
            "Anthropic models') for output_content_type's json_output=Model before any request "
            "(autogen_ext/models/anthropic/_anthropic_client.py:581, 799)"
        )
    if mode is not Mode.NATIVE:
        return Support.unsupported(
            "AssistantAgent has no output tool and no prompted mode: output_content_type always reaches the "
            "client as json_output=Model, the API's response format (agents/_assistant_agent.py:1096, 1113)"
        )
    return Support.builtin(f"{_DECLARATION}; {_NOTES[variant]}")


class AutogenAdapter(Adapter):
    """autogen-agentchat 0.7.5 in its own environment: ``AssistantAgent(output_content_type=...)``."""

    name: ClassVar[str] = "autogen-agentchat"
    distribution: ClassVar[str] = "autogen-agentchat"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, (*VARIANTS, NO_REFLECTION), _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "autogen-agentchat"
    companions: ClassVar[tuple[str, ...]] = ("autogen-ext[openai,anthropic]",)
    preload: ClassVar[tuple[str, ...]] = ("adapters.autogen_agentchat.calls",)
    """Imports autogen_agentchat, autogen_ext's OpenAI client and openai before the worker reports ready."""
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=0.7"
    """The 0.7 line, whose source research.md reads; ``output_content_type`` is older (agentchat PR
    #6071) but the releases before 0.7 are unread, so their cells are not claimed."""
    time_limit_s: ClassVar[float] = 15.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the autogen environment's worker; ``calls`` imports the SDK."""
        from adapters.autogen_agentchat.calls import run

        return await run(cell, task, endpoint, SETTINGS[cell.variant])
