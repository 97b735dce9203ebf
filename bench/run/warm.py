"""A warm run served whole without planning (issue 38.3): on an unchanged tree, ``bench run``
reads what its last plan came to and each SDK's rows in one step, and imports no SDK.

Planning imports every adapter, and an in-process adapter imports its SDK to say what it can
express: seconds of a warm run that would plan what the last run planned. A run whose cells were
all kept in the cell cache leaves a *memo* (``plans/<key>.json`` in the cache folder): what its
planning came to (its warning lines, the manifest's planned part) and, for each adapter, the name
of the *pack* holding its cells' rows (:meth:`bench.run.cache.CellCache.pack`). The memo's key is
a digest of everything planning reads that can differ between two runs: the request (every
option that is recorded), the code (``bench`` as the cell keys digest it), the registered entry
points, every distribution installed on ``sys.path`` (names and versions: a pin bump of any SDK
plans again, and then only that SDK's cells miss), the Node side, the Python and the machine,
the scenario files, and the ``MISFIT_BENCH_*`` variables. What planning found on disk is
re-checked on every use (*witnesses*): each adapter's folder digested again, each own
environment's marker file. Any difference, a missing pack or a damaged one, and the run plans as
ever (and the cell cache serves what it still can, entry by entry, each checked).

Only a run the key sees whole is memoised: no user's agent or type, no drawn tasks, no cassettes,
no ``--release``, no ``--verify-cache`` (it runs cells again), no environment build error.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench.planner import SuiteRequest, request_to_json
from bench.run.cache import CACHE_ENV, CellCache, Pack, RunCache
from bench.run.cellkeys import FORMAT, Keys, code_digest, node_digest
from bench.sdk import registry

PLANS = "plans"
"""The cache folder's subfolder of memos."""
BUILDING = "building "
"""How an environment build's progress line starts (bench.releases.prepare): a plan that built
one is not memoised, so a warm run never says it builds what it found."""


@dataclass(frozen=True)
class Memo:
    """What one plan came to, as :func:`write_memo` keeps it."""

    key: str
    warnings: list[str]
    planned: dict[str, Any]
    """The manifest's planned part (``bench.run.manifests.planned_manifest``)."""
    groups: dict[str, str]
    """Each adapter's pack (its :func:`bench.run.cache.group_key`)."""
    witnesses: dict[str, dict[str, str]]


def eligible(request: SuiteRequest) -> bool:
    """Whether a run of ``request`` can be memoised at all (see the module's docstring)."""
    from bench.results.store import KILL_ENV, PAUSE_ENV

    cache = request.cell_cache
    return not (
        cache is None
        or cache.verify
        or request.agents is not None
        or request.output_type is not None
        or request.tasks != "builtin"
        or request.releases
        or request.options.cassettes is not None
        or os.environ.get(PAUSE_ENV)
        or os.environ.get(KILL_ENV)
    )


