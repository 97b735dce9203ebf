"""Agentmaker, both faces, in one folder.

- ``adapter.py``: the built-in cells (:class:`AgentmakerAdapter`), every mode x protocol x variant the
  SDK can express, and why it cannot express the rest;
- ``own.py``: the binding that drives a user's own agent object (:class:`AgentmakerBinding`);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's one entry point names (pyproject.toml). This module imports no
SDK, so reading it never fails for an SDK that is not installed.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.agentmaker.adapter:AgentmakerAdapter",
    binding="adapters.agentmaker.own:AgentmakerBinding",
    agent_packages=("agentmaker",),
    agents="agentmaker.Agent (from a factory)",
    handle_method="agentmaker",
)
