"""The cassette file: its committed JSON Schema is current, and a file that does not fit is one
line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cassettes import Cassette, CassetteError, load_cassettes
from tests.paths import REPO

SCHEMA = REPO / "docs" / "cassette.schema.json"
GOOD = {
    "cassette_version": 1,
    "protocol": "openai-chat",
    "provenance": {"source": "bench record"},
    "request": {"path": "/v1/chat/completions", "body": {"model": "m", "messages": []}},
    "response": {"status": 200, "body": "{}"},
}


def test_the_committed_schema_is_current() -> None:
    assert json.loads(SCHEMA.read_text()) == Cassette.model_json_schema(), "regenerate docs/cassette.schema.json"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"cassette_version": 2}, "field cassette_version: Input should be 1"),
        ({"reponse": {}}, "field reponse: Extra inputs are not permitted"),
        ({"response": {"status": 200, "events": [{"data": "x"}]}}, "field response.events.0.at_ms: Field required"),
    ],
)
def test_a_cassette_that_does_not_fit_is_one_line(tmp_path: Path, change: dict[str, object], said: str) -> None:
    (tmp_path / "0000-openai-chat-x.json").write_text(json.dumps(GOOD | change))
    with pytest.raises(CassetteError) as raised:
        load_cassettes(tmp_path)
    assert str(raised.value) == f"{tmp_path / '0000-openai-chat-x.json'}: {said}"


def test_a_good_cassette_loads(tmp_path: Path) -> None:
    (tmp_path / "0000-openai-chat-x.json").write_text(json.dumps(GOOD))
    [(_, cassette)] = load_cassettes(tmp_path)
    assert cassette.response.chunks() == [b"{}"] and not cassette.stream
