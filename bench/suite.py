"""``bench run`` as a library function: load adapters and scenarios, expand the matrix, run it
against a fresh local provider, write results as cells finish."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench import columns, registry
from bench.adapter import Adapter
from bench.provider import LocalProvider
from bench.results import (
    ResultsWriter,
    command_line,
    harness_version,
    new_suite_id,
    point_latest,
    write_manifest,
)
from bench.runner import CellPlan, CellRecord, Filters, Runner, RunOptions, expand, in_shard
from bench.scenario import SCENARIO_DIR, Scenario, load_paths


class SuiteError(Exception):
    """Bad input to a run (unknown SDK, no cells left after filtering): exit code 2."""


@dataclass(frozen=True)
class SuiteRequest:
    sdks: tuple[str, ...] = ()
    """Empty: every registered adapter whose SDK is installed."""
    filters: Filters = field(default_factory=Filters)
    suite: str = "default"
    scenario_paths: tuple[Path, ...] = (SCENARIO_DIR,)
    reps: int = 1
    seed: int = 0
    options: RunOptions = field(default_factory=RunOptions)
    results_root: Path = Path("results")
    shard: tuple[int, int] | None = None
    """(I, N): run only the I-th of N stable slices of the matrix (for CI job matrices)."""


def load_adapters(names: tuple[str, ...], warn: Callable[[str], None]) -> dict[str, Adapter]:
    """Named adapters must load; with no names, uninstalled SDKs are skipped with a warning."""
    chosen = names or tuple(registry.registrations())
    adapters: dict[str, Adapter] = {}
    for name in chosen:
        try:
            adapters[name] = registry.load(name)
        except registry.UnknownAdapter as error:
            raise SuiteError(str(error)) from None
        except registry.AdapterUnavailable as error:
            if names:
                raise SuiteError(f"{name}: {error}") from None
            warn(f"skipping {name}: {error}")
    if not adapters:
        raise SuiteError("no adapter could be loaded; install one with: pip install -e '.[all]'")
    return adapters


def select_scenarios(request: SuiteRequest) -> list[Scenario]:
    scenarios = load_paths(list(request.scenario_paths))
    if request.suite == "default":
        scenarios = [s for s in scenarios if s.suite == "default"]
    known = {s.name for s in scenarios}
    unknown = sorted((request.filters.scenarios or frozenset()) - known)
    if unknown:
        raise SuiteError(f"unknown scenario(s) {', '.join(unknown)} in suite {request.suite!r}")
    return scenarios


def plan_suite(request: SuiteRequest, warn: Callable[[str], None]) -> tuple[dict[str, Adapter], list[CellPlan]]:
    adapters = load_adapters(request.sdks, warn)
    plans = expand(adapters.values(), select_scenarios(request), request.filters, request.reps, request.seed)
    plans = [plan for plan in plans if in_shard(plan, request.shard)]
    if not plans:
        raise SuiteError("the filters leave no cell to run; see 'bench list' and 'bench scenarios list'")
    return adapters, plans


def manifest(request: SuiteRequest, suite_id: str, adapters: dict[str, Adapter], plans: list[CellPlan]) -> dict[str, Any]:
    versions = {}
    for name, adapter in adapters.items():
        try:
            versions[name] = version(adapter.distribution)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "suite_id": suite_id,
        "schema_version": columns.SCHEMA_VERSION,
        "harness_version": harness_version(),
        "python": sys.version.split()[0],
        "sdk_versions": versions,
        "seed": request.seed,
        "reps": request.reps,
        "suite": request.suite,
        "scenarios": sorted({p.scenario.name for p in plans}),
        "filters": {k: sorted(v) if v else None for k, v in asdict(request.filters).items()},
        "options": asdict(request.options),
        "command_line": command_line(),
        "cells_planned": len(plans),
        "shard": list(request.shard) if request.shard else None,
        "started_at": datetime.now(UTC).isoformat(),
        "finished_at": None,
        "status": "running",
    }


def _capture_sdk_logs(directory: Path) -> logging.Handler:
    """SDKs log their own failures ("Error getting response") and warn; during a run those are
    data, not terminal noise: they go to ``sdk.log`` in the run folder, stderr stays for progress."""
    handler = logging.FileHandler(directory / "sdk.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.captureWarnings(True)
    return handler


def _release_sdk_logs(handler: logging.Handler) -> None:
    logging.captureWarnings(False)
    logging.getLogger().removeHandler(handler)
    handler.close()


def run_suite(
    request: SuiteRequest,
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
) -> Path:
    """Run the matrix; returns the results directory. Interrupted runs keep what finished."""
    adapters, plans = plan_suite(request, warn)
    on_plan(len(plans))
    suite_id = new_suite_id()
    directory = request.results_root / suite_id
    writer = ResultsWriter(directory)
    meta = manifest(request, suite_id, adapters, plans)
    write_manifest(directory, meta)

    def record(cell: CellRecord) -> None:
        writer.add(cell.run, cell.attempts)
        on_record(cell)

    runner = Runner(adapters, request.options, suite_id)
    log_handler = _capture_sdk_logs(directory)
    try:
        with warnings.catch_warnings(), LocalProvider(record_bodies=request.options.record_bodies) as provider:
            # An SDK's warnings are part of its behaviour, never exceptions: a caller's
            # "warnings are errors" filter (pytest's, say) must not change what is measured.
            warnings.simplefilter("default")
            asyncio.run(runner.run(plans, provider, record))
            gc.collect()  # clients the SDKs leaked report here, into sdk.log
        writer.finalize()
        meta["status"] = "complete"
    except BaseException:
        writer.flush()
        meta["status"] = "interrupted"
        raise
    finally:
        _release_sdk_logs(log_handler)
        meta["finished_at"] = datetime.now(UTC).isoformat()
        meta["cells_written"] = writer.cells_written
        write_manifest(directory, meta)
        point_latest(request.results_root, directory)
    return directory
