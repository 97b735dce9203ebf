"""Whole matrix: wall time of the default matrix / (sum of its cells' bare floors / cores).

1. Bare floors: every supported cell of the default matrix (or of one ``--shard``), one rep,
   sequentially, in this process: the adapter's SDK call against a fresh provider run with the
   cell's own scenario script and seed, raced only against the call cap and the time limit
   (without them a runaway cell would never end). No classification, no rows, no parquet.
   Each adapter is warmed up first (imports, CLI caches), as a matrix run is after its first cell.
2. Matrix runs: the same plan through ``bench.run.suite.run_suite`` in a child process (fresh
   interpreter, as ``bench run``), once per ``--setting``: ``G`` sets RunOptions.concurrency,
   ``pK/...`` splits the plan into K shard processes run side by side,
   ``G:sdk=N,sdk=N`` also overrides adapters' ``max_concurrency``. ``default`` = the code's
   defaults. Wall = the whole child (interpreter start and imports included).

    .venv/bin/python benchmarks/matrix.py [--shard 1/4] [--setting default --setting 6:claude-agent-sdk=3]
        [--sdk NAME ...]

``--sdk`` limits the plan to the SDKs named; a tiny run (the benchmark test's):
``--shard 1/200 --sdk pydantic-ai``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.core.vocabulary import ModeSupport
from bench.provider import LocalProvider
from bench.run.plan import CellPlan, parse_shard
from bench.run.runner import Runner, RunOptions
from bench.run.suite import SuiteRequest, plan_suite
from bench.sdk.adapter import Adapter


def request(
    shard: str | None, sdks: tuple[str, ...], concurrency: int | None = None, results: Path = Path("results")
) -> SuiteRequest:
    options = RunOptions() if concurrency is None else RunOptions(concurrency=concurrency)
    return SuiteRequest(sdks=sdks, shard=parse_shard(shard) if shard else None, options=options, results_root=results)


async def bare(adapter: Adapter, plan: CellPlan, provider: LocalProvider) -> float:
    """The SDK call alone against the cell's scripted run; stopped at the cap or time limit."""
    task = adapter.task_for(plan.scenario).with_tool(plan.scenario.tool)  # as the runner binds it
    script = plan.scenario.build_script(plan.unit_seed)
    run = provider.open_run(task, script, call_cap=RunOptions().call_cap)
    started = time.perf_counter()
    call = asyncio.ensure_future(adapter.run_cell(plan.cell, task, run.endpoint))
    cap = run.cap_reached()
    done, _ = await asyncio.wait({call, cap}, timeout=adapter.time_limit_s, return_when=asyncio.FIRST_COMPLETED)
    cap.cancel()
    if call not in done:
        call.cancel()
        await asyncio.wait({call}, timeout=5)
    elapsed = time.perf_counter() - started
    run.close()
    if call.done() and not call.cancelled():
        call.exception()  # retrieved: an SDK exception is its behaviour, not ours
    return elapsed


async def floors(adapters: dict[str, Adapter], plans: list[CellPlan]) -> dict[str, list[float]]:
    by_sdk: dict[str, list[float]] = defaultdict(list)
    with LocalProvider(record_bodies=False) as provider:
        for name, adapter in adapters.items():
            first = next((p for p in plans if p.cell.sdk == name), None)
            if first is not None:
                await bare(adapter, first, provider)  # warm-up, not counted
        for plan in plans:
            by_sdk[plan.cell.sdk].append(await bare(adapters[plan.cell.sdk], plan, provider))
    return by_sdk


def child_run(shard: str | None, sdks: tuple[str, ...], setting: str, out: Path) -> None:
    """In a fresh interpreter: apply the setting, run the plan, print run_suite's own wall."""
    from bench.run.suite import run_suite
    from bench.sdk import registry

    concurrency, _, overrides = setting.partition(":")
    for item in filter(None, overrides.split(",")):
        name, _, value = item.partition("=")
        type(registry.load(name)).max_concurrency = int(value)
    started = time.perf_counter()
    run_suite(request(shard, sdks, None if concurrency == "default" else int(concurrency), out))
    print(json.dumps({"run_suite_s": time.perf_counter() - started}))


def matrix_wall(shard: str | None, sdks: tuple[str, ...], setting: str) -> tuple[float, float]:
    """``pK/<setting>`` runs the plan as K shard processes side by side (``bench run --shard
    i/K`` each, as a CI job matrix or two terminals would), and the wall is the slowest one."""
    procs, _, rest = setting.partition("/") if setting.startswith("p") else ("p1", "", setting)
    k = int(procs[1:])
    if k > 1 and shard:
        raise SystemExit("pK/ settings take the whole matrix, not --shard")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        children = []
        for i in range(1, k + 1):
            part = f"{i}/{k}" if k > 1 else shard
            args = [sys.executable, __file__, "--child-run", rest, "--out", f"{tmp}/{i}"]
            args += [a for sdk in sdks for a in ("--sdk", sdk)]
            children.append(
                subprocess.Popen(args + (["--shard", part] if part else []), stdout=subprocess.PIPE, text=True)
            )
        outputs = [c.communicate()[0] for c in children]
        if any(c.returncode for c in children):
            raise SystemExit(f"setting {setting}: a matrix run exited {[c.returncode for c in children]}")
        inner = max(json.loads(out.strip().splitlines()[-1])["run_suite_s"] for out in outputs)
        wall = time.perf_counter() - started
    return wall, inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard", help="I/N: a stable slice of the default matrix")
    parser.add_argument("--setting", action="append", help="concurrency setting; repeatable")
    parser.add_argument("--skip-floors", type=float, help="use this sum of floors (s) instead of measuring")
    parser.add_argument("--sdk", action="append", default=[], help="only these SDKs; repeatable")
    parser.add_argument("--child-run", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_run:
        child_run(args.shard, tuple(args.sdk), args.child_run, args.out)
        return
    adapters, plans = plan_suite(request(args.shard, tuple(args.sdk)), warn=lambda message: None)
    runner = Runner(adapters, RunOptions(), "floors")  # only for its tool_gap: the cells the runner would run
    supported = [p for p in plans if p.cell.mode_support is not ModeSupport.UNSUPPORTED and runner.tool_gap(p) is None]
    cores = os.cpu_count() or 1
    print(f"{len(plans)} rows, {len(supported)} cells run, {cores} cores, shard {args.shard or 'all'}")
    if not supported:
        raise SystemExit("the plan has no cell to run: nothing to measure")
    if args.skip_floors:
        total = args.skip_floors
    else:
        by_sdk = asyncio.run(floors(adapters, supported))
        total = sum(sum(v) for v in by_sdk.values())
        for sdk, values in sorted(by_sdk.items()):
            print(
                f"  floor {sdk:<18} {len(values):>5} cells  sum {sum(values):7.1f} s  "
                f"mean {sum(values) / len(values) * 1000:7.1f} ms"
            )
    print(f"sum of bare floors {total:.1f} s; / {cores} cores = {total / cores:.1f} s")
    print(f"{'setting':<40} {'wall s':>8} {'run_suite s':>11} {'ratio':>6}")
    for setting in args.setting or ["default"]:
        wall, inner = matrix_wall(args.shard, tuple(args.sdk), setting)
        print(f"{setting:<40} {wall:>8.1f} {inner:>11.1f} {wall / (total / cores):>6.2f}", flush=True)


if __name__ == "__main__":
    main()
