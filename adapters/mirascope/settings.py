"""What the mirascope cells are built with, shared by the cell table (``adapter``, no SDK import)
and the worker's calls (``calls``, which imports mirascope): one declaration, no import loop."""

from __future__ import annotations

from bench.core.vocabulary import Mode, Protocol

HARDENED_VALIDATE_RETRIES = 2
"""``response.validate(max_retries=2)`` in the hardened cells: three calls in all (its default is 1)."""

FORMAT_MODES: dict[Mode, str] = {Mode.TOOL: "tool", Mode.NATIVE: "strict", Mode.PROMPTED: "json"}
"""The ``llm.format(Model, mode=...)`` of each bench mode."""

MODEL_IDS: dict[Protocol, str] = {
    Protocol.CHAT: "openai/{model}:completions",
    Protocol.RESPONSES: "openai/{model}:responses",
    Protocol.ANTHROPIC: "anthropic/{model}",
}
"""The Mirascope model id of each protocol (the ``:completions`` / ``:responses`` suffix picks the API)."""
