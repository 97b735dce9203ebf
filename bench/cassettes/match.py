"""Which cassette answers a request: the matching rule, in one place.

A request is normalised to (protocol, model, conversation, tools, response format):

- the conversation is one list of messages for every protocol: Chat's ``messages``; Responses'
  ``instructions`` (as a system message) then ``input`` (a string is one user message);
  Anthropic's ``system`` (as a system message) then ``messages``;
- in every message and tool, ids are dropped (``id``, ``tool_call_id``, ``call_id``,
  ``tool_use_id``: a replayed or faulted answer issues its own), as are ``cache_control`` marks
  and null or empty fields, and content made only of text parts becomes its text;
- the response format is Chat's ``response_format``, Responses' ``text.format``, Anthropic's
  ``output_config.format`` (or the beta ``output_format``).

A cassette matches when protocol, model, tools and response format are equal and its recorded
conversation is a prefix of the request's (the request repeats it, perhaps with more turns: an
output retry carries the failed answer and the feedback after it). The longest such prefix wins
(an exact match first); on a tie, a cassette recorded with the same ``stream`` flag; several
recordings of the same request left are drawn from, with the cell's seed
(:class:`bench.cassettes.replay.Replay`). A shorter prefix never matches a request that has
moved past its answer (its later turns carry a tool-call id that answer issued): that request
asks what came next, and serving the same call again would loop. Sampling parameters,
``stream`` and headers never decide a match. The replay's body patterns (``--redact``) are
applied to the recorded requests and to each request before they are compared: the patterns a
folder was recorded with, so a redacted prompt matches, and any text that changes from run to
run (a temporary path, a date) that must not decide a match; so are the credential fields
``bench record`` blanks (:func:`bench.cassettes.redact.blank_fields`). An answer ``bench
record`` cut is never served: a request it would answer is a miss that names it.

The rule answers a run of the scenarios' own tasks: the recording SDK's requests replayed (the
round trip). A task drawn from the cassettes (:mod:`bench.cassettes.tasks`) is asked by SDKs
that never sent the recorded request (another prompt template, tool name, schema): its run is
bound to the task's recordings, and :meth:`Library.answers_exactly` only tells the recording's
own request (served as this rule serves it) from another SDK's (the answer re-rendered).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cassettes.extract import recorded
from bench.cassettes.format import Cassette
from bench.cassettes.redact import Redaction

PATH_PROTOCOLS = (
    ("/messages/count_tokens", None),
    ("/chat/completions", "openai-chat"),
    ("/responses", "openai-responses"),
    ("/messages", "anthropic-messages"),
)
"""The endpoint a path ends with, and its protocol (None: an auxiliary request)."""
IDS = frozenset({"id", "tool_call_id", "call_id", "tool_use_id", "cache_control"})


def protocol_of_path(path: str) -> str | None:
    for suffix, protocol in PATH_PROTOCOLS:
        if path.rstrip("/").endswith(suffix):
            return protocol
    return None


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _clean(v) for k, v in value.items() if k not in IDS and v not in (None, [], {}, "")}
        content = kept.get("content")
        if isinstance(content, list) and content and all(_is_text_part(part) for part in content):
            kept["content"] = "".join(part["text"] for part in content)
        return kept
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def _is_text_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") and "text" in part


def _conversation(protocol: str, body: dict[str, Any]) -> list[Any]:
    if protocol == "openai-chat":
        return list(body.get("messages") or [])
    if protocol == "openai-responses":
        opening = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
        given = body.get("input")
        return opening + ([{"role": "user", "content": given}] if isinstance(given, str) else list(given or []))
    opening = [{"role": "system", "content": body["system"]}] if body.get("system") else []
    return opening + list(body.get("messages") or [])


def _response_format(protocol: str, body: dict[str, Any]) -> Any:
    if protocol == "openai-chat":
        return body.get("response_format")
    if protocol == "openai-responses":
        return (body.get("text") or {}).get("format")
    return (body.get("output_config") or {}).get("format") or body.get("output_format")


def normalised(protocol: str | None, body: dict[str, Any]) -> dict[str, Any]:
    """The request as the rule sees it (module docstring)."""
    if protocol is None:
        return {}
    return _clean({
        "protocol": protocol, "model": body.get("model"), "conversation": _conversation(protocol, body),
        "tools": body.get("tools"), "response_format": _response_format(protocol, body),
    })  # fmt: skip


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Entry:
    path: Path
    cassette: Cassette
    frame: str
    """protocol, model, tools and response format, canonical: what must be equal."""
    turns: tuple[str, ...]
    """The conversation, each message canonical."""
    raw_turns: tuple[str, ...] = ()
    """The conversation as sent (ids kept), each message as JSON."""
    call_ids: frozenset[str] = frozenset()
    """The tool-call ids the recorded answer issued."""


class CassetteMiss(LookupError):
    """No cassette answers a request; the message is one line naming the nearest cassette."""


def _entry(
    path: Path, cassette: Cassette, call_ids: frozenset[str] = frozenset(), redaction: Redaction | None = None
) -> Entry:
    body = cassette.request.body or {}
    body = redaction.body(body) if redaction is not None else body
    shape = normalised(cassette.protocol, body)
    turns = tuple(_canonical(turn) for turn in shape.pop("conversation", []))
    raw = tuple(json.dumps(turn) for turn in _conversation(cassette.protocol, body)) if cassette.protocol else ()
    return Entry(path, cassette, _canonical(shape), turns, raw, call_ids)


def _answered(path: Path, cassette: Cassette, redaction: Redaction) -> Entry:
    """An entry of a recorded answer, knowing the call ids it issued."""
    return _entry(path, cassette, frozenset(filter(None, recorded(cassette).call_ids)), redaction)


def _moved_past(entry: Entry, probe: Entry) -> bool:
    """Whether the request continues past this cassette's answer: its later turns carry a call
    id that answer issued (the agent took the recorded call and sent its result back). Such a
    request asks what came next, not for this answer again; a retry after a faulted answer
    carries the fault's own ids instead."""
    later = "".join(probe.raw_turns[len(entry.turns) :])
    return any(call_id in later for call_id in entry.call_ids)


