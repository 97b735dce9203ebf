"""Pieces shared by the three protocol modules: ids, SSE framing, the usage pair."""

from __future__ import annotations

import base64
import json
import random
import secrets
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

_ALPHABET = string.ascii_letters + string.digits


class Usage(NamedTuple):
    """Billed tokens of one reply (a named tuple: built on every request, and cheaper than a
    frozen dataclass's ``__init__``)."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ErrorReply:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


class IdSource:
    """The ids of one reply (and its streams' padding), drawn in order from a generator seeded by
    the run's seed and the attempt: the same cell, seed and attempt get the same ids at the same
    positions, run after run. Ids travel back in later requests (a tool call's id beside its
    result, a Responses item's id, a thinking block's signature) and are billed there, so ids
    drawn at random made the same cell bill a few tokens more or less each run (issue 48).

    Ids only need to look like the real ones and not repeat within a conversation: a Mersenne
    Twister draws a whole id at once (``secrets.choice`` read the entropy pool once per
    character: the ids were the largest cost of a small request). It is seeded on the first
    draw, so a reply that draws no id pays nothing."""

    __slots__ = ("_key", "_rng")

    def __init__(self, seed: int | str, attempt: int | str | None) -> None:
        self._key = f"ids:{seed}:{attempt}"
        self._rng: random.Random | None = None

    def _random(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(self._key)
        return self._rng

    def alnum(self, prefix: str, length: int = 24) -> str:
        """``prefix`` and ``length`` letters and digits."""
        return prefix + self.alnum_bytes(b"", length).decode("ascii")

    def alnum_bytes(self, prefix: bytes, length: int) -> bytes:
        """:meth:`alnum` as ASCII bytes, for a reply written as bytes: one random byte per
        character, mapped onto the 62 letters and digits (the first 8 come up 5 times in 256
        rather than 4: no matter for an id)."""
        return prefix + self._random().getrandbits(length * 8).to_bytes(length, "little").translate(_BYTE_TO_ALPHABET)

    def hex(self, prefix: str, length: int = 48) -> str:
        """``prefix`` and ``length`` lowercase hex digits."""
        return prefix + self._random().randbytes(length // 2).hex()

    def urlsafe(self, length: int) -> str:
        """``length`` characters of the URL-safe base64 alphabet (``secrets.token_urlsafe``'s)."""
        return base64.urlsafe_b64encode(self._random().randbytes(length)).decode("ascii")[:length]


UNSEEDED = IdSource(secrets.randbits(128), None)
"""The ids of replies that belong to no run (a path no run serves, a body too large to read):
drawn from one generator seeded from the OS when the provider loads."""
_BYTE_TO_ALPHABET = "".join(_ALPHABET[i % len(_ALPHABET)] for i in range(256)).encode("ascii")


def now() -> int:
    return int(time.time())


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # None without the C accelerator
_C_ENCODE = (
    _MAKE_ENCODER(  # markers, default, encoder, indent, separators, sort/skip keys, allow_nan
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    if _MAKE_ENCODER is not None
    else None
)
"""The C encoder ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` builds on
every call, built once (rebuilding it was most of the cost of encoding a small reply). Its
output is the same; it skips only the check for circular references, which JSON parsed from a
request and the literals rendered here cannot contain."""


def dumps_str(value: Any) -> str:
    """Compact JSON text, exactly as ``json.dumps(value, separators=(",", ":"),
    ensure_ascii=False)`` writes it."""
    if _C_ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


def dumps(value: Any) -> bytes:
    return dumps_str(value).encode()


_MARK = "misfit-delta-placeholder-7f3a"

PAD_MARK = "misfitpadmark"
"""Stands for a frame's padding (OpenAI's ``obfuscation``) until :func:`pad_frame` or
:func:`delta_frames` draws it; it must be the frame's last string."""
_PAD_MARK_JSON = b'"misfitpadmark"'
PAD_MAX = 16
"""Padding evens out the size of a delta: ``max(4, PAD_MAX - len(delta))`` random letters and
digits (a side-channel guard)."""


def pad_frame(ids: IdSource, frame: bytes, size: int = 0) -> bytes:
    """``frame`` with its :data:`PAD_MARK` replaced by padding of its own (drawn from the reply's
    ``ids``), for a delta of ``size`` characters; a frame without the mark is returned as it is."""
    head, found, rest = frame.rpartition(_PAD_MARK_JSON)
    if not found:
        return frame
    return head + b'"' + ids.alnum_bytes(b"", max(4, PAD_MAX - size)) + b'"' + rest


def delta_frames(frame: Callable[[str], bytes], pieces: list[str], padded: IdSource | None = None) -> list[bytes]:
    """``[frame(piece) for piece in pieces]``, byte for byte, with the frame serialised once;
    ``padded`` (the reply's ids): each frame's :data:`PAD_MARK` replaced by padding of its own
    (:func:`pad_frame`).

    A stream sends hundreds of frames that differ only in one string; JSON-encoding each whole
    frame was most of a streamed request's cost. The frame is rendered once around a marker,
    and each piece's own JSON string is put in its place (the encoder writes a string inside a
    frame exactly as it writes it alone). Where the marker is not found exactly once (a request
    echoing it, say), every frame is rendered in full. The padding is sliced from one random
    buffer per call rather than drawn per frame: a stream's frames are the provider's hot path.
    """
    template, mark = frame(_MARK), dumps(_MARK)
    if template.count(mark) != 1:
        frames = [frame(piece) for piece in pieces]
        if padded is None:
            return frames
        return [pad_frame(padded, f, len(piece)) for f, piece in zip(frames, pieces, strict=True)]
    prefix, _, suffix = template.partition(mark)
    encode = json.encoder.encode_basestring  # what the encoder writes for a str, alone or nested
    middle, found, end = suffix.rpartition(_PAD_MARK_JSON) if padded is not None else (b"", b"", b"")
    if padded is None or not found:
        return [prefix + encode(piece).encode() + suffix for piece in pieces]
    pool = padded.alnum_bytes(b"", PAD_MAX * len(pieces))
    middle, end = middle + b'"', b'"' + end
    return [
        prefix + encode(piece).encode() + middle + pool[at : at + max(4, PAD_MAX - len(piece))] + end
        for at, piece in zip(range(0, PAD_MAX * len(pieces), PAD_MAX), pieces, strict=True)
    ]


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
