"""The result columns, declared once (docs/design.md, "Result tables"): name, type and description.

Every writer and reader goes through these schemas; a test checks that rows produced by the
runner map onto them exactly. Each field carries its description in its metadata
(``description``), so it travels inside every parquet file, and ``docs/columns.md`` is generated
from here (``python -m bench.results.columns > docs/columns.md``; a test fails when it is stale).
Columns are only ever added: bump ``SCHEMA_VERSION`` when one is. One column changed type:
``details`` became a struct in schema 4; older runs' JSON text is read back as it (bench.results.details).
"""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "5"

DESCRIPTION = b"description"
"""The field-metadata key of a column's description."""


def column(name: str, type_: pa.DataType, description: str, nullable: bool = True) -> pa.Field:
    """One declared column: its description goes into the field metadata, hence into the file."""
    return pa.field(name, type_, nullable=nullable, metadata={DESCRIPTION: description.encode()})


DETAILS = pa.struct(
    [
        column("captured_responses", pa.int32(), "pydantic-ai: model responses in the run's message history."),
        column(
            "cancelled_on_tool_error",
            pa.string(),
            "agentmaker (hardened tool cells): the tool error code on which the run was cancelled.",
        ),
        column("cli_init_ms", pa.int64(), "Claude: time until the CLI's init message (ms)."),
        column(
            "cli_left_running",
            pa.int32(),
            "Claude: CLI processes still running after the cell (killed by the harness).",
        ),
        column("cli_stderr", pa.string(), "Claude: the CLI's last stderr lines (500 characters)."),
        column("declaration", pa.string(), "pydantic-ai: the output declaration the cell wrote."),
        column("entry_point", pa.string(), "pydantic-ai: run or run_stream."),
        column("fallback_handler", pa.string(), "openai-agents: the error handler whose value was returned."),
        column(
            "fatal_tool_errors",
            pa.list_(pa.string()),
            "Claude (hardened tool cells): the non-retryable tool error codes the hooks stopped on.",
        ),
        column(
            "final_message",
            pa.string(),
            "LangChain: the last message's content when no structured answer came (200 characters).",
        ),
        column(
            "harness_tool_failure",
            pa.string(),
            "openai-agents: how the tool's failure reached the SDK (default_tool_error_function, structured_or_raise).",
        ),
        column("hook_denials", pa.int32(), "Claude (hardened): tool uses the PreToolUse hook denied."),
        column("messages", pa.int32(), "LangChain: messages in the final state."),
        column("model", pa.string(), "Own agents: the SDK model class the fake model was served through."),
        column("num_turns", pa.int32(), "Claude: ResultMessage.num_turns."),
        column("output_guardrail", pa.string(), "agentmaker (hardened): the output guardrail installed."),
        column(
            "output_retries",
            pa.int32(),
            "pydantic-ai: the output retry budget configured (not the measured retries: see the runs column).",
        ),
        column("output_validator", pa.string(), "pydantic-ai: the output validator installed (none or task.check)."),
        column(
            "profile_structured_output",
            pa.bool_(),
            "LangChain: the model profile's structured_output flag that chose the strategy; null when the profile has "
            "none.",
        ),
        column("recovered_error", pa.string(), "pydantic-ai: the exception type the SDK recovered from (first one)."),
        column("result_errors", pa.string(), "Claude: ResultMessage.errors joined (300 characters)."),
        column("result_is_error", pa.bool_(), "Claude: ResultMessage.is_error."),
        column("result_subtype", pa.string(), "Claude: ResultMessage.subtype (success, error_max_turns, ...)."),
        column(
            "result_text",
            pa.string(),
            "Claude: ResultMessage.result when there was no structured output (200 characters).",
        ),
        column("run_data", pa.string(), "openai-agents: whether the exception carried run_data (present, absent)."),
        column("run_policy", pa.string(), "agentmaker (hardened): the run policy installed (JSON)."),
        column("run_status", pa.string(), "agentmaker: the run's status."),
        column("run_usage_llm_calls", pa.int32(), "agentmaker: the run's usage.llm_calls."),
        column("run_usage_total_tokens", pa.int64(), "agentmaker: the run's usage.total_tokens."),
        column("sdk_requests", pa.int32(), "openai-agents: Usage.requests, the model responses the SDK accounted for."),
        column("sdk_transport_retries", pa.int32(), "The official client's transport retry budget in force."),
        column("sdk_usage_requests", pa.int32(), "pydantic-ai: RunUsage.requests."),
        column("stop_reason", pa.string(), "The stop or finish reason of the last answer, as the SDK reported it."),
        column(
            "strategy",
            pa.string(),
            "LangChain: the structured-output strategy used (ProviderStrategy, ToolStrategy, ...).",
        ),
        column("stream_events", pa.int32(), "Claude (stream): stream events received."),
        column(
            "structured_output",
            pa.string(),
            "agentmaker: the structured-output capability used (native, json_schema, json_object, none).",
        ),
        column("structured_output_calls", pa.int32(), "Claude: calls of the StructuredOutput tool."),
        column("structured_retries", pa.int32(), "agentmaker: the structured-output retry budget configured."),
        column(
            "terminal_reason",
            pa.string(),
            "Claude: ResultMessage.terminal_reason; null on CLI versions without it.",
        ),
        column("timeout_s", pa.float64(), "agentmaker (hardened): the run timeout configured (s)."),
        column(
            "tool_calls_stopped",
            pa.int32(),
            "Claude (hardened tool cells): tool calls the hooks stopped after a fatal error.",
        ),
        column("tool_declaration", pa.string(), "pydantic-ai: how the harness tool was declared."),
        column(
            "tool_error_handling",
            pa.string(),
            "agentmaker (hardened tool cells): how the tool reports its errors.",
        ),
        column(
            "tool_failure",
            pa.string(),
            "openai-agents (tool cells): the tool's failure policy (raise, error_string_as_output).",
        ),
        column("tool_loop_llm_calls", pa.int32(), "agentmaker (tool cells): LLM calls of the composed tool loop."),
        column("tool_loop_max_turns", pa.int32(), "agentmaker (tool cells): the tool loop's max_turns."),
        column(
            "tool_loop_output",
            pa.string(),
            "agentmaker (tool cells): the tool loop's final output (300 characters).",
        ),
        column("tool_loop_tool_calls", pa.int32(), "agentmaker (tool cells): tool calls of the composed tool loop."),
        column(
            "tool_retries",
            pa.int32(),
            "pydantic-ai (tool cells): the tool retry budget configured (not the measured retries: see the runs "
            "column).",
        ),
        column("tool_wiring", pa.string(), "agentmaker (tool cells): how the tool loop is composed."),
        column("total_cost_usd", pa.float64(), "Claude: ResultMessage.total_cost_usd (the CLI's own price estimate)."),
        column("traced_llm_calls", pa.int32(), "agentmaker: LLM calls its tracer saw."),
        column(
            "traced_tool_calls",
            pa.list_(pa.string()),
            "agentmaker (tool cells): each traced tool call's status, in order.",
        ),
        column(
            "usage_source",
            pa.string(),
            "openai-agents: where the usage was read from (result.context_wrapper, exception.run_data, ...).",
        ),
        column(
            "other",
            pa.map_(pa.string(), pa.string()),
            "Any other note (a third-party adapter's), or a value that did not parse as its declared type, as text.",
        ),
    ]
)
"""The ``details`` struct (schema 4): what an adapter noted about a run, one typed field per note
the built-in adapters make. Runs written before schema 4 stored a JSON object of strings; they
read back as this struct (bench.results.details)."""


