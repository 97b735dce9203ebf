"""AutoGen AgentChat (``autogen-agentchat``), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`AutogenAdapter`), every mode x protocol x variant
  ``AssistantAgent(output_content_type=...)`` can express on its OpenAI and Anthropic model clients,
  and why it cannot express the rest; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of its own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
``AssistantAgent`` yet (research.md, "A user's own agent").
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.autogen_agentchat.adapter:AutogenAdapter")
