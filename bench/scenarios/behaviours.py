"""Behaviours: what the fake model does on one attempt, and scripts of them.

Every behaviour has a long form (``{kind: malformed, variant: trailing_comma}``) and a short
form (``malformed``, ``{malformed: trailing_comma}``); both resolve through one table,
:data:`SHORT_FIELD`, so the YAML a user writes and the Python the runner writes mean the same.

Every number a script holds is finite and in a stated range (the bounds below, ``allow_inf_nan``
off): a NaN ``retry_after_s`` once passed validation, failed every attempt on the provider
(status 499) and the cell counted as ``recovered``.
"""

from __future__ import annotations

import difflib
import math
import random
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    model_validator,
)

from bench.core.vocabulary import BehaviourKind

MalformedVariant = Literal["trailing_comma", "fenced_prose", "single_quotes", "unterminated"]
ViolationVariant = Literal["missing_field", "wrong_type", "extra_key", "out_of_range"]
HttpStatus = Literal[400, 429, 500, 503, 529]

MAX_DELAY_S = 3600.0
"""The longest ``slow`` delay and ``retry_after_s`` (an hour; the ``full`` suite's stall is 3600)."""
MAX_SCRIPT_STEPS = 1_000
"""Steps a script may hold, each call of a parallel turn counted as one (:func:`script_size`):
the largest call cap (``--call-cap``, ``call_cap`` of ``POST /runs``), past which no attempt is
served; the library's longest script has 4 steps, its turns 2 calls. ``bench serve`` once kept a
posted 110,000-step script per run (1.3 GB for 20 runs); at the bound a run's script is about
1 MB (1,000 distinct tool calls in turns of 16)."""
MAX_TURN_CALLS = 16
"""Calls one parallel turn may hold (the library's turns hold 2)."""
MAX_SEED = 2**63 - 1
"""A stochastic mix's seed is in ``[0, MAX_SEED]`` (``--seed`` is an int64 too)."""


def finite_json(value: Any) -> Any:
    """A value sent as JSON (a ``valid`` object, a tool call's arguments) holds no NaN or
    infinity: JSON has none, so the answer would not be JSON at all (``malformed`` is that)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{item} is not a JSON number; every number sent must be finite")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(finite_json)]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @property
    def label(self) -> str:
        """Short name used in result columns, e.g. ``malformed:trailing_comma``."""
        detail = self._detail()
        return f"{self.kind}:{detail}" if detail else str(self.kind)  # type: ignore[attr-defined]

    def _detail(self) -> str:
        return ""


class Valid(_Base):
    kind: Literal[BehaviourKind.VALID] = BehaviourKind.VALID
    value: JsonObject | None = None
    """The object to answer with; the task's reference answer when omitted."""


class Wrong(_Base):
    kind: Literal[BehaviourKind.WRONG] = BehaviourKind.WRONG
    value: JsonObject | None = None
    """A schema-valid object failing the semantic check; the task's plausible wrong answer
    when omitted."""


class Malformed(_Base):
    kind: Literal[BehaviourKind.MALFORMED] = BehaviourKind.MALFORMED
    variant: MalformedVariant = "trailing_comma"

    def _detail(self) -> str:
        return self.variant


class SchemaViolation(_Base):
    kind: Literal[BehaviourKind.SCHEMA_VIOLATION] = BehaviourKind.SCHEMA_VIOLATION
    variant: ViolationVariant = "missing_field"

    def _detail(self) -> str:
        return self.variant


class Truncated(_Base):
    kind: Literal[BehaviourKind.TRUNCATED] = BehaviourKind.TRUNCATED
    fraction: float = Field(default=0.5, gt=0, lt=1)
    """Share of the valid answer's tokens sent before the length stop."""


class Refusal(_Base):
    kind: Literal[BehaviourKind.REFUSAL] = BehaviourKind.REFUSAL
    message: str = "I'm sorry, but I can't help with that request."


class Prose(_Base):
    kind: Literal[BehaviourKind.PROSE] = BehaviourKind.PROSE
    text: str | None = None
    """Plain text instead of structured output; the task's prose answer when omitted."""


