"""The official openai client alone: ``AsyncOpenAI`` and its structured-output helpers.

What a team without a framework writes: one ``AsyncOpenAI(base_url=, api_key=)`` reused for every
call, and a pydantic type handed to the client's parse helpers, which send it as a strict schema
and validate the answer into the type:

- native: ``chat.completions.parse(response_format=Model)`` (resources/chat/completions/completions.py:1894)
  and ``responses.parse(text_format=Model)`` (resources/responses/responses.py:2196);
- tool: the same ``parse`` with ``tools=[openai.pydantic_function_tool(Model)]`` (lib/_tools.py:42) or
  ``pydantic_responses_function_tool`` (lib/_tools.py:71), forced by ``tool_choice``; the client
  parses the call's arguments into the type (lib/_parsing/_completions.py:181-197,
  lib/_parsing/_responses.py:192-215);
- stream: ``chat.completions.stream`` / ``responses.stream`` read to ``get_final_completion()`` /
  ``get_final_response()`` (lib/streaming/chat/_completions.py:216, lib/streaming/responses/_responses.py:188).

The client has no output retry, no validator and no fallback: ``parse`` raises
``LengthFinishReasonError`` on ``finish_reason == "length"``, ``ContentFilterFinishReasonError`` on
``"content_filter"`` (lib/_parsing/_completions.py:109-113), pydantic's ``ValidationError`` on text
that does not validate, and returns ``parsed=None`` for a refusal (:205-206). So there is no
hardened variant and no prompted mode (a schema in the prompt parsed by hand is the caller's code,
not the client's), and the client speaks no Anthropic. Its only retries are the transport's,
``max_retries=2`` by default (_constants.py). adapters/openai_client/research.md has the account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from openai import AsyncOpenAI, DefaultAsyncHttpxClient, pydantic_function_tool, pydantic_responses_function_tool

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

_CALLS: dict[tuple[Mode, Protocol, bool], str] = {
    (Mode.NATIVE, Protocol.CHAT, False): "client.chat.completions.parse(response_format=Model)",
    (Mode.NATIVE, Protocol.CHAT, True): (
        "client.chat.completions.stream(response_format=Model) + get_final_completion()"
    ),
    (Mode.NATIVE, Protocol.RESPONSES, False): "client.responses.parse(text_format=Model)",
    (Mode.NATIVE, Protocol.RESPONSES, True): "client.responses.stream(text_format=Model) + get_final_response()",
    (Mode.TOOL, Protocol.CHAT, False): (
        "client.chat.completions.parse(tools=[pydantic_function_tool(Model)], tool_choice=the tool)"
    ),
    (Mode.TOOL, Protocol.CHAT, True): (
        "client.chat.completions.stream(tools=[pydantic_function_tool(Model)], tool_choice=the tool) "
        "+ get_final_completion()"
    ),
    (Mode.TOOL, Protocol.RESPONSES, False): (
        "client.responses.parse(tools=[pydantic_responses_function_tool(Model)], tool_choice=the tool)"
    ),
    (Mode.TOOL, Protocol.RESPONSES, True): (
        "client.responses.stream(tools=[pydantic_responses_function_tool(Model)], tool_choice=the tool) "
        "+ get_final_response()"
    ),
}

NO_HARDENING = (
    "the client has no output retry budget, validator or fallback handler: parse raises or returns "
    "(lib/_parsing/_completions.py:109-113, 205-206); a retry loop would be the caller's code"
)
NO_TOOL_LOOP = (
    "the client runs no tools: executing a tool call and sending its result back is the caller's loop, "
    "not the client's (parse only parses tool arguments, lib/_parsing/_completions.py:117-133)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """Native and tool on both OpenAI protocols, plain and streamed; each gap once, under the
    default variant where it holds for every variant."""
    if protocol is Protocol.ANTHROPIC:
        if variant != Variant.DEFAULT:
            return None
        return Support.unsupported("the openai client speaks no Anthropic Messages")
    if mode is Mode.PROMPTED:
        if variant != Variant.DEFAULT:
            return None
        return Support.unsupported(
            "the client parses only a response_format / text_format or a strict tool's arguments "
            "(lib/_parsing/_completions.py:211-223): a schema in the prompt is parsed by the caller's code"
        )
    if variant == Variant.HARDENED:
        return Support.unsupported(NO_HARDENING)
    call = _CALLS[(mode, protocol, variant == Variant.STREAM)]
    return Support.builtin(f"{call}; AsyncOpenAI(base_url, api_key), max_retries default 2")


@dataclass(frozen=True)
class _Call:
    mode: Mode
    protocol: Protocol
    stream: bool


class OpenAIClientAdapter(Adapter):
    """openai 3.57: ``AsyncOpenAI`` with ``parse`` / ``stream`` and a pydantic type."""

    name: ClassVar[str] = "openai-client"
    distribution: ClassVar[str] = "openai"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    supported_releases: ClassVar[str] = ">=1.92"
    """``chat.completions.parse`` and ``responses.parse`` outside ``beta`` exist from 1.92."""
    time_limit_s: ClassVar[float] = 10.0
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        return NO_TOOL_LOOP

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """One call of the client's helper. Within a run the client is one ``AsyncOpenAI`` on the
        run's shared transport, reused by every cell (it holds no per-call state: each call's
        arguments are its own), as a user's loop reuses its client; outside a run, one per cell,
        closed with it."""
        call = _Call(cell.mode, cell.protocol, cell.stream)
        with clients.routed(endpoint) as provider_wide:
            if provider_wide is not None:
                client = clients.reused((self.name, provider_wide.root), lambda: _client(provider_wide, True))
                return await _run(call, task, client, provider_wide)
            async with _client(endpoint, False) as own:
                return await _run(call, task, own, endpoint)


def _client(endpoint: Endpoint, shared: bool) -> AsyncOpenAI:
    """The client a user builds, explicit ``base_url`` and ``api_key`` (they win over OPENAI_*
    variables, _client.py); within a run on the shared transport, the client's own default
    (``DefaultAsyncHttpxClient``) with the hook that routes each request to its cell's run."""
    http_client = clients.shared((OpenAIClientAdapter.name,), _routing_transport) if shared else None
    return AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key, http_client=http_client)


