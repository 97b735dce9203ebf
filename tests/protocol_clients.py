"""Drive the official ``openai`` and ``anthropic`` clients against the provider, in each
protocol x mode x stream, and reduce what they parsed to a comparable summary.

Shared by the protocol tests; strict response validation is on, so a shape error in what
the provider sends fails the client's own parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anthropic
import openai

from bench.core.vocabulary import Mode, Protocol
from bench.provider.anthropic_messages import tool_input
from bench.scenarios.tasks import Person
from bench.sdk.adapter import Endpoint

SCHEMA = {**Person.model_json_schema(), "additionalProperties": False}
OUTPUT_TOOL = "final_result"
PROMPT = "Extract the person: Ada Lovelace (36) <ada@example.org>"


@dataclass(frozen=True)
class Summary:
    """What a caller of the client would see, independent of streaming."""

    text: str | None
    tool_arguments: Any
    refusal: str | None
    stop: str | None
    input_tokens: int | None
    output_tokens: int | None


def openai_client(endpoint: Endpoint, strict: bool = True) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=endpoint.openai_base_url, api_key=endpoint.api_key, max_retries=0, _strict_response_validation=strict
    )


def anthropic_client(endpoint: Endpoint, strict: bool = True) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=endpoint.anthropic_base_url,
        api_key=endpoint.api_key,
        max_retries=0,
        _strict_response_validation=strict,
    )


def chat_kwargs(mode: Mode) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]}
    if mode is Mode.TOOL:
        tool = {"name": OUTPUT_TOOL, "parameters": SCHEMA, "strict": True}
        kwargs |= {"tools": [{"type": "function", "function": tool}], "tool_choice": "required"}
    elif mode is Mode.NATIVE:
        fmt = {"name": "Person", "schema": SCHEMA, "strict": True}
        kwargs["response_format"] = {"type": "json_schema", "json_schema": fmt}
    return kwargs


def responses_kwargs(mode: Mode) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "input": PROMPT}
    if mode is Mode.TOOL:
        tool = {"type": "function", "name": OUTPUT_TOOL, "parameters": SCHEMA, "strict": True}
        kwargs |= {"tools": [tool], "tool_choice": "required"}
    elif mode is Mode.NATIVE:
        kwargs["text"] = {"format": {"type": "json_schema", "name": "Person", "schema": SCHEMA, "strict": True}}
    return kwargs


def anthropic_kwargs(mode: Mode) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    if mode is Mode.TOOL:
        kwargs |= {
            "tools": [{"name": OUTPUT_TOOL, "input_schema": SCHEMA}],
            "tool_choice": {"type": "tool", "name": OUTPUT_TOOL},
        }
    elif mode is Mode.NATIVE:
        kwargs["output_config"] = {"format": {"type": "json_schema", "schema": SCHEMA}}
    return kwargs


def call(protocol: Protocol, mode: Mode, stream: bool, endpoint: Endpoint) -> Summary:
    """One request through the official client; raises the client's typed errors."""
    if protocol is Protocol.ANTHROPIC:
        with anthropic_client(endpoint) as client_a:
            if stream:
                return anthropic_stream_summary(list(client_a.messages.create(**anthropic_kwargs(mode), stream=True)))
            return anthropic_summary(client_a.messages.create(**anthropic_kwargs(mode)))
    with openai_client(endpoint) as client:
        if protocol is Protocol.CHAT:
            kwargs = chat_kwargs(mode)
            if stream:
                events = client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
                return chat_stream_summary(list(events))
            return chat_summary(client.chat.completions.create(**kwargs))
        if stream:
            return responses_stream_summary(list(client.responses.create(**responses_kwargs(mode), stream=True)))
        return responses_summary(client.responses.create(**responses_kwargs(mode)))


def _args(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def chat_summary(completion: Any) -> Summary:
    choice = completion.choices[0]
    message = choice.message
    calls = message.tool_calls or []
    return Summary(
        text=message.content,
        tool_arguments=_args(calls[0].function.arguments) if calls else None,
        refusal=message.refusal,
        stop=choice.finish_reason,
        input_tokens=completion.usage.prompt_tokens,
        output_tokens=completion.usage.completion_tokens,
    )


def chat_stream_summary(chunks: list[Any]) -> Summary:
    text: str | None = None
    args: str | None = None
    refusal: str | None = None
    stop = usage = None
    for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content is not None:
                text = (text or "") + delta.content
            if delta.refusal is not None:
                refusal = (refusal or "") + delta.refusal
            for call_delta in delta.tool_calls or []:
                args = (args or "") + (call_delta.function.arguments or "")
            stop = choice.finish_reason or stop
    if args is not None and text == "":
        text = None
    return Summary(
        text=text,
        tool_arguments=_args(args),
        refusal=refusal,
        stop=stop,
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
    )


def responses_summary(response: Any) -> Summary:
    text = refusal = args = None
    for item in response.output:
        if item.type == "function_call":
            args = item.arguments
        elif item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    text = part.text
                else:
                    refusal = part.refusal
    return Summary(
        text=text,
        tool_arguments=_args(args),
        refusal=refusal,
        stop=response.status,
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
    )


def responses_stream_summary(events: list[Any]) -> Summary:
    terminal = [event for event in events if event.type in ("response.completed", "response.incomplete")]
    assert len(terminal) == 1, [event.type for event in events]
    streamed_text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    streamed_args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    streamed_refusal = "".join(e.delta for e in events if e.type == "response.refusal.delta")
    summary = responses_summary(terminal[0].response)
    assert (summary.text or "") == streamed_text
    assert (summary.refusal or "") == streamed_refusal
    assert summary.tool_arguments == _args(streamed_args or None)
    return summary


def anthropic_summary(message: Any) -> Summary:
    text = tool = None
    for block in message.content:
        if block.type == "text":
            text = (text or "") + block.text
        elif block.type == "tool_use":
            tool = block.input
    return Summary(
        text=text,
        tool_arguments=tool,
        refusal=None,
        stop=message.stop_reason,
        input_tokens=message.usage.input_tokens,
        output_tokens=message.usage.output_tokens,
    )


def anthropic_stream_summary(events: list[Any]) -> Summary:
    text: str | None = None
    partial: str | None = None
    stop = None
    input_tokens = output_tokens = None
    for event in events:
        if event.type == "message_start":
            input_tokens = event.message.usage.input_tokens
        elif event.type == "content_block_start" and event.content_block.type == "text":
            text = ""
        elif event.type == "content_block_start" and event.content_block.type == "tool_use":
            partial = ""
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            text = (text or "") + event.delta.text
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial = (partial or "") + event.delta.partial_json
        elif event.type == "message_delta":
            stop = event.delta.stop_reason
            output_tokens = event.usage.output_tokens
    return Summary(
        text=text,
        tool_arguments=tool_input(partial) if partial is not None else None,
        refusal=None,
        stop=stop,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
