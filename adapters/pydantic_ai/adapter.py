"""The Pydantic AI adapter: ``Agent(model, output_type=...)`` against the local provider.

Pydantic AI declares each output mode with a marker class (output.py:105 ``ToolOutput``, :182
``NativeOutput``, :239 ``PromptedOutput``); a bare model class is the ``'auto'`` schema
(_output.py:774-800) that each model profile resolves, here to ``'tool'``
(profiles/__init__.py:545, models/__init__.py:1644-1660). The three protocols are the SDK's
own model classes, each pointed at the endpoint through its provider class: ``OpenAIChatModel``,
``OpenAIResponsesModel`` (``OpenAIProvider(base_url=, api_key=)``) and ``AnthropicModel``
(``AnthropicProvider(base_url=, api_key=)``).

The retry loop, the output validation and the exceptions are all Pydantic AI's: output
retries live in ``GraphAgentState.consume_output_retry`` (_agent_graph.py:846-872) on the text
path and in ``ToolManager._check_max_retries`` (tool_manager.py:519-532) on the tool path.
Source references are to the installed pydantic-ai-slim 2.68.0 under ``site-packages/pydantic_ai``;
adapters/pydantic_ai/research.md has the full account.

A task with a harness tool (``task.tool``) gets it as a function tool, ``Agent(tools=[...])``
(agent/__init__.py:638, 727), in every cell. Its failures are Pydantic AI's to handle: a raised
``OrderToolError`` is not caught by the SDK (tool_manager.py:1373-1390 catches only ``ToolFailed``
and ``ModelRetry``) and ends the run; argument validation errors go back to the model under the
tool's own budget, ``retries['tools']`` (default 1), apart from the output budget
(tool_manager.py:519-532, 880-924). The hardened variant raises ``ModelRetry`` for a retryable
error, the documented way to hand the model an error to act on (exceptions.py:80-89), and
re-raises a non-retryable one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic_ai import (
    Agent,
    ModelRetry,
    NativeOutput,
    PromptedOutput,
    RunContext,
    Tool,
    ToolOutput,
    UnexpectedModelBehavior,
    capture_run_messages,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.run import AgentRunResult
from pydantic_ai.usage import RunUsage

try:
    from pydantic_ai.models import create_async_httpx2_client
except ImportError:  # bridge for releases before the httpx2 split: the same factory, older name
    try:
        # The type checker sees the pinned release (where this older name has another signature).
        from pydantic_ai.models import create_async_http_client as create_async_httpx2_client  # type: ignore[assignment]
    except ImportError:  # bridge for 1.0.x: providers share their own cached_async_http_client
        create_async_httpx2_client = None  # type: ignore[assignment]
try:
    from pydantic_ai.capabilities import Hooks
except ImportError:  # bridge for releases before 1.71: no capabilities (hardened is unsupported there)
    Hooks = None  # type: ignore[misc, assignment]  # a type in the pinned release the checker sees

from bench.core.names import qualified_name
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import (
    MODES,
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
from bench.tools import OrderLookupTool, OrderToolError, current_run_function

HARDENED_OUTPUT_RETRIES = 3
"""The hardened output budget, set through ``Agent(retries={'output': 3})``. The default is 1
(agent/__init__.py:487-493, 717-725): one re-ask, two model calls."""

HARDENED_TOOL_RETRIES = 3
"""The hardened harness tool's own budget, ``Tool(max_retries=3)`` (tools.py:383-388); the default
is ``retries['tools']`` = 1 (agent/__init__.py:487-493, 837-845, 2160). It is separate from the output
budget: function-tool failures never add to ``output_retries_used`` (_tool_execution.py:640-661
counts output-tool failures only)."""

_PROTOCOL_NOTES: dict[Protocol, str] = {
    Protocol.CHAT: "OpenAIChatModel + OpenAIProvider(base_url, api_key)",
    Protocol.RESPONSES: "OpenAIResponsesModel + OpenAIProvider(base_url, api_key)",
    Protocol.ANTHROPIC: "AnthropicModel + AnthropicProvider(base_url, api_key)",
}

_DECLARATIONS: dict[tuple[Mode, bool], str] = {
    (Mode.TOOL, False): "output_type=Model ('auto', resolved to 'tool' by the profile)",
    (Mode.TOOL, True): "output_type=ToolOutput(Model, strict=True)",
    (Mode.NATIVE, False): "output_type=NativeOutput(Model)",
    (Mode.NATIVE, True): "output_type=NativeOutput(Model, strict=True)",
    (Mode.PROMPTED, False): "output_type=PromptedOutput(Model)",
    (Mode.PROMPTED, True): "output_type=PromptedOutput(Model)",
}

_VARIANT_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: "agent.run(); retries default 1",
    Variant.HARDENED: (
        f"agent.run(); retries={{'output': {HARDENED_OUTPUT_RETRIES}}}, @output_validator raising "
        "ModelRetry(task.check), Hooks(run_error=...) returning None for UnexpectedModelBehavior"
    ),
    Variant.STREAM: "agent.run_stream() + get_output(); no output retries once a final result streams",
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """Every cell is a builtin declaration in Pydantic AI: the mode's marker class (hardened: with
    strict schemas), the protocol's model class and the variant's entry point and budget."""
    declaration = _DECLARATIONS[(mode, variant == Variant.HARDENED)]
    return Support.builtin(f"{declaration}; {_PROTOCOL_NOTES[protocol]}; {_VARIANT_NOTES[variant]}")


@dataclass(frozen=True)
class _Spec:
    """How one cell is built: the declaration, the entry point and the hardening."""

    mode: Mode
    protocol: Protocol
    hardened: bool
    stream: bool


class PydanticAIAdapter(Adapter):
    """pydantic-ai-slim 2.68: ``Agent(model, output_type=...)`` with ``run`` or ``run_stream``."""

    name: ClassVar[str] = "pydantic-ai"
    distribution: ClassVar[str] = "pydantic-ai-slim"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    """Every mode x protocol x variant: all are builtin declarations in Pydantic AI."""
    harness_tools: ClassVar[bool] = True
    requirement: ClassVar[str] = "pydantic-ai-slim[openai,anthropic]"
    supported_releases: ClassVar[str] = ">=1.0"
    """``Agent(output_type=...)``, ``NativeOutput`` and ``OpenAIChatModel`` as used here exist from 1.0."""
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = (
        ReleaseNeed("1.71", "Hooks(run_error=...) (pydantic_ai.capabilities)", variant=Variant.HARDENED),
        ReleaseNeed(
            "1.61",
            "claude-sonnet-4-6 among the Anthropic profile's structured-output models (profiles/anthropic.py)",
            mode=Mode.NATIVE,
            protocol=Protocol.ANTHROPIC,
        ),
    )
    """Every cell takes a function tool: ``Agent(tools=...)`` works with each output mode and
    protocol, and ``run_stream`` runs function-tool steps through the same graph
    (agent/abstract.py:1085-1104 streams only up to the final result)."""
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Build the agent as a user would, call it once, record what reached the caller.

        Only the SDK call is guarded; building the model or the agent failing is our bug and
        escapes as a harness error.
        """
        spec = _Spec(cell.mode, cell.protocol, cell.variant == Variant.HARDENED, cell.stream)
        # 1.0.x takes the provider's own cached client, which has no routing hook: per cell there.
        routing = clients.routed(endpoint) if create_async_httpx2_client is not None else nullcontext(None)
        with routing as provider_wide, _per_cell(task) as recovered:
            return await _run(spec, task, _reused_agent(spec, task, endpoint, provider_wide), recovered)


