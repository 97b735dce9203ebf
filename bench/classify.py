"""Where a cell's failure ended up: one outcome from docs/design.md per cell.

The adapter reports what reached the caller; the provider's ledger says what was sent and
billed; the task's semantic check judges the returned object. This module only combines them:
it never looks inside an SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from bench.adapter import AdapterResult
from bench.provider.ledger import AttemptRecord
from bench.tasks import Task
from bench.vocabulary import Outcome


@dataclass(frozen=True)
class LedgerSummary:
    model_calls: int
    output_retries: int
    transport_retries: int
    input_tokens_billed: int
    output_tokens_billed: int
    detected_mode: str | None
    realistic: bool | None
    client_retries: int = 0
    """Requests the official client itself marked as a retry (``x-stainless-retry-count`` > 0):
    the transport layer. ``transport_retries - client_retries`` are re-sends by the framework."""
    retry_wait_ms: float = 0.0
    """Time between each failed HTTP response and the request that followed it: the backoff."""


def summarise(attempts: list[AttemptRecord], explained_calls: int = 0) -> LedgerSummary:
    """Counts from the ledger. A transport retry is the same request body sent again after a
    failed HTTP response (the clients' own retry on 429/5xx); every other further model call is
    an output retry, including an identical re-ask after a 200 (a framework retry that does not
    carry the failed answer back is still the framework's retry, paid on the token bill), except
    ``explained_calls``: calls that carried tool results back (counted by bench.toolcalls)."""
    calls = [a for a in attempts if a.attempt is not None and a.behaviour != "call_cap"]
    transport = sum(
        1
        for prev, cur in pairwise(calls)
        if cur.request_sha256 == prev.request_sha256 and not 200 <= prev.status_code < 300
    )
    modes = sorted({a.detected_mode for a in calls if a.detected_mode})
    waits = [
        (cur.started_at - prev.started_at) * 1000 - prev.duration_ms
        for prev, cur in pairwise(calls)
        if not 200 <= prev.status_code < 300
    ]
    return LedgerSummary(
        model_calls=len(calls),
        output_retries=max(0, len(calls) - 1 - transport - explained_calls),
        transport_retries=transport,
        client_retries=sum(1 for a in calls if a.client_retry_count),
        retry_wait_ms=round(sum(max(0.0, wait) for wait in waits), 1),
        input_tokens_billed=sum(a.input_tokens for a in attempts),
        output_tokens_billed=sum(a.output_tokens for a in attempts),
        detected_mode="+".join(modes) or None,
        realistic=all(a.realistic for a in calls) if calls else None,
    )


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    returned_valid: bool | None
    returned_correct: bool | None
    exception_type: str | None = None
    exception_message: str | None = None


def qualified_name(error: BaseException) -> str:
    """``module.Class`` of the exception; for one raised in a release worker, the name it had
    there (``RemoteError.remote_type``)."""
    remote = getattr(error, "remote_type", None)
    if isinstance(remote, str):
        return remote
    kind = type(error)
    return f"{kind.__module__}.{kind.__qualname__}"


def classify(result: AdapterResult, task: Task, model_calls: int, expected_calls: int = 1) -> Verdict:
    """The outcome of a cell the SDK finished (runaway, timeout and harness errors are decided
    by the runner before this is called). ``expected_calls`` is what a first-time-right run
    takes: 1, plus one per successful tool round trip and per call the adapter planned."""
    valid, correct = task.judge(result.output) if result.output is not None else (False, False)
    if result.exception is not None:
        message = str(result.exception)[:2000]
        return Verdict(Outcome.RAISED, valid, correct, qualified_name(result.exception), message)
    if result.fallback:
        return Verdict(Outcome.FALLBACK, valid, correct)
    if correct:
        return Verdict(Outcome.OK if model_calls <= expected_calls else Outcome.RECOVERED, True, True)
    if valid:
        return Verdict(Outcome.WRONG, True, False)
    return Verdict(Outcome.EMPTY, False, False)
