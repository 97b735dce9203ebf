"""What each binding reports about a user's agent without running it: the mode column (decided as
the built-in adapter decides it), the model the harness swaps in, and the usage of a raise."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from bench.core.vocabulary import Mode, Protocol
from bench.own.adapter import bind
from bench.own.binding import PLACEHOLDER, Binding, ModelHandle
from bench.own.config import AgentEntry


class Ticket(BaseModel):
    label: str
    priority: int


def bound(agent: Any, protocol: Protocol | None = None) -> Binding:
    return bind(AgentEntry(name="support", agent="user:support", protocol=protocol), agent)


def test_langchain_bare_schema_mode_is_the_strategy_create_agent_picks() -> None:
    """A bare schema on ChatAnthropic('claude-sonnet-4-6') is ProviderStrategy (its profile says
    structured_output), so native; on a model create_agent has no native support for, tool."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
    from langchain_anthropic import ChatAnthropic

    from adapters.langchain.adapter import provider_strategy_picked

    def on_handle(model: ModelHandle) -> Any:
        return create_agent(model.langchain(), response_format=Ticket)

    def on_old_claude(model: ModelHandle) -> Any:
        claude = ChatAnthropic(model="claude-3-haiku-20240307", base_url=model.base_url, api_key=model.api_key)
        return create_agent(claude, response_format=Ticket)

    anthropic = bound(on_handle, Protocol.ANTHROPIC)
    assert anthropic.mode() is Mode.NATIVE
    assert provider_strategy_picked(ModelHandle(PLACEHOLDER, Protocol.ANTHROPIC).langchain())  # the same decision
    assert bound(on_handle).mode() is Mode.NATIVE
    assert bound(on_old_claude, Protocol.ANTHROPIC).mode() is Mode.TOOL
    explicit = bound(lambda m: create_agent(m.langchain(), response_format=ToolStrategy(Ticket)), Protocol.ANTHROPIC)
    assert explicit.mode() is Mode.TOOL
    native = bound(lambda m: create_agent(m.langchain(), response_format=ProviderStrategy(Ticket)))
    assert native.mode() is Mode.NATIVE


@pytest.mark.parametrize(
    ("protocol", "profile", "mode"),
    [
        (Protocol.CHAT, None, Mode.NATIVE),  # the 'openai' profile: json_schema
        (Protocol.ANTHROPIC, None, Mode.NATIVE),  # output_config.format
        (Protocol.CHAT, "none", Mode.PROMPTED),
        (Protocol.CHAT, "json_object", Mode.PROMPTED),
        (Protocol.ANTHROPIC, "none", Mode.NATIVE),  # the Anthropic adapter ignores the profile
    ],
)
def test_agentmaker_mode_is_the_capability_of_the_users_client(
    protocol: Protocol, profile: str | None, mode: Mode
) -> None:
    from agentmaker import Agent, ProviderProfile

    from adapters.agentmaker.adapter import _SPECS, STRUCTURED_OUTPUT_MODES

    def make(model: ModelHandle) -> Any:
        kwargs = (
            {}
            if profile is None
            else {"profile": ProviderProfile(protocol=model.agentmaker().protocol, structured_output=profile)}
        )
        return Agent("support", model.agentmaker(**kwargs))

    assert bound(make, protocol).mode() is mode
    # The built-in adapter's cells take their mode from the same table.
    assert all(key[0] is STRUCTURED_OUTPUT_MODES[spec.capability] for key, spec in _SPECS.items())


