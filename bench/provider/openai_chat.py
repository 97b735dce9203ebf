"""OpenAI Chat Completions on the wire (``/v1/chat/completions``), as answered on the date
bench/provider/snapshot.py declares (CHAT): the keys of tests/fixtures/recordings/openai_chat_*,
the chunk sequence of tests/fixtures/wire-samples/openai_chat_*.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from bench.provider.answer import Answer
from bench.provider.detect import RequestShape
from bench.provider.wire import (
    PAD_MARK,
    PAD_MAX,
    UNSEEDED,
    ErrorReply,
    IdSource,
    Usage,
    data_frame,
    delta_frames,
    dumps,
    now,
    pad_frame,
    retry_headers,
)
from bench.scenarios.behaviours import HttpError

FINGERPRINT = "fp_misfit0001"
SERVICE_TIER = "default"
"""What every 2026 reply and chunk names when the request sets no tier (the recordings)."""


def new_request_id(ids: IdSource) -> str:
    """An ``x-request-id`` as OpenAI sends it on every reply: ``req_`` and 32 lowercase hex
    digits (the recordings' headers)."""
    return ids.hex("req_", 32)


def success_headers(ids: IdSource) -> dict[str, str]:
    """Headers of a 200 reply, JSON or SSE: the client reads ``x-request-id`` as ``_request_id``
    (and openai-agents as ``ModelResponse.request_id``)."""
    return {"x-request-id": new_request_id(ids)}


def _finish_reason(answer: Answer, shape: RequestShape) -> str:
    if answer.finish in ("length", "content_filter"):
        return answer.finish
    if answer.calls:
        # A tool_choice that names a function ends with "stop", not "tool_calls".
        return "stop" if shape.named_tool_choice else "tool_calls"
    return "stop"  # refusals too: content null, refusal set, finish_reason "stop"


def _usage(usage: Usage, reasoning_tokens: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _envelope(completion_id: str, shape: RequestShape, obj: str, created: int | None = None) -> dict[str, Any]:
    return {"id": completion_id, "object": obj, "created": now() if created is None else created, "model": shape.model}


def render_json(
    answer: Answer, shape: RequestShape, usage: Usage, ids: IdSource,
    completion_id: str | None = None, created: int | None = None, call_ids: Sequence[str] = (),
) -> dict[str, Any]:  # fmt: skip
    """The completion; ids (from the reply's ``ids``) and ``created`` are drawn here unless given
    (as markers, by :func:`render_json_bytes`). ``call_ids``: one per tool call of the answer,
    in order."""
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "annotations": []}
    content = answer.content
    if content is not None and content.refusal is not None:
        message["refusal"] = content.refusal
    elif content is not None and content.thinking is not None:
        # The shape OpenAI-compatible servers (DeepSeek, vLLM) give reasoning; OpenAI's own
        # Chat API has no such field (answer.is_realistic).
        message["content"] = content.text or None
        message["reasoning_content"] = content.thinking
    elif content is not None:
        message["content"] = content.text
    if answer.calls:
        message["tool_calls"] = [_tool_call(call, call_id) for call, call_id in _with_ids(answer, call_ids, ids)]
    return {
        **_envelope(completion_id or ids.alnum("chatcmpl-", 29), shape, "chat.completion", created),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(answer, shape),
            }
        ],
        "usage": _usage(usage, _reasoning_tokens(answer)),
        "service_tier": SERVICE_TIER,
        "system_fingerprint": FINGERPRINT,
    }


def _reasoning_tokens(answer: Answer) -> int:
    return sum(item.thinking_tokens for item in answer.items)


_ID_MARK, _CALL_MARK, _CREATED_MARK = "misfitcompletionmark", "misfitcallmark", 271828182845904
_MARKS = re.compile(b'"misfitcompletionmark"|"misfitcallmark"|271828182845904')
_FILLS = {b'"misfitcompletionmark"': b'"%s"', b'"misfitcallmark"': b'"%s"', b"271828182845904": b"%d"}
_TEMPLATES: dict[tuple[int, int, Usage], tuple[Answer, RequestShape, bytes, bool]] = {}


