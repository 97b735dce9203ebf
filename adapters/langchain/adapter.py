"""LangChain ``create_agent`` (langchain 1.x) over ChatOpenAI and ChatAnthropic.

Every cell builds the agent the way the LangChain docs show it, points the chat model at the
local provider, calls the agent once and reports what reached the caller: the agent state's
``structured_response`` (or the output parser's object in prompted mode), the exception, and
the usage that LangChain's own ``UsageMetadataCallbackHandler`` collected. A task's harness
tool goes into ``create_agent(tools=...)`` in every cell; what LangChain does with the
exception it raises is left to LangChain (the hardened variant adds the documented
ToolErrorMiddleware). Source references are to the installed packages (langchain 1.5.2,
langchain-core 1.8.3, langchain-openai 1.7.4, langchain-anthropic 1.7.10, langgraph 1.2.24);
adapters/langchain/research.md has the reasoning.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, ClassVar

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_anthropic import ChatAnthropic
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import PydanticOutputParser
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_openai import ChatOpenAI
from openai import DefaultAsyncHttpxClient, DefaultHttpxClient
from pydantic import BaseModel, create_model, model_validator

try:
    from langchain.agents.middleware import (
        ModelRefusalMiddleware,
        ModelRetryMiddleware,
        ToolCallRequest,
        ToolErrorMiddleware,
    )
except ImportError:  # bridge for releases before 1.5: the hardened middleware is not there yet
    # The type checker sees the pinned release, where these are types.
    ModelRefusalMiddleware = ModelRetryMiddleware = ToolCallRequest = ToolErrorMiddleware = None  # type: ignore[misc, assignment]

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import (
    MODES,
    PROTOCOLS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    ReleaseNeed,
    ReportedUsage,
    Support,
    SupportTable,
    grid,
)
from bench.tools import OrderToolError, current_run_function

DEFAULT, HARDENED, STREAM, AUTO = Variant.DEFAULT, Variant.HARDENED, Variant.STREAM, Variant.AUTO

HARDENED_RUN_LIMIT = 5
"""Model calls per run in the hardened variant (the docs' ``ModelCallLimitMiddleware`` example
uses ``run_limit=5``); without it ToolStrategy retries until langgraph's recursion limit."""
HARDENED_MODEL_RETRIES = 2
"""``ModelRetryMiddleware``'s default ``max_retries``, stated explicitly."""
HARDENED_RETRY_DELAY_S = 0.2
"""Smaller than the middleware's 1 s default and without jitter, so hardened cells stay
deterministic and inside the time limit; what is measured is the number of retries."""
CLIENT_RETRIES = 2
"""The openai and anthropic clients' own default transport retries, stated explicitly."""


_HARDENED_MIDDLEWARE = "ModelCallLimit/ModelRetry/ModelRefusal middleware"