def _reused_agent(spec: _Spec, task: Task, endpoint: Endpoint, provider_wide: Endpoint | None) -> Agent[None, Any]:
    """The cell's agent: within a run, one per (cell's spec, task) reused by every scenario and
    rep of it (:func:`bench.sdk.clients.reused`), as a user's loop reuses its agent. It holds
    nothing of one run: a run's state (messages, usage, retries used) lives in its own graph run
    (_agent_graph.py, ``GraphAgentState``); the model and provider keep their settings and the
    shared client, whose hook routes each request to its cell's run; entering the agent is
    counted (agent/__init__.py:4697-4706), so cells may enter it at once; the tool and the
    hardened handler reach the current cell's tool and recovered list through context variables
    (:func:`bench.tools.current_run_function`, :data:`_RECOVERED`). Outside a run, built per cell."""
    if provider_wide is None:
        return _agent(spec, task, _model(spec.protocol, endpoint), task.tool)
    return clients.reused(
        (PydanticAIAdapter.name, spec, task.name, task.tool_name, task.output_model, provider_wide.root),
        lambda: _agent(spec, task, _model(spec.protocol, provider_wide), current_run_function),
    )


_RECOVERED: ContextVar[list[BaseException]] = ContextVar("misfit_bench_pydantic_ai_recovered")
"""The current cell's errors the hardened ``on_run_error`` hook recovered (:func:`_per_cell`)."""


