"""Turn one behaviour into one protocol-neutral answer for one request.

The protocol modules only know how to spell an :class:`Answer` on the wire; everything about
*what* the model says (which payload, text or tool call, which stop reason, whether the real
API could have produced it) is decided here, once for all three protocols.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal

from bench.core.tokens import count_tokens, split_for_stream
from bench.core.vocabulary import Enforcement, Mode, Protocol
from bench.provider.detect import RequestShape
from bench.provider.wire import dumps_str
from bench.scenarios import behaviours as b
from bench.scenarios.tasks import Task
from bench.tools import TOOL_NAME

Finish = Literal["stop", "length", "refusal", "content_filter", "pause_turn"]


@dataclass(frozen=True)
class Answer:
    """What the fake model produced on one attempt."""

    behaviour: str
    """The behaviour's label, e.g. ``malformed:trailing_comma``."""
    realistic: bool
    text: str = ""
    """Assistant text, or the tool call's arguments when ``tool_name`` is set."""
    tool_name: str | None = None
    refusal: str | None = None
    finish: Finish = "stop"
    error: b.HttpError | None = None
    delay_s: float = 0.0
    stall_mid_stream_s: float = 0.0
    parts: tuple[Answer, ...] = ()
    """A parallel turn's items, in wire order (its text first, then each call); empty for a
    reply of one item, which is then its own only item (:attr:`items`)."""
    thinking: str | None = None
    """Reasoning sent before the answer (Anthropic thinking, a Responses reasoning item, Chat
    ``reasoning_content``); the answer's own text is then empty (a thinking-only reply)."""
    same_id: bool = False
    """Every tool call of the reply under the first call's id (:meth:`issue_ids`)."""

    @cached_property
    def output_tokens(self) -> int:
        """Remembered on the answer (which the provider reuses across requests)."""
        if self.parts:
            return sum(part.output_tokens for part in self.parts)
        return _count(self.refusal or self.text) + self.thinking_tokens

    @property
    def thinking_tokens(self) -> int:
        """The reasoning's share of :attr:`output_tokens` (each API itemises it)."""
        return _count(self.thinking) if self.thinking else 0

    @property
    def items(self) -> tuple[Answer, ...]:
        """What the reply holds, in wire order: one text or one call, or a turn's parts."""
        return self.parts or (self,)

    @property
    def calls(self) -> tuple[Answer, ...]:
        """The tool calls of the reply, in order: each gets its own call id (and index)."""
        return tuple(item for item in self.items if item.tool_name is not None and item.refusal is None)

    @property
    def content(self) -> Answer | None:
        """The reply's text item (an answer or a refusal), if it has one."""
        return next((item for item in self.items if item.tool_name is None), None)

    def deltas(self) -> list[str]:
        return list(_split(self.refusal or self.text))

    def thinking_deltas(self) -> list[str]:
        return list(_split(self.thinking or ""))

    def issue_ids(self, new_id: Callable[[], str]) -> tuple[str, ...]:
        """The call ids of this reply's tool calls, in order: a fresh one each, or one for all of
        them when the turn sends duplicate ids (``parallel`` with ``same_id``)."""
        if self.same_id and self.calls:
            first = new_id()
            return tuple(first for _ in self.calls)
        return tuple(new_id() for _ in self.calls)


@lru_cache(maxsize=1024)
def _count(text: str) -> int:
    """Output tokens, remembered: a scenario repeats the same few answers on every attempt."""
    return count_tokens(text)


@lru_cache(maxsize=1024)
def _split(text: str) -> tuple[str, ...]:
    return tuple(split_for_stream(text))


