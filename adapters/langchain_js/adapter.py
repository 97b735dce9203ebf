"""LangChain.js (npm ``@langchain/core`` 1.4, ``@langchain/openai`` 1.6, ``@langchain/anthropic``
1.5, ``zod``) adapter: ``withStructuredOutput`` on ``ChatOpenAI`` and ``ChatAnthropic``.

The cells run in a Node worker (:class:`bench.node.adapter.NodeAdapter`); ``driver.mjs`` builds
the chat model once per base URL and calls ``model.withStructuredOutput(zodSchema, {name,
method})`` in the method of the cell's mode: ``functionCalling`` (tool: a forced function or
tool), ``jsonSchema`` (native: ``response_format`` json_schema on OpenAI, ``output_config.format``
on Anthropic) and ``jsonMode`` (prompted: ``response_format`` json_object, the schema sent
nowhere, so the prompt is all the model is told). Default: ``invoke()``; stream: ``stream()``
read to its last chunk; hardened: the Runnable's documented ``withRetry({stopAfterAttempt: 3})``,
which reruns the whole model-and-parser chain on any error. ``ChatOpenAI`` speaks Chat
Completions unless ``useResponsesApi: true`` (responses).

Line references are to the packages under ``node/node_modules/@langchain/`` (research.md).
"""

from __future__ import annotations

from typing import ClassVar

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.node.adapter import NodeAdapter
from bench.sdk.adapter import MODES, PROTOCOLS, VARIANTS, Support, SupportTable, grid

HARDENED_ATTEMPTS = 3
"""``withRetry({stopAfterAttempt})`` of the hardened variant: RunnableRetry's own default
(``maxAttemptNumber = 3``, core ``runnables/base.js`` 836), stated. Mirrored in driver.mjs."""

_METHOD = {
    Mode.TOOL: "functionCalling",
    Mode.NATIVE: "jsonSchema",
    Mode.PROMPTED: "jsonMode",
}
_WIRE = {
    (Mode.TOOL, Protocol.CHAT): "tools + tool_choice function (openai chat_models/base.js:591-625)",
    (Mode.TOOL, Protocol.RESPONSES): (
        "tools + tool_choice function on useResponsesApi (openai chat_models/base.js:591-625)"
    ),
    (Mode.TOOL, Protocol.ANTHROPIC): "a tool + tool_choice {type: tool} (anthropic chat_models.js:1102-1150)",
    (Mode.NATIVE, Protocol.CHAT): "response_format json_schema (openai chat_models/base.js:563-590)",
    (Mode.NATIVE, Protocol.RESPONSES): (
        "response_format json_schema as text.format (openai chat_models/base.js:563-590)"
    ),
    (Mode.NATIVE, Protocol.ANTHROPIC): "outputConfig.format json_schema (anthropic chat_models.js:1088-1101)",
    (Mode.PROMPTED, Protocol.CHAT): "response_format json_object, schema not sent (openai chat_models/base.js:549-562)",
    (Mode.PROMPTED, Protocol.RESPONSES): (
        "response_format json_object as text.format, schema not sent (openai chat_models/base.js:549-562)"
    ),
}
_ENTRY = {
    Variant.DEFAULT: "invoke()",
    Variant.HARDENED: f"withRetry({{stopAfterAttempt: {HARDENED_ATTEMPTS}}}).invoke() (core runnables/base.js:43-51)",
    Variant.STREAM: "stream(), the last chunk kept",
}
_PROMPTED_ANTHROPIC = (
    "unsupported: ChatAnthropic has no jsonMode; it warns and falls back to jsonSchema, the native cell "
    "(anthropic chat_models.js:1084-1087)"
)


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    if mode is Mode.PROMPTED and protocol is Protocol.ANTHROPIC:
        return Support.unsupported(_PROMPTED_ANTHROPIC)
    return Support.builtin(f"withStructuredOutput(zod, {{method: '{_METHOD[mode]}'}}): {_WIRE[mode, protocol]}; "
                           f"{_ENTRY[Variant(variant)]}")  # fmt: skip


class LangChainJsAdapter(NodeAdapter):
    name: ClassVar[str] = "langchain-js"
    distribution: ClassVar[str] = "@langchain/core"
    """The npm package (there is no Python distribution)."""
    npm_package: ClassVar[str] = "@langchain/core"
    driver: ClassVar[str] = "adapters/langchain_js/driver.mjs"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    time_limit_s: ClassVar[float] = 150.0
    """LangChain.js retries a failed model call itself, 6 times by default, waiting 1 s doubling,
    each wait randomised up to 2x (core ``utils/async_caller.js`` 182, 190-198; ``p-retry``
    32, 91-92): up to 126 s of waiting on a persistent 5xx, which is the SDK's behaviour, not a
    stall."""
    max_concurrency: ClassVar[int] = 4
