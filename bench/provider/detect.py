"""Decide, from a request alone, how the structured answer is expected (docs/design.md).

The provider answers as a real model would: a forced output tool gets a tool call, a response
schema gets JSON text, anything else gets text. Each protocol names these things differently,
so each has a small extractor that reduces the request to :class:`RequestShape`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.vocabulary import Enforcement, Mode, Protocol
from bench.tools import ERROR_MARKER, SUCCESS_MARKER

KNOWN_OUTPUT_TOOLS = frozenset({"final_result", "StructuredOutput"})
"""Output-tool names SDKs use: pydantic-ai's ``final_result`` (and ``final_result_<Name>``
when there are several), the Claude Code CLI's ``StructuredOutput``."""


@dataclass(frozen=True)
class ToolDef:
    name: str
    parameters: dict[str, Any]
    strict: bool


@dataclass(frozen=True)
class ToolResultSeen:
    """A tool result a request carried back to the model (the SDK's report of a tool call)."""

    call_id: str
    """The call id the result is paired with (``tool_call_id`` / ``call_id`` / ``tool_use_id``)."""
    is_error: bool | None
    """Anthropic's ``is_error`` flag; None on the OpenAI protocols, which have none."""
    structured_error: bool
    """The text carries the harness tool's structured error (its ``error_code`` key)."""
    success: bool
    """The text carries the harness tool's successful result (its tracking number)."""
    text: str
    """The result's text, cut to :data:`RESULT_TEXT_LIMIT` characters."""


RESULT_TEXT_LIMIT = 300


@dataclass(frozen=True)
class RequestShape:
    """What the request asks of the model, independent of protocol."""

    protocol: Protocol
    mode: Mode
    enforcement: Enforcement
    stream: bool
    model: str
    output_tool: str | None
    """Name of the output tool when ``mode`` is tool."""
    tool_forced: bool
    """True when tool_choice forces a call (a named tool, ``required`` or ``any``)."""
    named_tool_choice: bool
    """True when tool_choice names one function (OpenAI then reports ``finish_reason: stop``)."""
    include_usage: bool
    max_output_tokens: int | None
    include_obfuscation: bool = True
    """``stream_options.include_obfuscation`` (default true), as both OpenAI APIs read it. Held
    here because a Chat body whose shape is cached is not parsed again (bench.provider.app)."""
    tool_names: frozenset[str] = frozenset()
    """Every tool the request offers, output tool included."""
    strict_tools: tuple[ToolDef, ...] = ()
    """The offered tools marked strict: the real API constrains their arguments to the schema."""
    forced_tool: str | None = None
    """The tool a named tool_choice forces, if any."""
    tool_results: tuple[ToolResultSeen, ...] = ()
    """The tool results the request carries, in conversation order."""
    parallel_tool_calls: bool = True
    """False when the request forbids several tool calls in one turn (OpenAI's
    ``parallel_tool_calls: false``, Anthropic's ``tool_choice.disable_parallel_tool_use``)."""
    thinking: bool = False
    """Anthropic: the request turned extended thinking on (``thinking.type`` ``enabled`` or
    ``adaptive``), the only requests the API sends thinking blocks to."""
    thinking_shown: bool = False
    """Anthropic: ``thinking.display`` is ``summarized``; otherwise (the default of current
    models, "omitted") a thinking block's ``thinking`` is empty and no ``thinking_delta`` is
    streamed, only the signature."""
    server_tools: bool = False
    """The request offers a server tool (one the API runs: web search, code execution), the
    only kind of turn Anthropic pauses with ``pause_turn``."""
    ledger_columns: tuple[str, bool, str, str] = field(init=False, repr=False, compare=False)
    """protocol, stream, mode and enforcement as the ledger writes them: a shape is cached and
    serves many requests, so each request copies these instead of converting them again."""

    def __post_init__(self) -> None:
        columns = (str(self.protocol), self.stream, str(self.mode), str(self.enforcement))
        object.__setattr__(self, "ledger_columns", columns)


def detect(protocol: Protocol, body: dict[str, Any], task_properties: frozenset[str]) -> RequestShape:
    extract = _EXTRACTORS[protocol]
    tools, forced_name, forced_any, response_format, json_only = extract(body)
    output_tool = _find_output_tool(tools, forced_name, forced_any, task_properties)
    if output_tool is not None:
        mode = Mode.TOOL
        enforcement = Enforcement.STRICT if output_tool.strict else Enforcement.NONE
    elif response_format is not None:
        mode, enforcement = Mode.NATIVE, response_format
    else:
        mode = Mode.PROMPTED
        enforcement = Enforcement.JSON if json_only else Enforcement.NONE
    return RequestShape(
        protocol=protocol,
        mode=mode,
        enforcement=enforcement,
        stream=bool(body.get("stream")),
        model=str(body.get("model") or "unknown-model"),
        output_tool=output_tool.name if output_tool else None,
        tool_forced=bool(forced_name) or forced_any,
        named_tool_choice=bool(forced_name),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        max_output_tokens=_max_tokens(body),
        include_obfuscation=_include_obfuscation(body),
        tool_names=frozenset(tool.name for tool in tools),
        strict_tools=tuple(tool for tool in tools if tool.strict),
        forced_tool=forced_name,
        tool_results=tuple(_RESULT_EXTRACTORS[protocol](body)),
        parallel_tool_calls=_parallel_allowed(body),
        thinking=_thinking_enabled(body),
        thinking_shown=_thinking_enabled(body) and body["thinking"].get("display") == "summarized",
        server_tools=any(_is_server_tool(tool) for tool in body.get("tools") or []),
    )


