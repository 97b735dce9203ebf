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


def test_a_gzip_bomb_is_refused_in_one_line_within_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small gzipped VCR file inflating past the file limit (issue 42 item 2) is refused by
    ``bench serve --cassettes`` in one line naming it and the limit, exit 2, without inflating it
    whole: the peak of what Python allocated stays near the (here lowered) limit."""
    import gzip
    import tracemalloc

    from typer.testing import CliRunner

    from bench.cassettes import format as cassette_format
    from bench.cli import app

    limit = 4 * 2**20
    monkeypatch.setattr(cassette_format, "MAX_FILE_BYTES", limit)
    monkeypatch.setattr("bench.cassettes.folder.MAX_FILE_BYTES", limit)
    bomb = tmp_path / "bomb.yaml.gz"
    with gzip.open(bomb, "wb") as stream:  # 256 MiB inflated, written a MiB at a time
        for _ in range(256):
            stream.write(b"#" * 2**20)
    assert bomb.stat().st_size < 2**20
    tracemalloc.start()
    try:
        result = CliRunner().invoke(app, ["serve", "--port", "0", "--cassettes", str(tmp_path)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == [f"error: --cassettes {bomb}: more than {limit:,} bytes once inflated, the limit of one "
                     "cassette file (docs/record-replay.md#limits)"]  # fmt: skip
    assert peak < 3 * limit, peak


def test_a_python_tag_in_a_vcr_file_is_one_line_naming_the_file_line_and_cause(tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text("interactions:\n- request:\n    uri: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(CassetteError) as raised:
        load_cassettes(tmp_path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: not a VCR cassette: line 3, column 10: ")
    assert "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'" in message


def test_a_cassette_the_reader_would_refuse_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the file limit indented, a cassette is written compact; past it compact too, it is
    refused naming the file and the limit, and nothing is left in the folder."""
    from bench.cassettes import format as cassette_format

    cassette = Cassette.model_validate(GOOD | {"response": {"status": 200, "body": "x" * 2000}})
    compact = len(cassette.model_dump_json()) + 1
    monkeypatch.setattr(cassette_format, "MAX_FILE_BYTES", compact)
    path = cassette_format.write_cassette(tmp_path, cassette, "0000-openai-chat-x.json")
    assert path.read_text() == cassette.model_dump_json() + "\n"
    monkeypatch.setattr(cassette_format, "MAX_FILE_BYTES", compact - 1)
    with pytest.raises(CassetteError, match=r"0001-openai-chat-x\.json: not written: more than 2,\d{3} bytes"):
        cassette_format.write_cassette(tmp_path, cassette, "0001-openai-chat-x.json")
    assert [p.name for p in tmp_path.iterdir()] == ["0000-openai-chat-x.json"]


def test_an_interrupted_write_leaves_the_folder_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt while a cassette is being written (here: at its flush to disk) leaves neither
    a partial cassette nor its temporary file, and an earlier cassette of that name unchanged."""
    from bench.cassettes import format as cassette_format

    first = cassette_format.write_cassette(tmp_path, Cassette.model_validate(GOOD), "0000-openai-chat-x.json")
    before = first.read_bytes()

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cassette_format.os, "fsync", interrupted)
    other = Cassette.model_validate(GOOD | {"response": {"status": 200, "body": "y" * 5000}})
    with pytest.raises(KeyboardInterrupt):
        cassette_format.write_cassette(tmp_path, other, "0000-openai-chat-x.json")
    assert [p.name for p in tmp_path.iterdir()] == ["0000-openai-chat-x.json"] and first.read_bytes() == before
    [(_, loaded)] = load_cassettes(tmp_path)
    assert loaded.response.chunks() == [b"{}"]


def test_a_folder_past_its_limit_is_refused_naming_the_file_that_passed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file within its own limit, the folder's together past its limit: refused (even under
    ``on_bad``, which skips only a bad file) at the file that passed it, in one line."""
    from bench.cassettes import folder

    monkeypatch.setattr(folder, "MAX_FOLDER_BYTES", 3 * 2**10)
    monkeypatch.setattr(folder, "MAX_FILE_BYTES", 2 * 2**10)
    for index in range(3):
        body = {"response": {"status": 200, "body": "z" * 900}}
        (tmp_path / f"000{index}-openai-chat-x.json").write_text(json.dumps(GOOD | body))
    skipped: list[CassetteError] = []
    with pytest.raises(CassetteError) as raised:
        load_cassettes(tmp_path, on_bad=skipped.append)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / '0002-openai-chat-x.json'}: the folder's cassettes pass "), message
    assert "\n" not in message and skipped == []
