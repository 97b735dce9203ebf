"""The Google ADK adapter: ``LlmAgent(output_schema=Model, output_key=...)`` on ``LiteLlm`` (ADK's
documented wrapper for models outside Gemini), run through a ``Runner`` over an
``InMemorySessionService``.

google-adk 2.13.0 cannot be installed beside the harness's pins (it wants websockets<16 against the
pinned 16.1.1: environment.in), so it runs in an environment of its own, locked by
``environment.txt`` (``Adapter.environment``, bench.sdk.environment): this module declares the
cells and imports no SDK; ``calls.py`` imports ADK and runs them, in the worker only.

What ADK can express (paths under site-packages/google/adk; research.md has the lines):

- native: ``output_schema`` becomes the request's response schema (flows/llm_flows/basic.py:137-139),
  which LiteLlm sends as ``response_format`` json_schema, ``strict: true`` (models/lite_llm.py:3211-3300);
  litellm carries it to Chat Completions, to the Responses API (its ``openai/responses/`` bridge)
  and to Anthropic Messages (as ``output_format`` or a forced tool, litellm's choice per model);
- tool: ADK's output tool, ``set_model_response``, is added only when the agent also has tools and
  the model cannot pair a schema with tools (flows/llm_flows/prompt/_schema.py:46-57): no built-in
  task has tools, so tool mode is the tool scenarios' business, never a cell of its own;
- prompted: ADK has no schema-in-the-prompt mode.

Variants: ``default`` is the agent as above; ``hardened`` adds ADK's documented retry options,
``HttpOptions(retry_options=HttpRetryOptions(attempts=3))``, which LiteLlm hands litellm as
``num_retries`` (models/lite_llm.py:4182-4187), and ``ReflectAndRetryToolPlugin()`` on the App, ADK's
documented recovery for a raising tool; ``stream`` runs with
``RunConfig(streaming_mode=StreamingMode.SSE)``. ADK never feeds a validation failure back to the
model: ``validate_schema`` raises out of the run (agents/llm_agent.py:1140-1146).
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

_ROUTES = {
    Protocol.CHAT: 'LiteLlm("openai/<model>", api_base=...)',
    Protocol.RESPONSES: 'LiteLlm("openai/responses/<model>", api_base=...)',
    Protocol.ANTHROPIC: 'LiteLlm("anthropic/<model>", api_base=...)',
}

_VARIANTS: dict[Variant | str, str] = {
    Variant.DEFAULT: "Runner.run_async; no retry options",
    Variant.HARDENED: "Runner.run_async; HttpRetryOptions(attempts=3), ReflectAndRetryToolPlugin()",
    Variant.STREAM: "Runner.run_async(run_config=RunConfig(streaming_mode=SSE))",
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """One rule for the grid: native everywhere LiteLlm reaches; tool and prompted never."""
    if mode is Mode.PROMPTED:
        return Support.unsupported(
            "ADK has no schema-in-the-prompt mode: output_schema is the request's response schema "
            "(flows/llm_flows/basic.py:137-139) or the set_model_response tool (flows/llm_flows/prompt/_schema.py:57)"
        )
    if mode is Mode.TOOL:
        return Support.unsupported(
            "ADK adds its output tool, set_model_response, only beside the agent's own tools when the model "
            "cannot pair a schema with tools (flows/llm_flows/prompt/_schema.py:46-57): the tool scenarios"
        )
    return Support.builtin(
        f"LlmAgent(model={_ROUTES[protocol]}, output_schema=Model, output_key='result'); {_VARIANTS[variant]}"
    )


class GoogleAdkAdapter(Adapter):
    """google-adk 2.13.0 in its own environment: ``LlmAgent`` + ``LiteLlm`` + ``Runner``."""

    name: ClassVar[str] = "google-adk"
    distribution: ClassVar[str] = "google-adk"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "google-adk"
    companions: ClassVar[tuple[str, ...]] = ("litellm",)
    preload: ClassVar[tuple[str, ...]] = ("adapters.google_adk.calls",)
    """Imports ADK, LiteLlm and litellm before the worker reports ready."""
    supported_releases: ClassVar[str] = ">=1.0"
    harness_tools: ClassVar[bool] = True
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the google-adk environment's worker; ``calls`` imports the SDK."""
        from adapters.google_adk.calls import run

        return await run(cell, task, endpoint)
