"""Instructor's calls, as a user writes them: imported only in the instructor environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

One ``AsyncOpenAI`` / ``AsyncAnthropic`` per run on the run's shared transport, and one Instructor
client per (protocol, mode) on it, reused by every cell as a user's loop reuses its client: the
Instructor client keeps only its mode, its provider and the patched create function
(v2/core/client.py ``AsyncInstructor``); every call's state (messages, attempts, usage) lives in
that call's retry loop (v2/core/retry.py:517-750).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import instructor
from anthropic import AsyncAnthropic
from anthropic import DefaultAsyncHttpxClient as AnthropicTransport
from openai import AsyncOpenAI
from openai import DefaultAsyncHttpxClient as OpenAITransport
from pydantic import BaseModel, create_model, model_validator

from bench.core.vocabulary import Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

POOL_KEY = "instructor"
"""What this SDK's clients are kept under in the run's pool (bench.sdk.clients)."""

MAX_TOKENS = 1024
"""``max_tokens``, required by the Anthropic Messages API and passed through by Instructor."""


async def run(cell: Cell, task: Task, endpoint: Endpoint, mode_name: str) -> AdapterResult:
    """One ``create`` (or ``create_partial``, read to its end) of the cell's Instructor client, in
    ``instructor.Mode[mode_name]`` (the adapter's table says which)."""
    mode = instructor.Mode[mode_name]
    with clients.routed(endpoint) as provider_wide:
        if provider_wide is not None:
            key = (POOL_KEY, cell.protocol, mode, provider_wide.root)
            client = clients.reused(key, lambda: _instructor(cell.protocol, mode, provider_wide, True))
            return await _call(cell, task, client, provider_wide)
        own = _instructor(cell.protocol, mode, endpoint, False)
        try:
            return await _call(cell, task, own, endpoint)
        finally:
            await own.client.close()


def _instructor(protocol: Protocol, mode: instructor.Mode, endpoint: Endpoint, shared: bool) -> Any:
    """``instructor.from_openai(AsyncOpenAI(...), mode=...)`` or ``from_anthropic(AsyncAnthropic(...))``,
    explicit ``base_url`` and ``api_key`` (they win over the OPENAI_* / ANTHROPIC_* variables)."""
    if protocol is Protocol.ANTHROPIC:
        transport = clients.shared((POOL_KEY, protocol), _transport(AnthropicTransport)) if shared else None
        anthropic = AsyncAnthropic(
            base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, http_client=transport
        )
        return instructor.from_anthropic(anthropic, mode=mode)
    transport = clients.shared((POOL_KEY, "openai"), _transport(OpenAITransport)) if shared else None
    openai = AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key, http_client=transport)
    return instructor.from_openai(openai, mode=mode)


def _transport(kind: type) -> Callable[[], Any]:
    return lambda: clients.routing(kind())


async def _call(cell: Cell, task: Task, client: Any, endpoint: Endpoint) -> AdapterResult:
    """Only the SDK call is guarded: what Instructor raised reaches the caller as it is."""
    anthropic = cell.protocol is Protocol.ANTHROPIC
    kwargs: dict[str, Any] = {
        "model": endpoint.anthropic_model if anthropic else endpoint.openai_model,
        "messages": [{"role": "user", "content": task.prompt}],
        "response_model": _checked(task) if cell.variant == Variant.HARDENED else task.output_model,
    }
    if anthropic:
        kwargs["max_tokens"] = MAX_TOKENS
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    try:
        if cell.stream:
            async for partial in client.create_partial(**kwargs):
                result.output = partial
        else:
            result.output = await client.create(**kwargs)
    except Exception as error:  # Instructor's own: InstructorRetryException, IncompleteOutputException...
        result.exception = error
        result.usage = _usage(getattr(error, "total_usage", None))
        return result
    result.usage = _usage(getattr(result.output, "_total_usage", None) or _raw_usage(result.output))
    return result


def _checked(task: Task) -> type[BaseModel]:
    """The hardened cells' response model: the task's type with a model validator raising the task's
    check, Instructor's documented way to reject a wrong answer (a validator's ValueError is a
    ValidationError, which the retry loop feeds back: v2/core/retry.py:52-57, 657-707). Same name,
    so the same tool and schema title reach the wire."""

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


def _raw_usage(output: Any) -> Any:
    raw = getattr(output, "_raw_response", None)
    return getattr(raw, "usage", None)


def _usage(usage: Any) -> ReportedUsage | None:
    """The provider's usage object Instructor summed over the attempts (``total_usage``): OpenAI's
    ``prompt_tokens`` / ``completion_tokens`` or Anthropic's ``input_tokens`` / ``output_tokens``."""
    if usage is None:
        return None
    if hasattr(usage, "prompt_tokens"):
        return ReportedUsage(usage.prompt_tokens, usage.completion_tokens)
    return ReportedUsage(getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))
