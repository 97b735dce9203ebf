"""Tasks drawn from a cassette folder (bench.cassettes.tasks): each distinct recorded structured
answer of pydantic-ai's public recordings is a task with its prompt, type, reference and
provenance; a request of such a task is answered from its recording, re-rendered for whatever
protocol, mode, output tool and stream flag asks, the faults on top, through the official
clients' strict parsers; and ``bench run --tasks cassettes`` replays an SDK other than the
recording one with no harness error, where the built-in tasks miss naming the nearest cassette."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from bench.cassettes import Library, Replay, load_cassettes
from bench.cassettes.extract import recorded
from bench.cassettes.tasks import Drawn, DrawnTask, UnsupportedSchema, draw_tasks, model_of
from bench.cli import app
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from bench.results.store import latest_run, read_table
from bench.scenarios.behaviours import Script
from tests.cassette_recorder import COMBOS
from tests.paths import FIXTURES
from tests.protocol_clients import Summary, call

VENDORED = FIXTURES / "cassettes" / "pydantic-ai"
LENGTH_STOPS = {Protocol.CHAT: "length", Protocol.RESPONSES: "incomplete", Protocol.ANTHROPIC: "max_tokens"}
CITY = {"city": "Mexico City", "country": "Mexico"}
ROTATION: list[Any] = ["truncated", "wrong", {"schema_violation": "missing_field"}, {"malformed": "trailing_comma"},
                       "refusal"]  # fmt: skip


@pytest.fixture(scope="module")
def library() -> Library:
    return Library(load_cassettes(VENDORED))


@pytest.fixture(scope="module")
def drawn(library: Library) -> Drawn:
    return draw_tasks(library)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def task_named(drawn: Drawn, name: str) -> DrawnTask:
    return next(task for task in drawn.tasks if task.name == name)


def test_each_distinct_recorded_answer_is_a_task_with_its_provenance(drawn: Drawn) -> None:
    assert [task.name for task in drawn.tasks] == ["cassette:Answer", "cassette:CityLocation", "cassette:GetCapital"]
    assert drawn.skipped == ()
    city = task_named(drawn, "cassette:CityLocation")
    assert city.prompt == "What is the largest city in the user country?"
    assert dict(city.reference) == CITY
    # the same answer to the same prompt, recorded five times (tool, native, prompted; three protocols)
    assert [r.where for r in city.recordings] == [
        "test_anthropic_tool_output.yaml#1", "test_openai_native_output.yaml#1", "test_openai_prompted_output.yaml#1",
        "test_openai_responses_native_output.yaml#1", "test_openai_tool_output.yaml#1",
    ]  # fmt: skip
    assert city.provenance == (
        "github:pydantic/pydantic-ai@4fda38988f2939fa6ea9cdefcf120693e10ef491:"
        "tests/models/cassettes/test_anthropic/test_anthropic_tool_output.yaml"
    )
    assert city.judge(CITY) == (True, True) and city.judge(city.wrong) == (True, False)
    assert city.judge({"city": "Mexico City"}) == (False, False)
    # the schema is the called output tool's (Anthropic's input_schema allows extra keys)
    assert city.schema["required"] == ["city", "country"] and "additionalProperties" not in city.schema
    assert set(city.not_measured) == {
        "schema_violation:wrong_type", "schema_violation:out_of_range", "schema_violation:extra_key"
    }  # fmt: skip
    assert "the recorded answer has no number" in city.not_measured["schema_violation:out_of_range"]
    # a tool call's arguments (the agent's own tool) is a structured answer too, its schema the tool's
    capital = task_named(drawn, "cassette:GetCapital")
    assert dict(capital.reference) == {"country": "UK"} and capital.schema["additionalProperties"] is False
    # a prompted answer has no schema but its prose: inferred from the answer, no other key allowed
    prompted = task_named(drawn, "cassette:Answer")
    assert prompted.schema["additionalProperties"] is False
    assert "schema_violation:extra_key" not in prompted.not_measured


def test_a_recorded_schema_becomes_a_type_that_accepts_what_it_accepts() -> None:
    schema = {
        "type": "object", "additionalProperties": False, "required": ["label", "items"],
        "properties": {
            "label": {"enum": ["bug", "billing"]}, "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    }  # fmt: skip
    model = model_of(schema, "Triage")
    assert model.model_validate({"label": "bug", "items": [{"n": 1}], "confidence": 0.5}).label == "bug"
    for bad in ({"label": "x", "items": []}, {"label": "bug", "items": [], "confidence": 2}, {"label": "bug"},
                {"label": "bug", "items": [], "extra": 1}, {"label": "bug", "items": [{"n": "one"}]}):  # fmt: skip
        with pytest.raises(ValidationError):
            model.model_validate(bad)
    with pytest.raises(UnsupportedSchema, match="keyword 'oneOf' is not modelled"):
        model_of({"type": "object", "properties": {"a": {"type": "string", "oneOf": []}}}, "Odd")


def _payload(summary: Summary, mode: Mode) -> Any:
    return summary.tool_arguments if mode is Mode.TOOL else summary.text


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "-".join(str(getattr(v, "value", v)) for v in c))
def test_a_drawn_answer_is_served_in_any_protocol_mode_and_stream_faults_on_top(
    server: LocalProvider, library: Library, drawn: Drawn, combo: tuple[Protocol, Mode, bool]
) -> None:
    """The official client's own request (another tool name, schema and prompt than recorded)
    of the CityLocation task: the recorded payload and tokens, or the fault on it, each parsed
    strictly; never a miss."""
    protocol, mode, _ = combo
    city = task_named(drawn, "cassette:CityLocation")
    said = [recorded(r.entry.cassette) for r in city.recordings]
    texts = {s.items[r.item].text for s, r in zip(said, city.recordings, strict=True)}

    def served(step: Any, seed: int = 0) -> Summary:
        replay = Replay(library, seed)
        with server.open_run(city, Script.parse([step]), answers=replay) as run:
            summary = call(*combo, run.endpoint)  # raises if a strict parser refuses the reply
        assert replay.misses == []
        return summary

    valid = served("valid", seed=len(str(combo)))
    got = _payload(valid, mode)
    assert got == CITY if mode is Mode.TOOL else got in texts  # a recording's own text
    assert valid.output_tokens in {s.output_tokens for s in said}  # the recorded turn's own tokens
    assert valid.input_tokens in {s.input_tokens for s in said}
    # two faults per combo besides valid, each fault in each protocol and most modes; the faults
    # themselves are the replay's own (tests/cassettes/test_replay.py walks them all)
    at = COMBOS.index(combo)
    for fault in (ROTATION[at % len(ROTATION)], ROTATION[(at + 2) % len(ROTATION)]):
        got = served(fault)
        faulted = _payload(got, mode)
        if fault == "truncated":
            assert got.stop == LENGTH_STOPS[protocol]
        elif fault == "refusal":
            assert got.refusal or got.stop == "refusal"
        elif fault == "wrong":
            wrong = faulted if isinstance(faulted, dict) else json.loads(faulted)
            assert wrong.keys() == CITY.keys() and sum(wrong[k] != CITY[k] for k in CITY) == 1
        elif "schema_violation" in fault:
            assert (faulted if isinstance(faulted, dict) else json.loads(faulted)) == {"city": "Mexico City"}
        elif (protocol, mode) == (Protocol.ANTHROPIC, Mode.TOOL):  # tool input is parsed partially there
            assert isinstance(faulted, dict)
        else:
            assert faulted.endswith(",}")


def test_the_recording_sdks_own_request_gets_the_recorded_reply_byte_for_byte(
    server: LocalProvider, library: Library, drawn: Drawn
) -> None:
    """Exact-request matching stays the rule for the recording's own request: verbatim."""
    capital = task_named(drawn, "cassette:GetCapital")
    [recording] = capital.recordings
    cassette = recording.entry.cassette
    with server.open_run(capital, Script.parse(["valid"]), answers=Replay(library)) as run:
        reply = httpx.post(run.endpoint.openai_base_url + "/chat/completions", json=cassette.request.body)
    assert reply.content == b"".join(cassette.response.chunks())


