"""``bench record``'s proxy in front of a loopback upstream, then replay: byte-equal answers
for JSON and SSE in all three protocols, through the official clients; no credential written."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.cassettes import RecordingProxy, Redaction, Replay, load_cassettes
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from bench.provider.server import serve_in_thread
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Endpoint
from tests.protocol_clients import (
    anthropic_client,
    anthropic_kwargs,
    call,
    chat_kwargs,
    openai_client,
    responses_kwargs,
)

SECRET = "sk-live-THIS-MUST-NEVER-BE-WRITTEN-0123456789"
EMAIL = Redaction(patterns=(r"Extract the\s+person",))
"""Blanks a phrase of the prompt (a pattern is applied per SSE frame, so a phrase the upstream
streams across frames would survive in the frames: docs/record-replay.md)."""
COMBOS = list(itertools.product(Protocol, Mode, (False, True)))


def raw_reply(protocol: Protocol, mode: Mode, stream: bool, endpoint: Endpoint) -> bytes:
    """The bytes of one answer as the official client received them."""
    extra: dict[str, Any] = {"stream": True} if stream else {}
    if protocol is Protocol.ANTHROPIC:
        with anthropic_client(endpoint) as client_a:
            raw = client_a.messages.with_raw_response.create(**anthropic_kwargs(mode), **extra)
            return raw.http_response.read()
    with openai_client(endpoint) as client:
        if protocol is Protocol.CHAT:
            if stream:
                extra["stream_options"] = {"include_usage": True}
            raw = client.chat.completions.with_raw_response.create(**chat_kwargs(mode), **extra)
        else:
            raw = client.responses.with_raw_response.create(**responses_kwargs(mode), **extra)
        return raw.http_response.read()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[tuple[Any, ...], bytes]]]:
    """Every protocol x mode x stream recorded once through the proxy, with the bytes seen."""
    folder = tmp_path_factory.mktemp("cassettes")
    seen: dict[tuple[Any, ...], bytes] = {}
    with LocalProvider() as upstream:
        upstream.open_script("person", ["valid"], run_id="default")
        with RecordingProxy(upstream.base_url, folder, EMAIL) as proxy:
            endpoint = Endpoint(root=proxy.base_url, api_key=SECRET)
            for combo in COMBOS:
                seen[combo] = raw_reply(*combo, endpoint)
    yield folder, seen


def test_one_cassette_per_exchange(recorded: tuple[Path, dict[tuple[Any, ...], bytes]]) -> None:
    folder, _ = recorded
    cassettes = [c for _, c in load_cassettes(folder)]
    assert len(cassettes) == len(COMBOS)
    assert {(c.protocol, c.stream) for c in cassettes} == {(str(p), s) for p, _, s in COMBOS}
    streamed = next(c for c in cassettes if c.stream)
    assert streamed.response.events and all(e.data.endswith("\n\n") for e in streamed.response.events)
    assert [e.at_ms for e in streamed.response.events] == sorted(e.at_ms for e in streamed.response.events)


def test_no_cassette_holds_a_credential(recorded: tuple[Path, dict[tuple[Any, ...], bytes]]) -> None:
    folder, _ = recorded
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8").lower()
        assert SECRET.lower() not in text, path
        assert '"authorization"' not in text and '"x-api-key"' not in text, path
    request = json.loads(next(folder.iterdir()).read_text())["request"]
    assert "user-agent" in request["headers"]  # the other headers are kept


def test_extra_redaction_blanks_a_pattern(recorded: tuple[Path, dict[tuple[Any, ...], bytes]]) -> None:
    folder, _ = recorded
    texts = [path.read_text(encoding="utf-8") for path in folder.iterdir()]
    assert all("Extract the person" not in text for text in texts)
    assert all("[REDACTED]" in text for text in texts)


@pytest.fixture(scope="module")
def replayed(recorded: tuple[Path, dict[tuple[Any, ...], bytes]]) -> Iterator[Endpoint]:
    """A provider whose default run answers from the recorded folder, no key anywhere."""
    folder, _ = recorded
    with LocalProvider() as replay:
        replay.open_run(
            get_task("person"), Script.parse(["valid"]), run_id="default", answers=Replay.from_folder(folder, EMAIL)
        )
        yield Endpoint(root=replay.base_url, api_key="no-key-needed")


@pytest.mark.parametrize(("protocol", "mode", "stream"), COMBOS, ids=lambda v: str(getattr(v, "value", v)))
def test_replay_is_byte_equal_and_parses(
    recorded: tuple[Path, dict[tuple[Any, ...], bytes]],
    replayed: Endpoint,
    protocol: Protocol,
    mode: Mode,
    stream: bool,
) -> None:
    _, seen = recorded
    assert raw_reply(protocol, mode, stream, replayed) == seen[(protocol, mode, stream)]
    summary = call(protocol, mode, stream, replayed)  # the strict parsers accept it
    assert summary.input_tokens and summary.output_tokens


def test_the_proxy_forwards_the_clients_own_auth(tmp_path: Path) -> None:
    """The upstream gets the client's key; the cassette does not."""
    received: list[dict[str, str]] = []

    async def upstream(scope: Any, receive: Any, send: Any) -> None:
        received.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await receive()
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"error": {"message": "bad key", "type": "auth"}}'})

    server, thread, port = serve_in_thread(upstream, "127.0.0.1", 0, "test-upstream")
    try:
        with RecordingProxy(f"http://127.0.0.1:{port}", tmp_path) as proxy:
            endpoint = Endpoint(root=proxy.base_url, api_key=SECRET)
            with pytest.raises(Exception, match="bad key"):
                call(Protocol.ANTHROPIC, Mode.NATIVE, False, endpoint)
    finally:
        server.should_exit = True
        thread.join(10)
    auth = received[0].get("x-api-key", "") + received[0].get("authorization", "")
    assert SECRET in auth, sorted(received[0])
    [written] = list(tmp_path.iterdir())
    assert SECRET not in written.read_text() and json.loads(written.read_text())["response"]["status"] == 401
