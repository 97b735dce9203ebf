"""Mode and enforcement are decided from the request alone, as a real model would see it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.core.vocabulary import Enforcement, Mode, Protocol
from bench.provider.answer import is_realistic
from bench.provider.detect import RequestShape, detect
from bench.scenarios.behaviours import parse_behaviour
from bench.scenarios.tasks import TASKS

PERSON = TASKS["person"].property_names
SCHEMA = TASKS["person"].schema


def shape(protocol: Protocol, body: dict[str, Any]) -> tuple[Mode, Enforcement]:
    detected = detect(protocol, body, PERSON)
    return detected.mode, detected.enforcement


def test_recorded_requests(wire_samples: Path) -> None:
    responses = json.loads((wire_samples / "openai_responses_json_schema_nonstream.json").read_text())
    assert shape(Protocol.RESPONSES, responses[0]["request_body"]) == (Mode.NATIVE, Enforcement.STRICT)
    anthropic_native = json.loads((wire_samples / "anthropic_beta_structured_output_nonstream.json").read_text())
    assert shape(Protocol.ANTHROPIC, anthropic_native["request_body"]) == (Mode.NATIVE, Enforcement.STRICT)
    # A business tool (get_weather) with tool_choice auto is not an output tool.
    anthropic_tools = json.loads((wire_samples / "anthropic_tool_use_nonstream.json").read_text())
    assert shape(Protocol.ANTHROPIC, anthropic_tools["request_body"]) == (Mode.PROMPTED, Enforcement.NONE)


CASES = [
    # (protocol, body, mode, enforcement)
    (
        Protocol.CHAT,
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA, "strict": True}}},
        Mode.NATIVE,
        Enforcement.STRICT,
    ),
    (
        Protocol.CHAT,
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
        Mode.NATIVE,
        Enforcement.JSON,
    ),
    (Protocol.CHAT, {"response_format": {"type": "json_object"}}, Mode.PROMPTED, Enforcement.JSON),
    (Protocol.CHAT, {"response_format": {"type": "text"}}, Mode.PROMPTED, Enforcement.NONE),
    (Protocol.CHAT, {}, Mode.PROMPTED, Enforcement.NONE),
    # pydantic-ai's output tool, not forced, strict
    (
        Protocol.CHAT,
        {"tools": [{"type": "function", "function": {"name": "final_result", "parameters": {}, "strict": True}}]},
        Mode.TOOL,
        Enforcement.STRICT,
    ),
    # a tool named after the schema (LangChain ToolStrategy), recognised by its parameters
    (
        Protocol.CHAT,
        {"tools": [{"type": "function", "function": {"name": "Person", "parameters": SCHEMA}}]},
        Mode.TOOL,
        Enforcement.NONE,
    ),
    # a business tool next to a response schema: native
    (
        Protocol.CHAT,
        {
            "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"properties": {"id": {}}}}}],
            "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA, "strict": True}},
        },
        Mode.NATIVE,
        Enforcement.STRICT,
    ),
    # tool_choice naming a tool makes it the output tool
    (
        Protocol.CHAT,
        {
            "tools": [{"type": "function", "function": {"name": "emit", "parameters": {"properties": {"x": {}}}}}],
            "tool_choice": {"type": "function", "function": {"name": "emit"}},
        },
        Mode.TOOL,
        Enforcement.NONE,
    ),
    (
        Protocol.RESPONSES,
        {"text": {"format": {"type": "json_schema", "schema": SCHEMA, "strict": True}}},
        Mode.NATIVE,
        Enforcement.STRICT,
    ),
    (Protocol.RESPONSES, {"text": {"format": {"type": "json_object"}}}, Mode.PROMPTED, Enforcement.JSON),
    (
        Protocol.RESPONSES,
        {"tools": [{"type": "function", "name": "final_result", "parameters": {}}], "tool_choice": "required"},
        Mode.TOOL,
        Enforcement.NONE,
    ),
    # the Claude Code CLI's structured output tool
    (
        Protocol.ANTHROPIC,
        {"tools": [{"name": "StructuredOutput", "input_schema": SCHEMA}]},
        Mode.TOOL,
        Enforcement.NONE,
    ),
    (
        Protocol.ANTHROPIC,
        {"tools": [{"name": "emit", "input_schema": {}, "strict": True}], "tool_choice": {"type": "any"}},
        Mode.TOOL,
        Enforcement.STRICT,
    ),
    (Protocol.ANTHROPIC, {"output_format": {"type": "json_schema", "schema": SCHEMA}}, Mode.NATIVE, Enforcement.STRICT),
]


@pytest.mark.parametrize(("protocol", "body", "mode", "enforcement"), CASES)
def test_detection(protocol: Protocol, body: dict[str, Any], mode: Mode, enforcement: Enforcement) -> None:
    assert shape(protocol, {"model": "m", "messages": [], **body}) == (mode, enforcement)


def _shape(
    mode: Mode, enforcement: Enforcement, protocol: Protocol = Protocol.CHAT, forced: bool = False
) -> RequestShape:
    return RequestShape(protocol, mode, enforcement, False, "m", "final_result", forced, forced, False, None)


REALISM = [
    # (behaviour, mode, enforcement, protocol, forced, realistic)
    ("malformed", Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, False),
    ("malformed", Mode.PROMPTED, Enforcement.JSON, Protocol.CHAT, False, False),
    ("malformed", Mode.PROMPTED, Enforcement.NONE, Protocol.CHAT, False, True),
    ("malformed", Mode.TOOL, Enforcement.NONE, Protocol.CHAT, True, True),
    ({"schema_violation": "missing_field"}, Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, False),
    ({"schema_violation": "out_of_range"}, Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, True),
    ({"schema_violation": "wrong_type"}, Mode.PROMPTED, Enforcement.JSON, Protocol.CHAT, False, True),
    ("prose", Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, False),
    ("prose", Mode.TOOL, Enforcement.NONE, Protocol.CHAT, True, False),
    ("prose", Mode.TOOL, Enforcement.NONE, Protocol.CHAT, False, True),
    ("prose", Mode.PROMPTED, Enforcement.NONE, Protocol.CHAT, False, True),
    ({"http_error": 529}, Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, False),
    ({"http_error": 529}, Mode.NATIVE, Enforcement.STRICT, Protocol.ANTHROPIC, False, True),
    ("refusal", Mode.NATIVE, Enforcement.STRICT, Protocol.CHAT, False, True),
    ("truncated", Mode.TOOL, Enforcement.STRICT, Protocol.CHAT, True, True),
    ("wrong", Mode.NATIVE, Enforcement.STRICT, Protocol.RESPONSES, False, True),
]


@pytest.mark.parametrize(("behaviour", "mode", "enforcement", "protocol", "forced", "realistic"), REALISM)
def test_realism_rule(
    behaviour: Any, mode: Mode, enforcement: Enforcement, protocol: Protocol, forced: bool, realistic: bool
) -> None:
    assert is_realistic(parse_behaviour(behaviour), _shape(mode, enforcement, protocol, forced)) is realistic
