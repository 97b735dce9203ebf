"""Agno, both faces, in one folder, its built-in cells in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`AgnoAdapter`), every mode x protocol x variant
  ``Agent(output_schema=...)`` can express on ``OpenAIChat``, ``OpenAIResponses`` and ``Claude``,
  and why it cannot express the rest; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of agno's own environment;
- ``own.py``: the binding for a user's own ``agno.agent.Agent``, run in the user's interpreter
  (where their agno is installed);
- ``environment.in`` / ``environment.txt``: what agno's environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). This module imports no SDK.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.agno.adapter:AgnoAdapter",
    binding="adapters.agno.own:AgnoBinding",
    agent_packages=("agno",),
    agents="agno.agent.Agent",
)
