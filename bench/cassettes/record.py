"""``bench record``: a reverse proxy on loopback that forwards to a real provider and writes a
cassette per exchange.

The client talks to the proxy exactly as to the API (JSON and SSE, the three protocols); its own
auth headers are forwarded upstream and never written, nor are their values or a credential
field anywhere in a body (:class:`bench.cassettes.redact.Blanking`). An answer is passed through
as it arrives (a stream frame by frame, so the client sees the upstream's pacing) and recorded
with each frame's time, within bounds: a request body past :data:`MAX_REQUEST_BYTES` is refused
(413, nothing forwarded), and of an answer the cassette keeps at most :data:`MAX_ANSWER_BYTES`,
the rest noted as cut (:class:`bench.cassettes.format.Cut`), never held.
:func:`record_agent` runs a user's own agent (``[[tool.bench.agents]]``) through the proxy on its
declared prompt (``bench record --agent``).
"""

from __future__ import annotations

import asyncio
import codecs
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
    CassetteError,
    Cut,
    Provenance,
    RecordedRequest,
    RecordedResponse,
    StreamEvent,
    write_cassette,
)
from bench.cassettes.match import normalised, protocol_of_path
from bench.cassettes.redact import HOP_BY_HOP, Blanking, Redaction, auth_values
from bench.provider.server import Served, require_loopback, serve_in_thread
from bench.sdk.adapter import AdapterResult, Endpoint

if TYPE_CHECKING:
    from bench.own.adapter import OwnAgentAdapter

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

UPSTREAM_TIMEOUT_S = 600.0
"""How long the proxy waits on the upstream (a long generation is slow, never a stall here)."""
MAX_REQUEST_BYTES = 8 * 2**20
"""The largest request body recorded: 8 MiB (a larger one is refused, 413, nothing forwarded)."""
MAX_ANSWER_BYTES = 8 * 2**20
"""The most of one answer a cassette keeps: 8 MiB (a stream's frames each count
:data:`FRAME_OVERHEAD` more); the client gets the rest, the cassette notes it as cut. With the
request, a cassette stays within what a folder read takes (``MAX_FILE_BYTES``, 32 MiB)."""
FRAME_OVERHEAD = 64
"""What one kept stream frame costs beyond its bytes (its time and its place in the file)."""


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
        self.cut: list[Path] = []
        """The cassettes whose answer was cut (:data:`MAX_ANSWER_BYTES`)."""
        self.unwritten: list[str] = []
        """One line per exchange answered but not written (a cassette past the file limit)."""
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

        raw = await _read_bounded(receive, MAX_REQUEST_BYTES)
        if raw is None:
            message = (f"bench record: the request body passes {MAX_REQUEST_BYTES:,} bytes, the most one cassette "
                       "records (docs/record-replay.md#limits); nothing was forwarded")  # fmt: skip
            await _send_error(send, 413, "request_too_large", message)
            return
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
                message = f"bench record: upstream {self.upstream_origin} unreachable: {error}"
                await _send_error(send, 502, "bad_gateway", message)
                return
            try:
                response = await _relay(upstream, send, started)
            finally:
                await upstream.aclose()
        try:
            self._write(scope, headers, raw, response, wall)
        except CassetteError as error:
            self.unwritten.append(str(error))
        # The reply ends once its cassette is on disk: a client that has its answer finds it there.
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _write(self, scope: Scope, headers: dict[str, str], raw: bytes, response: RecordedResponse, wall: str) -> None:
        protocol = protocol_of_path(scope["path"])
        blanking = Blanking(auth_values(headers, scope.get("query_string", b"").decode("latin-1")))
        body = _parsed(raw)
        if body is not None:
            body = self.redaction.body(blanking.value(body, "request.body"))
        response = self._kept(response, blanking)
        provenance = Provenance(
            source="bench record", upstream=self.upstream_origin, recorded_at=wall, blanked=blanking.said()
        )
        cassette = Cassette(
            protocol=protocol,
            provenance=provenance,
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
        path = write_cassette(self.out, cassette, name)
        self.written.append(path)
        if response.cut is not None:
            self.cut.append(path)

    def _kept(self, response: RecordedResponse, blanking: Blanking) -> RecordedResponse:
        """The response as written: its headers kept, its credentials blanked, the patterns applied."""

        def text(body: str, where: str) -> str:
            return self.redaction.text(blanking.body_text(body, where, response.content_type))

        events = response.events
        return response.model_copy(
            update={
                "headers": self.redaction.kept_headers(response.headers),
                "body": None if response.body is None else text(response.body, "response.body"),
                "events": None
                if events is None
                else [
                    e.model_copy(update={"data": text(e.data, f"response.events[{i}]")}) for i, e in enumerate(events)
                ],
            }
        )


async def _relay(upstream: Any, send: Send, started: float) -> RecordedResponse:
    """Pass the upstream's answer to the client as it arrives (all but the end of the body,
    which the caller sends once the cassette is written); return what the cassette keeps of it."""
    headers = {k.lower(): v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    await send({
        "type": "http.response.start", "status": upstream.status_code,
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
    })  # fmt: skip
    stream = "text/event-stream" in headers.get("content-type", "")
    kept: _Frames | _Body = _Frames(started, MAX_ANSWER_BYTES) if stream else _Body(MAX_ANSWER_BYTES)
    received, first_byte = 0, 0.0
    async for chunk in upstream.aiter_bytes():
        first_byte = first_byte or (time.perf_counter() - started) * 1000
        received += len(chunk)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        kept.feed(chunk)
    duration = (time.perf_counter() - started) * 1000
    recorded = RecordedResponse(
        status=upstream.status_code, headers=headers, first_byte_ms=round(first_byte, 3),
        duration_ms=round(duration, 3), body=kept.finish() if isinstance(kept, _Body) else None,
        events=kept.finish() if isinstance(kept, _Frames) else None,
    )  # fmt: skip
    if kept.cut:
        what = "frames whole" if stream else "bytes"
        note = (f"the answer passed {MAX_ANSWER_BYTES:,} bytes, the most bench record keeps: the client got all "
                f"{received:,} bytes, this cassette its first {kept.kept:,} ({what}); never replayed")  # fmt: skip
        recorded.cut = Cut(kept_bytes=kept.kept, received_bytes=received, note=note)
    return recorded


class _Body:
    """The start of a body the cassette keeps: at most ``limit`` bytes, the rest only noted."""

    def __init__(self, limit: int) -> None:
        self.limit, self.data, self.cut = limit, bytearray(), False

    @property
    def kept(self) -> int:
        return len(self.data)

    def feed(self, chunk: bytes) -> None:
        if self.cut:
            return
        room = self.limit - len(self.data)
        self.data += chunk[:room]
        self.cut = len(chunk) > room

    def finish(self) -> str:
        # a character the cut split is left out, not replaced
        return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.data), final=not self.cut)


