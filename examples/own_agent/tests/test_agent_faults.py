"""The app's own fault tests: the `misfit` fixture comes with misfit-bench (pytest11 plugin)."""

import pytest


@pytest.mark.misfit(scenarios="library")
def test_support_agent_survives_faults(misfit):
    result = misfit.run("support")
    assert result.rate("wrong", "empty") == 0
    assert result.max("model_calls") <= 4


def test_triage_agent_never_hands_a_bad_ticket_on(misfit):
    result = misfit.run("triage", scenarios=["valid", "malformed_*", "schema_violation_*", "own_tool_*"])
    assert result.rate("wrong", "empty") == 0
