"""Mirascope (``mirascope`` 2.x, its ``llm`` module), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`MirascopeAdapter`), every formatting mode x protocol x
  variant its OpenAI and Anthropic providers can express; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of its own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock (mirascope
  2.8.2's extras want openai<3 and anthropic<1, against the harness's pins: bench.sdk.environment);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
decorated call yet. It would fit as agno's does (``bench run --agent`` loads the user's ``Call`` in
the user's interpreter, where mirascope is installed: its openai<3 and anthropic<1 conflict with
the harness's constraints.txt pins, not with misfit-bench's own requirements, openai>=1.60 and
anthropic>=0.50), driving the user's call under ``llm.register_provider`` for the endpoint.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.mirascope.adapter:MirascopeAdapter")
