"""AutoGen AgentChat through ``bench run``'s own path: its cells run in the worker of its own
environment (adapters/autogen_agentchat/environment.txt), against the local provider over loopback.

One run of a small matrix per module (one worker start), many assertions on it. The expectations
are read from autogen-agentchat / autogen-ext 0.7.5 (adapters/autogen_agentchat/research.md; paths
under the environment's site-packages): the agent validates the final text with
``model_validate_json`` and never re-asks (agents/_assistant_agent.py:1154, 1476); the official
client's ``parse`` validates first on the non-streamed path; after a tool call the agent makes one
reflection call with no tools offered, and anything but text there is a ``RuntimeError`` (:1457-1458)."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from bench.report.claims import evaluate, load_claims
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = pytest.mark.serial  # builds (or reuses) the environment and starts its worker

SLOW_FIXTURES = ("autogen_runs",)
SCENARIOS = frozenset(
    {
        "valid",
        "malformed_then_valid",
        "wrong_then_valid",
        "http_400_persistent",
        "tool_ok",
        "tool_bad_args_then_ok",
        "tool_permission_denied",
        "tool_parallel_ok",
        "stall_mid_stream",
    }
)
VALIDATION = "pydantic_core._pydantic_core.ValidationError"


@pytest.fixture(scope="module")
def autogen_runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("autogen")
    filters = Filters(scenarios=SCENARIOS)
    run_suite(SuiteRequest(sdks=("autogen-agentchat",), filters=filters, results_root=root, suite="full"))
    directory = latest_run(root)
    assert directory is not None
    return load_run(directory)["runs"]


def _cells(runs: pd.DataFrame, scenario: str, **where: str) -> pd.DataFrame:
    rows = runs[(runs.scenario == scenario) & (runs.outcome != "unsupported")]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def test_native_chat_runs_in_its_own_environment_and_the_rest_is_unsupported(autogen_runs: pd.DataFrame) -> None:
    ran = autogen_runs[autogen_runs.outcome != "unsupported"]
    assert set(ran.sdk_version) == {"0.7.5"} and set(ran.environment) == {"autogen-agentchat==0.7.5"}
    assert "autogen_agentchat" not in sys.modules  # the parent planned the cells without the SDK
    assert set(zip(ran["mode"], ran.protocol, strict=True)) == {("native", "openai-chat")}
    valid = _cells(autogen_runs, "valid")
    assert set(valid.outcome) == {"ok"} and set(valid.model_calls) == {1} and len(valid) == 4
    unsupported = autogen_runs[(autogen_runs.outcome == "unsupported") & (autogen_runs.scenario == "valid")]
    notes = dict(zip(unsupported.protocol + "/" + unsupported["mode"], unsupported.note, strict=True))
    assert "not supported for Anthropic" in notes["anthropic-messages/native"]
    assert "no Responses API model client" in notes["openai-responses/native"]
    assert "no output tool and no prompted mode" in notes["openai-chat/tool"]


def test_an_answer_that_does_not_fit_raises_after_one_call(autogen_runs: pd.DataFrame) -> None:
    """No re-ask in any variant: parse's ValidationError on run(); the streamed parse's ValueError
    from the client's partial JSON reader on run_stream()."""
    malformed = _cells(autogen_runs, "malformed_then_valid")
    assert set(malformed.outcome) == {"raised"} and set(malformed.model_calls) == {1}
    streamed = malformed.variant == "stream"
    assert set(malformed[~streamed].exception_type) == {VALIDATION}
    assert set(malformed[streamed].exception_type) == {"builtins.ValueError"}


def test_a_wrong_answer_is_handed_on_and_an_http_400_raises_the_clients_error(autogen_runs: pd.DataFrame) -> None:
    wrong = _cells(autogen_runs, "wrong_then_valid")
    assert set(wrong.outcome) == {"wrong"} and set(wrong.model_calls) == {1}
    rejected = _cells(autogen_runs, "http_400_persistent")
    assert set(rejected.exception_type) == {"openai.BadRequestError"} and set(rejected.model_calls) == {1}


def test_the_tool_runs_then_one_reflection_call_answers(autogen_runs: pd.DataFrame) -> None:
    """tool_ok and two parallel calls: the tool's results, then the reflection's structured answer
    (2 calls); with reflection off the tool's summary is the final message, after 1 call."""
    for scenario, tools in (("tool_ok", 1), ("tool_parallel_ok", 2)):
        rows = _cells(autogen_runs, scenario)
        reflecting = rows[rows.variant != "no_reflection"]
        assert set(reflecting.outcome) == {"ok"} and set(reflecting.model_calls) == {2}
        assert set(reflecting.tool_calls) == {tools}
        summary = rows[rows.variant == "no_reflection"]
        assert set(summary.model_calls) == {1} and set(summary.outcome) != {"ok"}


def test_a_failed_tool_call_is_retried_only_within_max_tool_iterations(autogen_runs: pd.DataFrame) -> None:
    """max_tool_iterations=1: the model's second tool call lands in the reflection, which offers
    no tools, and raises RuntimeError; the hardened 5 iterations let it recover, and a fatal tool
    error is re-called until they run out (the agent does not tell fatal from retryable)."""
    bad = _cells(autogen_runs, "tool_bad_args_then_ok")
    for variant in ("default", "stream"):
        assert set(bad[bad.variant == variant].exception_type) == {"builtins.RuntimeError"}
    hardened = bad[bad.variant == "hardened"]
    assert set(hardened.outcome) == {"recovered"} and set(hardened.model_calls) == {3}
    assert set(hardened.tool_error_to_model) == {True}
    fatal = _cells(autogen_runs, "tool_permission_denied", variant="hardened")
    assert set(fatal.tool_calls) == {5} and set(fatal.exception_type) == {"builtins.RuntimeError"}


def test_a_hung_cell_is_ended_at_its_time_limit_and_the_run_goes_on(autogen_runs: pd.DataFrame) -> None:
    """An answer that stops half-way for an hour, streamed or not: the cell's limit
    (``time_limit_s`` = 15 s) ends it in the worker, whose other cells of the run were measured."""
    from adapters.autogen_agentchat.adapter import AutogenAdapter

    stalled = _cells(autogen_runs, "stall_mid_stream")
    assert len(stalled) == 4 and set(stalled.outcome) == {"timeout"}
    assert set(stalled.time_limit_s) == {AutogenAdapter.time_limit_s}
    # ended by the stall limit, not by the hour (the limit counts from the last progress, plus the
    # time the loop waited for a CPU: bench.run.runner.drive)
    assert (stalled.latency_ms < 600_000).all()


def test_the_docs_claim_is_judged_on_these_cells(autogen_runs: pd.DataFrame) -> None:
    """claims.yaml's autogen-structured-message, judged here: the docs' promise holds as far as it
    goes; an answer that does not fit is a raise, never a TextMessage in the object's place."""
    (claim,) = [c for c in evaluate(load_claims(), autogen_runs) if c["id"] == "autogen-structured-message"]
    assert [check["verdict"] for check in claim["checks"]] == ["confirmed", "confirmed", "confirmed"]
    assert claim["verdict"] == "confirmed"
