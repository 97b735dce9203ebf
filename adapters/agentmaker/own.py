"""A user's agentmaker ``Agent``, built by the user's factory around the harness's ``LLMClient``.

agentmaker binds the LLM client at construction (``Agent(name, llm, ...)``, agents/agent.py:69)
and documents testing as building the agent on a substitute client (``agentmaker.testing``:
"swap the LLM ... for local implementations"); it has no override. So the user's reference is a
factory: the harness calls it with a :class:`bench.own.binding.ModelHandle` per cell, and the
factory passes ``handle.agentmaker()`` (an ``LLMClient`` pointed at the provider) to its Agent.
The output type is an ``arun`` argument (``output_schema``, agents/agent.py:193-195), so it comes
from ``output = "module:Type"`` in the agent's entry; ``run_kwargs`` (``retries``...) are the
user's own ``arun`` arguments.

An ``arun`` with ``output_schema`` is plain question-answering: it never offers the agent's tools
(agents/agent.py:177-195, ``harness.astructured``), so a tool the user opts in is listed and checked
but its scenarios are ``unsupported`` with that reason, never run as a tool loop the user's code
does not run.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding, ModelHandle
from bench.own.config import OwnAgentError
from bench.sdk.adapter import AdapterResult, Endpoint

try:
    from agentmaker import Agent, LLMClient

    from adapters.agentmaker.adapter import STRUCTURED_OUTPUT_MODES, _owned, structured_output_of
except ImportError as e:  # pragma: no cover - exercised only without the extra installed
    raise ImportError("an agentmaker agent needs agentmaker: pip install 'misfit-bench[agentmaker]'") from e


class AgentmakerBinding(Binding):
    sdk: ClassVar[str] = "agentmaker"
    distribution: ClassVar[str] = "agentmaker"
    agent_type: ClassVar[type] = Agent
    factory_required: ClassVar[str | None] = (
        "agentmaker binds its LLMClient at construction and has no override; give a factory taking "
        "the model handle: def make(model): return Agent('name', model.agentmaker(), ...)"
    )

    @classmethod
    def handle_model(cls, handle: ModelHandle, **kwargs: Any) -> Any:
        """``model.agentmaker()``: an agentmaker ``LLMClient`` (provider ``openai``, or ``anthropic``);
        ``kwargs`` (``profile``, ``timeout``...) are the user's own."""
        if handle.protocol is Protocol.RESPONSES:
            raise OwnAgentError("agentmaker's LLMClient speaks Chat Completions, not Responses")
        provider = "anthropic" if handle.protocol is Protocol.ANTHROPIC else "openai"
        return LLMClient(provider, model=handle.model_name, base_url=handle.base_url, api_key=handle.api_key, **kwargs)

    tool_gap: ClassVar[str | None] = (
        "agentmaker's arun(output_schema=...) is plain question-answering and never offers the agent's tools "
        "(agents/agent.py:193-195): the structured call cannot reach a tool"
    )

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The parameters the registry would send (``ToolRegistry.to_openai_schema``)."""
        registry = self.agent.tool_registry
        tools = registry.to_openai_schema() if registry is not None else []
        return {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}

    def output(self) -> Any:
        return None  # an arun argument: the entry's `output`

    def mode(self) -> Mode:
        """The mode of the capability the user's ``LLMClient`` sends the schema with, decided as
        for the built-in adapter's cells: native for the 'openai' and 'anthropic' profiles,
        prompted for a profile with structured_output 'none' or 'json_object'."""
        # Any other value sends no response_format: the schema is in the prompt (openai_compat.py:190).
        return STRUCTURED_OUTPUT_MODES.get(structured_output_of(self.agent.llm), Mode.PROMPTED)

    def passed_handle(self) -> str | None:
        """The Agent's ``llm`` (agents/agent.py:69) when it is the handle itself."""
        return "the LLM client Agent got" if isinstance(getattr(self.agent, "llm", None), ModelHandle) else None

    def note(self) -> str:
        return f"the user's agentmaker Agent from their factory on handle.agentmaker() ({self.protocol})"

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        agent = self.built(endpoint)
        result = AdapterResult()
        # LLMClient closes this loop's SDK client on exit (core/llm_clients.py:293-304); 0.1.0's
        # has no async context, and the built-in adapter's bridge closes what it cached.
        async with _owned(agent.llm):
            try:
                run = await agent.arun(self.prompt, output_schema=output, **self.run_kwargs)
            except Exception as exc:  # the SDK's own, e.g. LLMResponseError
                result.exception = exc
            else:
                result.output = run.final_output
                result.details["run_status"] = str(run.status)
                result.details["run_usage_llm_calls"] = str(run.usage.llm_calls)
        return result
