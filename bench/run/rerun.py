"""``bench run --rerun RUN --outcome timeout,harness_error``: run chosen cells of a finished run
again, in place.

A timeout on a loaded CI machine, or a harness error fixed since, should not cost a whole run.
The chosen cells' rows (and their attempts) are taken out of the run's tables, and the cells run
again through the same path ``--resume`` uses, so the run ends as the table a fresh run would
have written for them (cell ids are stable). The run folder is locked for the whole rerun, and
its manifest says ``running`` before the first row is taken out. Both tables lose the chosen
cells in one step (:func:`bench.results.store.replace_tables`), so an interruption or a kill
leaves either the run as it was (every cell with its attempts) or the run without the chosen
cells, which ``--resume`` runs; never a cell whose row is there and whose attempts are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from bench.results.store import TABLES, RunLock, read_manifest, read_table, replace_tables, write_manifest
from bench.run.runner import CellRecord
from bench.run.suite import SuiteError, _execute, check_executor, plan_suite, recorded_request


def rerun_suite(
    reference: str | Path,
    outcomes: frozenset[str],
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
    procs: int | None = None,
    executor: str = "local",
) -> Path:
    """Run again the cells of a complete run whose outcome is one of ``outcomes``, in
    ``procs`` processes (None: as :func:`bench.run.procs.process_count` chooses), or on Ray
    (``executor``)."""
    directory = Path(reference)
    read_manifest(directory)  # not a run: say so first
    check_executor(executor)
    lock = RunLock(directory).acquire()
    try:
        meta = read_manifest(directory)
        request = replace(recorded_request(directory, meta, "rerun"), procs=procs, executor=executor)
        if meta.get("status") != "complete":
            raise SuiteError(
                f"{directory}: status is {meta.get('status')!r}; finish it first with: bench run --resume {directory}"
            )
        runs = read_table(directory, "runs")
        chosen = set(
            runs.filter(pc.is_in(runs.column("outcome"), pa.array(sorted(outcomes)))).column("cell_id").to_pylist()
        )
        adapters, plans = plan_suite(request, warn)
        plans = tuple(plan for plan in plans if plan.cell_id in chosen)
        # Not complete from here: an interruption while the tables are rewritten leaves a run
        # that says so, and that --resume finishes (it runs the cells the tables lack).
        meta["status"] = "running"
        write_manifest(directory, meta)
        try:
            _drop_cells(directory, chosen)
        except BaseException:
            write_manifest(directory, meta | {"status": "interrupted"})
            raise
        previous = meta.get("reruns")
        reruns = previous if isinstance(previous, list) else []
        meta["reruns"] = [
            *reruns,
            {"at": datetime.now(UTC).isoformat(), "outcomes": sorted(outcomes), "cells": len(plans)},
        ]
        return _execute(request, adapters, plans, directory, meta, on_record, on_plan, lock)
    except BaseException:
        lock.release()
        raise


def _drop_cells(directory: Path, cell_ids: set[str]) -> None:
    """The run's tables without ``cell_ids``, both rewritten in one step: written one after the
    other, a kill between them left rows whose attempts were gone, which ``--resume`` counts as
    done (issue 26)."""
    if not cell_ids:
        return
    ids = pa.array(sorted(cell_ids), pa.string())
    kept = {}
    for table in TABLES:
        rows = read_table(directory, table)
        kept[table] = rows.filter(pc.invert(pc.is_in(rows.column("cell_id"), ids)))
    replace_tables(directory, kept)
