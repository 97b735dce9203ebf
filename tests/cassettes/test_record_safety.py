"""``bench record`` as a hostile or careless client meets it (issue 42): a credential in a body
is never written, and neither a large request nor a large answer is ever held whole.

The upstream is a fake on loopback that answers what the test scripts (a body, SSE frames, a
generator of many MiB), so each case is exact."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.cassettes import CassetteMiss, Library, RecordingProxy, load_cassettes
from bench.cassettes import record as recording
from bench.provider.server import serve_in_thread
from tests.cassette_recorder import SECRET

BODY_KEY = "sk-body-ANOTHER-KEY-IN-THE-JSON-987654"
CHAT = "/v1/chat/completions"
MIB = 2**20
ANSWER = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "hi"}}]}  # fmt: skip
"""A Chat answer, as the replay reads one."""


class Upstream:
    """An ASGI upstream answering every request with ``chunks`` (bytes, or a generator of them)."""

    def __init__(self, content_type: str, chunks: Iterable[bytes]) -> None:
        self.content_type, self.chunks = content_type, chunks
        self.requests: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(body)
        headers = [(b"content-type", self.content_type.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in self.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


@contextmanager
def proxied(upstream: Upstream, folder: Path) -> Iterator[RecordingProxy]:
    served = serve_in_thread(upstream, "127.0.0.1", 0, "test-upstream")
    try:
        with RecordingProxy(f"http://127.0.0.1:{served.port}", folder) as proxy:
            yield proxy
    finally:
        served.stop()


def written(folder: Path) -> dict[str, Any]:
    [path] = [p for p in folder.iterdir() if p.suffix == ".json"]
    return json.loads(path.read_text(encoding="utf-8"))


def chat_request(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"my key is {SECRET}, keep it"}]} | extra


# --- item 1: a credential in a body ---------------------------------------------------------


def test_a_credential_field_or_auth_value_in_any_body_is_blanked_and_said(tmp_path: Path) -> None:
    """A JSON request with ``api_key`` at the top and a ``client_secret`` deep inside, the
    request's own bearer key inside a message, and a reply that echoes the key and carries an
    ``access_token``: none of them is written; ``max_tokens`` and the rest are kept, the reply's
    other bytes as sent, and the provenance lists each place."""
    reply = ('{"id": "x", "echo": "you said ' + SECRET + '", "session": {"access_token": "at-123"}, '
             '"usage": {"input_tokens": 3, "max_tokens": 5}}')  # fmt: skip
    upstream = Upstream("application/json", [reply.encode()])
    body = chat_request(api_key=BODY_KEY, max_tokens=10, metadata={"nested": [{"client_secret": "cs-1"}]})
    with proxied(upstream, tmp_path) as proxy:
        answer = httpx.post(proxy.base_url + CHAT, json=body, headers={"authorization": f"Bearer {SECRET}"})
    assert answer.text == reply  # the client gets the reply as sent
    assert BODY_KEY.encode() in upstream.requests[0]  # and the upstream the request as sent
    cassette = written(tmp_path)
    text = json.dumps(cassette)
    for secret in (SECRET, BODY_KEY, "cs-1", "at-123"):
        assert secret not in text, secret
    request = cassette["request"]["body"]
    assert request["api_key"] == "[REDACTED]" and request["max_tokens"] == 10
    assert request["messages"][0]["content"] == "my key is [REDACTED], keep it"
    assert cassette["response"]["body"] == reply.replace(SECRET, "[REDACTED]").replace('"at-123"', '"[REDACTED]"')
    assert cassette["provenance"]["blanked"] == [
        "request.body.messages[0].content (the request's auth value)",
        "request.body.api_key",
        "request.body.metadata.nested[0].client_secret",
        "response.body (the request's auth value)",
        "response.body.session.access_token",
    ]


def test_a_stream_frame_form_body_and_query_key_are_blanked_too(tmp_path: Path) -> None:
    """An SSE frame's ``token`` field (not a logprobs entry's ``token``, the model's text), an
    indented JSON reply's ``refresh_token``, a form-encoded reply's ``access_token``, and a key
    sent in the query string (Azure's ``api-key``) then found in the body."""
    frames = [
        b'data: {"token": "tok-abcdef", "logprobs": [{"token": "Hello", "logprob": -0.1}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    with proxied(Upstream("text/event-stream", frames), tmp_path / "sse") as proxy:
        httpx.post(proxy.base_url + CHAT + "?api-key=azure-KEY-0123456", json=chat_request(note="azure-KEY-0123456"))
    cassette = written(tmp_path / "sse")
    events = [event["data"] for event in cassette["response"]["events"]]
    assert events == [
        'data: {"token": "[REDACTED]", "logprobs": [{"token": "Hello", "logprob": -0.1}]}\n\n',
        "data: [DONE]\n\n",
    ]
    assert cassette["request"]["body"]["note"] == "[REDACTED]"
    assert "response.events[0].token" in cassette["provenance"]["blanked"]

    pretty = json.dumps({"data": {"refresh_token": "rt-PRETTY-1", "expires_in": 3600}}, indent=2)
    with proxied(Upstream("application/json; charset=utf-8", [pretty.encode()]), tmp_path / "pretty") as proxy:
        httpx.post(proxy.base_url + CHAT, json=chat_request())
    assert written(tmp_path / "pretty")["response"]["body"] == pretty.replace("rt-PRETTY-1", "[REDACTED]")

    form = [b"access_token=secret-value-1&token_type=bearer&expires_in=3600"]
    with proxied(Upstream("application/x-www-form-urlencoded", form), tmp_path / "form") as proxy:
        httpx.post(proxy.base_url + "/oauth/token", data={"client_secret": "cs-FORM-1", "grant_type": "x"})
    cassette = written(tmp_path / "form")
    assert cassette["response"]["body"] == "access_token=%5BREDACTED%5D&token_type=bearer&expires_in=3600"
    assert "cs-FORM-1" not in json.dumps(cassette)  # a form request body is not written at all
    assert cassette["request"]["body"] is None


def test_a_blanked_request_still_matches_at_replay(tmp_path: Path) -> None:
    """The replay blanks a new request's credential fields as the recording did: the same
    request with another key in its body matches the recorded one."""
    with proxied(Upstream("application/json", [json.dumps(ANSWER).encode()]), tmp_path) as proxy:
        httpx.post(proxy.base_url + CHAT, json=chat_request(api_key=BODY_KEY))
    library = Library(load_cassettes(tmp_path))
    [entry] = library.match("openai-chat", chat_request(api_key="sk-another-key-entirely"), stream=False)
    assert entry.cassette.request.body is not None and entry.cassette.request.body["api_key"] == "[REDACTED]"


# --- item 3: bounded recording --------------------------------------------------------------


def repeated(piece: bytes, chunks: int) -> Iterator[bytes]:
    """``piece`` repeated in chunks of about 64 KiB, ``chunks`` of them (the same object each time:
    the upstream never holds the answer whole)."""
    chunk = piece * (64 * 1024 // len(piece))
    for _ in range(chunks):
        yield chunk


def through(proxy: RecordingProxy, path: str, body: dict[str, Any]) -> tuple[int, int, bytes]:
    """Stream an answer through the proxy, keeping only its size, its status and its last bytes."""
    size, last = 0, b""
    with httpx.stream("POST", proxy.base_url + path, json=body, timeout=120) as answer:
        for chunk in answer.iter_raw():
            size, last = size + len(chunk), (last + chunk)[-64:]
    return answer.status_code, size, last


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_large_answer_streams_through_whole_and_the_cassette_keeps_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """About 48 MiB from the upstream, the limit lowered to 1 MiB: the client gets every byte; the
    cassette holds at most the limit (a stream's frames whole) and the cut note; what Python
    held at its peak stays far below the answer (tracemalloc)."""
    limit, chunks = MIB, 768
    monkeypatch.setattr(recording, "MAX_ANSWER_BYTES", limit)
    piece = b'data: {"delta": "' + b"x" * 1000 + b'"}\n\n' if kind == "sse" else b"y" * 1024
    content_type = "text/event-stream" if kind == "sse" else "application/json"
    sent = chunks * len(next(repeated(piece, 1)))
    assert sent > 45 * MIB
    tracemalloc.start()
    try:
        with proxied(Upstream(content_type, repeated(piece, chunks)), tmp_path) as proxy:
            status, size, last = through(proxy, CHAT, chat_request())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (status, size) == (200, sent) and last == piece[-64:]
    assert peak < 12 * MIB, f"peak {peak:,} bytes"
    [path] = list(tmp_path.iterdir())
    assert path.stat().st_size < limit + 256 * 1024
    response = written(tmp_path)["response"]
    cut = response["cut"]
    assert cut["received_bytes"] == sent and 0 < cut["kept_bytes"] <= limit
    assert f"the client got all {sent:,} bytes" in cut["note"] and cut["note"].endswith("; never replayed")
    if kind == "sse":
        assert all(event["data"] == piece.decode() for event in response["events"])
        kept = sum(len(event["data"]) + recording.FRAME_OVERHEAD for event in response["events"])
        assert kept <= limit and cut["kept_bytes"] == len(piece) * len(response["events"])
    else:
        assert response["body"] == "y" * limit
    with pytest.raises(ValueError, match=r"no recorded answer .*\(1 cut at record, never replayed\)"):
        Library(load_cassettes(tmp_path))


def test_a_cut_answer_is_named_when_a_request_would_match_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay never serves a cut answer as if whole: the miss names the cassette and the cut."""
    monkeypatch.setattr(recording, "MAX_ANSWER_BYTES", 1024)
    with proxied(Upstream("application/json", [json.dumps(ANSWER).encode()]), tmp_path) as proxy:
        httpx.post(proxy.base_url + CHAT, json=chat_request(seq=1))
    with proxied(Upstream("application/json", [b"z" * 4096]), tmp_path) as proxy:
        httpx.post(proxy.base_url + CHAT, json=chat_request(seq=2, tools=[{"type": "function"}]))
    library = Library(load_cassettes(tmp_path))
    with pytest.raises(CassetteMiss, match=r"0001-openai-chat-\w+\.json does, but the answer passed 1,024 bytes"):
        library.match("openai-chat", chat_request(tools=[{"type": "function"}]), stream=False)


def test_a_request_body_past_the_limit_is_refused_unread_and_not_forwarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "MAX_REQUEST_BYTES", 64 * 1024)
    upstream = Upstream("application/json", [b"{}"])
    with proxied(upstream, tmp_path) as proxy:
        answer = httpx.post(proxy.base_url + CHAT, json=chat_request(padding="p" * 100_000))
        small = httpx.post(proxy.base_url + CHAT, json=chat_request())
    assert answer.status_code == 413
    assert answer.json()["error"]["message"] == (
        "bench record: the request body passes 65,536 bytes, the most one cassette records "
        "(docs/record-replay.md#limits); nothing was forwarded"
    )
    assert small.status_code == 200 and len(upstream.requests) == 1  # only the small one reached it
    assert len(list(tmp_path.iterdir())) == 1
