"""The provider as a plain ASGI app.

Plain ASGI (no framework) because this sits on the hot path of every cell: a request is one
dict lookup for the run, one detection, one render. Routes:

- ``POST /runs/<run_id>/v1/chat/completions`` | ``/v1/responses`` | ``/v1/messages``
  (``?beta=true`` accepted) | ``/v1/messages/count_tokens``; the same under ``/v1/...`` for
  the run called ``default`` (what ``bench serve`` scripts);
- ``POST /runs`` opens a run from JSON, ``GET /runs/<run_id>/ledger`` returns its attempts,
  ``DELETE /runs/<run_id>`` closes it; ``GET /health``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from bench.core.tokens import count_json_tokens
from bench.core.vocabulary import Protocol
from bench.provider import anthropic_messages, openai_chat, openai_responses
from bench.provider.answer import Answer, render
from bench.provider.detect import RequestShape, detect
from bench.provider.interface import WireProtocol
from bench.provider.ledger import HELD_AT_CAP, AttemptRecord, IssuedCall, RunState, body_digest
from bench.provider.source import Sourced, Verbatim
from bench.provider.wire import UNSEEDED, ErrorReply, IdSource, Usage, dumps
from bench.scenarios.tasks import Task

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

ENDPOINTS: dict[str, Protocol | str] = {
    "/v1/chat/completions": Protocol.CHAT,
    "/v1/responses": Protocol.RESPONSES,
    "/v1/messages": Protocol.ANTHROPIC,
    "/v1/messages/count_tokens": "count_tokens",
}
PROMPT_FIELDS: dict[Protocol, tuple[str, ...]] = {
    Protocol.CHAT: ("messages", "tools", "tool_choice", "response_format"),
    Protocol.RESPONSES: ("instructions", "input", "tools", "tool_choice", "text"),
    Protocol.ANTHROPIC: ("system", "messages", "tools", "tool_choice", "output_config", "output_format"),
}
DEFAULT_RUN = "default"

WIRES: dict[Protocol, WireProtocol] = {
    Protocol.CHAT: openai_chat,
    Protocol.RESPONSES: openai_responses,
    Protocol.ANTHROPIC: anthropic_messages,
}
"""Each protocol's implementation of :class:`bench.provider.interface.WireProtocol`."""


def input_tokens(protocol: Protocol, body: dict[str, Any]) -> int:
    """Billed prompt tokens: the BPE count of every prompt-bearing field of the request."""
    return count_json_tokens({key: body[key] for key in PROMPT_FIELDS[protocol] if key in body})


# What a request body implies depends on its bytes alone, and the same body comes back often
# (every cell of one SDK x mode x variant opens with the same request; a transport retry resends
# it), so its ledger digest, token count and detected shape are remembered under the body itself:
# counting was the largest cost of a request, and hashing each body with SHA-256 just to look it
# up cost more than the lookup. No cache can change a figure; this one is emptied when it holds
# too many bodies or too many of their bytes.
_CACHE_MAX = 4096
_BODY_BYTES_MAX = 64 << 20


@dataclass(slots=True)
class BodyFacts:
    """What one distinct request body implies, computed once."""

    digest: str
    """The ledger's ``body_digest``."""
    tokens: dict[Protocol, int] = field(default_factory=dict)
    shapes: dict[tuple[Protocol, frozenset[str]], RequestShape] = field(default_factory=dict)


_BODIES: dict[bytes, BodyFacts] = {}
_body_bytes = 0


def facts_of(raw: bytes) -> BodyFacts:
    global _body_bytes
    facts = _BODIES.get(raw)
    if facts is None:
        if len(_BODIES) >= _CACHE_MAX or _body_bytes + len(raw) > _BODY_BYTES_MAX:
            _BODIES.clear()
            _body_bytes = 0
        facts = _BODIES[raw] = BodyFacts(body_digest(raw))
        _body_bytes += len(raw)
    return facts


