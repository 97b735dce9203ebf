"""What is never written to a cassette, and what else a user chooses to keep out of one.

Auth is never written: every header that carries a credential (``authorization``,
``x-api-key``, ``api-key``, cookies, and any header whose name says key, token or secret) is
dropped from the request and the response before a cassette exists. Beyond that, a user names
more headers to drop and patterns to blank out of bodies (``bench record --redact-header``,
``--redact``); a pattern is replaced by ``[REDACTED]`` wherever it appears in a body's text.

A key also travels in bodies (some SDKs and gateways send ``"api_key"`` in the JSON), so every
body written has, whatever the user configures, the value of each credential-shaped field
blanked at any depth (:func:`is_credential_field`: a token *count* such as ``max_tokens`` is not
one), in JSON and form-encoded bodies and in each SSE frame's ``data:`` JSON, and every
occurrence of the exact values the request's own auth headers and query parameters carried
(:func:`auth_values`), inside any string. :class:`Blanking` does both and says where, for the
cassette's provenance. A string holding JSON (a tool call's ``arguments``, a text answer) is
not parsed: only its auth values are blanked there.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

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
CREDENTIAL_FIELDS = frozenset(
    {"apikey", "key", "token", "secret", "password", "passwd", "pwd", "passphrase", "credential", "credentials",
     "authorization", "auth", "bearer", "cookie", "session", "sessionid"}
)  # fmt: skip
"""Field names (lowercase, ``_`` and ``-`` dropped) whose value is a credential."""
CREDENTIAL_ENDINGS = ("apikey", "secret", "password", "token", "privatekey", "secretkey", "accesskey")
"""Name endings that make a credential too (``openai_api_key``, ``x-access-token``,
``client_secret``, ``aws_secret_access_key``...); ``tokens`` (a count) ends otherwise."""
MIN_AUTH_VALUE = 8
"""An auth value shorter than this is not blanked wherever it appears (``1`` or ``true`` would
blank every body); a credential field's value is blanked whatever its length."""
MAX_PLACES = 50
"""The most places a cassette's provenance lists (the rest counted)."""


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in AUTH_HEADERS or any(word in lowered for word in SECRET_WORDS)


def is_credential_field(name: str) -> bool:
    """Whether a body field named ``name`` holds a credential: ``api_key``, ``token``,
    ``client_secret``...; never a count or a limit (``max_tokens``, ``input_tokens``)."""
    squashed = name.lower().replace("_", "").replace("-", "")
    return squashed in CREDENTIAL_FIELDS or squashed.endswith(CREDENTIAL_ENDINGS)


def auth_values(headers: dict[str, str], query: str = "") -> frozenset[str]:
    """The credential values a request carried: each secret header's value and, after a scheme
    (``Bearer sk-...``), its credential (and a ``Basic`` pair's password); each cookie's value;
    each credential-named query parameter's value (Azure's ``api-key``); those of
    :data:`MIN_AUTH_VALUE` characters or more."""
    found: set[str] = set()
    for name, value in headers.items():
        if not is_secret_header(name):
            continue
        scheme, _, credential = value.strip().rpartition(" ")
        found |= {value.strip(), credential}
        if scheme.lower() == "basic":
            found.add(_basic_password(credential))
        if name.lower() in ("cookie", "set-cookie"):
            found |= {part.partition("=")[2].strip() for part in value.split(";")}
    found |= {value for name, value in parse_qsl(query) if is_credential_field(name) or is_secret_header(name)}
    return frozenset(value for value in found if len(value) >= MIN_AUTH_VALUE)


def _basic_password(credential: str) -> str:
    try:
        return base64.b64decode(credential, validate=True).decode("utf-8").partition(":")[2]
    except (binascii.Error, UnicodeDecodeError):
        return ""


def blank_fields(value: Any) -> Any:
    """A parsed body with every credential field blanked, as ``bench record`` writes it (the
    replay blanks a new request so before it is matched)."""
    return Blanking(frozenset()).value(value, "")