VARIANTS_WITH_AUTO = (DEFAULT, AUTO, HARDENED, STREAM)
"""The shared variants (:data:`bench.sdk.adapter.VARIANTS`) with ``auto``, the bare schema, listed
after default."""


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support:
    """How each (mode, variant) is built, or why it cannot be; the same on every protocol. Tool
    and native: ToolStrategy and ProviderStrategy, default, hardened and stream; auto (the bare
    schema) is native, LangChain resolving it to ProviderStrategy for both models; prompted: a
    chain through PydanticOutputParser, default only."""
    match mode, variant:
        case Mode.TOOL, Variant.DEFAULT:
            return Support.builtin("response_format=ToolStrategy(Model)")
        case Mode.TOOL, Variant.AUTO:
            return Support.unsupported(
                "the bare schema resolves to ProviderStrategy for "
                "gpt-4o-mini and claude-sonnet-4-6 (profile structured_output=True, "
                "langchain/agents/factory.py:604-610): listed under native"
            )
        case Mode.TOOL, Variant.HARDENED:
            return Support.builtin(f"ToolStrategy(validated Model, handle_errors=True) + {_HARDENED_MIDDLEWARE}")
        case Mode.TOOL, Variant.STREAM:
            return Support.builtin("ToolStrategy(Model) via agent.astream(stream_mode=messages+values)")
        case Mode.NATIVE, Variant.DEFAULT:
            return Support.builtin("response_format=ProviderStrategy(Model)")
        case Mode.NATIVE, Variant.AUTO:
            return Support.builtin(
                "response_format=Model (bare schema): LangChain picks the strategy; details['strategy'] records which"
            )
        case Mode.NATIVE, Variant.HARDENED:
            return Support.builtin(f"ProviderStrategy(validated Model, strict=True) + {_HARDENED_MIDDLEWARE}")
        case Mode.NATIVE, Variant.STREAM:
            return Support.builtin("ProviderStrategy(Model) via agent.astream(stream_mode=messages+values)")
        case Mode.PROMPTED, Variant.DEFAULT:
            return Support.composed(
                "create_agent without response_format, format "
                "instructions as system prompt, final message | PydanticOutputParser (LCEL)"
            )
        case Mode.PROMPTED, Variant.AUTO:
            return Support.unsupported("a bare schema always asks for tool or native output")
        case Mode.PROMPTED, Variant.HARDENED:
            return Support.unsupported(
                "no output-fixing or retrying parser in langchain 1.x "
                "(OutputFixingParser/RetryOutputParser live in langchain-classic); a retry "
                "would be ours"
            )
        case Mode.PROMPTED, Variant.STREAM:
            return Support.unsupported(
                "streaming the composed chain yields partial JSON "
                "objects from the parser's transform; picking the final one would be ours"
            )
    raise KeyError(f"no support recorded for {(mode, protocol, variant)}")


