"""smolagents' ``ToolCallingAgent`` with a typed ``final_answer``, through the runner's path against
the real local provider over loopback.

The expectations come from the SDK's source (adapters/smolagents/research.md, paths under
site-packages/smolagents), not from what the adapter did. To keep the suite cheap, one module
fixture drives every cell once, concurrently on one loop, and the tests assert on those runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

import psutil
import pytest
from smolagents.utils import AgentGenerationError

from adapters.smolagents.adapter import HARDENED_MAX_STEPS, THREAD_PREFIX, SmolagentsAdapter
from bench.core.vocabulary import Mode, ModeSupport, Outcome, Protocol
from bench.provider import LocalProvider
from bench.scenarios.tasks import get_task
from tests.adapters.smolagents.conftest import SmolagentsRunner
from tests.cell_runner import CellRun, cell_of

ADAPTER = SmolagentsAdapter()
PERSON = get_task("person")
ORDER = get_task("order_lookup")
CELLS = {variant: cell_of(ADAPTER, mode=Mode.TOOL, variant=variant) for variant in ("default", "hardened", "stream")}
SMALL_CAP = 4
"""The call cap for the persistent faults of the default budget (20 steps): runaway either way."""


def _plan(runner: SmolagentsRunner) -> dict[str, Coroutine[Any, Any, CellRun]]:
    default, hardened, stream = CELLS["default"], CELLS["hardened"], CELLS["stream"]
    violation = {"schema_violation": "missing_field"}
    return {
        "valid": runner(default, ["valid"]),
        "valid_stream": runner(stream, ["valid"]),
        "violation_then_valid": runner(default, [violation, "valid"]),
        "violation_persistent": runner(default, [violation], call_cap=SMALL_CAP),
        "violation_persistent_hardened": runner(hardened, [violation]),
        "wrong_then_valid": runner(default, ["wrong", "valid"]),
        "wrong_then_valid_hardened": runner(hardened, ["wrong", "valid"]),
        "http_400": runner(default, [{"http_error": 400}]),
        "tool_ok": runner.scenario(default, "tool_ok"),
        "tool_bad_args_then_ok": runner.scenario(default, "tool_bad_args_then_ok"),
        "tool_unknown_order_then_ok": runner.scenario(stream, "tool_unknown_order_then_ok"),
        "tool_permission_denied": runner.scenario(default, "tool_permission_denied", call_cap=SMALL_CAP),
        "tool_parallel_ok": runner.scenario(default, "tool_parallel_ok"),
        "tool_parallel_with_answer": runner.scenario(hardened, "tool_parallel_with_answer"),
    }


@pytest.fixture(scope="module")
def runs(provider: LocalProvider) -> dict[str, Any]:
    """Every cell the tests read, driven once; then the threads and processes left behind."""
    runner = SmolagentsRunner(provider, ADAPTER)
    children = {child.pid for child in psutil.Process().children(recursive=True)}

    async def drive_all() -> dict[str, CellRun]:
        plan = _plan(runner)
        return dict(zip(plan, await asyncio.gather(*plan.values()), strict=True))

    ran: dict[str, Any] = asyncio.run(drive_all())
    for thread in _cell_threads():  # a runaway cell's thread ends once its run closed (research.md)
        thread.join(timeout=30)
    ran["threads_left"] = [thread.name for thread in _cell_threads()]
    ran["new_children"] = {child.pid for child in psutil.Process().children(recursive=True)} - children
    return ran


def _cell_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith(THREAD_PREFIX)]


def test_only_the_final_answer_tool_on_chat_completions_runs_and_the_rest_says_why() -> None:
    cells = {(c.mode, c.protocol, str(c.variant)): c for c in ADAPTER.cells()}
    runnable = {key for key, c in cells.items() if c.mode_support is not ModeSupport.UNSUPPORTED}
    assert runnable == {(Mode.TOOL, Protocol.CHAT, variant) for variant in ("default", "hardened", "stream")}
    assert "litellm" in cells[(Mode.TOOL, Protocol.RESPONSES, "default")].note
    assert "litellm" in cells[(Mode.TOOL, Protocol.ANTHROPIC, "stream")].note
    assert "response_format" in cells[(Mode.NATIVE, Protocol.CHAT, "default")].note
    assert "tool_choice='required'" in cells[(Mode.PROMPTED, Protocol.CHAT, "default")].note
    assert ADAPTER.tool_support(CELLS["default"]) is None
    assert ADAPTER.tool_support(cells[(Mode.TOOL, Protocol.RESPONSES, "default")]) is not None


def test_a_valid_answer_is_the_type_after_one_call_plain_and_streamed(runs: dict[str, Any]) -> None:
    for name in ("valid", "valid_stream"):
        ran: CellRun = runs[name]
        assert ran.result.exception is None, ran.result.exception
        assert isinstance(ran.result.output, PERSON.output_model) and PERSON.check(ran.result.output) is None
        assert len(ran.calls) == 1 and ran.result.usage is not None
        body = ran.attempts[0].request_body or {}
        assert body.get("tool_choice") == "required" and bool(body.get("stream")) is (name == "valid_stream")
    assert runs["valid"].result.details["run_status"] == "success"


def test_an_answer_that_does_not_fit_is_fed_back_as_a_tool_error(runs: dict[str, Any]) -> None:
    """The typed tool's arguments fail ``validate_tool_arguments`` (tools.py:1385-1407):
    ``AgentToolCallError``, kept in the step and shown to the model (agents.py:1476-1478, 597-599)."""
    ran: CellRun = runs["violation_then_valid"]
    assert isinstance(ran.result.output, PERSON.output_model) and len(ran.calls) == 2
    second = str((ran.attempts[1].request_body or {}).get("messages"))
    assert "Error:" in second and "email" in second


def test_a_persistent_misfit_runs_the_whole_step_budget(runs: dict[str, Any]) -> None:
    """Default: 20 steps (agents.py:300), so the call cap ends it first. Hardened: 3 steps, then one
    call without tools whose text is returned unchecked (agents.py:606-607, 810-853)."""
    assert runs["violation_persistent"].stopped is Outcome.RUNAWAY
    hardened: CellRun = runs["violation_persistent_hardened"]
    assert hardened.result.exception is None and len(hardened.calls) == HARDENED_MAX_STEPS + 1
    assert isinstance(hardened.result.output, str) and hardened.result.details["run_status"] == "max_steps_error"
    assert "tools" not in (hardened.attempts[-1].request_body or {})


def test_a_wrong_answer_is_handed_on_unless_a_final_answer_check_raises(runs: dict[str, Any]) -> None:
    """The typed tool checks the schema only; the hardened check raises, which is an ``AgentError``
    fed back (agents.py:589-599, 613-618)."""
    wrong: CellRun = runs["wrong_then_valid"]
    assert len(wrong.calls) == 1 and PERSON.check(wrong.result.output) is not None
    checked: CellRun = runs["wrong_then_valid_hardened"]
    assert len(checked.calls) == 2 and PERSON.check(checked.result.output) is None
    assert "matches_the_request" in str((checked.attempts[1].request_body or {}).get("messages"))


def test_an_http_error_raises_agent_generation_error_at_once(runs: dict[str, Any]) -> None:
    """A model error is ``AgentGenerationError``, re-raised out of the loop (agents.py:1324-1325,
    594-596); the client's own retries do not cover a 400."""
    ran: CellRun = runs["http_400"]
    assert isinstance(ran.result.exception, AgentGenerationError) and len(ran.calls) == 1