def new_call_id(ids: IdSource) -> str:
    """A tool call's id, ``call_`` and 24 letters and digits (also the Responses API's
    ``call_id``: bench.provider.openai_responses uses this one)."""
    return ids.alnum("call_")


def _with_ids(answer: Answer, call_ids: Sequence[str], ids: IdSource) -> list[tuple[Answer, str]]:
    """Each tool call of the answer with its id: the given one, or a fresh one."""
    given = list(call_ids) + [new_call_id(ids) for _ in range(len(answer.calls) - len(call_ids))]
    return list(zip(answer.calls, given, strict=False))


def render_json_bytes(
    answer: Answer, shape: RequestShape, usage: Usage, ids: IdSource, call_ids: Sequence[str] = ()
) -> bytes:
    """:func:`render_json`, encoded, for the provider's hot path.

    Only the ids and ``created`` differ between two replies with the same answer, shape and
    usage, and encoding the whole reply was the largest cost of a small request; the reply is
    encoded once around markers into a ``bytes %`` template (completion id, created, then the
    call id for a tool call: the order the keys are written in), which each request fills with
    its own values (plain letters and digits, which JSON writes as they are). Falls back to a
    full render when the markers do not come out exactly once each, in that order (say, a model
    name that contains one), and for a parallel turn (several call ids)."""
    call_id = call_ids[0] if call_ids else None
    if answer.parts:
        return dumps(render_json(answer, shape, usage, ids, call_ids=call_ids))
    key = (id(answer), id(shape), usage)
    hit = _TEMPLATES.get(key)
    if hit is None or hit[0] is not answer or hit[1] is not shape:
        template = dumps(render_json(answer, shape, usage, ids, _ID_MARK, _CREATED_MARK, (_CALL_MARK,)))
        marks = _MARKS.findall(template)
        has_call = answer.tool_name is not None and answer.refusal is None
        expected = [b'"misfitcompletionmark"', b"271828182845904"] + ([b'"misfitcallmark"'] if has_call else [])
        if marks != expected:
            return dumps(render_json(answer, shape, usage, ids, call_ids=call_ids))
        parts = [part.replace(b"%", b"%%") for part in _MARKS.split(template)]
        fills = [_FILLS[mark] for mark in marks]
        form = parts[0] + b"".join(fill + part for fill, part in zip(fills, parts[1:], strict=True))
        if len(_TEMPLATES) >= 1024:
            _TEMPLATES.clear()
        # The entry holds its answer and shape, so their ids cannot be reused while it lives.
        hit = _TEMPLATES[key] = (answer, shape, form, has_call)
    _, _, form, has_call = hit
    completion_id = ids.alnum_bytes(b"chatcmpl-", 29)
    if has_call:
        return form % (completion_id, now(), (call_id or new_call_id(ids)).encode())
    return form % (completion_id, now())


def _tool_call(answer: Answer, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": answer.tool_name, "arguments": answer.text},
    }


