"""Runs as things a user manages: ``bench runs`` lists them, ``bench run --dry-run`` estimates a
plan's time from them.

A run is a folder under the results root with a ``manifest.json``; ``latest`` (a file naming
the newest run) marks that run, and ``baseline`` is listed like the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.vocabulary import Outcome
from bench.results.labels import adapter_names
from bench.results.store import MANIFEST_FILE, ResultsError, latest_run, read_manifest, read_table


@dataclass(frozen=True)
class RunSummary:
    """One line of ``bench runs``."""

    id: str
    path: Path
    started_at: str | None
    status: str
    sdks: dict[str, str | None]
    cells: int
    planned: int | None
    outcomes: dict[str, int] = field(default_factory=dict)
    latest: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "path": str(self.path)}


def run_directories(results_root: Path) -> list[Path]:
    """Every run folder under ``results_root`` (not an older version's ``latest`` link)."""
    if not results_root.is_dir():
        return []
    return sorted(p for p in results_root.iterdir() if not p.is_symlink() and (p / MANIFEST_FILE).is_file())


def summarise(directory: Path, latest: Path | None = None) -> RunSummary:
    """A run's line; a run that cannot be read is listed with its error as its status."""
    try:
        manifest = read_manifest(directory)
        outcomes = Counter(read_table(directory, "runs").column("outcome").to_pylist())
    except ResultsError as error:
        return RunSummary(directory.name, directory, None, f"unreadable: {error}", {}, 0, None)
    versions = manifest.get("sdk_versions")
    return RunSummary(
        id=directory.name,
        path=directory.resolve(),
        started_at=str(manifest.get("started_at")) if manifest.get("started_at") else None,
        status=str(manifest.get("status") or "unknown"),
        sdks=dict(versions) if isinstance(versions, dict) else {},
        cells=sum(outcomes.values()),
        planned=manifest.get("cells_planned") if isinstance(manifest.get("cells_planned"), int) else None,
        outcomes=dict(outcomes.most_common()),
        latest=latest is not None and directory.resolve() == latest,
    )


def list_runs(results_root: Path) -> list[RunSummary]:
    """Every run under ``results_root``, oldest first."""
    latest = latest_run(results_root)
    runs = [summarise(directory, latest) for directory in run_directories(results_root)]
    return sorted(runs, key=lambda run: (run.started_at or "", run.id))


def cell_seconds(results_root: Path, recent: int = 10) -> tuple[dict[str, float], int]:
    """Mean seconds per run cell (not ``unsupported``), per adapter name (an own agent's, else the
    SDK's), over the ``recent`` newest runs; and how many runs that is."""
    import pandas as pd

    frames = []
    for run in list_runs(results_root)[-recent:]:
        if run.status.startswith("unreadable"):
            continue
        table = read_table(run.path, "runs").select(["sdk", "agent", "outcome", "latency_ms"]).to_pandas()
        frames.append(table[table.outcome != Outcome.UNSUPPORTED])
    if not frames:
        return {}, 0
    rows = pd.concat(frames).dropna(subset=["latency_ms"])
    return (rows.groupby(adapter_names(rows))["latency_ms"].mean() / 1000).to_dict(), len(frames)


@dataclass(frozen=True)
class PlanLine:
    """One adapter's share of a plan: its cells, how many run, and their time from past runs."""

    name: str
    cells: int
    runnable: int
    seconds: float | None
    """Wall time of this adapter's cells at its concurrency; None without history."""


@dataclass(frozen=True)
class PlanEstimate:
    lines: list[PlanLine]
    seconds: float | None
    """The whole plan's wall time: the slowest adapter, or all cells over the global concurrency."""
    history_runs: int

    @property
    def runnable(self) -> int:
        return sum(line.runnable for line in self.lines)


PLAN_COLUMNS = (
    "cell_id",
    "sdk",
    "agent",
    "mode",
    "protocol",
    "variant",
    "stream",
    "scenario",
    "rep",
    "environment",
    "answers",
    "runs",
)
"""What ``bench run --dry-run --list`` prints of each cell plan, in this order."""


def plan_rows(adapters: dict[str, Any], plans: Sequence[Any], options: Any) -> list[tuple[str, ...]]:
    """Every cell plan the run would take, as ``PLAN_COLUMNS``: ``runs`` is ``yes``, or
    ``unsupported`` (recorded without running); ``environment`` is which install of the SDK runs
    it (``pinned``: this process's; else the release or own environment a worker runs);
    ``answers`` is where the provider's answers come from (:attr:`CellPlan.answers`)."""
    from bench.run.runner import Runner

    runner = Runner(adapters, options, "dry-run")
    return [
        (
            plan.cell_id,
            plan.cell.sdk,
            plan.cell.agent or "-",
            str(plan.cell.mode),
            str(plan.cell.protocol),
            str(plan.cell.variant),
            "stream" if plan.cell.stream else "-",
            plan.scenario.name,
            str(plan.rep),
            plan.environment_name,
            plan.answers,
            "yes" if runner.runs(plan) else "unsupported",
        )
        for plan in plans
    ]


def estimate(adapters: dict[str, Any], plans: Sequence[Any], options: Any, results_root: Path) -> PlanEstimate:
    """What ``bench run --dry-run`` prints: per adapter the cells planned and run (the others are
    recorded ``unsupported`` in no time), and a wall-time estimate from the mean cell time of past
    runs under ``results_root`` (a rough guide: cells of one adapter vary by scenario)."""
    from bench.run.runner import Runner

    runner = Runner(adapters, options, "dry-run")
    means, history = cell_seconds(results_root)
    planned: Counter[str] = Counter()
    runnable: Counter[str] = Counter()
    for plan in plans:
        planned[plan.cell.key] += 1
        runnable[plan.cell.key] += runner.runs(plan)
    lines, total_work = [], 0.0
    for name in planned:
        slots = max(1, min(adapters[name].max_concurrency, options.concurrency))
        work = runnable[name] * means[name] if name in means else None
        lines.append(PlanLine(name, planned[name], runnable[name], None if work is None else work / slots))
        total_work += work or 0.0
    known = [line.seconds for line in lines if line.seconds is not None]
    seconds = max([*known, total_work / max(1, options.concurrency)]) if known else None
    return PlanEstimate(lines, seconds, history)
