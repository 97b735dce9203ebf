"""Read a recorded reply as the provider's protocol-neutral :class:`bench.provider.answer.Answer`.

A fault is applied to this answer (its text, its tool call's arguments, its stop), and the
faulted answer is spelled on the wire by the provider's own protocol modules, which the official
clients' strict parsers check. What the recorded reply said, its tokens and its tool-call ids are
kept in :class:`Recorded`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bench.cassettes.format import Cassette
from bench.provider.answer import Answer, Finish
from bench.provider.wire import dumps_str


@dataclass(frozen=True)
class Item:
    """One item of a recorded turn: text, a refusal or one tool call."""

    text: str = ""
    tool_name: str | None = None
    call_id: str | None = None
    refusal: str | None = None


@dataclass(frozen=True)
class Recorded:
    """What a recorded reply said."""

    items: tuple[Item, ...]
    finish: Finish
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(item.call_id or "" for item in self.items if item.tool_name is not None)

    @property
    def refusal(self) -> str | None:
        return next((item.refusal for item in self.items if item.refusal), None)

    def answer(self, label: str, realistic: bool) -> Answer:
        parts = tuple(
            Answer(label, realistic, text=item.text, tool_name=item.tool_name, refusal=item.refusal)
            for item in self.items
        )
        if self.refusal is not None:
            return Answer(label, realistic, refusal=self.refusal, finish="refusal")
        if len(parts) == 1:
            return Answer(label, realistic, text=parts[0].text, tool_name=parts[0].tool_name, finish=self.finish)
        return Answer(label, realistic, parts=parts, finish=self.finish)


def recorded(cassette: Cassette) -> Recorded:
    """The reply of ``cassette`` (a 200 model call), whichever protocol and streamed or not."""
    response = cassette.response
    if cassette.protocol == "openai-chat":
        return _chat_events(_data(response.events)) if response.events is not None else _chat(_json(response.body))
    if cassette.protocol == "openai-responses":
        if response.events is not None:
            terminal = [
                e for e in _data(response.events) if e.get("type") in ("response.completed", "response.incomplete")
            ]
            return _responses(terminal[-1]["response"] if terminal else {})
        return _responses(_json(response.body))
    if response.events is not None:
        return _anthropic_events(_data(response.events))
    return _anthropic(_json(response.body))


def _json(body: str | None) -> dict[str, Any]:
    value = json.loads(body or "{}")
    return value if isinstance(value, dict) else {}


def _data(events: Any) -> list[dict[str, Any]]:
    """The JSON ``data:`` payloads of SSE frames (``[DONE]`` and comments skipped)."""
    found = []
    for event in events:
        for line in event.data.splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                found.append(json.loads(line[5:].strip()))
    return found


CHAT_FINISH: dict[str | None, Finish] = {"length": "length"}


def _chat(body: dict[str, Any]) -> Recorded:
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    items = [Item(text=message["content"])] if message.get("content") else []
    if message.get("refusal"):
        items = [Item(refusal=message["refusal"])]
    for call in message.get("tool_calls") or []:
        items.append(
            Item(text=call["function"]["arguments"], tool_name=call["function"]["name"], call_id=call.get("id"))
        )
    usage = body.get("usage") or {}
    return Recorded(
        tuple(items), CHAT_FINISH.get(choice.get("finish_reason"), "stop"),
        usage.get("prompt_tokens"), usage.get("completion_tokens"),
    )  # fmt: skip


def _chat_events(chunks: list[dict[str, Any]]) -> Recorded:
    text, refusal, finish = "", "", None
    usage: dict[str, Any] = {}
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            refusal += delta.get("refusal") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"content": text or None, "refusal": refusal or None}
    message["tool_calls"] = [
        {"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}} for _, c in sorted(calls.items())
    ]
    return _chat({"choices": [{"message": message, "finish_reason": finish}], "usage": usage})


def _responses(response: dict[str, Any]) -> Recorded:
    items = []
    for output in response.get("output") or []:
        if output.get("type") == "function_call":
            items.append(
                Item(text=output.get("arguments", ""), tool_name=output.get("name"), call_id=output.get("call_id"))
            )
        elif output.get("type") == "message":
            for part in output.get("content") or []:
                if part.get("type") == "refusal":
                    items.append(Item(refusal=part.get("refusal", "")))
                elif part.get("type") == "output_text":
                    items.append(Item(text=part.get("text", "")))
    usage = response.get("usage") or {}
    finish: Finish = "length" if response.get("status") == "incomplete" else "stop"
    return Recorded(tuple(items), finish, usage.get("input_tokens"), usage.get("output_tokens"))


ANTHROPIC_FINISH: dict[str | None, Finish] = {"max_tokens": "length", "refusal": "refusal"}


def _anthropic(message: dict[str, Any]) -> Recorded:
    items = []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            items.append(Item(text=block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments = block.get("input")
            text = arguments if isinstance(arguments, str) else dumps_str(arguments or {})
            items.append(Item(text=text, tool_name=block.get("name"), call_id=block.get("id")))
    finish = ANTHROPIC_FINISH.get(message.get("stop_reason"), "stop")
    if finish == "refusal":
        items = [Item(refusal="".join(item.text for item in items if item.tool_name is None))]
    usage = message.get("usage") or {}
    return Recorded(tuple(items), finish, usage.get("input_tokens"), usage.get("output_tokens"))


def _anthropic_events(events: list[dict[str, Any]]) -> Recorded:
    blocks: dict[int, dict[str, Any]] = {}
    message: dict[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event.get("message") or {})
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event.get("content_block") or {}) | {"_partial": ""}
        elif kind == "content_block_delta":
            block, delta = blocks.setdefault(event["index"], {"_partial": ""}), event.get("delta") or {}
            block["text"] = block.get("text", "") + (delta.get("text") or "")
            block["_partial"] += delta.get("partial_json") or ""
        elif kind == "message_delta":
            message["stop_reason"] = (event.get("delta") or {}).get("stop_reason")
            message["usage"] = (message.get("usage") or {}) | (event.get("usage") or {})
    content = []
    for _, block in sorted(blocks.items()):
        if block.get("type") == "tool_use":
            block["input"] = block["_partial"] or dumps_str(block.get("input") or {})
        content.append(block)
    return _anthropic(message | {"content": content})
