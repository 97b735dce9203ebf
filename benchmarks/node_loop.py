"""Per-cell cost of a TypeScript SDK's cell against a user's own Node loop (issue 41's 1.3x).

The same call, the ai adapter's default cell (``generateObject`` with a zod schema over
@ai-sdk/openai chat, on `valid`):
  - user's loop: ``benchmarks/node_loop.mjs``, one Node process that builds the provider and model
    once and calls ``generateObject`` ``--calls`` times against one provider run;
  - through the runner: ``Runner.run_cell`` in one slot (open the run, drive it under cap and
    time limit, hand the cell to the slot's Node worker, read the ledger, classify, build the rows).
Both after warm-up calls (the worker's start is not a cell's cost: a slot starts it once per run).
Blocks of each alternate for ``--rounds`` rounds, so load drift falls on both. Printed per path:
median wall ms per call, and CPU ms per call (this process, where the provider serves both, plus
the Node process's). The ratio runner / user's loop is printed against the 1.3 target.

    .venv/bin/python benchmarks/node_loop.py [--calls 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

from adapters.ai.adapter import AiAdapter
from bench.core.vocabulary import Protocol, Variant
from bench.node import setup
from bench.node.pool import NodeWorkerPool
from bench.provider import LocalProvider
from bench.run.plan import CellPlan
from bench.run.runner import Runner, RunOptions, Slot
from bench.scenarios.files import default_scenarios
from bench.scenarios.tasks import get_task
from bench.sdk import clients

LOOP = Path(__file__).resolve().with_name("node_loop.mjs")
TARGET = 1.3
WARMUP = 3


def user_block(provider: LocalProvider, calls: int) -> tuple[list[float], float]:
    """(wall ms per call, CPU ms per call) of the user's own Node loop."""
    task = get_task("person")
    with provider.open_script("person", ["valid"], then="repeat", call_cap=calls + WARMUP + 1) as run:
        own = time.process_time()
        done = subprocess.run(
            ["node", str(LOOP), run.endpoint.openai_base_url, str(calls), str(WARMUP), json.dumps(task.schema),
             task.prompt],
            capture_output=True, text=True, check=True, cwd=setup.NODE_ROOT,
        )  # fmt: skip
        provider_cpu = time.process_time() - own  # the provider's thread, serving the loop
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    times = figures["times"]
    return times, (figures["cpu_us"] / 1000 + provider_cpu * 1000 * calls / (calls + WARMUP)) / calls


async def runner_block(provider: LocalProvider, calls: int) -> tuple[list[float], float]:
    """(wall ms per cell, CPU ms per cell) through the runner, one slot, its Node worker warm."""
    adapter = AiAdapter()
    cell = next(c for c in adapter.cells() if c.protocol is Protocol.CHAT and c.variant == Variant.DEFAULT)
    valid = next(s for s in default_scenarios() if s.name == "valid")
    plan = CellPlan(cell, valid, rep=0, seed=0)
    runner = Runner({adapter.name: adapter}, RunOptions(), suite_id="bench")
    slot = Slot()
    times: list[float] = []
    async with clients.sharing():
        for _ in range(WARMUP):
            await runner.run_cell(plan, provider, slot)
        pool = clients.shared(("node", adapter.driver), lambda: None)
        assert isinstance(pool, NodeWorkerPool)
        workers = [psutil.Process(pid) for pid in pool.worker_pids()]
        node_before = sum(sum(p.cpu_times()[:2]) for p in workers)
        own = time.process_time()
        for _ in range(calls):
            started = time.perf_counter()
            record = await runner.run_cell(plan, provider, slot)
            times.append((time.perf_counter() - started) * 1000)
            assert record.run["outcome"] == "ok", record.run
        cpu = time.process_time() - own + sum(sum(p.cpu_times()[:2]) for p in workers) - node_before
    return times, cpu * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="calls per block")
    parser.add_argument("--rounds", type=int, default=3, help="alternating blocks of each path")
    args = parser.parse_args()
    if (reason := setup.unavailable()) is not None:
        sys.exit(f"node_loop.py: {reason}")
    user_wall: list[float] = []
    user_cpu: list[float] = []
    runner_wall: list[float] = []
    runner_cpu: list[float] = []
    with LocalProvider() as provider:
        for _ in range(args.rounds):
            wall, cpu = user_block(provider, args.calls)
            user_wall += wall
            user_cpu.append(cpu)
            wall, cpu = asyncio.run(runner_block(provider, args.calls))
            runner_wall += wall
            runner_cpu.append(cpu)
    user = (statistics.median(user_wall), statistics.median(user_cpu))
    ran = (statistics.median(runner_wall), statistics.median(runner_cpu))
    print(f"ai generateObject native/default/openai-chat, valid; {args.rounds} rounds x {args.calls} calls")
    print(f"user's own Node loop (provider and model built once): {user[0]:.1f} ms wall, {user[1]:.1f} ms CPU per call")
    print(f"through the runner (the slot's Node worker):          {ran[0]:.1f} ms wall, {ran[1]:.1f} ms CPU per cell")
    wall_ratio, cpu_ratio = ran[0] / user[0], ran[1] / user[1]
    verdict = "met" if cpu_ratio <= TARGET else "NOT met"
    print(f"runner / user's loop: wall {wall_ratio:.2f}, CPU {cpu_ratio:.2f}: target {TARGET} on CPU {verdict}")


if __name__ == "__main__":
    main()
