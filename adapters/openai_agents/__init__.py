"""The OpenAI Agents SDK, both faces, in one folder.

- ``adapter.py``: the built-in cells (:class:`OpenAIAgentsAdapter`), every mode x protocol x variant the
  SDK can express, and why it cannot express the rest;
- ``own.py``: the binding that drives a user's own agent object (:class:`OpenAIAgentsBinding`);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's one entry point names (pyproject.toml). This module imports no
SDK, so reading it never fails for an SDK that is not installed.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.openai_agents.adapter:OpenAIAgentsAdapter",
    binding="adapters.openai_agents.own:OpenAIAgentsBinding",
    agent_packages=("agents",),
    agents="agents.Agent (openai-agents)",
)
