"""What each binding reports about a user's agent without running it: the mode column (decided as
the built-in adapter decides it), the model the harness swaps in, and the usage of a raise."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from bench.own.adapter import bind
from bench.own.binding import PLACEHOLDER, Binding, ModelHandle
from bench.own.config import AgentEntry
from bench.vocabulary import Mode, Protocol


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

    from adapters.langchain import provider_strategy_picked

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

    from adapters.agentmaker import _SPECS, STRUCTURED_OUTPUT_MODES

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
