"""CrewAI through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/crewai/environment.txt), against the local provider over loopback.

The expectations are read from crewai 1.15.30's source (adapters/crewai/research.md; paths under the
environment's site-packages/crewai): a failed answer is never fed back, any exception from the agent's
run re-runs the whole task from the same prompt ``max_retry_limit=2`` times, 3 calls, then reaches
the caller as raised (agent/core.py:301-304, 884-888, 1158-1160); a schema-valid wrong answer is
returned unless a task guardrail rejects it, and a guardrail's reason is fed back (task.py:1464-1512)."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = pytest.mark.serial  # builds (or reuses) the crewai environment and starts its workers

SLOW_FIXTURES = ("crewai_runs",)
SCENARIOS = frozenset({"valid", "wrong_then_valid", "http_400_persistent", "http_429_then_valid"})


@pytest.fixture(scope="module")
def crewai_runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("crewai")
    run_suite(SuiteRequest(sdks=("crewai",), filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    loaded = load_run(directory)
    runs = loaded["runs"]
    runs.attrs["manifest"] = loaded["manifest"]
    return runs


def _cells(runs: pd.DataFrame, scenario: str, **where: str) -> pd.DataFrame:
    rows = runs[(runs.scenario == scenario) & (runs.outcome != "unsupported")]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def test_the_cells_ran_in_crewais_own_environment_not_in_this_process(crewai_runs: pd.DataFrame) -> None:
    ran = crewai_runs[crewai_runs.outcome != "unsupported"]
    assert set(ran.sdk_version) == {"1.15.30"}
    assert set(ran.environment) == {"crewai==1.15.30"}
    assert "crewai" not in sys.modules  # the parent planned the cells without the SDK
    valid = _cells(crewai_runs, "valid")
    assert set(valid.outcome) == {"ok"} and set(valid.model_calls) == {1}
    assert len(valid) == 16  # native on 3 protocols + tool on Anthropic, in 4 variants


def test_prompted_and_the_openai_tool_cells_are_unsupported_with_the_source_reason(crewai_runs: pd.DataFrame) -> None:
    unsupported = crewai_runs[(crewai_runs.outcome == "unsupported") & (crewai_runs.scenario == "valid")]
    assert set(unsupported["mode"]) == {"prompted", "tool"}
    assert set(unsupported[unsupported["mode"] == "tool"].protocol) == {"openai-chat", "openai-responses"}


def test_a_wrong_answer_is_returned_unless_the_guardrail_feeds_its_reason_back(crewai_runs: pd.DataFrame) -> None:
    wrong = _cells(crewai_runs, "wrong_then_valid")
    hardened = wrong.variant == "hardened"
    assert set(wrong[~hardened].outcome) == {"wrong"} and set(wrong[~hardened].model_calls) == {1}
    assert set(wrong[hardened].outcome) == {"recovered"} and set(wrong[hardened].model_calls) == {2}


def test_an_http_error_reruns_the_whole_task_max_retry_limit_times_then_raises(crewai_runs: pd.DataFrame) -> None:
    """A 400 is not retried by the client; CrewAI's agent re-runs the task twice (3 calls) and the
    provider's error reaches the caller as the client raised it."""
    rejected = _cells(crewai_runs, "http_400_persistent")
    assert set(rejected.outcome) == {"raised"} and set(rejected.model_calls) == {3}
    assert set(rejected.exception_type) == {"openai.BadRequestError", "anthropic.BadRequestError"}


def test_a_429_is_retried_by_the_provider_client_once(crewai_runs: pd.DataFrame) -> None:
    """The LLM keeps the client's max_retries=2 (llms/providers/openai/completion.py:376)."""
    limited = _cells(crewai_runs, "http_429_then_valid")
    assert set(limited.outcome) == {"recovered"} and set(limited.model_calls) == {2}
