"""The LlamaIndex adapter: the function-calling program, ``structured_predict`` and the
text-completion program with its output parser, on llama-index-core 0.14.25.

llama-index-core and its LLM packages pin their own openai (2.x) and anthropic clients against the
harness's openai 3.57.0 (constraints.txt), so LlamaIndex runs in an environment of its own, locked
by ``environment.txt`` (``Adapter.environment``, bench.sdk.environment): this module declares the
cells and imports no SDK; ``calls.py`` imports LlamaIndex and runs them, in the worker only.

Each bench mode is the LlamaIndex path a user writes for it (adapters/llama_index/research.md):

- tool: ``FunctionCallingProgram`` (what ``structured_predict`` picks for a function-calling LLM
  under ``PydanticProgramMode.FUNCTION``: core/program/utils.py:98-106), on ``OpenAI``,
  ``OpenAIResponses`` and ``Anthropic``;
- native: ``llm.astructured_predict``, which each LLM class routes to its provider's schema
  option: Chat Completions ``response_format`` json_schema (llms/openai/base.py:1125-1170),
  Responses ``responses.parse(text_format=...)`` (llms/openai/responses.py:994-1020), Anthropic
  ``beta.messages.parse(output_format=...)`` (llms/anthropic/base.py:1112-1140);
  ``as_structured_llm`` calls the same method (core/llms/structured_llm.py:122);
- prompted: ``LLMTextCompletionProgram`` with ``PydanticOutputParser`` (the schema in the prompt,
  the JSON cut out of the text: core/output_parsers/pydantic.py:60-65).

Variants: ``default``; ``hardened``, the output class with a model validator raising the task's
check (LlamaIndex has no retry loop, so it turns ``wrong`` into a raised error); ``stream``, the
``astream_call`` / ``astream_structured_predict`` partials read to the last.
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

_LLM = {Protocol.CHAT: "OpenAI", Protocol.RESPONSES: "OpenAIResponses", Protocol.ANTHROPIC: "Anthropic"}

_CALL = {
    Mode.TOOL: ("FunctionCallingProgram.from_defaults(output_cls=Model, prompt, llm).acall()", "astream_call()"),
    Mode.NATIVE: ("llm.astructured_predict(Model, prompt)", "llm.astream_structured_predict(Model, prompt)"),
    Mode.PROMPTED: (
        "LLMTextCompletionProgram.from_defaults(output_parser=PydanticOutputParser(Model), prompt, llm).acall()",
        "astream_call()",
    ),
}

_NO_NATIVE_STREAM = {
    Protocol.RESPONSES: (
        "OpenAIResponses.astream_structured_predict sends no text_format: it forces tool_choice='required' and "
        "streams the function-calling program (llms/openai/responses.py:1043-1057), the tool cell's stream"
    ),
    Protocol.ANTHROPIC: (
        "Anthropic.astream_structured_predict streams nothing: one non-streamed beta.messages.parse call, its "
        "parsed output yielded once (llms/anthropic/base.py:1186-1215)"
    ),
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    if mode is Mode.NATIVE and variant == Variant.STREAM and protocol in _NO_NATIVE_STREAM:
        return Support.unsupported(_NO_NATIVE_STREAM[protocol])
    call, streamed = _CALL[mode]
    if variant == Variant.STREAM:
        call = f"{call.rsplit('.', 1)[0]}.{streamed}" if mode is not Mode.NATIVE else streamed
    checked = "Model with a model_validator raising task.check" if variant == Variant.HARDENED else "Model"
    return Support.builtin(f"{_LLM[protocol]}(...) + {call}; output_cls {checked}, no retry")


class LlamaIndexAdapter(Adapter):
    """llama-index-core 0.14.25 in its own environment, with llama-index-llms-openai and -anthropic."""

    name: ClassVar[str] = "llama-index"
    distribution: ClassVar[str] = "llama-index-core"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    environment: ClassVar[str] = "environment.txt"
    requirement: ClassVar[str] = "llama-index-core"
    preload: ClassVar[tuple[str, ...]] = ("adapters.llama_index.calls",)
    """Imports llama_index.core and both LLM packages before the worker reports ready."""
    supported_releases: ClassVar[str] = ">=0.14"
    time_limit_s: ClassVar[float] = 30.0
    """Anthropic's LLM retries a failed request 10 times by default (llms/anthropic/base.py:225)."""
    max_concurrency: ClassVar[int] = 4

    def tool_support(self, cell: Cell) -> str | None:
        return (
            "A LlamaIndex program extracts one structured answer per call and runs no tools of the caller's: "
            "its only tool is the output class itself (core/program/function_program.py:37-50)"
        )

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run in the llama_index environment's worker; ``calls`` imports the SDK."""
        from adapters.llama_index.calls import run

        return await run(cell, task, endpoint)