@contextmanager
def _per_cell(task: Task) -> Iterator[list[BaseException]]:
    """The current cell's tool and recovered list, made current for the agent's tool and hook."""
    recovered: list[BaseException] = []
    token = _RECOVERED.set(recovered)
    try:
        with task.tool.current() if task.tool is not None else nullcontext():
            yield recovered
    finally:
        _RECOVERED.reset(token)


async def _run(spec: _Spec, task: Task, agent: Agent[None, Any], recovered: list[BaseException]) -> AdapterResult:
    """Call the agent once and record what reached the caller.

    Only the SDK call is guarded; building the model or the agent failing is our bug and
    escapes as a harness error."""
    # `usage=` is mutated in place by the run (agent/__init__.py:1754, 1810-1812), so it still
    # holds the SDK's count when the run raised, unlike result.usage().
    usage = RunUsage()
    result = AdapterResult(details=_details(spec, task))
    # capture_run_messages is the documented way to see a failed run's messages
    # (_agent_graph.py:4845-4879); each ModelResponse carries its own usage.
    with capture_run_messages() as messages:
        # Entering the agent enters the model and its provider, which closes the HTTP client
        # it created on exit (agent/__init__.py:4697-4748, providers/__init__.py:233-251).
        async with agent:
            try:
                result.output = await _call(agent, spec, task, usage)
            except Exception as exc:  # the SDK's own: UnexpectedModelBehavior, ModelHTTPError...
                result.exception = exc
    result.fallback = bool(recovered) and result.exception is None
    if recovered:
        result.details["recovered_error"] = qualified_name(recovered[0])
    result.usage = ReportedUsage(usage.input_tokens, usage.output_tokens)
    result.details["sdk_usage_requests"] = str(usage.requests)
    result.details["captured_responses"] = str(_responses(messages))
    return result


async def _call(agent: Agent[None, Any], spec: _Spec, task: Task, usage: RunUsage) -> Any:
    """One call of the SDK's entry point: ``run``, or ``run_stream`` read to the end as its docs
    show (``get_output`` streams the rest and validates once, result.py:261-272)."""
    if not spec.stream:
        run = await agent.run(task.prompt, usage=usage)
        return run.output
    async with agent.run_stream(task.prompt, usage=usage) as streamed:
        return await streamed.get_output()