def test_tool_errors_are_fed_back_and_calls_come_back_as_text(runs: dict[str, Any]) -> None:
    """Tool results go back as a user message "Observation: ...", the calls as assistant text
    (memory.py:99-135, models.py:282-285): no ``tool`` message pairs a call id."""
    ok: CellRun = runs["tool_ok"]
    assert isinstance(ok.result.output, ORDER.output_model) and ok.tool_calls == 1 and len(ok.calls) == 2
    assert ok.tool_result(0, 1) is None and ok.attempts[1].tool_results == ()
    assert "1Z999AA10123456784" in str((ok.attempts[1].request_body or {}).get("messages"))
    bad_args: CellRun = runs["tool_bad_args_then_ok"]  # rejected before the tool runs (agents.py:1476-1478)
    assert bad_args.tool_calls == 1 and len(bad_args.calls) == 3
    unknown: CellRun = runs["tool_unknown_order_then_ok"]
    assert unknown.tool_calls == 2 and isinstance(unknown.result.output, ORDER.output_model)


def test_a_fatal_tool_error_is_fed_back_like_any_other(runs: dict[str, Any]) -> None:
    """Every tool exception is ``AgentToolExecutionError`` (agents.py:1483-1502): nothing stops the
    loop, so a permission error is retried until the step budget or the call cap."""
    denied: CellRun = runs["tool_permission_denied"]
    assert denied.stopped is Outcome.RUNAWAY and denied.tool_calls >= 2


def test_parallel_calls_run_together_and_an_answer_beside_a_call_is_refused(runs: dict[str, Any]) -> None:
    """Several calls run in a ``ThreadPoolExecutor`` (agents.py:1424-1434); ``final_answer`` beside
    another call is an ``AgentExecutionError`` fed back (agents.py:1340-1344)."""
    parallel: CellRun = runs["tool_parallel_ok"]
    assert parallel.tool_calls == 2 and isinstance(parallel.result.output, ORDER.output_model)
    beside: CellRun = runs["tool_parallel_with_answer"]
    assert beside.tool_calls >= 1 and len(beside.calls) == 2
    assert "do not perform any other tool calls" in str((beside.attempts[1].request_body or {}).get("messages"))


def test_a_cell_leaves_no_thread_and_no_process_behind(runs: dict[str, Any]) -> None:
    assert runs["threads_left"] == [] and runs["new_children"] == set()
