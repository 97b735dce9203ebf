"""The cell cache: a cell whose deciding inputs are unchanged is not run again, its rows are
reused (issue 38). A cell's result is a function of what decides it, and the key is a digest of
all of that:

- the code that runs it: every source file of ``bench`` but the packages that only read finished
  runs (:data:`bench.run.cellkeys.READERS`), and the files of the cell's adapter folder;
- the SDK's environment: for an in-process cell the SDK's requirement, its companions, the
  official clients and all they require, as installed (:func:`bench.run.cellkeys.installed_digest`: a pin bump of
  one SDK runs that SDK's cells again, no other's); for a worker's, the release environment's
  whole resolved set; for a TypeScript SDK's, the Node side's lock, worker and Node version;
  the Python, and what of the machine reaches a request (the OS release, the temp folder: the
  Claude CLI bills both);
- the scenario's definition (its whole model, faults and answers included), the cell (SDK, mode,
  variant, protocol, stream), the repetition and the seed;
- the run options that change a cell (call cap, time limit, bodies recorded, the cassettes'
  contents and redaction) and not the ones that cannot (concurrency).

A cell the key cannot see all of is never cached: a user's own agent or type (its code is the
user's) and a cell run from cassettes tasks. An entry is a folder written whole under a temporary
name and renamed into place, so a reader never sees half of one and two runs sharing the folder
cannot corrupt it; its ``entry.json`` holds its key and the sha256 of each table, checked before
any row is served: an entry edited, truncated or swapped for another cell's is recomputed, with
one warning line, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench.planner import CellPlan, SuiteError, SuiteRequest
from bench.results import columns
from bench.run.cellkeys import FORMAT, Keys, run_keys
from bench.sdk.adapter import Adapter

CACHE_ENV = "MISFIT_BENCH_CELL_CACHE"
"""A folder for the cell cache, or ``off``; unset: ``<cache root>/cells``."""
ENTRY_FILE = "entry.json"
MAX_ENTRY_BYTES = 64 * 1024 * 1024


def default_folder() -> Path | None:
    """Where ``bench run`` keeps the cache (None: ``MISFIT_BENCH_CELL_CACHE=off``)."""
    configured = os.environ.get(CACHE_ENV, "")
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    root = os.environ.get("MISFIT_BENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "misfit-bench") / "cells"


@dataclass
class Hit:
    run: dict[str, Any]
    attempts: list[dict[str, Any]]
    suite_id: str
    """The run whose cell this was."""


class CellCache:
    """Entries under ``folder/<key[:2]>/<key>/``: ``runs.arrow``, ``attempts.arrow``, ``entry.json``."""

    def __init__(self, folder: Path, warn: Callable[[str], None]) -> None:
        self.folder = folder
        self.warn = warn
        self.rejected: set[str] = set()
        """Packs found damaged in this run: said once, then read entry by entry."""

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str, cell_id: str) -> Hit | None:
        """The entry of ``key`` when it is whole and is this cell's; else None (a damaged one
        said in one line)."""
        path = self._path(key)
        if not path.is_dir():
            return None
        try:
            entry = json.loads((path / ENTRY_FILE).read_text(encoding="utf-8"))
            if entry.get("key") != key or entry.get("format") != FORMAT:
                raise ValueError("its key is another cell's")
            tables = {name: self._table(path, name, entry) for name in ("runs", "attempts")}
            runs = tables["runs"].to_pylist()
            if len(runs) != 1 or runs[0].get("cell_id") != cell_id:
                raise ValueError("it holds another cell's row")
            return Hit(runs[0], tables["attempts"].to_pylist(), str(entry["suite_id"]))
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as error:
            self.warn(f"cell cache: {path} cannot be used ({error}); the cell runs again")
            _discard(path)  # so the cell's new entry takes its place (put keeps an entry there)
            return None

    @staticmethod
    def _table(path: Path, name: str, entry: dict[str, Any], limit: int = MAX_ENTRY_BYTES) -> pa.Table:
        data = (path / f"{name}.arrow").read_bytes()
        if len(data) > limit or hashlib.sha256(data).hexdigest() != entry[f"{name}_sha256"]:
            raise ValueError(f"{name}.arrow is not the one its {path.joinpath(ENTRY_FILE).name} names")
        with pa.ipc.open_stream(data) as reader:
            table = reader.read_all()
        schema = columns.RUNS if name == "runs" else columns.ATTEMPTS
        if not table.schema.equals(schema, check_metadata=False):
            raise ValueError(f"{name}.arrow has another schema")
        return table

    def put(self, key: str, run: dict[str, Any], attempts: list[dict[str, Any]], suite_id: str) -> None:
        """Write the entry whole under a temporary name, then rename it into place (a concurrent
        writer of the same key that got there first is kept)."""
        runs = pa.Table.from_pylist([run], schema=columns.RUNS)
        header = {"key": key, "format": FORMAT, "suite_id": suite_id}
        _write_whole(self._path(key), header, runs, pa.Table.from_pylist(attempts, schema=columns.ATTEMPTS))

    # Packs: one SDK's entries of a run in one pair of tables, read in one step (issue 38.3).

    def _pack_path(self, group: str) -> Path:
        return self.folder / PACKS / group[:2] / group

    def pack(self, group: str) -> Pack | None:
        """The pack named ``group`` when it is whole and holds exactly the cells its name digests
        (:func:`group_key`); else None (a damaged one said in one line and removed: its cells are
        read entry by entry, each checked as ever, and the run writes the pack again)."""
        path = self._pack_path(group)
        if group in self.rejected or not path.is_dir():
            return None
        try:
            entry = json.loads((path / ENTRY_FILE).read_text(encoding="utf-8"))
            cells = [(str(cell_id), str(key)) for cell_id, key in entry["cells"]]
            if entry.get("format") != FORMAT or entry.get("group") != group or group_key(cells) != group:
                raise ValueError("it is another group's")
            runs = self._table(path, "runs", entry, MAX_PACK_BYTES)
            attempts = self._table(path, "attempts", entry, MAX_PACK_BYTES)
            if runs.column("cell_id").to_pylist() != [cell_id for cell_id, _ in cells]:
                raise ValueError("its rows are not the cells it names")
            if attempts.num_rows and not pc.all(pc.is_in(attempts.column("cell_id"), runs.column("cell_id"))).as_py():
                raise ValueError("it holds attempts of a cell it does not name")
            return Pack(dict(cells), runs, attempts)
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as error:
            self.warn(f"cell cache: {path} cannot be used ({error}); its cells are read one by one")
            self.rejected.add(group)
            _discard(path)
            return None

    def put_pack(self, cells: list[tuple[str, str]], runs: pa.Table, attempts: pa.Table) -> None:
        """Keep ``cells`` ((cell id, key), sorted by id; ``runs`` in that order, each row as its
        entry holds it: ``suite_id`` the run that computed it, ``cached`` empty) as one pack."""
        group = group_key(cells)
        header = {"group": group, "format": FORMAT, "cells": [list(cell) for cell in cells]}
        _write_whole(self._pack_path(group), header, runs, attempts)


PACKS = "packs"
"""The cache folder's subfolder of packs (entries are under two-character folders)."""
MAX_PACK_BYTES = 1024 * 1024 * 1024