class _Frames:
    """Split a byte stream into SSE frames (each ending in its blank line), timing each; keep
    frames whole while they fit in ``limit`` (each costing :data:`FRAME_OVERHEAD` more), then
    hold nothing more: a frame that would pass it, or a partial one that grows past it, cuts."""

    def __init__(self, started: float, limit: int) -> None:
        self.started, self.left = started, limit
        self.buffer, self.events = bytearray(), list[StreamEvent]()
        self.kept, self.cut = 0, False

    def feed(self, chunk: bytes) -> None:
        if self.cut:
            return
        start = max(0, len(self.buffer) - 3)  # a frame's end may straddle the chunks
        self.buffer += chunk
        taken = 0
        while not self.cut:
            ends = [i for i in (self.buffer.find(b"\n\n", start), self.buffer.find(b"\r\n\r\n", start)) if i >= 0]
            if not ends:
                break
            end = min(ends)
            size = 4 if self.buffer[end : end + 4] == b"\r\n\r\n" else 2
            self._keep(bytes(self.buffer[taken : end + size]))
            taken = start = end + size
        del self.buffer[:taken]
        if not self.cut and len(self.buffer) + FRAME_OVERHEAD > self.left:
            self._cut()

    def finish(self) -> list[StreamEvent]:
        if self.buffer and not self.cut:
            self._keep(bytes(self.buffer))
        self.buffer = bytearray()
        return self.events

    def _keep(self, frame: bytes) -> None:
        cost = len(frame) + FRAME_OVERHEAD
        if cost > self.left:
            self._cut()
            return
        at = round((time.perf_counter() - self.started) * 1000, 3)
        self.events.append(StreamEvent(at_ms=at, data=frame.decode("utf-8", "replace")))
        self.left, self.kept = self.left - cost, self.kept + len(frame)

    def _cut(self) -> None:
        self.cut, self.buffer = True, bytearray()


def _parsed(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


async def _read_bounded(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None as soon as it passes ``limit`` bytes (the rest never read)."""
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return bytes(body)


async def _send_error(send: Send, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
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
