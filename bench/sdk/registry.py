"""Adapters by name, imported lazily.

Built-in adapters are registered through the ``misfit_bench.adapters`` entry-point group in
pyproject.toml, exactly as a third-party plugin registers its own, so one missing SDK never
breaks ``bench list`` and an outside package can add an SDK without touching this one.

The registration also says how to install the SDK: the extra named in brackets after the
target (``"adapters.langchain.adapter:LangChainAdapter [langchain]"``) is the package extra that pulls
it in. It is read from the entry point, before the adapter's module is imported, because a
missing SDK is exactly the case where that module cannot be imported.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from importlib.metadata import entry_points
from typing import Any

from bench.core.suggest import did_you_mean
from bench.sdk.adapter import Adapter
from bench.sdk.environment import locked_version
from bench.sdk.plugin import SdkPlugin, plugin_of, split_target

GROUP = "misfit_bench.adapters"


class UnknownAdapter(KeyError):
    """An adapter name nobody registered; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class AdapterUnavailable(ImportError):
    """The adapter is registered but its SDK is not installed; the message says how to fix it."""


@dataclass(frozen=True)
class Registration:
    name: str
    target: str
    """``module:Class``, imported only when the adapter is used."""
    distribution: str | None = None
    """The distribution that registered the adapter (``misfit-bench`` for the built-in ones)."""
    extras: tuple[str, ...] = ()
    """The distribution's extras that install the SDK."""

    @property
    def install_hint(self) -> str:
        """The command that installs what the adapter needs, e.g.
        ``pip install 'misfit-bench[langchain]'``."""
        if self.distribution is None:
            return f"install the package that provides {self.target}"
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"pip install '{self.distribution}{extras}'"


INHERITED = "MISFIT_BENCH_REGISTRATIONS"
"""A release worker running a user's agent has no misfit-bench distribution installed, so no
entry points: the parent hands its registrations down in this variable (JSON, see
:func:`inherited_registrations`), and bindings are found there as in the parent."""


def inherited_registrations() -> str:
    """This process's registrations as :data:`INHERITED`'s value."""
    return json.dumps([asdict(registration) for registration in registrations().values()])


def registrations() -> dict[str, Registration]:
    """The registered SDKs, inherited and from entry points: scanned once per process for the same
    inherited list, ``sys.path`` and entry-point reader (a binding is looked up for every cell a
    factory builds, and one scan of the installed distributions costs milliseconds)."""
    return dict(_scanned(os.environ.get(INHERITED) or "[]", tuple(sys.path), entry_points))


@functools.lru_cache(maxsize=8)
def _scanned(inherited: str, path: tuple[str, ...], reader: Any) -> tuple[tuple[str, Registration], ...]:
    del path  # part of the cache key only: a folder added to sys.path can add entry points
    found = {
        item["name"]: Registration(item["name"], item["target"], item["distribution"], tuple(item["extras"]))
        for item in json.loads(inherited)
    }
    found |= {
        ep.name: Registration(
            ep.name,
            f"{ep.module}:{ep.attr}",
            ep.dist.name if ep.dist is not None else None,
            _extras(ep.value),
        )
        for ep in reader(group=GROUP)
    }
    return tuple(sorted(found.items()))


def _extras(value: str) -> tuple[str, ...]:
    """The bracketed extras of an entry-point value, read whole: ``EntryPoint.extras`` splits
    on word characters, so it would cut ``claude-agent-sdk`` into three names."""
    _, bracket, rest = value.partition("[")
    names = rest.rstrip().removesuffix("]").split(",") if bracket else []
    return tuple(name.strip() for name in names if name.strip())


def _registration(name: str) -> Registration:
    registered = registrations()
    if name not in registered:
        known = ", ".join(registered) or "(none: is misfit-bench installed with 'pip install -e .'?)"
        raise UnknownAdapter(f"unknown SDK {name!r}{did_you_mean(name, registered) or ';'} known: {known}")
    return registered[name]


def plugin(name: str) -> SdkPlugin:
    """What the entry point ``name`` names (both faces of the SDK), read without importing the SDK
    when the entry point names an :class:`SdkPlugin`, as the built-in ones do."""
    return _resolved(name, _registration(name))


@functools.lru_cache(maxsize=64)
def _resolved(name: str, registration: Registration) -> SdkPlugin:
    """The plugin of one registration, read once per process (a binding is looked up for every
    cell a factory builds); a new or changed entry point is a new key."""
    module_name, attribute = split_target(registration.target)
    module = _imported(name, registration, module_name)
    found = getattr(module, attribute, None)
    if found is None:
        raise AdapterUnavailable(f"{_where(name, registration)}: module {module_name} has no attribute {attribute!r}")
    return plugin_of(registration.target, found)


def _imported(name: str, registration: Registration, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        hint = registration.install_hint
        raise AdapterUnavailable(f"the {name} adapter cannot import its SDK ({error}): {hint}") from error
    except Exception as error:  # a module that fails at import for another reason (its own bug)
        raise AdapterUnavailable(f"{_where(name, registration)}: module {module_name} failed to import: "
                                 f"{_first_line(error)}") from error  # fmt: skip


def adapter_target(name: str) -> str:
    """``module:Class`` of the adapter registered as ``name`` (what a release worker imports)."""
    return plugin(name).adapter


def load(name: str) -> Adapter:
    registration = _registration(name)
    module_name, attribute = split_target(plugin(name).adapter)
    module = _imported(name, registration, module_name)
    # A third-party entry point can name a class that is not there or does not construct: one
    # line naming the entry point, like a missing SDK, rather than a traceback from here.
    where = _where(name, registration)
    adapter_class = getattr(module, attribute, None)
    if adapter_class is None:
        raise AdapterUnavailable(f"{where}: module {module_name} has no attribute {attribute!r}")
    try:
        adapter = adapter_class()
    except Exception as error:
        raise AdapterUnavailable(f"{where} could not be built: {_first_line(error)}") from error
    if not isinstance(adapter, Adapter):
        raise AdapterUnavailable(f"{where} is not a bench.sdk.adapter.Adapter (got {type(adapter).__name__})")
    return adapter


def bindings() -> dict[str, tuple[str, SdkPlugin]]:
    """Agent package -> (registered SDK name, plugin) for every registered SDK whose plugin has a
    binding for a user's own agent; an entry point that cannot be read is left out (``bench list``
    names it)."""
    found: dict[str, tuple[str, SdkPlugin]] = {}
    for name, registration in registrations().items():
        try:
            sdk = _resolved(name, registration)
        except AdapterUnavailable:
            continue
        if sdk.binding is not None:
            found.update(dict.fromkeys(sdk.agent_packages, (name, sdk)))
    return found


def _where(name: str, registration: Registration) -> str:
    distribution = f" (from {registration.distribution})" if registration.distribution else ""
    return f"the {name} adapter's entry point {registration.target!r}{distribution}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def sdk_version(adapter: Adapter) -> str | None:
    """The SDK release the adapter's cells run: its own environment's, when it has one (the
    parent may have another release installed, or none), else what the adapter reads as
    installed (the distribution's version; a Node SDK's from its lock)."""
    if adapter.environment:
        return locked_version(adapter)
    return adapter.installed_version()