def _model(protocol: Protocol, endpoint: Endpoint) -> Model:
    """The SDK's model class for the protocol, pointed at the local provider.

    Explicit ``base_url`` and ``api_key`` win over OPENAI_*/ANTHROPIC_* environment variables
    (providers/openai.py:205-225, providers/anthropic.py:241-257). The official clients keep their
    default ``max_retries=2``: the providers pass none (providers/_openai_compatible.py:51-56,
    providers/anthropic.py:252-257) and ModelSettings['max_retries'] is unset
    (models/_sdk_retries.py:23-39).

    Within a run the HTTP client is the run's shared one, passed as ``http_client`` and built by
    ``create_async_httpx2_client``, the factory the providers use for a client of their own
    (providers/_openai_compatible.py:29-32, providers/anthropic.py:251-257), so the requests carry
    the same headers, timeouts and hooks. A passed client is the caller's to close: ``async with
    agent`` closes only a client the provider built (providers/__init__.py:239-251).
    """
    http_client = (
        clients.shared((PydanticAIAdapter.name, protocol), _routing_client)
        if create_async_httpx2_client is not None
        else None  # 1.0.x: the provider's own cached client, shared per provider (models/__init__.py:731)
    )
    if protocol is Protocol.ANTHROPIC:
        provider = AnthropicProvider(
            base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, http_client=http_client
        )
        return AnthropicModel(endpoint.anthropic_model, provider=provider)
    openai_provider = OpenAIProvider(
        base_url=endpoint.openai_base_url, api_key=endpoint.api_key, http_client=http_client
    )
    if protocol is Protocol.RESPONSES:
        return OpenAIResponsesModel(endpoint.openai_model, provider=openai_provider)
    return OpenAIChatModel(endpoint.openai_model, provider=openai_provider)


def _routing_client() -> Any:
    """The providers' own client factory's client, with the hook that routes each cell's
    requests to its run (:func:`bench.sdk.clients.routing`)."""
    return clients.routing(create_async_httpx2_client())


def _output_type(spec: _Spec, task: Task) -> Any:
    """The declaration for the mode. The default tool cell is the bare class, the shortest
    thing a user writes; the profile resolves it to tool output (models/__init__.py:1644-1660,
    1803). Hardened cells name the marker and ask for strict schemas explicitly."""
    model_cls = task.output_model
    if spec.mode is Mode.TOOL:
        return ToolOutput(model_cls, strict=True) if spec.hardened else model_cls
    if spec.mode is Mode.NATIVE:
        return NativeOutput(model_cls, strict=True) if spec.hardened else NativeOutput(model_cls)
    # PromptedOutput has no strict flag: nothing on the wire constrains the text (output.py:239-308).
    return PromptedOutput(model_cls)


def _agent(spec: _Spec, task: Task, model: Model, tool: ToolSource) -> Agent[None, Any]:
    """The agent, with the task's harness tool (made from ``tool``) when it has one; the hardened
    one carries the budget, the validator and the handler. A task without a tool builds exactly
    the agent it always did."""
    output_type = _output_type(spec, task)
    tools = _tools(spec, tool if task.tool is not None else None)
    if not spec.hardened:
        return Agent(model, output_type=output_type, tools=tools) if tools else Agent(model, output_type=output_type)
    assert Hooks is not None, "hardened cells need pydantic-ai >= 1.71 (release_needs)"
    agent: Agent[None, Any] = Agent(
        model,
        output_type=output_type,
        **_output_budget(HARDENED_OUTPUT_RETRIES),
        capabilities=[Hooks(run_error=_fallback_handler())],
        tools=tools,
    )

    @agent.output_validator
    async def reject_wrong_answer(ctx: RunContext[None], output: Any) -> Any:
        # ModelRetry from an output validator re-asks the model: on the text path it consumes
        # the run-wide output budget (_agent_graph.py:846-872); on the tool path it counts
        # against the output tool's own max_retries (tool_manager.py:1249-1267).
        if (reason := task.check(output)) is not None:
            raise ModelRetry(reason)
        return output

    return agent


def _output_budget(retries: int) -> dict[str, Any]:
    """The output retry budget as the installed release spells it: ``retries={'output': n}``
    from 1.98 (``AgentRetries``); the bridge for 1.71-1.97 is ``output_retries=n``, the keyword
    those releases document (agent/__init__.py, ``output_retries: int | None``)."""
    if "AgentRetries" in str(inspect.signature(Agent.__init__).parameters["retries"].annotation):
        return {"retries": {"output": retries}}
    return {"output_retries": retries}


