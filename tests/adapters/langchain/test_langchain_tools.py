"""LangChain ``create_agent`` with the harness tool ``lookup_order``, against the real provider.

Each test's model script and tool upstream are those of a scenario of scenarios/tools.yaml.

What is measured is LangChain's own handling of a tool that raises. The numbers below follow
from these lines of the installed packages (paths under .venv/lib/python3.12/site-packages/):

- create_agent builds its ToolNode with no ``handle_tool_errors`` argument and accepts no
  ToolNode of its own (``tools`` is a sequence of tools/callables/dicts), so the default handler
  always applies (langchain/agents/factory.py:1141-1150);
- that default, ``_default_handle_tool_errors``, turns a ToolInvocationError (the tool's args
  schema rejected the call) into an error ToolMessage and re-raises everything else
  (langgraph/prebuilt/tool_node.py:405-413, default at :771-775); ToolInvocationError is raised
  from the pydantic ValidationError of the args schema (tool_node.py:1140-1153) and its text is
  TOOL_INVOCATION_ERROR_TEMPLATE (tool_node.py:131-135): no ``error_code``;
- so a raised OrderToolError (any code, retryable or not) leaves ``agent.ainvoke`` after one model
  call and never reaches the model: the handler's inferred type is Exception (tool_node.py:1187),
  and calling it (:1197 -> :456) re-raises (:413);
- the hardened variant adds ToolErrorMiddleware, whose ``on_error`` returns the structured JSON
  for a retryable error and None (propagate) otherwise (langchain/agents/middleware/
  tool_error.py:175-211), plus ModelCallLimitMiddleware(run_limit=5), which raises before the
  sixth model node (middleware/model_call_limit.py:168-200; counted in after_model, :236-250);
- there is no retry counter for tool errors: a model that keeps sending bad arguments is called
  until create_agent's recursion_limit of 9_999 (factory.py:1902), i.e. the provider's call cap.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents", reason="pip install 'misfit-bench[langchain]'")

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import StructuredOutputValidationError
from langchain_core.exceptions import OutputParserException

from adapters.langchain.adapter import HARDENED_RUN_LIMIT, LangChainAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.sdk.adapter import Cell
from bench.tools import ERROR_MARKER, SUCCESS_MARKER, OrderToolError, UpstreamStep
from tests.cell_runner import CellRun, CellRunner, cell_id, cell_of
from tests.tool_scenarios import TOOL_SCRIPTS as SCENARIOS

ADAPTER = LangChainAdapter()
SUPPORTED = [c for c in ADAPTER.cells() if c.mode_support is not ModeSupport.UNSUPPORTED]
CALL_CAP = 8

INVOCATION_ERROR = "Error invoking tool 'lookup_order'"
"""TOOL_INVOCATION_ERROR_TEMPLATE, langgraph/prebuilt/tool_node.py:131-135."""


DEFAULTS = [cell_of(ADAPTER, mode=Mode.TOOL), cell_of(ADAPTER, mode=Mode.NATIVE), cell_of(ADAPTER, mode=Mode.PROMPTED)]
"""The default variant of each supported mode, on openai-chat: tool-error handling happens in
the ToolNode, the same code for every protocol (tests below cover protocols where it differs)."""
HARDENED = [
    cell_of(ADAPTER, mode=Mode.TOOL, variant="hardened"),
    cell_of(ADAPTER, mode=Mode.NATIVE, variant="hardened"),
]


def result_for(m: CellRun, issued: int, carried_by: int) -> str | None:
    seen = m.tool_result(issued, carried_by)
    return seen.text if seen is not None else None


def assert_ok(m: CellRun) -> None:
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)


def assert_raised_order_error(m: CellRun, code: str) -> None:
    assert isinstance(m.result.exception, OrderToolError)
    assert m.result.exception.code == code


def test_every_supported_cell_takes_the_tool() -> None:
    for c in ADAPTER.cells():
        support = ADAPTER.tool_support(c)
        assert support is None if c in SUPPORTED else support == c.note


@pytest.mark.asyncio
@pytest.mark.parametrize("c", SUPPORTED, ids=cell_id)
async def test_tool_ok(run_cell: CellRunner, c: Cell) -> None:
    """Model calls the tool, the ToolNode runs it, tools_to_model goes back to the model
    (factory.py:2079-2110), the model answers: 1 tool call, 2 model calls, the success result
    paired with the issued call id."""
    m = await run_cell.scenario(c, "tool_ok", call_cap=CALL_CAP)
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 2)
    text = result_for(m, 0, carried_by=1)
    assert text is not None and SUCCESS_MARKER in text


@pytest.mark.asyncio
@pytest.mark.parametrize("c", [*DEFAULTS, *HARDENED], ids=cell_id)
async def test_tool_bad_args_then_ok(run_cell: CellRunner, c: Cell) -> None:
    """The args schema rejects ``{order: ...}`` before the function runs (0 invocations for it);
    ToolInvocationError becomes an error ToolMessage with the issued call id
    (tool_node.py:1140-1153, 405-413), unstructured (no error_code). 3 model calls."""
    m = await run_cell.scenario(c, "tool_bad_args_then_ok", call_cap=CALL_CAP)
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 3)
    text = result_for(m, 0, carried_by=1)
    assert text is not None and INVOCATION_ERROR in text and "order_id: Field required" in text
    assert ERROR_MARKER not in text


@pytest.mark.asyncio
@pytest.mark.parametrize("c", DEFAULTS, ids=cell_id)
async def test_tool_bad_args_persistent_default_runs_away(run_cell: CellRunner, c: Cell) -> None:
    """Each bad call is answered with the invocation error and the model is called again; no
    counter, only recursion_limit=9_999 (factory.py:1902): the call cap is reached."""
    m = await run_cell.scenario(c, "tool_bad_args_persistent", call_cap=CALL_CAP)
    assert m.stopped == "runaway"
    assert m.tool_calls == 0
    assert m.handle.calls_recorded == CALL_CAP + 1  # the last one held at the cap
    assert all(result_for(m, i, carried_by=i + 1) is not None for i in range(CALL_CAP - 1))


@pytest.mark.asyncio
@pytest.mark.parametrize("c", HARDENED, ids=cell_id)
async def test_tool_bad_args_persistent_hardened_hits_the_model_call_limit(run_cell: CellRunner, c: Cell) -> None:
    """ModelCallLimitMiddleware(run_limit=5, exit_behavior="error") raises before the sixth
    model node (model_call_limit.py:186-200)."""
    m = await run_cell.scenario(c, "tool_bad_args_persistent", call_cap=CALL_CAP)
    assert isinstance(m.result.exception, ModelCallLimitExceededError)
    assert (m.tool_calls, len(m.attempts)) == (0, HARDENED_RUN_LIMIT)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "c",
    [
        *DEFAULTS,
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant="stream"),
        cell_of(ADAPTER, mode=Mode.NATIVE, variant="auto"),
    ],
    ids=cell_id,
)
async def test_tool_unknown_order_default_raises_without_telling_the_model(run_cell: CellRunner, c: Cell) -> None:
    """A retryable OrderToolError is not a ToolInvocationError, so the default handler re-raises
    it (tool_node.py:411-413, via :1197 and :456) and it leaves ainvoke/astream: 1 tool call, 1 model call, the
    error never reaches the model, the script's second (fixed) call is never asked for."""
    m = await run_cell.scenario(c, "tool_unknown_order_then_ok", call_cap=CALL_CAP)
    assert_raised_order_error(m, "ORDER_NOT_FOUND")
    assert (m.tool_calls, len(m.attempts)) == (1, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
@pytest.mark.parametrize("mode", [Mode.TOOL, Mode.NATIVE])
async def test_tool_unknown_order_hardened_recovers_with_the_structured_error(
    run_cell: CellRunner, mode: Mode, protocol: Protocol
) -> None:
    """ToolErrorMiddleware's on_error returns str(OrderToolError) for a retryable error, and it
    becomes ToolMessage(status="error", tool_call_id=<issued id>) (tool_error.py:196-211);
    ToolErrorMiddleware wraps the execute step, so bad arguments still get the ToolNode's own
    ToolInvocationError message (tool_error.py:62-64)."""
    m = await run_cell.scenario(
        cell_of(ADAPTER, mode=mode, protocol=protocol, variant="hardened"),
        "tool_unknown_order_then_ok",
        call_cap=CALL_CAP,
    )
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (2, 3)
    text = result_for(m, 0, carried_by=1)
    assert text is not None and ERROR_MARKER in text and "ORDER_NOT_FOUND" in text
    if protocol is Protocol.ANTHROPIC:  # status="error" -> tool_result is_error on Messages
        [seen] = m.attempts[1].tool_results
        assert seen.is_error is True


@pytest.mark.asyncio
@pytest.mark.parametrize("c", DEFAULTS, ids=cell_id)
async def test_tool_unknown_order_persistent_default_raises_once(run_cell: CellRunner, c: Cell) -> None:
    m = await run_cell.scenario(c, "tool_unknown_order_persistent", call_cap=CALL_CAP)
    assert_raised_order_error(m, "ORDER_NOT_FOUND")
    assert (m.tool_calls, len(m.attempts)) == (1, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("c", HARDENED, ids=cell_id)
async def test_tool_unknown_order_persistent_hardened_stops_at_the_model_call_limit(
    run_cell: CellRunner, c: Cell
) -> None:
    """Every retryable error goes back to the model (5 tool calls, each paired with its call id);
    only run_limit=5 ends the loop, before the sixth model node."""
    m = await run_cell.scenario(c, "tool_unknown_order_persistent", call_cap=CALL_CAP)
    assert isinstance(m.result.exception, ModelCallLimitExceededError)
    assert (m.tool_calls, len(m.attempts)) == (HARDENED_RUN_LIMIT, HARDENED_RUN_LIMIT)
    for i in range(HARDENED_RUN_LIMIT - 1):
        text = result_for(m, i, carried_by=i + 1)
        assert text is not None and f'"attempt": {i + 1}' in text


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", ["permission_denied", "quota_exceeded"])
@pytest.mark.parametrize("c", [*DEFAULTS, *HARDENED], ids=cell_id)
async def test_non_retryable_error_stops_the_run(run_cell: CellRunner, c: Cell, fault: UpstreamStep) -> None:
    """Default: re-raised by the default handler. Hardened: on_error returns None, so
    ToolErrorMiddleware re-raises (tool_error.py:202-203) and the ToolNode's outer handler, the
    same default, re-raises again (tool_node.py:1261-1264 -> :413). Either way 1 tool call, 1 model call."""
    m = await run_cell.scenario(c, f"tool_{fault}", call_cap=CALL_CAP)
    assert_raised_order_error(m, fault.upper())
    assert (m.tool_calls, len(m.attempts)) == (1, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("c", [*DEFAULTS, cell_of(ADAPTER, mode=Mode.TOOL, variant="hardened")], ids=cell_id)
async def test_tool_upstream_timeout_is_absorbed_inside_the_tool(run_cell: CellRunner, c: Cell) -> None:
    """The tool's own transport layer retries the timeout: LangChain sees one successful call."""
    m = await run_cell.scenario(c, "tool_upstream_timeout_then_ok", call_cap=CALL_CAP)
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 2)
    assert m.task.tool is not None and m.task.tool.invocations[0].upstream_calls == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "hardened", "stream"])
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
async def test_budget_shared_tool_mode_openai_ends_empty(
    run_cell: CellRunner, protocol: Protocol, variant: str
) -> None:
    """ToolStrategy with a real tool: the malformed output-tool arguments land in
    invalid_tool_calls, so ``tool_calls`` is empty and model_to_tools exits the loop (factory.py:
    2016-2018) with no structured_response: empty after 3 calls, no retry at all. (Without a
    tool the model->model edge retries it, factory.py:2045-2069; test_langchain.py.)"""
    m = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol, variant=variant), "tool_budget_shared", call_cap=CALL_CAP
    )
    assert m.result.exception is None and m.result.output is None
    assert (m.tool_calls, len(m.attempts)) == (1, 3)


