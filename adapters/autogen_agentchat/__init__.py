"""AutoGen AgentChat (``autogen-agentchat``), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`AutogenAdapter`), every mode x protocol x variant
  ``AssistantAgent(output_content_type=...)`` can express on its OpenAI and Anthropic model clients,
  and why it cannot express the rest; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of its own environment (and by ``own.py``);
- ``own.py``: the binding for a user's own ``AssistantAgent`` from their factory, run in the user's
  interpreter (where their autogen is installed);
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). This module imports no SDK.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.autogen_agentchat.adapter:AutogenAdapter",
    binding="adapters.autogen_agentchat.own:AutogenBinding",
    agent_packages=("autogen_agentchat",),
    agents="autogen_agentchat.agents.AssistantAgent (from a factory)",
    handle_method="autogen",
)
