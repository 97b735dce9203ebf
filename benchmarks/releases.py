"""Release environments and workers: the figures in the README (figures, not pass marks).

- environment build, cold (a fresh cache directory; uv's own download cache as it is) and
  warm (the cached environment found again);
- worker start: spawn to ready (the SDK imported) in a release environment;
- per-cell overhead of the worker path against in-process: the same cells (pydantic-ai and
  openai-agents, chat, default variant, scenario `valid`) run in-process and through a worker
  running the harness's own interpreter, alternately; medians of the cell latency;
- with --four-releases: the default matrix for four releases of pydantic-ai and openai-agents
  (wall time of `bench run --release ...`, one environment at a time).

  .venv/bin/python benchmarks/releases.py [--reps 30] [--four-releases] [--no-builds]

``--no-builds`` builds nothing (no index traffic): the worker start is then measured in the
harness's own interpreter. A tiny run (the benchmark test's): ``--no-builds --reps 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from bench.provider import LocalProvider
from bench.releases.envs import Environment, EnvironmentStore
from bench.releases.pool import Worker, WorkerCommand, WorkerPool
from bench.releases.prepare import package_of
from bench.run.plan import Filters, expand
from bench.run.runner import Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.sdk import clients, registry

FOUR = {
    "pydantic-ai": ["1.0.18", "1.50.0", "2.0.0", "pinned"],
    "openai-agents": ["0.2.11", "0.6.9", "0.14.8", "pinned"],
}


def build_times(sdk: str, release: str) -> tuple[float, float]:
    adapter = registry.load(sdk)
    with tempfile.TemporaryDirectory() as cache:
        store = EnvironmentStore(Path(cache))
        started = time.perf_counter()
        store.build(package_of(adapter), release)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        store.build(package_of(adapter), release)
        return cold, time.perf_counter() - started


def own_environment(sdk: str) -> Environment:
    """The harness's own interpreter as a release environment: the pinned SDK, nothing built."""
    adapter = registry.load(sdk)
    return Environment(sdk, version(adapter.distribution), adapter.distribution, Path(sys.prefix))


def worker_start(sdk: str, release: str | None, reps: int) -> float:
    """Median spawn-to-ready of a worker in the release's environment (None: the harness's own)."""
    adapter = registry.load(sdk)
    env = own_environment(sdk) if release is None else EnvironmentStore().build(package_of(adapter), release)
    command = WorkerCommand(env.python, registry.adapter_target(sdk))

    async def once() -> float:
        started = time.perf_counter()
        worker = await Worker.start(command, None)
        elapsed = time.perf_counter() - started
        worker.kill()
        await worker.process.wait()
        return elapsed

    return statistics.median(asyncio.run(once()) for _ in range(reps))


def overhead(reps: int) -> dict[str, tuple[float, float]]:
    """Median cell latency (ms) in-process and through a worker, per SDK."""
    return {sdk: _latencies(sdk, reps) for sdk in ("pydantic-ai", "openai-agents")}


def _latencies(sdk: str, reps: int) -> tuple[float, float]:
    """The SDK's chat/default cells on `valid`, alternately in-process and through a worker on
    the harness's own interpreter (so only the path differs), HTTP clients shared as in a run."""
    scenarios = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    filters = Filters(protocols=frozenset({"openai-chat"}), variants=frozenset({"default"}))
    adapter, env = registry.load(sdk), own_environment(sdk)
    local = expand([adapter], scenarios, filters)
    remote = expand([adapter], scenarios, filters, environment=env)
    pool = WorkerPool(WorkerCommand(env.python, registry.adapter_target(sdk)), 1)
    times: dict[str, list[float]] = {"in-process": [], "worker": []}

    async def run(provider: LocalProvider) -> None:
        runner = Runner({sdk: adapter}, RunOptions(concurrency=1), "bench", {env.name: pool})
        async with pool.lease():
            pass  # the worker starts before the timing
        async with clients.sharing():
            for _ in range(reps):
                for label, plans in (("in-process", local), ("worker", remote)):
                    for plan in plans:
                        record = await runner.run_cell(plan, provider)
                        times[label].append(record.run["latency_ms"])
        await pool.close()

    with LocalProvider() as provider:
        asyncio.run(run(provider))
    return statistics.median(times["in-process"]), statistics.median(times["worker"])


def four_releases(out: Path) -> float:
    releases = [f"{sdk}@pinned" if r == "pinned" else f"{sdk}=={r}" for sdk, versions in FOUR.items() for r in versions]
    for spec in releases:  # built first, so the timing is the run's
        subprocess.run([sys.executable, "-m", "bench.cli", "releases", "build", spec], check=True, capture_output=True)
    args = [a for spec in releases for a in ("--release", spec)]
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench.cli", "run", *args, "--out", str(out)], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--four-releases", action="store_true")
    parser.add_argument("--builds", action=argparse.BooleanOptionalAction, default=True,
                        help="build the release environments (needs the package index)")  # fmt: skip
    args = parser.parse_args()
    if args.four_releases and not args.builds:
        raise SystemExit("--four-releases builds environments: it cannot go with --no-builds")
    starts = min(5, args.reps)
    for sdk, release in (("pydantic-ai", "1.0.18"), ("openai-agents", "0.2.11")):
        if not args.builds:
            print(f"worker start {sdk} (own interpreter): {worker_start(sdk, None, starts):.2f} s (median of {starts})")
            continue
        cold, warm = build_times(sdk, release)
        print(f"build {sdk}=={release}: cold {cold:.1f} s, warm {warm * 1000:.0f} ms")
        print(f"worker start {sdk}=={release}: {worker_start(sdk, release, starts):.2f} s (median of {starts})")
    for sdk, (local, worker) in overhead(args.reps).items():
        print(f"cell latency {sdk} (valid, chat, default): in-process {local:.1f} ms, worker {worker:.1f} ms")
    if args.four_releases:
        with tempfile.TemporaryDirectory() as out:
            print(f"four releases x 2 SDKs, default matrix: {four_releases(Path(out)):.0f} s")


if __name__ == "__main__":
    main()
