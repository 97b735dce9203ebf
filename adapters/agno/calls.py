"""agno's calls, as a user writes them: imported only in the agno environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

One agent per cell, on a model with the cell's explicit ``base_url`` and ``api_key`` (they win
over OPENAI_* / ANTHROPIC_* variables) and an ``httpx.AsyncClient`` this module opens and closes,
so no connection outlives the cell: agno keeps the official client it builds on the model
(models/openai/chat.py:160-190) and never closes one it was given.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from agno.agent import Agent
from agno.models.anthropic import Claude
from agno.models.openai import OpenAIChat, OpenAIResponses
from agno.run.agent import RunErrorEvent, RunOutput

from bench.core.vocabulary import Mode, Protocol
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

INSTRUCTIONS = "Answer the user's request."
"""The agent's instructions: agno sends them as the system message."""

os.environ["AGNO_TELEMETRY"] = "false"
"""agno posts a telemetry event per run unless told not to (agent/_telemetry.py:60-79); the variable
wins over ``Agent(telemetry=...)`` (agent/_init.py:62-66), so it is set for the whole worker: no
request leaves loopback."""


async def run(cell: Cell, task: Task, endpoint: Endpoint, retries: int) -> AdapterResult:
    """One ``arun`` of the cell's agent (or its stream, read to its end); ``retries`` is the
    agent's run budget the adapter chose for the cell's variant."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http:
        agent = build_agent(cell, task, endpoint, http, retries)
        return await call(agent, task.prompt, cell.stream)


def model_for(protocol: Protocol, endpoint: Endpoint, http: httpx.AsyncClient) -> Any:
    """agno's model class for the protocol, pointed at the local provider."""
    if protocol is Protocol.ANTHROPIC:
        return Claude(
            id=endpoint.anthropic_model,
            api_key=endpoint.api_key,
            client_params={"base_url": endpoint.anthropic_base_url},
            http_client=http,
        )
    kind = OpenAIResponses if protocol is Protocol.RESPONSES else OpenAIChat
    return kind(id=endpoint.openai_model, api_key=endpoint.api_key, base_url=endpoint.openai_base_url, http_client=http)


def build_agent(cell: Cell, task: Task, endpoint: Endpoint, http: httpx.AsyncClient, retries: int) -> Agent:
    """``Agent(model=..., output_schema=Model)``, its switch as the mode says, tools as the task has;
    a cell with run retries does not sleep between them (``delay_between_retries=0``)."""
    return Agent(
        model=model_for(cell.protocol, endpoint, http),
        instructions=INSTRUCTIONS,
        output_schema=task.output_model,
        use_json_mode=cell.mode is Mode.PROMPTED,
        tools=[task.tool.as_function()] if task.tool is not None else None,
        retries=retries,
        delay_between_retries=0 if retries else 1,
        telemetry=False,
    )


async def call(agent: Agent, prompt: str, stream: bool) -> AdapterResult:
    """Only the SDK call is guarded; what agno handed back (its content, even an error's text) is
    recorded as it is, its run status beside it."""
    result = AdapterResult()
    try:
        if stream:
            last: RunOutput | RunErrorEvent | None = None
            async for event in agent.arun(prompt, stream=True, yield_run_output=True):
                if isinstance(event, RunOutput | RunErrorEvent):
                    last = event
            result.output = None if last is None else last.content
            metrics = getattr(last, "metrics", None)
            status = "no final event" if last is None else _status(last)
        else:
            output = await agent.arun(prompt)
            result.output, metrics, status = output.content, output.metrics, _status(output)
    except Exception as error:  # agno's own, reaching the caller as it is
        result.exception = error
        return result
    result.details = {"run_status": status}
    if metrics is not None:
        result.usage = ReportedUsage(metrics.input_tokens, metrics.output_tokens)
    return result


def _status(final: RunOutput | RunErrorEvent) -> str:
    """The run's status as agno reports it: ``RunOutput.status`` (COMPLETED, ERROR...), or the
    stream's ``RunErrorEvent`` with its error type."""
    if isinstance(final, RunErrorEvent):
        return f"RunErrorEvent {final.error_type or ''}".strip()
    return str(final.status.value)
