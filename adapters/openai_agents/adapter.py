"""OpenAI Agents SDK (``openai-agents``, import name ``agents``) adapter.

The SDK declares structured output one way: ``Agent(output_type=Model)``, sent as a strict
``json_schema`` response format and validated by ``AgentOutputSchema.validate_json``. That is the
``native`` cell. A ``tool`` cell is composed from the SDK's own tool machinery (a function tool
whose parameters are the task's fields, forced with ``tool_choice`` and made final with
``StopAtTools``). ``prompted`` needs parsing the SDK does not have, and the Anthropic protocol
needs the LiteLLM / any-llm extensions, which are not installed: both are listed, never run.

A task with a harness tool (``task.tool``, issue 7) gets it as one more ``function_tool`` in every
supported cell. The SDK's own policy for a raised tool exception is what the default and stream
variants measure (``default_tool_error_function``: a fixed string to the model); the hardened
variant installs the documented ``failure_error_function`` hook to hand the model the structured
error when it is retryable and to re-raise when it is not.

Line references are to openai-agents 0.24.0 under ``site-packages/agents``; the research notes
(adapters/openai_agents/research.md) explain each one.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    OutputGuardrail,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.agent import StopAtTools  # defined here in every 0.2; 0.2.3 does not export it from agents
from agents.exceptions import ModelBehaviorError
from agents.models.interface import Model
from agents.usage import Usage
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

try:
    from agents import ModelRetrySettings, RunErrorHandlerInput, RunErrorHandlers, retry_policies
except ImportError:  # bridge for releases before 0.12: no retry settings (hardened is unsupported there)
    # The type checker sees the pinned release, where these are types.
    ModelRetrySettings = RunErrorHandlerInput = RunErrorHandlers = retry_policies = None  # type: ignore[misc, assignment]

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import (
    PROTOCOLS,
    VARIANTS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    ReleaseNeed,
    ReportedUsage,
    Support,
    SupportTable,
    grid,
)  # fmt: skip
from bench.tools import ERROR_MARKER, OrderLookupTool, OrderToolError, current_run_function

OUTPUT_TOOL_NAME = "final_result"
"""The composed tool cell's tool name; the provider also knows it as an output tool."""

MODES = (Mode.NATIVE, Mode.TOOL, Mode.PROMPTED)
"""Native first: the one declaration the SDK has (module docstring); tool is composed."""

_NOTES: dict[Mode, str] = {
    Mode.NATIVE: (
        "Agent(output_type=Model): strict json_schema response format "
        "(chatcmpl_converter.py:107-120, openai_responses.py:2099-2110), "
        "validated by AgentOutputSchema.validate_json (agent_output.py:142)"
    ),
    Mode.TOOL: (
        "function_tool whose parameters are the task's fields, ModelSettings(tool_choice=...) "
        "and tool_use_behavior=StopAtTools: args parsed and validated by the SDK "
        "(tool.py:1963-1987, 2779-2796); output_type is still set so the object is not str()-ed "
        "(turn_resolution.py:253), hence the request also carries the response format"
    ),
    Mode.PROMPTED: (
        "unsupported: a non-text output_type always sends a json_schema response format "
        "(chatcmpl_converter.py:107-120); schema-in-instructions plus parsing free text would be "
        "our parsing, not the SDK's"
    ),
}
_ANTHROPIC_NOTE = (
    "unsupported: Anthropic Messages needs agents.extensions.models.litellm_model / "
    "any_llm_model, whose litellm / any-llm dependencies are not installed"
)


@dataclass
class _RunContext:
    """The run's user context (``Runner.run(context=...)``): lets the hardened error handler tell
    the output guardrail that the final output is its own fallback, and lets us report which
    handler produced it."""

    task: Task
    fallback_kind: str | None = None


