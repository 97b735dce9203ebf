"""Answer a provider run from cassettes, with the scenario's faults applied to the real answer.

Each model call is matched to a cassette (:mod:`bench.cassettes.match`), its reply read as an
answer (:mod:`bench.cassettes.extract`), and the attempt's scripted behaviour applied to it.

A call of a task drawn from the cassettes (:mod:`bench.cassettes.tasks`, ``--tasks cassettes``)
is not matched: the run is bound to its task, and the call is answered from one of that task's
recordings (drawn with the cell's seed). A request the recording answers by the rule (the
recording SDK's own) is served as below; any other gets the recorded answer re-rendered for its
protocol, mode, output tool and stream flag: the recorded payload text (the request's output
tool's arguments in tool mode, the text otherwise), its stop, the recorded prompt tokens and,
when the payload was the whole turn, the recorded completion tokens; alone in its turn. The
faults below apply to that payload the same way; the families a task's answer cannot carry are
refused before the run (:attr:`bench.cassettes.tasks.DrawnTask.not_measured`).

===================  ==========================================================================
``valid``            the recorded reply, byte for byte (one of several recordings of the same
                     request drawn with the cell's seed) (re-spelled by the protocol module when
                     the request streams and the recording did not, or the reverse)
``truncated``        the recorded answer cut at its own token N (``fraction`` of its tokens, or
                     the request's ``max_tokens``), with the protocol's length stop
``malformed``        the recorded JSON fenced in prose (``fenced_prose``), its closing brace
                     dropped (``unterminated``), a comma before it (``trailing_comma``), or in
                     single quotes (``single_quotes``)
``wrong``            one field of the recorded answer changed, types kept (a number +1, a
                     boolean flipped, another enum value, a string reversed, tried in that
                     order): the first change
                     the task's check rejects (the first change, when the recorded answer is
                     not of the task's type)
``schema_violation`` the recorded answer with its last field dropped (``missing_field``), its
                     first number as a string (``wrong_type``), an extra key (``extra_key``) or
                     its first number negated past any bound (``out_of_range``)
``refusal``          a refusal worded as a recorded refusal of the same protocol, when one was
                     recorded (the scenario's message otherwise)
``http_error``       a recorded error reply of that status, when one was recorded (the API's
                     own envelope otherwise)
``slow``             the above, delayed or stalled mid-stream
``tool_call``,       scripted calls of the agent's own tools and scripted prose are not
``parallel``,        answers to fault: they are rendered as without cassettes
``prose``
===================  ==========================================================================

A fault that cannot be built on the recorded answer (a turn with no structured answer, an
answer that is not a JSON object) and a request no cassette matches are answered with the API's
400 naming the reason and the nearest cassette, and kept in :attr:`Replay.misses`, which the
runner turns into a harness error: nothing is silently measured less.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from bench.cassettes.extract import Recorded, recorded
from bench.cassettes.folder import load_cassettes
from bench.cassettes.format import Cassette, CassetteError
from bench.cassettes.match import CassetteMiss, Entry, Library, Recording
from bench.cassettes.redact import Redaction
from bench.core.vocabulary import Mode
from bench.provider.answer import Answer, Finish, is_realistic, render, truncate
from bench.provider.app import WIRES
from bench.provider.detect import RequestShape
from bench.provider.source import Sourced, Verbatim
from bench.provider.wire import dumps_str
from bench.scenarios import behaviours as b
from bench.scenarios.tasks import Task

T = TypeVar("T")
MISS = "cassette_miss"
"""The ledger's ``behaviour`` of a call no cassette could answer as scripted."""
SCRIPTED = (b.ToolCall, b.Parallel, b.Prose)


class Unbuildable(ValueError):
    """A fault that cannot be applied to the recorded answer."""


