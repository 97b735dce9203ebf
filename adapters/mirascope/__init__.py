"""Mirascope (``mirascope`` 2.x, its ``llm`` module), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`MirascopeAdapter`), every formatting mode x protocol x
  variant its OpenAI and Anthropic providers can express; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of its own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock (mirascope
  2.8.2's extras want openai<3 and anthropic<1, against the harness's pins: bench.sdk.environment);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
decorated call: ``bench run --agent`` loads the agent in the harness's interpreter first, where
mirascope cannot be installed (the same conflict), so a user's ``Call`` object cannot be imported
there (agno's binding works because agno installs beside the harness's pins).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.mirascope.adapter:MirascopeAdapter")
