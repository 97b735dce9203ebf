"""``bench merge``: one run directory made from the shards of a run.

A CI job matrix splits a run with ``bench run --shard I/N``; ``bench merge`` puts the shards back
together as one run (with a manifest saying what it was made from), refusing what would not add up
to one run: different SDK versions, a scenario defined differently, different run settings, or the
same cell twice. The merged run is written whole beside ``--out`` and only then swapped in
(:func:`bench.results.store.replace_folder`): with ``--force`` onto an earlier merge, that merge
stays until the new one is complete, whatever interrupts it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench.results.manifest import type_mismatch
from bench.results.store import (
    ATTEMPTS_FILE,
    MANIFEST_FILE,
    RUNS_FILE,
    ResultsError,
    atomic_write_table,
    harness_version,
    new_suite_id,
    read_manifest,
    read_table,
    replace_folder,
    resolve_run,
    restore_folder,
    write_manifest,
)

SAME_SETTINGS = ("schema_version", "suite", "seed", "reps", "filters", "options")
"""Manifest fields every merged run must share: otherwise the union is not one run."""


class MergeError(Exception):
    """Runs that cannot be merged (or a target that would be overwritten): a usage error."""


def _runs_and_manifests(references: list[str], results_root: Path) -> list[tuple[Path, dict[str, Any], pa.Table]]:
    loaded = []
    for reference in references:
        try:
            directory = resolve_run(reference, results_root)
            loaded.append((directory, read_manifest(directory), read_table(directory, "runs")))
        except ResultsError as error:
            raise MergeError(str(error)) from None
    return loaded


def conflicts(loaded: list[tuple[Path, dict[str, Any], pa.Table]]) -> list[str]:
    """Every reason the runs are not shards of one run, one line each (empty: they are)."""
    problems = []
    first_dir, first, _ = loaded[0]
    versions: dict[str, tuple[str, Path]] = {}
    scenarios: dict[str, tuple[tuple[str, str], Path]] = {}
    for directory, manifest, runs in loaded:
        if (typed := type_mismatch(manifest, first)) is not None:
            problems.append(f"{directory} and {first_dir}: {typed}")
        for name in SAME_SETTINGS:
            if manifest.get(name) != first.get(name):
                problems.append(f"{directory}: {name} is {manifest.get(name)!r}, {first_dir} has {first.get(name)!r}")
        for sdk, version in (manifest.get("sdk_versions") or {}).items():
            seen = versions.setdefault(sdk, (version, directory))
            if seen[0] != version:
                problems.append(f"{directory}: {sdk} {version}, {seen[1]} has {sdk} {seen[0]}")
        # A scenario's task and fault label are in every row: the same name defined two ways
        # (an edited scenario file between jobs) shows up here.
        for name, task, fault in set(
            zip(*(runs.column(c).to_pylist() for c in ("scenario", "task", "fault")), strict=True)
        ):
            seen_scenario = scenarios.setdefault(name, ((task, fault), directory))
            if seen_scenario[0] != (task, fault):
                problems.append(
                    f"{directory}: scenario {name!r} is task {task}, fault {fault}; "
                    f"{seen_scenario[1]} has task {seen_scenario[0][0]}, fault {seen_scenario[0][1]}"
                )
    return problems


def _deduplicate(tables: list[pa.Table], force: bool) -> tuple[pa.Table, int]:
    """The union of the runs tables; a cell in two runs is refused, or with force kept once
    (from the first run given)."""
    seen: set[str] = set()
    kept, dropped, overlapping = [], 0, []
    for table in tables:
        ids = table.column("cell_id").to_pylist()
        mask = [cell not in seen for cell in ids]
        overlapping += [cell for cell, keep in zip(ids, mask, strict=True) if not keep]
        seen.update(ids)
        kept.append(table.filter(pa.array(mask, type=pa.bool_())))
        dropped += mask.count(False)
    if overlapping and not force:
        raise MergeError(
            f"{len(overlapping)} cell(s) are in more than one run (e.g. cell_id {overlapping[0]}): "
            "not disjoint shards; --force keeps the first run's copy"
        )
    return pa.concat_tables(kept), dropped


def merged_manifest(
    suite_id: str, loaded: list[tuple[Path, dict[str, Any], pa.Table]], rows: int, forced: list[str]
) -> dict[str, Any]:
    first = loaded[0][1]
    versions: dict[str, Any] = {}
    for _, manifest, _ in loaded:
        versions.update(manifest.get("sdk_versions") or {})
    shards = sorted(tuple(m["shard"]) for _, m, _ in loaded if m.get("shard"))
    totals = {n for _, n in shards}
    complete_set = len(totals) == 1 and [i for i, _ in shards] == list(range(1, next(iter(totals)) + 1))
    statuses = {m.get("status") for _, m, _ in loaded}
    return {
        **{name: first.get(name) for name in SAME_SETTINGS},
        "suite_id": suite_id,
        "harness_version": harness_version(),
        "python": first.get("python"),
        "sdk_versions": versions,
        "scenarios": sorted({s for _, m, _ in loaded for s in m.get("scenarios", [])}),
        "command_line": "bench merge " + " ".join(str(d) for d, _, _ in loaded),
        "cells_planned": sum(m.get("cells_planned") or 0 for _, m, _ in loaded),
        "cells_written": rows,
        "shard": None,
        "merged_from": [{"suite_id": m.get("suite_id"), "path": str(d), "shard": m.get("shard")} for d, m, _ in loaded],
        "shards_complete": complete_set if shards else None,
        "forced_despite": forced,
        "started_at": min(str(m.get("started_at")) for _, m, _ in loaded),
        "finished_at": datetime.now(UTC).isoformat(),
        "status": "complete" if statuses == {"complete"} else "incomplete",
    }


def _check_target(out: Path, force: bool) -> None:
    """Refuse to replace a folder that is not empty unless ``force`` says so, and never one that
    is not a run (a merge puts back an earlier merge of its own that a kill left aside first)."""
    restore_folder(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise MergeError(f"{out}: already exists and is not empty; remove it or pass --force")
        if not (out / MANIFEST_FILE).exists():
            raise MergeError(f"{out}: not empty and not a run; refusing to overwrite it even with --force")


def _with_suite_id(table: pa.Table, suite_id: str) -> pa.Table:
    index = table.schema.get_field_index("suite_id")
    return table.set_column(index, table.schema.field(index), pa.array([suite_id] * len(table), pa.string()))


def merge_runs(
    references: list[str], out: Path, force: bool = False, results_root: Path = Path("results")
) -> tuple[Path, list[str]]:
    """Union runs into ``out``; returns the directory and the conflicts overridden by force."""
    if not references:
        raise MergeError("give at least one run to merge")
    loaded = _runs_and_manifests(references, results_root)
    if len({d for d, _, _ in loaded}) != len(loaded):
        raise MergeError("the same run is given twice")
    problems = conflicts(loaded)
    if problems and not force:
        raise MergeError("runs do not belong together (--force merges anyway): " + "; ".join(problems[:5]))
    runs, dropped = _deduplicate([t for _, _, t in loaded], force)
    if dropped:
        problems.append(f"{dropped} duplicate cell(s) dropped")
    kept_ids = pa.array(runs.column("cell_id").to_pylist())
    attempts = pa.concat_tables([read_table(d, "attempts") for d, _, _ in loaded])
    # With --force a duplicate cell's attempts come from the run whose row was kept.
    attempts = attempts.filter(pc.is_in(attempts.column("cell_id"), kept_ids)) if dropped else attempts
    suite_id = new_suite_id()
    _check_target(out, force)

    def fill(staging: Path) -> None:
        atomic_write_table(_with_suite_id(runs, suite_id).sort_by([("cell_id", "ascending")]), staging / RUNS_FILE)
        atomic_write_table(
            _with_suite_id(attempts, suite_id).sort_by([("cell_id", "ascending"), ("started_at", "ascending")]),
            staging / ATTEMPTS_FILE,
        )
        write_manifest(staging, merged_manifest(suite_id, loaded, len(runs), problems if force else []))

    replace_folder(out, fill)
    return out.resolve(), problems if force else []
