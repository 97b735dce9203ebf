"""The official ``openai`` client alone, no framework: its own structured-output helpers
(``chat.completions.parse`` / ``stream`` and ``responses.parse`` / ``stream`` with a pydantic
type), the baseline every framework must beat.

- ``adapter.py``: the built-in cells (:class:`OpenAIClientAdapter`), every mode x protocol x variant,
  and why the client cannot express the rest;
- ``research.md``: the client source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). There is no binding for a user's
own object: the client holds no output type, mode or budget of the user's (they are arguments of
each call), so a user's ``AsyncOpenAI`` says nothing the built-in cells do not already measure.
This module imports no SDK.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(adapter="adapters.openai_client.adapter:OpenAIClientAdapter")
