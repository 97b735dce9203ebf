"""Every behaviour x protocol x mode x stream/non-stream through the official clients: they
parse what the provider sends (or raise the right typed API error), and a stream assembles
into the same content as the non-streamed answer."""

from __future__ import annotations

import anthropic
import openai
import pytest

from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from tests.protocol_clients import Summary, anthropic_client, anthropic_kwargs, call, chat_kwargs, openai_client

ANSWER_BEHAVIOURS = [
    "valid",
    "wrong",
    {"malformed": "trailing_comma"},
    {"malformed": "fenced_prose"},
    {"schema_violation": "missing_field"},
    "truncated",
    "refusal",
    "prose",
    {"slow": {"delay_s": 0.05, "where": "mid_stream"}},
    {"slow": 0.05},
]
PROTOCOLS = list(Protocol)
MODES = list(Mode)


def _id(value: object) -> str:
    return str(value).replace(" ", "")


def _served(provider: LocalProvider, behaviour: object, protocol: Protocol, mode: Mode, stream: bool) -> Summary:
    with provider.open_script("person", [behaviour]) as run:
        summary = call(protocol, mode, stream, run.endpoint)
        (record,) = run.attempts
    assert record.detected_mode == mode
    assert record.stream is stream
    assert record.status_code == 200
    assert (summary.input_tokens, summary.output_tokens) == (record.input_tokens, record.output_tokens)
    return summary


@pytest.mark.parametrize("behaviour", ANSWER_BEHAVIOURS, ids=_id)
@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_stream_assembles_into_the_non_streamed_answer(
    provider: LocalProvider, protocol: Protocol, mode: Mode, behaviour: object
) -> None:
    plain = _served(provider, behaviour, protocol, mode, stream=False)
    streamed = _served(provider, behaviour, protocol, mode, stream=True)
    assert streamed == plain
    assert (
        plain.text is not None
        or plain.tool_arguments is not None
        or plain.refusal is not None
        or plain.stop == "refusal"
    )


STOP_REASONS = {
    # behaviour -> stop reason per protocol, as the real APIs name them
    "truncated": {Protocol.CHAT: "length", Protocol.RESPONSES: "incomplete", Protocol.ANTHROPIC: "max_tokens"},
    "refusal": {Protocol.CHAT: "stop", Protocol.RESPONSES: "completed", Protocol.ANTHROPIC: "refusal"},
}


@pytest.mark.parametrize("behaviour", sorted(STOP_REASONS))
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_length_and_refusal_use_each_protocols_own_shape(
    provider: LocalProvider, protocol: Protocol, behaviour: str
) -> None:
    summary = _served(provider, behaviour, protocol, Mode.NATIVE, stream=False)
    assert summary.stop == STOP_REASONS[behaviour][protocol]
    if behaviour == "refusal" and protocol is not Protocol.ANTHROPIC:
        assert summary.refusal and summary.text is None


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_valid_answer_is_the_reference_in_the_requested_mode(
    provider: LocalProvider, protocol: Protocol, mode: Mode
) -> None:
    summary = _served(provider, "valid", protocol, mode, stream=False)
    reference = {"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"}
    if mode is Mode.TOOL:
        assert summary.tool_arguments == reference and summary.text is None
    else:
        assert summary.text == '{"name":"Ada Lovelace","age":36,"email":"ada@example.org"}'


