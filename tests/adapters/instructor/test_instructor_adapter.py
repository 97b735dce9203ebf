"""Instructor through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/instructor/environment.txt), against the local provider over loopback.

The expectations are read from instructor 1.17.0's source (adapters/instructor/research.md; paths
under the environment's site-packages/instructor): ``create`` re-asks on a ValidationError or a
JSONDecodeError up to ``max_retries`` (default 3: 4 calls, v2/core/retry.py:571, 657-707), then
raises ``InstructorRetryException``; any other error ends the loop at once, wrapped the same way
(:710-740); a length finish is ``IncompleteOutputException``, never retried (:655-656,
v2/providers/openai/handlers.py:744-745); ``create_partial`` validates as it streams and retries
nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = pytest.mark.serial  # builds (or reuses) the instructor environment and starts its workers

SLOW_FIXTURES = ("instructor_runs",)
SCENARIOS = frozenset(
    {
        "valid",
        "malformed_then_valid",
        "malformed_fenced_prose_persistent",
        "wrong_then_valid",
        "wrong_persistent",
        "truncated_then_valid",
        "refusal_then_valid",
        "http_400_persistent",
        "schema_violation_persistent",
    }
)
RETRY = "instructor.v2.core.errors.InstructorRetryException"
INCOMPLETE = "instructor.v2.core.errors.IncompleteOutputException"


@pytest.fixture(scope="module")
def instructor_runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("instructor")
    run_suite(SuiteRequest(sdks=("instructor",), filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    loaded = load_run(directory)
    runs = loaded["runs"]
    ran = runs[runs.outcome != "unsupported"].copy()
    ran.attrs["manifest"] = loaded["manifest"]
    return ran


def _cells(runs: pd.DataFrame, scenario: str, **where: str) -> pd.DataFrame:
    rows = runs[runs.scenario == scenario]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def test_the_cells_ran_in_instructors_own_environment_not_in_this_process(instructor_runs: pd.DataFrame) -> None:
    assert set(instructor_runs.sdk_version) == {"1.17.0"}
    assert set(instructor_runs.environment) == {"instructor==1.17.0"}
    assert instructor_runs.attrs["manifest"]["sdk_versions"] == {"instructor": "1.17.0"}
    assert "instructor" not in sys.modules  # the parent planned the cells without the SDK
    assert set(instructor_runs.outcome) - {"ok", "recovered", "raised", "wrong", "empty"} == set()
    valid = _cells(instructor_runs, "valid")
    assert set(valid.outcome) == {"ok"} and len(valid) == 22  # 9 tool, 6 native, 7 prompted cells


def test_create_feeds_a_validation_error_back_until_max_retries(instructor_runs: pd.DataFrame) -> None:
    """The claim "validation errors are sent back to the model as a retry": one re-ask recovers;
    a persistent violation raises after max_retries=3 re-asks, 4 calls."""
    created = instructor_runs[~instructor_runs.stream]
    recovered = _cells(created, "malformed_then_valid")
    assert set(recovered.outcome) == {"recovered"} and set(recovered.model_calls) == {2}
    persistent = _cells(created, "schema_violation_persistent")
    assert set(persistent.exception_type) == {RETRY} and set(persistent.model_calls) == {4}


def test_a_wrong_answer_is_returned_unless_the_hardened_validator_rejects_it(instructor_runs: pd.DataFrame) -> None:
    created = instructor_runs[~instructor_runs.stream]
    default = _cells(created, "wrong_then_valid", variant="default")
    assert set(default.outcome) == {"wrong"} and set(default.model_calls) == {1}
    hardened = _cells(created, "wrong_then_valid", variant="hardened")
    assert set(hardened.outcome) == {"recovered"} and set(hardened.model_calls) == {2}
    assert set(_cells(created, "wrong_persistent", variant="hardened").model_calls) == {4}


def test_a_length_finish_is_incomplete_output_at_once_but_responses_has_no_finish_reason(
    instructor_runs: pd.DataFrame,
) -> None:
    """Chat and Anthropic check the stop reason before parsing (v2/providers/openai/handlers.py:744-745);
    the Responses tools handler reads the cut arguments as any others, so they are re-asked."""
    created = instructor_runs[~instructor_runs.stream]
    truncated = _cells(created, "truncated_then_valid")
    responses = truncated.protocol == "openai-responses"
    assert set(truncated[~responses].exception_type) == {INCOMPLETE}
    assert set(truncated[~responses].model_calls) == {1}
    assert set(truncated[responses].outcome) == {"recovered"}


def test_a_chat_tool_refusal_is_an_assertion_error_not_retried(instructor_runs: pd.DataFrame) -> None:
    """``_extract_tool_call_json`` raises AssertionError on a refusal (v2/providers/openai/handlers.py:604-606),
    not a retryable parse error: the loop ends and wraps it after 1 call."""
    created = instructor_runs[~instructor_runs.stream]
    tool = _cells(created, "refusal_then_valid", mode="tool", protocol="openai-chat")
    assert set(tool.exception_type) == {RETRY} and set(tool.model_calls) == {1}
    assert tool.exception_message.str.contains("Unable to generate a response").all()
    json_modes = _cells(created, "refusal_then_valid", mode="native")
    assert set(json_modes.outcome) == {"recovered"}


def test_md_json_reads_the_fenced_answer_out_of_the_prose(instructor_runs: pd.DataFrame) -> None:
    fenced = _cells(instructor_runs, "malformed_fenced_prose_persistent", variant="md_json")
    assert set(fenced.outcome) == {"ok"}
    json_mode = _cells(instructor_runs, "malformed_fenced_prose_persistent", variant="default", mode="tool")
    assert set(json_mode.exception_type) == {RETRY}


def test_an_http_error_is_wrapped_in_the_retry_exception_after_one_call(instructor_runs: pd.DataFrame) -> None:
    rows = _cells(instructor_runs, "http_400_persistent")
    assert set(rows.exception_type) == {RETRY} and set(rows.model_calls) == {1}


def test_create_partial_retries_nothing(instructor_runs: pd.DataFrame) -> None:
    """The partial stream validates each chunk as it comes (v2/core/retry.py is never re-entered for
    a stream already handed to the caller): one call, whatever the fault."""
    streamed = instructor_runs[instructor_runs.stream]
    faults = streamed[streamed.scenario != "valid"]
    assert set(faults.model_calls) == {1}
    assert set(_cells(streamed, "schema_violation_persistent").exception_type) == {
        "pydantic_core._pydantic_core.ValidationError"
    }


def test_the_environment_lock_is_what_the_cells_ran(instructor_runs: pd.DataFrame) -> None:
    from adapters.instructor.adapter import InstructorAdapter
    from bench.sdk.environment import lock_of, pins

    lock = lock_of(InstructorAdapter())
    assert lock == Path(__file__).resolve().parents[3] / "adapters" / "instructor" / "environment.txt"
    assert pins(lock)["instructor"] == "1.17.0"
