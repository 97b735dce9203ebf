"""The provider's ledger: the truth of what was sent and billed, per run.

Every request served is recorded as a frozen :class:`AttemptRecord`. The runner reads these to
count model calls, tell transport retries (the same request body again) from output retries (a
new body carrying the failed answer back) and sum billed tokens. It is an API, not a log.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bench.provider.detect import ToolResultSeen
from bench.provider.source import AnswerSource
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import Task


class IssuedCall(NamedTuple):
    """One tool call a reply made (a parallel turn makes several)."""

    call_id: str
    arguments: str
    """The call's arguments as sent (JSON text)."""
    function: bool
    """A call of one of the agent's own tools (a ``tool_call`` step), not the output tool."""


class AttemptRecord(NamedTuple):
    """One HTTP request the provider served.

    A named tuple, not a dataclass: the ledger keeps one per request for the whole run, and a
    tuple is a third of a frozen dataclass's memory (no per-instance dict) and built in one
    step; recording the ledger was a tenth of a small request's time on the server thread."""

    run_id: str
    attempt: int | None
    """0-based index among this run's model calls; None for auxiliary requests (count_tokens,
    unknown paths) which consume no script step."""
    path: str
    protocol: str | None
    stream: bool
    detected_mode: str | None
    enforcement: str | None
    behaviour: str
    realistic: bool
    status_code: int
    input_tokens: int
    output_tokens: int
    request_bytes: int
    response_bytes: int
    request_sha256: str
    """Hash of the request body: the same hash twice in a row is a transport retry."""
    client_retry_count: int | None
    """The official clients' ``x-stainless-retry-count`` header, when sent."""
    started_at: float
    """Wall-clock start (Unix seconds)."""
    first_byte_ms: float
    duration_ms: float
    request_body: dict[str, Any] | None
    tool_call_id: str | None = None
    """The call id of the (first) tool call this reply made (output tool or harness tool), if any."""
    tool_call_arguments: str | None = None
    """That call's arguments as sent (JSON text)."""
    tool_results: tuple[ToolResultSeen, ...] = ()
    """The tool results this request carried back, in conversation order."""
    response_body: bytes | None = None
    """The bytes served (a stream's events as sent), when the run records bodies."""
    tool_calls: tuple[IssuedCall, ...] = ()
    """Every tool call this reply made, in order: one, or several for a parallel turn."""


MAX_KEPT_BODY_BYTES = 256 << 10
"""The largest request body a bounded ledger keeps (its size and digest are always kept)."""

CLIENT_CLOSED = 499
"""The status of an attempt the client (or the runner, closing the run) gave up on before its
answer ended (nginx's "client closed request"; no real API sends it)."""
HELD_AT_CAP = "call_cap"
"""The ``behaviour`` of the call the provider held because the run's call cap was reached: no
behaviour was served, so it is no model call the SDK got an answer to (bench.run.accounting)."""


def body_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass
class RunState:
    """One run's script and ledger. Each run has its own URL prefix, so concurrent runs never
    share state; the model-call cap lets the runner stop a loop that would never end."""

    run_id: str
    task: Task
    script: Script
    call_cap: int | None = None
    record_bodies: bool = True
    answers: AnswerSource | None = None
    """Where the run's answers come from instead of rendering the script's behaviours (a replay)."""
    attempts: deque[AttemptRecord] = field(default_factory=deque)
    """Every attempt, or the last ``maxlen`` for a bounded (``bench serve``) run."""
    calls_started: int = 0
    """Model calls the provider has begun to answer, a call held at the cap included: the next
    attempt's index. (The ``model_calls`` column counts answered calls: bench.run.accounting.summarise.)"""
    closed: threading.Event = field(default_factory=threading.Event)
    _cap_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(default_factory=list)
    cap_reached: bool = False
    last_progress: float = field(default_factory=time.monotonic)
    """When (``time.monotonic()``) a model call last reached the provider or had its answer
    completed: the runner's stall limit counts from it (bench.run.runner.drive), so a cell that
    keeps calling is never ended by the clock, however loaded the machine."""
    _pending: dict[int, Callable[[int, int, float], None]] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    property_names: frozenset[str] = field(init=False)
    """The task's schema properties, read once per run (``Task.property_names``, built once per
    output model): every request of the run checks its body against them."""

    def __post_init__(self) -> None:
        self.property_names = self.task.property_names

    def in_flight(self, attempt: int, record: Callable[[int, int, float], None]) -> Callable[[int, int, float], None]:
        """Hold ``record`` (status, bytes sent, first byte ms) for a model call being answered,
        inside :meth:`new_call`'s block; returns what the answer calls when it is done.
        Whichever comes first, the answer's end or :meth:`seal`, records the attempt, and only
        once."""
        self._pending[attempt] = record

        def complete(status: int, sent: int, first_byte: float) -> None:
            with self._lock:
                if self._pending.pop(attempt, None) is not None:
                    record(status, sent, first_byte)
                    self.last_progress = time.monotonic()

        return complete

    def seal(self) -> None:
        """Record every model call still being answered, as 499 (the client left: the run is
        closed), so the ledger read after a timeout holds what was sent, every time; before,
        an in-flight request landed only if the server saw the disconnect before the runner
        read the ledger (59 of 146 timed-out cells had no attempt)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            for record in pending.values():
                record(CLIENT_CLOSED, 0, 0.0)

    def keeps_body(self, size: int) -> bool:
        """Whether the ledger keeps a request body of ``size`` bytes: when bodies are recorded,
        except past :data:`MAX_KEPT_BODY_BYTES` in a bounded ledger (which then holds at most
        ``maxlen`` times that)."""
        return self.record_bodies and (self.attempts.maxlen is None or size <= MAX_KEPT_BODY_BYTES)

    @contextmanager
    def new_call(self) -> Iterator[int]:
        """The index of a model call that just reached the provider (progress: ``last_progress``),
        with the run's lock held until the block ends. Inside it the caller holds the call
        (:meth:`in_flight`) or records it, so :meth:`seal`, which takes the same lock, sees every
        counted call: a run closed between counting and holding once lost the call's ledger entry
        (two test processes at a time showed it). The block never awaits."""
        with self._lock:
            index = self.calls_started
            self.calls_started += 1
            self.last_progress = time.monotonic()
            yield index

    def over_cap(self, attempt: int) -> bool:
        return self.call_cap is not None and attempt >= self.call_cap

    def signal_cap(self) -> None:
        """Wake whoever waits on :meth:`cap_future` (from the provider's thread)."""
        self.cap_reached = True
        for loop, future in self._cap_waiters:
            loop.call_soon_threadsafe(_resolve, future)

    def cap_future(self) -> asyncio.Future[None]:
        """A future, on the caller's loop, that resolves when the call cap is hit."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._cap_waiters.append((loop, future))
        if self.cap_reached:
            future.set_result(None)
        return future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
