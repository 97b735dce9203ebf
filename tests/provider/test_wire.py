"""Fidelity against real traffic: for each recorded response or stream in
tests/fixtures/wire-samples/ (real recordings, provenance in its README), the provider's
rendering of the same behaviour has the same structure (the same keys and JSON types at every
level) and the same event sequence. Values differ.

Requests go through the real provider over loopback (raw httpx, so nothing is normalised by a
client on the way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.core.vocabulary import Protocol
from bench.provider import LocalProvider
from bench.provider.snapshot import fields_since

# Keys a recording has that depend on request features the fake model never sees (a stored
# conversation, built-in tools) or that only some API versions send; each is documented.
OPTIONAL_KEYS = {
    "conversation",  # Responses: present only when the request names a conversation
    "tool_usage",  # Responses: built-in tool accounting (image_gen, web_search)
    "obfuscation",  # Responses deltas: sent unless stream_options.include_obfuscation=false
    "caller",  # Anthropic tool_use: present on newer API versions
    "cache_write_tokens",  # Responses usage: newer API versions
    "context",  # Responses reasoning config: newer API versions
}


NEWER_THAN_SAMPLES = set().union(*(fields_since(protocol, "2024-09") for protocol in Protocol))
"""Fields of the declared snapshot (bench/provider/snapshot.py) that the API added after the
oldest samples here: the provider sends them, a sample older than the field cannot have them.
tests/provider/test_snapshot.py holds every reply to the snapshot's own date."""


def structure(value: Any) -> Any:
    """The JSON type tree of ``value``: dict keys kept, lists reduced to their first item."""
    if isinstance(value, dict):
        return {key: structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [structure(value[0])] if value else []
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


# Keys whose values are the task's data (tool arguments, schemas), not protocol structure.
DATA_KEYS = {"input", "schema", "parameters", "input_schema"}

# Top-level Response fields the API added after mid-2025 (present in the 2026 recordings);
# popped from ours when comparing against an older recording.
NEWER_RESPONSE_FIELDS = (
    "completed_at", "frequency_penalty", "max_tool_calls", "moderation", "presence_penalty",
    "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "top_logprobs",
)  # fmt: skip


def drop_newer_response_fields(frame: Any, recorded: Any) -> None:
    """Make an older recording comparable: drop from ``frame`` (our response or event) the
    fields that post-date the recording, i.e. that ``recorded`` does not have."""
    ours_response = frame.get("response", frame)
    recorded_response = recorded.get("response", recorded)
    for field in (*NEWER_RESPONSE_FIELDS, "verbosity"):
        if field not in recorded_response and field not in (recorded_response.get("text") or {}):
            ours_response.pop(field, None)
            if isinstance(ours_response.get("text"), dict):
                ours_response["text"].pop(field, None)


def assert_same_structure(ours: Any, recorded: Any, where: str = "$", allow_extra: bool = False) -> None:
    """Same keys and JSON types at every level. ``allow_extra`` is for hand-made FIXTURE
    samples, which leave out fields the real API sends."""
    if isinstance(recorded, dict):
        assert isinstance(ours, dict), f"{where}: expected an object, got {ours!r}"
        if where.rsplit(".", 1)[-1] in DATA_KEYS:
            return
        missing = set(recorded) - set(ours) - OPTIONAL_KEYS
        extra = set(ours) - set(recorded) - OPTIONAL_KEYS - NEWER_THAN_SAMPLES
        assert not missing, f"{where}: keys the real API sends but the provider does not: {sorted(missing)}"
        assert allow_extra or not extra, f"{where}: keys the provider sends but the real API does not: {sorted(extra)}"
        for key in set(recorded) & set(ours):
            assert_same_structure(ours[key], recorded[key], f"{where}.{key}", allow_extra)
    elif isinstance(recorded, list):
        assert isinstance(ours, list), f"{where}: expected a list, got {ours!r}"
        if recorded and ours:
            assert_same_structure(ours[0], recorded[0], f"{where}[0]", allow_extra)
    elif recorded != "null" and ours != "null":
        assert ours == recorded, f"{where}: JSON type {ours} where the real API sends {recorded}"


def parse_sse(text: str) -> list[tuple[str | None, Any]]:
    """(event name, data) per frame; ``[DONE]`` kept as a string."""
    frames = []
    for block in text.strip().split("\n\n"):
        event, data = None, None
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                payload = line[5:].strip()
                data = payload if payload == "[DONE]" else json.loads(payload)
        if data is not None:
            frames.append((event, data))
    return frames


def sample_json(samples: Path, name: str) -> Any:
    return json.loads((samples / name).read_text())


def serve(provider: LocalProvider, behaviour: Any, path: str, body: dict[str, Any], **query: str) -> httpx.Response:
    with provider.open_script("person", [behaviour]) as run:
        url = f"{run.endpoint.root}{path}"
        return httpx.post(url, json=body, params=query or None, timeout=10)


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age", "email"],
    "additionalProperties": False,
}
CHAT_NATIVE = {
    "model": "gpt-4o-2024-08-06",
    "messages": [{"role": "user", "content": "Extract the person"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True}},
}
CHAT_TOOL = {
    "model": "gpt-4o-2024-08-06",
    "messages": [{"role": "user", "content": "Extract the person"}],
    "tools": [{"type": "function", "function": {"name": "final_result", "parameters": SCHEMA, "strict": True}}],
}
RESPONSES_PROMPTED = {
    "model": "gpt-4.1",
    "input": "Extract the person",
    "instructions": "Follow the user instructions exactly.",
}
RESPONSES_TOOL = {
    "model": "gpt-5",
    "input": "Extract the person",
    "tool_choice": "required",
    "tools": [{"type": "function", "name": "final_result", "parameters": SCHEMA, "strict": True}],
}
ANTHROPIC_NATIVE = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "Extract the person"}],
    "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
}
ANTHROPIC_TOOL = {
    "model": "claude-haiku-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "Extract the person"}],
    "tools": [{"name": "final_result", "input_schema": SCHEMA}],
}

