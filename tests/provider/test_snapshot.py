"""Every reply the provider can render fits its protocol's declared snapshot
(bench/provider/snapshot.py), and so does every recording behind the declaration
(tests/fixtures/recordings/recordings.json): a field from another date fails on either side.

Replies go through the real provider over loopback (raw httpx); shapes only, not values.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from bench.core.vocabulary import Protocol
from bench.provider import LocalProvider
from bench.provider.snapshot import CHAT, SNAPSHOTS, Snapshot, fields_since, problems
from tests.paths import FIXTURES

RECORDINGS = FIXTURES / "recordings"

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age", "email"],
    "additionalProperties": False,
}
TOOL = {"type": "function", "function": {"name": "final_result", "parameters": SCHEMA, "strict": True}}
REQUESTS: dict[Protocol, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # protocol: (path, structured-answer request, output-tool request)
    Protocol.CHAT: (
        "/v1/chat/completions",
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Extract the person"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True},
            },
        },
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Extract the person"}], "tools": [TOOL]},
    ),
    Protocol.RESPONSES: (
        "/v1/responses",
        {
            "model": "gpt-4o-mini",
            "input": "Extract the person",
            "text": {"format": {"type": "json_schema", "name": "Person", "schema": SCHEMA, "strict": True}},
        },
        {
            "model": "gpt-4o-mini",
            "input": "Extract the person",
            "tool_choice": "required",
            "tools": [{"type": "function", "name": "final_result", "parameters": SCHEMA, "strict": True}],
        },
    ),
    Protocol.ANTHROPIC: (
        "/v1/messages",
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Extract the person"}],
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        },
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Extract the person"}],
            "tools": [{"name": "final_result", "input_schema": SCHEMA}],
        },
    ),
}
BODY_SHAPE = {Protocol.CHAT: "chat.completion", Protocol.RESPONSES: "response", Protocol.ANTHROPIC: "message"}
EVENT_SHAPE = {Protocol.CHAT: "chat.completion.chunk", Protocol.RESPONSES: "event", Protocol.ANTHROPIC: "event"}

KINDS: dict[str, tuple[Any, bool]] = {
    # behaviour kind: (scripted behaviour, answered through the output tool)
    "structured_answer": ("valid", False),
    "tool_call": ("valid", True),
    "refusal": ("refusal", False),
    "length_stop": ("truncated", False),
    "length_stop_in_tool_call": ("truncated", True),
    "prose": ("prose", False),
}
STREAM_OPTIONS = {
    "stream_with_usage": {"include_usage": True},
    "stream_without_usage": {},
    "stream_without_obfuscation": {"include_usage": True, "include_obfuscation": False},
}


def frames(text: str) -> list[Any]:
    """The ``data:`` payloads of an SSE body, ``[DONE]`` left out."""
    found = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            found.append(json.loads(line[5:]))
    return found


def serve(provider: LocalProvider, behaviour: Any, path: str, body: dict[str, Any]) -> httpx.Response:
    with provider.open_script("person", [behaviour]) as run:
        return httpx.post(f"{run.endpoint.root}{path}", json=body, timeout=10)


def reply_problems(snapshot: Snapshot, response: httpx.Response, stream: bool) -> list[str]:
    if not stream or response.status_code != 200:
        shape = BODY_SHAPE[snapshot.protocol] if response.status_code == 200 else "error"
        return problems(response.json(), snapshot.shapes[shape])
    return [
        p for frame in frames(response.text) for p in problems(frame, snapshot.shapes[EVENT_SHAPE[snapshot.protocol]])
    ]


CASES = [
    pytest.param(protocol, kind, stream, id=f"{protocol.value}-{kind}-{stream or 'json'}")
    for protocol in Protocol
    for kind in KINDS
    for stream in (None, *(STREAM_OPTIONS if protocol is not Protocol.ANTHROPIC else ["stream_with_usage"]))
]


@pytest.mark.parametrize(("protocol", "kind", "stream"), CASES)
def test_every_reply_fits_the_declared_snapshot(
    provider: LocalProvider, protocol: Protocol, kind: str, stream: str | None
) -> None:
    behaviour, through_tool = KINDS[kind]
    path, structured, tool = REQUESTS[protocol]
    body = dict(tool if through_tool else structured)
    if stream is not None:
        body["stream"] = True
        if protocol is not Protocol.ANTHROPIC:
            body["stream_options"] = STREAM_OPTIONS[stream]
    response = serve(provider, behaviour, path, body)
    assert response.status_code == 200
    assert reply_problems(SNAPSHOTS[protocol], response, stream is not None) == []


@pytest.mark.parametrize("status", [400, 429, 500, 503, 529])
@pytest.mark.parametrize("protocol", list(Protocol), ids=lambda p: p.value)
def test_every_error_body_fits_the_declared_snapshot(provider: LocalProvider, protocol: Protocol, status: int) -> None:
    path, structured, _ = REQUESTS[protocol]
    for stream in (False, True):
        response = serve(provider, {"http_error": status}, path, {**structured, "stream": stream})
        assert response.status_code == status
        assert problems(response.json(), SNAPSHOTS[protocol].shapes["error"]) == []


def test_stream_options_decide_usage_and_obfuscation_on_every_chunk(provider: LocalProvider) -> None:
    """``usage: null`` on every chunk only when usage was asked for; ``obfuscation`` unless turned
    off (the client's ``stream_options`` documentation, and the 2026-07 recordings)."""
    path, structured, _ = REQUESTS[Protocol.CHAT]
    for options, usage, padded in (
        ({"include_usage": True}, True, True),
        ({}, False, True),
        ({"include_usage": True, "include_obfuscation": False}, True, False),
    ):
        chunks = frames(serve(provider, "valid", path, {**structured, "stream": True, "stream_options": options}).text)
        assert all(("usage" in c) == usage for c in chunks)
        assert not usage or all(c["usage"] is None for c in chunks if c["choices"])
        assert all(("obfuscation" in c) == padded for c in chunks)


def test_every_chunk_draws_its_own_obfuscation_pad(provider: LocalProvider) -> None:
    """A new pad on every chunk, as in the 2026-07-02 recordings (11 chunks, 11 different
    pads), its length evening out the delta's: not one pad repeated through the stream."""
    recorded = frames((RECORDINGS / "openai_chat_2026-07-02_stream_text_usage.sse").read_text(encoding="utf-8"))
    assert len({c["obfuscation"] for c in recorded}) == len(recorded) > 2
    path, structured, _ = REQUESTS[Protocol.CHAT]
    body = {**structured, "stream": True, "stream_options": {"include_usage": True}}
    chunks = frames(serve(provider, "valid", path, body).text)
    pads = [c["obfuscation"] for c in chunks]
    assert len(chunks) > 5 and len(set(pads)) == len(pads)
    assert all(re.fullmatch(r"[0-9A-Za-z]{4,16}", pad) for pad in pads)
    for chunk in chunks[1:-2]:  # the text deltas: the shorter the text, the longer the pad
        assert len(chunk["obfuscation"]) == max(4, 16 - len(chunk["choices"][0]["delta"]["content"]))


def test_a_repeated_body_keeps_obfuscation_off_when_bodies_are_not_recorded() -> None:
    """Without body recording, a Chat body whose shape is cached is not parsed again: what the
    stream options ask must come from the cached shape, not from an empty body (the second
    request used to get ``obfuscation`` on every chunk)."""
    path, structured, _ = REQUESTS[Protocol.CHAT]
    options = {"include_usage": True, "include_obfuscation": False}
    body = {**structured, "stream": True, "stream_options": options, "user": "repeat-obfuscation-off"}
    with LocalProvider(record_bodies=False) as quiet, quiet.open_script("person", ["valid"]) as run:
        for _ in range(2):
            response = httpx.post(f"{run.endpoint.root}{path}", json=body, timeout=10)
            chunks = frames(response.text)
            assert chunks and not any("obfuscation" in c for c in chunks)


def test_responses_service_tier_is_auto_until_done_and_billing_is_json_only(provider: LocalProvider) -> None:
    path, structured, _ = REQUESTS[Protocol.RESPONSES]
    events = frames(serve(provider, "valid", path, {**structured, "stream": True}).text)
    tiers = {e["type"]: e["response"]["service_tier"] for e in events if "response" in e}
    assert tiers == {"response.created": "auto", "response.in_progress": "auto", "response.completed": "default"}
    assert not any("billing" in e.get("response", {}) for e in events)
    body = serve(provider, "valid", path, structured).json()
    assert (body["service_tier"], body["billing"]) == ("default", {"payer": "developer"})


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r.update(moderation=None), "$.moderation: not in the snapshot"),
        (lambda r: r.pop("service_tier"), "$.service_tier: missing"),
        (lambda r: r["choices"][0]["message"].pop("annotations"), "$.choices[0].message.annotations: missing"),
        (lambda r: r["usage"].pop("prompt_tokens_details"), "$.usage.prompt_tokens_details: missing"),
        (lambda r: r["usage"]["completion_tokens_details"].pop("audio_tokens"), "audio_tokens: missing"),
    ],
    ids=["a newer field", "service_tier dropped", "annotations dropped", "prompt details dropped", "a detail dropped"],
)
def test_a_field_from_another_date_fails_the_check(provider: LocalProvider, mutate: Any, expected: str) -> None:
    path, structured, _ = REQUESTS[Protocol.CHAT]
    reply = serve(provider, "valid", path, structured).json()
    assert problems(reply, CHAT.shapes["chat.completion"]) == []
    mutate(reply)
    assert any(expected in p for p in problems(reply, CHAT.shapes["chat.completion"]))


