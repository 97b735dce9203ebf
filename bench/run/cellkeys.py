"""What decides a cell, digested: the inputs of the cell cache's key (bench.run.cache says what
the key holds and why). Kept apart from the store that uses them, so that a warm run
(:mod:`bench.run.warm`) digests the same inputs the same way."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.planner import CellPlan
from bench.sdk.adapter import Adapter

BENCH = Path(__file__).resolve().parents[1]
READERS = frozenset({"cli", "dataset", "fixture", "gate", "pick", "publish", "report", "upgrade", "view"})
"""Packages of ``bench`` that read finished runs and never decide a cell: left out of the key."""
FORMAT = 1
"""The key's format: a change to what a key holds bumps it, so no old entry is served."""


def digest_files(paths: Iterable[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def source_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def code_digest(bench: Path = BENCH) -> str:
    """Every file of ``bench`` but :data:`READERS`' (sources, static data, schemas)."""
    files = [p for p in source_files(bench) if p.relative_to(bench).parts[0] not in READERS]
    return digest_files(files, bench)


def adapter_digest(adapter: Adapter) -> str:
    """The files of the folder the adapter's class is defined in (``adapters/<sdk>/``)."""
    folder = Path(sys.modules[type(adapter).__module__].__file__ or ".").resolve().parent
    return digest_files(source_files(folder), folder)


OFFICIAL_CLIENTS = ("openai", "anthropic", "httpx")
"""In every SDK's environment key: the clients the provider's answers are parsed by."""


def installed_digest(adapter: Adapter) -> str:
    """The in-process SDK's environment: its requirement (``Adapter.requirement``, extras
    included), its companions and worker requirements, the official clients, and everything
    they require, each ``name==version`` as installed here. A pin bump of one SDK changes its
    cells' keys only; one of a package several SDKs require changes each of theirs."""
    from packaging.requirements import InvalidRequirement, Requirement

    if adapter.language != "python":
        return node_digest()
    wanted = [adapter.requirement or adapter.distribution, *adapter.companions, *adapter.worker_requirements]
    todo = [*wanted, *OFFICIAL_CLIENTS]
    seen: dict[str, str] = {}
    while todo:
        try:
            requirement = Requirement(todo.pop())
        except InvalidRequirement:
            continue
        name = requirement.name.lower().replace("_", "-")
        extras = sorted(requirement.extras)
        marker = f"{name}[{','.join(extras)}]"
        if marker in seen:
            continue
        try:
            found = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            seen[marker] = "absent"
            continue
        seen[marker] = found.version
        for line in found.requires or []:
            needed = Requirement(line)
            environments = [{"extra": extra} for extra in extras or [""]]
            if needed.marker is None or any(needed.marker.evaluate(env) for env in environments):
                todo.append(str(needed).split(";")[0])
    return hashlib.sha256(json.dumps(sorted(seen.items())).encode()).hexdigest()


def node_digest() -> str:
    """A TypeScript SDK's environment: the Node side's own files (package.json, the lock, the
    worker and its resolution hook) and the Node it runs on."""
    from bench.node import setup

    root = setup.NODE_ROOT
    binary = setup.node_binary()
    node = setup.node_version(binary) if binary else None
    return hashlib.sha256(
        f"{digest_files([p for p in root.iterdir() if p.is_file()], root)} {node}".encode()
    ).hexdigest()


def cacheable(adapter: Adapter, plan: CellPlan) -> bool:
    """Whether the key sees everything that decides the cell: not a user's own agent, nor an
    adapter answering a user's type or tasks drawn from cassettes (their code is not ours)."""
    from bench.own.typed import OnYourType

    return not plan.cell.agent and not isinstance(adapter, OnYourType)


@dataclass(frozen=True)
class Keys:
    """What every cell of one run shares, digested once; :meth:`of` adds the cell's own."""

    code: str
    options: str
    adapters: dict[str, str] = field(default_factory=dict)
    installed: dict[str, str] = field(default_factory=dict)
    """Each adapter's in-process environment (:func:`installed_digest`), by adapter name."""
    machine: str = f"{platform.system()} {platform.release()} {tempfile.gettempdir()} {sys.version}"

    def of(self, adapter: Adapter, plan: CellPlan) -> str | None:
        if not cacheable(adapter, plan):
            return None
        env = plan.environment
        parts = {
            "format": FORMAT,
            "code": self.code,
            "adapter": self.adapters.get(adapter.name) or adapter_digest(adapter),
            "environment": (
                self.installed.get(adapter.name) or installed_digest(adapter)
                if env is None or env.path is None
                else [env.name, *env.freeze]
            ),
            "machine": self.machine,
            "options": self.options,
            "scenario": plan.scenario.model_dump(mode="json"),
            "cell": asdict(plan.cell),
            "rep": plan.rep,
            "seed": plan.seed,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def run_keys(adapters: dict[str, Adapter], options: Any) -> Keys:
    """The shared part of every key of a run with these adapters and :class:`RunOptions`."""
    chosen = {k: v for k, v in asdict(options).items() if k != "concurrency"}
    if chosen.get("cassettes"):
        folder = Path(chosen["cassettes"])
        chosen["cassettes"] = digest_files([p for p in folder.rglob("*") if p.is_file()], folder)
    return Keys(
        code=code_digest(),
        options=json.dumps(chosen, sort_keys=True, default=str),
        adapters={name: adapter_digest(adapter) for name, adapter in adapters.items()},
        installed={name: installed_digest(adapter) for name, adapter in adapters.items()},
    )