RUNS = pa.schema(
    [
        column(
            "run_id",
            pa.string(),
            "The cell's run on the provider (its URL prefix); `unsupported-<cell_id>` for a cell not run.",
            nullable=False,
        ),
        column("suite_id", pa.string(), "The run folder's id: `<UTC date>-<time>-<4 hex>`.", nullable=False),
        column(
            "cell_id",
            pa.string(),
            "A hash of the cell's parameters (SDK, mode, variant, protocol, stream, scenario, rep, seed; agent and "
            "environment when set): the same cell has the same id in every run.",
            nullable=False,
        ),
        column("started_at", pa.timestamp("ms", tz="UTC"), "When the cell started."),
        column("sdk", pa.string(), "The adapter's name (the SDK driven).", nullable=False),
        column("sdk_version", pa.string(), "The SDK's installed version; null when it is not installed."),
        column(
            "mode",
            pa.string(),
            "How the structured answer is requested: tool, native or prompted.",
            nullable=False,
        ),
        column(
            "mode_support",
            pa.string(),
            "How the cell was built: builtin (the SDK's own mode), composed (built from the SDK's parts) or "
            "unsupported.",
            nullable=False,
        ),
        column(
            "variant",
            pa.string(),
            "How the adapter configures the SDK around the mode: default, hardened, stream, auto, json_object, or an "
            "adapter's own.",
            nullable=False,
        ),
        column(
            "protocol",
            pa.string(),
            "The wire protocol: openai-chat, openai-responses or anthropic-messages.",
            nullable=False,
        ),
        column("stream", pa.bool_(), "Whether the SDK asked for a streamed (SSE) answer.", nullable=False),
        column(
            "detected_mode",
            pa.string(),
            "The mode the provider saw in the requests (joined with + when they differ); null when no request came.",
        ),
        column("scenario", pa.string(), "The scenario: the fake model's script for the cell.", nullable=False),
        column(
            "task",
            pa.string(),
            "The task (the output type and its semantic check) the scenario uses.",
            nullable=False,
        ),
        column(
            "fault",
            pa.string(),
            "The fault the scenario injects: its declared fault, else its first non-valid behaviour "
            "(`mix:...` for a stochastic one), `none` for a valid script.",
            nullable=False,
        ),
        column(
            "realistic",
            pa.bool_(),
            "Whether every answer served could come from the real API under the enforcement the SDK asked for; null "
            "when no request came.",
        ),
        column("rep", pa.int32(), "The repetition, from 0.", nullable=False),
        column("seed", pa.int64(), "The run's seed (`--seed`); stochastic scenarios draw from it.", nullable=False),
        column(
            "outcome",
            pa.string(),
            "Where the failure ended up: ok, recovered, raised, fallback, wrong, empty, runaway, timeout, unsupported,"
            " harness_error (docs/design.md).",
            nullable=False,
        ),
        column(
            "exception_type",
            pa.string(),
            "The fully qualified type of the exception that reached the caller (or of the harness error).",
        ),
        column("exception_message", pa.string(), "That exception's message (the first 2,000 characters)."),
        column(
            "exception_mro",
            pa.list_(pa.string()),
            "The raised exception's class and its bases (its MRO without object), each `module.Class`, taken where "
            "the class was raised (a release's worker): what an `except` catches, when a class takes another's name; "
            "null when the SDK raised nothing to the caller (and in runs before schema 5).",
        ),
        column(
            "model_calls",
            pa.int32(),
            "Model calls the provider answered (auxiliary requests such as count_tokens not counted).",
        ),
        column(
            "output_retries",
            pa.int32(),
            "Further model calls that were not transport retries or tool turns: the framework asking again.",
        ),
        column(
            "transport_retries",
            pa.int32(),
            "Model calls that re-sent the same request after a failed HTTP response (429, 5xx).",
        ),
        column(
            "input_tokens_billed",
            pa.int64(),
            "Input tokens of every request served (the provider's ledger, o200k BPE of the bytes sent).",
        ),
        column("output_tokens_billed", pa.int64(), "Output tokens of every answer served (the provider's ledger)."),
        column(
            "input_tokens_reported",
            pa.int64(),
            "Input tokens the SDK's own usage object reported to its caller; null when it reports none.",
        ),
        column(
            "output_tokens_reported",
            pa.int64(),
            "Output tokens the SDK's own usage object reported to its caller; null when it reports none.",
        ),
        column("latency_ms", pa.float64(), "Wall time of the cell, from the SDK call to its end (ms)."),
        column(
            "returned_valid",
            pa.bool_(),
            "Whether the SDK returned an object that fits the output type; null when the SDK did not finish "
            "(runaway, timeout, harness error, unsupported).",
        ),
        column(
            "returned_correct",
            pa.bool_(),
            "Whether that object also passes the task's semantic check; null when the SDK did not finish.",
        ),
        column(
            "call_cap",
            pa.int32(),
            "The cell's model-call cap (`--call-cap`): past it the cell is a runaway.",
            nullable=False,
        ),
        column(
            "time_limit_s",
            pa.float64(),
            "The cell's time limit in seconds, a stall limit: that long with no model call reaching the provider or "
            "answered, and the cell is a timeout.",
            nullable=False,
        ),
        column(
            "details",
            DETAILS,
            "What the adapter noted about the run, one typed field per note (docs/columns.md lists them), e.g. "
            "details.strategy, the strategy LangChain picked. Schema 4; a JSON object of strings before, read "
            "back as this struct.",
        ),
        column("note", pa.string(), "The cell's note: why it is unsupported, or how it is built."),
        column("harness_traceback", pa.string(), "The traceback of a harness error (its last 4,000 characters)."),
        # Schema 2 (issue 7): the retry layers apart, and tool calls.
        column(
            "client_retries",
            pa.int32(),
            "Model calls the official client itself marked as a retry (`x-stainless-retry-count`): the transport "
            "layer. Schema 2.",
        ),
        column(
            "retry_wait_ms",
            pa.float64(),
            "Time between each failed HTTP response and the request after it: the backoff (ms). Schema 2.",
        ),
        column(
            "tool_calls_requested",
            pa.int32(),
            "Calls of the harness tool the model issued; null for a task without a tool. Schema 2.",
        ),
        column(
            "tool_calls",
            pa.int32(),
            "Times the tool function actually ran (a call whose arguments failed the schema never runs). Schema 2.",
        ),
        column("tool_errors", pa.int32(), "Runs of the tool that ended in its structured error. Schema 2."),
        column(
            "tool_retries",
            pa.int32(),
            "Model calls that carried a failed tool call's result back (the model's chance to fix it). Schema 2.",
        ),
        column(
            "tool_error_to_model",
            pa.bool_(),
            "Every failed tool call the run went on after had its result, paired with its call id, in a later request;"
            " null when the run went on after no failed call. Schema 2.",
        ),
        column(
            "tool_error_structured",
            pa.bool_(),
            "Every tool error paired back carried the tool's structured error, not just a generic message; null when "
            "none was paired back. Schema 2.",
        ),
        column(
            "tool_calls_after_fatal",
            pa.int32(),
            "Tool runs after the first non-retryable tool error; null when there was none. Schema 2.",
        ),
        column(
            "tool_transport_retries",
            pa.int32(),
            "Upstream retries inside the tool (its own transport layer). Schema 2.",
        ),
        # Schema 3 (issue 15): the user's own agent a cell drove; "" for a built-in adapter
        # (runs written before schema 3 read back with "" too, see results.read_table).
        column(
            "agent",
            pa.string(),
            "The user's own agent the cell drove (`bench run --agent`); empty for a built-in adapter. Schema 3.",
        ),
        # Also schema 3 (issue 16): the environment a cell ran in ("pinned": in-process; else
        # "sdk==version", a release environment run by a worker). Null in older runs.
        column(
            "environment",
            pa.string(),
            "Where the cell ran: `pinned` (in-process, the installed SDK) or `sdk==version` (a release environment); "
            "null before schema 3. Schema 3.",
        ),
        column(
            "cached",
            pa.string(),
            "The run (suite id) this row was computed in when `bench run` served it from the cell cache (its "
            "key: the code, adapter, environment, scenario, cell and options that decide it); null: computed "
            "in this run. Schema 5.",
        ),
        # Schema 5 (issue 41): the language the SDK is used from; runs written before read back
        # as "python" (every SDK was a Python one then, see results.read_table).
        column(
            "language",
            pa.string(),
            "The language the SDK is used from: `python` (in-process or a release worker) or `typescript` (a Node "
            "worker, bench.node). Schema 5.",
        ),
    ],
    metadata={"misfit_bench.schema_version": SCHEMA_VERSION, "misfit_bench.table": "runs"},
)

