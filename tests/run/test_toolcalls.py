"""The harness tool's calls, end to end: the scripted tool call on the wire, and how
bench.run.toolcalls reads a run's tool calls back.

On the wire: each protocol's own tool-call shape, parsed by the official clients with strict
validation, with the call id the ledger records; and the tool result a later request carries
back, read off that request and paired with its call id.

Read back: bench.run.toolcalls reads a run's tool calls off the real provider's ledger and the
real harness tool's log: requests go over loopback as an SDK would send them, the tool runs for
real."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from bench.provider import LocalProvider
from bench.run.accounting import summarise
from bench.run.toolcalls import summarise_tools
from bench.scenarios.tasks import get_task
from bench.tools import LookupOrderArgs, OrderToolError, ToolPlan
from tests.protocol_clients import anthropic_client, openai_client

PROMPT = "Where is my order ORD-1042?"
USER = {"role": "user", "content": PROMPT}
CALL = {"tool_call": {"order_id": "ORD-1042"}}

# The scripted tool call on the wire, through the official clients.
PARAMS = {**LookupOrderArgs.model_json_schema(), "additionalProperties": False}
ERROR = OrderToolError("ORDER_NOT_FOUND", True, 1, "Check the id.").to_json()


def _chat(run: Any, stream: bool, tools: bool = True) -> tuple[str, str, dict[str, Any]]:
    client = openai_client(run.endpoint)
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [USER]}
    if tools:
        kwargs["tools"] = [{"type": "function", "function": {"name": "lookup_order", "parameters": PARAMS}}]
    if not stream:
        call = client.chat.completions.create(**kwargs).choices[0].message.tool_calls[0]
        assert call.type == "function"
        return call.id, call.function.name, json.loads(call.function.arguments)
    with client.chat.completions.stream(**kwargs) as events:
        call = events.get_final_completion().choices[0].message.tool_calls[0]
    return call.id, call.function.name, json.loads(call.function.arguments)


def _responses(run: Any, stream: bool) -> tuple[str, str, dict[str, Any]]:
    client = openai_client(run.endpoint)
    tool = {"type": "function", "name": "lookup_order", "parameters": PARAMS, "strict": False}
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "input": PROMPT, "tools": [tool]}
    if stream:
        with client.responses.stream(**kwargs) as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    (item,) = response.output
    assert item.type == "function_call"
    return item.call_id, item.name, json.loads(item.arguments)


def _anthropic(run: Any, stream: bool) -> tuple[str, str, dict[str, Any]]:
    client = anthropic_client(run.endpoint)
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "messages": [USER],
        "tools": [{"name": "lookup_order", "input_schema": PARAMS}],
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    return block.id, block.name, dict(block.input)


CLIENTS = {"openai-chat": _chat, "openai-responses": _responses, "anthropic-messages": _anthropic}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("protocol", list(CLIENTS))
def test_tool_call_parses_and_its_call_id_is_in_the_ledger(
    provider: LocalProvider, protocol: str, stream: bool
) -> None:
    with provider.open_script("order_lookup", [CALL]) as run:
        call_id, name, arguments = CLIENTS[protocol](run, stream)
        (record,) = run.attempts
    assert (name, arguments) == ("lookup_order", {"order_id": "ORD-1042"})
    assert record.tool_call_id == call_id
    assert record.behaviour == "tool_call:order_id=ORD-1042"
    assert record.realistic is True
    assert record.detected_mode == "prompted"  # lookup_order is not an output tool


def test_arguments_that_fail_the_schema_are_sent_as_scripted(provider: LocalProvider) -> None:
    with provider.open_script("order_lookup", [{"tool_call": {"order": "ORD-1042"}}]) as run:
        _, _, arguments = _chat(run, stream=False)
    assert arguments == {"order": "ORD-1042"}


def test_a_call_to_a_tool_the_request_did_not_offer_is_unrealistic(provider: LocalProvider) -> None:
    with provider.open_script("order_lookup", [CALL]) as run:
        openai_client(run.endpoint).chat.completions.create(model="gpt-4o-mini", messages=[USER])
        (record,) = run.attempts
    assert record.realistic is False


def _followups(call_id: str) -> dict[str, dict[str, Any]]:
    """The next request of each protocol, carrying an error result for ``call_id`` back."""
    call = {"id": call_id, "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    return {
        "/v1/chat/completions": {
            "model": "gpt-4o-mini",
            "messages": [
                USER,
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": ERROR},
            ],
        },
        "/v1/responses": {
            "model": "gpt-4o-mini",
            "input": [
                USER,
                {"type": "function_call", "call_id": call_id, "name": "lookup_order", "arguments": "{}"},
                {"type": "function_call_output", "call_id": call_id, "output": ERROR},
            ],
        },
        "/v1/messages": {
            "model": "claude-sonnet-4-6",
            "max_tokens": 512,
            "messages": [
                USER,
                {"role": "assistant",
                 "content": [{"type": "tool_use", "id": call_id, "name": "lookup_order", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call_id, "is_error": True,
                         "content": [{"type": "text", "text": ERROR}]},
                    ],
                },
            ],
        },
    }  # fmt: skip


@pytest.mark.parametrize("path", list(_followups("x")))
def test_tool_results_a_request_carries_back_are_recorded_with_their_call_id(
    provider: LocalProvider, path: str
) -> None:
    with provider.open_script("order_lookup", ["valid"]) as run:
        reply = httpx.post(run.endpoint.root + path, json=_followups("call_abc123")[path], timeout=10)
        assert reply.status_code == 200
        (record,) = run.attempts
    (seen,) = record.tool_results
    assert seen.call_id == "call_abc123"
    assert seen.structured_error and not seen.success
    assert seen.is_error is (True if path == "/v1/messages" else None)
    assert record.tool_call_id is None  # a text answer issues no call


def test_arguments_a_strict_tool_would_never_get_are_unrealistic(provider: LocalProvider) -> None:
    strict_tool = {"type": "function", "function": {"name": "lookup_order", "parameters": PARAMS, "strict": True}}
    realistic = []
    for arguments in ({"order": "ORD-1042"}, {"order_id": "ORD-1042"}):
        with provider.open_script("order_lookup", [{"tool_call": arguments}]) as run:
            openai_client(run.endpoint).chat.completions.create(
                model="gpt-4o-mini", messages=[USER], tools=[strict_tool]
            )
            realistic.append(run.attempts[0].realistic)
    assert realistic == [False, True]


# bench.run.toolcalls: what a run's tool calls add up to.

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}}]


class ChatAgent:
    """The smallest honest agent loop over Chat Completions: run every tool call the model
    makes and send its result (or the tool's error) back with the call id, until an answer.
    ``pair_ids=False`` sends results back under a made-up id, as a broken SDK would;
    ``as_text=True`` writes the call and its result into the conversation as text, with no id
    (smolagents' ToolCallingAgent: memory.py's tool-call and tool-response steps become an
    assistant and a user message)."""

    def __init__(
        self, endpoint: str, plan: ToolPlan, pair_ids: bool = True, stop_on_fatal: bool = False, as_text: bool = False
    ) -> None:
        self.url = endpoint + "/v1/chat/completions"
        self.task = get_task("order_lookup").with_tool(plan)
        self.pair_ids, self.stop_on_fatal, self.as_text = pair_ids, stop_on_fatal, as_text

    def run(self, max_calls: int = 6) -> None:
        messages: list[dict[str, Any]] = [USER]
        for _ in range(max_calls):
            request = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}
            reply = httpx.post(self.url, json=request, timeout=10)
            message = reply.json()["choices"][0]["message"]
            if not message.get("tool_calls"):
                return
            text = {"role": "assistant", "content": json.dumps(message["tool_calls"])}
            messages.append(text if self.as_text else message)
            for call in message["tool_calls"]:
                content, fatal = self._call_tool(json.loads(call["function"]["arguments"]))
                call_id = call["id"] if self.pair_ids else "call_unpaired"
                if self.as_text:
                    messages.append({"role": "user", "content": f"Observation: {content}"})
                else:
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                if fatal and self.stop_on_fatal:
                    return

    def _call_tool(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        assert self.task.tool is not None
        if set(arguments) != {"order_id"}:
            return "Invalid arguments: order_id is required", False
        try:
            return json.dumps(asyncio.run(self.task.tool.lookup(arguments["order_id"]))), False
        except OrderToolError as error:
            return str(error), not error.retryable

    def structured_turn(self) -> None:
        """A composed structured turn after the loop, as agentmaker runs it: a fresh request from
        the session's text history (the prompt and the loop's final text), offering no tool."""
        history = [USER, {"role": "assistant", "content": "(Max turns reached)"}, {"role": "user", "content": "JSON"}]
        httpx.post(self.url, json={"model": "gpt-4o-mini", "messages": history}, timeout=10)


def _run(
    provider: LocalProvider, script: list[Any], plan: ToolPlan, turns: int = 6, planned_turn: bool = False, **agent: Any
) -> tuple[Any, Any, Any]:
    with provider.open_script("order_lookup", script, call_cap=8) as run:
        loop = ChatAgent(run.endpoint.root, plan, **agent)
        loop.run(turns)
        if planned_turn:
            loop.structured_turn()
        attempts = list(run.attempts)
    assert loop.task.tool is not None
    tools = summarise_tools(attempts, loop.task.tool, planned_turn=planned_turn)
    return tools, summarise(attempts, tools.tool_retries + tools.tool_round_trips), loop.task.tool


WRONG_ID = {"tool_call": {"order_id": "ORD-1024"}}
BAD_ARGS = {"tool_call": {"order": "ORD-1042"}}


def test_a_clean_round_trip_is_not_a_retry(provider: LocalProvider) -> None:
    tools, ledger, _ = _run(provider, [CALL, "valid"], ToolPlan())
    assert (tools.tool_calls_requested, tools.tool_calls, tools.tool_round_trips, tools.tool_retries) == (1, 1, 1, 0)
    assert (ledger.model_calls, ledger.output_retries) == (2, 0)
    assert tools.tool_error_to_model is None and tools.tool_calls_after_fatal is None


def test_a_business_error_returned_with_its_call_id_is_a_structured_tool_retry(provider: LocalProvider) -> None:
    tools, ledger, tool = _run(provider, [WRONG_ID, CALL, "valid"], ToolPlan())
    assert [i.error_code for i in tool.invocations] == ["ORDER_NOT_FOUND", None]
    assert (tools.tool_retries, tools.tool_round_trips, ledger.output_retries) == (1, 1, 0)
    assert tools.tool_error_to_model is True and tools.tool_error_structured is True


def test_a_result_under_another_id_does_not_count_as_returned(provider: LocalProvider) -> None:
    tools, _, _ = _run(provider, [WRONG_ID, CALL, "valid"], ToolPlan(), pair_ids=False)
    assert tools.tool_error_to_model is False
    assert tools.tool_error_structured is None


@pytest.mark.parametrize(
    ("script", "turns"),
    [([CALL, "valid"], (0, 1, 0)), ([WRONG_ID, CALL, "valid"], (1, 1, 0)), ([BAD_ARGS, CALL, "valid"], (1, 1, 0))],
)
def test_results_carried_back_as_text_count_as_turns_not_output_retries(
    provider: LocalProvider, script: list[Any], turns: tuple[int, int, int]
) -> None:
    """An SDK that writes tool results into the conversation as text pairs nothing by id: its
    tool turns are still tool turns (a first-time-right run is not ``recovered``), while the
    error is not paired back with its call id."""
    tools, ledger, _ = _run(provider, script, ToolPlan(), as_text=True)
    assert (tools.tool_retries, tools.tool_round_trips, ledger.output_retries) == turns
    assert tools.tool_error_to_model is (None if len(script) == 2 else False)


def test_bad_arguments_never_run_the_tool_and_are_not_judged_for_structure(provider: LocalProvider) -> None:
    tools, _, tool = _run(provider, [BAD_ARGS, CALL, "valid"], ToolPlan())
    assert (tools.tool_calls_requested, tools.tool_calls, len(tool.invocations)) == (2, 1, 1)
    assert tools.tool_error_to_model is True and tools.tool_error_structured is None


@pytest.mark.parametrize(("stop", "after"), [(True, 0), (False, 5)])
def test_tool_runs_after_a_non_retryable_error_are_counted(provider: LocalProvider, stop: bool, after: int) -> None:
    tools, _, _ = _run(provider, [CALL], ToolPlan(upstream=["permission_denied"]), stop_on_fatal=stop)
    assert tools.tool_calls_after_fatal == after
    assert tools.tool_errors == 1 + after


def test_upstream_timeouts_are_retried_inside_the_tool(provider: LocalProvider) -> None:
    tools, ledger, tool = _run(provider, [CALL, "valid"], ToolPlan(upstream=["timeout", "timeout", "ok"]))
    assert (tools.tool_calls, tools.tool_transport_retries, tools.tool_retries) == (1, 2, 0)
    assert tool.invocations[0].upstream_calls == 3 and ledger.model_calls == 2


def test_a_persistent_upstream_timeout_becomes_a_retryable_tool_error(provider: LocalProvider) -> None:
    _, _, tool = _run(provider, [CALL, "valid"], ToolPlan(upstream=["timeout"]))
    assert tool.invocations[0].error_code == "UPSTREAM_TIMEOUT" and tool.invocations[0].retryable is True


def test_a_loop_ended_by_its_turn_limit_before_a_planned_turn_returned_every_error(provider: LocalProvider) -> None:
    """Issue 13 point 12: the loop's last call (its turn limit came next) is followed by the
    adapter's planned structured turn, which starts from text history; that call's result was
    never going to be sent, so it is the loop's end, not a dropped result."""
    tools, _, _ = _run(provider, [WRONG_ID], ToolPlan(), turns=3, planned_turn=True)
    assert (tools.tool_calls, tools.tool_retries, tools.tool_calls_requested) == (3, 2, 4)
    assert tools.tool_error_to_model is True and tools.tool_error_structured is True


def test_a_planned_turn_does_not_hide_a_result_the_loop_dropped(provider: LocalProvider) -> None:
    tools, _, _ = _run(provider, [WRONG_ID], ToolPlan(), turns=3, planned_turn=True, pair_ids=False)
    assert tools.tool_error_to_model is False