def test_pydantic_ai_replacement_keeps_the_users_model_name_profile_and_settings() -> None:
    """claude-3-5-haiku has no native structured output in its profile (profiles/anthropic.py:356-377);
    the harness's replacement must not measure the agent as claude-sonnet-4-6, which has."""
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from adapters.pydantic_ai.own import _model

    endpoint = PLACEHOLDER
    users = AnthropicModel(
        "claude-3-5-haiku-latest",
        provider=AnthropicProvider(api_key="k", base_url="https://users.invalid"),
        settings={"temperature": 0.25, "max_tokens": 321},
        profile={"native_output_requires_schema_in_instructions": True},
    )
    binding = bound(Agent(users, output_type=Ticket))
    assert binding.protocol is Protocol.ANTHROPIC
    model = _model(binding.protocol, endpoint, users)
    assert isinstance(model, AnthropicModel) and model.model_name == "claude-3-5-haiku-latest"
    assert model.profile.get("supports_json_schema_output") is False
    assert model.profile.get("native_output_requires_schema_in_instructions") is True
    assert model.settings == {"temperature": 0.25, "max_tokens": 321}
    assert model.base_url.rstrip("/") == endpoint.anthropic_base_url.rstrip("/")  # the requests still go here

    by_name = _model(Protocol.CHAT, endpoint, "openai-chat:gpt-4.1-nano")
    assert isinstance(by_name, OpenAIChatModel) and by_name.model_name == "gpt-4.1-nano"
    assert by_name.base_url.rstrip("/") == endpoint.openai_base_url.rstrip("/")
    assert _model(Protocol.CHAT, endpoint, None).model_name == endpoint.openai_model


def test_openai_agents_run_config_model_keeps_the_users_model_name() -> None:
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel
    from agents.models import get_default_model
    from openai import AsyncOpenAI

    from adapters.openai_agents.own import _model

    client = AsyncOpenAI(base_url=PLACEHOLDER.openai_base_url, api_key="k")
    named = _model(Protocol.RESPONSES, client, "gpt-4.1")
    assert isinstance(named, OpenAIResponsesModel) and named.model == "gpt-4.1"
    users = OpenAIChatCompletionsModel("gpt-4.1-mini", AsyncOpenAI(base_url="https://users.invalid", api_key="k"))
    chat = _model(Protocol.CHAT, client, users)
    assert isinstance(chat, OpenAIChatCompletionsModel) and chat.model == "gpt-4.1-mini"
    assert chat._client is client  # the endpoint's client, not the user's
    assert _model(Protocol.RESPONSES, client, None).model == get_default_model()


def test_a_pydantic_ai_agent_runs_with_its_own_models_profile() -> None:
    """NativeOutput on claude-3-5-haiku: the user's agent raises UserError before any request (its
    profile has no native structured output); as claude-sonnet-4-6 it would send one (here to the
    discard port, so a connection error)."""
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    users = AnthropicModel("claude-3-5-haiku-latest", provider=AnthropicProvider(api_key="k"))
    binding = bound(Agent(users, output_type=NativeOutput(Ticket)))
    result = asyncio.run(binding.run(PLACEHOLDER, Ticket))
    assert isinstance(result.exception, UserError), result.exception
    assert "Native structured output is not supported" in str(result.exception)


def test_the_handles_chat_openai_defaults_are_the_built_in_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    """One declaration: what the built-in adapter gives its ChatOpenAI is the handle's default,
    and the user's own keyword arguments still win."""
    import adapters.langchain.adapter

    handle = ModelHandle(PLACEHOLDER, Protocol.RESPONSES)
    assert handle.langchain().stream_usage is True and handle.langchain().use_responses_api is True
    assert handle.langchain(stream_usage=False).stream_usage is False
    monkeypatch.setattr(adapters.langchain.adapter, "CHAT_OPENAI_DEFAULTS", {"stream_usage": False})
    assert handle.langchain().stream_usage is False


def test_claude_tools_are_named_by_the_built_in_adapters_wire_name() -> None:
    from adapters.claude_agent_sdk.adapter import TOOL_SERVER, wire_tool_name

    assert wire_tool_name("lookup_order", "helpdesk") == "mcp__helpdesk__lookup_order"
    assert wire_tool_name("lookup_order") == f"mcp__{TOOL_SERVER}__lookup_order"
