"""A user's LangChain ``create_agent`` graph, built by the user's factory from the model handle.

``create_agent(model, tools=..., response_format=..., middleware=...)`` binds the chat model
inside the compiled graph, so the user's reference is a factory: the harness calls it with a
:class:`bench.own.binding.ModelHandle` per cell and the factory builds its graph around
``handle.langchain()`` (a ``ChatOpenAI`` or ``ChatAnthropic`` pointed at the provider, with the
user's own keyword arguments). Everything else in the graph is the user's.

The output type is the ``response_format`` the graph was built with. LangChain keeps it only in
the model node's closure (``initial_response_format``, langchain/agents/factory.py), which is read
here and never changed; ``output = "module:Type"`` in the agent's entry takes precedence.

The user's tools are the graph's ``ToolNode`` (``tools_by_name``, langgraph/prebuilt/tool_node.py).
A fake replaces a tool in the ToolNode of the cell's own graph (the factory builds one per cell):
a ``StructuredTool`` with the user's tool's name, description and ``args_schema`` around the fake,
so the model is offered the user's tool and LangChain validates the arguments, handles errors and
returns the result exactly as for the real one.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding, ModelHandle
from bench.sdk.adapter import AdapterResult, Endpoint, ReportedUsage
from bench.tools.own import current

try:
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
    from langchain_anthropic import ChatAnthropic
    from langchain_core.callbacks import UsageMetadataCallbackHandler
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph.state import CompiledStateGraph

    from adapters.langchain import adapter as built_in
    from adapters.langchain.adapter import provider_strategy_picked
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("a LangChain agent needs langchain and langgraph: pip install 'misfit-bench[langchain]'") from e


class LangChainBinding(Binding):
    sdk: ClassVar[str] = "langchain"
    distribution: ClassVar[str] = "langchain"
    agent_type: ClassVar[type] = CompiledStateGraph
    factory_required: ClassVar[str | None] = (
        "a LangChain create_agent graph binds its model inside; give a factory taking the model handle: "
        "def make(model): return create_agent(model.langchain(), ...)"
    )

    @classmethod
    def handle_model(cls, handle: ModelHandle, **kwargs: Any) -> Any:
        """``model.langchain()``: a LangChain chat model (ChatOpenAI, with ``use_responses_api`` on
        Responses, or ChatAnthropic); ``kwargs`` (``max_retries``, ``timeout``...) are the user's own."""
        if handle.protocol is Protocol.ANTHROPIC:
            return ChatAnthropic(model=handle.model_name, base_url=handle.base_url, api_key=handle.api_key, **kwargs)
        kwargs = {"use_responses_api": handle.protocol is Protocol.RESPONSES, **built_in.CHAT_OPENAI_DEFAULTS, **kwargs}
        return ChatOpenAI(model=handle.model_name, base_url=handle.base_url, api_key=handle.api_key, **kwargs)

    def _closure(self) -> dict[str, Any]:
        """The model node's closure (langchain/agents/factory.py:1523-1533): the chat model, the
        graph's tools (``default_tools``) and the ``initial_response_format``, read, never changed."""
        node = self.agent.builder.nodes.get("model")
        function = getattr(getattr(node, "runnable", None), "func", None)
        if function is None:
            return {}
        cells = zip(function.__code__.co_freevars, function.__closure__ or (), strict=False)
        return {name: cell.cell_contents for name, cell in cells}

    def _response_format(self) -> Any:
        return self._closure().get("initial_response_format")

    def output(self) -> Any:
        declared = self._response_format()
        return getattr(declared, "schema", declared)

    def mode(self) -> Mode:
        """A ToolStrategy is tool, a ProviderStrategy native; a bare schema (``AutoStrategy``) is
        what create_agent picks for it at each model call (factory.py:1412-1422): the built-in
        adapter's one decision, :func:`adapters.langchain.adapter.provider_strategy_picked`, on the graph's
        own model and tools."""
        closure = self._closure()
        declared = closure.get("initial_response_format")
        if isinstance(declared, ToolStrategy):
            return Mode.TOOL
        if isinstance(declared, ProviderStrategy):
            return Mode.NATIVE
        model = closure.get("model")
        picked = isinstance(model, BaseChatModel) and provider_strategy_picked(model, closure.get("default_tools"))
        return Mode.NATIVE if picked else Mode.TOOL

    def passed_handle(self) -> str | None:
        """The graph's chat model (the model node's closure) when it is the handle itself."""
        return "the model create_agent got" if isinstance(self._closure().get("model"), ModelHandle) else None

    def note(self) -> str:
        return f"the user's create_agent graph from their factory, over {self.protocol} (handle.langchain())"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Each tool's parameters as ``bind_tools`` sends them (``convert_to_openai_tool``)."""
        return {
            name: convert_to_openai_tool(tool)["function"]["parameters"] for name, tool in _tools(self.agent).items()
        }

    def with_fakes(self, agent: Any) -> Any:
        """In the cell's own graph's ToolNode: each faked tool's stand-in around the fake, and in
        a tool scenario each other ``StructuredTool``'s around its own (wrapped) function."""
        tools = _tools(agent)
        for name, tool in list(tools.items()):
            original = tool.coroutine or tool.func if isinstance(tool, StructuredTool) else None
            if name in self.fakes or (original is not None and current() is not None):
                tools[name] = _stand_in(tool, self.implementation(name, original or self.fakes[name]))
        return agent

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        """``ainvoke`` with LangChain's own usage callback, which outlives an exception
        (langchain_core/callbacks/usage.py:50-77)."""
        graph = self.built(endpoint)
        usage = UsageMetadataCallbackHandler()
        config: dict[str, Any] = {**self.run_kwargs, "callbacks": [usage, *self.run_kwargs.get("callbacks", [])]}
        result = AdapterResult()
        try:
            state = await graph.ainvoke({"messages": [{"role": "user", "content": self.prompt}]}, config=config)
        except Exception as exc:  # the SDK's own, recorded as is
            result.exception = exc
        else:
            result.output = (state or {}).get("structured_response")
        records = list(usage.usage_metadata.values())
        if records:
            result.usage = ReportedUsage(
                input_tokens=sum(r.get("input_tokens", 0) for r in records),
                output_tokens=sum(r.get("output_tokens", 0) for r in records),
            )
        return result


def _tools(graph: Any) -> dict[str, BaseTool]:
    """The graph's ToolNode's own table of tools by name (empty for a graph without tools)."""
    node = graph.builder.nodes.get("tools")
    return getattr(getattr(node, "runnable", None), "tools_by_name", {})


def _stand_in(tool: BaseTool, fake: Any) -> StructuredTool:
    """The user's ``tool`` with its body replaced by ``fake`` (called with the same arguments)."""
    asynchronous = inspect.iscoroutinefunction(fake)
    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        func=None if asynchronous else fake,
        coroutine=fake if asynchronous else None,
        return_direct=tool.return_direct,
        response_format=tool.response_format,
        handle_tool_error=tool.handle_tool_error,
        handle_validation_error=tool.handle_validation_error,
    )
