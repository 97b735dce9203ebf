"""What happened to the tool calls of one run, from the ledger and the tool's own log.

The provider knows which calls the model issued (with their call ids and arguments) and which
tool results each later request carried back; the harness tool knows how often it really ran
and how each run ended. Together they answer issue 7's questions without looking inside an
SDK: did the error reach the model paired with its call id, and structured; how often did the
tool run; did a non-retryable error stop the loop; which model calls were tool retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from pydantic import BaseModel, ValidationError

from bench.provider.detect import ToolResultSeen
from bench.provider.ledger import HELD_AT_CAP, AttemptRecord, IssuedCall
from bench.tools import OrderLookupTool
from bench.tools.own import OwnToolLog


@dataclass(frozen=True)
class ToolSummary:
    tool_calls_requested: int
    """Calls of the harness tool the model issued."""
    tool_calls: int
    """Times the tool function actually ran (a call whose arguments failed the schema never runs)."""
    tool_errors: int
    """Runs of the tool that ended in its structured error."""
    tool_retries: int
    """Model calls that carried a failed tool call's result back (the model's chance to fix it)."""
    tool_round_trips: int
    """Model calls that carried a successful tool result back: a normal turn, not a retry."""
    tool_error_to_model: bool | None
    """Every failed call (arguments that failed the schema, or a run of the tool that raised)
    that the run went on after had its result, paired with the call id the model issued, in a
    later request. False when a later request lacked it; None when the run went on after no
    failed call (a run that raised at its first tool error shows that in ``outcome``)."""
    tool_error_structured: bool | None
    """Every tool error paired back carried the tool's structured error (code, retryable,
    attempt, message), not just a generic message. None when no tool error was paired back."""
    tool_calls_after_fatal: int | None
    """Tool runs after the first non-retryable error; None when there was none."""
    tool_transport_retries: int
    """Upstream retries inside the tool (its own transport layer)."""


def summarise_tools(attempts: list[AttemptRecord], tool: OrderLookupTool, planned_turn: bool = False) -> ToolSummary:
    """``planned_turn``: the adapter composed a turn of its own after the tool loop
    (``AdapterResult.planned_calls``, agentmaker's structured turn), so the loop's end is not the
    run's end; see :func:`loop_end`. A user's own tool (:class:`bench.tools.own.OwnToolLog`)
    is summarised by :func:`summarise_own_tools`."""
    if isinstance(tool, OwnToolLog):
        return summarise_own_tools(attempts, tool)
    requests, calls, issued, returned = _issued(attempts)
    retries, round_trips = _turns(calls, {call.call_id for _, call in issued}, lambda result: result.success)
    if issued and not returned:  # results carried back as text, paired with no call id
        retries, round_trips = _unpaired_turns(calls, issued, _failed_calls(issued, tool))
    paired, structured = [], []
    runs = iter(tool.invocations)
    last_call = loop_end(requests) if planned_turn else (requests[-1].attempt if requests else None)
    for record, call in issued:
        if last_call is not None and record.attempt is not None and record.attempt > last_call:
            break  # the planned turn offers no tool: a call there is no call of the loop
        valid = _arguments_valid(call.arguments, tool.args_model)
        invocation = next(runs, None) if valid else None
        if valid and (invocation is None or invocation.error_code is None):
            continue  # a successful (or never run) call: not a failure to report
        if record.attempt == last_call:
            continue  # the loop ended here (raised, or its turn limit): the outcome says so
        result = returned.get(call.call_id)
        paired.append(result is not None)
        if valid and result is not None:
            structured.append(result.structured_error)
    fatal = next((i for i in tool.invocations if i.error_code and i.retryable is False), None)
    return ToolSummary(
        tool_calls_requested=len(issued),
        tool_calls=len(tool.invocations),
        tool_errors=sum(1 for i in tool.invocations if i.error_code),
        tool_retries=retries,
        tool_round_trips=round_trips,
        tool_error_to_model=all(paired) if paired else None,
        tool_error_structured=all(structured) if structured else None,
        tool_calls_after_fatal=None if fatal is None else len(tool.invocations) - fatal.index - 1,
        tool_transport_retries=sum(i.upstream_calls - 1 for i in tool.invocations),
    )


Issued = list[tuple[AttemptRecord, IssuedCall]]


def _issued(
    attempts: list[AttemptRecord],
) -> tuple[list[AttemptRecord], list[AttemptRecord], Issued, dict[str, ToolResultSeen]]:
    """The run's requests, those that reached the model, every call of an agent's tool (a
    parallel turn's several calls each on its own) and every tool result carried back by id."""
    requests = [a for a in attempts if a.attempt is not None]
    calls = [a for a in requests if a.behaviour != HELD_AT_CAP]
    issued = [(a, call) for a in calls if a.status_code == 200 for call in a.tool_calls if call.function]
    # The request held at the call cap was sent, so what it carried back reached the provider.
    returned = {result.call_id: result for a in requests for result in a.tool_results}
    return requests, calls, issued, returned


def _turns(
    calls: list[AttemptRecord], issued_ids: set[str], success: Callable[[ToolResultSeen], bool]
) -> tuple[int, int]:
    """(tool retries, tool round trips): model calls that carried a failed call's result back,
    and those that carried a successful one back (a normal turn)."""
    retries = round_trips = 0
    seen: set[str] = set()
    for current in calls:
        new_results = [r for r in current.tool_results if r.call_id in issued_ids and r.call_id not in seen]
        seen.update(r.call_id for r in new_results)
        if any(success(r) for r in new_results):
            round_trips += 1
        elif new_results:
            retries += 1
    return retries, round_trips


def _failed_calls(issued: Issued, tool: OrderLookupTool) -> set[str]:
    """The ids of the issued calls that failed: arguments that fail the tool's schema (the tool
    never runs), or a run of the tool that ended in its error (runs matched to valid calls in order)."""
    runs = iter(tool.invocations)
    failed = set()
    for _, call in issued:
        invocation = next(runs, None) if _arguments_valid(call.arguments, tool.args_model) else None
        if invocation is None or invocation.error_code is not None:
            failed.add(call.call_id)
    return failed


def _unpaired_turns(calls: list[AttemptRecord], issued: Issued, failed: set[str]) -> tuple[int, int]:
    """(tool retries, tool round trips) of a run whose SDK carries tool results back as text, with
    no call id (smolagents writes them into the next message): the model call after a turn that
    issued tool calls is that turn's answer, a round trip when each of the turn's calls
    succeeded, else a retry. Counted only where no request of the run paired a result by id,
    so an SDK that pairs keeps :func:`_turns`' count, a result it dropped included."""
    by_turn: dict[int | None, list[str]] = {}
    for record, call in issued:
        by_turn.setdefault(record.attempt, []).append(call.call_id)
    retries = round_trips = 0
    for previous, _ in pairwise(calls):
        ids = by_turn.get(previous.attempt)
        if ids and any(call_id in failed for call_id in ids):
            retries += 1
        elif ids:
            round_trips += 1
    return retries, round_trips


def summarise_own_tools(attempts: list[AttemptRecord], log: OwnToolLog) -> ToolSummary:
    """The tool columns for a user's own tool, from the ledger and the wrapper's log.

    A user's tool returns what it returns (no marker says success), so each issued call is
    matched to the log: a call whose arguments fail the tool's schema, or of a tool the agent
    has none of, never reaches it and failed; the others reach it in order, and failed when
    that run raised. A call that never ran (the run ended first) is neither. The structured
    error, the fatal stop and the transport retries are the harness tool's: null or 0 here."""
    requests, calls, issued, returned = _issued(attempts)
    runs = iter(sorted(log.invocations, key=lambda invocation: invocation.index))
    failed: dict[str, bool] = {}
    for _, call in issued:
        valid = log.arguments_valid(_json(call.arguments))
        invocation = next(runs, None) if valid else None
        if not valid or invocation is not None:
            failed[call.call_id] = not valid or (invocation is not None and invocation.error_code is not None)
    retries, round_trips = _turns(calls, set(failed), lambda result: not failed[result.call_id])
    if issued and not returned:  # results carried back as text, paired with no call id
        retries, round_trips = _unpaired_turns(calls, issued, {call_id for call_id, bad in failed.items() if bad})
    last_call = requests[-1].attempt if requests else None
    paired = [
        call.call_id in returned for record, call in issued if failed.get(call.call_id) and record.attempt != last_call
    ]
    return ToolSummary(
        tool_calls_requested=len(issued),
        tool_calls=len(log.invocations),
        tool_errors=sum(1 for invocation in log.invocations if invocation.error_code),
        tool_retries=retries,
        tool_round_trips=round_trips,
        tool_error_to_model=all(paired) if paired else None,
        tool_error_structured=None,
        tool_calls_after_fatal=None,
        tool_transport_retries=0,
    )


def _json(text: str) -> object:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def loop_end(requests: list[AttemptRecord]) -> int | None:
    """The attempt at which a tool loop followed by a planned turn ended.

    A tool loop's requests carry the results of the calls made so far; the planned turn starts
    afresh from the session's text history (agentmaker persists a turn as user and assistant
    text only, agents/base.py:539-544), so its first request carries no tool result. The loop
    ended at the request before that one: a failed call made there (the loop's turn limit came
    next) was never going to be returned, which is the loop's end, not a dropped result.
    """
    called = False
    for previous, current in pairwise(requests):
        called = called or previous.tool_call_id is not None
        if called and not current.tool_results:
            return previous.attempt
    return requests[-1].attempt if requests else None


def _arguments_valid(arguments: str, args_model: type[BaseModel]) -> bool:
    """Whether the call's arguments pass the tool's schema: only then did the tool itself run
    and raise (otherwise the SDK's own validation message is what goes back)."""
    try:
        args_model.model_validate(json.loads(arguments or ""))
    except (ValueError, ValidationError):
        return False
    return True
