"""Pieces shared by the three protocol modules: ids, SSE framing, the usage pair."""

from __future__ import annotations

import json
import secrets
import string
import time
from dataclasses import dataclass
from typing import Any

_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ErrorReply:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


def random_id(prefix: str, length: int = 24, alphabet: str = _ALPHABET) -> str:
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def hex_id(prefix: str, length: int = 48) -> str:
    return prefix + secrets.token_hex(length // 2)


def now() -> int:
    return int(time.time())


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def data_frame(payload: Any) -> bytes:
    """A ``data:``-only SSE frame (OpenAI Chat Completions)."""
    return b"data: " + dumps(payload) + b"\n\n"


def event_frame(payload: dict[str, Any]) -> bytes:
    """An SSE frame whose ``event:`` line equals ``data.type`` (Responses, Anthropic)."""
    return b"event: " + payload["type"].encode() + b"\ndata: " + dumps(payload) + b"\n\n"


def retry_headers(retry_after_s: float | None, should_retry: bool | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if retry_after_s is not None:
        headers["retry-after-ms"] = str(int(retry_after_s * 1000))
        headers["retry-after"] = str(max(1, round(retry_after_s)))
    if should_retry is not None:
        headers["x-should-retry"] = "true" if should_retry else "false"
    return headers
