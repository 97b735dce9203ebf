"""What is never written to a cassette, and what else a user chooses to keep out of one.

Auth is never written: every header that carries a credential (``authorization``,
``x-api-key``, ``api-key``, cookies, and any header whose name says key, token or secret) is
dropped from the request and the response before a cassette exists. Beyond that, a user names
more headers to drop and patterns to blank out of bodies (``bench record --redact-header``,
``--redact``); a pattern is replaced by ``[REDACTED]`` wherever it appears in a body's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

AUTH_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-organization",
     "openai-project", "anthropic-organization-id", "x-goog-api-key"}
)  # fmt: skip
"""Headers dropped whatever the user configures."""
SECRET_WORDS = ("key", "token", "secret", "auth", "session", "password")
"""A header whose name contains one of these is dropped too."""
HOP_BY_HOP = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
     "accept-encoding", "content-encoding"}
)  # fmt: skip
"""Headers of one connection, not of the exchange: neither forwarded as is nor recorded."""
REDACTED = "[REDACTED]"


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in AUTH_HEADERS or any(word in lowered for word in SECRET_WORDS)


@dataclass(frozen=True)
class Redaction:
    """The user's extra rules, on top of the auth headers that are never written."""

    headers: frozenset[str] = frozenset()
    """More header names to drop (case-insensitive)."""
    patterns: tuple[str, ...] = ()
    """Regular expressions blanked out of request and response bodies."""
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            compiled = tuple(re.compile(pattern) for pattern in self.patterns)
        except re.error as error:
            raise ValueError(f"--redact {error.pattern!r}: not a regular expression ({error})") from None
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "headers", frozenset(name.lower() for name in self.headers))

    def kept_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` without credentials, connection headers and the user's dropped ones."""
        return {
            name.lower(): value
            for name, value in headers.items()
            if not is_secret_header(name) and name.lower() not in HOP_BY_HOP and name.lower() not in self.headers
        }

    def text(self, text: str) -> str:
        for pattern in self._compiled:
            text = pattern.sub(REDACTED, text)
        return text

    def body(self, value: Any) -> Any:
        """The patterns applied to every string of a parsed body (so it stays JSON)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.body(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.body(item) for item in value]
        return value
