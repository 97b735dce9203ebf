"""The Mirascope adapter: its call decorator, ``@llm.call(model_id, format=llm.format(Model,
mode=...))`` on an async prompt function, ``response.parse()`` on what comes back.

mirascope 2.8.2 cannot be installed beside the harness's pins (its openai extra wants openai<3,
its anthropic extra anthropic<1: environment.in), so it runs in an environment of its own, locked
by ``environment.txt`` (``Adapter.environment``, bench.sdk.environment): this module declares the
cells and imports no SDK; ``calls.py`` imports mirascope and runs them, in the worker only.

Each Mirascope formatting mode is the bench mode it sends (formatting/types.py ``FormattingMode``;
research.md has the source lines, paths under site-packages/mirascope/llm):

- tool: ``mode="tool"``, a hidden ``__mirascope_formatted_output_tool__`` forced by tool_choice
  (providers/openai/completions/_utils/encode.py:419-429, responses/_utils/encode.py:403,
  anthropic/_utils/encode.py:512-521);
- native: ``mode="strict"``, ``response_format`` json_schema strict on Chat Completions
  (completions encode.py:411-418), ``text.format`` json_schema on Responses (responses encode.py:401),
  the structured-outputs beta's ``output_format`` on Anthropic (anthropic/provider.py ``_should_use_beta``,
  beta_encode.py:278-290);
- prompted: ``mode="json"``, the schema in the system prompt, plus ``json_object`` on the OpenAI
  protocols (completions encode.py:430-431, responses encode.py:425-428); Anthropic has none;
- variant ``auto``: the bare type, ``format=Model``: Mirascope picks strict where the model
  supports it (gpt-4o-mini and claude-sonnet-4-6 both do), so it is a native cell.

Model ids name the API: ``openai/<model>:completions`` and ``openai/<model>:responses`` (the
OpenAI provider routes on the suffix, providers/openai/provider.py:52-94), ``anthropic/<model>``.

Variants: ``default`` is the decorated call and ``response.parse()`` (no retry of any kind beyond
the official client's own); ``hardened`` is Mirascope's two documented layers: ``@llm.retry()``
(transient API errors, its defaults: 3 retries, backoff from 0.5 s: retries/retry_config.py:19-50)
and ``response.validate(max_retries=2)``, which resumes the conversation with the parse error
(responses/response.py:244-284), on the type with a model validator raising the task's check;
``stream`` is ``call.stream()``, ``structured_stream()`` read to its end, then ``parse()``.
"""

from __future__ import annotations

from typing import ClassVar

from adapters.mirascope.settings import FORMAT_MODES, HARDENED_VALIDATE_RETRIES, MODEL_IDS
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

_WIRE: dict[tuple[Mode, Protocol], str] = {
    (Mode.TOOL, Protocol.CHAT): "the format tool forced by tool_choice",
    (Mode.TOOL, Protocol.RESPONSES): "the format tool forced by tool_choice",
    (Mode.TOOL, Protocol.ANTHROPIC): "the format tool forced by tool_choice",
    (Mode.NATIVE, Protocol.CHAT): "response_format json_schema strict",
    (Mode.NATIVE, Protocol.RESPONSES): "text.format json_schema strict",
    (Mode.NATIVE, Protocol.ANTHROPIC): "beta.messages.parse(output_format=Model), the structured-outputs beta",
    (Mode.PROMPTED, Protocol.CHAT): "the schema in the system prompt, response_format json_object",
    (Mode.PROMPTED, Protocol.RESPONSES): "the schema in the system prompt, text.format json_object",
    (Mode.PROMPTED, Protocol.ANTHROPIC): "the schema in the system prompt (Anthropic has no JSON mode)",
}

_VARIANT_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "await call(); response.parse()",
    Variant.HARDENED: (
        f"@llm.retry() over the call; response.validate(max_retries={HARDENED_VALIDATE_RETRIES}) on Model with a "
        "model_validator raising task.check"
    ),
    Variant.STREAM: "await call.stream(); structured_stream() to its end; response.parse()",
    Variant.AUTO: "await call(); response.parse()",
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """Every formatting mode on every protocol, in each variant; ``auto`` (the bare type) where
    Mirascope's own choice lands: strict, a native cell."""
    model = MODEL_IDS[protocol].format(model="<model>")
    if variant == Variant.AUTO:
        if mode is not Mode.NATIVE:
            return None
        return Support.builtin(
            f"@llm.call('{model}', format=Model): the provider's default mode, strict "
            f"({_WIRE[mode, protocol]}); {_VARIANT_NOTES[variant]}"
        )
    declaration = f"@llm.call('{model}', format=llm.format(Model, mode='{FORMAT_MODES[mode]}'))"
    return Support.builtin(f"{declaration}: {_WIRE[mode, protocol]}; {_VARIANT_NOTES[variant]}")


class MirascopeAdapter(Adapter):
    """mirascope 2.8.2 in its own environment: ``@llm.call(..., format=...)`` + ``response.parse()``."""

    name: ClassVar[str] = "mirascope"
    distribution: ClassVar[str] = "mirascope"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, (*VARIANTS, Variant.AUTO), _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "mirascope[openai,anthropic]"
    preload: ClassVar[tuple[str, ...]] = ("adapters.mirascope.calls",)
    """Imports mirascope.llm (and with it openai and anthropic) before the worker reports ready."""
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=2.0"
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = (
        ReleaseNeed(
            "2.2", "@llm.retry and response.validate (mirascope/llm/retries, added in 2.2.0)", variant=Variant.HARDENED
        ),
    )
    time_limit_s: ClassVar[float] = 30.0
    """Above the hardened cells' longest wait: ``@llm.retry()``'s backoff (0.5 + 1 + 2 s) over the
    official clients' own retries (each up to 8 s) on a persistent 429 or 5xx."""
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the mirascope environment's worker; ``calls`` imports the SDK."""
        from adapters.mirascope.calls import run

        return await run(cell, task, endpoint)
