"""smolagents, in one folder, in the harness's interpreter (its pins fit constraints.txt):

- ``adapter.py``: the built-in cells (:class:`SmolagentsAdapter`), a ``ToolCallingAgent`` on
  ``OpenAIServerModel`` whose final answer is the task's type, and why the rest of the grid is
  unsupported;
- ``answer.py``: the typed ``final_answer`` tool and the final-answer check, as a user writes them;
- ``own.py``: a user's own agent, from their factory on ``model.smolagents()``;
- ``research.md``: the SDK source lines each prediction rests on.

:data:`PLUGIN` is what the one entry point names (pyproject.toml). This module imports no SDK.
"""

from bench.sdk.plugin import SdkPlugin

PLUGIN = SdkPlugin(
    adapter="adapters.smolagents.adapter:SmolagentsAdapter",
    binding="adapters.smolagents.own:SmolagentsBinding",
    agent_packages=("smolagents",),
    agents="smolagents.ToolCallingAgent (from a factory)",
    handle_method="smolagents",
)
