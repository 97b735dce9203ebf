"""OpenAI Responses on the wire (``/v1/responses``), as answered on the date
bench/provider/snapshot.py declares (RESPONSES), for a non-reasoning model: one terminal event
(``response.completed`` or ``response.incomplete``), ``event:`` lines equal to ``data.type``,
``sequence_number`` from 0 (tests/fixtures/recordings and wire-samples, openai_responses_*).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

from bench.provider import openai_chat
from bench.provider.answer import Answer
from bench.provider.detect import RequestShape
from bench.provider.wire import ErrorReply, IdSource, Usage, dumps, event_frame, now
from bench.scenarios.behaviours import HttpError


def _usage(usage: Usage, reasoning_tokens: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


_TOOL_USAGE = {
    "image_gen": {
        "input_tokens": 0,
        "input_tokens_details": {"image_tokens": 0, "text_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"image_tokens": 0, "text_tokens": 0},
        "total_tokens": 0,
    },
    "web_search": {"num_requests": 0},
}
"""Built-in tool accounting, all zero: every 2026-07..09 reply carries it, streamed or not."""


def _response(
    response_id: str, body: dict[str, Any], shape: RequestShape, status: str, output: list[Any], usage: Any,
    streamed: bool = False, reason: str = "max_output_tokens",
) -> dict[str, Any]:  # fmt: skip
    """The Response object. ``billing`` is in non-streamed replies only (no recorded stream event
    carries it); ``service_tier`` is the requested tier, ``"auto"`` while in progress when none
    was requested, and the tier that served it (``"default"``) once done."""
    created = now()
    text = dict(body.get("text") or {})
    text["format"] = _echo_format(text.get("format"))
    text.setdefault("verbosity", "medium")
    head: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
    }
    if not streamed:
        head["billing"] = {"payer": "developer"}
    return {
        **head,
        "completed_at": created if status == "completed" else None,
        "error": None,
        "frequency_penalty": 0.0,
        "incomplete_details": {"reason": reason} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": shape.model,
        "moderation": None,
        "output": output,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "presence_penalty": 0.0,
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": None,
        "prompt_cache_retention": "in_memory",
        "reasoning": {"context": None, "effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": _service_tier(body, status),
        "store": bool(body.get("store", True)),
        "temperature": 1.0,
        "text": text,
        "tool_choice": body.get("tool_choice", "auto"),
        "tool_usage": _TOOL_USAGE,
        "tools": [_echo_tool(tool) for tool in body.get("tools") or []],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def _service_tier(body: dict[str, Any], status: str) -> str:
    requested = body.get("service_tier")
    if status == "in_progress":
        return requested if isinstance(requested, str) else "auto"
    return requested if isinstance(requested, str) and requested != "auto" else "default"


def _echo_format(fmt: Any) -> dict[str, Any]:
    """The request's text format as the API echoes it: normalised, ``description`` null."""
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return fmt if isinstance(fmt, dict) else {"type": "text"}
    return {"description": None, **fmt, "strict": bool(fmt.get("strict"))}


def _echo_tool(tool: Any) -> Any:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    return {"description": None, **tool, "output_schema": tool.get("output_schema"), "strict": bool(tool.get("strict"))}


class _Output(NamedTuple):
    """One output item of a reply with its ids: item id, call id (function calls) and the
    reasoning's ``encrypted_content`` (when the request included it)."""

    answer: Answer
    item_id: str
    call_id: str
    encrypted: str


def _item(output: _Output, done: bool, body: dict[str, Any]) -> dict[str, Any]:
    answer, item_id, call_id = output.answer, output.item_id, output.call_id
    status = ("incomplete" if answer.finish in _INCOMPLETE else "completed") if done else "in_progress"
    if answer.thinking is not None:
        return _reasoning_item(answer, item_id, done, body, output.encrypted)
    if answer.tool_name is not None:
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "arguments": answer.text if done else "",
            "call_id": call_id,
            "name": answer.tool_name,
        }
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "content": [_part(answer, done)] if done else [],
        "role": "assistant",
    }


