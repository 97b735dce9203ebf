"""The Instructor adapter: ``instructor.from_openai`` / ``from_anthropic`` in each mode its docs list.

instructor 1.17.0 cannot be installed beside the harness's pins (it wants rich<15 and jiter<0.15:
environment.in), so it runs in an environment of its own, locked by ``environment.txt``
(``Adapter.environment``, bench.sdk.environment): this module declares the cells and imports no
SDK, so the parent process plans them without instructor; ``calls.py`` imports instructor and runs
them, in the worker only.

Each Instructor mode is the bench mode it sends (v2/core/mode.py:19-29; the providers' registered
modes, v2/core/registry.py ``get_modes_for_provider``):

- tool: ``Mode.TOOLS`` on Chat Completions and on Anthropic Messages, ``Mode.RESPONSES_TOOLS`` on
  Responses (``TOOLS_STRICT`` is deprecated and normalised to ``TOOLS``, so it is no cell of its own);
- native: ``Mode.JSON_SCHEMA`` on Chat Completions and Anthropic (Responses has only the tools mode);
- prompted: ``Mode.JSON`` (the schema in the prompt) on both, and ``Mode.MD_JSON`` (a fenced answer
  parsed out of the text) on Chat Completions, its own variant ``md_json``.

Variants: ``default`` is ``client.create(response_model=Model)`` with ``max_retries`` left at its
default of 3, that is 4 attempts (v2/core/client.py:229, v2/core/retry.py:571); ``hardened`` adds
the documented validation pattern, a model validator raising the task's check, so a wrong answer
is a ``ValidationError`` fed back as a retry like any other; ``stream`` is ``create_partial``, the
last partial object kept. adapters/instructor/research.md has the source lines.
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
    Support,
    SupportTable,
    grid,
)

MD_JSON = Variant.MD_JSON
"""The variant of ``Mode.MD_JSON``: prompted chat only, the default budget."""

DEFAULT_MAX_RETRIES = 3
"""``create``'s default (v2/core/client.py:229): ``stop_after_attempt(3 + 1)`` (v2/core/retry.py:571)."""

INSTRUCTOR_MODES: dict[tuple[Mode, Protocol], str] = {
    (Mode.TOOL, Protocol.CHAT): "TOOLS",
    (Mode.TOOL, Protocol.RESPONSES): "RESPONSES_TOOLS",
    (Mode.TOOL, Protocol.ANTHROPIC): "TOOLS",
    (Mode.NATIVE, Protocol.CHAT): "JSON_SCHEMA",
    (Mode.NATIVE, Protocol.ANTHROPIC): "JSON_SCHEMA",
    (Mode.PROMPTED, Protocol.CHAT): "JSON",
    (Mode.PROMPTED, Protocol.ANTHROPIC): "JSON",
}
"""The ``instructor.Mode`` name of each (mode, protocol) cell the registry serves."""

_FACTORY = {Protocol.CHAT: "from_openai", Protocol.RESPONSES: "from_openai", Protocol.ANTHROPIC: "from_anthropic"}

_VARIANT_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: f"client.create(response_model=Model); max_retries default {DEFAULT_MAX_RETRIES}",
    Variant.HARDENED: (
        f"client.create(response_model=Model with a model_validator raising task.check); max_retries "
        f"{DEFAULT_MAX_RETRIES}"
    ),
    Variant.STREAM: f"client.create_partial(response_model=Model), the last partial kept; max_retries "
    f"default {DEFAULT_MAX_RETRIES}",
    MD_JSON: f"client.create(response_model=Model); max_retries default {DEFAULT_MAX_RETRIES}",
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """A cell for each mode the provider's registry serves, in each variant; ``md_json`` only where
    ``Mode.MD_JSON`` is a prompted mode of the provider (OpenAI's registry, not Anthropic's)."""
    if variant == MD_JSON:
        if mode is not Mode.PROMPTED or protocol is Protocol.RESPONSES:
            return None
        if protocol is Protocol.ANTHROPIC:
            return Support.unsupported("Mode.MD_JSON is not registered for Anthropic (v2/providers/anthropic)")
        return Support.builtin(f"instructor.from_openai(client, mode=Mode.MD_JSON); {_VARIANT_NOTES[MD_JSON]}")
    name = INSTRUCTOR_MODES.get((mode, protocol))
    if name is None:
        if variant != Variant.DEFAULT:
            return None
        return Support.unsupported(
            "Responses has one Instructor mode, RESPONSES_TOOLS (tool calls): the registry serves no JSON_SCHEMA, "
            "JSON or MD_JSON on it (v2/core/registry.py get_modes_for_provider)"
        )
    return Support.builtin(f"instructor.{_FACTORY[protocol]}(client, mode=Mode.{name}); {_VARIANT_NOTES[variant]}")


class InstructorAdapter(Adapter):
    """instructor 1.17.0 in its own environment: ``from_openai`` / ``from_anthropic`` + ``create``."""

    name: ClassVar[str] = "instructor"
    distribution: ClassVar[str] = "instructor"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, (*VARIANTS, MD_JSON), _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "instructor[anthropic]"
    preload: ClassVar[tuple[str, ...]] = ("adapters.instructor.calls",)
    """Imports instructor, openai and anthropic before the worker reports ready."""
    supported_releases: ClassVar[str] = ">=1.10"
    time_limit_s: ClassVar[float] = 10.0
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        return (
            "Instructor extracts one structured answer per create call and runs no tools: a function tool's "
            "call and result are the caller's loop"
        )

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the instructor environment's worker; ``calls`` imports the SDK."""
        from adapters.instructor.calls import run

        mode_name = "MD_JSON" if cell.variant == MD_JSON else INSTRUCTOR_MODES[cell.mode, cell.protocol]
        return await run(cell, task, endpoint, mode_name)
