"""LlamaIndex, in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`LlamaIndexAdapter`), the function-calling program,
  ``structured_predict`` and the text-completion program on each protocol, and why the rest
  cannot run; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of LlamaIndex's own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
program yet: like Instructor's, it lives in the user's interpreter, and driving it in this
environment needs their project installed there.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.llama_index.adapter:LlamaIndexAdapter")