_INCOMPLETE = ("length", "content_filter")
"""The finishes that end a response ``incomplete``: ``incomplete_details.reason`` names which."""


def _reasoning_item(answer: Answer, item_id: str, done: bool, body: dict[str, Any], encrypted: str) -> dict[str, Any]:
    """A reasoning item as the recordings hold it (openai_responses_2026-08-05_function_call,
    2026-07-21_stream_text): ``content: []``, ``summary: []`` unless the request asked for a
    summary (``reasoning.summary``), ``encrypted_content`` when the request included it
    (``include: ["reasoning.encrypted_content"]``), no ``status``."""
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "content": []}
    if encrypted:
        item["encrypted_content"] = encrypted
    item["summary"] = [_summary(answer, done)] if done and wants_summary(body) else []
    return item


def wants_summary(body: dict[str, Any]) -> bool:
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("summary") is not None


def _summary(answer: Answer, done: bool) -> dict[str, Any]:
    return {"type": "summary_text", "text": (answer.thinking or "") if done else ""}


def _part(answer: Answer, done: bool) -> dict[str, Any]:
    if answer.refusal is not None:
        return {"type": "refusal", "refusal": answer.refusal if done else ""}
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": answer.text if done else ""}


new_call_id = openai_chat.new_call_id
"""A function call's ``call_id`` has the same form as a Chat Completions tool call's id."""


def _ids(answer: Answer, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource) -> list[_Output]:
    """Each output item of the reply with its item id (``rs_``/``msg_``/``fc_`` and 48 hex
    digits), call id (the given ones, in order, or fresh ones; only a function call has one) and
    a reasoning item's ``encrypted_content`` (``gAAAAB`` and 64 hex digits, when the request
    includes it: ``include: ["reasoning.encrypted_content"]``), all drawn from ``ids``."""
    given = iter(call_ids)
    encrypts = "reasoning.encrypted_content" in (body.get("include") or [])
    outputs = []
    for item in answer.items:
        item_id = ids.hex("rs_" if item.thinking is not None else "fc_" if item.tool_name is not None else "msg_")
        call_id = (next(given, None) or new_call_id(ids)) if item.tool_name is not None else ""
        encrypted = "gAAAAB" + ids.hex("", 64) if item.thinking is not None and encrypts else ""
        outputs.append(_Output(item, item_id, call_id, encrypted))
    return outputs


def _status(answer: Answer) -> str:
    return "incomplete" if answer.finish in _INCOMPLETE else "completed"


def _reason(answer: Answer) -> str:
    return "content_filter" if answer.finish == "content_filter" else "max_output_tokens"


def _reasoning_tokens(answer: Answer) -> int:
    return sum(item.thinking_tokens for item in answer.items)


