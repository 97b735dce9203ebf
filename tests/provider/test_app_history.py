"""A follow-up request whose history the real API refuses gets the API's 400 through the
official client (its BadRequestError, the API's message), is logged, and leaves the script."""

from __future__ import annotations

import anthropic
import openai
import pytest

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from tests.protocol_clients import anthropic_client, anthropic_kwargs, chat_kwargs, openai_client, responses_kwargs

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def test_chat_refuses_an_unanswered_tool_call_and_keeps_the_script(provider: LocalProvider) -> None:
    kwargs = chat_kwargs(Mode.NATIVE)
    kwargs["messages"] = [*kwargs["messages"], {"role": "assistant", "content": None, "tool_calls": [CALL]}]
    with provider.open_script("person", ["valid"]) as run, openai_client(run.endpoint) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(**kwargs)
        (record,) = run.attempts
        assert client.chat.completions.create(**chat_kwargs(Mode.NATIVE)).choices[0].message.content
    assert "must be followed by tool messages responding to each 'tool_call_id'" in caught.value.message
    assert caught.value.body["type"] == "invalid_request_error"
    assert (record.behaviour, record.status_code, record.attempt) == ("invalid_history", 400, None)


def test_chat_refuses_null_assistant_content_naming_the_param(provider: LocalProvider) -> None:
    kwargs = chat_kwargs(Mode.NATIVE)
    kwargs["messages"] = [*kwargs["messages"], {"role": "assistant", "content": None}, kwargs["messages"][0]]
    with (
        provider.open_script("person", ["valid"]) as run,
        openai_client(run.endpoint) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.chat.completions.create(**kwargs)
    assert "Invalid value for 'content': expected a string, got null." in caught.value.message
    assert caught.value.param == "messages.[1].content"


def test_responses_refuses_a_function_call_without_output(provider: LocalProvider) -> None:
    kwargs = responses_kwargs(Mode.NATIVE)
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
    kwargs["input"] = [{"role": "user", "content": kwargs["input"]}, call]
    with (
        provider.open_script("person", ["valid"]) as run,
        openai_client(run.endpoint) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.responses.create(**kwargs)
    assert "No tool output found for function call call_1." in caught.value.message


def test_anthropic_refuses_duplicate_tool_use_ids(provider: LocalProvider) -> None:
    kwargs = anthropic_kwargs(Mode.NATIVE)
    uses = [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}] * 2
    results = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}] * 2
    turns = [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    kwargs["messages"] = [*kwargs["messages"], *turns]
    with (
        provider.open_script("person", ["valid"]) as run,
        anthropic_client(run.endpoint) as client,
        pytest.raises(anthropic.BadRequestError) as caught,
    ):
        client.messages.create(**kwargs)
    assert "`tool_use` ids must be unique" in caught.value.message
    assert caught.value.body["error"]["type"] == "invalid_request_error"
