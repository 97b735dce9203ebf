"""The words docs/design.md fixes, as types: every module and every results column uses these.

Keeping them in one place means a typo in a mode or outcome name is a type error, not a
silently empty group in somebody's notebook.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How the structured answer is requested (docs/design.md, "Output modes and enforcement")."""

    TOOL = "tool"
    NATIVE = "native"
    PROMPTED = "prompted"


class Enforcement(StrEnum):
    """How hard the provider is asked to keep the answer in shape."""

    STRICT = "strict"
    JSON = "json"
    NONE = "none"


class Protocol(StrEnum):
    """The wire protocols the provider speaks."""

    CHAT = "openai-chat"
    RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic-messages"


class Variant(StrEnum):
    """How an adapter configures the SDK around one mode.

    The built-in adapters use these; a third-party adapter may name variants of its own (a
    ``Cell.variant`` is any string), and those compare and store exactly like these do.
    """

    DEFAULT = "default"
    """The shortest code a user writes for the mode."""
    HARDENED = "hardened"
    """The SDK's documented production settings: retry budgets, validators, error handlers."""
    STREAM = "stream"
    """The SDK's streaming entry point; the provider answers with SSE."""
    AUTO = "auto"
    """The bare schema, leaving the SDK to pick the mode (LangChain)."""
    JSON_OBJECT = "json_object"
    """JSON mode without a schema (agentmaker's custom profile)."""
    MD_JSON = "md_json"
    """The answer asked for in a fenced markdown block and read out of the text (Instructor's
    ``Mode.MD_JSON``)."""


class BehaviourKind(StrEnum):
    """What the fake model does on one attempt (docs/design.md, "Behaviours")."""

    VALID = "valid"
    WRONG = "wrong"
    MALFORMED = "malformed"
    SCHEMA_VIOLATION = "schema_violation"
    TRUNCATED = "truncated"
    REFUSAL = "refusal"
    PROSE = "prose"
    HTTP_ERROR = "http_error"
    SLOW = "slow"
    TOOL_CALL = "tool_call"
    PARALLEL = "parallel"
    EMPTY = "empty"
    THINKING = "thinking"
    CONTENT_FILTER = "content_filter"
    PAUSE_TURN = "pause_turn"
    STRINGIFIED = "stringified"
    WRAPPED = "wrapped"


class Outcome(StrEnum):
    """Where a cell's failure ended up (docs/design.md, "Outcomes")."""

    OK = "ok"
    RECOVERED = "recovered"
    RAISED = "raised"
    FALLBACK = "fallback"
    WRONG = "wrong"
    EMPTY = "empty"
    RUNAWAY = "runaway"
    TIMEOUT = "timeout"
    UNSUPPORTED = "unsupported"
    HARNESS_ERROR = "harness_error"


class ModeSupport(StrEnum):
    """How an adapter cell was built (docs/design.md, "Subjects")."""

    BUILTIN = "builtin"
    COMPOSED = "composed"
    UNSUPPORTED = "unsupported"


USER_FAILURE: frozenset[Outcome] = frozenset({Outcome.WRONG, Outcome.EMPTY})
"""An answer handed to the user as if it were right when it is not: the failures the caller
cannot see (the report's "handed to the user", the sweep's failure rate, the gate's
``user_failure`` rate)."""

SUCCESS: frozenset[Outcome] = frozenset({Outcome.OK, Outcome.RECOVERED})
"""The caller got a correct object (first time, or after retries): the cost tables' successes."""

CALLS_SHOWN: frozenset[Outcome] = frozenset(
    {Outcome.RECOVERED, Outcome.FALLBACK, Outcome.RAISED, Outcome.WRONG, Outcome.EMPTY, Outcome.RUNAWAY}
)
"""Outcomes whose cell shows its model calls (``r3``, ``raised X (1)``, the heatmap's number): the
calls say how far the SDK went. Not ``ok`` (a first-time-right run's calls), ``timeout`` (cut by the
clock, not by a call count), ``unsupported`` (no call) or ``harness_error`` (the harness failed)."""

WHITE_TEXT: frozenset[Outcome] = frozenset(
    {Outcome.OK, Outcome.WRONG, Outcome.EMPTY, Outcome.RUNAWAY, Outcome.TIMEOUT, Outcome.HARNESS_ERROR}
)
"""Outcomes whose colour (``bench.report.plots.COLOURS``) takes white text: white has the higher
WCAG contrast ratio on each of them than the pages' dark text (#212121), and the lower on every
other outcome's colour (tests/report/test_build.py checks this against the colours)."""


# How the terminal shows each outcome: a one- or two-letter code and a rich style (the matrix, the
# progress line).
CODE: dict[str, str] = {
    Outcome.OK: "ok",
    Outcome.RECOVERED: "r",
    Outcome.FALLBACK: "f",
    Outcome.RAISED: "x",
    Outcome.WRONG: "W",
    Outcome.EMPTY: "E",
    Outcome.RUNAWAY: "L",
    Outcome.TIMEOUT: "T",
    Outcome.UNSUPPORTED: "-",
    Outcome.HARNESS_ERROR: "!",
}
STYLE: dict[str, str] = {
    Outcome.OK: "green",
    Outcome.RECOVERED: "green3",
    Outcome.FALLBACK: "cyan",
    Outcome.RAISED: "yellow",
    Outcome.WRONG: "bold red",
    Outcome.EMPTY: "bold red",
    Outcome.RUNAWAY: "magenta",
    Outcome.TIMEOUT: "bright_black",
    Outcome.UNSUPPORTED: "bright_black",
    Outcome.HARNESS_ERROR: "bold magenta",
}
