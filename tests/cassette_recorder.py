"""Record cassettes through ``bench record``'s proxy in front of a loopback upstream (the
provider itself), for the tests of bench.cassettes: no traffic leaves the machine."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from bench.cassettes import RecordingProxy, Redaction
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from bench.sdk.adapter import Endpoint
from tests.protocol_clients import anthropic_client, anthropic_kwargs, chat_kwargs, openai_client, responses_kwargs

SECRET = "sk-live-THIS-MUST-NEVER-BE-WRITTEN-0123456789"
PROMPT_PHRASE = Redaction(patterns=(r"Extract the\s+person",))
"""Blanks a phrase of the prompt (a pattern is applied per SSE frame, so a phrase the upstream
streams across frames would survive in the frames: docs/record-replay.md)."""
COMBOS = list(itertools.product(Protocol, Mode, (False, True)))
REFUSAL = "I can't share details about that person."


def raw_reply(protocol: Protocol, mode: Mode, stream: bool, endpoint: Endpoint) -> bytes:
    """The bytes of one answer as the official client received them (a 4xx/5xx raises)."""
    extra: dict[str, Any] = {"stream": True} if stream else {}
    if protocol is Protocol.ANTHROPIC:
        with anthropic_client(endpoint) as client_a:
            raw = client_a.messages.with_raw_response.create(**anthropic_kwargs(mode), **extra)
            return raw.http_response.read()
    with openai_client(endpoint) as client:
        if protocol is Protocol.CHAT:
            if stream:
                extra["stream_options"] = {"include_usage": True}
            raw = client.chat.completions.with_raw_response.create(**chat_kwargs(mode), **extra)
        else:
            raw = client.responses.with_raw_response.create(**responses_kwargs(mode), **extra)
        return raw.http_response.read()


def record(folder: Path, script: list[Any], combos: list[tuple[Protocol, Mode, bool]]) -> dict[Any, bytes | str]:
    """Record ``combos`` through the proxy, the upstream answering ``script``; the bytes each
    client saw (or its error's text)."""
    seen: dict[Any, bytes | str] = {}
    with LocalProvider() as upstream:
        upstream.open_script("person", script, run_id="default")
        with RecordingProxy(upstream.base_url, folder, PROMPT_PHRASE) as proxy:
            endpoint = Endpoint(root=proxy.base_url, api_key=SECRET)
            for combo in combos:
                try:
                    seen[combo] = raw_reply(*combo, endpoint)
                except Exception as error:  # an API error the client raised: recorded too
                    seen[combo] = str(error)
    return seen