def _routing_transport() -> DefaultAsyncHttpxClient:
    return clients.routing(DefaultAsyncHttpxClient())


async def _run(call: _Call, task: Task, client: AsyncOpenAI, endpoint: Endpoint) -> AdapterResult:
    """Only the client's call is guarded: what it raised reaches the caller as it is."""
    result = AdapterResult(details={"declaration": _CALLS[(call.mode, call.protocol, call.stream)]})
    try:
        if call.protocol is Protocol.RESPONSES:
            result.output, result.usage = await _responses(call, task, client, endpoint)
        else:
            result.output, result.usage = await _chat(call, task, client, endpoint)
    except Exception as error:  # the client's own: LengthFinishReasonError, ValidationError, APIStatusError...
        result.exception = error
    return result


def _tool_name(task: Task) -> str:
    return task.output_model.__name__


async def _chat(call: _Call, task: Task, client: AsyncOpenAI, endpoint: Endpoint) -> tuple[Any, ReportedUsage | None]:
    kwargs: dict[str, Any] = {"model": endpoint.openai_model, "messages": [{"role": "user", "content": task.prompt}]}
    if call.mode is Mode.TOOL:
        kwargs["tools"] = [pydantic_function_tool(task.output_model)]
        kwargs["tool_choice"] = {"type": "function", "function": {"name": _tool_name(task)}}
    else:
        kwargs["response_format"] = task.output_model
    if call.stream:
        async with client.chat.completions.stream(**kwargs) as stream:
            completion = await stream.get_final_completion()
    else:
        completion = await client.chat.completions.parse(**kwargs)
    message = completion.choices[0].message
    if call.mode is Mode.TOOL:
        output = message.tool_calls[0].function.parsed_arguments if message.tool_calls else None
    else:
        output = message.parsed
    usage = completion.usage
    return output, ReportedUsage(usage.prompt_tokens, usage.completion_tokens) if usage else None


async def _responses(
    call: _Call, task: Task, client: AsyncOpenAI, endpoint: Endpoint
) -> tuple[Any, ReportedUsage | None]:
    kwargs: dict[str, Any] = {"model": endpoint.openai_model, "input": task.prompt}
    if call.mode is Mode.TOOL:
        kwargs["tools"] = [pydantic_responses_function_tool(task.output_model)]
        kwargs["tool_choice"] = {"type": "function", "name": _tool_name(task)}
    else:
        kwargs["text_format"] = task.output_model
    if call.stream:
        async with client.responses.stream(**kwargs) as stream:
            response = await stream.get_final_response()
    else:
        response = await client.responses.parse(**kwargs)
    if call.mode is Mode.TOOL:
        calls = [item for item in response.output if item.type == "function_call"]
        output = calls[0].parsed_arguments if calls else None
    else:
        output = response.output_parsed
    usage = response.usage
    return output, ReportedUsage(usage.input_tokens, usage.output_tokens) if usage else None