def render_body(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> bytes:
    """The JSON reply, as bytes (:func:`render_json_bytes`); the request body is not needed."""
    return render_json_bytes(answer, shape, usage, ids, call_ids)


def render_events(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> list[bytes]:
    """The chunks: the first delta carries the role (and the first call, when the reply opens
    with one); text deltas come first, then each call in turn, its first chunk with ``index``,
    ``id``, ``type`` and name, the rest with ``index`` and argument pieces (what the client's
    ChatCompletionStreamState accumulates by ``index``). ``body`` is not read: what the request
    asks of the stream is on ``shape`` (a cached shape's body is not parsed again)."""
    base = {
        **_envelope(ids.alnum("chatcmpl-", 29), shape, "chat.completion.chunk"),
        "service_tier": SERVICE_TIER,
        "system_fingerprint": FINGERPRINT,
    }
    tail = _chunk_tail(shape)
    padded = ids if shape.include_obfuscation else None
    single = partial(pad_frame, ids) if padded is not None else _as_is  # a chunk built alone: its pad drawn here

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return data_frame({**base, "choices": [choice], **tail})

    content = answer.content
    frames: list[bytes] = []
    if content is not None and content.thinking is not None:
        frames.append(single(chunk({"role": "assistant", "content": None, "reasoning_content": ""})))
        frames += delta_frames(
            lambda piece: chunk({"content": None, "reasoning_content": piece}), content.thinking_deltas(), padded
        )
        if not content.text:
            content = None
    if content is not None:
        refusal = content.refusal is not None
        first = {"role": "assistant", "content": None if refusal else "", "refusal": "" if refusal else None}
        frames.append(single(chunk(first)))
        field = "refusal" if refusal else "content"
        frames += delta_frames(lambda piece: chunk({field: piece}), content.deltas(), padded)
    for index, (call, call_id) in enumerate(_with_ids(answer, call_ids, ids)):
        opening = _tool_call(call, call_id)
        opening["function"]["arguments"] = ""
        delta = {"tool_calls": [{"index": index, **opening}]}
        # A reply that opens with a call carries it in the role chunk (the recordings).
        opened = chunk(delta if frames else {"role": "assistant", "content": None, **delta, "refusal": None})
        frames.append(single(opened))
        frames += delta_frames(partial(_arguments_chunk, chunk, index), call.deltas(), padded)
    frames.append(single(chunk({}, _finish_reason(answer, shape))))
    if shape.include_usage:
        frames.append(
            single(data_frame({**base, "choices": [], **tail, "usage": _usage(usage, _reasoning_tokens(answer))}))
        )
    frames.append(b"data: [DONE]\n\n")
    return frames


def _chunk_tail(shape: RequestShape) -> dict[str, Any]:
    """What follows ``choices`` in every chunk: ``usage: null`` when the request asked for usage
    (the last chunk carries it), and the ``obfuscation`` padding unless the request turned it
    off, as the client's ``stream_options`` documents and the 2026 recordings show. The padding
    is a marker here (``obfuscation`` is a chunk's last key), drawn anew for every chunk as in
    tests/fixtures/recordings/openai_chat_2026-07-02_*.sse (bench.provider.wire.pad_frame)."""
    tail: dict[str, Any] = {"usage": None} if shape.include_usage else {}
    if shape.include_obfuscation:
        tail["obfuscation"] = PAD_MARK
    return tail


def _as_is(frame: bytes) -> bytes:
    return frame


def obfuscation_pad(ids: IdSource, piece: str) -> str:
    """Random padding (from the reply's ``ids``) that evens out the size of a delta (a
    side-channel guard; the Responses API's deltas)."""
    return ids.urlsafe(max(4, PAD_MAX - len(piece)))


def _arguments_chunk(chunk: Callable[[dict[str, Any]], bytes], index: int, piece: str) -> bytes:
    """A piece of the arguments of the call at ``index`` (the key the client accumulates on)."""
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})


_ERRORS: dict[int, tuple[str, str, str | None, str | None]] = {
    400: (
        "Invalid schema for response_format 'default': In context=(), 'additionalProperties' "
        "is required to be supplied and to be false.",
        "invalid_request_error",
        "response_format",
        None,
    ),
    429: (
        "Rate limit reached for gpt-4o-mini in organization org-misfit on tokens per min (TPM): "
        "Limit 200000, Used 199990, Requested 1200. Please try again in 500ms.",
        "tokens",
        None,
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
        None,
    ),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None, None),
    529: ("Overloaded", "server_error", None, None),
}


def error_reply(
    error: HttpError, ids: IdSource, param_override: str | None = None, code_override: str | None = None
) -> ErrorReply:
    message, kind, param, code = _ERRORS[error.status]
    headers = {"x-request-id": new_request_id(ids)}
    headers.update(retry_headers(error.effective_retry_after_s, error.should_retry))
    if error.status == 429:
        headers.update({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "0.5s"})
    body = {
        "error": {
            "message": message,
            "type": kind,
            "param": param_override or param,
            "code": code_override or code,
        }
    }
    return ErrorReply(error.status, headers, body)


def not_found(method: str, path: str, reason: str | None = None, ids: IdSource = UNSEEDED) -> ErrorReply:
    message = reason or f"Invalid URL ({method} {path})"
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return ErrorReply(404, {"x-request-id": new_request_id(ids)}, body)


def bad_request(message: str) -> ErrorReply:
    """400 for a request the API cannot read (bad JSON, a field of the wrong type)."""
    return ErrorReply(
        400, {}, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    )
