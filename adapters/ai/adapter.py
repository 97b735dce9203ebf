"""Vercel AI SDK (npm ``ai`` 7.x, ``@ai-sdk/openai``, ``@ai-sdk/anthropic``, ``zod``) adapter.

The cells run in a Node worker (:class:`bench.node.adapter.NodeAdapter`); ``driver.mjs`` makes
the one SDK call per cell. ai 7 asks every provider for a ``json`` response format with the zod
schema's JSON schema, from three entry points: ``generateObject`` (the default and hardened
variants), ``streamObject`` (stream) and ``generateText`` with ``output: Output.object`` (the
``generate_text`` variant). It has no ``mode`` option any more: how the format is sent is the
provider's. ``@ai-sdk/openai`` sends a strict ``json_schema`` response format on Chat
Completions and Responses (native); ``@ai-sdk/anthropic`` sends ``output_config.format`` by
default for this model (native) and a forced ``json`` tool with
``structuredOutputMode: 'jsonTool'`` (tool). Nothing in ai 7 sends the schema in the prompt
alone (prompted), and the OpenAI provider has no tool path for a response format.

Line references are to ai 7.0.173 (``node/node_modules/ai/dist/index.js``), @ai-sdk/openai
4.0.118 and @ai-sdk/anthropic 4.0.105 (``dist/index.js``); adapters/ai/research.md explains
each one.
"""

from __future__ import annotations

from typing import ClassVar

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.node.adapter import NodeAdapter
from bench.sdk.adapter import PROTOCOLS, VARIANTS, Support, SupportTable, grid

GENERATE_TEXT = "generate_text"
"""The variant that calls ``generateText({output: Output.object({schema})})``, the entry point
ai 7 recommends over the deprecated ``generateObject`` (index.js:14626, 14629-14633)."""
HARDENED_MAX_RETRIES = 4
"""``maxRetries`` of the hardened variant (the default is 2, index.js:2450-2463): ai retries a
retryable APICallError only (429, 5xx: index.js:2434), after the provider's ``retry-after-ms``
or 2 s doubling; 4 keeps the longest doubled wait (16 s) inside a cell's 30 s stall limit.
Mirrored in driver.mjs."""

MODES = (Mode.NATIVE, Mode.TOOL, Mode.PROMPTED)
AI_VARIANTS = (*VARIANTS, GENERATE_TEXT)

_ENTRY = {
    Variant.DEFAULT: "generateObject({schema})",
    Variant.HARDENED: f"generateObject({{schema, maxRetries: {HARDENED_MAX_RETRIES}}})",
    Variant.STREAM: "streamObject({schema}), partialObjectStream read, then await object",
    GENERATE_TEXT: "generateText({output: Output.object({schema})})",
}
_NATIVE = {
    Protocol.CHAT: "@ai-sdk/openai chat: response_format json_schema, strict (openai index.js:2068-2090)",
    Protocol.RESPONSES: "@ai-sdk/openai responses: text.format json_schema, strict (openai index.js:7538-7572)",
    Protocol.ANTHROPIC: (
        "@ai-sdk/anthropic: structuredOutputMode 'auto' picks output_config.format for this model "
        "(anthropic index.js:4403-4407)"
    ),
}
_TOOL_ANTHROPIC = (
    "@ai-sdk/anthropic providerOptions structuredOutputMode 'jsonTool': a forced 'json' tool whose "
    "input schema is the zod schema's (anthropic index.js:4406-4421)"
)
_TOOL_OPENAI = (
    "unsupported: @ai-sdk/openai maps ai's json response format to response_format / text.format only "
    "(openai index.js:2079-2090, 7563-7572); ai 7 has no mode option to ask for a tool"
)
_PROMPTED = (
    "unsupported: ai 7 removed generateObject's mode option (mode: 'json'); a schema'd response format is "
    "always sent as the provider's structured output (ai index.js:14716-14722)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    entry = _ENTRY[variant]
    if mode is Mode.PROMPTED:
        return Support.unsupported(_PROMPTED)
    if mode is Mode.TOOL:
        if protocol is not Protocol.ANTHROPIC:
            return Support.unsupported(_TOOL_OPENAI)
        return Support.builtin(f"{entry}; {_TOOL_ANTHROPIC}")
    return Support.builtin(f"{entry}; {_NATIVE[protocol]}")


class AiAdapter(NodeAdapter):
    name: ClassVar[str] = "ai"
    distribution: ClassVar[str] = "ai"
    """The npm package (there is no Python distribution)."""
    npm_package: ClassVar[str] = "ai"
    driver: ClassVar[str] = "adapters/ai/driver.mjs"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, AI_VARIANTS, _support)
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4
