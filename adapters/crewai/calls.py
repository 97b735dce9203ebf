"""CrewAI's calls, as a user writes them: imported only in the crewai environment's worker
(adapter.py declares the cells without the SDK; the worker preloads this module).

Before crewai is imported, its three network switches are set off, so nothing leaves loopback:
``CREWAI_DISABLE_TELEMETRY`` and ``OTEL_SDK_DISABLED`` (either stops the anonymous telemetry's
OTLP exporter to telemetry.crewai.com from being built: crewai_core/telemetry.py:294, 354-359,
crewai/telemetry/telemetry.py:100-118) and ``CREWAI_TRACING_ENABLED=false`` (an explicit no to the
trace upload, crewai/events/listeners/tracing/utils.py:150-170). They are assigned, not defaulted:
a variable in the caller's environment cannot turn them back on.

One crew per cell: CrewAI's ``Agent``, ``Task`` and ``Crew`` keep the run's state (the executor,
``Task.retry_count``, the output: task.py:282), so a user's loop builds them per request. The LLM
gets the endpoint's ``base_url`` and ``api_key`` explicitly (they win over OPENAI_* / ANTHROPIC_*)
and every budget is left at CrewAI's default: what the provider's ledger counts is CrewAI's.

No ``from __future__ import annotations`` here: CrewAI reads a guardrail's return annotation at
``Task`` construction and rejects a string one (task.py:357-369), so ``tuple[bool, Any]`` must be
the real object.
"""

import os

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

from typing import Any

from crewai import LLM, Agent, Crew, TaskOutput
from crewai import Task as CrewTask

from adapters.crewai.settings import GUARDRAIL_MAX_RETRIES, NATIVE_ANTHROPIC_MODEL, OUTPUT_JSON
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage


async def run(cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
    """One ``akickoff`` of a one-agent crew (native async, so a cancelled cell stops it; ``kickoff_async``
    runs the sync kickoff in a thread that cancellation cannot stop: crew.py:1137-1216, 1217-1230);
    only the SDK call is guarded."""
    crew = _crew(cell, task, endpoint)
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    try:
        output = await crew.akickoff()
    except Exception as error:  # CrewAI's own (the guardrail's Exception, ConverterError, the provider's)
        result.exception = error
        result.usage = _usage(crew.usage_metrics)
        return result
    result.output = output.json_dict if cell.variant == OUTPUT_JSON else output.pydantic
    result.usage = _usage(output.token_usage)
    return result


def _llm(cell: Cell, endpoint: Endpoint) -> LLM:
    """CrewAI's ``LLM`` class, which picks its native provider from the model's prefix
    (llm.py ``LLM.__new__``): ``openai/`` for Chat and Responses, ``anthropic/`` for Messages."""
    stream = cell.variant == Variant.STREAM
    if cell.protocol is Protocol.ANTHROPIC:
        model = NATIVE_ANTHROPIC_MODEL if cell.mode is Mode.NATIVE else endpoint.anthropic_model
        return LLM(model=f"anthropic/{model}", base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key,
                   stream=stream)  # fmt: skip
    api = "responses" if cell.protocol is Protocol.RESPONSES else "completions"
    return LLM(model=f"openai/{endpoint.openai_model}", base_url=endpoint.openai_base_url, api_key=endpoint.api_key,
               api=api, stream=stream)  # fmt: skip


def _crew(cell: Cell, task: Task, endpoint: Endpoint) -> Crew:
    agent = Agent(
        role="Extractor",
        goal="Answer the task exactly, in the requested structure",
        backstory="A careful assistant.",
        llm=_llm(cell, endpoint),
        verbose=False,
    )
    declared: dict[str, Any] = {"output_json" if cell.variant == OUTPUT_JSON else "output_pydantic": task.output_model}
    if cell.variant == Variant.HARDENED:
        declared["guardrail"] = _guardrail(task)
        declared["guardrail_max_retries"] = GUARDRAIL_MAX_RETRIES
    crew_task = CrewTask(description=task.prompt, expected_output="The requested object.", agent=agent, **declared)
    return Crew(agents=[agent], tasks=[crew_task], verbose=False)


def _guardrail(task: Task) -> Any:
    """CrewAI's documented function guardrail: ``(True, output)`` or ``(False, reason)``; a False
    re-runs the agent with the reason (task.py:1464-1512)."""

    def check(output: TaskOutput) -> tuple[bool, Any]:
        if output.pydantic is None:
            return False, "the answer did not parse into the requested structure"
        reason = task.check(output.pydantic)
        return (False, reason) if reason is not None else (True, output)

    return check


def _usage(usage: Any) -> ReportedUsage | None:
    """CrewAI's ``UsageMetrics``, summed over the crew's LLM calls (types/usage_metrics.py:32)."""
    if usage is None:
        return None
    return ReportedUsage(getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
