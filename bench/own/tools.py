"""Tool faults derived from a user's own registered tools (issue 25, point 2).

The harness's tool scenarios (scenarios/tools.yaml) script ``lookup_order``, a tool a user's
agent does not have; for an own agent they are replaced by scenarios derived from the tools the
SDK's own registry lists (each binding's ``tool_schemas``), so the faults reach the user's tools:

- ``own_tool_<tool>_bad_args_then_valid``: arguments that fail the tool's schema, then the answer;
- ``own_tool_<tool>_raises_then_valid``: a call with valid arguments that the tool answers by
  raising (the user's tool wrapped, bench.tools.own), then the answer;
- ``own_tool_<tool>_parallel_then_valid``: one turn with two calls of the tool, the first raising,
  the second with broken arguments (where the request forbids parallel calls the cell is marked
  unrealistic, as for the built-in parallel scenarios), then the answer;
- ``own_tool_unknown_then_valid`` (one per agent): a call of a tool the agent does not have.

None of these runs the user's real code unless their SDK hands it arguments that fail its
schema. An opted-in tool (``tools = {...}`` in the entry) also gets ``own_tool_<tool>_then_valid``,
the one scenario that runs the tool (or its fake) with valid arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from bench.own.derive import DerivedTask, OutputType, generate, violations
from bench.scenarios.files import Scenario
from bench.tools import ToolPlan
from bench.tools.own import OwnToolLog, OwnToolPlan

UNKNOWN_TOOL = "lookup_unknown_record"
"""The tool the unknown-tool scenario calls (a plausible name; suffixed if the agent has it)."""
BAD_ARGS_VARIANTS = ("missing_field", "wrong_type", "extra_key")


@dataclass(frozen=True)
class OwnToolTask(DerivedTask):
    """The user's task in one of their tool scenarios: each run gets a fresh log of its tool."""

    tool_plan: OwnToolPlan = field(default_factory=lambda: OwnToolPlan(""))

    def with_tool(self, plan: ToolPlan | None) -> OwnToolTask:
        return replace(self, tool=OwnToolLog(own=self.tool_plan))


@dataclass(frozen=True)
class DerivedTool:
    """One derived scenario and the plan of its tool's side."""

    scenario: Scenario
    plan: OwnToolPlan


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", name.lower())


def _scenario(name: str, fault: str, description: str, script: list[Any]) -> Scenario:
    return Scenario(name=name, task="person", fault=fault, description=description, script=script)


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "tool_call", "tool": tool, "arguments": arguments}


def broken_arguments(schema: dict[str, Any] | None, args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(variant, arguments) that fail the tool's schema, or None when it cannot be broken."""
    bad = violations(OutputType.of(schema), args) if schema else {}
    variant = next((v for v in BAD_ARGS_VARIANTS if v in bad), None)
    return None if variant is None else (variant, bad[variant])


def valid_arguments(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """Arguments generated from the tool's parameter schema, or None when none can be."""
    candidates = generate(OutputType.of(schema)) if schema else []
    return candidates[0] if candidates else None


def derived_for_tool(name: str, schema: dict[str, Any] | None, args: dict[str, Any] | None) -> list[DerivedTool]:
    """The fault scenarios of one of the user's tools (see the module): as many as its schema
    allows (no broken arguments without a schema to break, no valid call without arguments)."""
    key, derived = slug(name), []
    broken = broken_arguments(schema, args) if args is not None else None
    plain = OwnToolPlan(name, schema)
    if broken is not None:
        variant, bad = broken
        derived.append(DerivedTool(_scenario(
            f"own_tool_{key}_bad_args_then_valid", f"tool_bad_args:{variant}",
            f"The model calls {name} with arguments that break its schema ({variant}), then answers.",
            [_call(name, bad), "valid"]), plain))  # fmt: skip
    if args is not None:
        derived.append(DerivedTool(_scenario(
            f"own_tool_{key}_raises_then_valid", "tool_raises",
            f"The model calls {name} with valid arguments, the tool raises (scripted), then the model answers.",
            [_call(name, args), "valid"]), replace(plain, raise_on=frozenset({0}))))  # fmt: skip
    if args is not None and broken is not None:
        derived.append(DerivedTool(_scenario(
            f"own_tool_{key}_parallel_then_valid", "parallel+tool_raises+tool_bad_args",
            f"One turn, two calls of {name}: the first raises (scripted), the second breaks its schema. "
            "Then the answer.",
            [{"parallel": [_call(name, args), _call(name, broken[1])]}, "valid"]),
            replace(plain, raise_on=frozenset({0}))))  # fmt: skip
    return derived


def derived_unknown(tools: list[str]) -> DerivedTool:
    """The model calls a tool the agent does not have (models invent tool names)."""
    name = UNKNOWN_TOOL
    while name in tools or any(tool.endswith(f"__{name}") for tool in tools):
        name += "_x"
    return DerivedTool(
        _scenario(
            "own_tool_unknown_then_valid", "tool_unknown",
            f"The model calls {name}, a tool the agent does not have, then answers.",
            [_call(name, {"id": "1"}), "valid"],
        ),
        OwnToolPlan(name),
    )  # fmt: skip


def opted_in_call(name: str, schema: dict[str, Any] | None, args: dict[str, Any]) -> DerivedTool:
    """An opted-in tool's valid call: the one scenario that runs the tool (or its fake)."""
    return DerivedTool(
        _scenario(
            f"own_tool_{slug(name)}_then_valid", f"tool_call:{name}",
            f"The model calls the opted-in tool {name} with valid arguments, then answers.",
            [_call(name, args), "valid"],
        ),
        OwnToolPlan(name, schema),
    )  # fmt: skip
