"""A user's OpenAI Agents SDK ``Agent``, driven through ``RunConfig(model=...)``.

``RunConfig.model`` is the SDK's run-wide model override ("will override the model set on every
agent", run_config.py:364-367): the user's agent object, its output type, guardrails, hooks,
tools and handoffs are used as they are. The override is the SDK's own model class for the
protocol the user's model speaks, on an ``AsyncOpenAI`` client pointed at the endpoint: an
``OpenAIChatCompletionsModel`` stays on Chat Completions, an ``OpenAIResponsesModel`` (and a
model name, which the default provider resolves to Responses unless the user switched the
default, models/_openai_shared.py:11, openai_provider.py:108-111) on Responses. Its model name is
the user's (their ``run_config``'s model, which overrides the agent's, else the agent's; a model
object's ``model``), or ``get_default_model()`` as the SDK's provider resolves no model
(openai_provider.py:243-245).

What a user passes to ``Runner.run`` besides the agent (``error_handlers``, ``max_turns``,
``hooks``, ``context``, a ``run_config``) comes from ``run_kwargs`` in their entry; a
``run_config`` of theirs is kept with only ``model`` and ``tracing_disabled`` replaced (the
default trace exporter posts to api.openai.com, tracing/processors.py:46).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding
from bench.sdk.adapter import AdapterResult, Endpoint

try:
    from agents import (
        Agent,
        AgentOutputSchema,
        AgentOutputSchemaBase,
        FunctionTool,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        RunConfig,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from agents.lifecycle import RunHooksBase
    from agents.models import _openai_shared, get_default_model
    from openai import AsyncOpenAI

    from adapters.openai_agents.adapter import _raised, _usage, _UsageProbe
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "an openai-agents agent needs the OpenAI Agents SDK: pip install 'misfit-bench[openai-agents]'"
    ) from e


class OpenAIAgentsBinding(Binding):
    sdk: ClassVar[str] = "openai-agents"
    distribution: ClassVar[str] = "openai-agents"
    agent_type: ClassVar[type] = Agent

    model_protocols: ClassVar[tuple[tuple[type, Protocol], ...]] = (
        (OpenAIChatCompletionsModel, Protocol.CHAT),
        (OpenAIResponsesModel, Protocol.RESPONSES),
    )

    @classmethod
    def protocol_named(cls, model: Any, configured: Protocol | None) -> Protocol | None:
        """A model name (or none) goes to the default provider, whose protocol is the SDK's
        default; a ``litellm/...`` name needs an extension that is not installed."""
        if model is None or (isinstance(model, str) and "/" not in model):
            return Protocol.RESPONSES if _openai_shared.get_use_responses_by_default() else Protocol.CHAT
        return None

    def output(self) -> Any:
        declared = self.agent.output_type
        if isinstance(declared, AgentOutputSchema):
            return declared.output_type
        if isinstance(declared, AgentOutputSchemaBase):
            return declared.json_schema()
        return declared

    def mode(self) -> Mode:
        return Mode.NATIVE

    def note(self) -> str:
        return f"the user's agents.Agent run with RunConfig(model={_model_class(self.protocol)})"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        return {tool.name: tool.params_json_schema for tool in self.agent.tools if isinstance(tool, FunctionTool)}

    def with_fakes(self, agent: Any) -> Any:
        """On ``agent.clone(tools=...)`` (a copy; the user's object is not touched): the same tool
        list with each faked tool replaced by ``function_tool(fake, name_override=name)``, and in
        a tool scenario each other function tool given an invoker that runs its wrapped callable
        (see :func:`_wrapped_tool`)."""
        return agent.clone(tools=[self._swapped(tool) for tool in agent.tools])

    def _swapped(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            return tool
        if tool.name in self.fakes:
            return function_tool(self.implementation(tool.name, self.fakes[tool.name]), name_override=tool.name)
        try:
            original = tool.__wrapped__  # the callable given to function_tool (tool.py:431-447)
        except AttributeError:
            return tool  # a FunctionTool built by hand: its own invoker, not wrapped
        return _wrapped_tool(tool, self.implementation(tool.name, original))

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        set_tracing_disabled(True)
        client = AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key)
        try:
            agent = self.built(endpoint)
            kwargs = dict(self.run_kwargs)
            base = kwargs.pop("run_config", None) or RunConfig()
            model = _model(self.protocol, client, base.model if base.model is not None else agent.model)
            kwargs["run_config"] = dataclasses.replace(base, model=model, tracing_disabled=True)
            handled: list[str] = []
            if kwargs.get("error_handlers"):
                kwargs["error_handlers"] = {k: _observed(k, h, handled) for k, h in kwargs["error_handlers"].items()}
            probe = _probe(kwargs.get("hooks"))
            if probe is not None:
                kwargs["hooks"] = probe
            details = {"model": type(model).__name__}
            try:
                run = await Runner.run(agent, self.prompt, **kwargs)
            except Exception as exc:  # the SDK's own, recorded as is
                # Usage from exc.run_data (an AgentsException), else from the wrapper the hooks saw
                # (an openai APIStatusError on an HTTP fault carries no run_data, run.py:2431-2443).
                raised = _raised(exc, probe or _UsageProbe())
                raised.details = details | raised.details
                return raised
            if handled:
                details["fallback_handler"] = handled[-1]
            return AdapterResult(
                output=run.final_output,
                usage=_usage(run.context_wrapper.usage),
                fallback=bool(handled),
                details=details | {"sdk_requests": str(run.context_wrapper.usage.requests)},
            )
        finally:
            await client.close()


def _wrapped_tool(tool: FunctionTool, wrapped: Any) -> FunctionTool:
    """A copy of the user's ``tool`` (``dataclasses.replace``: their guardrails, timeout and
    failure policy kept) whose invoker is the SDK's own, built by ``function_tool`` around the
    wrapped callable: the SDK parses and validates the arguments, calls it, and turns what it
    raises into the tool's error output by the copy's own failure function, as for the original."""
    rebuilt = function_tool(wrapped, name_override=tool.name, strict_mode=tool.strict_json_schema)
    return dataclasses.replace(tool, on_invoke_tool=rebuilt.on_invoke_tool)


def _probe(user: Any) -> _UsageProbe | None:
    """The built-in adapter's usage probe, in front of the user's own ``hooks`` if they gave
    some (``Runner.run`` takes one); None for hooks that are not RunHooks, which the SDK then
    refuses itself (run_internal/turn_preparation.py:33-48)."""
    if user is None:
        return _UsageProbe()
    return _ProbeBefore(user) if isinstance(user, RunHooksBase) else None


class _ProbeBefore(_UsageProbe):
    """:class:`adapters.openai_agents.adapter._UsageProbe`, then the user's hook, for every hook."""

    def __init__(self, user: RunHooksBase[Any, Any]) -> None:
        super().__init__()
        self.user = user

    async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
        await super().on_llm_start(context, agent, *args)
        await self.user.on_llm_start(context, agent, *args)

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_llm_end(*args, **kwargs)

    async def on_agent_start(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_agent_start(*args, **kwargs)

    async def on_agent_end(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_agent_end(*args, **kwargs)

    async def on_handoff(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_handoff(*args, **kwargs)

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_tool_start(*args, **kwargs)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        await self.user.on_tool_end(*args, **kwargs)


def _observed(kind: str, handler: Callable[[Any], Any], handled: list[str]) -> Callable[[Any], Any]:
    """The user's error handler, called exactly as the SDK would call it; only notes when it
    supplied the final output (a non-None result, run_internal/error_handlers.py:244-250), so
    the cell is classified ``fallback`` instead of judging the handler's value as an answer."""

    def note(result: Any) -> Any:
        if result is not None:
            handled.append(kind)
        return result

    async def awaited(pending: Awaitable[Any]) -> Any:
        return note(await pending)

    def call(data: Any) -> Any:
        result = handler(data)
        return awaited(result) if inspect.isawaitable(result) else note(result)

    return call


def _model(protocol: Protocol, client: AsyncOpenAI, user: Any) -> OpenAIResponsesModel | OpenAIChatCompletionsModel:
    """The SDK's model class for the protocol on ``client``, under the user's model name: a name,
    a model object's ``model``, or with none the SDK's default name, not sent as explicit
    (``model_is_explicit``, openai_provider.py:243-245, openai_responses.py:940)."""
    name = user if isinstance(user, str) else getattr(user, "model", None)
    if protocol is Protocol.RESPONSES:
        return OpenAIResponsesModel(name or get_default_model(), client, model_is_explicit=name is not None)
    return OpenAIChatCompletionsModel(name or get_default_model(), client)


def _model_class(protocol: Protocol) -> str:
    return "OpenAIResponsesModel" if protocol is Protocol.RESPONSES else "OpenAIChatCompletionsModel"
