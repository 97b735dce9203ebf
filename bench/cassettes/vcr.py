"""Import VCR.py cassettes (YAML, as pydantic-ai and LangChain record their test traffic) as
they are: each interaction becomes a :class:`bench.cassettes.format.Cassette` in memory, the
file itself is never rewritten.

Read: ``request.body`` (text, or ``{string: ...}``) or pydantic-ai's ``parsed_body``;
``response.body.string`` or ``parsed_body``; ``status.code``; headers as VCR's lists. A gzipped
file (``.yaml.gz``, LangChain's) is read the same. A stream's body (``text/event-stream``) is
split into its SSE frames, with no timing (VCR records none: ``at_ms`` is 0). Credentials in a
recorded header are dropped as for ``bench record``. Where a file came from is read from a
``provenance.json`` beside it (file name -> source, license), when there is one.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from bench.cassettes.format import (
    Cassette,
    CassetteError,
    Provenance,
    RecordedRequest,
    RecordedResponse,
    StreamEvent,
)
from bench.cassettes.match import protocol_of_path
from bench.cassettes.redact import Redaction

VCR_SUFFIXES = (".yaml", ".yml", ".yaml.gz", ".yml.gz")
PROVENANCE_FILE = "provenance.json"


class Origin(BaseModel):
    """Where one vendored file came from (an entry of ``provenance.json``)."""

    model_config = ConfigDict(extra="forbid")
    source: str
    """e.g. ``github:pydantic/pydantic-ai@<commit>:tests/models/cassettes/...``."""
    license: str | None = None


def is_vcr(path: Path) -> bool:
    return path.name.endswith(VCR_SUFFIXES)


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode("utf-8")


def origins(directory: Path) -> dict[str, Origin]:
    path = directory / PROVENANCE_FILE
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {name: Origin.model_validate(entry) for name, entry in raw.items()}
    except (ValueError, AttributeError) as error:
        message = error.errors()[0]["msg"] if isinstance(error, ValidationError) else str(error)
        raise CassetteError(f"{path}: {message}") from None


def load_vcr(path: Path, origin: Origin | None = None) -> list[Cassette]:
    """The interactions of one VCR file, in order."""
    try:
        document = yaml.safe_load(_text(path))
        interactions = document["interactions"]
    except (OSError, ValueError, yaml.YAMLError, KeyError, TypeError) as error:
        raise CassetteError(f"{path}: not a VCR cassette ({type(error).__name__}: {error})") from None
    provenance = origin or Origin(source=f"vcr:{path.name}")
    found = []
    for index, interaction in enumerate(interactions):
        try:
            found.append(_cassette(interaction, provenance))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise CassetteError(f"{path}: interactions[{index}]: cannot read {error}") from None
    return found


def _cassette(interaction: dict[str, Any], origin: Origin) -> Cassette:
    request, response = interaction["request"], interaction["response"]
    uri = urlsplit(request["uri"])
    redaction = Redaction()
    headers = redaction.kept_headers(_headers(response.get("headers")))
    body = _body_text(response)
    stream = "text/event-stream" in headers.get("content-type", "")
    return Cassette(
        protocol=protocol_of_path(uri.path),
        provenance=Provenance(source=origin.source, upstream=f"{uri.scheme}://{uri.hostname}", license=origin.license),
        request=RecordedRequest(
            method=request.get("method", "POST"), path=uri.path + (f"?{uri.query}" if uri.query else ""),
            headers=redaction.kept_headers(_headers(request.get("headers"))), body=_request_body(request),
        ),
        response=RecordedResponse(
            status=int(response["status"]["code"]), headers=headers,
            body=None if stream else body, events=_frames(body) if stream else None,
        ),
    )  # fmt: skip


def _headers(raw: Any) -> dict[str, str]:
    return {str(k).lower(): ", ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in (raw or {}).items()}


def _request_body(request: dict[str, Any]) -> dict[str, Any] | None:
    if "parsed_body" in request:
        parsed = request["parsed_body"]
    else:
        raw = request.get("body")
        raw = raw.get("string") if isinstance(raw, dict) else raw
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8")
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
    return parsed if isinstance(parsed, dict) else None


def _body_text(response: dict[str, Any]) -> str:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"], ensure_ascii=False)
    body = response.get("body") or {}
    raw = body.get("string", "") if isinstance(body, dict) else body
    if isinstance(raw, bytes):
        with contextlib.suppress(OSError):  # a gzipped body (LangChain's recordings)
            raw = gzip.decompress(raw)
        raw = raw.decode("utf-8")
    return str(raw or "")


def _frames(text: str) -> list[StreamEvent]:
    frames, rest = [], text
    while "\n\n" in rest:
        frame, rest = rest.split("\n\n", 1)
        frames.append(StreamEvent(at_ms=0.0, data=frame + "\n\n"))
    if rest.strip():
        frames.append(StreamEvent(at_ms=0.0, data=rest))
    return frames
