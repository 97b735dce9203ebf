"""The official ``anthropic`` client alone, no framework: ``messages.parse`` / ``messages.stream``
with ``output_format=Model`` (its structured-output option) and tool use forced to one tool, the
baseline every framework must beat on Anthropic Messages.

- ``adapter.py``: the built-in cells (:class:`AnthropicClientAdapter`), every mode x protocol x
  variant, and why the client cannot express the rest;
- ``research.md``: the client source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). No binding for a user's own
object: the client holds no output type, mode or budget of the user's (they are arguments of each
call). This module imports no SDK.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.anthropic_client.adapter:AnthropicClientAdapter")
