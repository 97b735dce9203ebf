"""LlamaIndex's calls, as a user writes them: imported only in the llama_index environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

One LlamaIndex LLM per cell (``OpenAI``, ``OpenAIResponses`` or ``Anthropic`` from the
llama-index-llms packages), built on the cell's endpoint with explicit ``api_base`` / ``base_url``
and ``api_key``, every other setting the package's default; then the call the cell's mode names:

- tool: ``FunctionCallingProgram.from_defaults(output_cls, prompt, llm)``, the function-calling
  program (``acall``, or ``astream_call`` read to its end);
- native: ``llm.astructured_predict(output_cls, prompt)`` (``astream_structured_predict``), the
  structured output each LLM class routes to its provider's schema option;
- prompted: ``LLMTextCompletionProgram.from_defaults(output_parser=PydanticOutputParser(output_cls),
  prompt, llm)``, the text-completion program and its output parser.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.output_parsers import PydanticOutputParser
from llama_index.core.program import FunctionCallingProgram, LLMTextCompletionProgram
from llama_index.core.prompts import PromptTemplate
from llama_index.llms.anthropic import Anthropic
from llama_index.llms.openai import OpenAI, OpenAIResponses
from pydantic import BaseModel, create_model, model_validator

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint


async def run(cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
    """One structured call of the cell's mode on a fresh LLM; only the SDK call is guarded: what
    LlamaIndex raised reaches the caller as it is."""
    llm = _llm(cell.protocol, endpoint)
    output_cls = _checked(task) if cell.variant == Variant.HARDENED else task.output_model
    # The task's prompt is the template's whole text: braces in it are the template's, so escape them.
    prompt = PromptTemplate(task.prompt.replace("{", "{{").replace("}", "}}"))
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    try:
        if cell.mode is Mode.NATIVE:
            if cell.stream:
                async for partial in await llm.astream_structured_predict(output_cls, prompt):
                    result.output = partial
            else:
                result.output = await llm.astructured_predict(output_cls, prompt)
        else:
            program = _program(cell.mode, output_cls, prompt, llm)
            if cell.stream:
                async for partial in await program.astream_call():
                    result.output = partial
            else:
                result.output = await program.acall()
    except Exception as error:  # LlamaIndex's own: ValueError, ValidationError, the client's APIError...
        result.exception = error
    # No usage: a structured call returns the bare pydantic object, the provider's usage stays in
    # the LLM's raw response, which no program or structured_predict hands back.
    return result


def _llm(protocol: Protocol, endpoint: Endpoint) -> Any:
    if protocol is Protocol.ANTHROPIC:
        return Anthropic(model=endpoint.anthropic_model, base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key)
    kind = OpenAIResponses if protocol is Protocol.RESPONSES else OpenAI
    return kind(model=endpoint.openai_model, api_base=endpoint.openai_base_url, api_key=endpoint.api_key)


def _program(mode: Mode, output_cls: type[BaseModel], prompt: PromptTemplate, llm: Any) -> Any:
    if mode is Mode.TOOL:
        return FunctionCallingProgram.from_defaults(output_cls=output_cls, prompt=prompt, llm=llm)
    parser = PydanticOutputParser(output_cls=output_cls)
    return LLMTextCompletionProgram.from_defaults(output_parser=parser, prompt=prompt, llm=llm)


def _checked(task: Task) -> type[BaseModel]:
    """The hardened cells' output class: the task's type with a model validator raising the task's
    check, pydantic's way to reject a wrong answer (LlamaIndex re-asks nothing: the
    ValidationError is what the call raises). Same name, so the same tool and schema title reach
    the wire."""

    def check(self: BaseModel) -> BaseModel:
        if (reason := task.check(self)) is not None:
            raise ValueError(reason)
        return self

    if (model := _CHECKED.get(task.output_model)) is None:
        validators: dict[str, Any] = {"check": model_validator(mode="after")(check)}
        name = task.output_model.__name__
        model = _CHECKED[task.output_model] = create_model(name, __base__=task.output_model, __validators__=validators)
    return model


_CHECKED: dict[type[BaseModel], type[BaseModel]] = {}
"""One checked model per task type, built once per worker (the task's check is the type's rule)."""
