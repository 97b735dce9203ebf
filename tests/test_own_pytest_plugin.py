"""The ``misfit`` fixture (issue 15, point 4), run by pytest itself on a user's project."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pandas as pd
import pytest

from bench.fixture.pytest_plugin import MisfitResult, NoCellRan
from tests.ticket_agent import TICKET_MODEL

pytest_plugins = ["pytester"]

AGENT = (
    TICKET_MODEL
    + """
from pydantic_ai import Agent

support = Agent("openai:gpt-4.1", output_type=Ticket, retries={retries}, instructions="Triage the ticket.")
"""
)

TEST = """
import pytest

@pytest.mark.misfit(scenarios=["valid", "malformed_then_valid", "schema_violation_then_valid"])
def test_support_agent_survives_faults(misfit):
    result = misfit.run("{module}:support")
    assert result.rate("raised", "empty") == 0  # no check, no example: "wrong" would raise (not measured)
    assert result.count("ok", "recovered") == 3
    assert result.max("model_calls") <= 4


async def test_the_fixture_runs_inside_an_event_loop(misfit):
    result = misfit.run("{module}:support", scenarios=["valid"])
    assert result.outcomes() == {{"ok": 1}}
"""


def _project(pytester: pytest.Pytester, retries: int) -> None:
    module = f"fixture_agents_{uuid.uuid4().hex[:8]}"
    pytester.makepyfile(**{module: textwrap.dedent(AGENT.format(retries=retries))})
    pytester.makepyfile(test_agent_faults=textwrap.dedent(TEST.format(module=module)))
    pytester.makefile(
        ".toml",
        pyproject='[project]\nname = "user"\nversion = "0"\n[tool.pytest.ini_options]\nasyncio_mode = "auto"\n'
        'asyncio_default_fixture_loop_scope = "function"\n',
    )


def test_a_sound_agent_passes(pytester: pytest.Pytester) -> None:
    _project(pytester, retries=2)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_weakened_agent_fails_with_the_table_of_cells(pytester: pytest.Pytester) -> None:
    _project(pytester, retries=0)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "survives")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert 0.666667 == 0*",
            "*misfit: the cells behind the failed assertion*",
            "*rate(raised, empty) = 2/3: 2 cell(s)*",
            "*malformed_then_valid*raised*",
            "*schema_violation_then_valid*raised*",
        ]
    )


def _cells(*rows: tuple[str, str, float | None]) -> MisfitResult:
    frame = pd.DataFrame(
        [
            {"agent": "support", "sdk": "pydantic-ai", "scenario": s, "rep": 0, "outcome": o, "model_calls": c,
             "note": "not applicable: the scenario scripts a built-in task's own objects or tools"}
            for s, o, c in rows
        ],
        columns=["agent", "sdk", "scenario", "rep", "outcome", "model_calls", "note"],
    )  # fmt: skip
    return MisfitResult(frame, Path("."))


def test_an_aggregate_of_a_run_where_no_cell_ran_raises_naming_why() -> None:
    """``assert result.rate("wrong") == 0`` must not pass when nothing was measured."""
    unsupported = _cells(("tool_call_then_valid", "unsupported", None), ("tool_error", "unsupported", None))
    for aggregate in (lambda: unsupported.rate("wrong", "empty"), lambda: unsupported.count("wrong"),
                      lambda: unsupported.max("model_calls")):  # fmt: skip
        with pytest.raises(NoCellRan, match=r"no cell ran: all 2 cell\(s\) were unsupported \(2 x not applicable"):
            aggregate()
    with pytest.raises(NoCellRan, match="the run has no cells"):
        _cells().rate("wrong")


def test_a_maximum_with_no_value_raises_and_a_rate_of_cells_that_ran_is_measured() -> None:
    ran = _cells(("valid", "ok", 1.0), ("malformed_then_valid", "recovered", 2.0), ("tool_error", "unsupported", None))
    assert ran.rate("ok") == 0.5 and ran.count("ok", "recovered") == 2 and ran.max("model_calls") == 2
    no_value = _cells(("valid", "ok", None))
    with pytest.raises(ValueError, match="none of the 1 cell"):
        no_value.max("model_calls")
