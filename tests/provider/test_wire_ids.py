"""Issue 48: every id the provider writes (tool-call ids, completion, response, message and item
ids, request ids, thinking signatures, encrypted reasoning, the streams' padding) is a function of
the cell's seed, the attempt and the position. Ids travel back in later requests and are billed
there, so ids drawn at random made the same cell bill a few tokens more or less each run.

Each test serves the same script twice over loopback, JSON and SSE in all three protocols, and
compares the bytes served (``created`` timestamps aside)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from tests.protocol_clients import anthropic_client, anthropic_kwargs, chat_kwargs, openai_client, responses_kwargs

SCRIPT: list[Any] = [{"parallel": ["valid", "valid"]}, {"thinking": "Check the age twice."}, {"http_error": 429}]
"""Two tool calls in one turn, a thinking answer (signature, encrypted reasoning), an error."""
PATHS = {Protocol.CHAT: "chat/completions", Protocol.RESPONSES: "responses", Protocol.ANTHROPIC: "messages"}
TIMES = re.compile(rb'"(created|created_at|completed_at)":\d+')
REQUEST_ID = ("x-request-id", "request-id")


def _request(protocol: Protocol, stream: bool) -> dict[str, Any]:
    if protocol is Protocol.CHAT:
        body = chat_kwargs(Mode.TOOL) | ({"stream_options": {"include_usage": True}} if stream else {})
    elif protocol is Protocol.RESPONSES:
        body = responses_kwargs(Mode.TOOL) | {"include": ["reasoning.encrypted_content"]}
    else:
        body = anthropic_kwargs(Mode.TOOL)
    return body | {"stream": stream}


def _served(provider: LocalProvider, protocol: Protocol, stream: bool, unit_seed: int) -> list[tuple[Any, ...]]:
    """(status, request id, body with its timestamps masked) of each attempt of :data:`SCRIPT`."""
    replies = []
    with provider.open_script("person", SCRIPT, unit_seed=unit_seed) as run:
        base = run.endpoint.openai_base_url.removesuffix("/")
        with httpx.Client(timeout=10) as client:
            for _ in SCRIPT:
                reply = client.post(f"{base}/{PATHS[protocol]}", json=_request(protocol, stream))
                request_id = next(reply.headers[name] for name in REQUEST_ID if name in reply.headers)
                replies.append((reply.status_code, request_id, TIMES.sub(rb'"\1":0', reply.content)))
    return replies


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_the_same_cell_gets_the_same_bytes_twice(provider: LocalProvider, protocol: Protocol, stream: bool) -> None:
    first = _served(provider, protocol, stream, unit_seed=7)
    assert [status for status, _, _ in first] == [200, 200, 429]
    assert _served(provider, protocol, stream, unit_seed=7) == first


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_another_seed_or_attempt_draws_other_ids(provider: LocalProvider, protocol: Protocol, stream: bool) -> None:
    ours, theirs = _served(provider, protocol, stream, unit_seed=7), _served(provider, protocol, stream, unit_seed=8)
    for (_, our_id, our_body), (_, their_id, their_body) in zip(ours, theirs, strict=True):
        assert our_id != their_id
        assert our_body != their_body or b"error" in our_body  # an error body carries no id on OpenAI
    assert len({request_id for _, request_id, _ in ours}) == len(SCRIPT)


ID_FORMS = {
    Protocol.CHAT: [r"chatcmpl-[0-9A-Za-z]{29}", r"call_[0-9A-Za-z]{24}", r"call_[0-9A-Za-z]{24}"],
    Protocol.RESPONSES: [r"resp_[0-9a-f]{48}", r"fc_[0-9a-f]{48}", r"call_[0-9A-Za-z]{24}"],
    Protocol.ANTHROPIC: [r"msg_01[0-9A-Za-z]{22}", r"toolu_01[0-9A-Za-z]{22}", r"toolu_01[0-9A-Za-z]{22}"],
}


@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_seeded_ids_keep_the_real_forms_for_strict_clients(provider: LocalProvider, protocol: Protocol) -> None:
    """The ids as the official clients parse them (strict response validation on), in the forms
    of the recordings (tests/fixtures/recordings, wire-samples)."""
    with provider.open_script("person", [{"parallel": ["valid", "valid"]}], unit_seed=7) as run:
        if protocol is Protocol.CHAT:
            completion = openai_client(run.endpoint).chat.completions.create(**chat_kwargs(Mode.TOOL))
            calls = completion.choices[0].message.tool_calls or []
            ids = [completion.id, *(call.id for call in calls)]
        elif protocol is Protocol.RESPONSES:
            response = openai_client(run.endpoint).responses.create(**responses_kwargs(Mode.TOOL))
            item = response.output[0]
            assert item.type == "function_call"
            ids = [response.id, item.id or "", item.call_id]
        else:
            message = anthropic_client(run.endpoint).messages.create(**anthropic_kwargs(Mode.TOOL))
            ids = [message.id, *(block.id for block in message.content if block.type == "tool_use")]
    assert len(ids) == 3 and len(set(ids)) == 3
    for value, form in zip(ids, ID_FORMS[protocol], strict=True):
        assert re.fullmatch(form, value), (value, form)