@pytest.mark.asyncio
async def test_tool_mode_with_a_tool_retries_json_that_breaks_the_schema(run_cell: CellRunner) -> None:
    """Only an answer that is not JSON ends the run: valid JSON that breaks the schema parses into
    ``tool_calls`` (langchain_openai/chat_models/base.py:242-249 puts only a JSONDecodeError into
    invalid_tool_calls), so ToolStrategy feeds the validation error back and the run recovers."""
    script = [{"tool_call": {"order_id": "ORD-1042"}}, {"schema_violation": "missing_field"}, "valid"]
    m = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL), script, task="order_lookup", call_cap=CALL_CAP)
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 3)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "hardened"])
async def test_budget_shared_tool_mode_anthropic_recovers(run_cell: CellRunner, variant: str) -> None:
    """On Messages (not streamed) the bad output arrives as a tool_use with parsed input, the
    validation error is fed back (factory.py:1331-1345): recovered in 4 calls. The earlier
    tool-argument retry took nothing from any budget (there is none)."""
    m = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant=variant),
        "tool_budget_shared",
        call_cap=CALL_CAP,
    )
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 4)
    text = result_for(m, 2, carried_by=3)
    assert text is not None and "Failed to parse structured output for tool 'OrderStatus'" in text


@pytest.mark.asyncio
async def test_budget_shared_tool_stream_anthropic_ends_empty(run_cell: CellRunner) -> None:
    """Streamed, the same Anthropic reply is merged from input_json_delta chunks that do not
    parse, so it becomes an invalid tool call, and the loop exits as on OpenAI."""
    m = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant="stream"),
        "tool_budget_shared",
        call_cap=CALL_CAP,
    )
    assert m.result.exception is None and m.result.output is None
    assert (m.tool_calls, len(m.attempts)) == (1, 3)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("c", "error"),
    [
        (cell_of(ADAPTER, mode=Mode.NATIVE), StructuredOutputValidationError),
        (
            cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.ANTHROPIC, variant="stream"),
            StructuredOutputValidationError,
        ),
        (cell_of(ADAPTER, mode=Mode.PROMPTED), OutputParserException),
    ],
    ids=lambda v: cell_id(v) if isinstance(v, Cell) else "",
)
async def test_budget_shared_native_and_prompted_raise(run_cell: CellRunner, c: Cell, error: type) -> None:
    """ProviderStrategy raises on the first bad answer (factory.py:1260-1272); the prompted
    parser raises OutputParserException: 3 calls either way."""
    m = await run_cell.scenario(c, "tool_budget_shared", call_cap=CALL_CAP)
    assert isinstance(m.result.exception, error)
    assert (m.tool_calls, len(m.attempts)) == (1, 3)


