"""Per-cell harness overhead and whole-matrix wall time (figures, not pass marks).

For each installed adapter, the same cell (its first supported default cell on the `valid`
scenario) is run alternately
  - bare: the adapter's SDK call against a fresh provider run, nothing else;
  - through the runner: open the run, drive it under cap and time limit, read the ledger,
    classify, build the rows and hand them to the parquet writer;
and the medians are printed with their ratio. Then the full default matrix is timed through
`bench run` (subprocess), next to the sum of its cells' bare floors divided by the cores.

    .venv/bin/python benchmarks/overhead.py [--reps 15] [--skip-matrix]
    .venv/bin/python benchmarks/overhead.py --claude-startup [--reps 10]

``--claude-startup`` times the Claude adapter's default cell on `valid` with and without the
start-up switches (``LEAN_START_ARGS`` / ``LEAN_START_ENV``), interleaved, and checks that the
recorded request bodies are the same apart from per-cell ids (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import registry
from bench.adapter import Adapter, Cell
from bench.provider import LocalProvider
from bench.results import ResultsWriter, read_table
from bench.runner import CellPlan, Runner, RunOptions
from bench.scenario import default_scenarios
from bench.tasks import get_task
from bench.vocabulary import ModeSupport


def first_cell(adapter: Adapter) -> Cell:
    supported = [c for c in adapter.cells() if c.mode_support is not ModeSupport.UNSUPPORTED]
    defaults = [c for c in supported if c.variant == "default" and not c.stream]
    return (defaults or supported)[0]


async def bare_call(adapter: Adapter, cell: Cell, provider: LocalProvider) -> float:
    with provider.open_run("person", ["valid"]) as run:
        started = time.perf_counter()
        await adapter.run_cell(cell, get_task("person"), run.endpoint)
        return time.perf_counter() - started


async def runner_call(runner: Runner, plan: CellPlan, provider: LocalProvider, writer: ResultsWriter) -> float:
    started = time.perf_counter()
    record = await runner.run_cell(plan, provider)
    writer.add(record.run, record.attempts)
    return time.perf_counter() - started


async def measure(name: str, reps: int, provider: LocalProvider, out: Path) -> tuple[float, float]:
    adapter = registry.load(name)
    cell = first_cell(adapter)
    valid = next(s for s in default_scenarios() if s.name == "valid")
    runner = Runner({name: adapter}, RunOptions(), suite_id="bench")
    writer = ResultsWriter(out / name)
    plan = CellPlan(cell, valid, rep=0, seed=0)
    await bare_call(adapter, cell, provider)  # warm-up: imports, clients, CLI caches
    bare, through = [], []
    for _ in range(reps):
        bare.append(await bare_call(adapter, cell, provider))
        through.append(await runner_call(runner, plan, provider, writer))
    writer.finalize()
    return statistics.median(bare), statistics.median(through)


def matrix_wall_time(out: Path) -> tuple[float, Path]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench.cli", "run", "--out", str(out), "--no-progress"],
                   check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started, out / "latest"


def _masked(body: object) -> str:
    """A request body without what differs between any two cells: temp dirs, session and device ids."""
    text = json.dumps(body, sort_keys=True)
    text = re.sub(r"misfit-claude-[a-z0-9_]+", "<tmp>", text)
    return re.sub(r'(session_id|device_id)\\\\?":\\\\?"[0-9a-f-]+', r"\1=<id>", text)


async def claude_startup(reps: int) -> None:
    import adapters.claude_agent_sdk as claude

    lean = {"after": (claude.LEAN_START_ARGS, claude.LEAN_START_ENV), "before": ({}, {})}
    adapter = registry.load("claude-agent-sdk")
    cell, task = first_cell(adapter), get_task("person")
    times: dict[str, list[float]] = {"before": [], "after": []}
    init: dict[str, list[float]] = {"before": [], "after": []}
    bodies: dict[str, list[str]] = {}
    with LocalProvider(record_bodies=True) as provider:
        for rep in range(reps + 1):  # rep 0 warms up and records the bodies
            for name, (args, env) in lean.items():
                claude.LEAN_START_ARGS, claude.LEAN_START_ENV = args, env
                with provider.open_run("person", ["valid"]) as run:
                    started = time.perf_counter()
                    result = await adapter.run_cell(cell, task, run.endpoint)
                    elapsed = time.perf_counter() - started
                    if rep == 0:
                        bodies[name] = [_masked(a.request_body) for a in run.attempts]
                        continue
                    times[name].append(elapsed)
                    init[name].append(float(result.details.get("cli_init_ms", "nan")))
    claude.LEAN_START_ARGS, claude.LEAN_START_ENV = lean["after"]
    print(f"{'claude start-up':<10} {'median cell ms':>15} {'median init ms':>15} {'min cell ms':>12}")
    for name in ("before", "after"):
        print(f"{name:<15} {statistics.median(times[name]) * 1000:>15.0f} {statistics.median(init[name]):>15.0f} "
              f"{min(times[name]) * 1000:>12.0f}")  # fmt: skip
    same = bodies["before"] == bodies["after"]
    print(f"request bodies identical apart from per-cell ids: {same} ({len(bodies['after'])} request(s))")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--skip-matrix", action="store_true")
    parser.add_argument("--claude-startup", action="store_true")
    args = parser.parse_args()
    if args.claude_startup:
        asyncio.run(claude_startup(args.reps))
        return
    names = [n for n in registry.registrations() if n != "openai-parse"]
    floors: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, LocalProvider() as provider:
        print(f"{'adapter':<18} {'cell':<44} {'bare ms':>9} {'runner ms':>10} {'ratio':>6}")
        for name in names:
            reps = max(3, args.reps // 3) if name == "claude-agent-sdk" else args.reps
            bare, through = asyncio.run(measure(name, reps, provider, Path(tmp)))
            floors[name] = bare
            cell = first_cell(registry.load(name))
            label = f"{cell.mode}/{cell.variant}/{cell.protocol}"
            print(f"{name:<18} {label:<44} {bare * 1000:>9.1f} {through * 1000:>10.1f} {through / bare:>6.2f}")
    if args.skip_matrix:
        return
    with tempfile.TemporaryDirectory() as tmp:
        wall, run_dir = matrix_wall_time(Path(tmp))
        runs = read_table(run_dir.resolve(), "runs").to_pandas()
        ran = runs[runs.outcome != "unsupported"]
        floor = sum(floors.get(sdk, 0.0) for sdk in ran.sdk) / (os.cpu_count() or 1)
        print(f"\nfull default matrix: {len(runs)} rows, {len(ran)} cells run, wall {wall:.1f} s")
        print(f"sum of bare valid-call floors / {os.cpu_count()} cores: {floor:.1f} s (ratio {wall / floor:.2f}); "
              "faulty cells make more model calls than the valid floor, so this ratio overstates overhead")  # fmt: skip


if __name__ == "__main__":
    main()