def render_json(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> dict[str, Any]:
    response_id = ids.hex("resp_")
    output = [_item(item, True, body) for item in _ids(answer, body, call_ids, ids)]
    usage_json = _usage(usage, _reasoning_tokens(answer))
    return _response(response_id, body, shape, _status(answer), output, usage_json, reason=_reason(answer))


def render_body(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> bytes:
    """The JSON reply, as bytes; the Responses API echoes request fields, hence ``body``."""
    return dumps(render_json(answer, shape, usage, body, call_ids, ids))


def render_events(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str], ids: IdSource
) -> list[bytes]:
    """The events: each output item in turn (a turn's message first, then each function call),
    ``output_item.added``, its own events, ``output_item.done``, all naming its
    ``output_index`` and ``item_id``; ``sequence_number`` counts across the whole stream."""
    response_id = ids.hex("resp_")
    items = _ids(answer, body, call_ids, ids)
    frames: list[bytes] = []

    padded = shape.include_obfuscation

    def emit(payload: dict[str, Any]) -> None:
        if not padded:  # the request turned the deltas' padding off
            payload.pop("obfuscation", None)
        frames.append(event_frame({**payload, "sequence_number": len(frames)}))

    started = _response(response_id, body, shape, "in_progress", [], None, streamed=True)
    emit({"type": "response.created", "response": started})
    emit({"type": "response.in_progress", "response": started})
    pad = partial(_pad, ids)
    for index, output_item in enumerate(items):
        item, item_id = output_item.answer, output_item.item_id
        emit({"type": "response.output_item.added", "output_index": index, "item": _item(output_item, False, body)})
        if item.thinking is not None:
            if wants_summary(body):
                _summary_events(item, item_id, index, emit, pad)
        elif item.tool_name is not None:
            _function_call_events(item, item_id, index, emit, pad)
        else:
            _message_events(item, item_id, index, emit, pad)
        emit({"type": "response.output_item.done", "output_index": index, "item": _item(output_item, True, body)})
    output = [_item(output_item, True, body) for output_item in items]
    usage_json = _usage(usage, _reasoning_tokens(answer))
    final = _response(
        response_id, body, shape, _status(answer), output, usage_json, streamed=True, reason=_reason(answer)
    )
    emit({"type": f"response.{_status(answer)}", "response": final})
    return frames


Emit = Callable[[dict[str, Any]], None]
Pad = Callable[[str], str]


def _summary_events(answer: Answer, item_id: str, output_index: int, emit: Emit, pad: Pad) -> None:
    """A reasoning summary's events (the client's ``ResponseReasoningSummary*Event`` types)."""
    where = {"item_id": item_id, "output_index": output_index, "summary_index": 0}
    emit({"type": "response.reasoning_summary_part.added", **where, "part": _summary(answer, False)})
    for piece in answer.thinking_deltas():
        emit({"type": "response.reasoning_summary_text.delta", **where, "delta": piece, "obfuscation": pad(piece)})
    emit({"type": "response.reasoning_summary_text.done", **where, "text": answer.thinking or ""})
    emit({"type": "response.reasoning_summary_part.done", **where, "part": _summary(answer, True)})


def _function_call_events(answer: Answer, item_id: str, output_index: int, emit: Emit, pad: Pad) -> None:
    where = {"item_id": item_id, "output_index": output_index}
    for piece in answer.deltas():
        emit({"type": "response.function_call_arguments.delta", **where, "delta": piece, "obfuscation": pad(piece)})
    emit({"type": "response.function_call_arguments.done", **where, "arguments": answer.text})


def _message_events(answer: Answer, item_id: str, output_index: int, emit: Emit, pad: Pad) -> None:
    where = {"content_index": 0, "item_id": item_id, "output_index": output_index}
    emit({"type": "response.content_part.added", **where, "part": _part(answer, False)})
    if answer.refusal is not None:
        for piece in answer.deltas():
            emit({"type": "response.refusal.delta", **where, "delta": piece})
        emit({"type": "response.refusal.done", **where, "refusal": answer.refusal})
    else:
        for piece in answer.deltas():
            emit(
                {
                    "type": "response.output_text.delta",
                    **where,
                    "delta": piece,
                    "logprobs": [],
                    "obfuscation": pad(piece),
                }
            )
        emit({"type": "response.output_text.done", **where, "logprobs": [], "text": answer.text})
    emit({"type": "response.content_part.done", **where, "part": _part(answer, True)})


_pad = openai_chat.obfuscation_pad


def success_headers(ids: IdSource) -> dict[str, str]:
    """Headers of a 200 reply: the same ``x-request-id`` as Chat Completions."""
    return openai_chat.success_headers(ids)


def error_reply(error: HttpError, ids: IdSource) -> ErrorReply:
    if error.status == 400:
        return openai_chat.error_reply(
            error, ids, param_override="text.format.schema", code_override="invalid_json_schema"
        )
    return openai_chat.error_reply(error, ids)


bad_request = openai_chat.bad_request
"""The Responses API rejects an unreadable request with the same error body as Chat Completions."""
