"""The agentmaker adapter: ``Agent.arun(..., output_schema=Model)`` against the local provider.

agentmaker has exactly one structured-output declaration: ``output_schema`` on ``arun``/``run``. It
routes the call to ``Harness.astructured`` (agents/agent.py:193-195), which prepends a schema
instruction, calls the model with ``output_schema=<JSON schema>``, extracts and pydantic-validates
the JSON, feeds a failure back and retries (default once), then raises ``LLMResponseError``
(runtime/harness.py:302-332). How the schema reaches the wire is a property of the *LLM client*,
not of the agent: the OpenAI-compatible adapter turns it into ``response_format`` according to the
provider profile's ``structured_output`` capability (core/adapters/openai_compat.py:176-190), the
Anthropic adapter always into ``output_config.format`` (core/adapters/anthropic.py:233-237).
So the mode is chosen here by which ``LLMClient`` a user would construct for the endpoint.

A task with a harness tool (``task.tool``) cannot run in one ``arun``: ``output_schema`` runs as
plain question-answering and never offers the agent's tools (agents/agent.py:177-195, docs
"Structured output" note). The adapter composes the two documented halves on one Agent: a tool
loop turn (``arun(prompt)``, agents/agent.py:196-198, 210-250), then a structured turn
(``arun(follow-up, output_schema=Model)``) that reads the first turn from the agent's in-process
session history (agents/agent.py:201-206). Every step of the failure path is agentmaker code.

Source references are to the installed agentmaker 0.2.0 under ``site-packages/agentmaker``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from agentmaker import (
    Agent,
    CallableGuardrail,
    GuardrailResult,
    LLMClient,
    ProviderProfile,
    RunPolicy,
    Tool,
    ToolResponse,
    Tracer,
    tool,
)

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
    CellKey,
    Endpoint,
    ReportedUsage,
    Support,
    SupportTable,
    grid,
)  # fmt: skip
from bench.tools import OrderLookupTool, OrderToolError

HARDENED_RETRIES = 3
"""The docs' own example budget ("Tuning retries", docs/en/guides/structured-output.md): up to
four model calls. The default is ``_DEFAULT_STRUCTURED_RETRIES = 1`` (runtime/harness.py:61)."""

HARDENED_POLICY = {"max_llm_calls": 8, "deadline_seconds": 20.0}
"""RunPolicy limits as in the docs' example (guardrails-and-hitl.md, "Run policies and limits"),
with the deadline kept under the cell's time limit so the SDK's own limit fires first."""

HARDENED_TIMEOUT_S = 20.0
"""An explicit per-request timeout instead of LLMClient's 60 s default (core/llm_clients.py:179)."""

FOLLOW_UP = "Now give that answer as the requested JSON object."
"""The structured turn's prompt on a tool task: the answer itself is in the tool-loop turn, which
the agent's session history carries into this turn (agents/agent.py:201-206)."""

TOOL_WIRING = (
    "composed: Agent(tools=[@tool lookup_order]); arun(prompt) runs the tool loop (max_turns=10, "
    "agent.py:72, 227-250), then arun(follow-up, output_schema=Model) on the same scope, since "
    "output_schema never offers tools (agent.py:193-195)"
)
HARDENED_TOOL_NOTE = (
    "hardened tool: returns ToolResponse.error(<structured JSON>) (docs 'Tools': the idiomatic "
    "recoverable failure) and, on a non-retryable error, trips RunPolicy(cancel=...) so the next "
    "model call raises RunCancelled (run_context.py:152-165)"
)


@dataclass(frozen=True)
class _Spec:
    """How one supported cell is built: which LLM client a user would construct, and whether
    the production hardening (retry budget, output guardrail, run policy) is on."""

    capability: str
    """``json_schema`` / ``json_object`` / ``none`` (OpenAI protocol) or ``native`` (Anthropic)."""
    hardened: bool = False


