"""DSPy, in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`DSPyAdapter`), ``dspy.Predict`` on a typed signature
  under the ChatAdapter (with its fall-back to JSON) and the JSONAdapter, and why it
  cannot serve the rest; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of DSPy's own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own DSPy
module yet: the module lives in the user's interpreter, and driving it in this environment needs
their project installed there (the release path's ``build_with``), as for Instructor.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.dspy.adapter:DSPyAdapter")