class Replay:
    """The :class:`bench.provider.source.AnswerSource` of a cassette folder."""

    def __init__(self, library: Library, seed: int = 0) -> None:
        self.library = library
        self.misses: list[str] = []
        """One line per call answered with a miss, in order (read by the runner)."""
        self._lock = threading.Lock()
        self._draws = random.Random(seed)
        """Picks among several recordings of the same request: seeded per cell (its unit seed),
        so the reps of a sweep draw different real answers and a run is reproduced exactly."""

    @classmethod
    def from_folder(
        cls,
        directory: Path,
        redaction: Redaction | None = None,
        on_bad: Callable[[CassetteError], None] | None = None,
    ) -> Replay:
        """The replay of a folder (``on_bad``: given, a file that cannot be read is passed to it
        and skipped, ``--skip-bad``; else it refuses the folder)."""
        return cls(Library(load_cassettes(directory, on_bad), redaction))

    @classmethod
    def of(cls, cassettes: list[tuple[Path, Cassette]], redaction: Redaction | None = None) -> Replay:
        return cls(Library(cassettes, redaction))

    def fresh(self, seed: int = 0) -> Replay:
        """The same library with its own miss list and draws (one per cell)."""
        return Replay(self.library, seed)

    def answer(self, behaviour: Any, shape: RequestShape, body: dict[str, Any], task: Task) -> Sourced:
        if isinstance(behaviour, SCRIPTED):
            return Sourced(render(behaviour, shape, task))
        if isinstance(behaviour, b.HttpError):
            return self._error(behaviour, shape, task)
        slow = behaviour if isinstance(behaviour, b.Slow) else None
        inner = slow.answer if slow is not None else behaviour
        try:
            recordings = getattr(task, "recordings", None)  # a task drawn from the cassettes
            if recordings:
                sourced = self._drawn(inner, self._draw(recordings), shape, body, task)
            else:
                sourced = self._faulted(inner, self._draw(self.library.match(str(shape.protocol), body, shape.stream)),
                                        shape, task)  # fmt: skip
        except (CassetteMiss, Unbuildable) as error:
            return self._miss(shape, str(error))
        if slow is None:
            return sourced
        stall = slow.where == "mid_stream"
        answer = replace(
            sourced.answer, behaviour=f"{slow.label}>{sourced.answer.behaviour}",
            delay_s=0.0 if stall else slow.delay_s, stall_mid_stream_s=slow.delay_s if stall else 0.0,
        )  # fmt: skip
        return replace(sourced, answer=answer)

    def _draw(self, among: Sequence[T]) -> T:
        """One of several recordings, drawn with the cell's seed."""
        with self._lock:
            return among[self._draws.randrange(len(among))] if len(among) > 1 else among[0]

    def _drawn(
        self, behaviour: Any, recording: Recording, shape: RequestShape, body: dict[str, Any], task: Task
    ) -> Sourced:
        """A request of a task drawn from the cassettes: answered from that task's recording,
        whatever the request says. A request the recording matches as the exact rule asks (the
        recording SDK's own) gets the recorded reply as the rule gives it; any other gets the
        recorded answer re-rendered for its protocol, mode, output tool and stream flag, alone
        in its turn (the recording's other items called tools this agent need not have)."""
        entry = recording.entry
        if isinstance(behaviour, b.Refusal) or self.library.answers_exactly(entry, str(shape.protocol), body):
            return self._faulted(behaviour, entry, shape, task)  # a refusal is worded as recorded either way
        said = recorded(entry.cassette)
        realistic = is_realistic(behaviour, shape, task)
        payload = said.items[recording.item].text
        if isinstance(behaviour, b.Valid) and behaviour.value is None:
            text, finish = payload, said.finish
            tokens = said.output_tokens if len(said.items) == 1 else None  # the turn's tokens are its own
        else:
            text, finish = faulted_text(behaviour, payload, shape, entry.path, task)
            tokens = None
        tool = shape.output_tool if shape.mode is Mode.TOOL else None
        answer = Answer(behaviour.label, realistic, text=text, tool_name=tool, finish=finish)
        return Sourced(answer, None, (), said.input_tokens, tokens)

    def _faulted(self, behaviour: Any, entry: Entry, shape: RequestShape, task: Task) -> Sourced:
        said = recorded(entry.cassette)
        realistic = is_realistic(behaviour, shape, task)
        if isinstance(behaviour, b.Valid) and behaviour.value is None:
            answer = said.answer(behaviour.label, realistic)
            if entry.cassette.stream != shape.stream:
                return Sourced(answer, input_tokens=said.input_tokens)
            response = entry.cassette.response
            headers = {k: v for k, v in response.headers.items() if k != "content-type"}
            verbatim = Verbatim(response.status, headers, response.content_type, tuple(response.chunks()))
            return Sourced(answer, verbatim, said.call_ids, said.input_tokens)
        if isinstance(behaviour, b.Refusal):
            message = self._recorded_refusal(str(shape.protocol)) or behaviour.message
            return Sourced(
                Answer(behaviour.label, realistic, refusal=message, finish="refusal"), None, (), said.input_tokens
            )
        index = _payload_index(said, shape, entry.path)
        text, finish = faulted_text(behaviour, said.items[index].text, shape, entry.path, task)
        return Sourced(
            _with_payload(said, index, text, finish, behaviour.label, realistic), None, (), said.input_tokens
        )

    def _recorded_refusal(self, protocol: str) -> str | None:
        for entry in self.library.answers:
            if entry.cassette.protocol == protocol:
                message = recorded(entry.cassette).refusal
                if message:
                    return message
        return None

    def _error(self, behaviour: b.HttpError, shape: RequestShape, task: Task) -> Sourced:
        answer = render(behaviour, shape, task)
        entry = self.library.recorded_error(str(shape.protocol), behaviour.status)
        if entry is None:
            return Sourced(answer)
        response = entry.cassette.response
        headers = {k: v for k, v in response.headers.items() if k != "content-type"}
        return Sourced(answer, Verbatim(response.status, headers, response.content_type, tuple(response.chunks())))

    def _miss(self, shape: RequestShape, message: str) -> Sourced:
        with self._lock:
            self.misses.append(message)
        reply = WIRES[shape.protocol].bad_request(message)
        answer = Answer(MISS, False, error=b.HttpError(status=400))
        headers = {k: v for k, v in reply.headers.items() if k != "content-type"}
        return Sourced(answer, Verbatim(reply.status, headers, "application/json", (dumps_str(reply.body).encode(),)))