NON_STREAMED = [
    ("openai_chat_json_schema_ok.json", "valid", "/v1/chat/completions", CHAT_NATIVE, None),
    ("openai_chat_refusal.json", "refusal", "/v1/chat/completions", CHAT_NATIVE, None),
    ("openai_chat_length_truncation.json", "truncated", "/v1/chat/completions", CHAT_NATIVE, None),
    ("openai_chat_strict_tool_call.json", "valid", "/v1/chat/completions", CHAT_TOOL, None),
    (
        "anthropic_beta_structured_output_nonstream.json",
        "valid",
        "/v1/messages",
        ANTHROPIC_NATIVE,
        ("response", "body"),
    ),
    ("anthropic_tool_use_nonstream.json", "valid", "/v1/messages", ANTHROPIC_TOOL, ("response", "body")),
]


@pytest.mark.parametrize(("sample", "behaviour", "path", "body", "inside"), NON_STREAMED, ids=lambda v: str(v)[:40])
def test_non_streamed_structure_matches_recording(
    provider: LocalProvider, wire_samples: Path, sample: str, behaviour: str, path: str, body: dict, inside: Any
) -> None:
    recorded = sample_json(wire_samples, sample)
    for key in inside or ():
        recorded = recorded[key]
    response = serve(provider, behaviour, path, body)
    assert response.status_code == 200
    assert_same_structure(structure(response.json()), structure(recorded))


