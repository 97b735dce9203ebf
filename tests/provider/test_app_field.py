"""The behaviours users reported from the field (scenarios/field.yaml) through the official
clients with strict parsing, in every protocol x mode x stream, and each protocol's own shape
for them, field by field against the recordings where one exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from tests.protocol_clients import (
    Summary,
    anthropic_client,
    anthropic_kwargs,
    call,
    chat_kwargs,
    openai_client,
    responses_kwargs,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDINGS = FIXTURES / "recordings"
FIELD_BEHAVIOURS = [
    "empty",
    "thinking",
    "content_filter",
    {"content_filter": 0},
    "pause_turn",
    "stringified",
    {"stringified": "name"},
    "wrapped",
]


def _id(value: object) -> str:
    return str(value).replace(" ", "")


def _served(provider: LocalProvider, behaviour: object, protocol: Protocol, mode: Mode, stream: bool) -> Summary:
    with provider.open_script("person", [behaviour]) as run:
        summary = call(protocol, mode, stream, run.endpoint)
        (record,) = run.attempts
    assert record.status_code == 200 and record.stream is stream
    assert (summary.input_tokens, summary.output_tokens) == (record.input_tokens, record.output_tokens)
    return summary


@pytest.mark.parametrize("behaviour", FIELD_BEHAVIOURS, ids=_id)
@pytest.mark.parametrize("mode", list(Mode), ids=str)
@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_field_behaviours_parse_strictly_and_stream_as_they_answer(
    provider: LocalProvider, protocol: Protocol, mode: Mode, behaviour: object
) -> None:
    plain = _served(provider, behaviour, protocol, mode, stream=False)
    assert _served(provider, behaviour, protocol, mode, stream=True) == plain


STOPS = {
    # behaviour -> the stop each API names, as its reference documents it
    "content_filter": {
        Protocol.CHAT: "content_filter",
        Protocol.RESPONSES: "incomplete",
        Protocol.ANTHROPIC: "refusal",
    },
    "pause_turn": {Protocol.CHAT: "stop", Protocol.RESPONSES: "completed", Protocol.ANTHROPIC: "pause_turn"},
    "empty": {Protocol.CHAT: "stop", Protocol.RESPONSES: "completed", Protocol.ANTHROPIC: "end_turn"},
    "thinking": {Protocol.CHAT: "stop", Protocol.RESPONSES: "completed", Protocol.ANTHROPIC: "end_turn"},
}


@pytest.mark.parametrize("behaviour", sorted(STOPS))
@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_each_protocol_stops_in_its_own_words(provider: LocalProvider, protocol: Protocol, behaviour: str) -> None:
    summary = _served(provider, behaviour, protocol, Mode.NATIVE, stream=False)
    assert summary.stop == STOPS[behaviour][protocol]
    if behaviour == "content_filter":
        assert summary.text == '{"name":"Ada Lovelace","age'  # the half sent before the filter
    if behaviour in ("empty", "thinking"):
        assert not summary.text and summary.tool_arguments is None


def _raw(provider: LocalProvider, behaviour: object, protocol: Protocol, body: dict[str, Any]) -> Any:
    """The reply's JSON as sent (the official clients' models hide keys they do not declare)."""
    path = {Protocol.CHAT: "chat/completions", Protocol.RESPONSES: "responses", Protocol.ANTHROPIC: "messages"}
    with provider.open_script("person", [behaviour]) as run:
        base = (
            run.endpoint.anthropic_base_url + "/v1" if protocol is Protocol.ANTHROPIC else run.endpoint.openai_base_url
        )
        reply = httpx.post(f"{base}/{path[protocol]}", json=body, headers={"authorization": "Bearer x"})
        (record,) = run.attempts
    assert reply.status_code == 200
    return reply.json(), record


def test_content_filter_on_responses_names_its_reason(provider: LocalProvider) -> None:
    with provider.open_script("person", ["content_filter"]) as run:
        response = openai_client(run.endpoint).responses.create(**responses_kwargs(Mode.NATIVE))
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "content_filter"
    assert response.output[0].status == "incomplete"


def test_anthropic_thinking_block_is_the_recordings_shape(provider: LocalProvider) -> None:
    """display "omitted" (current models' default): an empty ``thinking`` and a signature, the keys
    and types of recordings/anthropic_2026-09_thinking_text.EXCERPT.json, which thinks too."""
    recorded = json.loads((RECORDINGS / "anthropic_2026-09_thinking_text.EXCERPT.json").read_text())
    body = anthropic_kwargs(Mode.PROMPTED) | {"thinking": {"type": "adaptive"}}
    reply, record = _raw(provider, "thinking", Protocol.ANTHROPIC, body)
    (block,) = reply["content"]
    assert {k: type(v) for k, v in block.items()} == {k: type(v) for k, v in recorded["content"][0].items()}
    assert block["thinking"] == "" and block["signature"]
    assert reply["usage"]["output_tokens_details"]["thinking_tokens"] > 0
    assert record.realistic, "thinking was on, so a thinking-only reply is one the API can send"
    with provider.open_script("person", ["thinking"]) as run:
        events = list(anthropic_client(run.endpoint).messages.create(**body, stream=True))
    deltas = [event.delta.type for event in events if event.type == "content_block_delta"]
    assert deltas == ["signature_delta"], "an omitted thinking streams its signature only"


def test_anthropic_summarized_thinking_streams_its_text(provider: LocalProvider) -> None:
    body = anthropic_kwargs(Mode.PROMPTED) | {"thinking": {"type": "adaptive", "display": "summarized"}}
    with provider.open_script("person", [{"thinking": "Check the age twice."}]) as run:
        client = anthropic_client(run.endpoint)
        with client.messages.stream(**body) as stream:
            message = stream.get_final_message()
    (block,) = message.content
    assert block.type == "thinking" and block.thinking == "Check the age twice." and block.signature


def test_thinking_without_thinking_on_is_unrealistic_on_anthropic(provider: LocalProvider) -> None:
    _, record = _raw(provider, "thinking", Protocol.ANTHROPIC, anthropic_kwargs(Mode.PROMPTED))
    assert not record.realistic


def test_responses_reasoning_item_is_the_recordings_shape(provider: LocalProvider) -> None:
    recorded = json.loads((RECORDINGS / "openai_responses_2026-08-05_function_call.EXCERPT.json").read_text())
    body = responses_kwargs(Mode.PROMPTED) | {"include": ["reasoning.encrypted_content"]}
    reply, record = _raw(provider, "thinking", Protocol.RESPONSES, body)
    (item,) = reply["output"]
    assert {k: type(v) for k, v in item.items()} == {k: type(v) for k, v in recorded["output"][0].items()}
    assert item["id"].startswith("rs_") and item["summary"] == [] and item["content"] == []
    assert reply["usage"]["output_tokens_details"]["reasoning_tokens"] == reply["usage"]["output_tokens"] > 0
    assert record.realistic


def test_responses_reasoning_summary_streams_through_the_client(provider: LocalProvider) -> None:
    kwargs = responses_kwargs(Mode.PROMPTED) | {"reasoning": {"effort": "low", "summary": "auto"}}
    with provider.open_script("person", [{"thinking": "Check the age twice."}]) as run:
        client = openai_client(run.endpoint)
        with client.responses.stream(**kwargs) as stream:
            final = stream.get_final_response()
        plain = openai_client(run.endpoint).responses.create(**kwargs)
    (item,) = final.output
    assert item.type == "reasoning" and item.summary[0].text == "Check the age twice."
    assert plain.output[0].summary[0].text == "Check the age twice."


def test_chat_reasoning_content_is_read_by_the_client_and_unrealistic(provider: LocalProvider) -> None:
    """``reasoning_content`` as DeepSeek-style servers send it: the client keeps it as an extra
    field, streamed and not; OpenAI's own API never sends it, so the row is not realistic."""
    with provider.open_script("person", ["thinking", "thinking"]) as run:
        client = openai_client(run.endpoint)
        completion = client.chat.completions.create(**chat_kwargs(Mode.PROMPTED))
        chunks = list(client.chat.completions.create(**chat_kwargs(Mode.PROMPTED), stream=True))
        first, _ = run.attempts
    message = completion.choices[0].message
    assert message.content is None and (message.model_extra or {})["reasoning_content"]
    streamed = "".join((chunk.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for chunk in chunks)
    assert streamed == message.model_extra["reasoning_content"]
    assert completion.usage is not None and completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == completion.usage.completion_tokens
    assert not first.realistic


def test_empty_anthropic_reply_has_no_content_block(provider: LocalProvider) -> None:
    reply, _ = _raw(provider, "empty", Protocol.ANTHROPIC, anthropic_kwargs(Mode.PROMPTED))
    assert reply["content"] == [] and reply["stop_reason"] == "end_turn"


def test_pause_turn_is_realistic_only_on_anthropic_with_a_server_tool(provider: LocalProvider) -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1}
    reply, with_tool = _raw(
        provider, "pause_turn", Protocol.ANTHROPIC, anthropic_kwargs(Mode.PROMPTED) | {"tools": [search]}
    )
    assert reply["stop_reason"] == "pause_turn" and reply["content"][0]["text"] == "Let me look that up."
    _, without = _raw(provider, "pause_turn", Protocol.ANTHROPIC, anthropic_kwargs(Mode.PROMPTED))
    _, chat = _raw(provider, "pause_turn", Protocol.CHAT, chat_kwargs(Mode.PROMPTED))
    assert (with_tool.realistic, without.realistic, chat.realistic) == (True, False, False)


@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_duplicate_call_ids_go_on_the_wire_and_into_the_ledger(provider: LocalProvider, protocol: Protocol) -> None:
    turn = {"parallel": {"calls": [{"tool_call": {"order_id": "ORD-1"}}, {"tool_call": {"order_id": "ORD-2"}}],
                         "same_id": True}}  # fmt: skip
    tools = {
        Protocol.CHAT: {"tools": [{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}]},
        Protocol.RESPONSES: {"tools": [{"type": "function", "name": "lookup_order", "parameters": {}}]},
        Protocol.ANTHROPIC: {"tools": [{"name": "lookup_order", "input_schema": {"type": "object"}}]},
    }[protocol]
    kwargs = {Protocol.CHAT: chat_kwargs, Protocol.RESPONSES: responses_kwargs, Protocol.ANTHROPIC: anthropic_kwargs}
    with provider.open_script("order_lookup", [turn]) as run:
        body = kwargs[protocol](Mode.PROMPTED) | tools
        if protocol is Protocol.ANTHROPIC:
            message = anthropic_client(run.endpoint).messages.create(**body)
            ids = [block.id for block in message.content if block.type == "tool_use"]
        elif protocol is Protocol.CHAT:
            completion = openai_client(run.endpoint).chat.completions.create(**body)
            ids = [tool_call.id for tool_call in completion.choices[0].message.tool_calls or []]
        else:
            response = openai_client(run.endpoint).responses.create(**body)
            ids = [item.call_id for item in response.output if item.type == "function_call"]
        (record,) = run.attempts
    assert len(ids) == 2 and ids[0] == ids[1]
    assert [issued.call_id for issued in record.tool_calls] == ids
    assert not record.realistic, "the real APIs give each call its own id"


@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_output_tool_called_twice_in_one_turn(provider: LocalProvider, protocol: Protocol) -> None:
    reference = {"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"}
    with provider.open_script("person", [{"parallel": ["valid", "valid"]}]) as run:
        if protocol is Protocol.ANTHROPIC:
            message = anthropic_client(run.endpoint).messages.create(**anthropic_kwargs(Mode.TOOL))
            calls = [block.input for block in message.content if block.type == "tool_use"]
        elif protocol is Protocol.CHAT:
            completion = openai_client(run.endpoint).chat.completions.create(**chat_kwargs(Mode.TOOL))
            calls = [json.loads(c.function.arguments) for c in completion.choices[0].message.tool_calls or []]
        else:
            response = openai_client(run.endpoint).responses.create(**responses_kwargs(Mode.TOOL))
            calls = [json.loads(item.arguments) for item in response.output if item.type == "function_call"]
    assert calls == [reference, reference]


def _shape_of(value: Any) -> Any:
    """Keys and JSON types, recursively (the ids, times and counts differ reply to reply)."""
    if isinstance(value, dict):
        return {key: _shape_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape_of(item) for item in value]
    return type(value).__name__


def test_chat_content_filter_before_any_text_is_the_recorded_reply(provider: LocalProvider) -> None:
    """tests/fixtures/field/openai_chat_content_filter_2025-09-19.json, field by field: the same
    keys and types, ``content: ""`` and ``finish_reason: "content_filter"`` (the recording's
    ``system_fingerprint`` is null where the 2026 snapshot's is a string, docs/provider-snapshot.md)."""
    recorded = json.loads((FIXTURES / "field" / "openai_chat_content_filter_2025-09-19.json").read_text())
    reply, record = _raw(provider, {"content_filter": 0}, Protocol.CHAT, chat_kwargs(Mode.PROMPTED))
    assert reply["choices"] == [{**recorded["choices"][0]}]
    expected = _shape_of(recorded) | {"system_fingerprint": "str"}
    assert {k: v for k, v in _shape_of(reply).items() if k in expected} == expected
    assert reply["usage"]["completion_tokens"] == recorded["usage"]["completion_tokens"] == 0
    assert record.realistic


def test_anthropic_thinking_stream_is_the_recorded_event_sequence(provider: LocalProvider) -> None:
    """tests/fixtures/field/anthropic_stream_thinking_2025-02.jsonl: the block's start (verbatim),
    the ping, thinking deltas, one signature delta, the stop, in that order."""
    lines = (FIXTURES / "field" / "anthropic_stream_thinking_2025-02.jsonl").read_text().splitlines()
    recorded = [json.loads(line) for line in lines]
    body = anthropic_kwargs(Mode.PROMPTED) | {
        "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "summarized"}
    }
    with provider.open_script("person", [{"thinking": "The user wants the fields. I check each one."}]) as run:
        url = run.endpoint.anthropic_base_url + "/v1/messages"
        with httpx.stream("POST", url, json=body | {"stream": True}, headers={"x-api-key": "x"}) as reply:
            data = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: ")]
    block = [event for event in data if event.get("index") == 0 or event["type"] == "ping"]

    def steps(events: list[dict[str, Any]]) -> list[str]:
        names = [event["type"] + ":" + event.get("delta", {}).get("type", "") for event in events]
        return [name for i, name in enumerate(names) if i == 0 or name != names[i - 1]]  # deltas collapsed

    assert steps(block) == steps(recorded)
    assert block[0] == recorded[0]
    assert {k: type(v) for k, v in block[-2]["delta"].items()} == {k: type(v) for k, v in recorded[-2]["delta"].items()}