class _UsageProbe(RunHooks[Any]):
    """Keeps the SDK's ``RunContextWrapper``: its ``usage`` is added right after each model
    response (run_internal/run_loop.py:3065), before output validation can raise, and it is the
    only usage handle left when a redacted error carries no ``run_data`` (run.py:2422-2423)."""

    def __init__(self) -> None:
        self.wrapper: RunContextWrapper[Any] | None = None

    async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
        # Called with the run's own wrapper before every model call (run_loop.py:2968).
        self.wrapper = context


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """Native is the SDK's own declaration, tool is composed from its tool machinery, prompted
    and the Anthropic protocol are out of reach (module docstring)."""
    if protocol is Protocol.ANTHROPIC:
        return Support.unsupported(_ANTHROPIC_NOTE)
    if mode is Mode.PROMPTED:
        return Support.unsupported(_NOTES[mode])
    return Support.builtin(_NOTES[mode]) if mode is Mode.NATIVE else Support.composed(_NOTES[mode])


class OpenAIAgentsAdapter(Adapter):
    name: ClassVar[str] = "openai-agents"
    distribution: ClassVar[str] = "openai-agents"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    harness_tools: ClassVar[bool] = True
    supported_releases: ClassVar[str] = ">=0.2"
    """``Agent(output_type=)``, ``OpenAIChatCompletionsModel``, ``StopAtTools`` and
    ``function_tool(failure_error_function=)`` as used here exist from 0.2."""
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = (
        ReleaseNeed(
            "0.18",
            "RunErrorHandlers['invalid_final_output'] (0.18), ['model_refusal'] (0.15), ModelRetrySettings (0.12)",
            variant=Variant.HARDENED,
        ),
    )
    """Every runnable cell takes the harness tool as one more ``function_tool``."""
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Build the agent for ``cell``, run it once, report what reached the caller."""
        # Belt and braces: RunConfig(tracing_disabled=True) below already keeps this run's spans
        # from the default exporter, which posts to api.openai.com (tracing/processors.py:46).
        set_tracing_disabled(True)
        with clients.routed(endpoint) as provider_wide, task.tool.current() if task.tool is not None else nullcontext():
            if provider_wide is not None:
                return await _run_cell(cell, task, _reused_agent(cell, task, provider_wide))
            # Per cell: the run's shared transport if any (outside a run the client builds its
            # own, closed with the cell).
            transport = clients.shared((self.name, cell.protocol), _routing_transport)
            client = AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key, http_client=transport)
            try:
                agent = _build_agent(cell, task, _model(cell.protocol, endpoint, client), task.tool)
                return await _run_cell(cell, task, agent)
            finally:
                if transport is None:  # a shared one is the run's to close
                    await client.close()


def _reused_agent(cell: Cell, task: Task, provider_wide: Endpoint) -> Agent[_RunContext]:
    """The cell's agent within a run: one per (cell, task), reused by every scenario and rep of
    it (:func:`bench.sdk.clients.reused`), as a user's loop reuses its agent. It holds nothing of
    one run: a run's state lives in the Runner's per-run objects (the context wrapper, the
    tool-use tracker, whose reset returns a new ModelSettings rather than changing the agent:
    run_internal/tool_execution.py:562-569); the model keeps its client and settings (and
    warn-once flags for options no cell sets, models/openai_chatcompletions.py:73-75); the
    output guardrail reads the task from the run's context; the harness tool is
    :func:`bench.tools.current_run_function`, which calls the cell's own tool. The AsyncOpenAI
    client is built on the run's shared transport (openai's ``DefaultAsyncHttpxClient``, the
    defaults AsyncOpenAI gives the client it builds itself, openai/_base_client.py:1563-1610,
    1671), whose hook routes each request to its cell's run."""

    def build() -> Agent[_RunContext]:
        transport = clients.shared((OpenAIAgentsAdapter.name, cell.protocol), _routing_transport)
        client = AsyncOpenAI(
            base_url=provider_wide.openai_base_url, api_key=provider_wide.api_key, http_client=transport
        )
        return _build_agent(cell, task, _model(cell.protocol, provider_wide, client), current_run_function)

    return clients.reused(
        (OpenAIAgentsAdapter.name, cell, task.name, task.tool_name, task.output_model, provider_wide.root), build
    )


def _routing_transport() -> DefaultAsyncHttpxClient:
    return clients.routing(DefaultAsyncHttpxClient())


