"""The ``misfit`` fixture (issue 15, point 4), run by pytest itself on a user's project."""

from __future__ import annotations

import textwrap
import uuid

import pytest

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
    assert result.rate("raised", "wrong", "empty") == 0
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
            "*rate(raised, wrong, empty) = 2/3: 2 cell(s)*",
            "*malformed_then_valid*raised*",
            "*schema_violation_then_valid*raised*",
        ]
    )
