"""DSPy through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/dspy/environment.txt), against the local provider over loopback.

The expectations are read from dspy 3.4.1's source (adapters/dspy/research.md; paths under the
environment's site-packages/dspy): the JSONAdapter repairs the reply with ``json_repair`` and casts
each field (adapters/json_adapter.py:140-180), and never falls back (adapters/chat_adapter.py:110,
``isinstance(self, JSONAdapter)``); the ChatAdapter reads ``[[ ## field ## ]]`` sections, which the
provider's JSON replies never hold, so each of its cells makes its one JSON fall-back call
(adapters/chat_adapter.py:96-112); a 429 is retried by the LM's ``num_retries=3``
(clients/lm.py:211); no cache answers a cell (``cache=False``, clients/lm.py:358-368)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = [pytest.mark.serial, pytest.mark.slow]  # builds (or reuses) the dspy environment, starts its workers

SCENARIOS = frozenset(
    {
        "valid",
        "malformed_then_valid",
        "malformed_fenced_prose_persistent",
        "wrong_then_valid",
        "truncated_then_valid",
        "refusal_then_valid",
        "http_429_then_valid",
        "schema_violation_persistent",
    }
)
PARSE_ERROR = "dspy.utils.exceptions.AdapterParseError"


@pytest.fixture(scope="module")
def dspy_runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("dspy")
    run_suite(SuiteRequest(sdks=("dspy",), filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    loaded = load_run(directory)
    runs = loaded["runs"]
    ran = runs[runs.outcome != "unsupported"].copy()
    ran.attrs["manifest"] = loaded["manifest"]
    ran.attrs["unsupported"] = runs[runs.outcome == "unsupported"]
    return ran


def _cells(runs: pd.DataFrame, scenario: str, mode: str) -> pd.DataFrame:
    rows = runs[(runs.scenario == scenario) & (runs["mode"] == mode)]
    assert len(rows) == 3, (scenario, mode)  # one cell per protocol
    return rows


def test_the_cells_ran_in_dspys_own_environment_on_all_three_protocols(dspy_runs: pd.DataFrame) -> None:
    assert set(dspy_runs.sdk_version) == {"3.4.1"}
    assert set(dspy_runs.environment) == {"dspy==3.4.1"}
    assert dspy_runs.attrs["manifest"]["sdk_versions"] == {"dspy": "3.4.1"}
    assert "dspy" not in sys.modules  # the parent planned the cells without the SDK
    assert set(dspy_runs.protocol) == {"openai-chat", "openai-responses", "anthropic-messages"}
    assert set(dspy_runs["mode"]) == {"native"} and set(dspy_runs.variant) == {"default"}
    unsupported = dspy_runs.attrs["unsupported"]
    assert set(unsupported[unsupported["mode"] == "tool"].variant) == {"default"}


def test_the_json_adapter_repairs_malformed_json_in_one_call(dspy_runs: pd.DataFrame) -> None:
    """json_repair.loads (adapters/json_adapter.py:142) mends a trailing comma, and the object is
    cut out of fenced prose (:144-149): no second call."""
    for scenario in ("valid", "malformed_then_valid", "malformed_fenced_prose_persistent"):
        rows = _cells(dspy_runs, scenario, "native")
        assert set(rows.outcome) == {"ok"} and set(rows.model_calls) == {1}, scenario


def test_the_json_adapter_never_retries_a_parse_error(dspy_runs: pd.DataFrame) -> None:
    for scenario in ("truncated_then_valid", "refusal_then_valid", "schema_violation_persistent"):
        rows = _cells(dspy_runs, scenario, "native")
        assert set(rows.exception_type) == {PARSE_ERROR} and set(rows.model_calls) == {1}, scenario
    wrong = _cells(dspy_runs, "wrong_then_valid", "native")
    assert set(wrong.outcome) == {"wrong"} and set(wrong.model_calls) == {1}


def test_the_chat_adapter_is_unsupported_with_the_reason(dspy_runs: pd.DataFrame) -> None:
    """The provider answers in JSON, never in the ChatAdapter's field headers: a ChatAdapter cell
    would measure its fall-back, not the scenario, so it is not run."""
    unsupported = dspy_runs.attrs["unsupported"]
    prompted = unsupported[unsupported["mode"] == "prompted"]
    assert set(prompted.variant) == {"default"} and set(prompted.protocol) == set(dspy_runs.protocol)
    assert prompted.note.str.contains("[[ ## field ## ]] headers", regex=False).all()


def test_a_rate_limit_is_retried_by_the_lm_and_no_cache_answers(dspy_runs: pd.DataFrame) -> None:
    """``num_retries=3`` retries the 429 (clients/lm.py:211); with ``cache=False`` and DSPy's caches
    off, the same request of another cell reaches the provider again (every cell calls)."""
    rows = _cells(dspy_runs, "http_429_then_valid", "native")
    assert set(rows.outcome) == {"recovered"} and set(rows.model_calls) == {2}
    assert (dspy_runs.model_calls >= 1).all()


def test_the_environment_lock_is_what_the_cells_ran(dspy_runs: pd.DataFrame) -> None:
    from adapters.dspy.adapter import DSPyAdapter
    from bench.sdk.environment import lock_of, pins

    lock = lock_of(DSPyAdapter())
    assert lock == Path(__file__).resolve().parents[3] / "adapters" / "dspy" / "environment.txt"
    assert pins(lock)["dspy"] == "3.4.1"