@pytest.mark.parametrize("interaction", [0, 1], ids=["function_call", "json_schema_message"])
def test_responses_non_streamed_matches_recording(
    provider: LocalProvider, wire_samples: Path, interaction: int
) -> None:
    recorded = sample_json(wire_samples, "openai_responses_json_schema_nonstream.json")[interaction]
    request = dict(recorded["request_body"])
    if interaction == 0:  # the recording called a business tool; make it the output tool
        request["tools"] = [{**request["tools"][0], "name": "final_result"}]
    response = serve(provider, "valid", "/v1/responses", request)
    ours = structure(response.json())
    drop_newer_response_fields(ours, recorded["response_body"])  # recorded 2025-06
    if interaction == 1:
        ours["output"][0]["content"][0].pop("logprobs")
    assert_same_structure(ours, structure(recorded["response_body"]))


def frame_kinds_chat(frames: list[tuple[str | None, Any]]) -> list[str]:
    kinds: list[str] = []
    for event, data in frames:
        assert event is None, "Chat Completions frames have no event: line"
        if data == "[DONE]":
            kind = "done"
        elif not data["choices"]:
            kind = "usage"
        else:
            choice = data["choices"][0]
            delta = choice["delta"]
            kind = "finish" if choice["finish_reason"] else "role" if "role" in delta else "+".join(sorted(delta))
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    return kinds


CHAT_STREAMS = [
    ("openai_chat_stream_json_schema_content.sse", "valid", CHAT_NATIVE),
    ("openai_chat_stream_refusal.sse", "refusal", CHAT_NATIVE),
    ("openai_chat_stream_length_truncation.sse", "truncated", CHAT_NATIVE),
    ("openai_chat_stream_strict_tool_call.sse", "valid", CHAT_TOOL),
]


@pytest.mark.parametrize(("sample", "behaviour", "body"), CHAT_STREAMS, ids=lambda v: str(v)[:40])
def test_chat_stream_matches_recording(
    provider: LocalProvider, wire_samples: Path, sample: str, behaviour: str, body: dict
) -> None:
    recorded = parse_sse((wire_samples / sample).read_text())
    request = {**body, "stream": True, "stream_options": {"include_usage": True}}
    response = serve(provider, behaviour, "/v1/chat/completions", request)
    ours = parse_sse(response.text)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert frame_kinds_chat(ours) == frame_kinds_chat(recorded)
    by_kind_ours = {kind: data for kind, (_, data) in zip(_kinds_each(ours), ours, strict=True)}
    by_kind_recorded = {kind: data for kind, (_, data) in zip(_kinds_each(recorded), recorded, strict=True)}
    for kind, data in by_kind_recorded.items():
        if kind != "done":
            assert_same_structure(structure(by_kind_ours[kind]), structure(data), f"${kind}")


def _kinds_each(frames: list[tuple[str | None, Any]]) -> list[str]:
    return [frame_kinds_chat([frame])[0] for frame in frames]


def event_names(frames: list[tuple[str | None, Any]], collapse: bool = True) -> list[str]:
    names: list[str] = []
    for event, data in frames:
        assert event == data["type"], "every frame's event: line equals data.type"
        if not collapse or not names or names[-1] != event:
            names.append(event)
    return names


def _without(frames: list[tuple[str | None, Any]], item_type: str) -> list[tuple[str | None, Any]]:
    return [f for f in frames if f[1].get("item", {}).get("type") != item_type]


@pytest.mark.parametrize(
    ("sample", "body"),
    [
        ("openai_responses_stream_text.sse", RESPONSES_PROMPTED),
        ("openai_responses_stream_function_call.sse", RESPONSES_TOOL),
    ],
)
def test_responses_stream_matches_recording(
    provider: LocalProvider, wire_samples: Path, sample: str, body: dict
) -> None:
    # The gpt-5 recording starts with a reasoning item; the fake model is not a reasoning
    # model, so that item is left out of the comparison (its events are self-contained).
    recorded = _without(parse_sse((wire_samples / sample).read_text()), "reasoning")
    ours = parse_sse(serve(provider, "valid", "/v1/responses", {**body, "stream": True}).text)
    assert event_names(ours) == event_names(recorded)
    assert [data["sequence_number"] for _, data in ours] == list(range(len(ours)))
    recorded_by_type = {data["type"]: _strip_reasoning(data) for _, data in recorded}
    for _, data in ours:
        ours_structure = structure(_strip_reasoning(data))
        expected_structure = structure(recorded_by_type[data["type"]])
        drop_newer_response_fields(ours_structure, expected_structure)
        assert_same_structure(ours_structure, expected_structure, f"${data['type']}")


