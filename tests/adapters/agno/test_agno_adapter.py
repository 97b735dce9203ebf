"""agno through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/agno/environment.txt), against the local provider over loopback.

The expectations are read from agno 3.1.10's source (adapters/agno/research.md; paths under the
environment's site-packages/agno): an answer that does not fit is a logged warning and the raw
string is returned (agent/_response.py:904-938); a model error is caught and returned as a
``RunOutput`` with ``status=ERROR`` (agent/_run.py:1898-1925); ``Agent(retries=N)`` re-runs the
turn on any exception (:1570); a tool's exception is fed back as its result
(tools/function.py:2706-2725)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from bench.report.claims import evaluate, load_claims
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite
from tests.adapters.agno.agno_registration import agno_registered

pytestmark = pytest.mark.serial  # builds (or reuses) the agno environment and starts its workers

SLOW_FIXTURES = ("agno_runs",)
SCENARIOS = frozenset(
    {
        "valid",
        "malformed_then_valid",
        "schema_violation_then_valid",
        "truncated_then_valid",
        "wrong_then_valid",
        "http_400_persistent",
        "http_429_then_valid",
        "tool_ok",
        "tool_unknown_order_persistent",
    }
)


@pytest.fixture(scope="module")
def agno_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, pd.DataFrame]]:
    root = tmp_path_factory.mktemp("agno")
    with agno_registered(root / "registration"):
        run_suite(SuiteRequest(sdks=("agno",), filters=Filters(scenarios=SCENARIOS), results_root=root / "runs"))
    directory = latest_run(root / "runs")
    assert directory is not None
    loaded = load_run(directory)
    yield {"runs": loaded["runs"], "attempts": loaded["attempts"], "manifest": loaded["manifest"]}


def _ran(runs: pd.DataFrame, scenario: str, **where: object) -> pd.DataFrame:
    rows = runs[(runs.scenario == scenario) & (runs.outcome != "unsupported")]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def _status(rows: pd.DataFrame) -> set[str]:
    return {details["run_status"] for details in rows.details}


def test_the_cells_ran_in_agnos_own_environment(agno_runs: dict[str, pd.DataFrame]) -> None:
    runs = agno_runs["runs"]
    assert set(runs.sdk_version) == {"3.1.10"}
    assert set(runs[runs.outcome != "unsupported"].environment) == {"agno==3.1.10"}
    assert "agno" not in sys.modules  # the parent planned the cells without the SDK
    valid = _ran(runs, "valid")
    assert set(valid.outcome) == {"ok"} and len(valid) == 18  # 2 modes x 3 protocols x 3 variants


def test_tool_mode_is_unsupported_with_the_reason(agno_runs: dict[str, pd.DataFrame]) -> None:
    runs = agno_runs["runs"]
    tool = runs[(runs.scenario == "valid") & (runs["mode"] == "tool")]
    assert len(tool) == 9 and set(tool.outcome) == {"unsupported"}
    assert tool.note.str.startswith("agno has no output tool").all()


def _bodies(agno_runs: dict[str, pd.DataFrame], mode: str, protocol: str) -> list[dict[str, object]]:
    runs, attempts = agno_runs["runs"], agno_runs["attempts"]
    cells = set(_ran(runs, "valid", mode=mode, protocol=protocol, variant="default").run_id)
    return [json.loads(body) for body in attempts[attempts.run_id.isin(cells)].request_body]


def test_the_switch_on_sends_the_schema_and_off_sends_json_object_and_a_prompt(
    agno_runs: dict[str, pd.DataFrame],
) -> None:
    """agent/_response.py:857-897: native is the model's structured-output parameter (chat
    strict json_schema, chat.py:228-240; Anthropic output_config.format, claude.py:335-368, 702-713); prompted
    (use_json_mode=True) is json_object plus the JSON prompt (agent/_messages.py:1184-1194), and
    Claude drops json_object (claude.py:371-374)."""
    (chat_native,) = _bodies(agno_runs, "native", "openai-chat")
    assert chat_native["response_format"]["type"] == "json_schema"  # type: ignore[index]
    assert chat_native["response_format"]["json_schema"]["strict"] is True  # type: ignore[index]
    (chat_prompted,) = _bodies(agno_runs, "prompted", "openai-chat")
    assert chat_prompted["response_format"] == {"type": "json_object"}
    assert "Provide your output as a JSON" in json.dumps(chat_prompted["messages"])
    (anthropic_native,) = _bodies(agno_runs, "native", "anthropic-messages")
    assert anthropic_native["output_config"]["format"]["type"] == "json_schema"  # type: ignore[index]
    (anthropic_prompted,) = _bodies(agno_runs, "prompted", "anthropic-messages")
    assert "output_config" not in anthropic_prompted and "Provide your output as a JSON" in json.dumps(
        anthropic_prompted["system"]
    )


def test_an_answer_that_does_not_fit_is_returned_as_a_string_after_one_call(
    agno_runs: dict[str, pd.DataFrame],
) -> None:
    """No re-ask, no exception: agent/_response.py:904-938 logs and keeps the raw string."""
    rows = _ran(agno_runs["runs"], "malformed_then_valid")
    assert set(rows.outcome) == {"empty"} and set(rows.model_calls) == {1}
    assert rows.exception_type.isna().all() and _status(rows) == {"COMPLETED"}
    wrong = _ran(agno_runs["runs"], "wrong_then_valid")
    assert set(wrong.outcome) == {"wrong"} and set(wrong.model_calls) == {1}


def test_a_model_error_is_returned_not_raised_and_run_retries_rerun_even_a_400(
    agno_runs: dict[str, pd.DataFrame],
) -> None:
    """agent/_run.py:1898-1925: status ERROR, the error text as content; retries=2 re-runs any
    exception, a 400 too (:1570, no status check): 3 calls. The stream yields a RunErrorEvent."""
    runs = agno_runs["runs"]
    default = _ran(runs, "http_400_persistent", variant="default")
    assert set(default.model_calls) == {1} and default.exception_type.isna().all()
    assert _status(default) == {"ERROR"}
    hardened = _ran(runs, "http_400_persistent", variant="hardened")
    assert set(hardened.model_calls) == {3} and _status(hardened) == {"ERROR"}
    streamed = _ran(runs, "http_400_persistent", variant="stream")
    assert _status(streamed) == {"RunErrorEvent model_provider_error"}
    recovered = _ran(runs, "http_429_then_valid")
    assert set(recovered.outcome) == {"recovered"} and set(recovered.client_retries) == {1}


def test_the_harness_tool_runs_and_its_error_is_fed_back(agno_runs: dict[str, pd.DataFrame]) -> None:
    """tools/function.py:2713-2717: the tool's exception becomes its result text, the loop goes on
    until the call cap (no fatal/retryable distinction, no tool budget by default)."""
    runs = agno_runs["runs"]
    ok = _ran(runs, "tool_ok")
    assert set(ok.outcome) == {"ok"} and set(ok.tool_calls) == {1} and set(ok.model_calls) == {2}
    looping = _ran(runs, "tool_unknown_order_persistent")
    assert set(looping.outcome) == {"runaway"} and (looping.tool_error_to_model == looping.tool_errors).all()


def test_the_docs_claim_is_judged_on_these_cells(agno_runs: dict[str, pd.DataFrame]) -> None:
    """claims.yaml's agno-validated-object, judged here: the default run the report's claims test
    judges holds the built-in SDKs only (tests/report/test_build.py, CLAIMS_JUDGED_ELSEWHERE)."""
    (claim,) = [c for c in evaluate(load_claims(), agno_runs["runs"]) if c["id"] == "agno-validated-object"]
    assert [check["verdict"] for check in claim["checks"]] == ["confirmed", "refuted"]
    assert claim["verdict"] == "refuted"  # the docs say "validates"; an answer that does not fit comes back a string


def test_the_environment_lock_is_what_the_cells_ran() -> None:
    from adapters.agno.adapter import AgnoAdapter
    from bench.sdk.environment import lock_of, pins

    lock = lock_of(AgnoAdapter())
    assert lock == Path(__file__).resolve().parents[3] / "adapters" / "agno" / "environment.txt"
    assert pins(lock)["agno"] == "3.1.10"
