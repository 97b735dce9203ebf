"""The smolagents adapter: a ``ToolCallingAgent`` whose final answer is the task's pydantic type,
on ``OpenAIServerModel`` (Chat Completions) pointed at the local provider.

What each cell is (research.md has the source lines, paths under site-packages/smolagents):

- tool, ``default``: ``ToolCallingAgent(tools=[final_answer typed tool], model=OpenAIServerModel(...))``
  and ``agent.run(prompt)``. Every model call sends the tools with ``tool_choice="required"``
  (models.py:510); the run ends when the model calls ``final_answer`` (agents.py:1406, 584-596).
  A tool error of any kind (arguments that do not fit the tool's ``inputs``, a ``ValidationError``
  from the typed tool, an unknown tool, the harness tool raising) is an ``AgentError`` kept in the
  step and shown to the model on the next one (agents.py:597-599); the budget is ``max_steps=20``
  steps, after which one more call without tools asks for an answer and its text is returned
  unchecked (agents.py:606-607, 625-637, 810-853). A model error (an HTTP status the client did
  not retry away, a response it cannot read) is ``AgentGenerationError``, raised at once (agents.py:1324-1325, 594-596).
- tool, ``hardened``: ``max_steps=3`` and a ``final_answer_checks`` function that raises the task's
  reason for a wrong answer (answer.py), fed back like a tool error.
- tool, ``stream``: ``stream_outputs=True`` (``OpenAIServerModel.generate_stream``, models.py:1707)
  and ``agent.run(prompt, stream=True)`` read to its ``FinalAnswerStep``.

smolagents is synchronous: ``agent.run`` runs in a thread of its own per cell (the SDK starts
threads itself only for parallel tool calls, joined before the step ends, agents.py:1426). A cell
cancelled at its time limit interrupts the agent (checked between steps, agents.py:546) and is
reported at once; the thread ends when the SDK's call in flight returns: the model's client is
given a timeout of twice the cell's limit, so a stalled read ends then (its transport retries
included, at most three times that).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib.resources
import io
import threading
from typing import Any, ClassVar

import yaml
from openai import DefaultHttpxClient
from rich.console import Console
from smolagents import LogLevel, MultiStepAgent, OpenAIServerModel, ToolCallingAgent
from smolagents.memory import FinalAnswerStep
from smolagents.monitoring import AgentLogger

from adapters.smolagents.answer import final_answer_tool, lookup_tool, raising_check
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import (
    MODES,
    PROTOCOLS,
    VARIANTS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    ReportedUsage,
    Support,
    SupportTable,
    grid,
)

HARDENED_MAX_STEPS = 3
"""The hardened cells' step budget (the default is 20, agents.py:300)."""

THREAD_PREFIX = "smolagents-cell"
"""The name of the thread each cell's ``agent.run`` runs in (the leak test looks for it)."""

_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "ToolCallingAgent(tools=[typed final_answer], model=OpenAIServerModel).run(prompt); max_steps=20",
    Variant.HARDENED: (
        f"ToolCallingAgent(tools=[typed final_answer], max_steps={HARDENED_MAX_STEPS}, "
        "final_answer_checks=[check raising task.check]).run(prompt)"
    ),
    Variant.STREAM: "ToolCallingAgent(..., stream_outputs=True).run(prompt, stream=True), its FinalAnswerStep",
}

_NO_LITELLM = (
    "smolagents reaches the {api} only through LiteLLMModel, which imports litellm (models.py:1255-1262), "
    "not in the pinned set; OpenAIServerModel speaks Chat Completions only (models.py:1780)"
)
_NO_NATIVE = (
    "ToolCallingAgent never sends the user's type as response_format: its step calls the model with tools only "
    "(agents.py:1291-1313); only CodeAgent's use_structured_outputs_internally sends a schema, its own"
)
_NO_PROMPTED = (
    "ToolCallingAgent forces a tool call on every model call (tool_choice='required', models.py:510); an answer in "
    "text is read as a tool call's JSON (agents.py:1327-1331), so the final answer is always the final_answer tool"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """One rule: the final_answer tool on Chat Completions; the reason for everything else."""
    if protocol is Protocol.RESPONSES:
        return Support.unsupported(_NO_LITELLM.format(api="Responses API"))
    if protocol is Protocol.ANTHROPIC:
        return Support.unsupported(_NO_LITELLM.format(api="Anthropic Messages API"))
    if mode is Mode.NATIVE:
        return Support.unsupported(_NO_NATIVE)
    if mode is Mode.PROMPTED:
        return Support.unsupported(_NO_PROMPTED)
    return Support.composed(_NOTES[variant])


class SmolagentsAdapter(Adapter):
    """smolagents 1.26: ``ToolCallingAgent`` with a typed ``final_answer`` on ``OpenAIServerModel``."""

    name: ClassVar[str] = "smolagents"
    distribution: ClassVar[str] = "smolagents"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    requirement: ClassVar[str] = "smolagents[openai]"
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=1.20"
    time_limit_s: ClassVar[float] = 15.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Within a run, one ``OpenAIServerModel`` per run on the run's shared (sync) HTTP client,
        reused by every cell as a user's loop reuses its model: it holds no per-call state (its
        client, retryer and an unset rate limiter, models.py:1167-1183). The agent, which keeps a
        run's memory, steps and state, is built per cell. Outside a run, a model per cell."""
        with clients.routed(endpoint) as provider_wide:
            if provider_wide is not None:
                model = clients.reused((self.name, provider_wide.root), lambda: self._model(provider_wide, True))
                return await self._drive(cell, task, model, owned=False)
            return await self._drive(cell, task, self._model(endpoint, False), owned=True)

    async def _drive(self, cell: Cell, task: Task, model: OpenAIServerModel, owned: bool) -> AdapterResult:
        agent = _agent(cell, task, model, asyncio.get_running_loop())
        result = await in_a_thread(agent, task.prompt, cell.stream, owned)
        result.details.update(_details(cell, task))
        return result

    def _model(self, endpoint: Endpoint, shared: bool) -> OpenAIServerModel:
        """The model a user builds, explicit ``api_base`` and ``api_key``; its client times out at
        twice the cell's limit, so a hung call's thread ends (module docstring). Shared: the
        openai client's own default transport, with the hook routing each request to its run."""
        client_kwargs: dict[str, object] = {"timeout": 2 * self.time_limit_s}
        if shared:
            client_kwargs["http_client"] = clients.shared((self.name,), _routing_transport)
        return OpenAIServerModel(
            model_id=endpoint.openai_model,
            api_base=endpoint.openai_base_url,
            api_key=endpoint.api_key,
            client_kwargs=client_kwargs,
        )


