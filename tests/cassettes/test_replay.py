"""Replay with faults on top of recorded answers: each fault, each protocol, JSON and SSE,
through the official clients' strict parsers; recorded refusals and errors; the miss line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from bench.cassettes import Replay
from bench.cassettes.replay import MISS, Unbuildable, faulted_text, perturbed
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider, RunHandle
from bench.scenarios.behaviours import Script, Wrong
from bench.scenarios.tasks import get_task
from tests.cassette_recorder import COMBOS, PROMPT_PHRASE, REFUSAL
from tests.protocol_clients import Summary, call, openai_client

LENGTH_STOPS = {Protocol.CHAT: "length", Protocol.RESPONSES: "incomplete", Protocol.ANTHROPIC: "max_tokens"}
FAULTS: list[Any] = [
    "truncated",
    {"truncated": 0.3},
    {"malformed": "fenced_prose"},
    {"malformed": "unterminated"},
    {"malformed": "trailing_comma"},
    "wrong",
    {"schema_violation": "missing_field"},
    {"schema_violation": "extra_key"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def replayed(server: LocalProvider, folder: Path, step: Any) -> RunHandle:
    replay = Replay.from_folder(folder, PROMPT_PHRASE)
    return server.open_run(get_task("person"), Script.parse([step]), answers=replay)


def summary_of(server: LocalProvider, folder: Path, step: Any, combo: tuple[Protocol, Mode, bool]) -> Summary:
    with replayed(server, folder, step) as run:
        return call(*combo, run.endpoint)


def payload(summary: Summary, mode: Mode) -> Any:
    return summary.tool_arguments if mode is Mode.TOOL else summary.text


def _leaves(value: Any, where: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{where}.{key}").items()}
    return {where: value}


@pytest.mark.parametrize("fault", FAULTS, ids=json.dumps)
@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "-".join(str(getattr(v, "value", v)) for v in c))
def test_every_fault_on_a_recorded_answer_parses_strictly(
    server: LocalProvider, recorded: tuple[Path, Any], combo: tuple[Protocol, Mode, bool], fault: Any
) -> None:
    folder, _ = recorded
    protocol, mode, _ = combo
    real = payload(summary_of(server, folder, "valid", combo), mode)
    got = summary_of(server, folder, fault, combo)  # raises if a strict parser refuses it
    kind = fault if isinstance(fault, str) else next(iter(fault))
    if kind == "truncated":
        assert got.stop == LENGTH_STOPS[protocol]
        cut = payload(got, mode)
        if isinstance(cut, str) and isinstance(real, str):
            assert real.startswith(cut) and len(cut) < len(real)
        return
    assert got.stop != LENGTH_STOPS[protocol]
    faulted = payload(got, mode)
    if kind == "malformed" and (protocol, mode) == (Protocol.ANTHROPIC, Mode.TOOL):
        # tool input is parsed partially (server-side non-streamed; by the summary, streamed):
        # anthropic_messages.tool_input
        assert isinstance(faulted, dict)
        return
    assert faulted != real
    if kind == "wrong":
        before, after = _leaves(_json(real)), _leaves(_json(faulted))
        assert before.keys() == after.keys()
        assert sum(before[key] != after[key] for key in before) == 1
    if kind == "malformed" and mode is not Mode.TOOL:
        with pytest.raises(ValueError):
            json.loads(faulted)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


@pytest.mark.parametrize("protocol", list(Protocol))
@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_is_worded_as_the_recorded_one(
    server: LocalProvider, with_refusals_and_errors: Path, protocol: Protocol, stream: bool
) -> None:
    got = summary_of(server, with_refusals_and_errors, "refusal", (protocol, Mode.NATIVE, stream))
    if protocol is Protocol.ANTHROPIC:
        assert got.stop == "refusal"  # Anthropic's refusal carries no text
    else:
        assert got.refusal == REFUSAL


@pytest.mark.parametrize("protocol", list(Protocol))
def test_a_recorded_error_is_served_as_recorded(
    server: LocalProvider, with_refusals_and_errors: Path, protocol: Protocol
) -> None:
    from bench.cassettes import load_cassettes

    recorded_429 = next(
        c for _, c in load_cassettes(with_refusals_and_errors) if c.protocol == protocol and c.response.status == 429
    )
    errors = (openai.RateLimitError, anthropic.RateLimitError)
    with replayed(server, with_refusals_and_errors, {"http_error": 429}) as run, pytest.raises(errors) as raised:
        call(protocol, Mode.NATIVE, False, run.endpoint)
    assert raised.value.response.text == recorded_429.response.body


def test_no_match_is_one_line_naming_the_nearest_cassette(server: LocalProvider, recorded: tuple[Path, Any]) -> None:
    folder, _ = recorded
    replay = Replay.from_folder(folder, PROMPT_PHRASE)
    with server.open_run(get_task("person"), Script.parse(["valid"]), answers=replay) as run:
        with openai_client(run.endpoint) as client, pytest.raises(openai.BadRequestError) as raised:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Who is Grace?"}])
        ledger = run.attempts
    [line] = replay.misses
    assert "\n" not in line and "nearest: " in line and str(folder) in line and "differs in message 0" in line
    assert line in str(raised.value)
    assert ledger[0].behaviour == MISS


def test_a_fault_that_cannot_be_built_says_so() -> None:
    from bench.provider.detect import detect

    shape = detect(Protocol.CHAT, {"model": "m", "messages": [{"role": "user", "content": "x"}]}, frozenset())
    with pytest.raises(Unbuildable, match="not a JSON object"):
        faulted_text(Wrong(), "Ada is 36.", shape, Path("c.json"))


def test_a_perturbed_answer_keeps_its_types() -> None:
    assert perturbed({"name": "Ada", "age": 36}) == {"name": "Ada", "age": 37}
    assert perturbed({"ok": True, "name": "Ada"}) == {"ok": False, "name": "Ada"}
    assert perturbed({"name": "Ada"}) == {"name": "adA"}


def test_a_perturbed_answer_is_wrong_for_the_tasks_check() -> None:
    """The change made is one the task's own check rejects (an answer the check still accepts
    would be measured as right)."""
    person = get_task("person")
    answer = dict(person.reference)
    changed = perturbed(answer, person)
    assert person.judge(changed) == (True, False)
    assert sum(changed[key] != answer[key] for key in answer) == 1


@pytest.mark.parametrize("protocol", list(Protocol))
@pytest.mark.parametrize("recorded_stream", [False, True])
def test_a_recording_answers_the_other_stream_shape(
    server: LocalProvider, recorded: tuple[Path, Any], protocol: Protocol, recorded_stream: bool
) -> None:
    """Only JSON (or only SSE) recorded: a request of the other kind gets the same answer in its own shape."""
    from bench.cassettes import load_cassettes

    folder, _ = recorded
    only = [(p, c) for p, c in load_cassettes(folder) if c.stream == recorded_stream]
    combo = (protocol, Mode.NATIVE, not recorded_stream)
    with server.open_run(get_task("person"), Script.parse(["valid"]), answers=Replay.of(only, PROMPT_PHRASE)) as run:
        other = call(*combo, run.endpoint)
    same = summary_of(server, folder, "valid", combo)
    assert (other.text, other.stop, other.input_tokens) == (same.text, same.stop, same.input_tokens)


def test_several_recordings_of_one_request_are_drawn_with_the_cells_seed(server: LocalProvider, tmp_path: Path) -> None:
    """The same request recorded with two different real answers: each seed draws one, the
    same seed always the same one, and the seeds between them serve both."""
    from tests.cassette_recorder import record

    grace = {"name": "Grace Hopper", "age": 85, "email": "grace@example.org"}
    combo = (Protocol.CHAT, Mode.NATIVE, False)
    record(tmp_path, ["valid", {"valid": grace}], [combo, combo])
    library = Replay.from_folder(tmp_path, PROMPT_PHRASE)

    def answer(seed: int) -> Any:
        run = server.open_run(get_task("person"), Script.parse(["valid"]), answers=library.fresh(seed))
        with run:
            return json.loads(call(*combo, run.endpoint).text or "")

    drawn = [answer(seed)["name"] for seed in range(8)]
    assert set(drawn) == {"Ada Lovelace", "Grace Hopper"}
    assert drawn == [answer(seed)["name"] for seed in range(8)]


def test_a_violation_the_type_still_accepts_is_a_loud_miss_not_a_valid_answer() -> None:
    """out_of_range on a number with no bound, missing_field on a field with a default: the type
    accepts the result, so no violation can be built on that recorded answer."""
    from dataclasses import replace as replaced

    from pydantic import BaseModel

    from bench.cassettes.replay import violated

    class Loose(BaseModel):
        name: str
        age: int
        email: str = ""

    person = get_task("person")
    recorded_answer = {"name": "Ada", "age": 36, "email": "ada@example.com"}
    assert violated(recorded_answer, "out_of_range", Path("c.json"), person)["age"] < 0
    loose = replaced(person, output_model=Loose)
    for variant in ("out_of_range", "missing_field"):
        with pytest.raises(Unbuildable, match=f"schema_violation:{variant} of the recorded answer still fits"):
            violated(recorded_answer, variant, Path("c.json"), loose)
