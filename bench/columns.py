"""The result columns, declared once (docs/design.md, "Result tables").

Every writer and reader goes through these schemas; a test checks that rows produced by the
runner map onto them exactly. Columns are only ever added: bump ``SCHEMA_VERSION`` when one is.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "3"

RUNS = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("suite_id", pa.string(), nullable=False),
        pa.field("cell_id", pa.string(), nullable=False),
        pa.field("started_at", pa.timestamp("ms", tz="UTC")),
        pa.field("sdk", pa.string(), nullable=False),
        pa.field("sdk_version", pa.string()),
        pa.field("mode", pa.string(), nullable=False),
        pa.field("mode_support", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("protocol", pa.string(), nullable=False),
        pa.field("stream", pa.bool_(), nullable=False),
        pa.field("detected_mode", pa.string()),
        pa.field("scenario", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("fault", pa.string(), nullable=False),
        pa.field("realistic", pa.bool_()),
        pa.field("rep", pa.int32(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("exception_type", pa.string()),
        pa.field("exception_message", pa.string()),
        pa.field("model_calls", pa.int32()),
        pa.field("output_retries", pa.int32()),
        pa.field("transport_retries", pa.int32()),
        pa.field("input_tokens_billed", pa.int64()),
        pa.field("output_tokens_billed", pa.int64()),
        pa.field("input_tokens_reported", pa.int64()),
        pa.field("output_tokens_reported", pa.int64()),
        pa.field("latency_ms", pa.float64()),
        pa.field("returned_valid", pa.bool_()),
        pa.field("returned_correct", pa.bool_()),
        pa.field("call_cap", pa.int32(), nullable=False),
        pa.field("time_limit_s", pa.float64(), nullable=False),
        pa.field("details", pa.string()),
        pa.field("note", pa.string()),
        pa.field("harness_traceback", pa.string()),
        # Schema 2 (issue 7): the retry layers apart, and tool calls.
        pa.field("client_retries", pa.int32()),
        pa.field("retry_wait_ms", pa.float64()),
        pa.field("tool_calls_requested", pa.int32()),
        pa.field("tool_calls", pa.int32()),
        pa.field("tool_errors", pa.int32()),
        pa.field("tool_retries", pa.int32()),
        pa.field("tool_error_to_model", pa.bool_()),
        pa.field("tool_error_structured", pa.bool_()),
        pa.field("tool_calls_after_fatal", pa.int32()),
        pa.field("tool_transport_retries", pa.int32()),
        # Schema 3 (issue 15): the user's own agent a cell drove; "" for a built-in adapter
        # (runs written before schema 3 read back with "" too, see results.read_table).
        pa.field("agent", pa.string()),
        # Also schema 3 (issue 16): the environment a cell ran in ("pinned": in-process; else
        # "sdk==version", a release environment run by a worker). Null in older runs.
        pa.field("environment", pa.string()),
    ],
    metadata={"misfit_bench.schema_version": SCHEMA_VERSION, "misfit_bench.table": "runs"},
)

ATTEMPTS = pa.schema(
    [
        pa.field("suite_id", pa.string(), nullable=False),
        pa.field("cell_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("attempt", pa.int32()),
        pa.field("path", pa.string(), nullable=False),
        pa.field("protocol", pa.string()),
        pa.field("stream", pa.bool_(), nullable=False),
        pa.field("detected_mode", pa.string()),
        pa.field("enforcement", pa.string()),
        pa.field("behaviour", pa.string(), nullable=False),
        pa.field("realistic", pa.bool_(), nullable=False),
        pa.field("status_code", pa.int32(), nullable=False),
        pa.field("input_tokens", pa.int64(), nullable=False),
        pa.field("output_tokens", pa.int64(), nullable=False),
        pa.field("request_bytes", pa.int64(), nullable=False),
        pa.field("response_bytes", pa.int64(), nullable=False),
        pa.field("request_sha256", pa.string(), nullable=False),
        pa.field("client_retry_count", pa.int32()),
        pa.field("started_at", pa.timestamp("ms", tz="UTC")),
        pa.field("first_byte_ms", pa.float64()),
        pa.field("duration_ms", pa.float64()),
        pa.field("request_body", pa.string()),
        pa.field("tool_call_id", pa.string()),
        pa.field("tool_result_ids", pa.string()),
        # Schema 3 (issue 15): what the fake model answered (text or tool-call arguments), for a
        # user's own agent's cells, so the derived answers it was sent can be read back.
        pa.field("answer", pa.string()),
        # Schema 3 (issue 14): the bytes the provider served (a stream's events as sent), for `bench view`.
        pa.field("response_body", pa.string()),
    ],
    metadata={"misfit_bench.schema_version": SCHEMA_VERSION, "misfit_bench.table": "attempts"},
)


class RowError(ValueError):
    """A row whose keys do not match its table's columns: a bug in the mapping that built it."""


_KEYS: dict[bytes, tuple[frozenset[str], frozenset[str]]] = {}


def _keys(schema: pa.Schema) -> tuple[frozenset[str], frozenset[str]]:
    """(every column, the non-nullable ones) of one of this module's schemas, computed once."""
    table = schema.metadata[b"misfit_bench.table"]
    if table not in _KEYS:
        _KEYS[table] = frozenset(schema.names), frozenset(f.name for f in schema if not f.nullable)
    return _KEYS[table]


def check_row(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """``row`` itself, once every key is a column of ``schema`` and every non-nullable column is
    there. ``pa.Table.from_pylist(rows, schema=...)`` drops an unknown key without a word and
    fills its column with nulls; this makes the same slip an error where the row is built."""
    names, required = _keys(schema)
    unknown, missing = row.keys() - names, required - row.keys()
    if unknown or missing:
        table = schema.metadata[b"misfit_bench.table"].decode()
        raise RowError(f"{table} row: unknown column(s) {sorted(unknown)}, missing column(s) {sorted(missing)}")
    return row
