"""Ledger accounting: what one cell sent and was billed, counted from the provider's ledger.

The provider's ledger is the truth of what crossed the wire; this module turns it into the
counts a runs row reports (model calls, the retry layers, billed tokens, the wire mode). It
decides nothing about the outcome (bench.run.classify does) and never looks inside an SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from bench.provider.ledger import HELD_AT_CAP, AttemptRecord
from bench.run.toolcalls import ToolSummary


@dataclass(frozen=True, kw_only=True)
class LedgerSummary:
    model_calls: int
    """Model calls the provider answered (a call held at the cap is not one): the ``model_calls``
    column."""
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


def answered_calls(attempts: list[AttemptRecord]) -> list[AttemptRecord]:
    """The model calls the provider answered: not auxiliary requests (``count_tokens``), not the
    call held at the cap."""
    return [a for a in attempts if a.attempt is not None and a.behaviour != HELD_AT_CAP]


def summarise(attempts: list[AttemptRecord], explained_calls: int = 0) -> LedgerSummary:
    """Counts from the ledger. A transport retry is the same request body sent again after a
    failed HTTP response (the clients' own retry on 429/5xx); every other further model call is
    an output retry, including an identical re-ask after a 200 (a framework retry that does not
    carry the failed answer back is still the framework's retry, paid on the token bill), except
    ``explained_calls``: calls made by design (see :func:`explained_calls`)."""
    calls = answered_calls(attempts)
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


def explained_calls(planned_calls: int, tools: ToolSummary | None) -> int:
    """Further model calls that are not output retries: the ones the adapter's composition makes
    by design, plus those that carried a tool result back (a retry of the tool, or a normal
    turn after it; bench.run.toolcalls counts them)."""
    return planned_calls + (tools.tool_retries + tools.tool_round_trips if tools else 0)


def first_time_right_calls(planned_calls: int, tools: ToolSummary | None) -> int:
    """The model calls a run that got everything right the first time takes: one, plus each
    planned call and each successful tool round trip. More than this and a correct answer was
    ``recovered``, not ``ok``."""
    return 1 + planned_calls + (tools.tool_round_trips if tools else 0)
