"""The official anthropic client alone: ``AsyncAnthropic`` and its structured-output option.

What a team without a framework writes: one ``AsyncAnthropic(base_url=, api_key=)`` reused for
every call, and either

- native: ``messages.parse(output_format=Model)`` (resources/messages/messages.py:3230), which
  sends the type's schema as ``output_config.format`` (:3270-3313) and validates each text block
  with ``TypeAdapter(Model).validate_json`` (lib/_parse/_response.py:15-19): ``parsed_output`` on
  the message (types/parsed_message.py:76-82); streamed, ``messages.stream(output_format=Model)``
  read to ``get_final_message()`` (lib/streaming/_messages.py:261), which parses each text block
  when it stops (:533-535); or
- tool: ``messages.create(tools=[{name, input_schema}], tool_choice={"type": "tool", "name": ...})``
  (resources/messages/messages.py:1903), the documented way to force one tool; the client hands
  back the ``tool_use`` block's ``input`` as a dict and validates nothing, so the type is applied
  by the caller's one line, ``Model.model_validate(block.input)``: a composed cell.

The client has no output retry, validator or fallback: ``parse`` raises pydantic's
``ValidationError`` on text that does not validate whatever the ``stop_reason`` (a truncated or a
refused answer included), and its only retries are the transport's, ``max_retries=2`` by default
(_constants.py). So there is no hardened variant and no prompted mode, and the client speaks no
OpenAI protocol. adapters/anthropic_client/research.md has the account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

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

MAX_TOKENS = 1024
"""``max_tokens`` is a required argument of every Messages call (messages.py:3234)."""

_CALLS: dict[tuple[Mode, bool], str] = {
    (Mode.NATIVE, False): "client.messages.parse(output_format=Model) -> parsed_output",
    (Mode.NATIVE, True): "client.messages.stream(output_format=Model) + get_final_message().parsed_output",
    (Mode.TOOL, False): (
        "client.messages.create(tools=[{name, input_schema}], tool_choice={'type': 'tool'}) "
        "+ Model.model_validate(tool_use.input)"
    ),
    (Mode.TOOL, True): (
        "client.messages.stream(tools=[{name, input_schema}], tool_choice={'type': 'tool'}) + get_final_message() "
        "+ Model.model_validate(tool_use.input)"
    ),
}

NO_HARDENING = (
    "the client has no output retry budget, validator or fallback handler: parse raises or returns "
    "(lib/_parse/_response.py:15-19); a retry loop would be the caller's code"
)
NO_TOOL_LOOP = (
    "the client runs no tools: executing a tool_use block and sending its tool_result back is the caller's "
    "loop, not the client's (messages.create returns the blocks as they came)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """Native and tool on Anthropic Messages, plain and streamed; each gap once, under the default
    variant where it holds for every variant."""
    if protocol is not Protocol.ANTHROPIC:
        if variant != Variant.DEFAULT:
            return None
        return Support.unsupported(f"the anthropic client speaks Anthropic Messages only, not {protocol}")
    if mode is Mode.PROMPTED:
        if variant != Variant.DEFAULT:
            return None
        return Support.unsupported(
            "the client parses only output_format (lib/_parse/_response.py:15-19): "
            "a schema in the prompt is parsed by the caller's code"
        )
    if variant == Variant.HARDENED:
        return Support.unsupported(NO_HARDENING)
    call = f"{_CALLS[(mode, variant == Variant.STREAM)]}; AsyncAnthropic(base_url, api_key), max_retries default 2"
    return Support.builtin(call) if mode is Mode.NATIVE else Support.composed(call)


@dataclass(frozen=True)
class _Call:
    mode: Mode
    stream: bool


class AnthropicClientAdapter(Adapter):
    """anthropic 2.14: ``AsyncAnthropic`` with ``messages.parse`` / ``stream`` / ``create``."""

    name: ClassVar[str] = "anthropic-client"
    distribution: ClassVar[str] = "anthropic"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    supported_releases: ClassVar[str] = ">=0.74"
    """``messages.parse(output_format=...)`` outside ``beta`` exists from 0.74."""
    time_limit_s: ClassVar[float] = 10.0
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        return NO_TOOL_LOOP

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """One call of the client. Within a run one ``AsyncAnthropic`` on the run's shared
        transport serves every cell (it holds no per-call state), as a user's loop reuses its
        client; outside a run, one per cell, closed with it."""
        call = _Call(cell.mode, cell.stream)
        with clients.routed(endpoint) as provider_wide:
            if provider_wide is not None:
                client = clients.reused((self.name, provider_wide.root), lambda: _client(provider_wide, True))
                return await _run(call, task, client, provider_wide)
            async with _client(endpoint, False) as own:
                return await _run(call, task, own, endpoint)


def _client(endpoint: Endpoint, shared: bool) -> AsyncAnthropic:
    """Explicit ``base_url`` and ``api_key`` win over ANTHROPIC_* variables (_client.py); within a
    run, the client's own default transport with the hook that routes requests to their run."""
    http_client = clients.shared((AnthropicClientAdapter.name,), _routing_transport) if shared else None
    return AsyncAnthropic(base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, http_client=http_client)


def _routing_transport() -> DefaultAsyncHttpxClient:
    return clients.routing(DefaultAsyncHttpxClient())


async def _run(call: _Call, task: Task, client: AsyncAnthropic, endpoint: Endpoint) -> AdapterResult:
    """Only the client's call (and, in tool mode, the caller's one validation line) is guarded:
    what it raised reaches the caller as it is."""
    result = AdapterResult(details={"declaration": _CALLS[(call.mode, call.stream)]})
    kwargs: dict[str, Any] = {
        "model": endpoint.anthropic_model,
        "max_tokens": MAX_TOKENS,
        "messages": [{"role": "user", "content": task.prompt}],
    }
    try:
        if call.mode is Mode.NATIVE:
            message: Any = await _native(call, task, client, kwargs)
            result.usage = _usage(message)
            result.output = message.parsed_output
        else:
            message = await _tool(call, task, client, kwargs)
            result.usage = _usage(message)
            blocks = [block for block in message.content if block.type == "tool_use"]
            result.output = task.output_model.model_validate(blocks[0].input) if blocks else None
    except Exception as error:  # the client's own (APIStatusError...) or the type's ValidationError
        result.exception = error
    return result


async def _native(call: _Call, task: Task, client: AsyncAnthropic, kwargs: dict[str, Any]) -> Any:
    if call.stream:
        async with client.messages.stream(**kwargs, output_format=task.output_model) as stream:
            return await stream.get_final_message()
    return await client.messages.parse(**kwargs, output_format=task.output_model)


async def _tool(call: _Call, task: Task, client: AsyncAnthropic, kwargs: dict[str, Any]) -> Any:
    name = task.output_model.__name__
    schema = task.output_model.model_json_schema()
    tool = {"name": name, "description": f"Answer with a {name}.", "input_schema": schema}
    kwargs |= {"tools": [tool], "tool_choice": {"type": "tool", "name": name}}
    if call.stream:
        async with client.messages.stream(**kwargs) as stream:
            return await stream.get_final_message()
    return await client.messages.create(**kwargs)


def _usage(message: Any) -> ReportedUsage:
    return ReportedUsage(message.usage.input_tokens, message.usage.output_tokens)
