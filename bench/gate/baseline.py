"""``bench baseline update``: replace, or merge into, the committed run ``bench gate`` compares with.

A baseline is what CI accepts, so replacing it must not happen by accident: a run that is
filtered, sharded, interrupted, or lacks SDKs or cells the baseline has is refused unless the
caller says how to take it (``merge``: replace only the cells the run has; ``force``: replace the
whole baseline anyway). Only the runs table and the manifest are written (the gate needs nothing
else, and the commit stays small).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.core.vocabulary import Outcome
from bench.gate.compare import KEY, adapter_name
from bench.results.manifest import type_mismatch
from bench.results.store import (
    RUNS_FILE,
    ResultsError,
    atomic_write_table,
    columns,
    read_manifest,
    read_table,
    replace_folder,
    resolve_run,
    restore_folder,
    write_manifest,
)
from bench.run.runplan import RunPlan, partial_reason

BASELINE_DIR = "baseline"
STAGING_DIR = ".baseline.tmp"
"""Where the new baseline is written before it is renamed into place, as ``STAGING_DIR/baseline``."""
OLD_DIR = ".baseline.old"
"""Where the previous baseline waits while the new one is renamed into place, as ``OLD_DIR/baseline``.

Both hold the baseline one level down: no folder directly under the results root has a manifest
but the runs (and ``baseline``) themselves, so ``bench runs`` and ``bench view``, which list every
folder there with a manifest, never list a staged or an old baseline as a run."""


class BaselineError(Exception):
    """A run that cannot become the baseline as asked: a usage error, with every reason."""


@dataclass(frozen=True)
class BaselineUpdate:
    """What an update wrote, for the one line that says so."""

    target: Path
    source: Path
    suite_id: str
    cells: int
    replaced: int
    """Cells of the previous baseline the run replaced (all of them without merge)."""
    kept: int
    """Cells of the previous baseline kept because the run does not have them (merge only)."""
    added: int
    """Cells the previous baseline did not have."""
    sdk_versions: dict[str, str | None]
    new_sdks: tuple[str, ...]
    """SDKs the run brought that the previous baseline had no cells of (a plugin installed only for
    tests would otherwise slip into a committed baseline unnoticed)."""


def _load(directory: Path) -> tuple[dict[str, Any], pa.Table]:
    return read_manifest(directory), read_table(directory, "runs")


def _adapters(table: pa.Table) -> set[str]:
    return {adapter_name(key) for key in _keys(table)}


def _keys(table: pa.Table) -> set[tuple[Any, ...]]:
    return set(zip(*(table.column(c).to_pylist() for c in KEY), strict=True)) if table.num_rows else set()


def refusals(manifest: dict[str, Any], runs: pa.Table, baseline: pa.Table | None) -> list[str]:
    """Every reason this run would not make a whole baseline in place of ``baseline``."""
    problems = []
    if reason := partial_reason(manifest, runs.num_rows):
        problems.append(reason)
    plan = RunPlan.from_manifest(manifest)
    if plan.filtered:
        problems.append(f"the run is filtered ({' '.join(plan.filtered)})")
    if plan.shard:
        problems.append(f"the run is shard {plan.shard[0]}/{plan.shard[1]}")
    if baseline is not None and baseline.num_rows:
        run_sdks = _adapters(runs)
        lacking_sdks = sorted(_adapters(baseline) - run_sdks)
        if lacking_sdks:
            problems.append(f"the run lacks SDK(s) the baseline has: {', '.join(lacking_sdks)}")
        lacking = [key for key in _keys(baseline) - _keys(runs) if adapter_name(key) in run_sdks]
        if lacking:
            problems.append(f"the run lacks {len(lacking)} cell(s) the baseline has")
    return problems


def _merged_table(baseline: pa.Table, runs: pa.Table) -> tuple[pa.Table, int]:
    """The baseline's rows for the cells the run does not have, then the run's rows (all reps);
    and how many baseline cells were kept."""
    covered = _keys(runs)
    rows = zip(*(baseline.column(c).to_pylist() for c in KEY), strict=True)
    kept = baseline.filter(pa.array([key not in covered for key in rows], pa.bool_()))
    return pa.concat_tables([kept.cast(columns.RUNS), runs.cast(columns.RUNS)]), len(_keys(kept))


def update_baseline(
    reference: str | None, results_root: Path = Path("results"), merge: bool = False, force: bool = False
) -> BaselineUpdate:
    """Write ``<results_root>/baseline`` from a run: replace it, or with ``merge`` replace only the
    cells the run has. Raises BaselineError with every reason when the run would not do."""
    try:
        source = resolve_run(reference, results_root)
        manifest, runs = _load(source)
    except ResultsError as error:
        raise BaselineError(str(error)) from None
    target = results_root / BASELINE_DIR
    restore_interrupted(results_root)
    if target.resolve() == source:
        raise BaselineError(f"{source} is already the baseline")
    if runs.num_rows == 0:
        raise BaselineError(f"{source}: has no cells; nothing to make a baseline of")
    if runs.column("outcome").to_pylist().count(Outcome.HARNESS_ERROR):
        raise BaselineError(f"{source}: has harness_error cells; fix the harness before making it the baseline")
    old_manifest, old = _load(target) if (target / "manifest.json").exists() else ({}, None)
    if merge and old is not None and (typed := type_mismatch(manifest, old_manifest)) is not None:
        raise BaselineError(f"{source} cannot be merged into {target}: {typed}")
    problems = refusals(manifest, runs, old)
    if problems and not (merge or force):
        raise BaselineError(
            f"{source} would not replace the whole baseline: {'; '.join(problems)}. "
            "--merge replaces only the cells this run has; --force replaces the baseline with it"
        )
    before = _keys(old) if old is not None else set()
    if merge and old is not None:
        table, kept = _merged_table(old, runs)
        meta = _merged_manifest(old_manifest, manifest, table, len(_keys(runs)))
    else:
        table, kept, meta = runs.cast(columns.RUNS), 0, manifest | {"baseline_of": manifest.get("suite_id")}
    meta["baseline_updated_at"] = datetime.now(UTC).isoformat()
    _write(results_root, table, meta)
    run_keys = _keys(runs)
    return BaselineUpdate(
        target=target.resolve(),
        source=source,
        suite_id=str(manifest.get("suite_id")),
        cells=len(_keys(table)),
        replaced=len(before & run_keys) if merge else len(before),
        kept=kept,
        added=len(run_keys - before),
        sdk_versions=dict(meta.get("sdk_versions") or {}),
        new_sdks=tuple(sorted(_adapters(runs) - _adapters(old))) if old is not None and old.num_rows else (),
    )


def _merged_manifest(old: dict[str, Any], new: dict[str, Any], table: pa.Table, cells: int) -> dict[str, Any]:
    """The previous baseline's manifest, with the run's SDK versions and scenarios, and the merge
    recorded (which run, how many cells, when)."""
    merged = {
        "suite_id": new.get("suite_id"),
        "cells": cells,
        "at": datetime.now(UTC).isoformat(),
    }
    return old | {
        "sdk_versions": (old.get("sdk_versions") or {}) | (new.get("sdk_versions") or {}),
        "scenarios": sorted(set(old.get("scenarios") or []) | set(new.get("scenarios") or [])),
        "cells_planned": table.num_rows,
        "cells_written": table.num_rows,
        "baseline_merged": [*(old.get("baseline_merged") or []), merged],
    }


def restore_interrupted(results_root: Path) -> bool:
    """Put the previous baseline back when an update was killed between moving it aside and
    renaming the new one into place (no ``baseline``, the old one in ``OLD_DIR``)."""
    return restore_folder(results_root / BASELINE_DIR)


def _write(results_root: Path, table: pa.Table, manifest: dict[str, Any]) -> None:
    """Staged next to the baseline and swapped into place (:func:`bench.results.store.replace_folder`,
    in ``STAGING_DIR`` and ``OLD_DIR``), so a reader never sees half of it and an interrupt at any
    point leaves either baseline whole."""

    def fill(staging: Path) -> None:
        atomic_write_table(table.sort_by([("cell_id", "ascending")]), staging / RUNS_FILE)
        write_manifest(staging, manifest)

    replace_folder(results_root / BASELINE_DIR, fill)