def _payload_index(said: Recorded, shape: RequestShape, path: Path) -> int:
    """Which recorded item carries the structured answer: the output tool's call in tool mode,
    the text otherwise."""
    for index, item in enumerate(said.items):
        if shape.mode is Mode.TOOL and item.tool_name is not None and item.tool_name == shape.output_tool:
            return index
        if shape.mode is not Mode.TOOL and item.tool_name is None and item.refusal is None and item.text:
            return index
    calls = [item.tool_name for item in said.items if item.tool_name]
    what = f"it calls {', '.join(calls)}" if calls else "it is empty or a refusal"
    raise Unbuildable(f"{path}: the recorded reply has no structured answer to fault ({what})")


def _with_payload(said: Recorded, index: int, text: str, finish: Finish, label: str, realistic: bool) -> Answer:
    """The recorded turn with its answer's text replaced; a length stop ends the turn there."""
    items = said.items[: index + 1] if finish == "length" else said.items
    parts = tuple(
        Answer(label, realistic, text=text if at == index else item.text, tool_name=item.tool_name)
        for at, item in enumerate(items)
    )
    if len(parts) == 1:
        return Answer(label, realistic, text=parts[0].text, tool_name=parts[0].tool_name, finish=finish)
    return Answer(label, realistic, parts=parts, finish=finish)


def faulted_text(
    behaviour: Any, text: str, shape: RequestShape, path: Path, task: Task | None = None
) -> tuple[str, Finish]:
    """The recorded answer ``text`` with the fault ``behaviour`` applied, and its stop."""
    if isinstance(behaviour, b.Truncated):
        return truncate(text, behaviour.fraction, shape.max_output_tokens), "length"
    if isinstance(behaviour, b.Malformed) and behaviour.variant == "fenced_prose":
        return (
            f"Sure! Here is the JSON you asked for:\n```json\n{text}\n```\nLet me know if you need anything else.",
            "stop",
        )
    value = _object(text, behaviour, path)
    if isinstance(behaviour, b.Valid | b.Wrong) and behaviour.value is not None:
        return dumps_str(behaviour.value), "stop"
    if isinstance(behaviour, b.Malformed):
        compact = dumps_str(value)
        shaped = {"trailing_comma": compact[:-1] + ",}", "unterminated": compact[:-1], "single_quotes": repr(value)}
        return shaped[behaviour.variant], "stop"
    if isinstance(behaviour, b.Wrong):
        return dumps_str(perturbed(value, task, path)), "stop"
    if isinstance(behaviour, b.SchemaViolation):
        return dumps_str(violated(value, behaviour.variant, path, task)), "stop"
    raise Unbuildable(f"{path}: no replay of {behaviour.label} on a recorded answer")


