"""An SDK's own environment, as its adapter declares it.

An SDK whose requirements conflict with the harness's pins (instructor 1.17.0 wants rich<15 and
jiter<0.15 against the pinned 15.0.0 and 0.19.0) cannot be installed beside the others. Its adapter
names a lock committed in its own folder (``Adapter.environment``, exact pins as ``uv pip compile``
writes them); its cells then run in a worker process in that environment, built on first use and
cached, exactly as a release's cells do (bench.releases builds it, ``EnvironmentStore.build_locked``;
the runner leases its workers). The parent never imports the SDK, so such an adapter's module
imports it only inside what ``run_cell`` calls; the worker imports that before it reports ready
(``Adapter.preload``).

This module reads the declaration (where the lock is, what it pins) and builds nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.sdk.adapter import Adapter


def lock_of(adapter: Adapter) -> Path | None:
    """The committed lock of the adapter's own environment (beside its module), or None: the SDK
    runs in-process, from the harness's own interpreter."""
    if not adapter.environment:
        return None
    declared = next(kind for kind in type(adapter).__mro__ if "environment" in vars(kind))
    module = sys.modules[declared.__module__]
    assert module.__file__ is not None
    return Path(module.__file__).resolve().parent / adapter.environment


def pins(lock: Path) -> dict[str, str]:
    """The lock's ``name==version`` lines, canonical name -> version (comments and options left out)."""
    found: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in requirement and not requirement.startswith("-"):
            name, version = requirement.split("==", 1)
            found[_canonical(name.split("[", 1)[0])] = version.strip()
    return found


def locked_version(adapter: Adapter) -> str | None:
    """The SDK's version in its own environment's lock (None without a lock, or a lock that does
    not pin the distribution)."""
    lock = lock_of(adapter)
    return None if lock is None or not lock.is_file() else pins(lock).get(_canonical(adapter.distribution))


def _canonical(name: str) -> str:
    """PEP 503's normalised name (``packaging`` is not imported here: a release worker lacks it)."""
    return "-".join(name.strip().lower().replace("_", "-").replace(".", "-").split("-"))
