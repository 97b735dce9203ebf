"""The API each protocol renders, declared once: the date it is answered as, and per reply shape
the fields a reply of that date carries.

A real API is a moving target: fields arrive (Chat's ``service_tier``, Responses' ``tool_usage``,
Anthropic's ``stop_details``) and SDKs read some of them. A provider that mixes fields of
different dates answers as no API ever did, so each protocol renders one stated date, the newest
that public recordings document, and this module is the list of what a reply of that date holds.
The recordings behind each field are in docs/provider-snapshot.md and
tests/fixtures/recordings/recordings.json; tests/provider/test_snapshot.py checks every reply the
provider can render against these lists, and the recordings against them too.

A shape is a tree: a dict maps each key to the shape of its value (``None`` for a scalar or a
value whose inside is data, such as tool arguments), a one-item list is "a list of these", and
:class:`OneOf` picks an object's shape by its ``type``. A :class:`Field` wraps a value that is not
in every reply of the shape (``when`` says which) or that the API added after the older
recordings the fidelity tests still compare with (``since``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.vocabulary import Protocol

Shape = Any
"""``None`` | ``dict[str, Shape | Field]`` | ``[Shape]`` | :class:`OneOf`."""


@dataclass(frozen=True)
class Field:
    """A field with a condition: absent from some replies of its shape (``when``, in words), or
    first seen in recordings on ``since`` (older recordings lack it)."""

    shape: Shape = None
    when: str | None = None
    since: str | None = None


@dataclass(frozen=True)
class OneOf:
    """An object whose shape depends on its ``type`` (content blocks, output items, events)."""

    variants: dict[str, Shape]
    key: str = "type"


@dataclass(frozen=True)
class Snapshot:
    """One protocol as answered on ``date``: its reply shapes, and (``left_out``) the fields or
    ``type`` values that recordings show but the provider leaves out, each with the reason (they
    depend on a request feature, a model family or a date after the snapshot's)."""

    protocol: Protocol
    date: str
    shapes: dict[str, Shape]
    left_out: dict[str, str] = field(default_factory=dict)


def _when(condition: str, shape: Shape = None) -> Field:
    return Field(shape, when=condition)


# --- OpenAI Chat Completions, as answered on 2026-08-05 -------------------------------------------

_CHAT_USAGE = {
    "prompt_tokens": None,
    "completion_tokens": None,
    "total_tokens": None,
    "prompt_tokens_details": Field({"cached_tokens": None, "audio_tokens": None}, since="2025-03"),
    "completion_tokens_details": {
        "reasoning_tokens": None,
        "audio_tokens": Field(since="2025-03"),
        "accepted_prediction_tokens": Field(since="2025-03"),
        "rejected_prediction_tokens": Field(since="2025-03"),
    },
}
_CHAT_TOOL_CALL = {"id": None, "type": None, "function": {"name": None, "arguments": None}}
_CHAT_ENVELOPE = {
    "id": None,
    "object": None,
    "created": None,
    "model": None,
    "service_tier": Field(since="2025-03"),
    "system_fingerprint": None,
}
CHAT = Snapshot(
    Protocol.CHAT,
    "2026-08-05",
    {
        "chat.completion": {
            **_CHAT_ENVELOPE,
            "choices": [
                {
                    "index": None,
                    "message": {
                        "role": None,
                        "content": None,
                        "refusal": None,
                        "annotations": Field([None], since="2025-03"),
                        "tool_calls": _when("a tool call", [_CHAT_TOOL_CALL]),
                    },
                    "logprobs": _when(
                        "non-reasoning models (gpt-4o family, as the fake model answers); gpt-5 and o3 omit it"
                    ),
                    "finish_reason": None,
                }
            ],
            "usage": _CHAT_USAGE,
        },
        "chat.completion.chunk": {
            **_CHAT_ENVELOPE,
            "choices": [
                {
                    "index": None,
                    "delta": {
                        "role": _when("the first chunk"),
                        "content": _when("the first chunk of a text or tool call, and text deltas"),
                        "refusal": _when("the first chunk, and refusal deltas"),
                        "tool_calls": _when(
                            "a tool call's chunks",
                            [
                                {
                                    "index": None,
                                    "id": _when("the call's first chunk"),
                                    "type": _when("the call's first chunk"),
                                    "function": {"name": _when("the call's first chunk"), "arguments": None},
                                }
                            ],
                        ),
                    },
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "usage": Field(
                _CHAT_USAGE, when="stream_options.include_usage (null but on the last chunk)", since="2025-08"
            ),
            "obfuscation": Field(when="unless stream_options.include_obfuscation is false", since="2025-08"),
        },
        "error": {"error": {"message": None, "type": None, "param": None, "code": None}},
    },
    left_out={
        "moderation": "sent only when the request asks for moderation (a 2026 request parameter no SDK here sets)",
        "audio": "message.audio: audio output is never requested",
        "function_call": "message.function_call: the legacy function-call API is never used",
    },
)


# --- OpenAI Responses, as answered on 2026-09-17 --------------------------------------------------

_RESPONSES_USAGE = {
    "input_tokens": None,
    "input_tokens_details": {"cache_write_tokens": Field(since="2026-07"), "cached_tokens": None},
    "output_tokens": None,
    "output_tokens_details": {"reasoning_tokens": None},
    "total_tokens": None,
}
_TOKENS = {"image_tokens": None, "text_tokens": None}
_LOGPROBS = Field([None], since="2025-09")
_OUTPUT_TEXT = {"type": None, "annotations": [None], "logprobs": _LOGPROBS, "text": None}
_PART = OneOf({"output_text": _OUTPUT_TEXT, "refusal": {"type": None, "refusal": None}})
_ITEM = OneOf(
    {
        "message": {"id": None, "type": None, "status": None, "content": [_PART], "role": None},
        "function_call": {
            "id": None,
            "type": None,
            "status": None,
            "arguments": None,
            "call_id": None,
            "name": None,
        },
    }
)
_RESPONSE = {
    "id": None,
    "object": None,
    "created_at": None,
    "status": None,
    "background": None,
    "billing": Field({"payer": None}, when="not streamed (no stream event carries it)", since="2025-09"),
    "completed_at": Field(since="2026-01"),
    "error": None,
    "frequency_penalty": Field(since="2026-01"),
    "incomplete_details": Field({"reason": None}),
    "instructions": None,
    "max_output_tokens": None,
    "max_tool_calls": Field(since="2025-09"),
    "model": None,
    "moderation": Field(since="2026-04"),
    "output": [_ITEM],
    "parallel_tool_calls": None,
    "presence_penalty": Field(since="2026-01"),
    "previous_response_id": None,
    "prompt_cache_key": Field(since="2025-09"),
    "prompt_cache_retention": Field(since="2026-04"),
    "reasoning": {"context": Field(since="2026-06"), "effort": None, "summary": None},
    "safety_identifier": Field(since="2025-09"),
    "service_tier": None,
    "store": None,
    "temperature": None,
    "text": {"format": None, "verbosity": Field(since="2025-09")},
    "tool_choice": None,
    "tool_usage": Field(
        {
            "image_gen": {
                "input_tokens": None,
                "input_tokens_details": _TOKENS,
                "output_tokens": None,
                "output_tokens_details": _TOKENS,
                "total_tokens": None,
            },
            "web_search": {"num_requests": None},
        },
        since="2026-06",
    ),
    "tools": [
        OneOf(
            {
                "function": {
                    "type": None,
                    "description": None,
                    "name": None,
                    "output_schema": Field(since="2026-07"),
                    "parameters": None,
                    "strict": None,
                }
            }
        )
    ],
    "top_logprobs": Field(since="2025-09"),
    "top_p": None,
    "truncation": None,
    "usage": Field(_RESPONSES_USAGE),
    "user": None,
    "metadata": None,
}
_SEQ = {"sequence_number": None}
_IN_ITEM = {"item_id": None, "output_index": None, **_SEQ}
_IN_PART = {"content_index": None, **_IN_ITEM}
_OBFUSCATION = Field(when="unless stream_options.include_obfuscation is false", since="2025-09")
RESPONSES = Snapshot(
    Protocol.RESPONSES,
    "2026-09-17",
    {
        "response": _RESPONSE,
        "event": OneOf(
            {
                **{
                    f"response.{name}": {"type": None, "response": _RESPONSE, **_SEQ}
                    for name in ("created", "in_progress", "completed", "incomplete")
                },
                "response.output_item.added": {"type": None, "output_index": None, "item": _ITEM, **_SEQ},
                "response.output_item.done": {"type": None, "output_index": None, "item": _ITEM, **_SEQ},
                "response.content_part.added": {"type": None, "part": _PART, **_IN_PART},
                "response.content_part.done": {"type": None, "part": _PART, **_IN_PART},
                "response.output_text.delta": {
                    "type": None,
                    "delta": None,
                    "logprobs": _LOGPROBS,
                    "obfuscation": _OBFUSCATION,
                    **_IN_PART,
                },
                "response.output_text.done": {"type": None, "text": None, "logprobs": _LOGPROBS, **_IN_PART},
                "response.refusal.delta": {"type": None, "delta": None, **_IN_PART},
                "response.refusal.done": {"type": None, "refusal": None, **_IN_PART},
                "response.function_call_arguments.delta": {
                    "type": None,
                    "delta": None,
                    "obfuscation": _OBFUSCATION,
                    **_IN_ITEM,
                },
                "response.function_call_arguments.done": {"type": None, "arguments": None, **_IN_ITEM},
            }
        ),
        "error": {"error": {"message": None, "type": None, "param": None, "code": None}},
    },
    left_out={
        "mode": "reasoning.mode: reasoning models only; the fake model answers as a non-reasoning model, like the "
        "2026-09-17 gpt-4o-mini capture (reasoning: context, effort, summary, all null)",
        "phase": "message.phase: gpt-5.4 and later models only",
        "reasoning": "reasoning output items: reasoning models only",
        "conversation": "present only when the request names a conversation",
        "access_programs": "seen once, on 2026-10-05 (after the snapshot date), from gpt-5.6-sol",
        "prompt_cache_options": "seen once, on 2026-10-05; the client documents it for gpt-5.6 and later only",
    },
)


# --- Anthropic Messages, as answered in 2026-09 ---------------------------------------------------

_ANTHROPIC_START_USAGE = {
    "input_tokens": None,
    "cache_creation_input_tokens": None,
    "cache_read_input_tokens": None,
    "cache_creation": {"ephemeral_5m_input_tokens": None, "ephemeral_1h_input_tokens": None},
    "output_tokens": None,
    "service_tier": None,
    "inference_geo": Field(since="2026-01"),
}
_OUTPUT_TOKENS_DETAILS = Field({"thinking_tokens": None}, since="2026-09")
_ANTHROPIC_BLOCK = OneOf(
    {
        "text": {"type": None, "text": None},
        "tool_use": {
            "type": None,
            "id": None,
            "name": None,
            "input": None,
            "caller": Field({"type": None}, since="2026-01"),
        },
    }
)
_STOP_DETAILS = Field(
    {"type": None, "category": None, "explanation": None},
    since="2026-05",
)
_MESSAGE = {
    "model": None,
    "id": None,
    "type": None,
    "role": None,
    "content": [_ANTHROPIC_BLOCK],
    "stop_reason": None,
    "stop_sequence": None,
    "stop_details": _STOP_DETAILS,
    "usage": {**_ANTHROPIC_START_USAGE, "output_tokens_details": _OUTPUT_TOKENS_DETAILS},
}
ANTHROPIC = Snapshot(
    Protocol.ANTHROPIC,
    "2026-09",
    {
        "message": _MESSAGE,
        "event": OneOf(
            {
                "message_start": {"type": None, "message": {**_MESSAGE, "usage": _ANTHROPIC_START_USAGE}},
                "content_block_start": {"type": None, "index": None, "content_block": _ANTHROPIC_BLOCK},
                "ping": {"type": None},
                "content_block_delta": {
                    "type": None,
                    "index": None,
                    "delta": OneOf(
                        {
                            "text_delta": {"type": None, "text": None},
                            "input_json_delta": {"type": None, "partial_json": None},
                        }
                    ),
                },
                "content_block_stop": {"type": None, "index": None},
                "message_delta": {
                    "type": None,
                    "delta": {"stop_reason": None, "stop_sequence": None, "stop_details": _STOP_DETAILS},
                    "usage": {
                        "input_tokens": None,
                        "cache_creation_input_tokens": None,
                        "cache_read_input_tokens": None,
                        "output_tokens": None,
                        "output_tokens_details": _OUTPUT_TOKENS_DETAILS,
                    },
                },
                "message_stop": {"type": None},
                "error": {"type": None, "error": {"type": None, "message": None}},
            }
        ),
        "error": {"type": None, "error": {"type": None, "message": None}, "request_id": None},
        "count_tokens": {"input_tokens": None},
    },
    left_out={
        "input_transformations": "sent only when the request sets thinking.block_binding",
        "thinking": "thinking blocks: extended thinking is never requested by the SDK configurations measured here",
        "recommended_model": "stop_details.recommended_model: in the SDK authors' refusal FIXTURE (vercel/ai), "
        "not in a recording",
    },
)

SNAPSHOTS: dict[Protocol, Snapshot] = {s.protocol: s for s in (CHAT, RESPONSES, ANTHROPIC)}


def problems(value: Any, shape: Shape, where: str = "$") -> list[str]:
    """Every way ``value`` differs from ``shape``: a key the snapshot does not declare (a field
    from another date), a declared key that is missing, an object where a scalar belongs or the
    reverse. Values themselves are not compared."""
    if isinstance(shape, Field):
        shape = shape.shape
    if isinstance(shape, OneOf):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        tag = value.get(shape.key)
        if not isinstance(tag, str) or tag not in shape.variants:
            return [f"{where}: {shape.key} {tag!r} is not in the snapshot"]
        return problems(value, shape.variants[tag], where)
    if isinstance(shape, dict):
        return _object_problems(value, shape, where)
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value) for p in problems(item, shape[0], f"{where}[{i}]")]
    return []  # a scalar, or data whose inside is not the protocol's


def _object_problems(value: Any, shape: dict[str, Any], where: str) -> list[str]:
    if value is None:
        return []  # a nullable object (usage before the end, incomplete_details, stop_details)
    if not isinstance(value, dict):
        return [f"{where}: expected an object, got {type(value).__name__}"]
    found = [f"{where}.{key}: not in the snapshot (a field from another date?)" for key in value if key not in shape]
    for key, sub in shape.items():
        if key in value:
            found += problems(value[key], sub, f"{where}.{key}")
        elif not (isinstance(sub, Field) and sub.when is not None):
            found.append(f"{where}.{key}: missing (the snapshot has it in every reply of this shape)")
    return found


def fields_since(protocol: Protocol, after: str) -> set[str]:
    """Names of the fields this protocol's snapshot has that recordings first show after ``after``
    (``YYYY-MM``): what a recording of that date cannot have."""
    names: set[str] = set()

    def walk(shape: Shape) -> None:
        if isinstance(shape, Field):
            walk(shape.shape)
        elif isinstance(shape, OneOf):
            for variant in shape.variants.values():
                walk(variant)
        elif isinstance(shape, list):
            walk(shape[0])
        elif isinstance(shape, dict):
            for key, sub in shape.items():
                if isinstance(sub, Field) and sub.since is not None and sub.since > after:
                    names.add(key)
                walk(sub)

    for shape in SNAPSHOTS[protocol].shapes.values():
        walk(shape)
    return names
