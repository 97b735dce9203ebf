"""One SDK's two faces, named by its one entry point.

An SDK plugs in through one entry point in the ``misfit_bench.adapters`` group. It names an
:class:`SdkPlugin` (what the built-in SDKs do, ``adapters/<sdk>/__init__.py``): the adapter that
builds the built-in cells, and the binding that drives a user's own agent, each as a lazily
imported ``module:Class`` target, with the top-level packages of the agent objects the binding
drives. The plugin module itself imports no SDK, so reading every plugin (to find the binding for a
user's agent, or to list what is registered) costs no SDK import. An entry point may still name an
Adapter class directly (built-in cells only, no ``--agent``): :func:`plugin_of` wraps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class SdkPlugin:
    adapter: str
    """``module:Class`` of the :class:`bench.sdk.adapter.Adapter` for the built-in cells."""
    binding: str | None = None
    """``module:Class`` of the :class:`bench.own.binding.Binding` for a user's own agent; None
    when the SDK supports built-in cells only."""
    agent_packages: tuple[str, ...] = ()
    """The top-level packages of the agent objects :attr:`binding` drives (``type(agent).__module__``
    up to its first dot: ``langgraph`` for a LangChain ``create_agent`` graph)."""
    agents: str = ""
    """How the agent objects read in an error that lists what can be driven."""
    handle_method: str | None = None
    """The name of the model-handle method a factory calls for this SDK's model object
    (``model.langchain()``), served by the binding's ``handle_model``; None when the SDK needs none."""


def plugin_of(target: str, loaded: Any) -> SdkPlugin:
    """The plugin an entry point names: an :class:`SdkPlugin` as it is, an Adapter class as a
    plugin with no binding."""
    if isinstance(loaded, SdkPlugin):
        return loaded
    return SdkPlugin(adapter=target)


def split_target(target: str) -> tuple[str, str]:
    """``module:attr`` as its two parts."""
    module, _, attribute = target.partition(":")
    return module, attribute
