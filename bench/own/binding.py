"""The seam between a user's agent object and the runner: one :class:`Binding` per SDK.

A binding drives the user's *real* agent object (their output type, instructions, retries,
validators, hooks, error handlers, tools) and changes only where its requests go, the way each
SDK documents for tests and overrides. It reports what reached the caller exactly as an adapter
does (:class:`bench.sdk.adapter.AdapterResult`), and the runner classifies.

Bindings are found by the type of the user's object, from the registered SDK plugins (bench.sdk.plugin),
so an SDK that is not installed never breaks the others.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from bench.core.vocabulary import Mode, Protocol
from bench.own.config import OwnAgentError
from bench.sdk import registry
from bench.sdk.adapter import AdapterResult, Endpoint
from bench.sdk.plugin import split_target
from bench.tools.own import current, wrap

PLACEHOLDER = Endpoint(root="http://127.0.0.1:9/runs/load-check")
"""Where a factory's model points while the loader inspects what the factory returns (port 9 is
the discard service: nothing is ever sent there, the loader makes no call)."""


class HandleMisuse(AttributeError):
    """The harness's model handle was used as a model (``create_agent(model, ...)`` instead of
    ``create_agent(model.langchain(), ...)``): the user's mistake, not their SDK's behaviour. The
    message names the fix; a cell that fails on it before any model call ends the run with exit 2."""


def handle_methods() -> str:
    """The SDK models a handle makes, as a factory calls them (``model.langchain() for langchain``)."""
    plugins = dict(registry.bindings().values())
    calls = sorted(f"model.{sdk.handle_method}() for {name}" for name, sdk in plugins.items() if sdk.handle_method)
    return ", ".join(calls) or "none registered"


def passed_handle_message(where: str) -> str:
    """One line for a factory that gave the handle itself where its SDK takes a model."""
    return (
        f"{where} is the harness's model handle itself, not a model: pass the SDK model made from it "
        f"({handle_methods()}; other SDKs take model.base_url, model.api_key and model.model_name)"
    )


@dataclass(frozen=True)
class ModelHandle:
    """What a factory receives: the harness's model for one cell, in each SDK's own type.

    ``protocol`` is the wire protocol the handle speaks (``protocol`` in the agent's
    ``[[tool.bench.agents]]`` entry; openai-chat when not given).
    """

    endpoint: Endpoint
    protocol: Protocol = Protocol.CHAT

    @property
    def base_url(self) -> str:
        """The base URL for this protocol (OpenAI ``.../v1``; Anthropic without it)."""
        return (
            self.endpoint.anthropic_base_url if self.protocol is Protocol.ANTHROPIC else self.endpoint.openai_base_url
        )

    @property
    def api_key(self) -> str:
        return self.endpoint.api_key

    @property
    def model_name(self) -> str:
        return self.endpoint.anthropic_model if self.protocol is Protocol.ANTHROPIC else self.endpoint.openai_model

    def __getattr__(self, name: str) -> Any:
        """``model.langchain()``, ``model.agentmaker()``: the SDK model object a factory passes to its
        agent, served by the binding of the SDK whose plugin declares that ``handle_method``."""
        if name.startswith("_"):
            raise AttributeError(name)
        for _, sdk in registry.bindings().values():
            if sdk.handle_method == name and sdk.binding is not None:
                handle = self
                binding = _import_binding(sdk.binding)
                return lambda **kwargs: binding.handle_model(handle, **kwargs)
        raise HandleMisuse(f"the model handle has no {name!r}: " + passed_handle_message("the object used"))


class Binding(ABC):
    """One user agent of one SDK, bound for driving against the local provider."""

    sdk: ClassVar[str]
    """The SDK's adapter name: the ``sdk`` column."""
    distribution: ClassVar[str]
    agent_type: ClassVar[type]
    """The SDK's agent object: what :meth:`accepts` recognises."""
    factory_required: ClassVar[str | None] = None
    """Why this SDK's agent must come from a factory (its model is bound at construction), or
    None when an agent object can be pointed at the provider as it is."""
    time_limit_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int] = 4
    tool_gap: ClassVar[str | None] = None
    """Why a run of this SDK's agent can never call a tool of the user's (its opted-in tool
    scenarios are then recorded ``unsupported`` with this note), or None when it can."""

    def __init__(self, agent: Any, factory: Callable[[ModelHandle], Any] | None, protocol: Protocol) -> None:
        if factory is None and self.factory_required is not None:
            raise OwnAgentError(self.factory_required)
        self.agent = agent
        """The user's object (for a factory: what it returned for the load check)."""
        self.factory = factory
        self.protocol = protocol
        self.run_kwargs: dict[str, Any] = {}
        """Keyword arguments the user passes to the SDK's run call (``run_kwargs`` in the entry)."""
        self.prompt = ""
        self.fakes: dict[str, Callable[..., Any]] = {}
        """Stand-ins the user gave for opted-in tools (``fake`` in the entry), by tool name."""

    @classmethod
    def accepts(cls, agent: Any) -> bool:
        """Whether ``agent`` is this SDK's agent object."""
        return isinstance(agent, cls.agent_type)

    model_protocols: ClassVar[tuple[tuple[type, Protocol], ...]] = ()
    """The SDK's model classes an agent's ``model`` may be, each with the protocol it speaks."""

    @classmethod
    def protocol_of(cls, agent: Any, configured: Protocol | None) -> Protocol:
        """The protocol the user's own model speaks: by its class (:attr:`model_protocols`), else
        by its name (:meth:`protocol_named`); a model of neither kind is one line, exit 2."""
        model = getattr(agent, "model", None)  # a graph or agentmaker Agent has none: a factory's
        found = next((protocol for kind, protocol in cls.model_protocols if isinstance(model, kind)), None)
        found = found or cls.protocol_named(model, configured)
        if found is None:
            raise OwnAgentError(
                f"{cls.sdk} model {model!r} speaks a protocol the local provider does not serve "
                f"(it serves {', '.join(p.value for p in Protocol)})"
            )
        return found

    @classmethod
    def protocol_named(cls, model: Any, configured: Protocol | None) -> Protocol | None:
        """The protocol of a model given by name, or of none given (the entry's ``protocol``);
        None when the name says nothing the provider serves."""
        return (configured or Protocol.CHAT) if model is None else None

    @abstractmethod
    def output(self) -> Any:
        """The declared output type (or raw JSON Schema); None when the SDK takes it at call time."""

    @abstractmethod
    def mode(self) -> Mode:
        """How the agent declares its output (the ``mode`` column)."""

    @abstractmethod
    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        """Call the user's agent once against ``endpoint``; report what reached the caller."""

    def passed_handle(self) -> str | None:
        """Where the agent a factory built holds the model handle itself in place of the SDK's
        model (LangChain's graph, agentmaker's ``llm``), for the load check to name; None when it
        does not, or when this SDK takes no model object from the handle."""
        return None

    @classmethod
    def handle_model(cls, handle: ModelHandle, **kwargs: Any) -> Any:
        """The SDK's model object on ``handle`` (``handle.<handle_method>(**kwargs)``), for an SDK
        whose agent must come from a factory; ``kwargs`` are the user's own."""
        raise OwnAgentError(f"{cls.sdk} builds its model from model.base_url, model.api_key and model.model_name")

    def note(self) -> str:
        return f"the user's {type(self.agent).__module__}.{type(self.agent).__qualname__}"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The user's tools by the name the model calls them, with their parameter schemas as the
        SDK sends them to the model (empty: the agent has no tools the harness can see)."""
        return {}

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        """The parameter schema of the user's tool ``name``; None when the SDK cannot show it
        (opting it in then needs explicit ``args``). Raises when the agent has no such tool."""
        schemas = self.tool_schemas()
        if name not in schemas:
            raise OwnAgentError(f"the agent has no tool {name!r} (its tools: {', '.join(schemas) or 'none'})")
        return schemas[name]

    def fake(self, name: str, implementation: Callable[..., Any]) -> None:
        """Call ``implementation`` instead of the user's tool ``name`` in every cell: their own
        stand-in, with the signature of the tool it replaces. Each binding swaps it in where its
        SDK lets a test replace a tool without touching the user's objects (see :meth:`run`)."""
        if not callable(implementation):
            raise OwnAgentError(f"a {type(implementation).__name__}, not callable")
        self.fakes[name] = implementation

    def with_fakes(self, agent: Any) -> Any:
        """``agent`` with each tool's :meth:`implementation` in place (a copy, or the cell's own
        object; never the user's). The default leaves it as is, for an SDK whose binding swaps
        them in another way (pydantic-ai: inside ``override``) or never calls tools."""
        return agent

    def implementation(self, name: str, original: Callable[..., Any], takes_ctx: bool = False) -> Any:
        """What the SDK runs for the user's tool ``name``: their fake, else ``original`` (their
        real code); in a tool scenario wrapped so the cell's log sees each call and a scripted
        call raises (bench.tools.own). ``takes_ctx``: its first parameter is the SDK's context."""
        chosen = self.fakes.get(name, original)
        return wrap(name, chosen, takes_ctx) if current() is not None else chosen

    def swapping(self) -> bool:
        """Whether this cell's tools are swapped: a fake was given, or a tool scenario runs."""
        return bool(self.fakes) or current() is not None

    def built(self, endpoint: Endpoint) -> Any:
        """The agent for one cell: the user's object, or what the factory makes for ``endpoint``,
        with the fakes of opted-in tools swapped in (and, in a tool scenario, every tool wrapped)."""
        agent = self.agent if self.factory is None else self.factory(ModelHandle(endpoint, self.protocol))
        return self.with_fakes(agent) if self.swapping() else agent


def known_agents() -> str:
    """The agent objects some registered binding drives, for an error that says what can be."""
    plugins = {id(sdk): sdk for _, sdk in registry.bindings().values()}
    return (
        ", ".join(sdk.agents for sdk in plugins.values() if sdk.agents) or "none (no SDK with a binding is registered)"
    )


def _import_binding(target: str) -> type[Binding]:
    module_name, attribute = split_target(target)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise OwnAgentError(str(error)) from None
    cls: type[Binding] = getattr(module, attribute)
    return cls


def binding_class(agent: Any) -> type[Binding] | None:
    """The binding class for ``agent``'s type (by its top-level package, from the registered SDK
    plugins), or None when no binding knows it."""
    package = type(agent).__module__.split(".")[0]
    found = registry.bindings().get(package)
    if found is None or found[1].binding is None:
        return None
    cls = _import_binding(found[1].binding)
    return cls if cls.accepts(agent) else None
