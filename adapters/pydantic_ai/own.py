"""A user's Pydantic AI ``Agent``, driven through ``agent.override(model=...)``.

``Agent.override`` is the SDK's documented way to swap the model in tests ("Overriding model via
pytest fixtures", agent/__init__.py:2423-2460): it sets context variables for the duration of the
block, so the user's output type, instructions, retries, output validators, hooks, capabilities
and tools are untouched, and concurrent cells (separate asyncio tasks) do not see each other's
model. The replacement model is the SDK's own class for the protocol the user's model speaks: a
``Model`` instance by its class, a string by its provider prefix the way ``infer_model`` resolves
it (models/__init__.py:3700-3706: ``openai:`` is the Responses model, ``openai-chat:`` Chat
Completions, ``anthropic:`` Messages). It keeps the user's model name (a ``Model``'s
``model_name``, a string's part after ``provider:``), and a ``Model``'s profile and settings:
Pydantic AI decides what the model can do by its profile, which it derives from the name
(native structured output: profiles/anthropic.py:356-377), so only where the requests go changes.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding
from bench.sdk.adapter import AdapterResult, Endpoint, ReportedUsage

try:
    from pydantic_ai import Agent, NativeOutput, PromptedOutput, Tool, ToolOutput
    from pydantic_ai.models import Model
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import RunUsage
except ImportError as e:  # pragma: no cover - exercised only without the extra installed
    raise ImportError("a pydantic-ai agent needs pydantic-ai-slim: pip install 'misfit-bench[pydantic-ai]'") from e

_PREFIXES: dict[str, Protocol] = {
    "openai": Protocol.RESPONSES,
    "openai-responses": Protocol.RESPONSES,
    "openai-chat": Protocol.CHAT,
    "anthropic": Protocol.ANTHROPIC,
}


class PydanticAIBinding(Binding):
    sdk: ClassVar[str] = "pydantic-ai"
    distribution: ClassVar[str] = "pydantic-ai-slim"
    agent_type: ClassVar[type] = Agent

    model_protocols: ClassVar[tuple[tuple[type, Protocol], ...]] = (
        (AnthropicModel, Protocol.ANTHROPIC),
        (OpenAIResponsesModel, Protocol.RESPONSES),
        (OpenAIChatModel, Protocol.CHAT),
    )

    @classmethod
    def protocol_named(cls, model: Any, configured: Protocol | None) -> Protocol | None:
        """A model string by its provider prefix, as ``infer_model`` resolves it."""
        if isinstance(model, str):
            return _PREFIXES.get(model.partition(":")[0])
        return super().protocol_named(model, configured)

    def output(self) -> Any:
        declared = self.agent.output_type
        if isinstance(declared, ToolOutput | NativeOutput | PromptedOutput):
            declared = declared.outputs if isinstance(declared, NativeOutput | PromptedOutput) else declared.output
        if isinstance(declared, list | tuple):
            declared = declared[0] if len(declared) == 1 else declared
        return declared

    def mode(self) -> Mode:
        declared = self.agent.output_type
        if isinstance(declared, NativeOutput):
            return Mode.NATIVE
        if isinstance(declared, PromptedOutput):
            return Mode.PROMPTED
        return Mode.TOOL

    def note(self) -> str:
        return f"the user's pydantic_ai.Agent under agent.override(model={_model_class(self.protocol)})"

    def _tools(self) -> dict[str, Tool[Any]]:
        """The agent's function tools (``Agent(tools=...)``, ``@agent.tool``), by name."""
        return dict(getattr(getattr(self.agent, "_function_toolset", None), "tools", {}) or {})

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        return {name: tool.function_schema.json_schema for name, tool in self._tools().items()}

    def _swapped(self, name: str, tool: Tool[Any]) -> Tool[Any]:
        """A copy of the user's ``Tool`` (its retries, prepare, schema kept) whose function, in
        its function schema too (what the SDK calls), is :meth:`implementation` of its own."""
        wrapped = self.implementation(name, tool.function, tool.takes_ctx)
        if wrapped is tool.function:
            return tool
        swapped = copy.copy(tool)
        swapped.function = wrapped
        swapped.function_schema = dataclasses.replace(tool.function_schema, function=wrapped)
        return swapped

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        """``agent.run`` once inside ``override(model=...)``; ``usage=`` is mutated in place, so
        it still holds the SDK's count when the run raised (agent/__init__.py:1754, 1810-1812).
        Fakes go in through ``override(tools=...)``, the documented test override (the SDK's
        Agent has no copy): the agent's function tools with each faked one replaced by the
        user's stand-in under the same name."""
        agent: Agent[Any, Any] = self.built(endpoint)
        usage = RunUsage()
        result = AdapterResult(details={"model": _model_class(self.protocol)})
        model = _model(self.protocol, endpoint, agent.model)
        overrides: dict[str, Any] = {"model": model}
        if self.swapping():
            tools = [self._swapped(name, tool) for name, tool in self._tools().items() if name not in self.fakes]
            overrides["tools"] = [*tools, *(Tool(self.implementation(n, f), name=n) for n, f in self.fakes.items())]
        with agent.override(**overrides):
            # Closes the HTTP client its provider created (providers/__init__.py:233-251); a model of
            # an older release (1.50.0) is no async context manager, and its client is the provider's.
            async with model if hasattr(type(model), "__aenter__") else contextlib.nullcontext():
                try:
                    run = await agent.run(self.prompt, usage=usage, **self.run_kwargs)
                    result.output = run.output
                except Exception as exc:  # the SDK's own: UnexpectedModelBehavior, ModelHTTPError...
                    result.exception = exc
        result.usage = ReportedUsage(usage.input_tokens, usage.output_tokens)
        result.details["sdk_usage_requests"] = str(usage.requests)
        return result


def _model_class(protocol: Protocol) -> str:
    return {Protocol.CHAT: "OpenAIChatModel", Protocol.RESPONSES: "OpenAIResponsesModel"}.get(
        protocol, "AnthropicModel"
    )


def _model(protocol: Protocol, endpoint: Endpoint, user: Model | str | None) -> Model:
    """The SDK's own model class for the protocol, on a provider pointed at the endpoint, with the
    user's model name, and a ``Model``'s resolved profile (``Model.profile``, models/__init__.py:2596)
    and settings (``Model.settings``, :1071); with no model of the user's, the endpoint's name."""
    kwargs: dict[str, Any] = {}
    if isinstance(user, Model):
        name: str | None = user.model_name
        kwargs = {"profile": user.profile, "settings": user.settings}
    else:
        name = user.partition(":")[2] if isinstance(user, str) else None
    if protocol is Protocol.ANTHROPIC:
        provider = AnthropicProvider(base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key)
        return AnthropicModel(name or endpoint.anthropic_model, provider=provider, **kwargs)
    openai_provider = OpenAIProvider(base_url=endpoint.openai_base_url, api_key=endpoint.api_key)
    if protocol is Protocol.RESPONSES:
        return OpenAIResponsesModel(name or endpoint.openai_model, provider=openai_provider, **kwargs)
    return OpenAIChatModel(name or endpoint.openai_model, provider=openai_provider, **kwargs)