async def in_a_thread(
    agent: MultiStepAgent, prompt: str, stream: bool, owned: bool, run_kwargs: dict[str, Any] | None = None
) -> AdapterResult:
    """``agent.run`` in a thread of its own, in this context (the run's route, which the shared
    client's hook reads); a cancelled cell interrupts the agent and returns at once, and the
    thread ends when the SDK's call in flight does. ``owned``: close the model's client after."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[AdapterResult] = loop.create_future()

    def deliver(result: AdapterResult) -> None:
        if not finished.done():
            finished.set_result(result)

    def work() -> None:
        result = _run(agent, prompt, stream, owned, run_kwargs or {})
        with contextlib.suppress(RuntimeError):  # the loop closed while the SDK's call was in flight
            loop.call_soon_threadsafe(deliver, result)

    name = f"{THREAD_PREFIX}-{'stream' if stream else 'run'}"
    threading.Thread(target=contextvars.copy_context().run, args=(work,), name=name, daemon=True).start()
    try:
        return await finished
    except asyncio.CancelledError:
        agent.interrupt()
        raise


def _routing_transport() -> DefaultHttpxClient:
    return clients.routing(DefaultHttpxClient(), asynchronous=False)


def _agent(cell: Cell, task: Task, model: OpenAIServerModel, loop: asyncio.AbstractEventLoop) -> ToolCallingAgent:
    tools = [final_answer_tool(task.output_model)]
    if task.tool is not None:
        tools.append(lookup_tool(task.tool, loop))
    hardened = cell.variant == Variant.HARDENED
    return ToolCallingAgent(
        tools=tools,
        model=model,
        prompt_templates=_templates(),
        max_steps=HARDENED_MAX_STEPS if hardened else 20,
        final_answer_checks=[raising_check(task)] if hardened else None,
        stream_outputs=cell.stream,
        logger=AgentLogger(level=LogLevel.OFF, console=_quiet_console()),
    )


@functools.cache
def _templates() -> dict[str, object]:
    """``ToolCallingAgent``'s own prompt templates, read once: what the agent loads itself when
    given none (agents.py:1241-1243), the same text, without parsing the YAML per cell."""
    text = importlib.resources.files("smolagents.prompts").joinpath("toolcalling_agent.yaml").read_text()
    return dict(yaml.safe_load(text))


def _run(agent: MultiStepAgent, prompt: str, stream: bool, owned: bool, run_kwargs: dict[str, Any]) -> AdapterResult:
    """One run, in the cell's thread: what reached the caller, the SDK's exception as it is."""
    result = AdapterResult()
    try:
        if stream:
            for event in agent.run(prompt, stream=True, **run_kwargs):
                if isinstance(event, FinalAnswerStep):
                    result.output = event.output
        else:
            run = agent.run(prompt, return_full_result=True, **run_kwargs)
            result.output = run.output
            result.details["run_status"] = run.state
    except Exception as error:  # smolagents' own: AgentGenerationError, AgentError...
        result.exception = error
    finally:
        if owned:  # the model's openai.OpenAI, which the agent never closes; a run's shared one stays
            agent.model.client.close()
    totals = agent.monitor.get_total_token_counts()
    if totals.input_tokens or totals.output_tokens:
        result.usage = ReportedUsage(totals.input_tokens, totals.output_tokens)
    return result


def _details(cell: Cell, task: Task) -> dict[str, str]:
    details = {"declaration": cell.note.split(";", 1)[0]}
    if task.tool is not None:
        details["tool_declaration"] = "tools=[smolagents.tool(lookup_order)] (sync, on the cell's loop)"
    return details


def _quiet_console() -> Console:
    """A rich console writing nowhere: the agent's panels and its stream's ``Live`` display
    (agents.py:1300) would otherwise go to the harness's stdout, which carries data."""
    return Console(file=io.StringIO(), force_terminal=False)
