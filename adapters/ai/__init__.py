"""The Vercel AI SDK (npm ``ai``, TypeScript), driven in a Node worker (bench.node).

- ``adapter.py``: the cells (:class:`AiAdapter`), every mode x protocol x variant the SDK can
  express, and why it cannot express the rest;
- ``driver.mjs``: the Node side of each cell (``generateObject``, ``streamObject``,
  ``generateText`` with ``Output.object``, a zod schema), run by ``node/worker.mjs``;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's entry point names (pyproject.toml). No binding: a user's own
TypeScript agent is not driven yet.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.ai.adapter:AiAdapter")
