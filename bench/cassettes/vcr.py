"""Import VCR.py cassettes (YAML, as pydantic-ai and LangChain record their test traffic) as
they are: each interaction becomes a :class:`bench.cassettes.format.Cassette` in memory, the
file itself is never rewritten.

Read: ``request.body`` (text, or ``{string: ...}``) or pydantic-ai's ``parsed_body``;
``response.body.string`` or ``parsed_body``; ``status.code``; headers as VCR's lists. A gzipped
file (``.yaml.gz``, LangChain's) is read the same. A stream's body (``text/event-stream``) is
split into its SSE frames, with no timing (VCR records none: ``at_ms`` is 0). Credentials in a
recorded header are dropped as for ``bench record``. Where a file came from is read from a
``provenance.json`` beside it (file name -> source, license), when there is one.

Bounded: the file within :data:`bench.cassettes.format.MAX_FILE_BYTES` inflated, its gzipped
bodies inflated within what is left of that, its YAML aliases expanding to at most
:data:`MAX_YAML_VALUES` values; YAML is read safely (a Python tag is refused), and what cannot
be read is one line naming the file, the line and the cause.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from bench.cassettes.format import (
    MAX_FILE_BYTES,
    Cassette,
    CassetteError,
    Provenance,
    RecordedRequest,
    RecordedResponse,
    StreamEvent,
    inflate_bounded,
    read_bounded,
)
from bench.cassettes.match import protocol_of_path
from bench.cassettes.redact import Redaction

VCR_SUFFIXES = (".yaml", ".yml", ".yaml.gz", ".yml.gz")
PROVENANCE_FILE = "provenance.json"
MAX_YAML_VALUES = 1_000_000
"""The most values a VCR file's YAML may expand to, its aliases followed: a few kilobytes of
nested aliases (a "billion laughs") would otherwise expand past any memory once read."""


class Origin(BaseModel):
    """Where one vendored file came from (an entry of ``provenance.json``)."""

    model_config = ConfigDict(extra="forbid")
    source: str
    """e.g. ``github:pydantic/pydantic-ai@<commit>:tests/models/cassettes/...``."""
    license: str | None = None


def is_vcr(path: Path) -> bool:
    return path.name.endswith(VCR_SUFFIXES)


class _Budget:
    """What is left of a file's limit for the gzipped bodies it carries."""

    def __init__(self, path: Path, left: int) -> None:
        self.path, self.left = path, left

    def inflate(self, data: bytes) -> bytes | None:
        inflated = inflate_bounded(data, self.left, f"{self.path} (a gzipped body)")
        self.left -= len(inflated or b"")
        return inflated


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document whose aliases expand past :data:`MAX_YAML_VALUES`."""

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None and _expanded(node, {}) > MAX_YAML_VALUES:
            raise yaml.YAMLError(f"its aliases expand to more than {MAX_YAML_VALUES:,} values")
        return node


def _expanded(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``node`` is once every alias is followed (each shared node counted once
    per use, measured once)."""
    if id(node) not in sizes:
        sizes[id(node)] = 1  # a recursive alias counts once, not forever
        value = node.value
        if isinstance(value, list):
            children = [part for item in value for part in (item if isinstance(item, tuple) else (item,))]
            sizes[id(node)] = 1 + sum(_expanded(child, sizes) for child in children)
    return sizes[id(node)]


def _yaml_error(path: Path, error: yaml.YAMLError) -> str:
    """One line: the file, the line and the cause (PyYAML's own message spans several)."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        cause = " ".join(str(part) for part in (error.context, error.problem) if part)
        return f"{path}: not a VCR cassette: {where}{cause}"
    return f"{path}: not a VCR cassette: {' '.join(str(error).split())}"


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


def load_vcr(path: Path, origin: Origin | None = None, data: bytes | None = None) -> list[Cassette]:
    """The interactions of one VCR file, in order (``data``: its inflated bytes, already read
    within the limits)."""
    data = read_bounded(path) if data is None else data
    try:
        document = yaml.load(data.decode("utf-8"), Loader=_BoundedLoader)  # a safe loader (SafeLoader, bounded)
        interactions = document["interactions"]
    except yaml.YAMLError as error:
        raise CassetteError(_yaml_error(path, error)) from None
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise CassetteError(f"{path}: not a VCR cassette ({type(error).__name__}: {error})") from None
    provenance = origin or Origin(source=f"vcr:{path.name}")
    budget = _Budget(path, MAX_FILE_BYTES - len(data))
    found = []
    for index, interaction in enumerate(interactions):
        try:
            found.append(_cassette(interaction, provenance, budget))
        except CassetteError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise CassetteError(f"{path}: interactions[{index}]: cannot read {error}") from None
    return found


def _cassette(interaction: dict[str, Any], origin: Origin, budget: _Budget) -> Cassette:
    request, response = interaction["request"], interaction["response"]
    uri = urlsplit(request["uri"])
    redaction = Redaction()
    headers = redaction.kept_headers(_headers(response.get("headers")))
    body = _body_text(response, budget)
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


def _body_text(response: dict[str, Any], budget: _Budget) -> str:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"], ensure_ascii=False)
    body = response.get("body") or {}
    raw = body.get("string", "") if isinstance(body, dict) else body
    if isinstance(raw, bytes):
        raw = (budget.inflate(raw) or raw).decode("utf-8")  # a gzipped body (LangChain's recordings)
    return str(raw or "")


def _frames(text: str) -> list[StreamEvent]:
    frames, rest = [], text
    while "\n\n" in rest:
        frame, rest = rest.split("\n\n", 1)
        frames.append(StreamEvent(at_ms=0.0, data=frame + "\n\n"))
    if rest.strip():
        frames.append(StreamEvent(at_ms=0.0, data=rest))
    return frames