_CAPABILITY_NOTES = {
    "json_schema": (
        "LLMClient('openai', base_url=...): profile structured_output='json_schema' -> "
        "response_format json_schema, strict not set (openai_compat.py:185-187)"
    ),
    "none": (
        "LLMClient('openai_compatible', base_url=...): structured_output='none', schema only "
        "in the system prompt (openai_compat.py:190, harness.py:322)"
    ),
    "json_object": (
        "custom ProviderProfile(structured_output='json_object'): response_format json_object, "
        "schema in the prompt (openai_compat.py:188-189)"
    ),
    "native": "LLMClient('anthropic', base_url=...): output_config.format json_schema (anthropic.py:233-237)",
}
_HARDENED_NOTE = (
    f"arun(retries={HARDENED_RETRIES}), output_guardrails=[CallableGuardrail(task.check)], "
    f"RunPolicy({HARDENED_POLICY}), timeout={HARDENED_TIMEOUT_S}"
)

STRUCTURED_OUTPUT_MODES: dict[str, Mode] = {
    "json_schema": Mode.NATIVE,
    "native": Mode.NATIVE,
    "none": Mode.PROMPTED,
    "json_object": Mode.PROMPTED,
}
"""The mode of each ``structured_output`` capability: the schema on the wire (``response_format``
json_schema, ``output_config.format``) is native; a prompt carrying the schema, with
``response_format`` json_object or nothing (openai_compat.py:188-190, harness.py:322), is prompted."""


def structured_output_of(llm: LLMClient) -> str:
    """The capability ``llm`` sends an ``output_schema`` with: on the Anthropic protocol always
    ``native`` (its adapter ignores the profile's, anthropic.py:233-237, adapters/base.py:57-59),
    otherwise the profile's ``structured_output``, which the adapter keeps (adapters/base.py:70;
    under ``emulate_tools`` the wrapped adapter's, tool_emulation.py:33-43)."""
    if llm.protocol == "anthropic":
        return "native"
    adapter = llm._adapter
    adapter = getattr(adapter, "_delegate", adapter)
    return str(getattr(adapter, "structured_output", "none"))


_SPECS: dict[CellKey, _Spec] = {
    (STRUCTURED_OUTPUT_MODES[spec.capability], protocol, variant): spec
    for protocol, variant, spec in (
        (Protocol.CHAT, Variant.DEFAULT, _Spec("json_schema")),
        (Protocol.CHAT, Variant.HARDENED, _Spec("json_schema", hardened=True)),
        (Protocol.CHAT, Variant.DEFAULT, _Spec("none")),
        (Protocol.CHAT, Variant.HARDENED, _Spec("none", hardened=True)),
        (Protocol.CHAT, Variant.JSON_OBJECT, _Spec("json_object")),
        (Protocol.ANTHROPIC, Variant.DEFAULT, _Spec("native")),
        (Protocol.ANTHROPIC, Variant.HARDENED, _Spec("native", hardened=True)),
    )
}
"""The cells agentmaker can express, and how each is built (the mode is the capability's, by
:data:`STRUCTURED_OUTPUT_MODES`); every other cell of the grid is unsupported for the reason
:func:`_support` gives."""


def _note(spec: _Spec) -> str:
    note = _CAPABILITY_NOTES[spec.capability]
    return f"{note}; hardened: {_HARDENED_NOTE}" if spec.hardened else note


_NO_TOOL = (
    "output_schema never sends tools: the structured path is plain question-answering "
    "(agent.py:193-195, docs 'Structured output'); an output tool would need our own capture"
)
_NO_RESPONSES = "OpenAIAdapter speaks only POST /chat/completions (openai_compat.py:127-128,199)"
_NO_STREAM = (
    "structured output is non-streaming (docs 'Structured output'); astream_run never validates and, "
    "given output_schema, hands the model class to the wire adapter: AttributeError on the "
    "json_schema profile (openai_compat.py:187), LLMRequestError on Anthropic, plain text on 'none'"
)
_NO_PROMPTED_ANTHROPIC = (
    "the Anthropic adapter always sends output_config when output_schema is given and "
    "ignores the profile's structured_output (anthropic.py:233-237, adapters/base.py:57-59)"
)