@pytest.mark.asyncio
async def test_budget_shared_native_hardened_retries_the_identical_request(run_cell: CellRunner) -> None:
    """ModelRetryMiddleware re-sends the malformed answer's request unchanged (model_retry.py:
    275-323): recovered in 4 calls; the tool-argument retry did not use up its 2 retries."""
    m = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.NATIVE, variant="hardened"), "tool_budget_shared", call_cap=CALL_CAP
    )
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 4)
    assert m.attempts[2].request_sha256 == m.attempts[3].request_sha256


@pytest.mark.asyncio
async def test_run_limit_counts_model_nodes_not_requests(run_cell: CellRunner) -> None:
    """The one shared budget in the hardened stack, run_limit, is counted in after_model once per
    model node (model_call_limit.py:236-250), while ModelRetryMiddleware's retries happen inside
    that node: 3 tool-argument retries + 1 call + 2 output retries = 7 requests under run_limit=5."""
    # Custom: no scenario repeats the bad call and the malformed answer; its steps are tool_budget_shared's.
    (bad_args, ok_call, malformed, valid), upstream = SCENARIOS["tool_budget_shared"]
    script = [bad_args, bad_args, bad_args, ok_call, malformed, malformed, valid]
    m = await run_cell(
        cell_of(ADAPTER, mode=Mode.NATIVE, variant="hardened"),
        script,
        task="order_lookup",
        upstream=upstream,
        call_cap=CALL_CAP,
    )
    assert_ok(m)
    assert (m.tool_calls, len(m.attempts)) == (1, 7)
