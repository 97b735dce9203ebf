"""Parallel turns on the wire: several calls in one reply, rendered in each protocol as the real
APIs send them and parsed by the official clients with strict validation, JSON and stream.

What each client's accumulator keys on is what is checked: Chat chunks' ``tool_calls[].index``
(openai/lib/streaming/chat/_completions.py, ChatCompletionStreamState), the Responses events'
``output_index`` and ``item_id`` (openai/lib/streaming/responses/_responses.py,
ResponseStreamState), Anthropic's ``content_block_*`` ``index`` (anthropic/lib/streaming/
_messages.py, accumulate_event). The ids the clients see are the ids the ledger records.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.provider import LocalProvider
from bench.run.plan import CellPlan
from bench.run.rows import RowContext, attempt_row
from bench.scenarios.files import default_scenarios
from bench.scenarios.tasks import get_task
from bench.sdk import registry
from bench.tools import LookupOrderArgs
from tests.protocol_clients import anthropic_client, openai_client

PARAMS = {**LookupOrderArgs.model_json_schema(), "additionalProperties": False}
GOOD, BAD = {"order_id": "ORD-1042"}, {"order": "ORD-1042"}
TWO_CALLS = {"parallel": [{"tool_call": GOOD}, {"tool_call": BAD}]}
CALL_AND_ANSWER = {"parallel": [{"tool_call": GOOD}, "valid"]}
PROMPT = "Where is my order ORD-1042?"
TASK = get_task("order_lookup")
ANSWER_SCHEMA = {**TASK.output_model.model_json_schema(), "additionalProperties": False}


def _chat(run: Any, stream: bool, output_tool: bool, **extra: Any) -> tuple[str | None, list[tuple[str, str, Any]]]:
    """(text, [(call id, tool name, arguments)]) as the client parsed them; the stream's chunks
    must give each call its own ``index``, with ``id`` and name in its first chunk only."""
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": PARAMS}}]
    if output_tool:
        tools.append({"type": "function", "function": {"name": "final_result", "parameters": ANSWER_SCHEMA}})
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]}
    kwargs |= {"tools": tools, **extra}
    with openai_client(run.endpoint) as client:
        return _chat_with(client, stream, kwargs)


def _chat_with(client: Any, stream: bool, kwargs: dict[str, Any]) -> tuple[str | None, list[tuple[str, str, Any]]]:
    if stream:
        firsts: dict[int, str] = {}
        with client.chat.completions.stream(**kwargs) as events:
            for event in events:
                if event.type != "chunk":
                    continue
                for call in (event.chunk.choices[0].delta.tool_calls if event.chunk.choices else None) or ():
                    if call.id is not None:
                        assert call.index not in firsts and call.function.name  # id and name once per index
                        firsts[call.index] = call.id
            message = events.get_final_completion().choices[0].message
        assert list(firsts) == list(range(len(message.tool_calls)))
        assert list(firsts.values()) == [call.id for call in message.tool_calls]
    else:
        message = client.chat.completions.create(**kwargs).choices[0].message
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    return message.content, calls


def _responses(
    run: Any, stream: bool, output_tool: bool, **extra: Any
) -> tuple[str | None, list[tuple[str, str, Any]]]:
    tools = [{"type": "function", "name": "lookup_order", "parameters": PARAMS, "strict": False}]
    if output_tool:
        tools.append({"type": "function", "name": "final_result", "parameters": ANSWER_SCHEMA, "strict": False})
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "input": PROMPT, "tools": tools, **extra}
    with openai_client(run.endpoint) as client:
        return _responses_with(client, stream, kwargs)


def _responses_with(client: Any, stream: bool, kwargs: dict[str, Any]) -> tuple[str | None, list[tuple[str, str, Any]]]:
    if stream:
        added: list[tuple[int, str]] = []
        with client.responses.stream(**kwargs) as events:
            for event in events:
                if event.type == "response.output_item.added":
                    added.append((event.output_index, event.item.id))
                elif event.type in ("response.function_call_arguments.delta", "response.output_text.delta"):
                    assert (event.output_index, event.item_id) == added[-1]  # one item at a time
            response = events.get_final_response()
        assert added == [(index, item.id) for index, item in enumerate(response.output)]
    else:
        response = client.responses.create(**kwargs)
    assert len({item.id for item in response.output}) == len(response.output)
    calls = [(i.call_id, i.name, json.loads(i.arguments)) for i in response.output if i.type == "function_call"]
    assert [i.type for i in response.output] == sorted((i.type for i in response.output), key=lambda t: t != "message")
    return (response.output_text or None), calls


def _anthropic(
    run: Any, stream: bool, output_tool: bool, **extra: Any
) -> tuple[str | None, list[tuple[str, str, Any]]]:
    tools = [{"name": "lookup_order", "input_schema": PARAMS}]
    if output_tool:
        tools.append({"name": "final_result", "input_schema": ANSWER_SCHEMA})
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": tools,
        **extra,
    }
    with anthropic_client(run.endpoint) as client:
        return _anthropic_with(client, stream, kwargs)


def _anthropic_with(client: Any, stream: bool, kwargs: dict[str, Any]) -> tuple[str | None, list[tuple[str, str, Any]]]:
    if stream:
        started: list[int] = []
        with client.messages.stream(**kwargs) as events:
            for event in events:
                if event.type == "content_block_start":
                    started.append(event.index)
                elif event.type in ("content_block_delta", "content_block_stop"):
                    assert event.index == started[-1]  # blocks one after another, each its own index
            message = events.get_final_message()
        assert started == list(range(len(message.content)))
    else:
        message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    text = "".join(block.text for block in message.content if block.type == "text") or None
    return text, [(b.id, b.name, dict(b.input)) for b in message.content if b.type == "tool_use"]


CLIENTS = {"openai-chat": _chat, "openai-responses": _responses, "anthropic-messages": _anthropic}
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


def one_turn(
    provider: LocalProvider, step: dict[str, Any], protocol: str, stream: bool, output_tool: bool
) -> tuple[str | None, list[tuple[str, str, dict[str, Any]]], Any]:
    """The reply to a one-step script through the official client: its text, its calls
    (id, name, arguments), and the provider's record of the attempt."""
    with provider.open_script("order_lookup", [step]) as run:
        text, calls = CLIENTS[protocol](run, stream, output_tool=output_tool)
        (record,) = run.attempts
    return text, calls, record