class HttpError(_Base):
    kind: Literal[BehaviourKind.HTTP_ERROR] = BehaviourKind.HTTP_ERROR
    status: HttpStatus = 500
    retry_after_s: float | None = Field(default=None, ge=0, le=MAX_DELAY_S)
    """Sent as ``retry-after-ms`` and ``retry-after``; a 429 gets 0.5 s when omitted."""
    should_retry: bool | None = None
    """Sent as ``x-should-retry`` when set (the official clients obey it)."""
    retry_after: bool = True
    """False sends no ``retry-after`` at all, so the clients fall back to their own backoff."""

    def _detail(self) -> str:
        return str(self.status)

    @property
    def effective_retry_after_s(self) -> float | None:
        if not self.retry_after:
            return None
        if self.retry_after_s is None and self.status == 429:
            return 0.5
        return self.retry_after_s


class ToolCall(_Base):
    """The model calls the task's harness tool (``lookup_order``) instead of answering.

    ``arguments`` is sent as is, so a script can send arguments that fail the tool's schema
    (``{order: ORD-1042}``) or name an order that does not exist."""

    kind: Literal[BehaviourKind.TOOL_CALL] = BehaviourKind.TOOL_CALL
    arguments: JsonObject = Field(default_factory=dict)
    tool: str | None = None
    """The tool to call; the task's own tool when omitted."""

    def _detail(self) -> str:
        return ",".join(f"{key}={value}" for key, value in sorted(self.arguments.items()))


class Empty(_Base):
    """An answer with nothing in it: Chat ``content: ""``, a Responses message whose one
    ``output_text`` is empty, an Anthropic message with ``content: []``, each with the ordinary
    stop (``stop``, ``completed``, ``end_turn``). What a model sends when it has nothing left to
    say after a tool result (pydantic-ai "Received empty model response")."""

    kind: Literal[BehaviourKind.EMPTY] = BehaviourKind.EMPTY


class Thinking(_Base):
    """Reasoning and no answer: an Anthropic ``thinking`` block with its ``signature``, a
    Responses ``reasoning`` item with a summary, Chat ``reasoning_content`` (the field
    OpenAI-compatible servers such as DeepSeek's and vLLM's send; OpenAI's own Chat API never
    does, so that protocol's cells are ``realistic = false``)."""

    kind: Literal[BehaviourKind.THINKING] = BehaviourKind.THINKING
    text: str = "The user wants the fields extracted. Let me check each one before answering."
    """The reasoning text (Anthropic's ``thinking``, the Responses summary, ``reasoning_content``)."""


class ContentFilter(_Base):
    """The provider's content filter stops the answer part-way: Chat ``finish_reason:
    "content_filter"``, Responses ``status: "incomplete"`` with ``incomplete_details.reason:
    "content_filter"``; Anthropic has no such stop reason, and its streaming classifiers that
    cut an answer end it with ``stop_reason: "refusal"`` after the text already sent (the
    Messages API's "Streaming refusals"), which is what that protocol sends."""

    kind: Literal[BehaviourKind.CONTENT_FILTER] = BehaviourKind.CONTENT_FILTER
    fraction: float = Field(default=0.5, ge=0, lt=1)
    """Share of the valid answer's text sent before the filter stops it (0: none of it)."""
    text: str | None = None
    """Text sent instead of a prefix of the answer (a refusal-like sentence, say)."""


class PauseTurn(_Base):
    """Anthropic's ``stop_reason: "pause_turn"``: the API paused a long turn (a server tool's
    loop) and the client is to send the reply back to let it continue. The OpenAI protocols
    have no such stop; they send the text with their ordinary stop and the cell is
    ``realistic = false``, as it is on Anthropic for a request that offers no server tool."""

    kind: Literal[BehaviourKind.PAUSE_TURN] = BehaviourKind.PAUSE_TURN
    text: str = "Let me look that up."
    """The text the paused turn holds so far."""


class Stringified(_Base):
    """The answer JSON-encoded a second time: the whole object as one JSON string (``field``
    omitted), or inside one field of the object (``{field: "{...}"}``, as in
    claude-agent-sdk-python #374). In tool mode these are the output tool's arguments."""

    kind: Literal[BehaviourKind.STRINGIFIED] = BehaviourKind.STRINGIFIED
    field: str | None = None
    value: JsonObject | None = None
    """The object stringified; the task's reference answer when omitted."""

    def _detail(self) -> str:
        return self.field or "whole"