@dataclass
class Pack:
    """One pack's cells: ``keys`` (cell id -> key) and the tables, rows as their entries hold them."""

    keys: dict[str, str]
    runs: pa.Table
    attempts: pa.Table

    def hits(self) -> dict[str, Hit]:
        """Each cell's row and attempts as :meth:`CellCache.get` would return them."""
        attempts: dict[str, list[dict[str, Any]]] = {}
        for row in self.attempts.to_pylist():
            attempts.setdefault(row["cell_id"], []).append(row)
        return {row["cell_id"]: Hit(row, attempts.get(row["cell_id"], []), row["suite_id"])
                for row in self.runs.to_pylist()}  # fmt: skip


def _replaced(table: pa.Table, name: str, values: Any) -> pa.Table:
    """``table`` with column ``name`` holding ``values`` (its field kept)."""
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), values)


def group_key(cells: list[tuple[str, str]]) -> str:
    """A pack's name: the digest of its cells' (cell id, key) pairs, sorted by cell id."""
    return hashlib.sha256(json.dumps(sorted(cells)).encode()).hexdigest()


def _arrow_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _write_whole(final: Path, header: dict[str, Any], runs: pa.Table, attempts: pa.Table) -> None:
    """An entry or a pack folder written whole under a temporary name, then renamed into place;
    one already there (a concurrent writer got there first) is kept."""
    if final.is_dir():
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        entry = dict(header)
        for name, table in (("runs", runs), ("attempts", attempts)):
            data = _arrow_bytes(table)
            (staging / f"{name}.arrow").write_bytes(data)
            entry[f"{name}_sha256"] = hashlib.sha256(data).hexdigest()
        entry["written_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        (staging / ENTRY_FILE).write_text(json.dumps(entry), encoding="utf-8")
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _discard(path: Path) -> None:
    """A damaged entry or pack out of the way: renamed aside first, so a reader never sees half
    of it, then removed (a concurrent run may have done either already)."""
    aside = path.with_name(f".{path.name}.damaged-{os.getpid()}")
    try:
        os.rename(path, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


VERIFIED = ("outcome", "model_calls", "exception_type", "exception_message", "output_retries", "transport_retries",
            "input_tokens_billed", "output_tokens_billed", "input_tokens_reported", "output_tokens_reported",
            "returned_valid", "returned_correct", "tool_calls", "tool_errors", "note")  # fmt: skip
"""What ``--verify-cache`` compares between a cached row and the same cell run again."""


class RunCache:
    """One run's use of the cache: which plans it serves, which it runs, what it stores."""

    def __init__(self, store: CellCache, keys: Keys, adapters: dict[str, Adapter], suite_id: str) -> None:
        self.store, self.keys, self.adapters, self.suite_id = store, keys, adapters, suite_id
        self.key_of: dict[str, str] = {}
        self.verifying: dict[str, Hit] = {}
        self.disagreements: list[str] = []
        self.served_from: dict[str, int] = {}
        self.not_cacheable = 0
        self.stored = 0
        self.groups: dict[str, list[tuple[str, str]]] = {}
        """Each adapter's keyed cells, (cell id, key) sorted by id: a pack's contents."""
        self.packed: set[str] = set()
        """The adapters whose cells a pack served whole."""

    def split(self, plans: list[CellPlan], verify: int = 0) -> tuple[list[Hit], list[CellPlan]]:
        """The plans the cache answers (as rows for this run) and the ones to run; ``verify`` of
        the answered ones, drawn at random, are run again and compared (:meth:`store_record`).
        An adapter's cells come from its pack when there is one, else entry by entry."""
        import random

        keyed: list[tuple[CellPlan, str]] = []
        misses: list[CellPlan] = []
        for plan in plans:
            key = self.keys.of(self.adapters[plan.cell.key], plan)
            if key is None:
                self.not_cacheable += 1
                misses.append(plan)
                continue
            self.key_of[plan.cell_id] = key
            self.groups.setdefault(plan.cell.key, []).append((plan.cell_id, key))
            keyed.append((plan, key))
        packed = self._from_packs()
        hits: list[tuple[CellPlan, Hit]] = []
        for plan, key in keyed:
            hit = packed.get(plan.cell_id) or self.store.get(key, plan.cell_id)
            if hit is None:
                misses.append(plan)
            else:
                hits.append((plan, hit))
        for plan, hit in random.Random(self.suite_id).sample(hits, min(verify, len(hits))):
            self.verifying[plan.cell_id] = hit
            misses.append(plan)
        served = [self._as_ours(hit) for plan, hit in hits if plan.cell_id not in self.verifying]
        return served, misses

    def _from_packs(self) -> dict[str, Hit]:
        found: dict[str, Hit] = {}
        for name, cells in self.groups.items():
            cells.sort()
            pack = self.store.pack(group_key(cells))
            if pack is not None:
                found.update(pack.hits())
                self.packed.add(name)
        return found

    def group_keys(self) -> dict[str, str]:
        """Each adapter's pack name (what a memo of this plan holds)."""
        return {name: group_key(cells) for name, cells in self.groups.items()}

    def store_packs(self, runs: pa.Table, attempts: pa.Table) -> None:
        """Keep each adapter's cells as one pack, from the finished run's tables (``runs``,
        ``attempts``): every one of its cells served or stored, none drawn to verify."""
        origin = pc.coalesce(runs.column("cached"), runs.column("suite_id"))
        runs = _replaced(_replaced(runs, "suite_id", origin), "cached", pa.nulls(runs.num_rows, pa.string()))
        for name, cells in self.groups.items():
            if name in self.packed or any(cell_id in self.verifying for cell_id, _ in cells):
                continue
            ids = pa.array([cell_id for cell_id, _ in cells], pa.string())
            rows = runs.filter(pc.is_in(runs.column("cell_id"), value_set=ids)).sort_by("cell_id")
            if rows.num_rows != len(cells):
                continue
            tried = attempts.filter(pc.is_in(attempts.column("cell_id"), value_set=ids))
            where = pc.index_in(tried.column("cell_id"), value_set=rows.column("cell_id"))
            tried = _replaced(tried, "suite_id", pc.take(rows.column("suite_id"), where))
            self.store.put_pack(cells, rows.cast(columns.RUNS), tried.cast(columns.ATTEMPTS))

    def _as_ours(self, hit: Hit) -> Hit:
        """A cached cell as a row of this run, ``cached`` naming the run it came from."""
        self.served_from[hit.suite_id] = self.served_from.get(hit.suite_id, 0) + 1
        run = hit.run | {"suite_id": self.suite_id, "cached": hit.suite_id}
        return Hit(run, [a | {"suite_id": self.suite_id} for a in hit.attempts], hit.suite_id)

    def store_record(self, run: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
        """Keep a cell just run (and, when it was drawn for ``--verify-cache``, compare it)."""
        key = self.key_of.get(run["cell_id"])
        if key is None or run.get("cached"):  # not cacheable, or served from the cache itself
            return
        cached = self.verifying.get(run["cell_id"])
        if cached is not None:
            differ = [name for name in VERIFIED if cached.run.get(name) != run.get(name)]
            if differ:
                was = ", ".join(f"{n} {cached.run.get(n)!r} -> {run.get(n)!r}" for n in differ[:3])
                self.disagreements.append(f"{run['sdk']} {run['mode']} {run['variant']} {run['protocol']} "
                                          f"{run['scenario']} (cell {run['cell_id']}): {was}")  # fmt: skip
            return
        self.store.put(key, run | {"cached": None}, attempts, self.suite_id)
        self.stored += 1

    def summary(self) -> dict[str, Any]:
        """The manifest's ``cell_cache``: where, how many cells came from which run, and the rest."""
        return {
            "folder": str(self.store.folder),
            "served": sum(self.served_from.values()),
            "served_from": dict(self.served_from),
            "stored": self.stored,
            "not_cacheable": self.not_cacheable,
            "verified": len(self.verifying),
            "disagreements": list(self.disagreements),
        }


def from_cache(
    request: SuiteRequest, adapters: dict[str, Adapter], plans: list[CellPlan], suite_id: str,
    warn: Callable[[str], None], store: CellCache | None = None,
) -> tuple[RunCache | None, list[Hit], list[CellPlan]]:  # fmt: skip
    """``bench run``'s cache for this run (None: ``request.cell_cache`` is None), the cells it
    answers, and the ones to run; ``--cache-only`` refused here, before any cell runs. ``store``:
    the folder's :class:`CellCache` when the run already opened it (the packs it found damaged
    are said once)."""
    if request.cell_cache is None:
        return None, [], plans
    keys = run_keys(adapters, request.options)
    cache = RunCache(store or CellCache(request.cell_cache.folder, warn), keys, adapters, suite_id)
    served, misses = cache.split(plans, request.cell_cache.verify)
    if request.cell_cache.only and misses:
        first = misses[0]
        raise SuiteError(
            f"--cache-only: {len(misses)} of {len(plans)} cells are not in the cell cache "
            f"{request.cell_cache.folder} (first: {first.cell.sdk} {first.cell.mode} {first.scenario.name})"
        )
    return cache, served, misses
