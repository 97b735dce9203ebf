"""The agno adapter: ``Agent(model=..., output_schema=Model).arun(prompt)`` on agno's OpenAI
(``OpenAIChat``, ``OpenAIResponses``) and Anthropic (``Claude``) models, in its own environment.

agno runs in an environment of its own, locked by ``environment.txt`` (``Adapter.environment``,
bench.sdk.environment): this module declares the cells and imports no SDK; ``calls.py`` imports
agno and runs them, in the worker only. Paths below are under that environment's
site-packages/agno (agno 3.1.10); research.md has the lines.

Each bench mode is the agent's structured-outputs switch (agent/_response.py:857-897):

- native: the switch on, agno's default (``use_json_mode=False``; ``structured_outputs`` left
  None): the schema goes to the model's own structured-output parameter: Chat Completions
  ``response_format`` json_schema with ``strict=True`` (models/openai/chat.py:228-240), Responses
  ``text.format`` json_schema strict (models/openai/responses.py:380-390), Anthropic
  ``output_config.format`` json_schema (models/anthropic/claude.py:335-377, 702-713) on a model id it lists as
  supporting it (:224-235);
- prompted: the switch off, ``use_json_mode=True``: ``response_format={"type": "json_object"}``
  and the JSON schema in the system message (agent/_messages.py:1184-1194); Claude drops the
  json_object format (claude.py:371-374), so it is the prompt alone;
- tool: none. agno has no output tool: ``output_schema`` reaches the model only as a response
  format or as a prompt.

Variants: ``default`` is ``Agent(output_schema=Model)`` as the docs show it (``retries=0``);
``hardened`` adds the agent's documented run retries (``retries=2``), which re-run the whole
model turn when it raises (agent/_run.py:1570, 1898-1908), with ``delay_between_retries=0`` so a
cell never sleeps the default second; ``stream`` is ``arun(prompt, stream=True, yield_run_output=True)``,
the final ``RunOutput``'s content kept (agent/_run.py:2541-2542), or the ``RunErrorEvent``'s
(:2668-2690). agno never raises for an answer that does not fit: it logs
a warning and hands the raw string on (agent/_response.py:904-938), and it catches a model error
and returns a ``RunOutput`` with ``status=ERROR`` and the error text as its content
(agent/_run.py:1898-1925): what reached the caller is that content, recorded as it is.
"""

from __future__ import annotations

from typing import ClassVar

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import (
    MODES,
    PROTOCOLS,
    VARIANTS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    ReleaseNeed,
    Support,
    SupportTable,
    grid,
)

HARDENED_RETRIES = 2
"""The hardened cells' ``Agent(retries=2)``: three runs in all when the model call raises."""

MODEL_CLASSES = {
    Protocol.CHAT: "OpenAIChat",
    Protocol.RESPONSES: "OpenAIResponses",
    Protocol.ANTHROPIC: "Claude",
}
"""agno's model class for each protocol (agno.models.openai, agno.models.anthropic)."""

_MODE_NOTES = {
    Mode.NATIVE: "Agent(output_schema=Model): the model's structured-output parameter (structured outputs on)",
    Mode.PROMPTED: "Agent(output_schema=Model, use_json_mode=True): json_object and the schema in the system message",
}

_VARIANT_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "arun(prompt); retries=0 (the default)",
    Variant.HARDENED: f"arun(prompt); retries={HARDENED_RETRIES}, delay_between_retries=0",
    Variant.STREAM: "arun(prompt, stream=True, yield_run_output=True), the final RunOutput's content",
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """What ``Agent(output_schema=...)`` can express on each of agno's three model classes."""
    if mode is Mode.TOOL:
        return Support.unsupported(
            "agno has no output tool: output_schema reaches the model only as its response format or as a "
            "JSON prompt (agent/_response.py:857-897, agent/_messages.py:1184-1194)"
        )
    model = MODEL_CLASSES[protocol]
    return Support.builtin(f"{model}; {_MODE_NOTES[mode]}; {_VARIANT_NOTES[variant]}")


class AgnoAdapter(Adapter):
    """agno 3.1.10 in its own environment: ``Agent(output_schema=...).arun``."""

    name: ClassVar[str] = "agno"
    distribution: ClassVar[str] = "agno"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "agno[openai,anthropic]"
    preload: ClassVar[tuple[str, ...]] = ("adapters.agno.calls",)
    """Imports agno, its models, openai and anthropic before the worker reports ready."""
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=2.0"
    """2.0 renamed ``response_model`` to ``output_schema`` (agno 2.0.0's agent/agent.py:286)."""
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = (
        ReleaseNeed("3.0", "arun(stream=True, yield_run_output=True)", variant=Variant.STREAM),
    )
    """``yield_run_output`` is in 3.0.0's ``arun``, not in 2.0.0's (the releases in between unread)."""
    time_limit_s: ClassVar[float] = 15.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the agno environment's worker; ``calls`` imports the SDK."""
        from adapters.agno.calls import run

        return await run(cell, task, endpoint, HARDENED_RETRIES if cell.variant == Variant.HARDENED else 0)