OPENAI_ERRORS = {
    400: openai.BadRequestError,
    429: openai.RateLimitError,
    500: openai.InternalServerError,
    503: openai.InternalServerError,
    529: openai.InternalServerError,
}
ANTHROPIC_ERRORS = {
    400: anthropic.BadRequestError,
    429: anthropic.RateLimitError,
    500: anthropic.InternalServerError,
    503: anthropic.ServiceUnavailableError,
    529: anthropic.OverloadedError,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("status", sorted(OPENAI_ERRORS))
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_http_errors_raise_the_clients_typed_error(
    provider: LocalProvider, protocol: Protocol, status: int, stream: bool
) -> None:
    expected = ANTHROPIC_ERRORS[status] if protocol is Protocol.ANTHROPIC else OPENAI_ERRORS[status]
    with provider.open_script("person", [{"http_error": status}]) as run:
        with pytest.raises(expected) as caught:
            call(protocol, Mode.NATIVE, stream, run.endpoint)
        (record,) = run.attempts
    assert caught.value.status_code == status == record.status_code
    assert caught.value.request_id  # both providers send a request id header
    if status == 429:
        assert caught.value.response.headers["retry-after-ms"] == "500"
    if protocol is Protocol.ANTHROPIC:
        assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"]
    else:
        assert set(caught.value.body) == {"message", "type", "param", "code"}


def test_clients_retry_a_429_on_their_own_and_the_ledger_sees_it(provider: LocalProvider) -> None:
    with provider.open_script("person", [{"http_error": {"status": 429, "retry_after_s": 0.01}}, "valid"]) as run:
        client = openai.OpenAI(base_url=run.endpoint.openai_base_url, api_key="x", max_retries=2)
        completion = client.chat.completions.create(**chat_kwargs(Mode.NATIVE))
        first, second = run.attempts
    assert completion.choices[0].message.content
    assert (first.status_code, second.status_code) == (429, 200)
    assert first.request_sha256 == second.request_sha256, "a transport retry re-sends the same body"
    assert (first.client_retry_count, second.client_retry_count) == (0, 1)


def test_should_retry_false_stops_the_clients_retry(provider: LocalProvider) -> None:
    script = [{"http_error": {"status": 429, "should_retry": False, "retry_after_s": 0.01}}, "valid"]
    with provider.open_script("person", script) as run:
        client = anthropic.Anthropic(base_url=run.endpoint.anthropic_base_url, api_key="x", max_retries=2)
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(**anthropic_kwargs(Mode.NATIVE))
        assert run.calls_recorded == 1


@pytest.mark.parametrize("path", ["/runs/nope/v1/chat/completions", "/v1/chat/completions", "/runs/x/v1/embeddings"])
def test_unknown_run_or_path_gets_openai_shaped_404(provider: LocalProvider, path: str) -> None:
    base = provider.base_url + path.rsplit("/chat/completions", 1)[0].rsplit("/embeddings", 1)[0]
    client = openai.OpenAI(base_url=base, api_key="x", max_retries=0, _strict_response_validation=True)
    with pytest.raises(openai.NotFoundError) as caught:
        if path.endswith("embeddings"):
            client.embeddings.create(model="text-embedding-3-small", input="hi")
        else:
            client.chat.completions.create(**chat_kwargs(Mode.NATIVE))
    assert set(caught.value.body) == {"message", "type", "param", "code"}


def test_unknown_run_gets_anthropic_shaped_404(provider: LocalProvider) -> None:
    client = anthropic.Anthropic(base_url=provider.base_url + "/runs/nope", api_key="x", max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(**anthropic_kwargs(Mode.NATIVE))
    assert caught.value.body["error"]["type"] == "not_found_error"


def test_count_tokens_counts_without_consuming_the_script(provider: LocalProvider) -> None:
    with provider.open_script("person", ["refusal", "valid"]) as run:
        client = anthropic_client(run.endpoint)
        kwargs = anthropic_kwargs(Mode.NATIVE)
        counted = client.messages.count_tokens(
            model=kwargs["model"], messages=kwargs["messages"], output_config=kwargs["output_config"]
        )
        message = client.messages.create(**kwargs)
        count_record, call_record = run.attempts
    assert message.stop_reason == "refusal", "count_tokens must not have used the first script step"
    assert count_record.attempt is None and call_record.attempt == 0
    assert counted.input_tokens == call_record.input_tokens


def test_beta_messages_path_is_served(provider: LocalProvider) -> None:
    with provider.open_script("person", ["valid"]) as run:
        client = anthropic_client(run.endpoint)
        kwargs = anthropic_kwargs(Mode.NATIVE)
        fmt = kwargs.pop("output_config")["format"]
        # The deprecated beta shape, `output_format`, as older SDK versions still send it.
        message = client.beta.messages.create(
            **kwargs, extra_body={"output_format": fmt}, betas=["structured-outputs-2025-11-13"]
        )
        (record,) = run.attempts
    assert record.path.endswith("/v1/messages") and record.detected_mode == "native"
    assert message.content[0].text.startswith('{"name"')


def test_chat_named_tool_choice_finishes_with_stop(provider: LocalProvider) -> None:
    with provider.open_script("person", ["valid"]) as run:
        kwargs = chat_kwargs(Mode.TOOL) | {"tool_choice": {"type": "function", "function": {"name": "final_result"}}}
        completion = openai_client(run.endpoint).chat.completions.create(**kwargs)
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.tool_calls
