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

Source references are to the installed agentmaker 0.2.0 under ``site-packages/agentmaker``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from bench.adapter import Adapter, AdapterResult, Cell, Endpoint, ReportedUsage
from bench.tasks import Task
from bench.vocabulary import Mode, ModeSupport, Protocol

try:
    from agentmaker import (
        Agent,
        CallableGuardrail,
        GuardrailResult,
        LLMClient,
        ProviderProfile,
        RunPolicy,
        Tracer,
    )
except ImportError as e:  # pragma: no cover - exercised only without the extra installed
    raise ImportError("the agentmaker adapter needs the agentmaker SDK: pip install 'misfit-bench[agentmaker]'") from e

HARDENED_RETRIES = 3
"""The docs' own example budget ("Tuning retries", docs/en/guides/structured-output.md): up to
four model calls. The default is ``_DEFAULT_STRUCTURED_RETRIES = 1`` (runtime/harness.py:61)."""

HARDENED_POLICY = {"max_llm_calls": 8, "deadline_seconds": 20.0}
"""RunPolicy limits as in the docs' example (guardrails-and-hitl.md, "Run policies and limits"),
with the deadline kept under the cell's time limit so the SDK's own limit fires first."""

HARDENED_TIMEOUT_S = 20.0
"""An explicit per-request timeout instead of LLMClient's 60 s default (core/llm_clients.py:179)."""


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

_SUPPORTED: dict[tuple[Mode, Protocol, str], _Spec] = {
    (Mode.NATIVE, Protocol.CHAT, "default"): _Spec("json_schema"),
    (Mode.NATIVE, Protocol.CHAT, "hardened"): _Spec("json_schema", hardened=True),
    (Mode.PROMPTED, Protocol.CHAT, "default"): _Spec("none"),
    (Mode.PROMPTED, Protocol.CHAT, "hardened"): _Spec("none", hardened=True),
    (Mode.PROMPTED, Protocol.CHAT, "json_object"): _Spec("json_object"),
    (Mode.NATIVE, Protocol.ANTHROPIC, "default"): _Spec("native"),
    (Mode.NATIVE, Protocol.ANTHROPIC, "hardened"): _Spec("native", hardened=True),
}


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

VARIANTS: tuple[str, ...] = ("default", "hardened", "stream")
"""The variants every mode x protocol is listed under; ``json_object`` exists only for prompted chat."""


def _gap(mode: Mode, protocol: Protocol, variant: str) -> str:
    """Why agentmaker cannot express this cell without our own parsing or retrying."""
    if mode is Mode.TOOL:
        return _NO_TOOL
    if protocol is Protocol.RESPONSES:
        return _NO_RESPONSES
    if (mode, protocol) == (Mode.PROMPTED, Protocol.ANTHROPIC):
        return _NO_PROMPTED_ANTHROPIC
    if variant == "stream":
        return _NO_STREAM
    raise KeyError(f"no reason recorded for unsupported cell {(mode, protocol, variant)}")


class AgentmakerAdapter(Adapter):
    """agentmaker 0.2.0: ``Agent.arun(prompt, output_schema=Model)``."""

    name: ClassVar[str] = "agentmaker"
    distribution: ClassVar[str] = "agentmaker"
    install_hint: ClassVar[str] = "pip install 'misfit-bench[agentmaker]'"
    modes: ClassVar[frozenset[Mode]] = frozenset({Mode.NATIVE, Mode.PROMPTED})
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4

    def cells(self) -> list[Cell]:
        """Every mode x protocol x variant, the unsupported ones with the reason why."""
        keys = [(m, p, v) for m in Mode for p in Protocol for v in VARIANTS]
        keys.append((Mode.PROMPTED, Protocol.CHAT, "json_object"))
        return [self._cell(*key) for key in keys]

    def _cell(self, mode: Mode, protocol: Protocol, variant: str) -> Cell:
        stream = variant == "stream"
        spec = _SUPPORTED.get((mode, protocol, variant))
        if spec is not None:
            note = _note(spec)
            return Cell(self.name, mode, variant, protocol, stream, ModeSupport.BUILTIN, note)
        note = _gap(mode, protocol, variant)
        return Cell(self.name, mode, variant, protocol, stream, ModeSupport.UNSUPPORTED, note)

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Build the client and agent as a user would, call ``arun`` once, record what came back.

        Only the ``arun`` call is guarded: a failure while building the client or the agent is
        our bug and must escape as a harness error.
        """
        spec = _SUPPORTED[(cell.mode, cell.protocol, cell.variant)]
        tracer = Tracer()
        result = AdapterResult(details=_spec_details(spec))
        # LLMClient is an async context manager that closes this loop's SDK client on exit
        # (core/llm_clients.py:293-304).
        async with _client(spec, endpoint) as llm:
            agent = _agent(spec, llm, task, tracer)
            kwargs: dict[str, Any] = {"output_schema": task.output_model}
            if spec.hardened:
                # Extra arun kwargs reach Harness.astructured(retries=...) via _arun
                # (agents/base.py:245 -> agents/agent.py:193-195 -> runtime/harness.py:303).
                kwargs["retries"] = HARDENED_RETRIES
            try:
                run = await agent.arun(task.prompt, **kwargs)
            except Exception as exc:  # the SDK's own, e.g. LLMResponseError
                result.exception = exc
            else:
                result.output = run.final_output
                result.details["run_status"] = run.status
                result.details["run_usage_llm_calls"] = str(run.usage.llm_calls)
                result.details["run_usage_total_tokens"] = str(run.usage.total_tokens)
        result.usage = _reported_usage(tracer)
        result.details["traced_llm_calls"] = str(len(_llm_events(tracer)))
        return result


def _client(spec: _Spec, endpoint: Endpoint) -> LLMClient:
    """The LLMClient a user would write for this endpoint and capability.

    Explicit ``api_key`` and ``base_url`` win over every environment variable
    (core/llm_clients.py:420-421, 530-531), so nothing can leave for a real provider.
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


def _agent(spec: _Spec, llm: LLMClient, task: Task, tracer: Tracer) -> Agent:
    """A tool-less Agent; the hardened one carries the docs' production knobs.

    The tracer is attached in every variant: it is agentmaker's way to see per-call usage, and
    unlike RunResult.usage it survives a run that raised (runtime/harness.py:243-245).
    """
    if not spec.hardened:
        return Agent("misfit", llm, tracer=tracer)
    return Agent(
        "misfit",
        llm,
        tracer=tracer,
        # Output guardrails run on model_dump_json() of the validated instance after astructured
        # returned (agents/base.py:251, 539-544, 583-588); a trip raises GuardrailTripwireError
        # and is never fed back to the model (agents/base.py:566-580).
        output_guardrails=[CallableGuardrail(_semantic_check(task))],
        run_policy=RunPolicy(**HARDENED_POLICY),
    )


def _semantic_check(task: Task) -> Any:
    """The task's semantic rule as a guardrail function (text in, GuardrailResult out)."""

    def check(text: str) -> GuardrailResult:
        reason = task.check(json.loads(text))
        return GuardrailResult(passed=reason is None, message=reason or "")

    return check


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
