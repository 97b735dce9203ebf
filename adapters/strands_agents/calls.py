"""Strands' calls, as a user writes them: imported only in the strands environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

One ``Agent`` per cell, used as an async context manager so its ``shutdown_async`` runs however
the call ends (agent/agent.py:875-886): an agent keeps its conversation (``agent.messages``), so a
user's loop that reuses one carries the last answer into the next call, and a cell must not.
The model provider is built per cell too; ``OpenAIModel`` opens a fresh ``AsyncOpenAI`` per
request anyway (models/openai.py:736, 864). Nothing here starts a thread or a loop: the async
entry points run on the worker's loop (the sync ``Agent.__call__`` / ``structured_output`` run
each call in a ``ThreadPoolExecutor`` with its own ``asyncio.run``, strands/_async.py).
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from typing import Any

from pydantic import BaseModel, create_model, model_validator
from strands import Agent, tool
from strands.models.anthropic import AnthropicModel
from strands.models.openai import OpenAIModel
from strands.models.openai_responses import OpenAIResponsesModel

from bench.core.vocabulary import Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

MAX_TOKENS = 1024
"""``max_tokens``, required by ``AnthropicModel`` (AnthropicConfig) and the Messages API."""


async def run(cell: Cell, task: Task, endpoint: Endpoint, method: bool) -> AdapterResult:
    """One call of a fresh agent: ``structured_output_async`` when ``method``, else the agent loop
    with ``structured_output_model`` (``stream_async`` for the stream variant)."""
    output_model = _checked(task) if cell.variant == Variant.HARDENED else task.output_model
    tools = [] if method or task.tool is None else [tool(task.tool.as_function())]
    result = AdapterResult(details=_details(cell, task, method))
    with task.tool.current() if task.tool is not None else nullcontext():
        async with Agent(
            model=_model(cell.protocol, endpoint),
            tools=tools,
            structured_output_model=None if method else output_model,
            callback_handler=None,
        ) as agent:
            try:
                if method:
                    with warnings.catch_warnings():  # its DeprecationWarning, as a user silences it
                        warnings.simplefilter("ignore", DeprecationWarning)
                        result.output = await agent.structured_output_async(output_model, task.prompt)
                elif cell.stream:
                    async for event in agent.stream_async(task.prompt):
                        if "result" in event:
                            result.output = event["result"].structured_output
                else:
                    result.output = (await agent.invoke_async(task.prompt)).structured_output
            except Exception as error:  # strands' own: StructuredOutputException, ModelThrottledException...
                result.exception = error
            result.usage = _usage(agent)
    return result


def _model(protocol: Protocol, endpoint: Endpoint) -> Any:
    """The protocol's strands provider, with an explicit ``base_url`` and ``api_key`` in
    ``client_args`` (passed to the official client as they are)."""
    if protocol is Protocol.ANTHROPIC:
        anthropic_args = {"base_url": endpoint.anthropic_base_url, "api_key": endpoint.api_key}
        return AnthropicModel(client_args=anthropic_args, model_id=endpoint.anthropic_model, max_tokens=MAX_TOKENS)
    openai_args = {"base_url": endpoint.openai_base_url, "api_key": endpoint.api_key}
    kind = OpenAIResponsesModel if protocol is Protocol.RESPONSES else OpenAIModel
    return kind(client_args=openai_args, model_id=endpoint.openai_model)


def _details(cell: Cell, task: Task, method: bool) -> dict[str, str]:
    details = {"declaration": cell.note.split(";", 1)[0], "retry_strategy": "ModelRetryStrategy() default"}
    if task.tool is not None and not method:
        details["tool_declaration"] = "tools=[strands.tool(lookup_order)]"
    return details


def _checked(task: Task) -> type[BaseModel]:
    """The hardened cells' output model: the task's type with a model validator raising the task's
    check, so a wrong answer is a ValidationError the structured-output tool hands back to the
    model as an error result (tools/structured_output/structured_output_tool.py:124-146). Same
    name, so the same tool name reaches the wire."""

    def check(self: BaseModel) -> BaseModel:
        if (reason := task.check(self)) is not None:
            raise ValueError(reason)
        return self

    if (model := _CHECKED.get(task.output_model)) is None:
        validators: dict[str, Any] = {"check": model_validator(mode="after")(check)}
        name = task.output_model.__name__
        model = _CHECKED[task.output_model] = create_model(name, __base__=task.output_model, __validators__=validators)
    return model


_CHECKED: dict[type[BaseModel], type[BaseModel]] = {}
"""One checked model per task type, built once per worker."""


def _usage(agent: Agent) -> ReportedUsage | None:
    """The agent's usage summed over the model calls (``EventLoopMetrics.accumulated_usage``,
    telemetry/metrics.py:225); none recorded by ``structured_output_async``, which bypasses the loop."""
    usage = agent.event_loop_metrics.accumulated_usage
    if not usage.get("inputTokens") and not usage.get("outputTokens"):
        return None
    return ReportedUsage(usage.get("inputTokens"), usage.get("outputTokens"))
