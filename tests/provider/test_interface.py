"""Issue 19: what the official clients read off a reply that the provider used to leave out or
shape unlike the real APIs. Each test reads through the client itself, as an SDK does:

- the request id of every 200 reply, JSON and stream (``x-request-id`` on OpenAI's APIs, read as
  ``_request_id`` / ``with_raw_response.request_id``; ``request-id`` on Anthropic's), in the
  real form (OpenAI: ``req_`` and 32 lowercase hex digits, on error replies too);
- an Anthropic refusal with no content block (``content: []``, JSON and stream) and a named
  ``stop_details.category``.
"""

from __future__ import annotations

import re

import anthropic
import openai
import pytest

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from bench.provider.server import RunHandle
from tests.protocol_clients import anthropic_kwargs, chat_kwargs, responses_kwargs

OPENAI_REQUEST_ID = re.compile(r"req_[0-9a-f]{32}")
ANTHROPIC_REQUEST_ID = re.compile(r"req_011C[0-9A-Za-z]{20}")


def _openai(run: RunHandle) -> openai.AsyncOpenAI:
    endpoint = run.endpoint
    return openai.AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key, max_retries=0)


def _anthropic(run: RunHandle) -> anthropic.AsyncAnthropic:
    endpoint = run.endpoint
    return anthropic.AsyncAnthropic(base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, max_retries=0)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_replies_carry_a_lowercase_hex_request_id(provider: LocalProvider, api: str) -> None:
    with provider.open_script("person", ["valid", "valid"]) as run:
        async with _openai(run) as client:
            if api == "chat":
                create, kwargs = client.chat.completions, chat_kwargs(Mode.NATIVE)
            else:
                create, kwargs = client.responses, responses_kwargs(Mode.NATIVE)
            parsed = await create.create(**kwargs)
            raw = await create.with_raw_response.create(**kwargs, stream=True)
            stream = raw.parse()  # the legacy raw response: parse() is synchronous
            events = [event async for event in stream]
    assert OPENAI_REQUEST_ID.fullmatch(parsed._request_id or ""), parsed._request_id
    assert OPENAI_REQUEST_ID.fullmatch(raw.request_id or ""), raw.request_id
    assert parsed._request_id != raw.request_id
    assert events, "the stream was read to its end"


async def test_openai_error_replies_carry_a_lowercase_hex_request_id(provider: LocalProvider) -> None:
    with provider.open_script("person", [{"http_error": 400}]) as run:
        async with _openai(run) as client:
            with pytest.raises(openai.BadRequestError) as caught:
                await client.chat.completions.create(**chat_kwargs(Mode.NATIVE))
    assert OPENAI_REQUEST_ID.fullmatch(caught.value.request_id or ""), caught.value.request_id


async def test_anthropic_replies_carry_a_request_id(provider: LocalProvider) -> None:
    with provider.open_script("person", ["valid", "valid"]) as run:
        async with _anthropic(run) as client:
            message = await client.messages.create(**anthropic_kwargs(Mode.NATIVE))
            async with client.messages.stream(**anthropic_kwargs(Mode.NATIVE)) as stream:
                final = await stream.get_final_message()
                streamed_id = stream.request_id
    assert ANTHROPIC_REQUEST_ID.fullmatch(message._request_id or ""), message._request_id
    assert ANTHROPIC_REQUEST_ID.fullmatch(streamed_id or ""), streamed_id
    assert final.content and message._request_id != streamed_id


@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL], ids=str)
async def test_anthropic_refusal_has_no_content_block(provider: LocalProvider, mode: Mode) -> None:
    with provider.open_script("person", ["refusal", "refusal"]) as run:
        async with _anthropic(run) as client:
            message = await client.messages.create(**anthropic_kwargs(mode))
            async with client.messages.stream(**anthropic_kwargs(mode)) as stream:
                events = [event.type async for event in stream]
                final = await stream.get_final_message()
    for reply in (message, final):
        assert reply.stop_reason == "refusal"
        assert reply.content == []
        assert reply.stop_details is not None and reply.stop_details.category == "cyber"
    # The real refusal stream: no content block and no ping between start and delta.
    assert events == ["message_start", "message_delta", "message_stop"]


def test_responses_call_ids_are_drawn_by_the_chat_declaration() -> None:
    """One declaration of the OpenAI call id (``call_`` and 24 letters and digits, the form of
    the 2026-07-28 Responses recording's ``call_id``), used by both OpenAI APIs."""
    from bench.provider import openai_chat, openai_responses
    from bench.provider.wire import IdSource

    assert openai_responses.new_call_id is openai_chat.new_call_id
    assert re.fullmatch(r"call_[0-9A-Za-z]{24}", openai_responses.new_call_id(IdSource(1, 0)))
