"""OpenAI Agents SDK for TypeScript (npm ``@openai/agents`` 0.20, ``openai``, ``zod``) adapter.

The cells run in a Node worker (:class:`bench.node.adapter.NodeAdapter`); ``driver.mjs`` builds
``new Agent({outputType: zodSchema, model})`` on an ``OpenAIChatCompletionsModel`` or
``OpenAIResponsesModel`` over one ``OpenAI`` client per base URL, and runs it once with
``run(agent, prompt)`` (default) or ``run(agent, prompt, {stream: true})`` (stream). The output
type is sent as a strict ``json_schema`` response format (native) and parsed when
``result.finalOutput`` is read (``JSON.parse`` then zod: agents-core ``agent.mjs`` 549-557).

Not built here yet, said plainly rather than approximated: the composed tool cell and the
hardened variant (error handlers) that the Python adapter (adapters/openai_agents) has; prompted
(the SDK has none) and Anthropic (it needs @openai/agents-extensions, not installed).
Line references are to the packages under ``node/node_modules/@openai/`` (research.md).
"""

from __future__ import annotations

from typing import ClassVar

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.node.adapter import NodeAdapter
from bench.sdk.adapter import Support, SupportTable, grid

MODES = (Mode.NATIVE, Mode.TOOL, Mode.PROMPTED)
PROTOCOLS = (Protocol.CHAT, Protocol.RESPONSES, Protocol.ANTHROPIC)
JS_VARIANTS = (Variant.DEFAULT, Variant.STREAM)

_NATIVE = {
    Protocol.CHAT: "Agent({outputType: zod}) on OpenAIChatCompletionsModel: response_format json_schema strict",
    Protocol.RESPONSES: "Agent({outputType: zod}) on OpenAIResponsesModel: text.format json_schema strict",
}
_TOOL = (
    "unsupported here: the tool cell is composed (a function tool + toolUseBehavior stopAtToolNames) in the "
    "Python adapter; not ported to this one yet"
)
_PROMPTED = "unsupported: a non-text outputType always sends a json_schema response format"
_ANTHROPIC = "unsupported: Anthropic needs @openai/agents-extensions (aisdk), which is not installed"


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    if protocol is Protocol.ANTHROPIC:
        return Support.unsupported(_ANTHROPIC)
    if mode is Mode.TOOL:
        return Support.unsupported(_TOOL)
    if mode is Mode.PROMPTED:
        return Support.unsupported(_PROMPTED)
    entry = "run(agent, prompt, {stream: true}), events read to the end" if variant == Variant.STREAM else "run()"
    return Support.builtin(f"{_NATIVE[protocol]}; {entry}; result.finalOutput parsed by zod (agent.mjs:549-557)")


class OpenAIAgentsJsAdapter(NodeAdapter):
    name: ClassVar[str] = "openai-agents-js"
    distribution: ClassVar[str] = "@openai/agents"
    """The npm package (there is no Python distribution)."""
    npm_package: ClassVar[str] = "@openai/agents"
    driver: ClassVar[str] = "adapters/openai_agents_js/driver.mjs"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, JS_VARIANTS, _support)
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4