class LangChainAdapter(Adapter):
    """``langchain.agents.create_agent`` with ToolStrategy, ProviderStrategy, the bare schema
    (auto) and a prompted chain through ``PydanticOutputParser``."""

    name: ClassVar[str] = "langchain"
    distribution: ClassVar[str] = "langchain"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS_WITH_AUTO, _support)
    """Tool and native: default, hardened, stream; native also auto (the bare schema, which
    LangChain resolves to ProviderStrategy for both models); prompted: default only. The same
    on every protocol."""
    companions: ClassVar[tuple[str, ...]] = ("langgraph-prebuilt", "langchain-openai", "langchain-anthropic")
    """With langchain, the tuple that decides behaviour: ToolNode lives in langgraph-prebuilt, the
    wire formats in the provider packages; a release environment takes each as of its date."""
    supported_releases: ClassVar[str] = ">=1.0"
    """``create_agent`` with ``ToolStrategy``/``ProviderStrategy`` and middleware appears in 1.0."""
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = (
        ReleaseNeed(
            "1.5.0",
            "ModelRefusalMiddleware (1.5.0), ToolErrorMiddleware (1.4.0), ModelRetryMiddleware (1.1.0)",
            variant=Variant.HARDENED,
        ),
        *(
            ReleaseNeed(
                "1.1.0",
                "ChatAnthropic turns ProviderStrategy's response_format into Anthropic's output_format "
                "(langchain_anthropic/chat_models.py:1736-1748 in 1.1.0; langchain >= 1.0.8 resolves it); "
                "before, the anthropic client rejects it (TypeError) before any request",
                variant=variant,
                mode=Mode.NATIVE,
                protocol=Protocol.ANTHROPIC,
                distribution="langchain-anthropic",
            )
            for variant in (DEFAULT, STREAM)
        ),
    )
    """The tuple decides: langchain's date resolves its companions (langchain 1.0.0 to 1.0.7 get
    langchain-anthropic 1.0.x). The native auto cell still runs there: 1.0.x picks ToolStrategy
    for both models (factory.py:351-371 in 1.0.0)."""
    harness_tools: ClassVar[bool] = True
    """Every supported cell takes the harness tool: ``create_agent(tools=[lookup_order])``
    accepts a plain function next to any response_format (factory.py:1133-1150, 1425-1441)."""
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4
    stable_route: ClassVar[bool] = True
    """ChatAnthropic takes no HTTP client and caches its own per base URL
    (langchain_anthropic/_client_utils.py:65-80): on the runner's slot route (bench.run.runner.Slot)
    a slot's Anthropic cells share one, as a user's loop on one URL does, instead of building
    (and leaving to the garbage collector) one per cell. The OpenAI-protocol cells route through
    the run's shared clients whatever their URL (:func:`bench.sdk.clients.routed`)."""

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Build the agent for ``cell`` (or reuse the run's, see :func:`_agent`), invoke (or
        stream) it once, report what came back."""
        reusable = cell.protocol is not Protocol.ANTHROPIC
        routing = clients.routed(endpoint) if reusable else nullcontext(None)
        with routing as provider_wide, task.tool.current() if task.tool is not None else nullcontext():
            runnable, details = _agent(cell, task, endpoint, provider_wide)
            return await _invoke(cell, task, runnable, details)


def _agent(
    cell: Cell, task: Task, endpoint: Endpoint, provider_wide: Endpoint | None
) -> tuple[Runnable[Any, Any], dict[str, str]]:
    """The cell's agent: within a run, on the OpenAI protocols, one per (cell, task) reused by
    every scenario and rep of it (:func:`bench.sdk.clients.reused`), as a user's loop reuses its
    agent. It holds nothing of one run: the compiled graph has no checkpointer, so its state
    (the messages, and the model-call counts ModelCallLimitMiddleware's before_model and
    after_model keep in it, langchain/agents/middleware/model_call_limit.py:168, 236) lives in
    one ``ainvoke``; the middleware objects keep only their settings (their ``__init__``:
    model_call_limit.py:126, model_retry.py:116, tool_error.py:84); ChatOpenAI keeps its
    settings and clients (the shared transport, whose hook routes each request to its cell's
    run); the tool is :func:`bench.tools.current_run_function`, which calls the cell's own tool.
    ChatAnthropic takes no HTTP client to route (its own is cached per base URL,
    langchain_anthropic/_client_utils.py:65-80), so Anthropic cells build their agent per cell, on
    the slot's route, where the cached HTTP client serves the slot's cells
    (:data:`LangChainAdapter.stable_route`)."""
    if provider_wide is None:
        return _build(cell, task, _chat_model(cell, endpoint), _tools(task))
    built = clients.reused(
        (LangChainAdapter.name, cell, task.name, task.tool_name, task.output_model, provider_wide.root),
        lambda: _build(cell, task, _chat_model(cell, provider_wide), _tools(task, current_run_function)),
    )
    return built[0], dict(built[1])


async def _invoke(cell: Cell, task: Task, runnable: Runnable[Any, Any], details: dict[str, str]) -> AdapterResult:
    """Invoke (or stream) the agent once and report what reached the caller."""
    usage = UsageMetadataCallbackHandler()
    # A config callback receives on_llm_end for every model call that returned, and the
    # handler object outlives an exception raised later in the graph
    # (langchain_core/callbacks/usage.py:50-77).
    usage.run_inline = True
    # A sync handler is otherwise called through the loop's thread pool for every event of the
    # graph, chains included (callbacks/manager.py:391-410): about a third of a cell's CPU beyond
    # the SDK call. Inline it runs the same code on the loop (its lock guards nothing more).
    config: RunnableConfig = {"callbacks": [usage]}
    inputs = {"messages": [{"role": "user", "content": task.prompt}]}
    result = AdapterResult(details=details)
    final: Any = None
    try:
        if cell.stream:
            final = await _stream_values(runnable, inputs, config)
        else:
            final = await runnable.ainvoke(inputs, config=config)
    except Exception as exc:  # the SDK's exception, reported as is
        result.exception = exc
    result.usage = _reported_usage(usage)
    if result.exception is None:
        result.output = _output(cell, final, result.details)
    else:
        _exception_details(result.exception, result.details)
    return result


CHAT_OPENAI_DEFAULTS: dict[str, Any] = {"stream_usage": True}
"""What a ChatOpenAI on the local provider is given so it behaves as on api.openai.com: a custom
base_url switches stream usage off by default (langchain_openai/chat_models/base.py:895-905),
which a user on api.openai.com would not see. Also the default of an own agent's
``handle.langchain()`` (adapters/langchain/own.py, LangChainBinding.handle_model)."""


def _chat_model(cell: Cell, endpoint: Endpoint) -> BaseChatModel:
    """The chat model a user would construct, aimed at the local provider.

    Only the hardened variant states retries and timeouts; the others keep the clients'
    defaults (2 transport retries, openai/anthropic.DEFAULT_MAX_RETRIES).

    Within a run, ChatOpenAI gets the run's shared transports through its documented
    ``http_async_client`` and ``http_client`` (langchain_openai/chat_models/base.py:1026-1040,
    1515-1540; both, or it builds a sync client per base URL anyway), openai's
    ``DefaultAsyncHttpxClient`` / ``DefaultHttpxClient``: the SDK's own defaults. Retries and
    timeouts stay on the per-cell ``AsyncOpenAI`` (base.py:1463-1472), which sends its timeout with
    every request. ChatAnthropic takes no client: it reuses one from its own cache, keyed by base
    URL (langchain_anthropic/_client_utils.py:65-80), which a run's per-cell URL prefix never hits.
    """
    extra: dict[str, Any] = {}
    if cell.variant == HARDENED:
        extra = {"max_retries": CLIENT_RETRIES, "timeout": 20.0}
    if cell.protocol is Protocol.ANTHROPIC:
        return ChatAnthropic(
            model=endpoint.anthropic_model,
            base_url=endpoint.anthropic_base_url,
            api_key=endpoint.api_key,
            **extra,
        )
    return ChatOpenAI(
        model=endpoint.openai_model,
        base_url=endpoint.openai_base_url,
        api_key=endpoint.api_key,
        use_responses_api=cell.protocol is Protocol.RESPONSES,
        http_async_client=clients.shared((LangChainAdapter.name, cell.protocol, "async"), _async_transport),
        http_client=clients.shared((LangChainAdapter.name, cell.protocol, "sync"), _sync_transport),
        **CHAT_OPENAI_DEFAULTS,
        **extra,
    )


def _async_transport() -> DefaultAsyncHttpxClient:
    """openai's default async transport, with the hook that routes a cell's requests to its run."""
    return clients.routing(DefaultAsyncHttpxClient())


def _sync_transport() -> DefaultHttpxClient:
    """openai's default sync transport (ChatOpenAI builds one next to the async one; unused by
    ``ainvoke``), with the same hook."""
    return clients.routing(DefaultHttpxClient(), asynchronous=False)


def _build(cell: Cell, task: Task, model: BaseChatModel, tools: list[Any]) -> tuple[Runnable[Any, Any], dict[str, str]]:
    """The agent (or, in prompted mode, the agent-then-parser chain) for ``cell``."""
    if cell.mode is Mode.PROMPTED:
        return _prompted_chain(task, model, tools), {"strategy": "PydanticOutputParser"}
    details: dict[str, str] = {}
    middleware: list[Any] = []
    response_format: Any
    if cell.variant == HARDENED:
        schema = validated_model(task)
        middleware = _hardened_middleware(task)
        if cell.mode is Mode.TOOL:
            response_format = ToolStrategy(schema, handle_errors=True)
        else:
            response_format = ProviderStrategy(schema, strict=True)
    elif cell.variant == AUTO:
        response_format = task.output_model
        # The same decision create_agent takes for a bare schema at each model call
        # (langchain/agents/factory.py:1412-1422 -> _supports_provider_strategy, :581-627).
        picked = provider_strategy_picked(model)
        details["strategy"] = "ProviderStrategy" if picked else "ToolStrategy"
        # Bridge: no profile on langchain 1.0.0's chat models (langchain-core 1.0.0); 1.1.0 reads it.
        profile = getattr(model, "profile", None)
        details["profile_structured_output"] = str((profile or {}).get("structured_output"))
    elif cell.mode is Mode.TOOL:
        response_format = ToolStrategy(task.output_model)
    else:
        response_format = ProviderStrategy(task.output_model)
    details.setdefault("strategy", type(response_format).__name__)
    agent = create_agent(model, tools=tools, response_format=response_format, middleware=middleware)
    return agent, details


def provider_strategy_picked(model: BaseChatModel, tools: list[Any] | None = None) -> bool:
    """create_agent's own test for a bare schema, given the agent's ``tools``: the one place
    this adapter touches LangChain's private API, so that ``details['strategy']`` records the
    SDK's decision rather than a copy of it.

    LangChain has no public face for it: ``langchain.agents`` exports only ``create_agent`` and
    ``AgentState`` (agents/__init__.py:3-9); the bare schema becomes an ``AutoStrategy`` that is
    resolved inside the model node, per call, by the private ``_supports_provider_strategy``
    (factory.py:1412-1422, defined at factory.py:581-626), and the resolved strategy is never
    handed back (the state's ``structured_response`` is the parsed object only). The model's
    public ``profile['structured_output']`` is only one of that function's inputs (model-name
    fallbacks and a Gemini exception are the others), so reading it would be our rule, not
    LangChain's.

    Bridge for langchain 1.0.x, where it takes only the model (a list of model-name fragments,
    1.0.0 factory.py:351-371); from 1.1.0 it reads the model's profile and takes the tools too
    (1.1.0 factory.py:364, 384)."""
    from langchain.agents.factory import _supports_provider_strategy

    if "tools" in inspect.signature(_supports_provider_strategy).parameters:
        return _supports_provider_strategy(model, tools=tools or [])
    return _supports_provider_strategy(model)


def _tools(task: Task, function: Callable[[], Any] | None = None) -> list[Any]:
    """The harness tool as the plain async function the create_agent docs pass in ``tools``;
    ToolNode turns it into a StructuredTool whose args schema comes from the signature
    (langgraph/prebuilt/tool_node.py:801-804, ``create_tool``). No tool for other tasks.
    ``function`` makes it (default: the task's own tool's ``as_function``)."""
    if task.tool is None:
        return []
    return [(function or task.tool.as_function)()]


def _hardened_middleware(task: Task) -> list[Any]:
    """Production middleware from langchain.agents.middleware, outermost first.

    - ModelCallLimitMiddleware bounds the ToolStrategy retry loop, which otherwise runs until
      create_agent's recursion_limit of 9_999 (factory.py:1902);
    - ModelRetryMiddleware retries exceptions raised inside the model call, which includes
      ProviderStrategy's StructuredOutputValidationError (default_retry_on, _retry.py:70-76);
      on_failure="error" so exhaustion raises instead of ending with an error AIMessage;
    - ModelRefusalMiddleware turns a refusal block into ModelRefusalError (model_refusal.py),
      innermost so that ModelRetryMiddleware sees a non-retryable ModelError;
    - with a harness tool, ToolErrorMiddleware (tool_error.py:36-78): its ``on_error`` returns
      content to send a tool exception back as an error ToolMessage paired with the call id, or
      None to let it propagate and halt the run (awrap_tool_call, tool_error.py:175-211).
    """
    middleware: list[Any] = [
        ModelCallLimitMiddleware(run_limit=HARDENED_RUN_LIMIT, exit_behavior="error"),
        ModelRetryMiddleware(
            max_retries=HARDENED_MODEL_RETRIES,
            on_failure="error",
            initial_delay=HARDENED_RETRY_DELAY_S,
            jitter=False,
        ),
        ModelRefusalMiddleware(),
    ]
    if task.tool is not None:
        middleware.append(ToolErrorMiddleware(on_error=retryable_tool_error))
    return middleware


def retryable_tool_error(exc: Exception, request: ToolCallRequest) -> str | None:
    """ToolErrorMiddleware's handler: a retryable OrderToolError goes to the model as its
    structured JSON; anything else (non-retryable codes, unexpected exceptions) propagates."""
    if isinstance(exc, OrderToolError) and exc.retryable:
        return str(exc)
    return None


def validated_model(task: Task) -> type[BaseModel]:
    """The task's output model plus a pydantic validator that rejects semantically wrong answers.

    Pydantic validation is the hook LangChain documents for rejecting output: ToolStrategy
    feeds the ValidationError back to the model (factory.py:1312-1345), ProviderStrategy
    raises it as StructuredOutputValidationError (factory.py:1260-1272). Name, docstring and
    JSON schema stay those of the task's model, so the request is unchanged.
    """
    base = task.output_model

    def semantic_check(self: BaseModel) -> BaseModel:
        reason = task.check(self)
        if reason is not None:
            raise ValueError(reason)
        return self

    validators: dict[str, Any] = {"semantic_check": model_validator(mode="after")(semantic_check)}
    return create_model(
        base.__name__, __base__=base, __doc__=base.__doc__, __module__=base.__module__, __validators__=validators
    )


def _prompted_chain(task: Task, model: BaseChatModel, tools: list[Any]) -> Runnable[Any, Any]:
    """Agent without response_format whose final message goes through PydanticOutputParser.

    The parser is langchain-core's documented prompted mechanism: its format instructions
    carry the schema, its ``parse_result`` raises OutputParserException on bad JSON or a
    ValidationError (langchain_core/output_parsers/pydantic.py:29-45, 57-83).
    """
    parser: PydanticOutputParser[BaseModel] = PydanticOutputParser(pydantic_object=task.output_model)
    agent = create_agent(model, tools=tools, system_prompt=parser.get_format_instructions())
    return agent | RunnableLambda(_last_message) | parser


def _last_message(state: dict[str, Any]) -> BaseMessage:
    """The agent's final message: selection only, the parsing stays in the parser."""
    messages: list[BaseMessage] = state["messages"]
    return messages[-1]


