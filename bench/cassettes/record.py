"""``bench record``: a reverse proxy on loopback that forwards to a real provider and writes a
cassette per exchange.

The client talks to the proxy exactly as to the API (JSON and SSE, the three protocols); its own
auth headers are forwarded upstream and never written. A stream is passed through frame by frame
as it arrives (so the client sees the upstream's pacing) and recorded with each frame's time.
:func:`record_agent` runs a user's own agent (``[[tool.bench.agents]]``) through the proxy on its
declared prompt (``bench record --agent``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bench.cassettes.format import (
    Cassette,
    Provenance,
    RecordedRequest,
    RecordedResponse,
    StreamEvent,
    write_cassette,
)
from bench.cassettes.match import normalised, protocol_of_path
from bench.cassettes.redact import HOP_BY_HOP, Redaction
from bench.provider.server import Served, require_loopback, serve_in_thread
from bench.sdk.adapter import AdapterResult, Endpoint

if TYPE_CHECKING:
    from bench.own.adapter import OwnAgentAdapter

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

UPSTREAM_TIMEOUT_S = 600.0
"""How long the proxy waits on the upstream (a long generation is slow, never a stall here)."""


class RecordingProxy:
    """The recording reverse proxy (an ASGI app), served on ``host:port`` by :meth:`start`."""

    def __init__(
        self, upstream: str, out: Path, redaction: Redaction | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream {upstream!r}: expected http(s)://HOST[:PORT][/PREFIX]")
        if parts.username or parts.password or parts.query:
            raise ValueError(f"--upstream {upstream!r}: give no credentials or query in the URL")
        require_loopback(host)
        self.upstream = upstream.rstrip("/")
        self.upstream_origin = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        self.out, self.redaction = out, redaction or Redaction()
        self.host, self.port = host, port
        self.written: list[Path] = []
        self._lock = threading.Lock()
        self._next = sum(1 for _ in out.glob("*.json")) if out.is_dir() else 0
        self._served: Served | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> RecordingProxy:
        self._served = serve_in_thread(self, self.host, self.port, "misfit-record")
        self.port = self._served.port
        return self

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        import httpx

        raw = await _read_all(receive)
        started, wall = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        forwarded = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        query = scope.get("query_string", b"").decode()
        url = self.upstream + scope["path"] + (f"?{query}" if query else "")
        # A client per exchange: nothing outlives a request, whichever loop serves it.
        async with httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_S) as client:
            request = client.build_request(scope["method"], url, headers=forwarded, content=raw)
            try:
                upstream = await client.send(request, stream=True)
            except httpx.HTTPError as error:
                await _send_bad_gateway(send, f"bench record: upstream {self.upstream_origin} unreachable: {error}")
                return
            try:
                response = await _relay(upstream, send, started)
            finally:
                await upstream.aclose()
        self._write(scope, headers, raw, response, wall)
        # The reply ends once its cassette is on disk: a client that has its answer finds it there.
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _write(self, scope: Scope, headers: dict[str, str], raw: bytes, response: RecordedResponse, wall: str) -> None:
        protocol = protocol_of_path(scope["path"])
        body = _parsed(raw)
        if body is not None:
            body = self.redaction.body(body)
        response = response.model_copy(
            update={
                "headers": self.redaction.kept_headers(response.headers),
                "body": None if response.body is None else self.redaction.text(response.body),
                "events": None
                if response.events is None
                else [e.model_copy(update={"data": self.redaction.text(e.data)}) for e in response.events],
            }
        )
        cassette = Cassette(
            protocol=protocol,
            provenance=Provenance(source="bench record", upstream=self.upstream_origin, recorded_at=wall),
            request=RecordedRequest(
                method=scope["method"], path=scope["path"], headers=self.redaction.kept_headers(headers), body=body
            ),
            response=response,
        )
        key = json.dumps(normalised(protocol, body or {}), sort_keys=True) if protocol else scope["path"]
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        with self._lock:
            index, self._next = self._next, self._next + 1
        name = f"{index:04d}-{protocol or 'other'}-{digest}.json"
        self.written.append(write_cassette(self.out, cassette, name))


async def _relay(upstream: Any, send: Send, started: float) -> RecordedResponse:
    """Pass the upstream's answer to the client as it arrives (all but the end of the body,
    which the caller sends once the cassette is written); return it as recorded."""
    headers = {k.lower(): v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    await send({
        "type": "http.response.start", "status": upstream.status_code,
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
    })  # fmt: skip
    stream = "text/event-stream" in headers.get("content-type", "")
    frames = _Frames(started)
    body, first_byte = bytearray(), 0.0
    async for chunk in upstream.aiter_bytes():
        first_byte = first_byte or (time.perf_counter() - started) * 1000
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if stream:
            frames.feed(chunk)
        else:
            body += chunk
    duration = (time.perf_counter() - started) * 1000
    return RecordedResponse(
        status=upstream.status_code, headers=headers, first_byte_ms=round(first_byte, 3),
        duration_ms=round(duration, 3), body=None if stream else body.decode("utf-8", "replace"),
        events=frames.finish() if stream else None,
    )  # fmt: skip


class _Frames:
    """Split a byte stream into SSE frames (each ending in its blank line), timing each."""

    def __init__(self, started: float) -> None:
        self.started, self.buffer, self.events = started, b"", list[StreamEvent]()

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while True:
            ends = [i for i in (self.buffer.find(b"\n\n"), self.buffer.find(b"\r\n\r\n")) if i >= 0]
            if not ends:
                return
            end = min(ends)
            size = 4 if self.buffer[end : end + 4] == b"\r\n\r\n" else 2
            self._emit(self.buffer[: end + size])
            self.buffer = self.buffer[end + size :]

    def finish(self) -> list[StreamEvent]:
        if self.buffer:
            self._emit(self.buffer)
            self.buffer = b""
        return self.events

    def _emit(self, frame: bytes) -> None:
        at = round((time.perf_counter() - self.started) * 1000, 3)
        self.events.append(StreamEvent(at_ms=at, data=frame.decode("utf-8", "replace")))


def _parsed(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


async def _read_all(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _send_bad_gateway(send: Send, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "bad_gateway", "param": None, "code": None}}).encode()
    await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


KEY_VARIABLES = {"anthropic-messages": "ANTHROPIC_API_KEY"}
"""The environment variable holding the user's key, by protocol (OpenAI's otherwise)."""


def key_variable(adapter: OwnAgentAdapter) -> str:
    [cell] = adapter.cells()
    return KEY_VARIABLES.get(str(cell.protocol), "OPENAI_API_KEY")


def record_agent(adapter: OwnAgentAdapter, proxy: RecordingProxy, api_key: str) -> AdapterResult:
    """Run a user's agent once on its declared prompt, its model pointed at the proxy (its own
    model name and settings kept, as ``bench run --agent`` does), with the user's key."""
    [cell] = adapter.cells()
    endpoint = Endpoint(root=proxy.base_url, api_key=api_key)
    return asyncio.run(adapter.run(cell, adapter.task, endpoint))
