"""A user's smolagents agent, built by the user's factory around the harness's model.

smolagents binds the model at construction (``ToolCallingAgent(tools, model)``, agents.py:1231-1246)
and has no override, so the user's reference is a factory: the harness calls it with a
:class:`bench.own.binding.ModelHandle` per cell and the factory passes ``model.smolagents()`` (an
``OpenAIServerModel`` pointed at the provider) to its agent; a fresh agent per cell, since an agent
keeps a run's memory and state. The output type is the user's ``final_answer`` tool's business
(answer.py shows the typed one), so it comes from ``output = "module:Type"`` in the agent's entry;
``run_kwargs`` are the user's own ``agent.run`` arguments (``max_steps``...). The run is
synchronous and goes in a thread of its own, as the built-in cells' (adapter.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from smolagents import MultiStepAgent, OpenAIServerModel, Tool
from smolagents.models import get_tool_json_schema

from adapters.smolagents.adapter import in_a_thread
from adapters.smolagents.answer import FINAL_ANSWER
from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding, ModelHandle
from bench.own.config import OwnAgentError
from bench.sdk.adapter import AdapterResult, Endpoint


class SmolagentsBinding(Binding):
    sdk: ClassVar[str] = "smolagents"
    distribution: ClassVar[str] = "smolagents"
    agent_type: ClassVar[type] = MultiStepAgent
    factory_required: ClassVar[str | None] = (
        "smolagents binds its model at construction and has no override; give a factory taking the model handle: "
        "def make(model): return ToolCallingAgent(tools=[...], model=model.smolagents())"
    )

    @classmethod
    def handle_model(cls, handle: ModelHandle, **kwargs: Any) -> Any:
        """``model.smolagents()``: an ``OpenAIServerModel`` on the provider; ``kwargs`` are the
        user's own (``client_kwargs``, ``temperature``...)."""
        if handle.protocol is not Protocol.CHAT:
            raise OwnAgentError(
                "smolagents' OpenAIServerModel speaks Chat Completions only; Responses and Anthropic need LiteLLMModel"
            )
        return OpenAIServerModel(handle.model_name, api_base=handle.base_url, api_key=handle.api_key, **kwargs)

    def output(self) -> Any:
        return None  # the final_answer tool's: the entry's `output`

    def mode(self) -> Mode:
        return Mode.TOOL

    def passed_handle(self) -> str | None:
        return "the model the agent got" if isinstance(getattr(self.agent, "model", None), ModelHandle) else None

    def note(self) -> str:
        return f"the user's smolagents {type(self.agent).__name__} from their factory on model.smolagents()"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The parameters the agent sends for each of its tools (models.py:288-329), the final
        answer left out: it is the output, not a tool the harness fakes."""
        tools = getattr(self.agent, "tools", {}) or {}
        return {
            name: get_tool_json_schema(tool)["function"]["parameters"]
            for name, tool in tools.items()
            if name != FINAL_ANSWER
        }

    def with_fakes(self, agent: Any) -> Any:
        """The cell's own agent (built by the factory for this cell) with each tool's
        :meth:`implementation` as its ``forward``: the same name, inputs and description, so
        smolagents checks the arguments as for the user's tool (agents.py:1474-1478)."""
        for name, tool in list(agent.tools.items()):
            if name != FINAL_ANSWER and isinstance(tool, Tool):
                agent.tools[name] = _Swapped(tool, self.implementation(name, tool.forward))
        return agent

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        agent = self.built(endpoint)
        kwargs = dict(self.run_kwargs)
        stream = bool(kwargs.pop("stream", False))
        return await in_a_thread(agent, self.prompt, stream, owned=True, run_kwargs=kwargs)


class _Swapped(Tool):
    """The user's tool with another ``forward``, its declaration kept."""

    skip_forward_signature_validation = True

    def __init__(self, original: Tool, forward: Any) -> None:
        self.name, self.description = original.name, original.description
        self.inputs, self.output_type = original.inputs, original.output_type
        self._forward = forward
        super().__init__()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._forward(*args, **kwargs)
