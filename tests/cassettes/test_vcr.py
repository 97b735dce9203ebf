"""VCR.py cassettes from pydantic-ai's public test suite (tests/fixtures/cassettes/pydantic-ai),
read as they are: provenance kept, credentials dropped, every recorded answer served through
the official clients' strict parsers with faults on top, and the installed pydantic-ai replayed
on its own recordings, recovering from faults injected into the real answers."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bench.cassettes import Cassette, CassetteError, Replay, load_cassettes
from bench.cassettes.extract import recorded
from bench.provider import LocalProvider
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Endpoint
from tests.paths import FIXTURES
from tests.protocol_clients import anthropic_client, openai_client

PYDANTIC_AI = FIXTURES / "cassettes" / "pydantic-ai"
LENGTH_STOPS = {"openai-chat": "length", "openai-responses": "incomplete", "anthropic-messages": "max_tokens"}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def imported() -> list[tuple[Path, Cassette]]:
    return load_cassettes(PYDANTIC_AI)


def test_every_interaction_is_read_with_its_provenance() -> None:
    cassettes = imported()
    assert len(cassettes) == 14  # seven files of two interactions
    for path, cassette in cassettes:
        assert cassette.provenance.source.startswith("github:pydantic/pydantic-ai@"), path
        assert cassette.provenance.source.endswith(path.name.removeprefix("test_openai_responses_")), path
        assert cassette.provenance.license == "MIT"
        assert cassette.provenance.upstream in ("https://api.openai.com", "https://api.anthropic.com")
    assert sum(cassette.stream for _, cassette in cassettes) == 2


def test_recorded_credentials_are_dropped() -> None:
    assert "cookie:" in (PYDANTIC_AI / "test_openai_native_output.yaml").read_text()  # the file keeps it
    for _, cassette in imported():
        assert not {"cookie", "authorization", "x-api-key"} & set(cassette.request.headers)
        assert "set-cookie" not in cassette.response.headers


def _send(cassette: Cassette, endpoint: Endpoint, strict: bool = True) -> tuple[str | None, str]:
    """The cassette's own request through the official client, parsed (strictly by default):
    (stop, what it parsed)."""
    body = dict(cassette.request.body or {})
    if cassette.protocol == "anthropic-messages":
        with anthropic_client(endpoint, strict) as client_a, warnings.catch_warnings():
            # the recording's model has since been deprecated; the client says so
            warnings.filterwarnings("ignore", "The model .* is deprecated", DeprecationWarning)
            message = client_a.messages.create(**body)
            return message.stop_reason, json.dumps([block.model_dump() for block in message.content])
    with openai_client(endpoint, strict) as client:
        if cassette.protocol == "openai-responses":
            response = client.responses.create(**body)
            return response.status, response.model_dump_json()
        if body.get("stream"):
            chunks = list(client.chat.completions.create(**body))
            stops = [choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason]
            return stops[-1], "".join(c.model_dump_json() for c in chunks)
        completion = client.chat.completions.create(**body)
        return completion.choices[0].finish_reason, completion.model_dump_json()


ANSWERS = [(p, c) for p, c in imported() if c.response.status == 200]


@pytest.mark.parametrize(("path", "cassette"), ANSWERS, ids=[f"{p.stem}-{i}" for i, (p, _) in enumerate(ANSWERS)])
def test_each_recorded_answer_replays_strictly_and_truncates(
    server: LocalProvider, path: Path, cassette: Cassette
) -> None:
    replay = Replay.of(imported())
    with server.open_run(get_task("person"), Script.parse(["valid"]), answers=replay) as run:
        # Served as recorded, parsed as the SDKs parse (not strictly): the Responses recording
        # predates usage.input_tokens_details.cache_write_tokens, which today's client requires
        # under strict validation. The faulted answer below is the provider's own spelling: strict.
        _send(cassette, run.endpoint, strict=False)
    assert replay.misses == []
    said = recorded(cassette)
    if not any(item.tool_name is None and item.text for item in said.items):
        return  # a turn that only calls the agent's tool has no answer to cut (asking is a miss)
    replay = Replay.of(imported())
    with server.open_run(get_task("person"), Script.parse(["truncated"]), answers=replay) as run:
        stop, _ = _send(cassette, run.endpoint)
    assert replay.misses == [] and stop == LENGTH_STOPS[str(cassette.protocol)]


class CityLocation(BaseModel):
    """A city and its country."""

    city: str
    country: str


def _agent(model: Any, output: str) -> Any:
    """A pydantic-ai agent as pydantic-ai's own tests record it: one tool, then the answer."""
    from pydantic_ai import Agent, NativeOutput, PromptedOutput

    output_type: Any = {"native": NativeOutput(CityLocation), "prompted": PromptedOutput(CityLocation)}
    agent = Agent(model, output_type=output_type.get(output, CityLocation))

    @agent.tool_plain
    async def get_user_country() -> str:
        return "Mexico"

    return agent


