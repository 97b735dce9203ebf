"""Strands Agents (``strands-agents``), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`StrandsAdapter`), every mode x protocol x variant its
  OpenAI, OpenAI Responses and Anthropic model providers can express, and why not the rest; it
  imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of its own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
``strands.Agent`` yet: the user's agent lives in the user's interpreter, and the harness's venv has
no strands (the release path's ``build_with`` would install the user's project beside it).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.strands_agents.adapter:StrandsAdapter")