def memo_key(request: SuiteRequest) -> str:
    """The digest of everything planning reads that can differ between two runs."""
    registrations = registry.registrations()
    parts = {
        "format": FORMAT,
        "request": request_to_json(request, request.sdks),
        "cache_dir": str(request.cache_dir),
        "code": code_digest(),
        "registrations": [[r.name, r.target, r.distribution, list(r.extras)] for r in registrations.values()],
        "installed": installed_everywhere(),
        "node": _node(),
        "machine": Keys(code="", options="").machine,
        "scenarios": [_folder_digest(Path(path)) for path in request.scenario_paths],
        "variables": {k: v for k, v in sorted(os.environ.items()) if k.startswith("MISFIT_BENCH_") and k != CACHE_ENV}
        | {"XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME"), "HOME": os.environ.get("HOME")},
        "path": sys.path,
        "cwd": os.getcwd(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _node() -> str | None:
    """The Node side as a TypeScript SDK's key holds it; None where this tree has no Node side."""
    from bench.node import setup

    return node_digest() if setup.NODE_ROOT.is_dir() else None


def installed_everywhere() -> str:
    """Every distribution on ``sys.path``, by its metadata folder's name (``name-version``), in
    path order: the superset of what any cell's environment key reads (``installed_digest``)."""
    found: list[str] = []
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        found += [f"{entry}/{name}" for name in names if name.endswith((".dist-info", ".egg-info", ".egg-link"))]
    return hashlib.sha256("\n".join(found).encode()).hexdigest()


def _folder_digest(path: Path) -> str:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path] if path.exists() else []
    digest = hashlib.sha256()
    for file in sorted(files):
        digest.update(str(file).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def witnesses(keys: Keys, adapters: dict[str, Any], plans: Iterable[Any]) -> dict[str, dict[str, str]]:
    """What planning found on disk, to check again on use: each adapter's folder (the digest its
    cells' keys hold) and each own environment's marker file (its resolved set is in the keys)."""
    from bench.releases.envs import MARKER

    folders = {}
    for name, adapter in adapters.items():
        folder = Path(sys.modules[type(adapter).__module__].__file__ or ".").resolve().parent
        folders[str(folder)] = keys.adapters[name]
    markers = {}
    for plan in plans:
        env = plan.environment
        if env is not None and env.path is not None:
            markers[str(env.path / MARKER)] = _folder_digest(env.path / MARKER)
    return {"adapters": folders, "markers": markers}


def _still(witnessed: dict[str, dict[str, str]]) -> bool:
    from bench.run.cellkeys import digest_files, source_files

    for folder, digest in witnessed["adapters"].items():
        path = Path(folder)
        if not path.is_dir() or digest_files(source_files(path), path) != digest:
            return False
    return all(_folder_digest(Path(marker)) == digest for marker, digest in witnessed["markers"].items())


def _memo_path(store: CellCache, key: str) -> Path:
    return store.folder / PLANS / f"{key}.json"


def read_memo(store: CellCache, key: str) -> Memo | None:
    """The memo of ``key`` when it is whole and still holds (its witnesses unchanged); else None
    (a damaged one said in one line and removed)."""
    path = _memo_path(store, key)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        data = json.loads(text)
        body = data["memo"]
        if data.get("format") != FORMAT or body.get("key") != key or data.get("sha256") != _sha(body):
            raise ValueError("it is not the memo its name says")
        memo = Memo(body["key"], body["warnings"], body["planned"], body["groups"], body["witnesses"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        store.warn(f"cell cache: {path} cannot be used ({error}); the run plans again")
        path.unlink(missing_ok=True)
        return None
    return memo if _still(memo.witnesses) else None


def _sha(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_memo(store: CellCache, memo: Memo) -> None:
    """Keep ``memo`` (written under a temporary name and renamed into place)."""
    path = _memo_path(store, memo.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"key": memo.key, "warnings": memo.warnings, "planned": memo.planned, "groups": memo.groups,
            "witnesses": memo.witnesses}  # fmt: skip
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.write_text(json.dumps({"format": FORMAT, "sha256": _sha(body), "memo": body}), encoding="utf-8")
    os.replace(staging, path)


def memoisable(warnings: list[str], env_errors: list[str], cache: RunCache) -> bool:
    """Whether the plan just made can be memoised: every cell keyed, no environment built or
    failing, nothing run again to verify."""
    return (
        not env_errors
        and not cache.not_cacheable
        and not cache.verifying
        and not any(line.startswith(BUILDING) for line in warnings)
    )


@dataclass(frozen=True)
class Served:
    """A whole run's rows from the packs, as this run's: ``cached`` naming the run that computed
    each, ``suite_id`` this run's."""

    runs: pa.Table
    attempts: pa.Table
    served_from: dict[str, int]


def packs_of(store: CellCache, memo: Memo) -> list[Pack] | None:
    """Every adapter's pack of the memo; None when one is missing or damaged."""
    packs = []
    for group in memo.groups.values():
        pack = store.pack(group)
        if pack is None:
            return None
        packs.append(pack)
    return packs


def as_ours(packs: list[Pack], suite_id: str) -> Served:
    """The packs' rows as this run writes them (sorted as ``ResultsWriter.finalize`` sorts)."""
    runs = pa.concat_tables([pack.runs for pack in packs])
    attempts = pa.concat_tables([pack.attempts for pack in packs])
    origin = runs.column("suite_id")
    ours = pa.array([suite_id] * runs.num_rows, pa.string())
    runs = _set(_set(runs, "cached", origin), "suite_id", ours)
    attempts = _set(attempts, "suite_id", pa.array([suite_id] * attempts.num_rows, pa.string()))
    counts = {str(item["values"]): int(item["counts"]) for item in pc.value_counts(origin).to_pylist()}
    return Served(
        runs.sort_by([("cell_id", "ascending")]),
        attempts.sort_by([("cell_id", "ascending"), ("started_at", "ascending")]),
        counts,
    )


def _set(table: pa.Table, name: str, values: Any) -> pa.Table:
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), values)


def records(served: Served, on_record: Callable[[Any], None]) -> None:
    """Hand each served cell to ``on_record`` as a ``CellRecord`` (the progress line counts them)."""
    from bench.run.runner import CellRecord

    attempts: dict[str, list[dict[str, Any]]] = {}
    for row in served.attempts.to_pylist():
        attempts.setdefault(row["cell_id"], []).append(row)
    for run in served.runs.to_pylist():
        on_record(CellRecord(run, attempts.get(run["cell_id"], [])))


def summary(store: CellCache, served: Served) -> dict[str, Any]:
    """The manifest's ``cell_cache`` of a run served whole (as :meth:`RunCache.summary` words it)."""
    return {
        "folder": str(store.folder),
        "served": served.runs.num_rows,
        "served_from": dict(served.served_from),
        "stored": 0,
        "not_cacheable": 0,
        "verified": 0,
        "disagreements": [],
    }