def _object(text: str, behaviour: Any, path: Path) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not value:
        raise Unbuildable(f"{path}: cannot apply {behaviour.label}: the recorded answer is not a JSON object")
    return value


def _leaves(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every scalar of ``value`` with its path, depth first in document order."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*where, key))]
    if isinstance(value, list):
        return [leaf for at, item in enumerate(value) for leaf in _leaves(item, (*where, at))]
    return [(where, value)]


def _set(value: Any, where: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = new
    return copy


def perturbations(value: dict[str, Any], schema: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each one-field change of ``value`` that keeps its types, in the order tried: each number
    +1, each boolean flipped, each string swapped for another value of its enum (``schema``, the
    task's JSON schema), then each string reversed."""
    leaves = _leaves(value)
    numbers = [(w, v + 1) for w, v in leaves if isinstance(v, int | float) and not isinstance(v, bool)]
    flags = [(w, not v) for w, v in leaves if isinstance(v, bool)]
    swaps = [(w, other) for w, v in leaves if isinstance(v, str) for other in _enum_of(schema, w) if other != v]
    strings = [(w, v[::-1]) for w, v in leaves if isinstance(v, str) and len(set(v)) > 1]
    return [_set(value, where, new) for where, new in (*numbers, *flags, *swaps, *strings)]


def _enum_of(schema: dict[str, Any] | None, where: tuple[Any, ...]) -> list[Any]:
    """The ``enum`` (or ``Literal``) values the schema allows at ``where`` (top-level
    properties, local ``$ref`` and ``items`` followed); none when it says nothing."""
    node: Any = schema or {}
    for step in where:
        node = _resolved(schema or {}, node)
        node = (node.get("properties") or {}).get(step) if isinstance(step, str) else node.get("items")
        if not isinstance(node, dict):
            return []
    node = _resolved(schema or {}, node)
    return list(node.get("enum") or [])


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        for part in ref[2:].split("/"):
            schema = schema.get(part) or {}
        return schema
    return node


def perturbed(value: dict[str, Any], task: Task | None = None, path: Path = Path("(cassette)")) -> dict[str, Any]:
    """The recorded answer with one field changed so that it is wrong: the first change the
    task's own check rejects while the type still accepts it. A recorded answer that is not an
    instance of the task's type (the task cannot judge it) takes the first change."""
    candidates = perturbations(value, task.schema if task is not None else None)
    if task is not None and task.judge(value)[0]:
        candidates = [candidate for candidate in candidates if task.judge(candidate) == (True, False)]
    if not candidates:
        raise Unbuildable(f"{path}: no one-field change of the recorded answer is wrong for the task's check")
    return candidates[0]


def violated(value: dict[str, Any], variant: str, path: Path, task: Task | None = None) -> dict[str, Any]:
    """The recorded answer broken by ``variant``; when the task's type accepts the result anyway (a
    number with no lower bound, a dropped field with a default), :class:`Unbuildable` (a loud miss,
    never a valid answer labelled a violation)."""
    broken = _violated(value, variant, path)
    if task is not None:
        try:
            task.output_model.model_validate(broken)
        except ValueError:
            return broken
        raise Unbuildable(f"{path}: schema_violation:{variant} of the recorded answer still fits the task's type")
    return broken


def _violated(value: dict[str, Any], variant: str, path: Path) -> dict[str, Any]:
    numbers = [(w, v) for w, v in _leaves(value) if isinstance(v, int | float) and not isinstance(v, bool)]
    if variant == "missing_field":
        return dict(list(value.items())[:-1])
    if variant == "extra_key":
        return value | {"unexpected_field": "not in the schema"}
    if not numbers:
        raise Unbuildable(f"{path}: cannot apply schema_violation:{variant}: the recorded answer has no number")
    where, number = numbers[0]
    if variant == "wrong_type":
        return _set(value, where, str(number))
    return _set(value, where, -abs(number) - 1_000_000)