ATTEMPTS = pa.schema(
    [
        column("suite_id", pa.string(), "The run folder's id.", nullable=False),
        column("cell_id", pa.string(), "The cell the request belongs to (runs.cell_id).", nullable=False),
        column("run_id", pa.string(), "The cell's run on the provider (runs.run_id).", nullable=False),
        column(
            "attempt",
            pa.int32(),
            "0-based index among the cell's model calls; null for auxiliary requests (count_tokens, unknown paths).",
        ),
        column("path", pa.string(), "The request's URL path.", nullable=False),
        column("protocol", pa.string(), "The wire protocol of the request; null for an unknown path."),
        column("stream", pa.bool_(), "Whether the request asked for a streamed answer.", nullable=False),
        column(
            "detected_mode",
            pa.string(),
            "The mode the request asked for (tool, native, prompted), read from its body.",
        ),
        column(
            "enforcement",
            pa.string(),
            "How hard the request asked the model to keep the shape: strict, json or none.",
        ),
        column(
            "behaviour",
            pa.string(),
            "What the fake model did (the script's behaviour label), or why the request was not answered from the "
            "script (call_cap).",
            nullable=False,
        ),
        column(
            "realistic",
            pa.bool_(),
            "Whether the real API could answer this way under the request's enforcement.",
            nullable=False,
        ),
        column(
            "status_code",
            pa.int32(),
            "The HTTP status served (499 when the client left before the answer ended).",
            nullable=False,
        ),
        column(
            "input_tokens",
            pa.int64(),
            "Input tokens of the request (o200k BPE of the bytes sent).",
            nullable=False,
        ),
        column("output_tokens", pa.int64(), "Output tokens of the answer served.", nullable=False),
        column("request_bytes", pa.int64(), "Size of the request body.", nullable=False),
        column("response_bytes", pa.int64(), "Size of the response body served.", nullable=False),
        column(
            "request_sha256",
            pa.string(),
            "SHA-256 of the request body: the same hash twice in a row is a transport retry.",
            nullable=False,
        ),
        column("client_retry_count", pa.int32(), "The official client's `x-stainless-retry-count` header, when sent."),
        column("started_at", pa.timestamp("ms", tz="UTC"), "When the request arrived."),
        column("first_byte_ms", pa.float64(), "Time to the first byte of the answer (ms)."),
        column("duration_ms", pa.float64(), "Time to the end of the answer (ms)."),
        column(
            "request_body",
            pa.string(),
            "The request body (JSON), when bodies are recorded (`--no-record-bodies` leaves it out).",
        ),
        column(
            "tool_call_id",
            pa.string(),
            "The call id of the tool call this answer made (output tool or harness tool), if any; a "
            "parallel turn's ids comma-separated, in call order.",
        ),
        column(
            "tool_result_ids",
            pa.string(),
            "The call ids of the tool results this request carried back, comma-separated, in conversation order.",
        ),
        # Schema 3 (issue 15): what the fake model answered (text or tool-call arguments), for a
        # user's own agent's cells, so the derived answers it was sent can be read back.
        column(
            "answer",
            pa.string(),
            "What the fake model answered (text or tool-call arguments), for a user's own agent's cells. Schema 3.",
        ),
        # Schema 3 (issue 14): the bytes the provider served (a stream's events as sent), for `bench view`.
        column(
            "response_body",
            pa.string(),
            "The bytes served (a stream's events as sent), when bodies are recorded. Schema 3.",
        ),
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


TABLES = {"runs": RUNS, "attempts": ATTEMPTS}


def description(field: pa.Field) -> str:
    return (field.metadata or {}).get(DESCRIPTION, b"").decode()


def markdown() -> str:
    """docs/columns.md: one table per results table, from the declarations above."""
    lines = [
        "# Result columns",
        "",
        "<!-- Generated from bench/results/columns.py by `python -m bench.results.columns > docs/columns.md`; "
        "do not edit. -->",
        "",
        f"Schema version {SCHEMA_VERSION}. Every parquet file a run writes carries these descriptions in",
        "its field metadata (key `description`), e.g. `pyarrow.parquet.read_schema(path).field(name).metadata`.",
        "Columns are only added: a run of an older schema reads back with the newer columns null (and its",
        "`details`, JSON text before schema 4, as the struct).",
    ]
    for name, schema in TABLES.items():
        lines += ["", f"## {name}.parquet", "", "| column | type | null | description |", "|---|---|---|---|"]
        for field in schema:
            nullable = "yes" if field.nullable else "no"
            lines.append(f"| `{field.name}` | {_type(field)} | {nullable} | {_cell(description(field))} |")
    lines += ["", "## runs.details", "", "The fields of the `details` struct (null: not noted).", ""]
    lines += ["| field | type | description |", "|---|---|---|"]
    lines += [f"| `{field.name}` | {field.type} | {_cell(description(field))} |" for field in DETAILS]
    return "\n".join(lines) + "\n"


def _type(field: pa.Field) -> str:
    return "struct (below)" if pa.types.is_struct(field.type) else str(field.type)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    sys.stdout.write(markdown())
