"""A user's own AutoGen ``AssistantAgent``, built by the user's factory around the harness's model client.

``AssistantAgent`` binds its model client at construction (``model_client=``,
autogen_agentchat/agents/_assistant_agent.py:724-749) and keeps its conversation between runs ("agents
are expected to be stateful"), so a cell needs a fresh agent on the provider's URL: the user's
reference is a factory the harness calls with a :class:`bench.own.binding.ModelHandle` per cell,
which passes ``model.autogen()`` (an ``OpenAIChatCompletionClient`` pointed at the provider) as the
agent's ``model_client``. Everything else (``output_content_type``, tools, ``max_tool_iterations``,
``reflect_on_tool_use``, ``model_client_stream``) is the user's own. ``run_kwargs`` may say
``stream: true`` for ``run_stream``.

This module runs in the user's interpreter, where their autogen is installed (``bench run --agent``
from their project), not in the built-in cells' environment (adapters/autogen_agentchat/environment.txt).
The user's tools are not swapped or derived into tool scenarios yet (no ``tool_schemas``): a tool
scenario the user opts in runs their tool as their agent does.
"""

from __future__ import annotations

from typing import Any, ClassVar

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient

from adapters.autogen_agentchat.calls import call
from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding, ModelHandle
from bench.own.config import OwnAgentError
from bench.sdk.adapter import AdapterResult, Endpoint


class AutogenBinding(Binding):
    sdk: ClassVar[str] = "autogen-agentchat"
    distribution: ClassVar[str] = "autogen-agentchat"
    agent_type: ClassVar[type] = AssistantAgent
    factory_required: ClassVar[str | None] = (
        "AssistantAgent binds its model client at construction and keeps its conversation between runs; give a "
        "factory taking the model handle: def make(model): return AssistantAgent('name', model_client=model.autogen(), "
        "output_content_type=...)"
    )

    @classmethod
    def handle_model(cls, handle: ModelHandle, **kwargs: Any) -> Any:
        """``model.autogen()``: an ``OpenAIChatCompletionClient`` on the provider; ``kwargs``
        (``max_retries``, ``timeout``...) are the user's own. AutoGen's Anthropic client cannot
        carry ``output_content_type`` (research.md), and it has no Responses client."""
        if handle.protocol is not Protocol.CHAT:
            raise OwnAgentError(
                "model.autogen() is an OpenAIChatCompletionClient (Chat Completions): AutoGen has no Responses "
                "client, and its Anthropic client refuses output_content_type"
            )
        return OpenAIChatCompletionClient(
            model=handle.model_name, base_url=handle.base_url, api_key=handle.api_key, **kwargs
        )

    def output(self) -> Any:
        return self.agent._output_content_type  # the constructor's argument; no public reader

    def mode(self) -> Mode:
        """``output_content_type`` is always the API's response format (json_output=Model)."""
        return Mode.NATIVE

    def passed_handle(self) -> str | None:
        """The agent's ``model_client`` when it is the handle itself."""
        client = getattr(self.agent, "_model_client", None)
        return "the model_client AssistantAgent got" if isinstance(client, ModelHandle) else None

    def note(self) -> str:
        return f"the user's AssistantAgent from their factory on handle.autogen() ({self.protocol})"

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        agent = self.built(endpoint)
        kwargs = dict(self.run_kwargs)
        try:
            return await call(agent, self.prompt, bool(kwargs.pop("stream", False)))
        finally:
            await agent._model_client.close()  # the client the factory made for this cell