VARIANTS_WITH_JSON_OBJECT = (*VARIANTS, Variant.JSON_OBJECT)
"""The shared variants, every mode x protocol listed under each, and ``json_object``, which exists
only for prompted chat (a custom profile, :data:`_SPECS`)."""


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """How the cell is built (:data:`_SPECS`), or why agentmaker cannot express it without our own
    parsing or retrying; None for ``json_object`` anywhere but prompted chat (no such cell)."""
    spec = _SPECS.get((mode, protocol, variant))
    if spec is not None:
        return Support.builtin(_note(spec))
    if variant == Variant.JSON_OBJECT:
        return None
    if mode is Mode.TOOL:
        return Support.unsupported(_NO_TOOL)
    if protocol is Protocol.RESPONSES:
        return Support.unsupported(_NO_RESPONSES)
    if (mode, protocol) == (Mode.PROMPTED, Protocol.ANTHROPIC):
        return Support.unsupported(_NO_PROMPTED_ANTHROPIC)
    if variant == Variant.STREAM:
        return Support.unsupported(_NO_STREAM)
    raise KeyError(f"no reason recorded for unsupported cell {(mode, protocol, variant)}")


class AgentmakerAdapter(Adapter):
    """agentmaker 0.2.0: ``Agent.arun(prompt, output_schema=Model)``."""

    name: ClassVar[str] = "agentmaker"
    distribution: ClassVar[str] = "agentmaker"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS_WITH_JSON_OBJECT, _support)
    """Every mode x protocol x variant, the unsupported ones with the reason why."""
    harness_tools: ClassVar[bool] = True
    """Every cell that runs at all can run a tool task, composed as two turns (TOOL_WIRING)."""
    requirement: ClassVar[str] = "agentmaker[anthropic]"
    """The Anthropic client is an extra; LLMClient('anthropic') raises LLMConfigError without it
    (core/adapters/anthropic.py:84 in 0.1.0)."""
    preload: ClassVar[tuple[str, ...]] = ("openai", "anthropic")
    """Imported by LLMClient's wire adapters at their first call (0.1.0 core/adapters/openai_compat.py:96,
    anthropic.py:82)."""
    supported_releases: ClassVar[str] = ">=0.1"
    """Both releases on the index (0.1.0, 0.2.0): every name imported here and every argument
    used (LLMClient(profile=), RunPolicy(cancel=), Agent(output_guardrails=, run_policy=),
    Tool.from_callable) is already in 0.1.0."""
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4
    stable_route: ClassVar[bool] = True
    """LLMClient takes no HTTP client and fixes its base URL when built (:func:`_client`), so it
    can serve many cells only on one URL: the runner's slot route. Within a run one LLMClient per
    (capability, hardening, slot) serves every cell of the slot, as a user's loop builds its
    client once; the Agent, which keeps a session history (agents/agent.py:201-206), is still
    built per cell."""

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Build the client and agent as a user would, call ``arun`` once, record what came back.

        Only the ``arun`` call is guarded: a failure while building the client or the agent is
        our bug and must escape as a harness error.
        """
        spec = _SPECS[(cell.mode, cell.protocol, cell.variant)]
        tracer = Tracer()
        result = AdapterResult(details=_spec_details(spec))
        stop = _StopFlag()
        async with _llm(spec, endpoint) as llm:
            agent = _agent(spec, llm, task, tracer, stop)
            kwargs: dict[str, Any] = {"output_schema": task.output_model}
            if spec.hardened:
                # Extra arun kwargs reach Harness.astructured(retries=...) via _arun
                # (agents/base.py:245 -> agents/agent.py:193-195 -> runtime/harness.py:303).
                kwargs["retries"] = HARDENED_RETRIES
            try:
                prompt = task.prompt
                if task.tool is not None:
                    result.details.update(_tool_details(spec))
                    await _tool_turn(agent, task.prompt, result)
                    prompt = FOLLOW_UP
                    result.planned_calls = 1  # the structured turn: by design, not a retry
                run = await agent.arun(prompt, **kwargs)
            except Exception as exc:  # the SDK's own, e.g. LLMResponseError, RunCancelled
                result.exception = exc
            else:
                result.output = run.final_output
                result.details["run_status"] = run.status
                result.details["run_usage_llm_calls"] = str(run.usage.llm_calls)
                result.details["run_usage_total_tokens"] = str(run.usage.total_tokens)
        result.usage = _reported_usage(tracer)
        result.details["traced_llm_calls"] = str(len(_llm_events(tracer)))
        if task.tool is not None:
            result.details["traced_tool_calls"] = json.dumps(_tool_statuses(tracer))
        if stop.reason is not None:
            result.details["cancelled_on_tool_error"] = stop.reason
        return result


async def _tool_turn(agent: Agent, prompt: str, result: AdapterResult) -> None:
    """The tool-loop turn: ``arun`` without ``output_schema`` (agents/agent.py:196-198). Its text
    answer lands in the scope's history for the structured turn; what it was is recorded."""
    run = await agent.arun(prompt)
    result.details["tool_loop_output"] = str(run.final_output)[:300]
    result.details["tool_loop_llm_calls"] = str(run.usage.llm_calls)
    result.details["tool_loop_tool_calls"] = str(run.usage.tool_calls)


