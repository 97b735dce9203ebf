"""Anthropic Messages on the wire (``/v1/messages``), as answered on the date
bench/provider/snapshot.py declares (ANTHROPIC; tests/fixtures/recordings and wire-samples,
anthropic_*): ``event:`` lines equal to ``data.type`` (the Python SDK dispatches on them),
``message_start`` .. ``message_stop``, no ``[DONE]``; structured output is an ordinary text block
holding the JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import from_json

from bench.provider.answer import Answer
from bench.provider.detect import RequestShape
from bench.provider.wire import UNSEEDED, ErrorReply, IdSource, Usage, delta_frames, dumps, event_frame, retry_headers
from bench.scenarios.behaviours import HttpError

REFUSAL_DETAILS = {"type": "refusal", "category": "cyber", "explanation": "This request was refused due to policy."}
"""Real refusals name their policy category (``"cyber"``, ``"reasoning_extraction"``...; the
recordings of issue 19 and tests/fixtures/wire-samples/anthropic_stream_refusal_stop_details);
langchain-anthropic copies ``stop_details`` into ``response_metadata``."""


def new_request_id(ids: IdSource) -> str:
    """A ``request-id`` as the API sends it on every reply (``req_011C`` then base62, as in the
    recordings' headers and error bodies)."""
    return ids.alnum("req_011C", 20)


def success_headers(ids: IdSource) -> dict[str, str]:
    """Headers of a 200 reply, JSON or SSE: the client reads ``request-id`` as ``_request_id``."""
    return {"request-id": new_request_id(ids)}


def _stop_reason(answer: Answer) -> str:
    if answer.finish == "length":
        return "max_tokens"
    if answer.finish == "pause_turn":
        return "pause_turn"
    if answer.refusal is not None or answer.finish == "content_filter":
        # Anthropic has no content-filter stop: its streaming classifiers end a reply they cut
        # with "refusal", after the text already sent (the Messages API's streaming refusals).
        return "refusal"
    return "tool_use" if answer.calls else "end_turn"


def _usage(usage: Usage, output_tokens: int | None = None) -> dict[str, Any]:
    """The usage of a whole message (``message_start`` has no ``output_tokens_details``: the
    2026-09 recording counts thinking only once the reply is done)."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
        "service_tier": "standard",
        "inference_geo": "not_available",
    }


def _details(answer: Answer) -> dict[str, int]:
    """``output_tokens_details``: a 2026-09 reply itemises its thinking tokens, zero or not
    (tests/fixtures/recordings/anthropic_2026-09_thinking_text.EXCERPT.json)."""
    return {"thinking_tokens": sum(item.thinking_tokens for item in answer.items)}


def signature(ids: IdSource) -> str:
    """A thinking block's ``signature``: opaque base64 the client sends back unread (the
    recording's is 700 characters; its value is elided there)."""
    return ids.hex("", 96) + "=="


def tool_input(text: str) -> dict[str, Any]:
    """The ``input`` object of a non-streamed tool_use block.

    Non-streamed, the API parses the model's arguments server-side, so ``input`` is always an
    object: a truncated prefix is parsed partially, text that is not JSON at all comes back as
    ``{}``. Streamed, the ``input_json_delta`` events carry the text as the model wrote it
    (:func:`_block_frames`), malformed or not: anthropic-sdk-python issue #1265 reproduced
    malformed ``partial_json`` against the real API, and the client's accumulator raises
    "Unable to parse tool parameter JSON" on it (anthropic/lib/streaming/_messages.py:509-513
    in the installed client; since v0.122.0). So a malformed tool call stays realistic without
    enforcement (answer.is_realistic), and a non-streamed one is served as this parse of it.
    """
    try:
        value = from_json(text, allow_partial=True)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _block(answer: Answer, tool_id: str, done: bool, sig: str = "", shown: bool = False) -> dict[str, Any]:
    if answer.thinking is not None:
        # Current models omit the text unless the request asks for a summary (thinking.display):
        # the block is its signature, as in the 2026-09 recording.
        text = answer.thinking if done and shown else ""
        return {"type": "thinking", "thinking": text, "signature": sig if done else ""}
    if answer.tool_name is not None:
        return {
            "type": "tool_use",
            "id": tool_id,
            "name": answer.tool_name,
            "input": tool_input(answer.text) if done else {},
            "caller": {"type": "direct"},
        }
    return {"type": "text", "text": answer.text if done else ""}


def _message(
    message_id: str, shape: RequestShape, content: list[Any], stop: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    message = {
        "model": shape.model,
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": REFUSAL_DETAILS if stop == "refusal" else None,
        "usage": usage,
    }
    return message


def new_message_id(ids: IdSource) -> str:
    """A message's ``id``: ``msg_01`` and 22 letters and digits (the recordings)."""
    return ids.alnum("msg_01", 22)


def new_call_id(ids: IdSource) -> str:
    """A tool_use block's ``id``: ``toolu_01`` and 22 letters and digits (the recordings)."""
    return ids.alnum("toolu_01", 22)


def _blocks(answer: Answer, call_ids: Sequence[str], ids: IdSource) -> list[tuple[Answer, str]]:
    """The content blocks of the reply with each tool_use block's id (the given ones in order,
    or fresh ones): a turn's text block first, then its tool_use blocks. A refusal has none."""
    if answer.refusal is not None:
        return []  # a refusal carries no content block at all, as the real API answers it
    given = iter(call_ids)
    # An empty answer is no block at all (``content: []``), not an empty text block.
    kept = [item for item in answer.items if item.tool_name or item.thinking is not None or item.text]
    return [(item, (next(given, None) or new_call_id(ids)) if item.tool_name else "") for item in kept]


def render_json(
    answer: Answer, shape: RequestShape, usage: Usage, call_ids: Sequence[str], ids: IdSource
) -> dict[str, Any]:
    message_id = new_message_id(ids)
    content = [
        _block(item, tool_id, True, signature(ids), shape.thinking_shown)
        for item, tool_id in _blocks(answer, call_ids, ids)
    ]
    whole = {**_usage(usage), "output_tokens_details": _details(answer)}
    return _message(message_id, shape, content, _stop_reason(answer), whole)


def render_body(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> bytes:
    """The JSON reply, as bytes; the request body is not needed."""
    return dumps(render_json(answer, shape, usage, call_ids, ids))


def render_events(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> list[bytes]:
    start = _message(new_message_id(ids), shape, [], None, _usage(usage, output_tokens=1))
    frames = [event_frame({"type": "message_start", "message": start})]
    # A real refusal streams no block and no ping: start, delta, stop (_blocks gives none).
    for index, (item, tool_id) in enumerate(_blocks(answer, call_ids, ids)):
        frames += _block_frames(item, tool_id, index, ids, shape.thinking_shown)
    delta: dict[str, Any] = {
        "stop_reason": _stop_reason(answer),
        "stop_sequence": None,
        "stop_details": REFUSAL_DETAILS if _stop_reason(answer) == "refusal" else None,
    }
    final_usage = {
        **{k: v for k, v in _usage(usage).items() if k not in ("cache_creation", "service_tier", "inference_geo")},
        "output_tokens_details": _details(answer),
    }
    frames.append(event_frame({"type": "message_delta", "delta": delta, "usage": final_usage}))
    frames.append(event_frame({"type": "message_stop"}))
    return frames


def _block_frames(answer: Answer, tool_id: str, index: int, ids: IdSource, thinking_shown: bool = False) -> list[bytes]:
    """One content block's events: start, deltas, stop, each naming the block's ``index`` (what
    the client's stream accumulator appends to); the one ping follows the first block's start."""
    frames = [
        event_frame({"type": "content_block_start", "index": index, "content_block": _block(answer, tool_id, False)})
    ]
    if index == 0:
        frames.append(event_frame({"type": "ping"}))
    if answer.thinking is not None:
        frames += delta_frames(
            lambda piece: event_frame(
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}
            ),
            answer.thinking_deltas() if thinking_shown else [],
        )
        delta = {"type": "signature_delta", "signature": signature(ids)}
        frames.append(event_frame({"type": "content_block_delta", "index": index, "delta": delta}))
    elif answer.tool_name is not None:
        # The first input_json_delta is always "" (wire-samples README, invariant 4).
        frames += delta_frames(
            lambda piece: event_frame(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            ),
            ["", *answer.deltas()],
        )
    else:
        frames += delta_frames(
            lambda piece: event_frame(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
            ),
            answer.deltas(),
        )
    frames.append(event_frame({"type": "content_block_stop", "index": index}))
    return frames


_ERRORS: dict[int, tuple[str, str]] = {
    400: (
        "invalid_request_error",
        "output_config.format.schema: JSON schema is invalid. It must match JSON Schema draft 2020-12.",
    ),
    429: (
        "rate_limit_error",
        "This request would exceed your organization's rate limit. Please try again later.",
    ),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service Unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def error_reply(error: HttpError, ids: IdSource) -> ErrorReply:
    kind, message = _ERRORS[error.status]
    request_id = new_request_id(ids)
    should_retry = error.should_retry
    if should_retry is None:
        should_retry = error.status != 400  # the real API always sends x-should-retry
    headers = {"request-id": request_id}
    headers.update(retry_headers(error.effective_retry_after_s, should_retry))
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return ErrorReply(error.status, headers, body)


def not_found(method: str, path: str, reason: str | None = None, ids: IdSource = UNSEEDED) -> ErrorReply:
    request_id = new_request_id(ids)
    body = {
        "type": "error",
        "error": {"type": "not_found_error", "message": reason or "Not Found"},
        "request_id": request_id,
    }
    return ErrorReply(404, {"request-id": request_id, "x-should-retry": "false"}, body)


def count_tokens_reply(input_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens}


def bad_request(message: str) -> ErrorReply:
    """400 for a request the API cannot read (bad JSON, a field of the wrong type)."""
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": None}
    return ErrorReply(400, {"x-should-retry": "false"}, body)