def render(behaviour: Any, shape: RequestShape, task: Task) -> Answer:
    """The answer ``behaviour`` produces for a request of ``shape`` about ``task``."""
    if isinstance(behaviour, b.Slow):
        inner = render(behaviour.answer, shape, task)
        stall = behaviour.where == "mid_stream"
        return _replace(
            inner,
            behaviour=f"{behaviour.label}>{inner.behaviour}",
            delay_s=0.0 if stall else behaviour.delay_s,
            stall_mid_stream_s=behaviour.delay_s if stall else 0.0,
        )
    realistic = is_realistic(behaviour, shape, task)
    if isinstance(behaviour, b.Parallel):
        return _turn(behaviour, shape, task, realistic)
    if isinstance(behaviour, b.ToolCall):
        tool = offered_name(behaviour.tool or task.tool_name or TOOL_NAME, shape)
        return Answer(behaviour.label, realistic, text=_dumps(behaviour.arguments), tool_name=tool)
    if isinstance(behaviour, b.HttpError):
        return Answer(behaviour=behaviour.label, realistic=realistic, error=behaviour)
    if isinstance(behaviour, b.Refusal):
        return Answer(behaviour.label, realistic, refusal=behaviour.message, finish="refusal")
    if isinstance(behaviour, b.Prose):
        return Answer(behaviour.label, realistic, text=behaviour.text or task.prose)
    if isinstance(behaviour, b.Empty):
        return Answer(behaviour.label, realistic, text="")
    if isinstance(behaviour, b.Thinking):
        return Answer(behaviour.label, realistic, text="", thinking=behaviour.text)
    if isinstance(behaviour, b.PauseTurn):
        finish: Finish = "pause_turn" if shape.protocol is Protocol.ANTHROPIC else "stop"
        return Answer(behaviour.label, realistic, text=behaviour.text, finish=finish)
    if isinstance(behaviour, b.ContentFilter):
        text = behaviour.text
        if text is None:
            text = truncate(_dumps(task.reference), behaviour.fraction, None) if behaviour.fraction else ""
        return Answer(behaviour.label, realistic, text=text, finish="content_filter")
    payload, finish = _payload(behaviour, task, shape)
    if shape.mode is Mode.TOOL:
        return Answer(behaviour.label, realistic, text=payload, tool_name=shape.output_tool, finish=finish)
    return Answer(behaviour.label, realistic, text=payload, finish=finish)


def _turn(behaviour: b.Parallel, shape: RequestShape, task: Task, realistic: bool) -> Answer:
    """A parallel turn's answer: its parts in wire order. The APIs put a turn's text before its
    tool calls (Anthropic's text block at index 0, the Responses message item at output_index 0,
    Chat content ahead of tool_calls); several answers outside tool mode are one text item, the
    texts one after the other on lines of their own (a model writing the object twice)."""
    parts = [render(call, shape, task) for call in behaviour.calls]
    texts = [part for part in parts if part.tool_name is None]
    calls = tuple(part for part in parts if part.tool_name is not None)
    if len(texts) > 1:
        merged = "\n".join(part.text for part in texts)
        texts = [Answer("+".join(part.behaviour for part in texts), realistic, text=merged)]
    return Answer(behaviour.label, realistic, parts=(*texts, *calls), same_id=behaviour.same_id)


def _payload(behaviour: Any, task: Task, shape: RequestShape) -> tuple[str, Finish]:
    if isinstance(behaviour, b.Valid):
        return _dumps(behaviour.value or task.reference), "stop"
    if isinstance(behaviour, b.Wrong):
        return _dumps(behaviour.value or task.wrong_sent or task.wrong), "stop"
    if isinstance(behaviour, b.SchemaViolation):
        return _dumps(task.violations[behaviour.variant]), "stop"
    if isinstance(behaviour, b.Malformed):
        return malformed_text(task.reference, behaviour.variant), "stop"
    if isinstance(behaviour, b.Truncated):
        return truncate(_dumps(task.reference), behaviour.fraction, shape.max_output_tokens), "length"
    if isinstance(behaviour, b.Wrapped):
        return _dumps({behaviour.key: behaviour.value or task.reference}), "stop"
    if isinstance(behaviour, b.Stringified):
        inner = _dumps(behaviour.value or task.reference)
        return _dumps({behaviour.field: inner} if behaviour.field else inner), "stop"
    raise TypeError(f"no payload for behaviour {behaviour!r}")


def malformed_text(value: Any, variant: str) -> str:
    """Text a model produces that is not JSON, in the ways models really get it wrong."""
    compact = _dumps(value)
    if variant == "trailing_comma":
        return compact[:-1] + ",}"
    if variant == "fenced_prose":
        pretty = json.dumps(value, indent=2)
        return f"Sure! Here is the JSON you asked for:\n```json\n{pretty}\n```\nLet me know if you need anything else."
    if variant == "single_quotes":
        return repr(dict(value))
    if variant == "unterminated":
        return compact[:-1]
    raise ValueError(f"unknown malformed variant {variant!r}")


def truncate(text: str, fraction: float, max_output_tokens: int | None) -> str:
    """A prefix of ``text`` cut at a token boundary, as the length limit cuts a real answer:
    at the request's own token limit when that is shorter than the answer."""
    pieces = split_for_stream(text, max_pieces=10_000)
    keep = max(1, int(len(pieces) * fraction))
    if max_output_tokens is not None:
        keep = max(1, min(keep, max_output_tokens))
    return "".join(pieces[:keep])