ToolSource = OrderLookupTool | Callable[[], Callable[[str], Awaitable[dict[str, Any]]]] | None
"""Where the harness tool function comes from: one run's tool (its ``as_function``), or
:func:`bench.tools.current_run_function` for an agent reused across cells."""


def _tools(spec: _Spec, tool: ToolSource) -> list[Tool[None] | Callable[..., Any]]:
    """The harness tool as a Pydantic AI function tool, or nothing.

    Default and stream: the bare function, the shortest declaration (``Agent(tools=[func])``,
    agent/__init__.py:638, 727-728; schema from the signature and docstring). Its
    ``OrderToolError`` is left to the SDK. Hardened: the same function, raising ``ModelRetry``
    for a retryable error, with its own budget of ``HARDENED_TOOL_RETRIES``.
    """
    if tool is None:
        return []
    function = tool.as_function() if isinstance(tool, OrderLookupTool) else tool()
    if not spec.hardened:
        return [function]
    return [Tool(_retry_retryable(function), max_retries=HARDENED_TOOL_RETRIES)]


def _retry_retryable(
    lookup_order: Callable[[str], Awaitable[dict[str, Any]]],
) -> Callable[[str], Awaitable[dict[str, Any]]]:
    """The documented tool-side error handling: ``ModelRetry(message)`` sends the message back to
    the model as the call's retry result, paired with its ``tool_call_id`` and charged to the
    tool's ``max_retries`` (tool_manager.py:1384-1390, 536-561; _output.py:143-183). A
    non-retryable error is re-raised, which ends the run (nothing above catches it). The
    structured JSON (``str(error)``) is the retry message as is."""

    @functools.wraps(lookup_order)
    async def wrapped(order_id: str) -> dict[str, Any]:
        try:
            return await lookup_order(order_id)
        except OrderToolError as error:
            if error.retryable:
                raise ModelRetry(str(error)) from error
            raise

    return wrapped


def _fallback_handler() -> Callable[..., Awaitable[AgentRunResult[Any]]]:
    """An ``on_run_error`` hook: returning an AgentRunResult suppresses the run's error
    (capabilities/abstract.py:922-955). It recovers only UnexpectedModelBehavior, the SDK's
    class for output it could not use (exceptions.py:574), recorded in the current cell's list
    (:data:`_RECOVERED`); transport errors still raise."""

    async def on_run_error(ctx: RunContext[None], *, error: BaseException) -> AgentRunResult[Any]:
        if not isinstance(error, UnexpectedModelBehavior):
            raise error
        _RECOVERED.get().append(error)
        return AgentRunResult(output=None)

    return on_run_error


def _responses(messages: list[ModelMessage]) -> int:
    """How many model responses the SDK recorded for the run (failed ones included)."""
    return sum(isinstance(message, ModelResponse) for message in messages)


def _details(spec: _Spec, task: Task) -> dict[str, str]:
    """Configuration facts worth a column: the declaration and the budgets in force (the tool's
    only for a task with a harness tool, so other tasks' details are unchanged)."""
    details = {
        "declaration": _DECLARATIONS[(spec.mode, spec.hardened)],
        "entry_point": "run_stream" if spec.stream else "run",
        "output_retries": str(HARDENED_OUTPUT_RETRIES if spec.hardened else 1),
        "sdk_transport_retries": "2",
        "output_validator": "task.check" if spec.hardened else "none",
    }
    if task.tool is not None:
        details["tool_declaration"] = (
            f"Tool(lookup_order raising ModelRetry for a retryable error, max_retries={HARDENED_TOOL_RETRIES})"
            if spec.hardened
            else "tools=[lookup_order]"
        )
        details["tool_retries"] = str(HARDENED_TOOL_RETRIES if spec.hardened else 1)
    return details
