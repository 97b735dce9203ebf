"""Behaviours: what the fake model does on one attempt, and scripts of them.

Every behaviour has a long form (``{kind: malformed, variant: trailing_comma}``) and a short
form (``malformed``, ``{malformed: trailing_comma}``); both resolve through one table,
:data:`SHORT_FIELD`, so the YAML a user writes and the Python the runner writes mean the same.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, model_validator

from bench.core.vocabulary import BehaviourKind

MalformedVariant = Literal["trailing_comma", "fenced_prose", "single_quotes", "unterminated"]
ViolationVariant = Literal["missing_field", "wrong_type", "extra_key", "out_of_range"]
HttpStatus = Literal[400, 429, 500, 503, 529]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def label(self) -> str:
        """Short name used in result columns, e.g. ``malformed:trailing_comma``."""
        detail = self._detail()
        return f"{self.kind}:{detail}" if detail else str(self.kind)  # type: ignore[attr-defined]

    def _detail(self) -> str:
        return ""


class Valid(_Base):
    kind: Literal[BehaviourKind.VALID] = BehaviourKind.VALID
    value: dict[str, Any] | None = None
    """The object to answer with; the task's reference answer when omitted."""


class Wrong(_Base):
    kind: Literal[BehaviourKind.WRONG] = BehaviourKind.WRONG
    value: dict[str, Any] | None = None
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
    retry_after_s: float | None = None
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
    arguments: dict[str, Any] = Field(default_factory=dict)
    tool: str | None = None
    """The tool to call; the task's own tool when omitted."""

    def _detail(self) -> str:
        return ",".join(f"{key}={value}" for key, value in sorted(self.arguments.items()))


AnswerBehaviour = Annotated[
    Valid | Wrong | Malformed | SchemaViolation | Truncated | Refusal | Prose,
    Field(discriminator="kind"),
]


class Slow(_Base):
    kind: Literal[BehaviourKind.SLOW] = BehaviourKind.SLOW
    delay_s: float = Field(default=2.0, ge=0, le=3600)
    where: Literal["before_first_byte", "mid_stream"] = "before_first_byte"
    """``mid_stream`` sends half the answer, stalls, then sends the rest."""
    answer: Annotated[AnswerBehaviour, BeforeValidator(lambda raw: expand_short_form(raw))] = Field(
        default_factory=Valid
    )

    def _detail(self) -> str:
        return self.where


TurnCall = Annotated[ToolCall | Valid | Wrong | Malformed | SchemaViolation, Field(discriminator="kind")]
"""One call of a parallel turn: a function call, or the answer (valid or not) beside them."""


class Parallel(_Base):
    """Several calls in one turn, as real models issue them: two function calls, or a function
    call beside the answer (the output tool's call in tool mode, text in the other modes), any
    of them with bad arguments. Each call gets its own id and index on the wire; the answer's
    text comes first, as the APIs put content before tool calls, then the calls in this order."""

    kind: Literal[BehaviourKind.PARALLEL] = BehaviourKind.PARALLEL
    calls: list[Annotated[TurnCall, BeforeValidator(lambda raw: _turn_call(raw))]] = Field(min_length=2)
    """Two or more calls: ``tool_call`` steps, and at most one answer (``valid``, ``wrong``,
    ``malformed`` or ``schema_violation``)."""

    @model_validator(mode="after")
    def _one_answer(self) -> Parallel:
        if sum(not isinstance(call, ToolCall) for call in self.calls) > 1:
            raise ValueError("a turn holds at most one answer beside its tool calls (the rest are tool_call steps)")
        return self

    def _detail(self) -> str:
        return "+".join(call.label for call in self.calls)


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
            return {"kind": key, SHORT_FIELD[key]: value}
    return raw


_AnyBehaviour = Annotated[
    Valid | Wrong | Malformed | SchemaViolation | Truncated | Refusal | Prose | HttpError | Slow | ToolCall | Parallel,
    Field(discriminator="kind"),
]


TURN_KINDS = ("tool_call", "valid", "wrong", "malformed", "schema_violation")


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
]
ShortForm = dict[ShortName, Any]

Behaviour = Annotated[
    _AnyBehaviour,
    BeforeValidator(expand_short_form, json_schema_input_type=ShortName | ShortForm | _AnyBehaviour),
]
"""A behaviour in long form, as a bare name (``malformed``) or as a one-key mapping
(``{malformed: trailing_comma}``, ``{http_error: 429}``, ``{slow: 2.5}``)."""

_BEHAVIOUR_ADAPTER: TypeAdapter[Any] = TypeAdapter(Behaviour)


def parse_behaviour(raw: Any) -> Any:
    """Validate one behaviour given in short or long form."""
    return _BEHAVIOUR_ADAPTER.validate_python(raw)


class Stochastic(BaseModel):
    """Each attempt draws its behaviour from ``rates``; ``valid`` takes the remaining mass."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rates: dict[str, float]
    """Behaviour (short form key, e.g. ``malformed`` or ``http_error``) -> probability."""
    seed: int = 0

    @model_validator(mode="after")
    def _check_rates(self) -> Stochastic:
        for key, rate in self.rates.items():
            if key not in SHORT_FIELD:
                known = ", ".join(SHORT_FIELD)
                raise ValueError(f"unknown behaviour {key!r} in rates; known: {known}")
            if not 0 <= rate <= 1:
                raise ValueError(f"rate for {key!r} is {rate}, expected a value in [0, 1]")
            if SHORT_FIELD[key] == "calls":
                raise ValueError(f"{key!r} needs its calls, which a rate cannot give; script that turn instead")
        if sum(self.rates.values()) > 1 + 1e-9:
            raise ValueError(f"rates add up to {sum(self.rates.values()):.3f}, more than 1")
        return self


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
        place a posted script is parsed (``POST /runs``, tests and benchmarks)."""
        if isinstance(stochastic, dict):
            stochastic = Stochastic.model_validate(stochastic)
        return cls(
            [parse_behaviour(step) for step in steps or []],
            then=then if then == "repeat" else parse_behaviour(then),
            stochastic=stochastic,
            unit_seed=unit_seed,
        )

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
