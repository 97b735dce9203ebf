"""LangChain `create_agent`, both faces, in one folder.

- ``adapter.py``: the built-in cells (:class:`LangChainAdapter`), every mode x protocol x variant the
  SDK can express, and why it cannot express the rest;
- ``own.py``: the binding that drives a user's own agent object (:class:`LangChainBinding`);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the package's one entry point names (pyproject.toml). This module imports no
SDK, so reading it never fails for an SDK that is not installed.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.langchain.adapter:LangChainAdapter",
    binding="adapters.langchain.own:LangChainBinding",
    agent_packages=("langgraph", "langchain"),
    agents="a LangChain create_agent graph (from a factory)",
    handle_method="langchain",
)
