"""The row mapping (bench/run/rows.py) against the column declarations (bench/results/columns.py).

The rows are built by the runner's real path, one cell through the local provider, so a key
misspelled in the mapping fails here: ``pa.Table.from_pylist(..., schema=...)`` would have
dropped it without a word and written a column of nulls.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.core.vocabulary import ModeSupport
from bench.provider import LocalProvider
from bench.results import columns
from bench.run import rows
from bench.run.plan import CellPlan
from bench.run.rows import TOOL_COLUMNS
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.run.toolcalls import ToolSummary
from bench.scenarios.files import default_scenarios
from bench.sdk import registry

SCENARIOS = {scenario.name: scenario for scenario in default_scenarios()}


def _record(provider: LocalProvider, supported: bool, scenario: str) -> CellRecord:
    adapter = registry.load("openai-parse")
    [cell] = [c for c in adapter.cells() if (c.mode_support is not ModeSupport.UNSUPPORTED) == supported]
    plan = CellPlan(cell, SCENARIOS[scenario], rep=0, seed=0)
    runner = Runner({adapter.name: adapter}, RunOptions(), suite_id="rows-test")
    if not supported:
        return runner._unsupported(plan)
    return asyncio.run(runner.run_cell(plan, provider))


@pytest.mark.slow
def test_a_run_row_has_exactly_the_runs_columns(provider: LocalProvider) -> None:
    record = _record(provider, supported=True, scenario="malformed_then_valid")
    assert set(record.run) == set(columns.RUNS.names) - {"harness_traceback"}
    assert record.attempts and all(set(row) == set(columns.ATTEMPTS.names) for row in record.attempts)


def test_an_unsupported_row_names_only_runs_columns(provider: LocalProvider) -> None:
    row = _record(provider, supported=False, scenario="valid").run
    assert set(row) <= set(columns.RUNS.names)
    assert row["outcome"] == "unsupported"


@pytest.mark.slow
def test_a_misspelled_key_is_an_error_where_the_row_is_built(provider: LocalProvider) -> None:
    row = dict(_record(provider, supported=True, scenario="valid").run)
    row["model_call"] = row.pop("model_calls")
    with pytest.raises(columns.RowError, match=r"unknown column\(s\) \['model_call'\]"):
        columns.check_row(row, columns.RUNS)
    del row["cell_id"]
    with pytest.raises(columns.RowError, match="missing column"):
        columns.check_row(row, columns.RUNS)


def test_the_tool_columns_are_tool_summary_fields_and_runs_columns() -> None:
    assert set(TOOL_COLUMNS) <= set(ToolSummary.__dataclass_fields__)
    assert set(TOOL_COLUMNS) <= set(columns.RUNS.names)


@pytest.mark.slow
def test_a_misspelled_key_in_the_mapping_fails_the_cell_that_builds_it(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mapping itself with one key misspelled (a tool column, all None for a task without a
    tool): the runner's real path raises instead of writing a column of nulls."""
    monkeypatch.setattr(rows, "TOOL_COLUMNS", (*TOOL_COLUMNS[:-1], "tool_transport_retry"))
    with pytest.raises(columns.RowError, match=r"unknown column\(s\) \['tool_transport_retry'\]"):
        _record(provider, supported=True, scenario="valid")