def input_tokens_of(protocol: Protocol, facts: BodyFacts, body: dict[str, Any]) -> int:
    """:func:`input_tokens` of ``body``, whose raw bytes ``facts`` describes."""
    tokens = facts.tokens.get(protocol)
    if tokens is None:
        tokens = facts.tokens[protocol] = input_tokens(protocol, body)
    return tokens


def shape_of(protocol: Protocol, facts: BodyFacts, body: dict[str, Any], properties: frozenset[str]) -> RequestShape:
    """:func:`detect` for ``body`` (described by ``facts``); a body it rejects is not remembered."""
    key = (protocol, properties)
    shape = facts.shapes.get(key)
    if shape is None:
        shape = facts.shapes[key] = detect(protocol, body, properties)
    return shape


_ANSWERS: dict[tuple[int, int, int], tuple[Any, RequestShape, Task, Answer]] = {}


def answer_for(behaviour: Any, shape: RequestShape, task: Task, remember: bool) -> Answer:
    """:func:`render`, remembered for a scripted behaviour: a script repeats the same behaviour
    object, and rendering is a pure function of (behaviour, shape, task). Entries are keyed by
    identity and hold their behaviour and task, so an id is never reused while its entry lives.
    Stochastic draws are new objects every attempt: ``remember=False`` skips them."""
    if not remember:
        return render(behaviour, shape, task)
    key = (id(behaviour), id(shape), id(task))  # shapes come from shape_of's cache: the same object
    hit = _ANSWERS.get(key)
    if hit is not None and hit[0] is behaviour and hit[1] is shape and hit[2] is task:
        return hit[3]
    answer = render(behaviour, shape, task)
    if len(_ANSWERS) >= _CACHE_MAX:
        _ANSWERS.clear()
    _ANSWERS[key] = (behaviour, shape, task, answer)
    return answer