def _strip_reasoning(event: dict[str, Any]) -> dict[str, Any]:
    event = {key: value for key, value in event.items() if key != "output_index"}  # shifted by it
    if "response" in event:
        response = dict(event["response"])
        response["output"] = [item for item in response["output"] if item.get("type") != "reasoning"]
        event["response"] = response
    return event


def test_responses_truncation_terminal_event_matches_recording(provider: LocalProvider, wire_samples: Path) -> None:
    ((event, recorded),) = parse_sse(
        (wire_samples / "openai_responses_stream_incomplete_max_output_tokens.terminal_event.sse").read_text()
    )
    ours = parse_sse(serve(provider, "truncated", "/v1/responses", {**RESPONSES_PROMPTED, "stream": True}).text)
    terminal = [
        data
        for name, data in ours
        if name.startswith("response.") and name in ("response.completed", "response.incomplete")
    ]
    assert [data["type"] for data in terminal] == [event] == ["response.incomplete"]
    assert terminal[0]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert terminal[0]["response"]["output"][0]["status"] == "incomplete"
    assert_same_structure(structure(terminal[0]), structure(recorded))


ANTHROPIC_STREAMS = [
    ("anthropic_stream_structured_output_json_schema.sse", "valid", ANTHROPIC_NATIVE),
    ("anthropic_stream_tool_use_input_json_delta.sse", "valid", ANTHROPIC_TOOL),
]


@pytest.mark.parametrize(("sample", "behaviour", "body"), ANTHROPIC_STREAMS, ids=lambda v: str(v)[:40])
def test_anthropic_stream_matches_recording(
    provider: LocalProvider, wire_samples: Path, sample: str, behaviour: str, body: dict
) -> None:
    recorded = parse_sse((wire_samples / sample).read_text())
    ours = parse_sse(serve(provider, behaviour, "/v1/messages", {**body, "stream": True}).text)
    assert "[DONE]" not in (data for _, data in ours)
    assert [n for n in event_names(ours) if n != "ping"] == [n for n in event_names(recorded) if n != "ping"]
    recorded_by_type: dict[str, Any] = {}
    for _, data in recorded:
        recorded_by_type.setdefault(data["type"], data)
    fixture = "FIXTURE" in sample
    for _, data in ours:
        if data["type"] == "ping" and "ping" not in recorded_by_type:
            continue  # pings are optional keep-alives
        expected = structure(recorded_by_type[data["type"]])
        assert_same_structure(structure(data), expected, f"${data['type']}", allow_extra=fixture)
    if behaviour == "valid" and "tool" in sample:
        first_delta = next(d for _, d in ours if d["type"] == "content_block_delta")
        assert first_delta["delta"] == {"type": "input_json_delta", "partial_json": ""}


def test_anthropic_refusal_streams_no_content_block(provider: LocalProvider, wire_samples: Path) -> None:
    """A refusal is ``message_start > message_delta > message_stop``: the real recordings of
    issue 19 (captured 2024-11..2026-09) have no content block and no ping. The vendored sample is
    the anthropic SDK's hand-written test fixture (synthetic ids), whose empty text block the
    provider used to copy; only its ``message_delta`` (``stop_details`` with a named category) is
    compared."""
    recorded = {data["type"]: data for _, data in parse_sse(
        (wire_samples / "anthropic_stream_refusal_stop_details.FIXTURE.sse").read_text()
    )}  # fmt: skip
    ours = parse_sse(serve(provider, "refusal", "/v1/messages", {**ANTHROPIC_NATIVE, "stream": True}).text)
    assert event_names(ours) == ["message_start", "message_delta", "message_stop"]
    assert ours[0][1]["message"]["content"] == []
    delta = ours[1][1]
    assert_same_structure(structure(delta), structure(recorded["message_delta"]), "$message_delta", allow_extra=True)
    assert delta["delta"]["stop_details"]["category"] == recorded["message_delta"]["delta"]["stop_details"]["category"]