PROTOCOL = pytest.mark.parametrize("protocol", list(CLIENTS))


@STREAM
@PROTOCOL
def test_two_calls_in_one_turn_each_with_its_id_and_index(provider: LocalProvider, protocol: str, stream: bool) -> None:
    text, calls, record = one_turn(provider, TWO_CALLS, protocol, stream, output_tool=False)
    assert text is None
    assert [(name, arguments) for _, name, arguments in calls] == [("lookup_order", GOOD), ("lookup_order", BAD)]
    ids = [call_id for call_id, _, _ in calls]
    assert len(set(ids)) == 2
    assert [call.call_id for call in record.tool_calls] == ids  # the ledger knows every id issued
    assert [call.function for call in record.tool_calls] == [True, True]
    assert record.tool_call_id == ids[0]
    assert record.behaviour == "parallel:tool_call:order_id=ORD-1042+tool_call:order=ORD-1042"
    assert record.realistic is True


@STREAM
@PROTOCOL
def test_a_call_beside_the_output_tool_call(provider: LocalProvider, protocol: str, stream: bool) -> None:
    text, calls, record = one_turn(provider, CALL_AND_ANSWER, protocol, stream, output_tool=True)
    assert text is None
    assert [name for _, name, _ in calls] == ["lookup_order", "final_result"]
    assert calls[1][2] == dict(TASK.reference)
    assert record.detected_mode == "tool"
    assert [call.function for call in record.tool_calls] == [True, False]


@STREAM
@PROTOCOL
def test_a_call_beside_text_puts_the_text_first(provider: LocalProvider, protocol: str, stream: bool) -> None:
    """Outside tool mode the answer is the reply's text: Chat ``content`` with ``tool_calls``, a
    Responses message item at output_index 0, Anthropic's text block at index 0."""
    text, calls, record = one_turn(provider, CALL_AND_ANSWER, protocol, stream, output_tool=False)
    assert text is not None and json.loads(text) == dict(TASK.reference)
    assert [(name, arguments) for _, name, arguments in calls] == [("lookup_order", GOOD)]
    assert [call.call_id for call in record.tool_calls] == [calls[0][0]]


@pytest.mark.parametrize(
    ("protocol", "extra"),
    [
        ("openai-chat", {"parallel_tool_calls": False}),
        ("openai-responses", {"parallel_tool_calls": False}),
        ("anthropic-messages", {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
    ],
)
def test_a_turn_of_several_calls_is_unrealistic_where_the_request_forbids_it(
    provider: LocalProvider, protocol: str, extra: dict[str, Any]
) -> None:
    with provider.open_script("order_lookup", [TWO_CALLS, CALL_AND_ANSWER]) as run:
        CLIENTS[protocol](run, False, output_tool=False, **extra)
        CLIENTS[protocol](run, False, output_tool=False, **extra)
        several, one = run.attempts
    assert several.realistic is False
    assert one.realistic is True  # one call beside text is allowed


def test_the_turn_s_output_tokens_are_its_calls_together(provider: LocalProvider) -> None:
    with provider.open_script("order_lookup", [{"tool_call": GOOD}, TWO_CALLS]) as run:
        _chat(run, False, output_tool=False)
        _chat(run, False, output_tool=False)
        one, two = run.attempts
    assert two.output_tokens > one.output_tokens > 0


def test_the_attempts_row_names_every_call_id_of_the_turn(provider: LocalProvider) -> None:
    """The attempts table's ``tool_call_id`` holds a parallel turn's ids in call order."""
    scenario = next(s for s in default_scenarios() if s.name == "tool_parallel_ok")
    cell = registry.load("openai-parse").cells()[0]
    plan = CellPlan(cell, scenario, rep=0, seed=0)
    with provider.open_script("order_lookup", [TWO_CALLS]) as run:
        _, calls = _chat(run, False, output_tool=False)
        (record,) = run.attempts
    context = RowContext(suite_id="t", sdk_version=None, call_cap=12, time_limit_s=30.0)
    assert attempt_row(plan, context, record)["tool_call_id"] == ",".join(call_id for call_id, _, _ in calls)