def _agent_run(endpoint: Endpoint, output: str, responses: bool = False) -> Any:
    """The agent's answer to pydantic-ai's recorded prompt, its client closed afterwards."""
    import openai
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def run() -> Any:
        async with openai.AsyncOpenAI(base_url=endpoint.openai_base_url, api_key="none", max_retries=0) as client:
            provider = OpenAIProvider(openai_client=client)
            model = (OpenAIResponsesModel if responses else OpenAIChatModel)("gpt-4o", provider=provider)
            return (await _agent(model, output).run("What is the largest city in the user country?")).output

    return asyncio.run(run())


MEXICO_CITY = CityLocation(city="Mexico City", country="Mexico")


@pytest.mark.parametrize(
    ("script", "served", "expected"),
    [
        (["valid", "valid"], 2, MEXICO_CITY),
        (["valid", "malformed", "valid"], 3, MEXICO_CITY),  # a validation retry, answered from the cassette
        (["valid", "wrong"], 2, CityLocation(city="ytiC ocixeM", country="Mexico")),  # one field perturbed
        (["valid", "truncated"], 2, "OutputTokenLimitExceeded"),  # a length stop is not retried
    ],
    ids=["valid", "malformed-then-valid", "wrong", "truncated"],
)
def test_pydantic_ai_replays_its_own_recordings_with_faults(
    server: LocalProvider, script: list[str], served: int, expected: Any
) -> None:
    """NativeOutput's recording: the installed release sends the requests it recorded, so each
    fault lands on the recorded answer and the agent's retry is answered from the cassette."""
    replay = Replay.of(imported())
    with server.open_run(get_task("person"), Script.parse(script), answers=replay) as run:
        try:
            answer: Any = _agent_run(run.endpoint, "native")
        except Exception as error:  # the SDK's own exception is what it does with the fault
            answer = type(error).__name__
        labels = [attempt.behaviour for attempt in run.attempts]
    assert replay.misses == []
    assert labels == [Script.parse([step]).behaviour_for(0).label for step in script][:served]
    assert answer == expected


@pytest.mark.parametrize(
    ("output", "responses", "said"),
    [
        ("tool", False, "test_openai_tool_output.yaml, which differs in tools[1].function.description (recorded "
         "The final response which ends this conversation, asked A city and its country.)"),
        ("prompted", False, "test_openai_prompted_output.yaml, which differs in message 0"),
        ("native", True, "test_openai_responses_native_output.yaml, which differs in response_format.description"),
    ],
    ids=["output-tool-description", "prompted-instructions", "responses-schema-description"],
)  # fmt: skip
def test_a_recording_by_another_release_is_a_miss_naming_what_changed(
    server: LocalProvider, output: str, responses: bool, said: str
) -> None:
    replay = Replay.of(imported())
    run = server.open_run(get_task("person"), Script.parse(["valid"]), answers=replay)
    with run, pytest.raises(Exception, match="no cassette matches"):
        _agent_run(run.endpoint, output, responses=responses)
    [line] = replay.misses
    assert said in line and "\n" not in line


def test_a_broken_vcr_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("interactions:\n- request: {uri: 3}\n")
    with pytest.raises(CassetteError, match=r"broken\.yaml: interactions\[0\]: cannot read"):
        load_cassettes(tmp_path)


def test_a_gzipped_vcr_file_reads_as_the_plain_one(tmp_path: Path) -> None:
    """LangChain keeps its VCR cassettes gzipped (``*.yaml.gz``): the same interactions."""
    import gzip

    plain = PYDANTIC_AI / "test_run_stream_sync_streams_real_model.yaml"
    (tmp_path / "copy.yaml.gz").write_bytes(gzip.compress(plain.read_bytes()))
    zipped = [c.model_dump(exclude={"provenance"}) for _, c in load_cassettes(tmp_path)]
    assert zipped == [c.model_dump(exclude={"provenance"}) for p, c in imported() if p == plain]
