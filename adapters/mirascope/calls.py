"""Mirascope's calls, as a user writes them: imported only in the mirascope environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

A Mirascope call finds its provider in a process-wide registry by the model id's prefix
(providers/provider_registry.py:262-311); a user points it at another server with
``llm.register_provider(provider, scope=...)``. A provider builds its official clients when it is
made (four of them for OpenAI and for Anthropic: sync and async, completions and responses or
messages and the beta; providers/openai/provider.py:122-133, anthropic/provider.py:84-90), so this
module makes one OpenAI and one Anthropic provider per run, on the provider-wide endpoint
(``bench.sdk.clients.routed``), registers them before each cell (the worker runs one cell at a
time, so the registry never serves two cells at once), and gives their async clients the run's
shared HTTP transport, whose request hook puts each cell's run prefix back on the path. Nothing
in a request changes: the same client class, base URL and key, another ``http_client``.

The call itself is per cell, as a user's module defines it once per output type and mode: the
decorator's ``Call`` holds only its prompt function, tools, format and model id (calls/calls.py:33-53).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from anthropic import AsyncAnthropic
from anthropic import DefaultAsyncHttpxClient as AnthropicTransport
from mirascope import llm
from mirascope.llm.providers import AnthropicProvider, OpenAIProvider
from openai import AsyncOpenAI
from openai import DefaultAsyncHttpxClient as OpenAITransport
from pydantic import BaseModel, create_model, model_validator

from adapters.mirascope.settings import FORMAT_MODES, HARDENED_VALIDATE_RETRIES, MODEL_IDS
from bench.core.vocabulary import Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

POOL_KEY = "mirascope"
"""What this SDK's clients and providers are kept under in the run's pool (bench.sdk.clients)."""


async def run(cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
    """One call of the cell's decorated function, on providers registered for its endpoint."""
    with clients.routed(endpoint) as provider_wide:
        if provider_wide is not None:
            providers = clients.reused((POOL_KEY, provider_wide.root), lambda: _providers(provider_wide, True))
            _register(providers)
            return await _call(cell, task, endpoint)
        providers = _providers(endpoint, False)
        _register(providers)
        try:
            return await _call(cell, task, endpoint)
        finally:
            await _close(providers)


def _providers(endpoint: Endpoint, shared: bool) -> tuple[OpenAIProvider, AnthropicProvider]:
    """``OpenAIProvider`` and ``AnthropicProvider`` with an explicit ``base_url`` and ``api_key``
    (they win over OPENAI_* / ANTHROPIC_* variables); when ``shared``, their async clients on the
    run's routed transport."""
    openai = OpenAIProvider(api_key=endpoint.api_key, base_url=endpoint.openai_base_url)
    anthropic = AnthropicProvider(api_key=endpoint.api_key, base_url=endpoint.anthropic_base_url)
    if shared:
        http = clients.shared((POOL_KEY, "openai"), _transport(OpenAITransport))
        for sub in (openai._completions_provider, openai._responses_provider):
            sub.async_client = AsyncOpenAI(
                base_url=endpoint.openai_base_url, api_key=endpoint.api_key, http_client=http
            )
        http = clients.shared((POOL_KEY, "anthropic"), _transport(AnthropicTransport))
        for holder in (anthropic, anthropic._beta_provider):
            holder.async_client = AsyncAnthropic(
                base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, http_client=http
            )
    return openai, anthropic


def _transport(kind: type) -> Callable[[], Any]:
    return lambda: clients.routing(kind())


def _register(providers: tuple[OpenAIProvider, AnthropicProvider]) -> None:
    """``llm.register_provider`` for the ``openai/`` and ``anthropic/`` scopes (a dict entry each)."""
    openai, anthropic = providers
    llm.register_provider(openai, scope="openai/")
    llm.register_provider(anthropic, scope="anthropic/")


async def _close(providers: tuple[OpenAIProvider, AnthropicProvider]) -> None:
    """Close every client a per-cell provider opened (outside a run's pool only)."""
    openai, anthropic = providers
    for sub in (openai._completions_provider, openai._responses_provider):
        sub.client.close()
        await sub.async_client.close()
    for holder in (anthropic, anthropic._beta_provider):
        holder.client.close()
        await holder.async_client.close()


async def _call(cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
    """Only the SDK calls are guarded: what Mirascope raised reaches the caller as it is."""
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    with task.tool.current() if task.tool is not None else nullcontext():
        call = _decorated(cell, task, endpoint)
        seen: list[Any] = []
        try:
            if cell.stream:
                result.output = await _streamed(call, seen)
            else:
                response = await _looped(await call(), seen)
                if cell.variant == Variant.HARDENED:
                    result.output, response = await response.validate(max_retries=HARDENED_VALIDATE_RETRIES)
                    seen.append(response)
                else:
                    result.output = response.parse()
        except Exception as error:  # Mirascope's own: ParseError, RateLimitError, BadRequestError...
            result.exception = error
        result.usage = _usage(seen)
    return result


def _decorated(cell: Cell, task: Task, endpoint: Endpoint) -> Any:
    """``@llm.call(model_id, format=..., tools=...)`` on an async prompt function; the hardened cell
    wrapped in ``@llm.retry()`` (its documented defaults)."""
    model = endpoint.anthropic_model if cell.protocol is Protocol.ANTHROPIC else endpoint.openai_model
    output = _checked(task) if cell.variant == Variant.HARDENED else task.output_model
    spec = output if cell.variant == Variant.AUTO else llm.format(output, mode=FORMAT_MODES[cell.mode])
    tools = [llm.tool(task.tool.as_function())] if task.tool is not None else None

    async def extract() -> str:
        return task.prompt

    call = llm.call(MODEL_IDS[cell.protocol].format(model=model), format=spec, tools=tools)(extract)
    return llm.retry()(call) if cell.variant == Variant.HARDENED else call


async def _looped(response: Any, seen: list[Any]) -> Any:
    """The documented tool loop (docs: structured_output/with_tools.py): run the tools the model
    asked for and resume, until it answers; with no tools, the one response."""
    seen.append(response)
    while response.tool_calls:
        response = await response.resume(await response.execute_tools())
        seen.append(response)
    return response


async def _streamed(call: Any, seen: list[Any]) -> Any:
    """``call.stream()``, each stream's partial objects read to the end, the tool loop on the
    stream, then ``parse()`` of the last stream: the validated object a user keeps."""
    stream = await call.stream()
    seen.append(stream)
    while True:
        async for _partial in stream.structured_stream():
            pass
        if not stream.tool_calls:
            return stream.parse()
        stream = await stream.resume(await stream.execute_tools())
        seen.append(stream)


def _checked(task: Task) -> type[BaseModel]:
    """The hardened cells' format type: the task's type with a model validator raising the task's
    check, the docs' use of ``validate()`` ("custom Pydantic validators with constraints the LLM
    doesn't know about"): a wrong answer is a ParseError that ``validate`` resumes with. Same name,
    so the same schema and tool name reach the wire."""

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
"""One checked model per task type, built once per worker (the task's check is the type's rule)."""


def _usage(responses: list[Any]) -> ReportedUsage | None:
    """``response.usage`` summed over the responses the caller's loop saw (Mirascope keeps one
    ``Usage`` per response, responses/usage.py:71); the calls ``validate`` and ``@llm.retry`` made
    in between are not handed to the caller, so not counted here."""
    usages = [u for u in (getattr(r, "usage", None) for r in responses) if u is not None]
    if not usages:
        return None
    return ReportedUsage(sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages))
