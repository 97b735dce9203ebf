"""Instructor, in one folder, in an environment of its own.

- ``adapter.py``: the built-in cells (:class:`InstructorAdapter`), every mode x protocol x variant
  Instructor's registry serves, and why it cannot serve the rest; it imports no SDK;
- ``calls.py``: the SDK calls, imported only in the worker of Instructor's own environment;
- ``environment.in`` / ``environment.txt``: what that environment installs, and its lock (instructor
  1.17.0 conflicts with the harness's pins: bench.sdk.environment);
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
Instructor client yet: a user's client lives in the user's interpreter, and driving it in this
environment needs their project installed there (the release path's ``build_with``).
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.instructor.adapter:InstructorAdapter")
