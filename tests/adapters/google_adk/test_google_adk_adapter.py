"""Google ADK through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/google_adk/environment.txt), against the local provider over loopback.

The expectations are read from google-adk 2.13.0's source (adapters/google_adk/research.md; paths
under the environment's site-packages/google/adk): ``output_key`` with ``output_schema`` runs
``validate_schema`` on the final text and raises its ValidationError out of the run, never fed back
(agents/llm_agent.py:1140-1146, utils/_schema_utils.py:250-252); a schema-valid wrong answer is
stored as it is (no validator hook on output_schema); only native cells run."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = [pytest.mark.serial, pytest.mark.slow]  # builds (or reuses) the google-adk environment

SCENARIOS = frozenset({"valid", "malformed_then_valid", "wrong_persistent", "schema_violation_persistent"})
VALIDATION = "pydantic_core._pydantic_core.ValidationError"


@pytest.fixture(scope="module")
def adk_runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("google-adk")
    run_suite(SuiteRequest(sdks=("google-adk",), filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    return load_run(directory)["runs"]


def _ran(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    rows = runs[(runs.scenario == scenario) & (runs.outcome != "unsupported")]
    assert not rows.empty, scenario
    return rows


def test_the_native_cells_ran_in_adks_own_environment_not_in_this_process(adk_runs: pd.DataFrame) -> None:
    assert set(adk_runs.sdk_version) == {"2.13.0"}
    assert "google.adk" not in sys.modules  # the parent planned the cells without the SDK
    valid = _ran(adk_runs, "valid")
    assert set(valid.outcome) == {"ok"} and len(valid) == 9  # native x 3 protocols x 3 variants
    assert set(valid["mode"]) == {"native"}


def test_tool_and_prompted_cells_are_unsupported_with_the_source_reason(adk_runs: pd.DataFrame) -> None:
    unsupported = adk_runs[(adk_runs.scenario == "valid") & (adk_runs.outcome == "unsupported")]
    assert set(unsupported["mode"]) == {"tool", "prompted"} and len(unsupported) == 18
    assert unsupported.note.str.contains("_schema.py").all()


def test_a_validation_failure_raises_out_of_the_run_and_is_never_fed_back(adk_runs: pd.DataFrame) -> None:
    """validate_schema raises in __maybe_save_output_to_state (agents/llm_agent.py:1146): one call."""
    for scenario in ("malformed_then_valid", "schema_violation_persistent"):
        rows = _ran(adk_runs, scenario)
        assert set(rows.outcome) == {"raised"}, scenario
        assert set(rows.exception_type) == {VALIDATION} and set(rows.model_calls) == {1}, scenario


def test_a_schema_valid_wrong_answer_reaches_the_caller(adk_runs: pd.DataFrame) -> None:
    rows = _ran(adk_runs, "wrong_persistent")
    assert set(rows.outcome) == {"wrong"} and set(rows.model_calls) == {1}
