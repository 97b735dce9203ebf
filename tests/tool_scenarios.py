"""The tool scenarios' model scripts and tool plans, read from scenarios/tools.yaml, for the
per-SDK tool tests: each test drives exactly the script the runner runs for that scenario.

Scenarios with a parallel turn (several calls in one reply) are left out here: their outcomes
and tool counts are judged on the default matrix (tests/results/test_golden.py, golden cells and
``test_parallel_turns_in_every_sdk``), which runs them for every SDK at no extra cost."""

from __future__ import annotations

from typing import Any

from bench.core.vocabulary import BehaviourKind
from bench.scenarios.files import SCENARIO_DIR, Scenario, load_file
from bench.tools import UpstreamStep


def has_parallel_turn(scenario: Scenario) -> bool:
    return any(step.kind == BehaviourKind.PARALLEL for step in scenario.script or [])


SINGLE_CALL_SCENARIOS: list[Scenario] = [s for s in load_file(SCENARIO_DIR / "tools.yaml") if not has_parallel_turn(s)]
"""The tool scenarios whose every reply makes at most one call."""

TOOL_SCRIPTS: dict[str, tuple[list[Any], list[UpstreamStep]]] = {
    scenario.name: (scenario.script_spec()["script"], list(scenario.tool.upstream) if scenario.tool else ["ok"])
    for scenario in SINGLE_CALL_SCENARIOS
}
"""name -> (model script, whose last step repeats; the order service's upstream plan)."""