class Wrapped(_Base):
    """The answer wrapped under one key, ``{"output": {...}}`` (claude-agent-sdk-python #571)."""

    kind: Literal[BehaviourKind.WRAPPED] = BehaviourKind.WRAPPED
    key: str = "output"
    value: JsonObject | None = None
    """The object wrapped; the task's reference answer when omitted."""

    def _detail(self) -> str:
        return self.key


AnswerBehaviour = Annotated[
    Valid
    | Wrong
    | Malformed
    | SchemaViolation
    | Truncated
    | Refusal
    | Prose
    | Empty
    | Thinking
    | ContentFilter
    | PauseTurn
    | Stringified
    | Wrapped,
    Field(discriminator="kind"),
]


class Slow(_Base):
    kind: Literal[BehaviourKind.SLOW] = BehaviourKind.SLOW
    delay_s: float = Field(default=2.0, ge=0, le=MAX_DELAY_S)
    where: Literal["before_first_byte", "mid_stream"] = "before_first_byte"
    """``mid_stream`` sends half the answer, stalls, then sends the rest."""
    answer: Annotated[AnswerBehaviour, BeforeValidator(lambda raw: expand_short_form(raw))] = Field(
        default_factory=Valid
    )

    def _detail(self) -> str:
        return self.where


TurnCall = Annotated[
    ToolCall | Valid | Wrong | Malformed | SchemaViolation | Stringified | Wrapped, Field(discriminator="kind")
]
"""One call of a parallel turn: a function call, or an answer (valid or not) beside them."""


class Parallel(_Base):
    """Several calls in one turn, as real models issue them: two function calls, or a function
    call beside the answer (the output tool's call in tool mode, text in the other modes), any
    of them with bad arguments, or the answer twice (the output tool called twice, as
    langchainjs #11020 reports; outside tool mode the texts follow each other in the one text
    item). Each call gets its own id and index on the wire unless ``same_id`` (every call
    under the first call's id, as some OpenAI-compatible servers send them; no real API does,
    so such a turn is ``realistic = false``); the answer's text comes first, as the APIs put
    content before tool calls, then the calls in this order."""

    kind: Literal[BehaviourKind.PARALLEL] = BehaviourKind.PARALLEL
    calls: list[Annotated[TurnCall, BeforeValidator(lambda raw: _turn_call(raw))]] = Field(
        min_length=2, max_length=MAX_TURN_CALLS
    )
    """Two to :data:`MAX_TURN_CALLS` calls: ``tool_call`` steps and answers (``valid``,
    ``wrong``, ``malformed``, ``schema_violation``, ``stringified``, ``wrapped``)."""
    same_id: bool = False
    """Every call of the turn under one call id (duplicate tool-call ids)."""

    def _detail(self) -> str:
        joined = "+".join(call.label for call in self.calls)
        return f"{joined}+same_id" if self.same_id else joined


SHORT_FIELD: dict[str, str | None] = {
    "valid": "value",
    "wrong": "value",
    "malformed": "variant",
    "schema_violation": "variant",
    "truncated": "fraction",
    "refusal": "message",
    "prose": "text",
    "http_error": "status",
    "slow": "delay_s",
    "tool_call": "arguments",
    "parallel": "calls",
    "empty": None,
    "thinking": "text",
    "content_filter": "fraction",
    "pause_turn": "text",
    "stringified": "field",
    "wrapped": "key",
}
"""For each behaviour, the field a short form's scalar value sets."""


def expand_short_form(raw: Any) -> Any:
    """Turn ``"malformed"`` / ``{"malformed": "x"}`` / ``{"slow": {...}}`` into the long form;
    anything else is passed on for pydantic to validate (and to reject with a located error)."""
    if isinstance(raw, str):
        _require_known(raw)
        return {"kind": raw}
    if isinstance(raw, dict) and len(raw) == 1 and "kind" not in raw:
        ((key, value),) = raw.items()
        _require_known(key)
        if key in SHORT_FIELD:
            if isinstance(value, dict) and key not in ("valid", "wrong", "tool_call"):
                return {"kind": key, **value}
            if value is None:
                return {"kind": key}
            if SHORT_FIELD[key] is None:
                raise ValueError(f"{key!r} takes no value; write it as the bare name {key}")
            return {"kind": key, SHORT_FIELD[key]: value}
    return raw


