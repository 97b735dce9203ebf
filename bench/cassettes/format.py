"""The cassette file: one recorded exchange (request, response, stream events with timing).

A cassette is JSON, one file per exchange, named ``NNNN-<protocol>-<digest>.json`` in the order
recorded. The response body is kept as the exact text the upstream sent (a JSON body) or as the
exact SSE frames (a stream), so a replay without faults is byte-equal to what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CASSETTE_VERSION: Literal[1] = 1
"""Bumped on a change a reader of version 1 cannot read; fields are only ever added."""


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


def load_cassette(path: Path) -> Cassette:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CassetteError(f"{path}: not a JSON cassette ({error})") from None
    try:
        return Cassette.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise CassetteError(f"{path}: field {where}: {first['msg']}") from None


def write_cassette(directory: Path, cassette: Cassette, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(cassette.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path
