"""Google ADK's calls, as a user writes them: imported only in the google-adk environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

Per cell: an ``LlmAgent(model=LiteLlm(...), output_schema=Model, output_key=OUTPUT_KEY)``, a
``Runner`` over an ``InMemorySessionService``, one ``runner.run_async`` read to its end, then the
session's state under the output key (what ADK validated and stored: agents/llm_agent.py:1101-1147)
and ``runner.close()`` on every path. LiteLlm reaches the local provider through its documented
``api_base`` / ``api_key`` arguments (models/lite_llm.py:3946-3966, passed on to
``litellm.acompletion``). Paths are under the environment's site-packages/google/adk (research.md).
"""

from __future__ import annotations

import os

LITELLM_OFFLINE = (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
    "LITELLM_LOCAL_BLOG_POSTS",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS",
)
"""litellm fetches its model-cost map at import (litellm/litellm_core_utils/get_model_cost_map.py:460)
and Anthropic's beta-header table on the first Anthropic call (litellm/anthropic_beta_headers_manager.py:137-148)
from GitHub unless these are "True": nothing may leave the machine, and on a machine that reaches only
the package registries the beta-header fetch stalls every Anthropic cell past its limit."""
os.environ.update(dict.fromkeys(LITELLM_OFFLINE, "True"))

import importlib  # noqa: E402
from contextlib import nullcontext  # noqa: E402
from typing import Any  # noqa: E402

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.run_config import RunConfig, StreamingMode  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.plugins import BasePlugin  # noqa: E402
from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from bench.core.vocabulary import Protocol, Variant  # noqa: E402
from bench.scenarios.tasks import Task  # noqa: E402
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage  # noqa: E402

FIRST_CALL_MODULES = (
    "openai.types.beta",
    "openai.types.responses",
    "openai.types.admin",
    "openai.resources",
    "litellm.main",
    "litellm.llms.openai.openai",
    "litellm.llms.anthropic.chat.handler",
    "litellm.responses.main",
    "litellm.responses.mcp.chat_completions_handler",
    "litellm.llms.bedrock.chat",
    "litellm.llms.vertex_ai.vertex_llm_base",
    "litellm.types.proxy",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.workflow",
)
"""What litellm and ADK import lazily on an agent's first model call (about 3,000 modules; these
packages bring in all but about 300 of them): imported here, so before the worker reports ready,
and a cell's time limit never pays for them on a loaded machine."""
for _module in FIRST_CALL_MODULES:
    importlib.import_module(_module)

APP_NAME = "misfit_bench"
USER_ID = "misfit"
AGENT_NAME = "structured_agent"
OUTPUT_KEY = "result"
"""``LlmAgent(output_key=...)``: where ADK stores the validated answer in the session's state."""

HARDENED_ATTEMPTS = 3
"""The hardened cells' ``HttpRetryOptions(attempts=...)``, which LiteLlm hands litellm as
``num_retries`` (models/lite_llm.py:4182-4187). The hardened cells also run ADK's documented tool
recovery plugin, ``ReflectAndRetryToolPlugin()`` (max_retries 3: plugins/reflect_retry_tool_plugin.py:103-109),
which answers a raising tool with a reflection message instead of raising out of the run."""

MAX_TOKENS = 1024
"""``max_tokens`` on the Anthropic route (the Messages API requires one)."""


def model(cell: Cell, endpoint: Endpoint) -> LiteLlm:
    """``LiteLlm("openai/<model>")`` or ``LiteLlm("anthropic/<model>")`` with an explicit
    ``api_base`` and ``api_key`` (they win over OPENAI_* / ANTHROPIC_* variables)."""
    if cell.protocol is Protocol.RESPONSES:
        name = f"openai/responses/{endpoint.openai_model}"
        return LiteLlm(model=name, api_base=endpoint.openai_base_url, api_key=endpoint.api_key)
    if cell.protocol is Protocol.ANTHROPIC:
        return LiteLlm(
            model=f"anthropic/{endpoint.anthropic_model}",
            api_base=endpoint.anthropic_base_url,
            api_key=endpoint.api_key,
            max_tokens=MAX_TOKENS,
        )
    return LiteLlm(model=f"openai/{endpoint.openai_model}", api_base=endpoint.openai_base_url, api_key=endpoint.api_key)


def agent(cell: Cell, task: Task, endpoint: Endpoint) -> LlmAgent:
    """The cell's agent: output_schema and output_key always; the harness tool on a tool task;
    the documented retry options on a hardened cell."""
    config = None
    if cell.variant == Variant.HARDENED:
        retry = types.HttpRetryOptions(attempts=HARDENED_ATTEMPTS)
        config = types.GenerateContentConfig(http_options=types.HttpOptions(retry_options=retry))
    return LlmAgent(
        name=AGENT_NAME,
        model=model(cell, endpoint),
        instruction="Answer the user's request.",
        output_schema=task.output_model,
        output_key=OUTPUT_KEY,
        tools=[task.tool.as_function()] if task.tool is not None else [],
        generate_content_config=config,
    )


async def run(cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
    """One ``runner.run_async`` of the cell's agent, read to its end (SSE on a stream cell)."""
    built = agent(cell, task, endpoint)
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    with task.tool.current() if task.tool is not None else nullcontext():
        config = RunConfig(streaming_mode=StreamingMode.SSE if cell.stream else StreamingMode.NONE)
        plugins: list[BasePlugin] = [ReflectAndRetryToolPlugin()] if cell.variant == Variant.HARDENED else []
        result = await run_agent(built, task.prompt, config, result, plugins)
    return result


async def run_agent(
    built: LlmAgent, prompt: str, config: RunConfig, result: AdapterResult, plugins: list[BasePlugin] | None = None
) -> AdapterResult:
    """A user's run: an ``App`` of the agent (and ``plugins``), a Runner over an in-memory session,
    the events read, the output key's state read back. Only the SDK calls are guarded;
    ``runner.close()`` runs on every path (it closes the plugins too)."""
    sessions = InMemorySessionService()
    app = App(name=APP_NAME, root_agent=built, plugins=plugins or [])
    runner = Runner(app=app, session_service=sessions)
    usage = _Usage()
    try:
        session = await sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        async for event in runner.run_async(
            user_id=USER_ID, session_id=session.id, new_message=message, run_config=config
        ):
            usage.add(event)
        done = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session.id)
        result.output = None if done is None else done.state.get(built.output_key or OUTPUT_KEY)
    except Exception as error:  # ADK's or litellm's own: ValidationError, litellm.RateLimitError...
        result.exception = error
    finally:
        await runner.close()
    result.usage = usage.reported()
    return result


class _Usage:
    """The tokens each model response reported (``Event.usage_metadata``), partial chunks left out."""

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def add(self, event: Any) -> None:
        metadata = getattr(event, "usage_metadata", None)
        if metadata is None or getattr(event, "partial", False):
            return
        self.input_tokens = (self.input_tokens or 0) + (metadata.prompt_token_count or 0)
        self.output_tokens = (self.output_tokens or 0) + (metadata.candidates_token_count or 0)

    def reported(self) -> ReportedUsage | None:
        if self.input_tokens is None:
            return None
        return ReportedUsage(self.input_tokens, self.output_tokens)
