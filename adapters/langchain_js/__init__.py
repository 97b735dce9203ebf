"""LangChain.js (npm ``@langchain/core`` with ``@langchain/openai`` and ``@langchain/anthropic``,
TypeScript), driven in a Node worker (bench.node).

- ``adapter.py``: the cells (:class:`LangChainJsAdapter`), each ``withStructuredOutput`` method
  on each chat model, and why the rest are not cells;
- ``driver.mjs``: the Node side of each cell (``model.withStructuredOutput(zodSchema, {method})``,
  invoked, streamed or under ``withRetry``), run by ``node/worker.mjs``;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's entry point names (pyproject.toml). No binding: a user's own
TypeScript chain is not driven yet (as for adapters/ai).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.langchain_js.adapter:LangChainJsAdapter")