def is_realistic(behaviour: Any, shape: RequestShape, task: Task | None = None) -> bool:
    """The realism rule (docs/design.md): False where the real API's contract rules the behaviour out
    for this request (so reports can filter such cells out; they are still run)."""
    enforcement = shape.enforcement
    if isinstance(behaviour, b.Parallel):
        # Several tool calls need a request that allows them (parallel_tool_calls: false and
        # Anthropic's disable_parallel_tool_use forbid it); each call must be realistic alone;
        # the real APIs give every call its own id; two objects in one text break a schema's
        # constrained decoding.
        answers_by_tool = shape.mode is Mode.TOOL
        calls = sum(isinstance(call, b.ToolCall) or answers_by_tool for call in behaviour.calls)
        answers = sum(not isinstance(call, b.ToolCall) for call in behaviour.calls)
        if calls > 1 and not shape.parallel_tool_calls:
            return False
        if behaviour.same_id or (answers > 1 and not answers_by_tool and enforcement is not Enforcement.NONE):
            return False
        return all(is_realistic(call, shape, task) for call in behaviour.calls)
    if isinstance(behaviour, b.ToolCall):
        # A model calls only a tool it was offered, and not another when tool_choice names one.
        tool = offered_name(behaviour.tool or (task.tool_name if task else None) or TOOL_NAME, shape)
        strict = next((t for t in shape.strict_tools if t.name == tool), None)
        if strict is not None and not _fits(behaviour.arguments, strict.parameters):
            return False  # strict tools get schema-conforming arguments from the real API
        return tool in shape.tool_names and shape.forced_tool in (None, tool)
    if isinstance(behaviour, b.Malformed):
        return enforcement is Enforcement.NONE
    if isinstance(behaviour, b.SchemaViolation):
        # Strict decoding enforces structure and types, not numeric bounds or lengths.
        return behaviour.variant == "out_of_range" or enforcement is not Enforcement.STRICT
    if isinstance(behaviour, b.Prose):
        if enforcement in (Enforcement.STRICT, Enforcement.JSON):
            return False
        return not (shape.mode is Mode.TOOL and shape.tool_forced)
    if isinstance(behaviour, b.HttpError):
        # 529 is Anthropic's own "overloaded" status; OpenAI never sends it.
        return not (behaviour.status == 529 and shape.protocol is not Protocol.ANTHROPIC)
    return _field_realistic(behaviour, shape)


def _field_realistic(behaviour: Any, shape: RequestShape) -> bool:
    """The realism of the behaviours users reported from the field (scenarios/field.yaml)."""
    forced = shape.mode is Mode.TOOL and shape.tool_forced
    if isinstance(behaviour, b.Empty):
        return not forced  # a forced tool_choice always gets a call
    if isinstance(behaviour, b.Thinking):
        # OpenAI's Chat API never sends reasoning_content (OpenAI-compatible servers do);
        # Anthropic sends thinking blocks only to a request that turned thinking on.
        if shape.protocol is Protocol.CHAT:
            return False
        return not forced and (shape.protocol is not Protocol.ANTHROPIC or shape.thinking)
    if isinstance(behaviour, b.PauseTurn):
        return shape.protocol is Protocol.ANTHROPIC and shape.server_tools
    if isinstance(behaviour, b.ContentFilter):
        return not forced
    if isinstance(behaviour, b.Wrapped):
        return shape.enforcement is not Enforcement.STRICT  # strict decoding keeps the schema's root
    if isinstance(behaviour, b.Stringified):
        # A strict schema forbids a string where its object (or a field's type) goes; an
        # Anthropic tool's input is always an object, never a bare string.
        if shape.enforcement is Enforcement.STRICT:
            return False
        return not (behaviour.field is None and shape.mode is Mode.TOOL and shape.protocol is Protocol.ANTHROPIC)
    return True


def _fits(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether arguments have the keys a strict schema demands: every required one, no other."""
    properties = set((schema or {}).get("properties") or {})
    required = set((schema or {}).get("required") or properties)
    return required <= set(arguments) <= properties


def offered_name(tool: str, shape: RequestShape) -> str:
    """The name the request offers ``tool`` under: MCP servers prefix their tools
    (``mcp__<server>__lookup_order`` in the Claude Code CLI), and a model calls the name it sees."""
    if tool in shape.tool_names:
        return tool
    prefixed = sorted(name for name in shape.tool_names if name.endswith(f"__{tool}"))
    return prefixed[0] if len(prefixed) == 1 else tool


def _dumps(value: Any) -> str:
    return dumps_str(value)


def _replace(answer: Answer, **changes: Any) -> Answer:
    from dataclasses import replace

    return replace(answer, **changes)