def test_anthropic_truncated_tool_stream_ends_like_the_recording(provider: LocalProvider, wire_samples: Path) -> None:
    recorded = parse_sse((wire_samples / "anthropic_stream_max_tokens_mid_tool_use.FIXTURE.sse").read_text())
    ours = parse_sse(serve(provider, "truncated", "/v1/messages", {**ANTHROPIC_TOOL, "stream": True}).text)
    assert next(d for _, d in ours if d["type"] == "message_delta")["delta"]["stop_reason"] == "max_tokens"
    assert event_names(ours)[-2:] == event_names(recorded)[-2:] == ["message_delta", "message_stop"]


ERROR_SAMPLES = [
    ("openai_error_bodies.json", ("rate_limited_429", "body"), 429, "/v1/chat/completions"),
    ("openai_error_bodies.json", ("server_error_500_commonly_quoted", "body"), 500, "/v1/chat/completions"),
    ("openai_error_bodies.json", ("invalid_schema_400_chat_completions_2024", "body"), 400, "/v1/chat/completions"),
    ("openai_responses_error_bodies.json", ("invalid_type_400",), 400, "/v1/responses"),
    ("anthropic_429_rate_limit_error.json", ("body",), 429, "/v1/messages"),
    ("anthropic_400_invalid_request_error.json", ("body",), 400, "/v1/messages"),
    ("anthropic_error_bodies.json", ("grammar_too_large_400", "body"), 400, "/v1/messages"),
]


@pytest.mark.parametrize(("sample", "keys", "status", "path"), ERROR_SAMPLES, ids=lambda v: str(v)[:30])
def test_error_bodies_match_recordings(
    provider: LocalProvider, wire_samples: Path, sample: str, keys: tuple[str, ...], status: int, path: str
) -> None:
    recorded = sample_json(wire_samples, sample)
    for key in keys:
        recorded = recorded[key]
    body = ANTHROPIC_NATIVE if "messages" in path else CHAT_NATIVE
    response = serve(provider, {"http_error": status}, path, body)
    assert response.status_code == status
    assert_same_structure(structure(response.json()), structure(recorded))


def test_anthropic_overloaded_529_matches_documented_shape(provider: LocalProvider, wire_samples: Path) -> None:
    documented = sample_json(wire_samples, "anthropic_error_bodies.json")["overloaded_529"]["body"]
    response = serve(provider, {"http_error": 529}, "/v1/messages", ANTHROPIC_NATIVE)
    assert response.status_code == 529
    assert response.json()["error"] == documented["error"]
    assert response.headers["x-should-retry"] == "true"


@pytest.mark.parametrize(("status", "should_retry"), [(400, "false"), (429, "true")])
def test_anthropic_errors_carry_x_should_retry_like_the_recordings(
    provider: LocalProvider, wire_samples: Path, status: int, should_retry: str
) -> None:
    name = "anthropic_400_invalid_request_error.json" if status == 400 else "anthropic_429_rate_limit_error.json"
    assert sample_json(wire_samples, name)["headers"]["x-should-retry"] == should_retry
    response = serve(provider, {"http_error": status}, "/v1/messages", ANTHROPIC_NATIVE)
    assert response.headers["x-should-retry"] == should_retry
    assert response.headers["request-id"].startswith("req_")