async def _run_cell(cell: Cell, task: Task, agent: Agent[_RunContext]) -> AdapterResult:
    """Run ``agent`` once for the cell and report what reached the caller."""
    context = _RunContext(task=task)
    probe = _UsageProbe()
    run_kwargs: dict[str, Any] = {
        "context": context,
        "hooks": probe,
        "run_config": RunConfig(tracing_disabled=True),
    }
    if cell.variant == Variant.HARDENED:
        run_kwargs["error_handlers"] = _error_handlers(task)
    run = _run_streamed if cell.stream else _run
    result = await run(agent, task.prompt, run_kwargs, probe)
    result.fallback = result.exception is None and context.fallback_kind is not None
    result.details |= _cell_details(cell)
    if task.tool is not None:
        result.details["harness_tool_failure"] = (
            "structured_or_raise" if cell.variant == Variant.HARDENED else "default_tool_error_function"
        )
    if context.fallback_kind is not None:
        result.details["fallback_handler"] = context.fallback_kind
    return result


def _cell_details(cell: Cell) -> dict[str, str]:
    """How the cell was configured, as columns: the tool cells differ in their failure policy."""
    if cell.mode is not Mode.TOOL:
        return {}
    return {"tool_failure": "raise" if cell.variant == Variant.HARDENED else "error_string_as_output"}


def _model(protocol: Protocol, endpoint: Endpoint, client: AsyncOpenAI) -> Model:
    """An explicit model object on our client, so the SDK's default provider (and with it
    OPENAI_API_KEY / api.openai.com) is never consulted (models/multi_provider.py)."""
    if protocol is Protocol.CHAT:
        return OpenAIChatCompletionsModel(model=endpoint.openai_model, openai_client=client)
    if protocol is Protocol.RESPONSES:
        return OpenAIResponsesModel(model=endpoint.openai_model, openai_client=client)
    raise ValueError(f"no OpenAI Agents model for protocol {protocol}")


def _build_agent(cell: Cell, task: Task, model: Model, tool: ToolSource) -> Agent[_RunContext]:
    """The agent a user would write for ``cell``: shortest form for default/stream, plus the
    SDK's production hooks (output guardrail, retry settings, tool error policy) for hardened."""
    hardened = cell.variant == Variant.HARDENED
    settings = ModelSettings(retry=_retry_settings()) if hardened else ModelSettings()
    kwargs: dict[str, Any] = {
        "name": "extractor",
        "instructions": "Answer with the requested structured output.",
        "model": model,
        # Strict by default: AgentOutputSchema(strict_json_schema=True) (agent_output.py:85),
        # which also validates with pydantic strict=True (agent_output.py:152).
        "output_type": task.output_model,
    }
    if hardened:
        kwargs["output_guardrails"] = [_check_guardrail()]
    tools: list[FunctionTool] = []
    if cell.mode is Mode.TOOL:
        # Forcing the tool by name: ModelSettings.tool_choice (chatcmpl_converter.py:94-104).
        # With a harness tool the model must be free to call it first, so any tool is forced
        # ("required"); after the first tool call the SDK drops tool_choice altogether
        # (Agent.reset_tool_choice, agent.py:418; run_internal/tool_execution.py:562-570).
        choice = OUTPUT_TOOL_NAME if task.tool is None else "required"
        settings = settings.resolve(ModelSettings(tool_choice=choice))
        tools.append(_output_tool(task, raise_on_error=hardened))
        # The first matching tool's return value is the final output, unvalidated against
        # output_type (turn_resolution.py:789-794, 267). A call of any other tool goes back to
        # the model ("run_llm_again").
        kwargs["tool_use_behavior"] = StopAtTools(stop_at_tool_names=[OUTPUT_TOOL_NAME])
    if task.tool is not None:
        tools.append(_harness_tool(tool, hardened=hardened))
    if tools:
        kwargs["tools"] = tools
    return Agent(model_settings=settings, **kwargs)