class _StopFlag:
    """Set by the hardened tool on a non-retryable error; read by ``RunPolicy.cancel``, which the
    harness checks before every model and tool call (runtime/execution/run_context.py:152-165)."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self) -> bool:
        return self.reason is not None


def _tools(spec: _Spec, task: Task, stop: _StopFlag) -> list[Tool] | None:
    """The task's harness tool as an agentmaker Tool, or None for a task without one.

    Default: ``@tool`` on the harness function as is (tools/decorator.py:191-215): its schema is
    inferred from the signature and docstring, a raised ``OrderToolError`` is caught by the
    registry and fed back as text (tools/registry.py:318-345). Hardened: see :func:`_hardened_tool`.
    """
    if task.tool is None:
        return None
    if spec.hardened:
        return [_hardened_tool(task.tool, stop)]
    return [tool(task.tool.as_function())]


def _hardened_tool(order_tool: OrderLookupTool, stop: _StopFlag) -> Tool:
    """The tool as the docs recommend writing one: failures returned as ``ToolResponse.error``
    ("the idiomatic way to report a recoverable failure", docs/en/guides/tools.md "Return values";
    tools/response.py:37-44) carrying the structured JSON, and a non-retryable error also trips the
    run's cooperative cancel, agentmaker's only documented way to stop a run from outside the
    loop (RunPolicy.cancel, runtime/execution/run_policy.py:34-35): no tool result can end the loop.
    """

    async def lookup_order(order_id: str) -> ToolResponse:
        """Look up one of the customer's orders by its id (e.g. ORD-1042) and return its status.

        Args:
            order_id: The order id, e.g. ORD-1042.
        """
        try:
            record = await order_tool.lookup(order_id)
        except OrderToolError as error:
            if not error.retryable:
                stop.reason = error.code
            return ToolResponse.error(error.to_json(), data={"code": error.code, "retryable": error.retryable})
        return ToolResponse.ok(json.dumps(record), data=record)

    return Tool.from_callable(lookup_order, name=order_tool.name, description=order_tool.description)


@asynccontextmanager
async def _llm(spec: _Spec, endpoint: Endpoint) -> AsyncIterator[LLMClient]:
    """The cell's LLMClient: within a run, the slot's (:data:`AgentmakerAdapter.stable_route`),
    built on first use and closed with the run's clients; outside a run (a test calling
    ``run_cell`` directly), one for this cell, closed after it.

    LLMClient holds nothing of a call: its settings, and its wire adapter's SDK client cached
    per event loop (core/adapters/base.py:67-80, 119-149); ``last_stream_stats`` is written by
    streaming calls only, which no cell makes."""
    if clients.reusing():
        key = (AgentmakerAdapter.name, spec, endpoint.root)
        owned = clients.shared(key, lambda: _RunClient(_client(spec, endpoint)))
        assert owned is not None  # reusing: inside a run's sharing
        yield owned.llm
        return
    # LLMClient is an async context manager that closes this loop's SDK client on exit
    # (core/llm_clients.py:293-304).
    async with _owned(_client(spec, endpoint)) as llm:
        yield llm


class _RunClient:
    """A run's LLMClient, closed with the run's clients (``ClientPool.aclose`` calls ``aclose``)
    as :func:`_owned` closes a cell's, 0.1.0's (no ``aclose``) included."""

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    async def aclose(self) -> None:
        async with _owned(self.llm):
            pass


def _owned(client: LLMClient) -> AbstractAsyncContextManager[LLMClient]:
    """The client as its async context, which closes this loop's SDK client on exit
    (core/llm_clients.py:293-304, aclose :311)."""
    return client if hasattr(client, "__aenter__") else _closed_after(client)


@asynccontextmanager
async def _closed_after(client: LLMClient) -> AsyncIterator[LLMClient]:
    """Bridge for 0.1.0, whose LLMClient has no async context and no close: its wire adapter
    caches the SDK client per event loop and drops it only when the loop closes (0.1.0
    core/adapters/base.py:69-77, 114-132). A worker's loop lives for many cells, so after the
    cell this closes what 0.2.0's ``aclose`` closes (the loop's cached SDK client); left to the
    garbage collector, those clients' sockets stalled later cells' requests for the client's
    60 s timeout (observed: one to three cells per 0.1.0 matrix)."""
    try:
        yield client
    finally:
        adapter = client._adapter
        adapter = getattr(adapter, "_delegate", adapter)  # ToolEmulationAdapter wraps the wire adapter
        for sdk_client in list(adapter._async_clients.values()):
            await sdk_client.close()
        adapter._async_clients.clear()


def _client(spec: _Spec, endpoint: Endpoint) -> LLMClient:
    """The LLMClient a user would write for this endpoint and capability.

    Explicit ``api_key`` and ``base_url`` win over every environment variable
    (core/llm_clients.py:420-421, 530-531), so nothing can leave for a real provider.

    LLMClient takes no HTTP client, and builds its SDK client lazily, cached per LLMClient and
    event loop (core/adapters/base.py:67-80, 119-149), with the base URL fixed at construction:
    one LLMClient serves only cells on one URL (:func:`_llm`).
    """
    common: dict[str, Any] = {"api_key": endpoint.api_key}
    if spec.hardened:
        common["timeout"] = HARDENED_TIMEOUT_S
    if spec.capability == "native":
        # The anthropic protocol builds anthropic.AsyncAnthropic(base_url=...) (anthropic.py:95-103).
        return LLMClient(
            "anthropic",
            model=endpoint.anthropic_model,
            base_url=endpoint.anthropic_base_url,
            **common,
        )
    if spec.capability == "json_schema":
        # The built-in 'openai' profile declares structured_output='json_schema' (llm_clients.py:106).
        provider, profile = "openai", None
    elif spec.capability == "none":
        # The generic 'openai_compatible' profile leaves structured_output='none' (llm_clients.py:90,116).
        provider, profile = "openai_compatible", None
    else:
        # A custom profile is the documented way to declare a vendor's capability
        # (LLMClient(profile=...), core/llm_clients.py:222-226).
        provider, profile = "openai_compatible", ProviderProfile(structured_output=spec.capability)
    return LLMClient(
        provider,
        model=endpoint.openai_model,
        base_url=endpoint.openai_base_url,
        profile=profile,
        **common,
    )


def _agent(spec: _Spec, llm: LLMClient, task: Task, tracer: Tracer, stop: _StopFlag) -> Agent:
    """The Agent, with the task's tool when it has one; the hardened one carries the docs'
    production knobs.

    The tracer is attached in every variant: it is agentmaker's way to see per-call usage, and
    unlike RunResult.usage it survives a run that raised (runtime/harness.py:243-245).
    """
    tools = _tools(spec, task, stop)
    if not spec.hardened:
        return Agent("misfit", llm, tracer=tracer, tools=tools)
    policy: dict[str, Any] = dict(HARDENED_POLICY)
    if tools is not None:
        policy["cancel"] = stop
    return Agent(
        "misfit",
        llm,
        tracer=tracer,
        tools=tools,
        # Output guardrails run on model_dump_json() of the validated instance after astructured
        # returned (agents/base.py:251, 539-544, 583-588); a trip raises GuardrailTripwireError
        # and is never fed back to the model (agents/base.py:566-580).
        output_guardrails=[CallableGuardrail(_semantic_check(task))],
        run_policy=RunPolicy(**policy),
    )


def _semantic_check(task: Task) -> Any:
    """The task's semantic rule as a guardrail function (text in, GuardrailResult out).

    Guardrails run on every turn's final text (agents/base.py:539-544); on a tool task that
    includes the tool-loop turn, whose free text is not the answer object: it passes, and the
    structured turn is judged. Text that is not an answer object passes.
    """

    def check(text: str) -> GuardrailResult:
        if task.tool is not None and not task.judge(_json_or_none(text))[0]:
            return GuardrailResult(passed=True)
        reason = task.check(json.loads(text))
        return GuardrailResult(passed=reason is None, message=reason or "")

    return check


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _tool_statuses(tracer: Tracer) -> list[str]:
    """The status of each tool_call event: success / error from an executed tool, invalid_args,
    denied, rejected from a gate (runtime/harness.py:584-597)."""
    return [str(event.get("status")) for event in tracer.events if event.get("type") == "tool_call"]


def _tool_details(spec: _Spec) -> dict[str, str]:
    details = {"tool_wiring": TOOL_WIRING, "tool_loop_max_turns": "10"}
    if spec.hardened:
        details["tool_error_handling"] = HARDENED_TOOL_NOTE
    return details


def _llm_events(tracer: Tracer) -> list[dict[str, Any]]:
    """The tracer's llm_call events: one per model call that returned a response
    (runtime/harness.py:566-576); HTTP failures raise before the event is emitted."""
    return [event for event in tracer.events if event.get("type") == "llm_call"]


def _reported_usage(tracer: Tracer) -> ReportedUsage | None:
    """Sum the per-call usage the SDK traced. Both adapters normalise usage to
    prompt_tokens/completion_tokens (openai_compat.py:215, anthropic.py:321-339)."""
    usages = [e["usage"] for e in _llm_events(tracer) if isinstance(e.get("usage"), dict)]
    if not usages:
        return None
    return ReportedUsage(
        input_tokens=sum(int(u.get("prompt_tokens") or 0) for u in usages),
        output_tokens=sum(int(u.get("completion_tokens") or 0) for u in usages),
    )


def _spec_details(spec: _Spec) -> dict[str, str]:
    """Configuration facts worth a column: the capability and the budgets in force."""
    details = {
        "structured_output": spec.capability,
        "structured_retries": str(HARDENED_RETRIES if spec.hardened else 1),
        # agentmaker builds the official clients without max_retries, so their default of 2
        # transport retries applies (openai_compat.py:134, anthropic.py:100-103).
        "sdk_transport_retries": "2",
    }
    if spec.hardened:
        details["output_guardrail"] = "task.check"
        details["run_policy"] = json.dumps(HARDENED_POLICY, sort_keys=True)
        details["timeout_s"] = str(HARDENED_TIMEOUT_S)
    return details
