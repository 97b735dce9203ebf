"""The answer-source seam: where a run's answers come from, when not from the scripted behaviour.

By default the provider renders each attempt's behaviour against the task
(:func:`bench.provider.app.answer_for`). A run opened with an :class:`AnswerSource` (a replay
from cassettes, :mod:`bench.cassettes.replay`) asks it instead, once per model call: the source
returns the answer (which the ledger records and the protocol modules spell on the wire) and,
when the reply is to be sent exactly as recorded, the bytes to send instead of a rendering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bench.provider.answer import Answer
from bench.provider.detect import RequestShape
from bench.scenarios.tasks import Task


@dataclass(frozen=True)
class Verbatim:
    """A reply sent byte for byte as recorded: a JSON body (one chunk) or a stream's frames."""

    status: int
    headers: dict[str, str]
    """Every header but the content type."""
    content_type: str
    chunks: tuple[bytes, ...]


@dataclass(frozen=True)
class Sourced:
    """What the source answers one model call with."""

    answer: Answer
    verbatim: Verbatim | None = None
    """Sent instead of rendering ``answer`` when set (a recorded reply, a recorded error, a miss)."""
    call_ids: tuple[str, ...] = ()
    """The tool-call ids the verbatim reply issues (one per ``answer.calls``), in order."""
    input_tokens: int | None = None
    """Billed prompt tokens as recorded (None: the provider counts them)."""
    output_tokens: int | None = None
    """Billed completion tokens as recorded (None: counted from the answer)."""


class AnswerSource(Protocol):
    def answer(self, behaviour: Any, shape: RequestShape, body: dict[str, Any], task: Task) -> Sourced:
        """The answer to one model call whose scripted behaviour is ``behaviour``."""
        ...