class ProviderApp:
    """ASGI callable holding the runs. ``open_run``/``close_run`` may be called from any
    thread; requests are served on the server's own event loop."""

    def __init__(self) -> None:
        self.runs: dict[str, RunState] = {}
        self.admin: Callable[[str, str, bytes], tuple[int, Any] | None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        body = await _read_body(receive, scope)
        if body is None:
            reply = too_large(path)
            await _send_json(send, reply.status, reply.body, reply.headers)
            return
        run_id, protocol = _route(path)
        if protocol is None or method != "POST":
            await self._admin_or_404(scope, send, method, path, body)
            return
        run = self.runs.get(run_id or DEFAULT_RUN)
        if run is None:
            reply = _not_found(path, method, f"unknown run {run_id or DEFAULT_RUN!r}")
            await _send_json(send, reply.status, reply.body, reply.headers)
            return
        if protocol == "count_tokens":
            await self._count_tokens(run, scope, send, body)
            return
        assert isinstance(protocol, Protocol)
        await self._model_call(run, protocol, scope, receive, send, body)

    async def _admin_or_404(self, scope: Scope, send: Send, method: str, path: str, body: bytes) -> None:
        if self.admin is not None:
            handled = self.admin(method, path, body)
            if handled is not None:
                status, payload = handled
                await _send_json(send, status, payload, {})
                return
        reply = _not_found(path, method, None)
        await _send_json(send, reply.status, reply.body, reply.headers)

    async def _count_tokens(self, run: RunState, scope: Scope, send: Send, raw: bytes) -> None:
        started, wall = time.perf_counter(), time.time()
        body = _parse(raw)
        tokens = input_tokens_of(Protocol.ANTHROPIC, facts_of(raw), body) if body is not None else 0
        payload = anthropic_messages.count_tokens_reply(tokens)
        headers = anthropic_messages.success_headers(reply_ids(run, f"count_tokens:{len(run.attempts)}"))
        sent = await _send_json(send, 200, payload, headers)
        self._record(
            run, attempt=None, scope=scope, raw=raw, body=body, protocol=None, shape=None, behaviour="count_tokens",
            status=200, tokens_in=tokens, sent=sent, started=started, wall=wall,
        )  # fmt: skip

    async def _refuse(
        self, run: RunState, protocol: Protocol, scope: Scope, send: Send, raw: bytes, started: float, wall: float,
        behaviour: str, message: str, body: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """The API's 400 for a request it cannot read, recorded with no attempt number: no script
        step is taken for it."""
        reply = WIRES[protocol].bad_request(message)
        sent = await _send_json(send, reply.status, reply.body, reply.headers)
        self._record(
            run, attempt=None, scope=scope, raw=raw, body=body, protocol=protocol, shape=None,
            behaviour=behaviour, status=400, sent=sent, started=started, wall=wall,
        )  # fmt: skip

    async def _model_call(
        self, run: RunState, protocol: Protocol, scope: Scope, receive: Receive, send: Send, raw: bytes
    ) -> None:
        started, wall = time.perf_counter(), time.time()
        facts = facts_of(raw)
        # A body seen before has its shape and token count remembered: parsing it again was a
        # tenth of a small request's time, so it is parsed only when something needs it. A Chat
        # reply then renders against {}: whatever it reads of the request must be on the shape.
        shape = facts.shapes.get((protocol, run.property_names))
        needs_body = shape is None or run.record_bodies or protocol is not Protocol.CHAT or run.answers is not None
        body = _parse(raw) if needs_body or protocol not in facts.tokens else {}
        where = (run, protocol, scope, send, raw, started, wall)
        if body is None:
            return await self._refuse(*where, "invalid_json", "We could not parse the JSON body of your request.")
        try:
            shape = shape or shape_of(protocol, facts, body, run.property_names)
        except (AttributeError, TypeError, ValueError):
            # A field of the wrong type (tools: "x"): the real APIs reject such a request.
            return await self._refuse(*where, "invalid_request", "Invalid request: a field has the wrong type.", body)
        with run.new_call() as attempt:  # counted and held (or recorded) under the run's lock
            if run.over_cap(attempt):
                self._record(
                    run, attempt=attempt, scope=scope, raw=raw, body=body, protocol=protocol, shape=shape,
                    behaviour=HELD_AT_CAP, status=0, sent=0, started=started, wall=wall,
                )  # fmt: skip
                respond = None
            else:
                respond = self._answer(
                    run, attempt, protocol, scope, receive, send, raw, body, shape, facts, started, wall
                )
        if respond is not None:
            await respond
            return
        run.signal_cap()
        await _hold_until_closed(run, receive)
        # Answer even a client that left, so the server never sees a response-less request.
        reason = f"run {run.run_id!r} was closed at its call cap"
        reply = _not_found(scope["path"], "POST", reason, reply_ids(run, attempt))
        await _send_json(send, reply.status, reply.body, reply.headers)

    def _answer(
        self, run: RunState, attempt: int, protocol: Protocol, scope: Scope, receive: Receive, send: Send,
        raw: bytes, body: dict[str, Any], shape: RequestShape, facts: BodyFacts, started: float, wall: float,
    ) -> Coroutine[Any, Any, None]:  # fmt: skip
        """Draw model call ``attempt``'s answer and hold it in the ledger (``in_flight``), then
        hand back the coroutine that sends it: everything before the first await, so
        :meth:`RunState.new_call`'s block holds no await."""
        behaviour = run.script.behaviour_for(attempt)
        if run.answers is None:
            sourced = Sourced(answer_for(behaviour, shape, run.task, run.script.stochastic is None))
        else:
            sourced = run.answers.answer(behaviour, shape, body, run.task)
        answer = sourced.answer
        # A request the API rejects (4xx/5xx) is not billed, as with the real providers.
        billed_in = input_tokens_of(protocol, facts, body) if sourced.input_tokens is None else sourced.input_tokens
        billed_out = answer.output_tokens if sourced.output_tokens is None else sourced.output_tokens
        usage = Usage(0, 0) if answer.error else Usage(billed_in, billed_out)
        # Drawn here, not by the renderer, so the ledger knows which call ids the model issued;
        # the reply's other ids come after them, from the same source.
        calls = () if answer.error else answer.calls
        ids = reply_ids(run, attempt)
        if sourced.verbatim:
            call_ids = sourced.call_ids
        else:
            call_ids = answer.issue_ids(partial(WIRES[protocol].new_call_id, ids)) if calls else ()
        issued = tuple(
            IssuedCall(call_id, call.text, call.behaviour.startswith("tool_call"))
            for call, call_id in zip(calls, call_ids, strict=True)
        )

        served: list[bytes] | None = [] if run.record_bodies else None

        def record(status: int, sent: int, first_byte: float) -> None:
            self._record(
                run, attempt=attempt, scope=scope, raw=raw, body=body, protocol=protocol, shape=shape,
                behaviour=answer.behaviour, realistic=answer.realistic, status=status,
                tokens_in=usage.input_tokens, tokens_out=usage.output_tokens, sent=sent, started=started,
                wall=wall, first_byte=first_byte, digest=facts.digest, issued=issued,
                response=_kept_response(run, served),
            )  # fmt: skip

        complete = run.in_flight(attempt, record)
        if sourced.verbatim is not None:
            return _respond_verbatim(sourced.verbatim, answer, receive, send, started, complete, served)
        return _respond(answer, shape, usage, body, receive, send, started, complete, call_ids, ids, served)

    def _record(
        self, run: RunState, *, attempt: int | None, scope: Scope, raw: bytes, body: dict[str, Any] | None,
        protocol: Protocol | None, shape: RequestShape | None, behaviour: str, realistic: bool = True,
        status: int, tokens_in: int = 0, tokens_out: int = 0, sent: int, started: float, wall: float,
        first_byte: float = 0.0, digest: str | None = None, issued: tuple[IssuedCall, ...] = (),
        response: bytes | None = None,
    ) -> None:  # fmt: skip
        """Append the attempt; ``digest`` is the body's :func:`body_digest` when the caller has it.

        Built positionally, in :class:`AttemptRecord`'s field order: keyword construction of a
        24-field named tuple was a visible share of a small request's time."""
        run.attempts.append(
            _new_record(
                (
                    run.run_id,
                    attempt,
                    scope["path"],
                    *(shape.ledger_columns if shape else (str(protocol) if protocol else None, False, None, None)),
                    behaviour,
                    realistic,
                    status,
                    tokens_in,
                    tokens_out,
                    len(raw),
                    sent,
                    body_digest(raw) if digest is None else digest,
                    _retry_count(scope),
                    wall,
                    first_byte,
                    (time.perf_counter() - started) * 1000,
                    body if run.keeps_body(len(raw)) else None,
                    issued[0].call_id if issued else None,
                    issued[0].arguments if issued else None,
                    shape.tool_results if shape else (),
                    response,
                    issued,
                )
            )
        )


def _kept_response(run: RunState, served: list[bytes] | None) -> bytes | None:
    """The bytes served, under the same rule as request bodies (``RunState.keeps_body``)."""
    if not served:
        return None
    response = b"".join(served)
    return response if run.keeps_body(len(response)) else None


def _new_record(values: tuple[Any, ...]) -> AttemptRecord:
    return tuple.__new__(AttemptRecord, values)


def attempts_as_dicts(run: RunState) -> list[dict[str, Any]]:
    return [
        record._asdict()
        | {
            "tool_results": [asdict(result) for result in record.tool_results],
            "tool_calls": [call._asdict() for call in record.tool_calls],
            "response_body": record.response_body.decode("utf-8", "replace") if record.response_body else None,
        }
        for record in run.attempts
    ]


Complete = Callable[[int, int, float], None]


async def _respond(
    answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], receive: Receive, send: Send,
    started: float, complete: Complete, call_ids: tuple[str, ...], ids: IdSource, served: list[bytes] | None = None,
) -> None:  # fmt: skip
    """Send the answer, its ids drawn from ``ids``. The ledger entry is written (``complete``)
    just before the last byte leaves, so a client that has its answer always finds its attempt in
    the ledger; ``served`` (when the run records bodies) collects the bytes sent, for the ledger."""
    if answer.delay_s and await _sleep_unless_disconnected(receive, answer.delay_s):
        complete(499, 0, 0.0)
        return
    first_byte = (time.perf_counter() - started) * 1000
    if answer.error is not None:
        reply = WIRES[shape.protocol].error_reply(answer.error, ids)
        await _transmit(
            send, receive, reply.status, [dumps(reply.body)], reply.headers, JSON, 0.0, first_byte, complete, served
        )
        return
    wire = WIRES[shape.protocol]
    if shape.stream:
        frames = wire.render_events(answer, shape, usage, body, call_ids, ids)
        headers = {"cache-control": "no-cache", **wire.success_headers(ids)}
        await _transmit(
            send, receive, 200, frames, headers, SSE, answer.stall_mid_stream_s, first_byte, complete, served
        )
        return
    payload = wire.render_body(answer, shape, usage, body, call_ids, ids)
    await _transmit(
        send, receive, 200, [payload], wire.success_headers(ids), JSON, answer.stall_mid_stream_s, first_byte,
        complete, served,
    )  # fmt: skip


async def _respond_verbatim(
    reply: Verbatim, answer: Answer, receive: Receive, send: Send, started: float, complete: Complete,
    served: list[bytes] | None,
) -> None:  # fmt: skip
    """Send a reply byte for byte as an answer source gave it (a recorded answer or error)."""
    if answer.delay_s and await _sleep_unless_disconnected(receive, answer.delay_s):
        complete(499, 0, 0.0)
        return
    first_byte = (time.perf_counter() - started) * 1000
    await _transmit(
        send, receive, reply.status, list(reply.chunks), reply.headers, reply.content_type.encode(),
        answer.stall_mid_stream_s, first_byte, complete, served,
    )  # fmt: skip


def reply_ids(run: RunState, attempt: int | str) -> IdSource:
    """The ids of the reply to ``attempt`` of ``run``: a function of the cell's seed (its script's
    ``unit_seed``, bench.run.plan.CellPlan.unit_seed: the run's seed, scenario and rep) and the
    attempt, so the same cell bills the same tokens run after run (the ids travel back in later
    requests: bench.provider.wire.IdSource)."""
    return IdSource(run.script.unit_seed, attempt)


def _not_found(path: str, method: str, reason: str | None, ids: IdSource = UNSEEDED) -> ErrorReply:
    if "/messages" in path:
        return anthropic_messages.not_found(method, path, reason, ids)
    return openai_chat.not_found(method, path, reason, ids)


_ROUTES: dict[str, tuple[str | None, Protocol | str | None]] = {}


def _route(path: str) -> tuple[str | None, Protocol | str | None]:
    """(run id, endpoint's protocol) of ``path``, remembered: every request of a run has the same
    path (emptied when full, like the body caches)."""
    route = _ROUTES.get(path)
    if route is None:
        run_id, endpoint = _split(path)
        route = (run_id, ENDPOINTS.get(endpoint) if endpoint else None)
        if len(_ROUTES) >= _CACHE_MAX:
            _ROUTES.clear()
        _ROUTES[path] = route
    return route


def _split(path: str) -> tuple[str | None, str | None]:
    """``/runs/<id>/v1/...`` -> (id, ``/v1/...``); ``/v1/...`` -> (None, ``/v1/...``)."""
    if path.startswith("/v1/"):
        return None, path
    if path.startswith("/runs/"):
        run_id, _, rest = path[len("/runs/") :].partition("/")
        if rest.startswith("v1/"):
            return run_id, "/" + rest
    return None, None


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _retry_count(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"x-stainless-retry-count":
            try:
                return int(value)
            except ValueError:
                return None
    return None


MAX_BODY_BYTES = 32_000_000
"""The real APIs' request size limit (Anthropic: 32 MB for Messages and Token Counting,
answered 413 ``request_too_large`` before the API sees it); bigger bodies are refused unread,
or as soon as they pass it, so four 100 MB bodies no longer cost 1.5 GB."""


async def _read_body(receive: Receive, scope: Scope) -> bytes | None:
    """The request body, or None past :data:`MAX_BODY_BYTES` (declared or received)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
            return None
    message = await receive()
    if not message.get("more_body"):
        return message.get("body", b"")
    chunks, size = [message.get("body", b"")], len(message.get("body", b""))
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def too_large(path: str, limit: int = MAX_BODY_BYTES) -> ErrorReply:
    """413 as each API answers it: Anthropic's documented ``request_too_large`` error, and the
    OpenAI error envelope (OpenAI documents no size limit; its edge answers 413 too)."""
    message = f"Request exceeds the maximum size ({limit:,} bytes)."
    if "/messages" in path:
        return ErrorReply(413, {}, {"type": "error", "error": {"type": "request_too_large", "message": message}})
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "request_too_large"}}
    return ErrorReply(413, {}, body)


def _headers(extra: dict[str, str], content_type: bytes) -> list[tuple[bytes, bytes]]:
    if not extra:  # uvicorn copies the list it is given, so one list serves every reply
        return _CONTENT_TYPE_ONLY[content_type]
    return [(b"content-type", content_type), *((k.encode(), v.encode()) for k, v in extra.items())]


async def _send_json(send: Send, status: int, payload: Any, headers: dict[str, str]) -> int:
    data = dumps(payload)
    await send({"type": "http.response.start", "status": status, "headers": _headers(headers, JSON)})
    await send({"type": "http.response.body", "body": data})
    return len(data)


JSON = b"application/json"
SSE = b"text/event-stream; charset=utf-8"
_CONTENT_TYPE_ONLY = {content_type: [(b"content-type", content_type)] for content_type in (JSON, SSE)}


async def _transmit(
    send: Send, receive: Receive, status: int, chunks: list[bytes], headers: dict[str, str], content_type: bytes,
    stall_s: float, first_byte: float, complete: Complete, served: list[bytes] | None = None,
) -> None:  # fmt: skip
    """Send ``chunks`` as one response; with ``stall_s``, stop half-way (for a single JSON
    body: after the headers) for that long, as a stalled upstream does."""
    await send({"type": "http.response.start", "status": status, "headers": _headers(headers, content_type)})
    if len(chunks) == 1 and not stall_s:  # most replies: one JSON body
        if served is not None:
            served.append(chunks[0])
        complete(status, len(chunks[0]), first_byte)
        await send({"type": "http.response.body", "body": chunks[0], "more_body": False})
        return
    stall_at = len(chunks) // 2 if stall_s else -1
    sent = 0
    for index, chunk in enumerate(chunks):
        if index == stall_at and await _sleep_unless_disconnected(receive, stall_s):
            if served is not None:
                served.extend(chunks[:index])
            complete(status, sent, first_byte)
            return
        last = index == len(chunks) - 1
        if last:
            if served is not None:
                served.extend(chunks)
            complete(status, sent + len(chunk), first_byte)
        await send({"type": "http.response.body", "body": chunk, "more_body": not last})
        sent += len(chunk)


async def _sleep_unless_disconnected(receive: Receive, seconds: float) -> bool:
    """Sleep, but give up as soon as the client hangs up; True if it did."""
    watcher = asyncio.ensure_future(receive())
    try:
        done, _ = await asyncio.wait({watcher}, timeout=seconds)
        return bool(done) and watcher.result().get("type") == "http.disconnect"
    finally:
        watcher.cancel()


async def _hold_until_closed(run: RunState, receive: Receive) -> bool:
    """Past the call cap: answer nothing until the runner closes the run (True) or the client
    leaves (False). The runner, not the provider, decides the cell is a runaway."""
    while not run.closed.is_set():
        if await _sleep_unless_disconnected(receive, 0.05):
            return False
    return True
