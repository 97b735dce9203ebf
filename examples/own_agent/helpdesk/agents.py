"""The app's agents, written as the app needs them: misfit-bench drives these very objects.

`support` is a Pydantic AI agent with an output retry budget and an output validator running the
app's check; `triage` is an OpenAI Agents SDK agent with a tool and an error handler for output it
cannot use; `make_intake` builds a LangChain agent (`create_agent`), which binds its chat model at
construction, so the app writes it as a factory of a model handle: in production the handle is
`Production()`, under misfit-bench the harness's, whose `langchain()` is a `ChatOpenAI` on the
local provider.
"""

from __future__ import annotations

from agents import Agent as OpenAIAgent
from agents import RunErrorHandlerInput, function_tool
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent, ModelRetry

from helpdesk.checks import check
from helpdesk.models import Ticket

INSTRUCTIONS = "Triage the customer's support ticket: label, priority (1 most urgent) and a one-line summary."

support = Agent("openai:gpt-4.1", output_type=Ticket, retries=2, instructions=INSTRUCTIONS, defer_model_check=True)


@support.output_validator
def triaged_as_the_app_expects(ticket: Ticket) -> Ticket:
    """Pydantic AI's output validator: a ticket the app's check rejects is sent back to the model."""
    if (reason := check(ticket)) is not None:
        raise ModelRetry(reason)
    return ticket


@function_tool
def lookup_customer(email: str) -> dict[str, str]:
    """Look up a customer's plan by email (a real call to the CRM in production)."""
    raise RuntimeError("the CRM is not reachable from a benchmark")


triage = OpenAIAgent(name="triage", instructions=INSTRUCTIONS, output_type=Ticket, tools=[lookup_customer])


def needs_review(data: RunErrorHandlerInput) -> Ticket:
    """What the app does when the model's answer does not fit: a ticket for a human."""
    return Ticket(label="account", priority=2, summary="Needs human review: the triage answer was unusable")


run_options = {"error_handlers": {"invalid_final_output": needs_review}, "max_turns": 6}
"""What the app passes to Runner.run(triage, ..., **run_options)."""


class Production:
    """The model handle the app passes to `make_intake` in production (misfit-bench passes its own)."""

    def langchain(self, **kwargs):
        return ChatOpenAI(model="gpt-4.1", **kwargs)


def make_intake(model):
    """The LangChain agent: the ticket as a tool call (`ToolStrategy`), which LangChain validates
    and, on a ticket that does not fit, sends the error back to the model for another try."""
    return create_agent(
        model.langchain(), tools=[], response_format=ToolStrategy(Ticket), system_prompt=INSTRUCTIONS
    )
