"""The Claude Agent SDK, both faces, in one folder.

- ``adapter.py``: the built-in cells (:class:`ClaudeAgentSdkAdapter`), every mode x protocol x variant the
  SDK can express, and why it cannot express the rest;
- ``own.py``: the binding that drives a user's own agent object (:class:`ClaudeBinding`);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's one entry point names (pyproject.toml). This module imports no
SDK, so reading it never fails for an SDK that is not installed.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.claude_agent_sdk.adapter:ClaudeAgentSdkAdapter",
    binding="adapters.claude_agent_sdk.own:ClaudeBinding",
    agent_packages=("claude_agent_sdk",),
    agents="claude_agent_sdk.ClaudeAgentOptions",
)
