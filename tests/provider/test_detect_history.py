"""A conversation the real API refuses is found from the request alone, with the API's own
message (and param, where the API names one); a conversation it takes is not refused."""

from __future__ import annotations

from typing import Any

import pytest

from bench.core.vocabulary import Protocol
from bench.provider.detect import detect
from bench.scenarios.tasks import TASKS

PERSON = TASKS["person"].property_names
USER = {"role": "user", "content": "Extract the person."}


def history_error(protocol: Protocol, body: dict[str, Any]) -> tuple[str, str | None] | None:
    return detect(protocol, {"model": "m"} | body, PERSON).history_error


def chat_call(*ids: str) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def chat_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_chat_takes_answered_calls_and_refuses_an_unanswered_one() -> None:
    answered = [USER, chat_call("a", "b"), chat_result("b"), chat_result("a")]
    assert history_error(Protocol.CHAT, {"messages": answered}) is None
    unanswered = [USER, chat_call("a", "b"), chat_result("a")]
    message, param = history_error(Protocol.CHAT, {"messages": unanswered}) or ("", "")
    assert message.startswith("An assistant message with 'tool_calls' must be followed by tool messages responding")
    assert message.endswith("did not have response messages: b") and param is None
    # The results must follow the call: a tool message after another turn does not answer it.
    late = [USER, chat_call("a"), {"role": "user", "content": "go on"}, chat_result("a")]
    assert history_error(Protocol.CHAT, {"messages": late}) is not None
    assert history_error(Protocol.CHAT, {"messages": [USER, chat_call("a")]}) is not None


def test_chat_refuses_null_content_without_tool_calls_naming_its_param() -> None:
    empty = [USER, {"role": "assistant", "content": None}, USER]
    assert history_error(Protocol.CHAT, {"messages": empty}) == (
        "Invalid value for 'content': expected a string, got null.",
        "messages.[1].content",
    )
    assert history_error(Protocol.CHAT, {"messages": [USER, {"role": "assistant", "content": ""}, USER]}) is None


def responses_call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": "{}"}


def test_responses_refuses_a_function_call_without_its_output() -> None:
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    assert history_error(Protocol.RESPONSES, {"input": [USER, responses_call("c1"), output]}) is None
    assert history_error(Protocol.RESPONSES, {"input": [USER, responses_call("c1")]}) == (
        "No tool output found for function call c1.",
        None,
    )
    # Under previous_response_id the call is kept server-side: only its output is in input.
    assert history_error(Protocol.RESPONSES, {"previous_response_id": "r1", "input": [output]}) is None
    assert history_error(Protocol.RESPONSES, {"input": "Extract the person."}) is None


def anthropic_turns(used: list[str], answered: list[str]) -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": i, "name": "lookup", "input": {}} for i in used]
    results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in answered]
    return [USER, {"role": "assistant", "content": uses}, {"role": "user", "content": results}]


@pytest.mark.parametrize(
    ("used", "answered", "expected"),
    [
        (["t1", "t2"], ["t2", "t1"], None),
        (
            ["t1", "t2"],
            ["t1"],
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t2. "
            "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ),
        (["t1", "t1"], ["t1", "t1"], "messages.1.content.1: `tool_use` ids must be unique"),
    ],
    ids=["answered", "unanswered", "duplicate"],
)
def test_anthropic_refuses_unanswered_and_duplicate_tool_use_ids(
    used: list[str], answered: list[str], expected: str | None
) -> None:
    found = history_error(Protocol.ANTHROPIC, {"max_tokens": 64, "messages": anthropic_turns(used, answered)})
    assert found == (None if expected is None else (expected, None))