class Blanking:
    """Blanks the credentials of one exchange from its bodies, and notes where (for the
    cassette's provenance): credential fields at any depth, and the request's own auth values."""

    def __init__(self, secrets: frozenset[str]) -> None:
        # longest first: a value that contains another is blanked whole
        self.secrets = sorted(secrets, key=len, reverse=True)
        self.places: list[str] = []

    def said(self) -> list[str]:
        """Where credentials were blanked, for the provenance (at most :data:`MAX_PLACES`)."""
        if len(self.places) <= MAX_PLACES:
            return list(self.places)
        return [*self.places[:MAX_PLACES], f"... and {len(self.places) - MAX_PLACES} more"]

    def text(self, text: str, where: str) -> str:
        """``text`` with every occurrence of an auth value blanked."""
        found = 0
        for secret in self.secrets:
            found += text.count(secret)
            text = text.replace(secret, REDACTED)
        if found:
            self.places.append(f"{where} (the request's auth value)")
        return text

    def value(self, value: Any, where: str) -> Any:
        """A parsed JSON value with its credential fields and auth values blanked."""
        if isinstance(value, dict):
            # a logprobs entry's ``token`` is the model's text, not a credential
            logprob = "logprob" in value
            return {
                key: self.value(item, f"{where}.{key}")
                if logprob and key == "token"
                else self._field(key, item, f"{where}.{key}")
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.value(item, f"{where}[{at}]") for at, item in enumerate(value)]
        return self.text(value, where) if isinstance(value, str) else value

    def body_text(self, text: str, where: str, content_type: str = "") -> str:
        """A body kept as text (a reply, an SSE frame: ``content_type`` says which): its auth
        values blanked, and its credential fields when it is JSON (a frame's each ``data:``
        line) or a form, the rest of the text kept byte for byte where it can be."""
        text = self.text(text, where)
        if "application/x-www-form-urlencoded" in content_type:
            return self._form(text, where)
        if "text/event-stream" not in content_type:
            return self._json(text, where) if '"' in text else text
        lines = text.split("\n")
        for at, line in enumerate(lines):
            prefix, payload = ("data:", line[5:]) if line.startswith("data:") else ("", line)
            if '"' in payload:
                lines[at] = prefix + self._json(payload, where)
        return "\n".join(lines)

    def _json(self, text: str, where: str) -> str:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return text
        before = len(self.places)
        blanked = self.value(parsed, where)
        if len(self.places) == before:
            return text
        # the bytes kept: each blanked string value replaced where it is written as it parses
        kept = text
        for value in _credential_strings(parsed):
            for encoded in {json.dumps(value), json.dumps(value, ensure_ascii=False)}:
                kept = kept.replace(encoded, json.dumps(REDACTED))
        try:
            if json.loads(kept) == blanked:
                return kept
        except (ValueError, RecursionError):
            pass
        return json.dumps(blanked, ensure_ascii=False, separators=(",", ":"))  # written otherwise: re-encoded

    def _form(self, text: str, where: str) -> str:
        pairs = parse_qsl(text, keep_blank_values=True)
        if not any(is_credential_field(name) and value for name, value in pairs):
            return text
        blanked = []
        for name, value in pairs:
            if is_credential_field(name) and value:
                self.places.append(f"{where}.{name}")
                value = REDACTED
            blanked.append((name, value))
        return urlencode(blanked)

    def _field(self, key: str, item: Any, where: str) -> Any:
        if isinstance(item, str | int | float) and not isinstance(item, bool) and is_credential_field(key):
            if item == "" or item == REDACTED:
                return item
            self.places.append(where)
            return REDACTED
        return self.value(item, where)


def _credential_strings(value: Any) -> list[str]:
    """The string values of credential fields in a parsed JSON value (as :class:`Blanking` sees them)."""
    if isinstance(value, dict):
        logprob = "logprob" in value
        found = []
        for key, item in value.items():
            if isinstance(item, str) and is_credential_field(key) and not (logprob and key == "token"):
                found.append(item)
            else:
                found += _credential_strings(item)
        return found
    if isinstance(value, list):
        return [text for item in value for text in _credential_strings(item)]
    return []


@dataclass(frozen=True)
class Redaction:
    """The user's extra rules, on top of the auth headers and credential fields that are never written."""

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
        """A parsed body's credential fields blanked (:func:`blank_fields`, whatever the user
        configures) and the patterns applied to its every string (so it stays JSON)."""
        return self._patterns(blank_fields(value))

    def _patterns(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self._patterns(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._patterns(item) for item in value]
        return value