ToolSource = OrderLookupTool | Callable[[], Callable[[str], Awaitable[dict[str, Any]]]] | None
"""Where the harness tool function comes from: one run's tool (its ``as_function``), or
:func:`bench.tools.current_run_function` for an agent reused across cells."""


def _harness_tool(tool: ToolSource, *, hardened: bool) -> FunctionTool:
    """The task's tool as a user would declare it: ``function_tool(lookup_order)``.

    The SDK builds the args schema from the signature and docstring (function_schema.py), parses
    and validates the arguments (tool.py:2779-2798) and calls our function. Default: nothing else,
    so a raised ``OrderToolError`` or an argument ``ModelBehaviorError`` goes to
    ``default_tool_error_function`` (tool.py:697-710, 1997-2002). Hardened: the documented
    ``failure_error_function`` hook (tool.py:2717-2719) with :func:`_structured_tool_error`.
    """
    assert tool is not None
    options: dict[str, Any] = {"failure_error_function": _structured_tool_error} if hardened else {}
    return function_tool(tool.as_function() if isinstance(tool, OrderLookupTool) else tool(), **options)


def _structured_tool_error(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The hardened tool-error policy: what the SDK's ``failure_error_function`` returns is the
    tool output the model sees, paired with the call id (tool.py:697-711); what it raises ends
    the run (it leaves ``__call__`` at tool.py:702, and run_internal/tool_execution.py:1859-1861
    wraps a non-SDK exception in ``UserError``).

    - a retryable ``OrderToolError``: its structured JSON (code, retryable, attempt, message);
    - a non-retryable one (permission, quota): re-raised, so the model is not asked again;
    - arguments that failed the schema (``ModelBehaviorError``, tool.py:2781-2798): a structured
      retryable error. The SDK redacts the validation detail by default (``_debug.py:16-17``,
      tool.py:2791-2798), so the message can only say that the arguments did not fit.
    """
    if isinstance(error, OrderToolError):
        if error.retryable:
            return str(error)
        raise error
    if isinstance(error, ModelBehaviorError):
        return json.dumps(
            {
                ERROR_MARKER: "INVALID_ARGUMENTS",
                "retryable": True,
                "message": f"{error}. Call the tool again with arguments that match its parameter schema.",
            }
        )
    raise error


def _output_tool(task: Task, *, raise_on_error: bool) -> FunctionTool:
    """A function tool whose parameters are exactly the task model's fields.

    The SDK derives the args schema from the signature (function_schema.py:360-540), parses the
    arguments (tool.py:1963) and validates them (tool.py:2787); our body only assembles the
    already-validated values. With the default ``failure_error_function`` an invalid call returns
    the SDK's error string as the tool's output (tool.py:697-710, 1997-2002); with ``None`` the
    ``ModelBehaviorError`` propagates (tool.py:706-707, 2101-2103; run_internal/tool_execution.py:1859-1860).
    """
    output_model = task.output_model
    parameters = [
        inspect.Parameter(
            field_name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[field.annotation, field],
        )
        for field_name, field in output_model.model_fields.items()
    ]

    def final_result(**values: Any) -> Any:
        return output_model(**values)

    final_result.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    final_result.__annotations__ = {p.name: p.annotation for p in parameters}
    description = (output_model.__doc__ or "").strip() or f"Return the {output_model.__name__}."
    options: dict[str, Any] = {"failure_error_function": None} if raise_on_error else {}
    return function_tool(
        final_result,
        name_override=OUTPUT_TOOL_NAME,
        description_override=f"Final answer. {description}",
        **options,
    )


def _retry_settings() -> ModelRetrySettings:
    """Runner-managed transport retries are opt-in (model_settings.py:188, retry.py:210); the
    hardened variant opts in with the provider-suggested policy (retry.py:315-333)."""
    return ModelRetrySettings(
        max_retries=2,
        backoff={"initial_delay": 0.5, "max_delay": 4.0, "multiplier": 2.0, "jitter": False},
        policy=retry_policies.provider_suggested(),
    )


def _check_guardrail() -> OutputGuardrail[_RunContext]:
    """An output guardrail running ``task.check``; a tripwire raises
    ``OutputGuardrailTripwireTriggered`` (run_internal/guardrails.py:214). It also runs on an
    error handler's fallback (run.py:2111-2118), so it lets the handler's own value through."""

    def semantic_check(ctx: RunContextWrapper[_RunContext], agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
        if ctx.context.fallback_kind is not None:
            return GuardrailFunctionOutput(output_info="fallback", tripwire_triggered=False)
        reason = ctx.context.task.check(output)
        return GuardrailFunctionOutput(output_info=reason, tripwire_triggered=reason is not None)

    return OutputGuardrail(guardrail_function=semantic_check, name="task_check")


def _error_handlers(task: Task) -> RunErrorHandlers[_RunContext]:
    """The SDK's opt-in run error handlers (run_error_handlers.py:50-55) for output that does not
    fit: invalid final output and refusal. The SDK re-validates the fallback against output_type
    (run_internal/error_handlers.py:170-205), so it must be schema-valid: we return the task's
    plausible-but-wrong object, which the runner can tell from a correct answer."""

    def fallback(kind: str) -> Any:
        def handler(data: RunErrorHandlerInput[_RunContext]) -> Any:
            data.context.context.fallback_kind = kind
            return task.output_model.model_validate(dict(task.wrong))

        return handler

    return {
        "invalid_final_output": fallback("invalid_final_output"),
        "model_refusal": fallback("model_refusal"),
    }


async def _run(agent: Agent[_RunContext], prompt: str, run_kwargs: dict[str, Any], probe: _UsageProbe) -> AdapterResult:
    try:
        result = await Runner.run(agent, prompt, **run_kwargs)
    except Exception as exc:  # the SDK's exception, recorded as is
        return _raised(exc, probe)
    details = {"usage_source": "result.context_wrapper"}
    return AdapterResult(
        output=result.final_output,
        usage=_usage(result.context_wrapper.usage),
        details=details | _usage_details(result.context_wrapper.usage),
    )


async def _run_streamed(
    agent: Agent[_RunContext], prompt: str, run_kwargs: dict[str, Any], probe: _UsageProbe
) -> AdapterResult:
    """``Runner.run_streamed`` returns at once; failures surface from ``stream_events()``
    (result.py:1005-1149). The result object keeps ``context_wrapper`` either way."""
    streamed = None
    try:
        streamed = Runner.run_streamed(agent, prompt, **run_kwargs)
        async for _event in streamed.stream_events():
            pass
    except Exception as exc:  # the SDK's exception, recorded as is
        result = _raised(exc, probe)
        if streamed is not None:
            result.usage = _usage(streamed.context_wrapper.usage)
            result.details |= {"usage_source": "stream.context_wrapper"}
            result.details |= _usage_details(streamed.context_wrapper.usage)
        return result
    usage = streamed.context_wrapper.usage
    return AdapterResult(
        output=streamed.final_output,
        usage=_usage(usage),
        details={"usage_source": "stream.context_wrapper"} | _usage_details(usage),
    )


def _raised(exc: Exception, probe: _UsageProbe) -> AdapterResult:
    """Usage after a raise: ``exc.run_data.context_wrapper`` when the SDK attached run data
    (run.py:2443), else the wrapper the hooks saw (a redacted error has no run_data)."""
    run_data = getattr(exc, "run_data", None)
    details = {"run_data": "present" if run_data is not None else "absent"}
    wrapper = run_data.context_wrapper if run_data is not None else probe.wrapper
    if wrapper is None:
        return AdapterResult(exception=exc, details=details | {"usage_source": "none"})
    source = "exception.run_data" if run_data is not None else "hooks.context_wrapper"
    return AdapterResult(
        exception=exc,
        usage=_usage(wrapper.usage),
        details=details | {"usage_source": source} | _usage_details(wrapper.usage),
    )


def _usage(usage: Usage) -> ReportedUsage:
    return ReportedUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


def _usage_details(usage: Usage) -> dict[str, str]:
    """``Usage.requests`` counts model responses the SDK accounted for (usage.py:197)."""
    return {"sdk_requests": str(usage.requests)}