async def _stream_values(
    agent: Runnable[Any, Any], inputs: dict[str, Any], config: RunnableConfig
) -> dict[str, Any] | None:
    """Consume ``agent.astream`` as the docs show it and return the last full state.

    ``stream_mode="messages"`` attaches langgraph's StreamMessagesHandler, a
    _StreamingCallbackHandler (langgraph/pregel/_messages.py:75), which makes the chat model
    call its streaming API (langchain_core/language_models/chat_models.py:624-626);
    ``"values"`` carries the state, including ``structured_response``.
    """
    last: dict[str, Any] | None = None
    async for mode, chunk in agent.astream(inputs, config=config, stream_mode=["messages", "values"]):
        if mode == "values":
            last = chunk
    return last


def _output(cell: Cell, final: Any, details: dict[str, str]) -> Any:
    """What the caller holds: structured_response for agents, the parsed object for chains."""
    if cell.mode is Mode.PROMPTED:
        return final
    state: dict[str, Any] = final or {}
    messages = state.get("messages") or []
    details["messages"] = str(len(messages))
    last = messages[-1] if messages else None
    last_ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last_ai is not None:
        meta = last_ai.response_metadata
        stop = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("status")
        if stop:
            details["stop_reason"] = str(stop)
    structured = state.get("structured_response")
    if structured is None and last is not None:
        details["final_message"] = str(last.content)[:200]
    return structured


def _exception_details(exc: BaseException, details: dict[str, str]) -> None:
    """The stop reason of the message a structured-output error carries, when it carries one
    (StructuredOutputError.ai_message, langchain/agents/structured_output.py:37-40)."""
    message = getattr(exc, "ai_message", None)
    if isinstance(message, AIMessage):
        meta = message.response_metadata
        stop = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("status")
        if stop:
            details["stop_reason"] = str(stop)


def _reported_usage(handler: UsageMetadataCallbackHandler) -> ReportedUsage:
    """Sum of what LangChain's usage callback collected over all model names."""
    if not handler.usage_metadata:
        return ReportedUsage(input_tokens=None, output_tokens=None)
    records = handler.usage_metadata.values()
    return ReportedUsage(
        input_tokens=sum(r.get("input_tokens", 0) for r in records),
        output_tokens=sum(r.get("output_tokens", 0) for r in records),
    )
