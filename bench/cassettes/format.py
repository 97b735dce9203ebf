"""The cassette file: one recorded exchange (request, response, stream events with timing).

A cassette is JSON, one file per exchange, named ``NNNN-<protocol>-<digest>.json`` in the order
recorded. The response body is kept as the exact text the upstream sent (a JSON body) or as the
exact SSE frames (a stream), so a replay without faults is byte-equal to what was recorded.

A file is written whole or not at all (a temporary file renamed), and read with a bound: no
file, gzipped or not, is inflated or read past :data:`MAX_FILE_BYTES` (a folder's files together
past :data:`MAX_FOLDER_BYTES`, :mod:`bench.cassettes.folder`), so a small hostile file cannot
exhaust memory.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CASSETTE_VERSION: Literal[1] = 1
"""Bumped on a change a reader of version 1 cannot read; fields are only ever added."""
MAX_FILE_BYTES = 32 * 2**20
"""The most one cassette file may hold, read or (gzipped) inflated: 32 MiB."""
MAX_FOLDER_BYTES = 256 * 2**20
"""The most a cassette folder's files may hold in all, read or inflated: 256 MiB."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordedRequest(_Strict):
    method: str = "POST"
    path: str
    """The path the client asked for (``/v1/chat/completions``), without the upstream's prefix."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers as sent, minus every auth header and those :class:`Redaction` drops."""
    body: dict[str, Any] | None = None
    """The parsed JSON body (None for a body that was not a JSON object)."""


class StreamEvent(_Strict):
    at_ms: float
    """Milliseconds from the request's start to this frame's arrival at the proxy."""
    data: str
    """One SSE frame exactly as received, its closing blank line included."""


class Cut(_Strict):
    """The note of an answer cut in the cassette (the client got it whole)."""

    kept_bytes: int
    """The bytes kept in the cassette: the body's first ones, or a stream's first frames whole."""
    received_bytes: int
    """The bytes the upstream sent and the client got."""
    note: str


class RecordedResponse(_Strict):
    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    """Response headers (content type, request id), minus hop-by-hop and redacted ones."""
    body: str | None = None
    """A non-streamed body, exactly as sent (None for a stream)."""
    events: list[StreamEvent] | None = None
    """A stream's frames, in order (None for a non-streamed body)."""
    first_byte_ms: float = 0.0
    duration_ms: float = 0.0
    cut: Cut | None = None
    """Set when the answer passed what ``bench record`` keeps: ``body`` or ``events`` hold only
    its start, and the replay never answers from it (docs/record-replay.md#limits)."""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json")

    def chunks(self) -> list[bytes]:
        """The bytes of the reply, as they were sent."""
        if self.events is not None:
            return [event.data.encode() for event in self.events]
        return [(self.body or "").encode()]


class Provenance(_Strict):
    source: str
    """``bench record`` for a recording, or where an imported cassette came from (repo and path)."""
    upstream: str | None = None
    """The host recorded from (scheme and host only, never a query or credentials)."""
    recorded_at: str | None = None
    license: str | None = None
    blanked: list[str] | None = None
    """Where ``bench record`` blanked a credential in a body: each credential-named field's path
    (``request.body.api_key``) and each place one of the request's own auth values appeared;
    ``[]`` when it looked and found none (None: not recorded so, e.g. an imported cassette)."""


class Cassette(_Strict):
    cassette_version: Literal[1] = CASSETTE_VERSION
    protocol: Literal["openai-chat", "openai-responses", "anthropic-messages"] | None
    """The wire protocol of the exchange (None for an auxiliary request such as count_tokens)."""
    provenance: Provenance
    request: RecordedRequest
    response: RecordedResponse

    @property
    def stream(self) -> bool:
        return self.response.events is not None


class CassetteError(ValueError):
    """A cassette that cannot be read: its message is one line naming the file and the field."""


class OverLimit(CassetteError):
    """A file that would pass a read limit: never skipped as a bad file when the limit is the folder's."""

    def __init__(self, message: str, folder: bool = False) -> None:
        super().__init__(message)
        self.folder = folder


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES, folder_limit: bool = False) -> bytes:
    """The bytes of ``path`` (inflated as they are read when it ends in ``.gz``), never more
    than ``limit`` of them held: past it, :class:`OverLimit` naming the file and the limit."""
    gzipped = path.name.endswith(".gz")
    try:
        with gzip.open(path, "rb") if gzipped else path.open("rb") as stream:
            data = _bounded(stream, limit)
    except (OSError, EOFError, zlib.error) as error:
        raise CassetteError(f"{path}: cannot read it ({error})") from None
    if data is None:
        raise _over(path, limit, gzipped, folder_limit)
    return data


def inflate_bounded(data: bytes, limit: int, where: str) -> bytes | None:
    """A gzipped body inflated as it is read, at most ``limit`` bytes (None: not gzip)."""
    try:
        inflated = _bounded(gzip.GzipFile(fileobj=io.BytesIO(data)), limit)
    except (OSError, EOFError, zlib.error):
        return None
    if inflated is None:
        raise _over(Path(where), limit, True, False)
    return inflated


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _bounded(stream: _Readable, limit: int) -> bytes | None:
    data = stream.read(limit + 1)
    return None if len(data) > limit else data


def _over(path: Path, limit: int, gzipped: bool, folder: bool) -> OverLimit:
    inflated = " once inflated" if gzipped else ""
    if folder:
        return OverLimit(
            f"{path}: the folder's cassettes pass {MAX_FOLDER_BYTES:,} bytes{inflated} with this file, the limit "
            "of one cassette folder (docs/record-replay.md#limits)",
            folder=True,
        )
    return OverLimit(
        f"{path}: more than {limit:,} bytes{inflated}, the limit of one cassette file (docs/record-replay.md#limits)"
    )


def load_cassette(path: Path, data: bytes | None = None) -> Cassette:
    """The cassette of ``path`` (``data``: its bytes, already read within the limits)."""
    data = read_bounded(path) if data is None else data
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise CassetteError(f"{path}: not a JSON cassette ({type(error).__name__}: {error})") from None
    try:
        return Cassette.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise CassetteError(f"{path}: field {where}: {first['msg']}") from None


def write_cassette(directory: Path, cassette: Cassette, name: str) -> Path:
    """Write ``name`` whole or not at all: to a temporary file beside it (a name no folder read
    takes: it does not end in ``.json``), flushed to disk, then renamed over it. A cassette the
    reader would refuse (past :data:`MAX_FILE_BYTES`) is :class:`OverLimit`, nothing written."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    temporary = directory / f".{name}.{os.getpid()}.partial"
    text = cassette.model_dump_json(indent=2) + "\n"
    if len(text.encode()) > MAX_FILE_BYTES:  # indented past the read limit: written compact, else not at all
        text = cassette.model_dump_json() + "\n"
        if len(text.encode()) > MAX_FILE_BYTES:
            raise OverLimit(f"{path}: not written: more than {MAX_FILE_BYTES:,} bytes, the limit of one cassette "
                            "file (docs/record-replay.md#limits)")  # fmt: skip
    try:
        with temporary.open("w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path
