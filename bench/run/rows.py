"""A finished cell as ``columns``-shaped rows: the one mapping from what the runner learned to
the runs and attempts tables.

Every row is checked against its schema as it is built (:func:`bench.results.columns.check_row`):
``pa.Table.from_pylist(rows, schema=...)`` would silently drop a misspelled key and fill its
column with nulls, so a slip here must fail loudly, in the first test that runs a cell.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.core.vocabulary import Outcome
from bench.provider.ledger import AttemptRecord
from bench.results import columns
from bench.results.details import typed as typed_details
from bench.run.accounting import LedgerSummary
from bench.run.classify import CellVerdict
from bench.run.plan import CellPlan
from bench.run.toolcalls import ToolSummary
from bench.sdk.adapter import AdapterResult

TOOL_COLUMNS = (
    "tool_calls_requested", "tool_calls", "tool_errors", "tool_retries", "tool_error_to_model",
    "tool_error_structured", "tool_calls_after_fatal", "tool_transport_retries",
)  # fmt: skip
"""The runs columns read from a :class:`bench.run.toolcalls.ToolSummary` of the same names."""


@dataclass(frozen=True, kw_only=True)
class RowContext:
    """What every row of one cell shares beyond the plan: where and under which limits it ran."""

    suite_id: str
    sdk_version: str | None
    """The SDK's version in the environment the cell ran in."""
    call_cap: int
    time_limit_s: float
    language: str = "python"
    """The language the cell's SDK is used from (``Adapter.language``)."""


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What one cell that ran left behind, for its runs row."""

    run_id: str
    started_at: datetime
    latency_ms: float
    ledger: LedgerSummary
    verdict: CellVerdict
    result: AdapterResult | None
    tools: ToolSummary | None
    harness_error: BaseException | None = None


def unsupported_row(plan: CellPlan, context: RowContext, reason: str | None = None) -> dict[str, Any]:
    """The runs row of a cell that was listed, never run: the cell's own note, or ``reason``
    (why the cell cannot run this scenario's tool task)."""
    row = _cell_columns(plan, context, f"unsupported-{plan.cell_id}")
    row |= {"started_at": datetime.now(UTC), "outcome": str(Outcome.UNSUPPORTED)}
    if reason is not None:
        row["note"] = reason
    return columns.check_row(row, columns.RUNS)


def run_row(plan: CellPlan, context: RowContext, measured: Measured) -> dict[str, Any]:
    """The runs row of a cell that ran."""
    ledger, verdict, result = measured.ledger, measured.verdict, measured.result
    usage = result.usage if result else None
    row = _cell_columns(plan, context, measured.run_id) | {
        "started_at": measured.started_at,
        "detected_mode": ledger.detected_mode,
        "realistic": ledger.realistic,
        "outcome": str(verdict.outcome),
        "exception_type": verdict.exception_type,
        "exception_message": verdict.exception_message,
        "exception_mro": list(verdict.exception_mro) or None,
        "model_calls": ledger.model_calls,
        "output_retries": ledger.output_retries,
        "transport_retries": ledger.transport_retries,
        "client_retries": ledger.client_retries,
        "retry_wait_ms": ledger.retry_wait_ms,
        "input_tokens_billed": ledger.input_tokens_billed,
        "output_tokens_billed": ledger.output_tokens_billed,
        "input_tokens_reported": usage.input_tokens if usage else None,
        "output_tokens_reported": usage.output_tokens if usage else None,
        "latency_ms": measured.latency_ms,
        "returned_valid": verdict.returned_valid,
        "returned_correct": verdict.returned_correct,
        "details": typed_details(result.details if result else None),
    }
    row |= _tool_columns(measured.tools)
    if measured.harness_error is not None:
        error = measured.harness_error
        row["harness_traceback"] = "".join(traceback.format_exception(error, limit=8))[-4000:]
    return columns.check_row(row, columns.RUNS)


def attempt_row(plan: CellPlan, context: RowContext, record: AttemptRecord) -> dict[str, Any]:
    """One attempts row: a request the provider served for the cell."""
    row = {
        "suite_id": context.suite_id,
        "cell_id": plan.cell_id,
        "run_id": record.run_id,
        "attempt": record.attempt,
        "path": record.path,
        "protocol": record.protocol,
        "stream": record.stream,
        "detected_mode": record.detected_mode,
        "enforcement": record.enforcement,
        "behaviour": record.behaviour,
        "realistic": record.realistic,
        "status_code": record.status_code,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "request_bytes": record.request_bytes,
        "response_bytes": record.response_bytes,
        "request_sha256": record.request_sha256,
        "client_retry_count": record.client_retry_count,
        "started_at": datetime.fromtimestamp(record.started_at, UTC),
        "first_byte_ms": record.first_byte_ms,
        "duration_ms": record.duration_ms,
        "request_body": json.dumps(record.request_body) if record.request_body is not None else None,
        "tool_call_id": ",".join(call.call_id for call in record.tool_calls) or None,
        "tool_result_ids": ",".join(result.call_id for result in record.tool_results) or None,
        "answer": record.tool_call_arguments if plan.cell.agent else None,
        "response_body": record.response_body.decode("utf-8", "replace") if record.response_body else None,
    }
    return columns.check_row(row, columns.ATTEMPTS)


def _cell_columns(plan: CellPlan, context: RowContext, run_id: str) -> dict[str, Any]:
    """The columns that say which cell this is and under which limits it ran."""
    cell = plan.cell
    return {
        "run_id": run_id,
        "suite_id": context.suite_id,
        "cell_id": plan.cell_id,
        "sdk": cell.sdk,
        "agent": cell.agent,
        "sdk_version": context.sdk_version,
        "environment": plan.environment_name,
        "cached": None,  # computed here; bench.run.cache names the run of a row it serves
        "mode": str(cell.mode),
        "mode_support": str(cell.mode_support),
        "variant": str(cell.variant),
        "protocol": str(cell.protocol),
        "stream": cell.stream,
        "scenario": plan.scenario.name,
        "task": plan.scenario.task,
        "fault": plan.scenario.fault_label,
        "rep": plan.rep,
        "seed": plan.seed,
        "call_cap": context.call_cap,
        "time_limit_s": context.time_limit_s,
        "note": plan.cell.note or None,
        "language": context.language,
    }


def _tool_columns(tools: ToolSummary | None) -> dict[str, Any]:
    """The runs row's tool columns (all None for a task without a tool)."""
    if tools is None:
        return dict.fromkeys(TOOL_COLUMNS)
    return {name: getattr(tools, name) for name in TOOL_COLUMNS}