@dataclass(frozen=True)
class Recording:
    """One recorded exchange of a drawn task's answer: the cassette and which of its items."""

    entry: Entry
    item: int
    where: str
    """``file#interaction``, for the reader."""


class Library:
    """The cassettes of one folder, indexed for matching; errors and refusals kept by protocol."""

    def __init__(self, cassettes: list[tuple[Path, Cassette]], redaction: Redaction | None = None) -> None:
        self.redaction = redaction or Redaction()
        """The recording's body patterns: a request is redacted as the recorded ones were before it is matched."""
        calls = [(p, c) for p, c in cassettes if c.protocol is not None and c.request.body is not None]
        model_calls = [(p, c) for p, c in calls if c.response.cut is None]
        self.cut = [_entry(p, c, redaction=self.redaction) for p, c in calls if c.response.cut is not None]
        """Answers ``bench record`` cut (past its limit): never served, named when they would match."""
        self.answers = [_answered(p, c, self.redaction) for p, c in model_calls if c.response.status == 200]
        self.errors = [_entry(p, c, redaction=self.redaction) for p, c in model_calls if c.response.status >= 400]
        if not self.answers:
            cut = f" ({len(self.cut)} cut at record, never replayed)" if self.cut else ""
            raise ValueError(f"no recorded answer (a model call answered 200) among the cassettes{cut}")

    def match(self, protocol: str, body: dict[str, Any], stream: bool) -> list[Entry]:
        """The cassettes answering ``body`` equally well (module docstring), in recording order:
        several when the same request was recorded several times; or :class:`CassetteMiss`."""
        probe = _entry(Path("(request)"), _probe(protocol, body), redaction=self.redaction)
        best: list[Entry] = []
        best_rank: tuple[int, int] = (-1, -1)
        for entry in self.answers:
            if entry.frame != probe.frame or entry.turns != probe.turns[: len(entry.turns)]:
                continue
            if len(entry.turns) < len(probe.turns) and _moved_past(entry, probe):
                continue
            rank = (len(entry.turns), int(entry.cassette.stream == stream))
            if rank > best_rank:
                best, best_rank = [entry], rank
            elif rank == best_rank:
                best.append(entry)
        if not best:
            raise CassetteMiss(self._miss(protocol, probe))
        return best

    def answers_exactly(self, entry: Entry, protocol: str, body: dict[str, Any]) -> bool:
        """Whether the rule gives ``entry`` for ``body``: the request is the recording's own
        (its SDK's, perhaps a retry after it), not another SDK's asking the same task."""
        probe = _entry(Path("(request)"), _probe(protocol, body), redaction=self.redaction)
        if entry.frame != probe.frame or entry.turns != probe.turns[: len(entry.turns)]:
            return False
        return len(entry.turns) == len(probe.turns) or not _moved_past(entry, probe)

    def recorded_error(self, protocol: str, status: int) -> Entry | None:
        return next(
            (e for e in self.errors if e.cassette.protocol == protocol and e.cassette.response.status == status), None
        )

    def _miss(self, protocol: str, probe: Entry) -> str:
        turns = len(probe.turns)
        said = f"no cassette matches this {protocol} request ({turns} message{'s' * (turns != 1)})"
        cut = next((e for e in self.cut if e.frame == probe.frame and e.turns == probe.turns[: len(e.turns)]), None)
        if cut is not None and cut.cassette.response.cut is not None:
            return f"{said}; {cut.path} does, but {cut.cassette.response.cut.note}"
        same = [e for e in self.answers if e.cassette.protocol == protocol]
        if not same:
            return f"{said}; no {protocol} cassette was recorded"
        asked = json.loads(probe.frame)

        def closeness(entry: Entry) -> tuple[int, int, int]:
            recorded = json.loads(entry.frame)
            alike = sum(recorded.get(key) == asked.get(key) for key in ("model", "tools", "response_format"))
            return alike, _common(entry.turns, probe.turns), -abs(len(entry.turns) - turns)

        nearest = max(same, key=closeness)
        return f"{said}; nearest: {nearest.path}, which differs in {_difference(nearest, probe)}"


