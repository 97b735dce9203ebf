"""The DSPy adapter: ``dspy.Predict`` on a typed signature, under the ChatAdapter and the JSONAdapter.

dspy 3.4.1 runs in an environment of its own, locked by ``environment.txt`` (``Adapter.environment``,
bench.sdk.environment): this module declares the cells and imports no SDK; ``calls.py`` imports
dspy and runs them, in the worker only.

The signature is the task's type spelled the way DSPy types an answer: one input field, the prompt,
and one typed output field per field of the task's model, so the answer DSPy parses is the task's
JSON object (JSONAdapter.parse keeps the keys that are output fields and casts each with
``parse_value``: adapters/json_adapter.py:140-180). What reaches the caller is the ``Prediction``'s
fields as a dict, which the harness holds against the type.

- prompted (``dspy.ChatAdapter()``, DSPy's default adapter) is ``unsupported`` here: it asks for
  the answer under ``[[ ## field ## ]]`` headers, which the local provider never writes (it answers
  a prompted request with the task's JSON object, as a model asked for JSON would), so every
  ChatAdapter cell's first reply would fail the parse and the cell would measure the JSONAdapter
  fall-back (adapters/chat_adapter.py:96-112), not the scenario: a ``valid`` answer would read
  ``recovered`` after 2 calls. Measuring it needs the provider to answer in DSPy's field headers;
- native, ``default``: ``dspy.JSONAdapter()``, which asks for a JSON schema response format when the
  LM supports one and ``json_object`` otherwise (adapters/json_adapter.py:56-69).

The LM is ``dspy.LM(..., cache=False)`` and the worker turns DSPy's memory and disk caches off
(``dspy.configure_cache``), so every cell reaches the provider. adapters/dspy/research.md has the
source lines.
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

DSPY_ADAPTERS: dict[tuple[Mode, Variant | str], str] = {
    (Mode.NATIVE, Variant.DEFAULT): "JSONAdapter()",
}
"""The DSPy adapter each (mode, variant) cell runs ``Predict`` under."""

_UNSUPPORTED: dict[Mode | Variant | str, str] = {
    Mode.PROMPTED: (
        "dspy.ChatAdapter asks for the answer under [[ ## field ## ]] headers, which the local provider does "
        "not write (it answers in the task's JSON): each cell would measure the JSONAdapter fall-back "
        "(adapters/chat_adapter.py:96-112), not the scenario; not measured until the provider speaks that format"
    ),
    Mode.TOOL: (
        "DSPy asks for a signature's outputs in the reply's text (ChatAdapter field headers) or as a JSON "
        "object (JSONAdapter response_format): native function calling carries only dspy.ToolCalls fields "
        "(adapters/base.py use_native_function_calling), never the answer itself"
    ),
    Variant.HARDENED: (
        "Predict has no retry budget of its own: a parse failure is raised after the adapter (and the "
        "ChatAdapter's one JSON fall-back, adapters/chat_adapter.py:96-112); re-asking is dspy.Refine / "
        "dspy.BestOfN, a module around a reward function, not measured here yet"
    ),
    Variant.STREAM: (
        "dspy.streamify streams field chunks to a listener while Predict still parses the whole reply at its "
        "end (clients/lm.py _get_stream_completion_fn); not measured here yet"
    ),
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """A cell for each adapter of :data:`DSPY_ADAPTERS`, on each of DSPy's three protocols; the rest
    unsupported with the reason (tool mode once per protocol)."""
    adapter = DSPY_ADAPTERS.get((mode, variant))
    if adapter is not None:
        return Support.builtin(f"dspy.Predict(signature) under dspy.{adapter}; {_LM[protocol]}, cache=False")
    if mode in (Mode.TOOL, Mode.PROMPTED):
        return Support.unsupported(_UNSUPPORTED[mode]) if variant == Variant.DEFAULT else None
    reason = _UNSUPPORTED.get(variant)
    return Support.unsupported(reason) if reason is not None else None


_LM = {
    Protocol.CHAT: 'dspy.LM("openai/<model>", api_base=...)',
    Protocol.RESPONSES: 'dspy.LM("openai/<model>", model_type="responses", api_base=...)',
    Protocol.ANTHROPIC: 'dspy.LM("anthropic/<model>", api_base=...)',
}


class DSPyAdapter(Adapter):
    """dspy 3.4.1 in its own environment: ``dspy.Predict`` under ``dspy.context(lm=..., adapter=...)``."""

    name: ClassVar[str] = "dspy"
    distribution: ClassVar[str] = "dspy"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "dspy"
    preload: ClassVar[tuple[str, ...]] = ("adapters.dspy.calls",)
    """Imports dspy (and, through it, litellm) before the worker reports ready."""
    supported_releases: ClassVar[str] = ">=3.0"
    time_limit_s: ClassVar[float] = 20.0
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        return (
            "dspy.Predict answers one signature per call and runs no tools; a tool loop is dspy.ReAct, "
            "a module of its own, not measured here yet"
        )

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the dspy environment's worker; ``calls`` imports the SDK."""
        from adapters.dspy.calls import run

        return await run(cell, task, endpoint, chat=cell.mode is Mode.PROMPTED)