# --- the recordings behind the declaration --------------------------------------------------------

_MANIFEST = json.loads((RECORDINGS / "recordings.json").read_text())
MANIFEST, GAPS = _MANIFEST["recordings"], _MANIFEST["gaps"]
PROTOCOLS = {"openai_chat": Protocol.CHAT, "openai_responses": Protocol.RESPONSES, "anthropic": Protocol.ANTHROPIC}


def recorded_replies(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """(shape name, reply) for every reply a recording file holds, whatever its layout."""
    protocol = PROTOCOLS[entry["protocol"]]
    path = RECORDINGS / entry["file"]
    text = path.read_text()
    if path.suffix == ".sse":
        return [(EVENT_SHAPE[protocol], f) for f in frames(text)]
    if path.suffix == ".jsonl":
        return [(EVENT_SHAPE[protocol], json.loads(line)) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    if "error" in entry["covers"]:
        names = entry.get("entries") or [k for k in data if not k.startswith("_")]
        entries = [data] if "body" in data else [data[name] for name in names]
        bodies = [e["body"] for e in entries if "body" in e] or entries  # bodies, or quoted bare replies
        return [("error", b) for b in bodies]
    if isinstance(data, list):  # cassette interactions
        return [(BODY_SHAPE[protocol], item["response_body"]) for item in data]
    if "response" in data:
        data = data["response"]["body"]
    return [(BODY_SHAPE[protocol], data)]


def tolerated(problem: str, snapshot: Snapshot, entry: dict[str, Any]) -> bool:
    """A difference a recording may show: a field the snapshot leaves out on purpose (named in
    ``left_out``), a field first recorded after this recording's date, or one a FIXTURE omits."""
    names = set(snapshot.left_out) | fields_since(snapshot.protocol, entry["recorded"])
    if entry["kind"] == "FIXTURE" and problem.endswith("missing (the snapshot has it in every reply of this shape)"):
        return True
    return any(f".{name}:" in problem or f"'{name}'" in problem for name in names)


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"].rsplit("/", 1)[-1])
def test_recordings_fit_the_declared_snapshot(entry: dict[str, Any]) -> None:
    snapshot = SNAPSHOTS[PROTOCOLS[entry["protocol"]]]
    replies = recorded_replies(entry)
    assert replies, f"{entry['file']}: no reply found"
    found = [p for shape, reply in replies for p in problems(reply, snapshot.shapes[shape])]
    assert [p for p in found if not tolerated(p, snapshot, entry)] == []


def test_every_recording_file_has_its_provenance() -> None:
    listed = {e["file"] for e in MANIFEST}
    on_disk = {p.name for p in RECORDINGS.iterdir() if p.name not in ("recordings.json", "README.md")}
    assert on_disk <= listed, f"recordings without provenance: {sorted(on_disk - listed)}"
    for entry in MANIFEST:
        assert (RECORDINGS / entry["file"]).is_file(), entry["file"]
        assert {"protocol", "covers", "kind", "recorded", "repo", "path"} <= set(entry), entry["file"]
        if not entry["file"].startswith("../"):
            assert len(entry["commit"]) == 40, entry["file"]


def test_each_protocol_has_a_recording_of_each_reply_kind() -> None:
    """Answer, tool call, refusal, length stop, stream with usage and error bodies, per protocol
    (issue 19's list); what no recording covers is a named gap, and a gap a recording fills fails."""
    for name in PROTOCOLS:
        covered = {kind for e in MANIFEST if e["protocol"] == name for kind in e["covers"]}
        gaps = {g["covers"] for g in GAPS if g["protocol"] == name}
        assert not covered & gaps, f"{name}: a listed gap is covered now: {covered & gaps}"
        assert {"answer", "tool_call", "refusal", "length", "stream_usage", "error"} <= covered | gaps, name


ORDER_ARGS = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
PARALLEL = {
    "two_calls": {"parallel": [{"tool_call": {"order_id": "ORD-1042"}}, {"tool_call": {"order": "ORD-1042"}}]},
    "call_and_answer": {"parallel": [{"tool_call": {"order_id": "ORD-1042"}}, "valid"]},
}


def parallel_request(protocol: Protocol, output_tool: bool) -> dict[str, Any]:
    """A request with the agent's own tool (and the output tool): where a parallel turn lands."""
    names = ["lookup_order", *(["final_result"] if output_tool else [])]
    prompt = "Where is my order ORD-1042?"
    if protocol is Protocol.CHAT:
        tools = [{"type": "function", "function": {"name": n, "parameters": ORDER_ARGS}} for n in names]
        return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}], "tools": tools}
    if protocol is Protocol.RESPONSES:
        tools = [{"type": "function", "name": n, "parameters": ORDER_ARGS} for n in names]
        return {"model": "gpt-4o-mini", "input": prompt, "tools": tools}
    tools = [{"name": n, "input_schema": ORDER_ARGS} for n in names]
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": prompt}],
        "tools": tools,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("output_tool", [False, True], ids=["text_answer", "output_tool"])
@pytest.mark.parametrize("turn", list(PARALLEL))
@pytest.mark.parametrize("protocol", list(Protocol), ids=lambda p: p.value)
def test_parallel_turns_fit_the_declared_snapshot(
    provider: LocalProvider, protocol: Protocol, turn: str, output_tool: bool, stream: bool
) -> None:
    """Several calls in one reply (issue 19 point 4) are replies too: the same field lists."""
    body = parallel_request(protocol, output_tool)
    if stream:
        body = {**body, "stream": True}
        if protocol is Protocol.CHAT:
            body["stream_options"] = {"include_usage": True}
    with provider.open_script("order_lookup", [PARALLEL[turn]]) as run:
        response = httpx.post(f"{run.endpoint.root}{REQUESTS[protocol][0]}", json=body, timeout=10)
    assert response.status_code == 200
    assert "lookup_order" in response.text  # the turn's function call is in the reply
    assert reply_problems(SNAPSHOTS[protocol], response, stream) == []