def _run(out: Path, *extra: str) -> tuple[int, dict[str, str]]:
    cell = ["--sdk", "pydantic-ai", "--mode", "native", "--protocol", "openai-chat", "--variant", "default"]
    args = ["run", *cell, "--cassettes", str(VENDORED), "--out", str(out), "--no-progress", *extra]
    result = CliRunner().invoke(app, args)
    runs = read_table(latest_run(out), "runs").to_pandas().fillna({"exception_message": ""})
    return result.exit_code, {
        f"{row.scenario}/{row.stream}": f"{row.outcome} {row.exception_message}".strip() for row in runs.itertuples()
    }


@pytest.mark.slow  # two bench runs of pydantic-ai cells
def test_built_in_tasks_miss_the_public_recordings_and_drawn_tasks_replay_them(tmp_path: Path) -> None:
    code, missed = _run(tmp_path / "builtin", "--scenario", "valid")
    assert code == 3 and missed
    assert all(o.startswith("harness_error") and "nearest: " in o and VENDORED.name in o for o in missed.values())
    code, replayed = _run(tmp_path / "drawn", "--scenario", "valid", "--scenario", "malformed_then_valid",
                          "--tasks", "cassettes")  # fmt: skip
    assert code == 0, replayed
    assert replayed == {"valid/False": "ok", "malformed_then_valid/False": "recovered"}
