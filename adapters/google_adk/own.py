"""A user's own Google ADK ``LlmAgent``, driven through ``agent.clone(update={"model": ...})``.

Runs in the user's interpreter, where their project installed google-adk (the built-in cells run
in the locked environment instead: adapter.py). ``BaseAgent.clone`` (agents/base_agent.py:289-330)
copies the user's agent with one field replaced: the model, by a ``LiteLlm`` of the user's own model
name on the local provider's ``api_base`` and ``api_key``, the user's other LiteLlm arguments kept.
Their ``output_schema``, ``output_key``, instruction, callbacks, tools and generate_content_config
stay theirs; ``run_kwargs`` may give a ``run_config`` (``RunConfig(streaming_mode=SSE)``). The run
is a ``Runner`` over an ``InMemorySessionService`` as in the built-in cells (calls.run_agent), and
what reaches the caller is the session state under their ``output_key``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding
from bench.own.config import OwnAgentError
from bench.sdk.adapter import AdapterResult, Endpoint

try:
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.tools import FunctionTool

    from adapters.google_adk.calls import run_agent
except ImportError as e:  # pragma: no cover - exercised only without google-adk
    raise ImportError(
        "a Google ADK agent needs google-adk and litellm in the interpreter that runs bench: "
        "pip install google-adk litellm"
    ) from e

ENDPOINT_ARGUMENTS = ("api_base", "base_url", "api_key")
"""The user's LiteLlm arguments the binding replaces: where requests go, and with which key."""


class GoogleAdkBinding(Binding):
    sdk: ClassVar[str] = "google-adk"
    distribution: ClassVar[str] = "google-adk"
    agent_type: ClassVar[type] = LlmAgent
    time_limit_s: ClassVar[float] = 30.0

    def __init__(self, agent: Any, factory: Any, protocol: Protocol) -> None:
        super().__init__(agent, factory, protocol)
        if not agent.output_key:
            raise OwnAgentError(
                f"LlmAgent {agent.name!r} has no output_key: ADK then hands its caller the final event's text, "
                "not the validated object (agents/llm_agent.py:1114-1147); give it output_key='...'"
            )

    @classmethod
    def protocol_named(cls, model: Any, configured: Protocol | None) -> Protocol | None:
        """A LiteLlm model: Anthropic Messages for an ``anthropic/`` name, Chat Completions for an
        ``openai/`` one (``openai/responses/``: Responses); a Gemini name (a string model) speaks
        Google's own API, which the local provider does not serve."""
        if isinstance(model, LiteLlm):
            name = model.model
            if name.startswith("anthropic/"):
                return Protocol.ANTHROPIC
            if name.startswith("openai/responses/"):
                return Protocol.RESPONSES
            if name.startswith("openai/"):
                return Protocol.CHAT
            return None
        return None

    def output(self) -> Any:
        return self.agent.output_schema

    def mode(self) -> Mode:
        """Native, unless ADK will add its set_model_response tool: output_schema beside tools on a
        model that cannot pair them (flows/llm_flows/prompt/_schema.py:46-57)."""
        agent = self.agent
        if agent.tools and not agent.canonical_model.capabilities.output_schema_and_tools:
            return Mode.TOOL
        return Mode.NATIVE

    def note(self) -> str:
        return "the user's LlmAgent under agent.clone(update={'model': LiteLlm(<their model>, api_base=...)})"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Each function tool's parameters as ADK declares them to the model."""
        found: dict[str, dict[str, Any]] = {}
        for tool in self.agent.tools:
            declared = _function_tool(tool)
            if declared is None:
                continue
            declaration = declared._get_declaration()
            schema = declaration.parameters_json_schema if declaration is not None else None
            if schema is None and declaration is not None and declaration.parameters is not None:
                schema = declaration.parameters.model_dump(mode="json", exclude_none=True)
            found[declared.name] = schema or {"type": "object", "properties": {}}
        return found

    def with_fakes(self, agent: Any) -> Any:
        """A clone whose function tools call the fakes (or, in a tool scenario, the wrapped originals)."""
        tools = []
        for tool in agent.tools:
            declared = _function_tool(tool)
            if declared is None:
                tools.append(tool)
                continue
            tools.append(FunctionTool(self.implementation(declared.name, declared.func)))
        return agent.clone(update={"tools": tools})

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        agent = self.built(endpoint)
        cloned = agent.clone(update={"model": self._model(agent.model, endpoint)})
        config = self.run_kwargs.get("run_config") or RunConfig()
        return await run_agent(cloned, self.prompt, config, AdapterResult(details={"model": cloned.model.model}))

    def _model(self, model: LiteLlm, endpoint: Endpoint) -> LiteLlm:
        kept = {k: v for k, v in model._additional_args.items() if k not in ENDPOINT_ARGUMENTS}
        base = endpoint.anthropic_base_url if self.protocol is Protocol.ANTHROPIC else endpoint.openai_base_url
        return LiteLlm(model=model.model, api_base=base, api_key=endpoint.api_key, **kept)


def _function_tool(tool: Any) -> Any:
    """The tool as a FunctionTool (a plain function is wrapped by ADK the same way), else None."""
    if isinstance(tool, FunctionTool):
        return tool
    if callable(tool) and getattr(tool, "__name__", None):
        return FunctionTool(tool)
    return None
