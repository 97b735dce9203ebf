"""Adapters by name, imported lazily.

Built-in adapters are registered through the ``misfit_bench.adapters`` entry-point group in
pyproject.toml, exactly as a third-party plugin registers its own, so one missing SDK never
breaks ``bench list`` and an outside package can add an SDK without touching this one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points

from bench.adapter import Adapter

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


def registrations() -> dict[str, Registration]:
    found = {ep.name: Registration(ep.name, ep.value) for ep in entry_points(group=GROUP)}
    return dict(sorted(found.items()))


def load(name: str) -> Adapter:
    registered = registrations()
    if name not in registered:
        known = ", ".join(registered) or "(none: is misfit-bench installed with 'pip install -e .'?)"
        raise UnknownAdapter(f"unknown SDK {name!r}; known: {known}")
    module_name, _, attribute = registered[name].target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise AdapterUnavailable(str(error)) from error
    adapter_class = getattr(module, attribute)
    adapter = adapter_class()
    if not isinstance(adapter, Adapter):
        raise TypeError(f"{registered[name].target} is not a bench.adapter.Adapter")
    return adapter
