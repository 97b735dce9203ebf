"""The scripted tool call on the wire: each protocol's own tool-call shape, parsed by the
official clients with strict validation, with the call id the ledger records; and the tool
result a later request carries back, read off that request and paired with its call id."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.provider import LocalProvider
from bench.tools import LookupOrderArgs, OrderToolError
from tests.protocol_clients import anthropic_client, openai_client

CALL = {"tool_call": {"order_id": "ORD-1042"}}
PARAMS = {**LookupOrderArgs.model_json_schema(), "additionalProperties": False}
ERROR = OrderToolError("ORDER_NOT_FOUND", True, 1, "Check the id.").to_json()
PROMPT = "Where is my order ORD-1042?"


def _chat(run: Any, stream: bool, tools: bool = True) -> tuple[str, str, dict[str, Any]]:
    client = openai_client(run.endpoint)
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]}
    if tools:
        kwargs["tools"] = [{"type": "function", "function": {"name": "lookup_order", "parameters": PARAMS}}]
    if not stream:
        call = client.chat.completions.create(**kwargs).choices[0].message.tool_calls[0]
        assert call.type == "function"
        return call.id, call.function.name, json.loads(call.function.arguments)
    with client.chat.completions.stream(**kwargs) as events:
        call = events.get_final_completion().choices[0].message.tool_calls[0]
    return call.id, call.function.name, json.loads(call.function.arguments)


def _responses(run: Any, stream: bool) -> tuple[str, str, dict[str, Any]]:
    client = openai_client(run.endpoint)
    tool = {"type": "function", "name": "lookup_order", "parameters": PARAMS, "strict": False}
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "input": PROMPT, "tools": [tool]}
    if stream:
        with client.responses.stream(**kwargs) as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    (item,) = response.output
    assert item.type == "function_call"
    return item.call_id, item.name, json.loads(item.arguments)


def _anthropic(run: Any, stream: bool) -> tuple[str, str, dict[str, Any]]:
    client = anthropic_client(run.endpoint)
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": [{"name": "lookup_order", "input_schema": PARAMS}],
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    return block.id, block.name, dict(block.input)


CLIENTS = {"openai-chat": _chat, "openai-responses": _responses, "anthropic-messages": _anthropic}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("protocol", list(CLIENTS))
def test_tool_call_parses_and_its_call_id_is_in_the_ledger(
    provider: LocalProvider, protocol: str, stream: bool
) -> None:
    with provider.open_script("order_lookup", [CALL]) as run:
        call_id, name, arguments = CLIENTS[protocol](run, stream)
        (record,) = run.attempts
    assert (name, arguments) == ("lookup_order", {"order_id": "ORD-1042"})
    assert record.tool_call_id == call_id
    assert record.behaviour == "tool_call:order_id=ORD-1042"
    assert record.realistic is True
    assert record.detected_mode == "prompted"  # lookup_order is not an output tool


def test_arguments_that_fail_the_schema_are_sent_as_scripted(provider: LocalProvider) -> None:
    with provider.open_script("order_lookup", [{"tool_call": {"order": "ORD-1042"}}]) as run:
        _, _, arguments = _chat(run, stream=False)
    assert arguments == {"order": "ORD-1042"}


def test_a_call_to_a_tool_the_request_did_not_offer_is_unrealistic(provider: LocalProvider) -> None:
    with provider.open_script("order_lookup", [CALL]) as run:
        openai_client(run.endpoint).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
        )
        (record,) = run.attempts
    assert record.realistic is False


def _followups(call_id: str) -> dict[str, dict[str, Any]]:
    """The next request of each protocol, carrying an error result for ``call_id`` back."""
    call = {"id": call_id, "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    return {
        "/v1/chat/completions": {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "user", "content": PROMPT},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": ERROR},
            ],
        },
        "/v1/responses": {
            "model": "gpt-4o-mini",
            "input": [
                {"role": "user", "content": PROMPT},
                {"type": "function_call", "call_id": call_id, "name": "lookup_order", "arguments": "{}"},
                {"type": "function_call_output", "call_id": call_id, "output": ERROR},
            ],
        },
        "/v1/messages": {
            "model": "claude-sonnet-4-6",
            "max_tokens": 512,
            "messages": [
                {"role": "user", "content": PROMPT},
                {"role": "assistant",
                 "content": [{"type": "tool_use", "id": call_id, "name": "lookup_order", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call_id, "is_error": True,
                         "content": [{"type": "text", "text": ERROR}]},
                    ],
                },
            ],
        },
    }  # fmt: skip


@pytest.mark.parametrize("path", list(_followups("x")))
def test_tool_results_a_request_carries_back_are_recorded_with_their_call_id(
    provider: LocalProvider, path: str
) -> None:
    import httpx

    with provider.open_script("order_lookup", ["valid"]) as run:
        reply = httpx.post(run.endpoint.root + path, json=_followups("call_abc123")[path], timeout=10)
        assert reply.status_code == 200
        (record,) = run.attempts
    (seen,) = record.tool_results
    assert seen.call_id == "call_abc123"
    assert seen.structured_error and not seen.success
    assert seen.is_error is (True if path == "/v1/messages" else None)
    assert record.tool_call_id is None  # a text answer issues no call


def test_arguments_a_strict_tool_would_never_get_are_unrealistic(provider: LocalProvider) -> None:
    strict_tool = {"type": "function", "function": {"name": "lookup_order", "parameters": PARAMS, "strict": True}}
    realistic = []
    for arguments in ({"order": "ORD-1042"}, {"order_id": "ORD-1042"}):
        with provider.open_script("order_lookup", [{"tool_call": arguments}]) as run:
            openai_client(run.endpoint).chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}], tools=[strict_tool]
            )
            realistic.append(run.attempts[0].realistic)
    assert realistic == [False, True]
