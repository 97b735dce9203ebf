"""CrewAI, in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`CrewAIAdapter`), a one-agent crew whose ``Task`` has
  ``output_pydantic`` (or ``output_json``), on CrewAI's ``LLM`` class pointed at the local provider,
  and why the rest of the grid cannot be expressed; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of CrewAI's own environment (it turns
  CrewAI's telemetry and tracing off before importing it);
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock (crewai
  1.15.30 conflicts with the harness's pins: bench.sdk.environment);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
Crew yet: a user's crew lives in the user's interpreter, and the harness's interpreter cannot import
crewai (its pins conflict), so driving it needs the user's project loaded in this environment's
worker (research.md, "A user's own crew").
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.crewai.adapter:CrewAIAdapter")