_AnyBehaviour = Annotated[
    Valid
    | Wrong
    | Malformed
    | SchemaViolation
    | Truncated
    | Refusal
    | Prose
    | HttpError
    | Slow
    | ToolCall
    | Parallel
    | Empty
    | Thinking
    | ContentFilter
    | PauseTurn
    | Stringified
    | Wrapped,
    Field(discriminator="kind"),
]


TURN_KINDS = ("tool_call", "valid", "wrong", "malformed", "schema_violation", "stringified", "wrapped")


def _turn_call(raw: Any) -> Any:
    """A parallel turn's call in long form; a behaviour no turn can hold (a refusal, an HTTP
    error: they are the whole reply) is refused in one sentence naming the ones it can."""
    expanded = expand_short_form(raw)
    kind = expanded.get("kind") if isinstance(expanded, dict) else None
    if kind is not None and str(kind) not in TURN_KINDS:
        raise ValueError(f"{kind!r} cannot be one call of a turn; a turn's calls are {', '.join(TURN_KINDS)}")
    return expanded


def _require_known(name: object) -> None:
    if name not in SHORT_FIELD:
        close = difflib.get_close_matches(str(name), SHORT_FIELD, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown behaviour {name!r}{hint} (known: {', '.join(SHORT_FIELD)})")


ShortName = Literal[
    "valid",
    "wrong",
    "malformed",
    "schema_violation",
    "truncated",
    "refusal",
    "prose",
    "http_error",
    "slow",
    "tool_call",
    "parallel",
    "empty",
    "thinking",
    "content_filter",
    "pause_turn",
    "stringified",
    "wrapped",
]
ShortForm = dict[ShortName, Any]

Behaviour = Annotated[
    _AnyBehaviour,
    BeforeValidator(expand_short_form, json_schema_input_type=ShortName | ShortForm | _AnyBehaviour),
]
"""A behaviour in long form, as a bare name (``malformed``) or as a one-key mapping
(``{malformed: trailing_comma}``, ``{http_error: 429}``, ``{slow: 2.5}``)."""

_BEHAVIOUR_ADAPTER: TypeAdapter[Any] = TypeAdapter(Behaviour)


def script_size(steps: Sequence[Any]) -> int:
    """A script's steps as written (short or long forms, unvalidated), a parallel turn counted
    as its calls: what the script costs to build and keep, bounded by :data:`MAX_SCRIPT_STEPS`."""
    return sum(_step_size(step) for step in steps)


def _step_size(step: Any) -> int:
    if not isinstance(step, dict):
        return 1
    calls = step.get("parallel") if len(step) == 1 else step.get("calls") if step.get("kind") == "parallel" else None
    return max(1, len(calls)) if isinstance(calls, list) else 1


def script_too_long(size: int) -> str:
    return (
        f"the script has {size:,} steps (a parallel turn's calls counted one each); "
        f"a script may have at most {MAX_SCRIPT_STEPS:,}"
    )


def _bounded_steps(raw: Any) -> Any:
    """Count the steps before validating any: 100,000 of them took seconds and 50 MB to build."""
    if isinstance(raw, list) and (size := script_size(raw)) > MAX_SCRIPT_STEPS:
        raise ValueError(script_too_long(size))
    return raw


Steps = Annotated[list[Behaviour], Field(max_length=MAX_SCRIPT_STEPS), BeforeValidator(_bounded_steps)]
"""A script's steps: at most :data:`MAX_SCRIPT_STEPS`, a parallel turn counted as its calls."""


def field_path(location: Sequence[Any]) -> str:
    """A pydantic error location as the user wrote the field (``script[1].delay_s``), without
    the discriminator and validator tags pydantic puts in it."""
    text, previous = "", None
    for part in location:
        tag, previous = previous != "rates" and _is_union_tag(str(part)), part  # a rate's key is a field
        if isinstance(part, int):
            text += f"[{part}]"
        elif tag:
            continue
        else:
            text += f".{part}" if text else str(part)
    return text


def _is_union_tag(part: str) -> bool:
    """pydantic's discriminator and validator tags in an error location (``malformed``,
    ``function-before[...]``, ``literal['repeat']``) are not fields the user wrote."""
    tags = ("function-before[", "function-after[", "literal[")
    return part in SHORT_FIELD or part in ("str", "repeat", "behaviour") or part.startswith(tags)


def parse_behaviour(raw: Any) -> Any:
    """Validate one behaviour given in short or long form."""
    return _BEHAVIOUR_ADAPTER.validate_python(raw)


class Stochastic(BaseModel):
    """Each attempt draws its behaviour from ``rates``; ``valid`` takes the remaining mass."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    rates: dict[str, Annotated[float, Field(ge=0, le=1)]]
    """Behaviour (short form key, e.g. ``malformed`` or ``http_error``) -> probability in [0, 1]."""
    seed: int = Field(default=0, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _check_rates(self) -> Stochastic:
        for key in self.rates:
            if key not in SHORT_FIELD:
                known = ", ".join(SHORT_FIELD)
                raise ValueError(f"unknown behaviour {key!r} in rates; known: {known}")
            if SHORT_FIELD[key] == "calls":
                raise ValueError(f"{key!r} needs its calls, which a rate cannot give; script that turn instead")
        if sum(self.rates.values()) > 1 + 1e-9:
            raise ValueError(f"rates add up to {sum(self.rates.values()):.3f}, more than 1")
        return self


def _then_tag(raw: Any) -> str:
    return "repeat" if raw == "repeat" else "behaviour"


Then = Annotated[
    Annotated[Literal["repeat"], Tag("repeat")] | Annotated[Behaviour, Tag("behaviour")], Discriminator(_then_tag)
]
"""Attempts past a script's end: ``repeat`` its last step, or this behaviour (one branch is
validated, so a bad behaviour is one error, not also "should be 'repeat'")."""


class _PlainScript(BaseModel):
    """What :meth:`Script.parse` validates: the fields a scenario file and ``POST /runs`` share."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    script: Steps | None = None
    then: Then = "repeat"
    stochastic: Stochastic | None = None


