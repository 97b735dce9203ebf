"""``bench record``'s proxy in front of a loopback upstream, then replay: byte-equal answers
for JSON and SSE in all three protocols, through the official clients; no credential written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.cassettes import RecordingProxy, Replay, load_cassettes
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from bench.provider.server import serve_in_thread
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Endpoint
from tests.cassette_recorder import COMBOS, PROMPT_PHRASE, SECRET, raw_reply
from tests.protocol_clients import call


def test_one_cassette_per_exchange(recorded: tuple[Path, dict[Any, bytes | str]]) -> None:
    folder, _ = recorded
    cassettes = [c for _, c in load_cassettes(folder)]
    assert len(cassettes) == len(COMBOS)
    assert {(c.protocol, c.stream) for c in cassettes} == {(str(p), s) for p, _, s in COMBOS}
    streamed = next(c for c in cassettes if c.stream)
    assert streamed.response.events and all(e.data.endswith("\n\n") for e in streamed.response.events)
    assert [e.at_ms for e in streamed.response.events] == sorted(e.at_ms for e in streamed.response.events)


def test_no_cassette_holds_a_credential(recorded: tuple[Path, dict[Any, bytes | str]]) -> None:
    folder, _ = recorded
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8").lower()
        assert SECRET.lower() not in text, path
        assert '"authorization"' not in text and '"x-api-key"' not in text, path
    request = json.loads(next(folder.iterdir()).read_text())["request"]
    assert "user-agent" in request["headers"]  # the other headers are kept


def test_extra_redaction_blanks_a_pattern(recorded: tuple[Path, dict[Any, bytes | str]]) -> None:
    folder, _ = recorded
    texts = [path.read_text(encoding="utf-8") for path in folder.iterdir()]
    assert all("Extract the person" not in text for text in texts)
    assert all("[REDACTED]" in text for text in texts)


@pytest.fixture(scope="module")
def replayed(recorded: tuple[Path, dict[Any, bytes | str]]) -> Iterator[Endpoint]:
    """A provider whose default run answers from the recorded folder, no key anywhere."""
    folder, _ = recorded
    with LocalProvider() as replay:
        replay.open_run(
            get_task("person"),
            Script.parse(["valid"]),
            run_id="default",
            answers=Replay.from_folder(folder, PROMPT_PHRASE),
        )
        yield Endpoint(root=replay.base_url, api_key="no-key-needed")


@pytest.mark.parametrize(("protocol", "mode", "stream"), COMBOS, ids=lambda v: str(getattr(v, "value", v)))
def test_replay_is_byte_equal_and_parses(
    recorded: tuple[Path, dict[Any, bytes | str]],
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

    served = serve_in_thread(upstream, "127.0.0.1", 0, "test-upstream")
    try:
        with RecordingProxy(f"http://127.0.0.1:{served.port}", tmp_path) as proxy:
            endpoint = Endpoint(root=proxy.base_url, api_key=SECRET)
            with pytest.raises(Exception, match="bad key"):
                call(Protocol.ANTHROPIC, Mode.NATIVE, False, endpoint)
    finally:
        served.stop()
    auth = received[0].get("x-api-key", "") + received[0].get("authorization", "")
    assert SECRET in auth, sorted(received[0])
    [written] = list(tmp_path.iterdir())
    assert SECRET not in written.read_text() and json.loads(written.read_text())["response"]["status"] == 401