def _thinking_enabled(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _is_server_tool(tool: Any) -> bool:
    """A tool the API runs itself: typed, and neither a function (OpenAI) nor a custom tool
    with an input schema (Anthropic)."""
    if not isinstance(tool, dict):
        return False
    kind = tool.get("type")
    return isinstance(kind, str) and kind not in ("function", "custom") and "input_schema" not in tool


def _include_obfuscation(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return not (isinstance(options, dict) and options.get("include_obfuscation") is False)


def _parallel_allowed(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    disabled = isinstance(choice, dict) and choice.get("disable_parallel_tool_use") is True
    return body.get("parallel_tool_calls") is not False and not disabled


def _find_output_tool(
    tools: list[ToolDef], forced_name: str | None, forced_any: bool, task_properties: frozenset[str]
) -> ToolDef | None:
    if forced_name:
        return next((tool for tool in tools if tool.name == forced_name), None)
    for tool in tools:
        if tool.name in KNOWN_OUTPUT_TOOLS or tool.name.startswith("final_result_"):
            return tool
    for tool in tools:
        properties = frozenset((tool.parameters or {}).get("properties", {}))
        if task_properties and properties == task_properties:
            return tool
    if forced_any and len(tools) == 1:
        return tools[0]
    return None


def _max_tokens(body: dict[str, Any]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int):
            return value
    return None


Extracted = tuple[list[ToolDef], str | None, bool, Enforcement | None, bool]


def _chat(body: dict[str, Any]) -> Extracted:
    tools = [
        ToolDef(
            name=str(fn.get("name", "")),
            parameters=fn.get("parameters") or {},
            strict=bool(fn.get("strict")),
        )
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and isinstance(fn := tool.get("function"), dict)
    ]
    choice = body.get("tool_choice")
    forced_name = None
    if isinstance(choice, dict):
        forced_name = (choice.get("function") or {}).get("name")
    forced_any = choice == "required"
    fmt = body.get("response_format") or {}
    native = None
    if fmt.get("type") == "json_schema":
        strict = bool((fmt.get("json_schema") or {}).get("strict"))
        native = Enforcement.STRICT if strict else Enforcement.JSON
    return tools, forced_name, forced_any, native, fmt.get("type") == "json_object"


def _responses(body: dict[str, Any]) -> Extracted:
    tools = [
        ToolDef(
            name=str(tool.get("name", "")),
            parameters=tool.get("parameters") or {},
            strict=bool(tool.get("strict")),
        )
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and tool.get("type") == "function"
    ]
    choice = body.get("tool_choice")
    forced_name = choice.get("name") if isinstance(choice, dict) else None
    forced_any = choice == "required"
    fmt = (body.get("text") or {}).get("format") or {}
    native = None
    if fmt.get("type") == "json_schema":
        native = Enforcement.STRICT if fmt.get("strict") else Enforcement.JSON
    return tools, forced_name, forced_any, native, fmt.get("type") == "json_object"


def _anthropic(body: dict[str, Any]) -> Extracted:
    tools = [
        ToolDef(
            name=str(tool.get("name", "")),
            parameters=tool.get("input_schema") or {},
            strict=bool(tool.get("strict")),
        )
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and "input_schema" in tool
    ]
    choice = body.get("tool_choice") or {}
    forced_name = choice.get("name") if choice.get("type") == "tool" else None
    forced_any = choice.get("type") == "any"
    # Structured outputs: `output_config.format` (GA) or `output_format` (the deprecated beta
    # shape); both are constrained decoding, hence strict.
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    native = Enforcement.STRICT if fmt.get("type") == "json_schema" else None
    return tools, forced_name, forced_any, native, False


_EXTRACTORS = {Protocol.CHAT: _chat, Protocol.RESPONSES: _responses, Protocol.ANTHROPIC: _anthropic}


def _seen(call_id: Any, content: Any, is_error: bool | None) -> ToolResultSeen:
    text = _text_of(content)
    return ToolResultSeen(
        call_id=str(call_id),
        is_error=is_error,
        structured_error=ERROR_MARKER in text,
        success=SUCCESS_MARKER in text,
        text=text[:RESULT_TEXT_LIMIT],
    )


def _text_of(content: Any) -> str:
    """A tool result's text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part.get("text") or part.get("content")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _chat_results(body: dict[str, Any]) -> list[ToolResultSeen]:
    return [
        _seen(message.get("tool_call_id"), message.get("content"), None)
        for message in body.get("messages") or []
        if isinstance(message, dict) and message.get("role") == "tool"
    ]


def _responses_results(body: dict[str, Any]) -> list[ToolResultSeen]:
    items = body.get("input")
    return [
        _seen(item.get("call_id"), item.get("output"), None)
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def _anthropic_results(body: dict[str, Any]) -> list[ToolResultSeen]:
    results = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append(_seen(block.get("tool_use_id"), block.get("content"), bool(block.get("is_error"))))
    return results


_RESULT_EXTRACTORS = {
    Protocol.CHAT: _chat_results,
    Protocol.RESPONSES: _responses_results,
    Protocol.ANTHROPIC: _anthropic_results,
}
