"""Google ADK (google-adk), in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`GoogleAdkAdapter`), ``LlmAgent(output_schema=...)`` on
  LiteLlm through a Runner, every mode x protocol x variant ADK can express and why not the rest;
  it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of ADK's own environment;
- ``own.py``: the binding for a user's own ``LlmAgent``, in the user's interpreter (where their
  project installed google-adk);
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock (google-adk
  2.13.0 conflicts with the harness's pins: bench.sdk.environment);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.google_adk.adapter:GoogleAdkAdapter",
    binding="adapters.google_adk.own:GoogleAdkBinding",
    agent_packages=("google",),
    agents="google.adk.agents.LlmAgent",
)