class Script:
    """The behaviour for each attempt of one run: a fixed list with a rule for attempts past
    its end, or a seeded stochastic draw. Attempt ``i`` always gets the same behaviour for the
    same script, whatever happened on other attempts, so runs are reproducible."""

    def __init__(
        self,
        steps: Sequence[Any] | None = None,
        then: Any = "repeat",
        stochastic: Stochastic | None = None,
        unit_seed: int = 0,
    ) -> None:
        """``steps`` and ``then`` are behaviours already validated (a :class:`bench.scenarios.files.Scenario`
        holds them so, see ``Scenario.build_script``); plain data goes through :meth:`parse`."""
        if not steps and stochastic is None:
            raise ValueError("a script needs steps or a stochastic mix")
        self.steps = list(steps or ())
        self.then = then
        self.stochastic = stochastic
        self.unit_seed = unit_seed

    @classmethod
    def parse(
        cls,
        steps: list[Any] | None = None,
        then: Any = "repeat",
        stochastic: Stochastic | dict[str, Any] | None = None,
        unit_seed: int = 0,
    ) -> Script:
        """A script from plain data (short or long forms, as JSON or YAML gives them): the one
        place a posted script is parsed (``POST /runs``, tests and benchmarks). A problem is a
        ``ValidationError`` located as the body wrote it (``script[1].delay_s``)."""
        posted = _PlainScript.model_validate({"script": steps, "then": then, "stochastic": stochastic})
        return cls(posted.script, then=posted.then, stochastic=posted.stochastic, unit_seed=unit_seed)

    def behaviour_for(self, attempt: int) -> Any:
        if self.stochastic is not None:
            return self._draw(attempt)
        if attempt < len(self.steps):
            return self.steps[attempt]
        return self.steps[-1] if self.then == "repeat" else self.then

    def _draw(self, attempt: int) -> Any:
        assert self.stochastic is not None
        rng = random.Random(f"{self.stochastic.seed}:{self.unit_seed}:{attempt}")
        roll = rng.random()
        cumulative = 0.0
        for key, rate in sorted(self.stochastic.rates.items()):
            cumulative += rate
            if roll < cumulative:
                return parse_behaviour(key)
        return Valid()
