"""AutoGen AgentChat's calls, as a user writes them: imported only in the autogen-agentchat
environment's worker (adapter.py declares the cells without the SDK; the worker preloads this module).

One ``AssistantAgent`` per cell: an agent keeps its model context between runs (the docs: "agents
are expected to be stateful"), so a cell must not reuse one. Its ``OpenAIChatCompletionClient`` holds
no per-call state (usage counters only), so within a run one is built on the provider-wide endpoint
and the run's shared routing transport and reused by every cell, as a user's loop reuses its client
(bench.sdk.clients; the transport is ``AsyncOpenAI``'s ``http_client``, which the client passes on,
models/openai/_openai_client.py:131-134); outside a run, one per cell, closed however the run ends
(``close`` closes its ``AsyncOpenAI``, :1142-1143). Nothing here starts a thread or a
loop: ``run`` and ``run_stream`` are coroutines on the worker's loop, and the harness tool is an
``async def`` that ``FunctionTool`` awaits on that loop (autogen_core/tools/_function_tool.py: a sync
function would go to the loop's default executor instead).
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import BaseChatMessage
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from openai import DefaultAsyncHttpxClient

from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

SYSTEM_MESSAGE = "Answer the user's request."
"""The agent's system message (AssistantAgent's default asks for TERMINATE, which a one-agent run
does not need)."""


def build_agent(task: Task, client: OpenAIChatCompletionClient, settings: dict[str, Any]) -> AssistantAgent:
    """``AssistantAgent(output_content_type=Model)`` with the task's tool, if any, and the cell's
    settings (``max_tool_iterations``, ``reflect_on_tool_use``, ``model_client_stream``).

    The tool is a ``FunctionTool(..., strict=True)``, as its docs require "when used with models in
    structured output mode" (autogen_core/tools/_function_tool.py:50-52): a plain function is a
    non-strict tool, which the official client's ``beta.chat.completions.parse`` refuses with
    ``ValueError`` before any request (openai/lib/_parsing/_completions.py:86-91; research.md)."""
    tools = None
    if task.tool is not None:
        tools = [FunctionTool(task.tool.as_function(), description=task.tool.description, strict=True)]
    return AssistantAgent(
        "assistant",
        model_client=client,
        tools=tools,
        system_message=SYSTEM_MESSAGE,
        output_content_type=task.output_model,
        **settings,
    )


async def run(cell: Cell, task: Task, endpoint: Endpoint, settings: dict[str, Any]) -> AdapterResult:
    """One ``run`` (or ``run_stream`` read to its ``TaskResult``) of a fresh agent, on the run's
    reused client, or on a client of its own closed in every case."""
    with clients.routed(endpoint) as provider_wide:
        if provider_wide is not None:
            client = clients.reused(("autogen-agentchat", provider_wide.root), lambda: _client(provider_wide, True))
            return await call(build_agent(task, client, settings), task.prompt, cell.stream)
    own = _client(endpoint, False)
    try:
        return await call(build_agent(task, own, settings), task.prompt, cell.stream)
    finally:
        await own.close()


def _client(endpoint: Endpoint, shared: bool) -> OpenAIChatCompletionClient:
    """The client a user builds, explicit ``base_url`` and ``api_key``; within a run on the shared
    transport (the official client's own default, with the hook that routes each request to its
    cell's run)."""
    http_client = clients.shared(("autogen-agentchat",), _routing_transport) if shared else None
    return OpenAIChatCompletionClient(
        model=endpoint.openai_model,
        base_url=endpoint.openai_base_url,
        api_key=endpoint.api_key,
        http_client=http_client,
    )


def _routing_transport() -> DefaultAsyncHttpxClient:
    return clients.routing(DefaultAsyncHttpxClient())


async def call(agent: AssistantAgent, prompt: str, stream: bool) -> AdapterResult:
    """Only the SDK call is guarded. What reached the caller is the last message's ``content``: a
    ``StructuredMessage``'s model instance, or the text of a ``TextMessage`` / ``ToolCallSummaryMessage``
    (reflection off); the message's type goes in a details column."""
    result = AdapterResult()
    try:
        if stream:
            final: TaskResult | None = None
            async for item in agent.run_stream(task=prompt):
                if isinstance(item, TaskResult):
                    final = item
            if final is None:
                result.details = {"final_message": "no TaskResult"}
                return result
        else:
            final = await agent.run(task=prompt)
    except Exception as error:  # autogen's own, or what its model client let through, as it is
        result.exception = error
        return result
    last = final.messages[-1]
    result.output = last.content
    result.details = {"final_message": type(last).__name__.split("[", 1)[0]}
    result.usage = _usage(final)
    return result


def _usage(final: TaskResult) -> ReportedUsage | None:
    """The usage the run's messages carry (``models_usage``: the tool-call request and the final
    answer each hold their model call's), summed; None where none carries any."""
    counted = [m.models_usage for m in final.messages if isinstance(m, BaseChatMessage) or hasattr(m, "models_usage")]
    used = [usage for usage in counted if usage is not None]
    if not used:
        return None
    return ReportedUsage(sum(u.prompt_tokens for u in used), sum(u.completion_tokens for u in used))
