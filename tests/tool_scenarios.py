"""The tool scenarios' model scripts and tool plans, read from scenarios/tools.yaml, for the
per-SDK tool tests: each test drives exactly the script the runner runs for that scenario."""

from __future__ import annotations

from typing import Any

from bench.scenario import SCENARIO_DIR, load_file
from bench.tools import UpstreamStep

TOOL_SCRIPTS: dict[str, tuple[list[Any], list[UpstreamStep]]] = {
    scenario.name: (scenario.script_spec()["script"], list(scenario.tool.upstream) if scenario.tool else ["ok"])
    for scenario in load_file(SCENARIO_DIR / "tools.yaml")
}
"""name -> (model script, whose last step repeats; the order service's upstream plan)."""