def _probe(protocol: str, body: dict[str, Any]) -> Cassette:
    from bench.cassettes.format import Provenance, RecordedRequest, RecordedResponse

    return Cassette(
        protocol=protocol,
        provenance=Provenance(source="request"),
        request=RecordedRequest(path="", body=body),
        response=RecordedResponse(status=0),
    )


def _common(first: tuple[str, ...], second: tuple[str, ...]) -> int:
    same = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        same += 1
    return same


def _difference(entry: Entry, probe: Entry) -> str:
    recorded, asked = json.loads(entry.frame), json.loads(probe.frame)
    for key in ("model", "tools", "response_format"):
        if recorded.get(key) != asked.get(key):
            where, was, now = _first_difference(recorded.get(key), asked.get(key), key)
            return f"{where} (recorded {_short(was)}, asked {_short(now)})"
    index = _common(entry.turns, probe.turns)
    if index == len(entry.turns):
        return f"message {index}: the request continues past the recorded answer (it carries that answer's tool call)"
    if index >= len(probe.turns):
        return f"message {index} (recorded {_short(entry.turns[index])}, asked none)"
    was, now = _around_difference(entry.turns[index], probe.turns[index])
    return f"message {index} (recorded {was}, asked {now})"


def _first_difference(recorded: Any, asked: Any, where: str) -> tuple[str, Any, Any]:
    """The first place two JSON values differ: its path and both values there."""
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            if recorded.get(key) != asked.get(key):
                return _first_difference(recorded.get(key), asked.get(key), f"{where}.{key}")
    if isinstance(recorded, list) and isinstance(asked, list) and len(recorded) == len(asked):
        for index, (was, now) in enumerate(zip(recorded, asked, strict=True)):
            if was != now:
                return _first_difference(was, now, f"{where}[{index}]")
    return where, recorded, asked


def _around_difference(recorded: str, asked: str, before: int = 30, after: int = 50) -> tuple[str, str]:
    """Both texts around their first differing character (where a long message changed)."""
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, asked, strict=False)) if a != b), min(len(recorded), len(asked))
    )
    start = max(0, at - before)
    lead = "..." if start else ""
    return lead + recorded[start : at + after] + "...", lead + asked[start : at + after] + "..."


def _short(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 3] + "..."
