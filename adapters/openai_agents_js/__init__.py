"""The OpenAI Agents SDK for TypeScript (npm ``@openai/agents``), driven in a Node worker (bench.node).

- ``adapter.py``: the cells (:class:`OpenAIAgentsJsAdapter`) and why the rest are not;
- ``driver.mjs``: the Node side of each cell (an ``Agent`` with a zod ``outputType``, ``run()``);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's entry point names (pyproject.toml).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.openai_agents_js.adapter:OpenAIAgentsJsAdapter")
