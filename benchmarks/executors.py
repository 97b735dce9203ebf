"""Executors side by side: cells per second of one fixed plan, in-process ``--procs 1``, ``--procs 2``
and ``--executor ray`` (a local Ray started by the run, one CPU per task), on this machine.

Each setting is one ``bench run`` process, as a user runs it (interpreter start, imports, Ray's
start included), into a results folder of its own; the same plan every time (``--sdk`` and
``--shard``, one rep). Wall is the whole command. CPU is the sum over the command's process tree
(the run, its shard processes, Ray's raylet and workers), sampled every 0.2 s with psutil, so a
process that ends between two samples loses at most its last 0.2 s; the driver's share (the
command's own process, which writes every cell) is printed apart. The 1-minute load average is
printed before and after each setting: other jobs on the machine slow every figure.

    .venv/bin/python benchmarks/executors.py [--sdk pydantic-ai --sdk openai-agents ...] [--shard 1/4]
        [--setting procs-1 --setting procs-2 --setting ray] [--rounds 2]

A tiny run (the benchmark test's): ``--sdk pydantic-ai --shard 1/100``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

SETTINGS = {"procs-1": ["--procs", "1"], "procs-2": ["--procs", "2"], "ray": ["--executor", "ray"]}
DEFAULT_SDKS = ["pydantic-ai", "openai-agents", "agentmaker"]


def tree_cpu(root: psutil.Process, seen: dict[int, float]) -> None:
    """Record the CPU (user + system) of ``root`` and every process below it, by pid."""
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        seen[process.pid] = max(seen.get(process.pid, 0.0), times.user + times.system)


def measure(command: list[str], out: Path) -> tuple[float, float, float]:
    """Wall, CPU and the command's own process's CPU (the one writer: on Ray, the driver) in
    seconds, of one ``bench run``; it must exit 0."""
    started = time.perf_counter()
    child = subprocess.Popen([*command, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root, seen = psutil.Process(child.pid), dict[int, float]()
    while child.poll() is None:
        tree_cpu(root, seen)
        time.sleep(0.2)
    wall = time.perf_counter() - started
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {child.returncode}: {stderr[-2000:]}")
    return wall, sum(seen.values()), seen.get(child.pid, 0.0)


def cells(out: Path) -> tuple[int, int, dict[str, object] | None]:
    """Cells written and cells run (not ``unsupported``) by the run in ``out``, and its manifest's
    ``ray`` entry (tasks, worker processes) when it ran on Ray."""
    import pyarrow.compute as pc

    from bench.results.store import latest_run, read_manifest, read_table

    directory = latest_run(out)
    assert directory is not None
    outcome = read_table(directory, "runs").column("outcome")
    return (
        len(outcome),
        len(outcome) - pc.sum(pc.equal(outcome, "unsupported")).as_py(),
        read_manifest(directory).get("ray"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk", action="append", help=f"SDKs of the plan (default: {', '.join(DEFAULT_SDKS)})")
    parser.add_argument("--shard", default="1/4", help="The slice of their default matrix to run (I/N).")
    parser.add_argument("--setting", action="append", choices=sorted(SETTINGS), help="Default: all three.")
    parser.add_argument("--rounds", type=int, default=1, help="Rounds of every setting, interleaved.")
    args = parser.parse_args()
    sdks = args.sdk or DEFAULT_SDKS
    plan = [arg for sdk in sdks for arg in ("--sdk", sdk)] + ["--shard", args.shard, "--no-progress"]
    command = [sys.executable, "-m", "bench.cli", "run", *plan]
    rows, ray_line = [], None
    with tempfile.TemporaryDirectory(prefix="misfit-executors-") as scratch:
        for round_, name in ((r, name) for r in range(args.rounds) for name in args.setting or list(SETTINGS)):
            load_before = os.getloadavg()[0]
            out = Path(scratch, f"{name}-{round_}")
            wall, cpu, driver = measure([*command, *SETTINGS[name]], out)
            written, run, on_ray = cells(out)
            rows.append((name, written, run, wall, cpu, driver, load_before, os.getloadavg()[0]))
            ray_line = ray_line or (
                on_ray and f"ray: {on_ray['tasks']} tasks in {on_ray['processes']} worker processes"
            )
    print(f"plan: {', '.join(sdks)}, shard {args.shard} of the default matrix; {os.cpu_count()} cores")
    print(f"{'setting':<9} {'cells':>6} {'run':>6} {'wall_s':>7} {'cells/s':>8} {'run/s':>7} {'cpu_s':>7} "
          f"{'cpu_ms/run':>10} {'driver_cpu_s':>12} {'load_before':>11} {'load_after':>10}")  # fmt: skip
    for name, written, run, wall, cpu, driver, before, after in rows:
        print(f"{name:<9} {written:>6} {run:>6} {wall:>7.1f} {written / wall:>8.1f} {run / wall:>7.1f} {cpu:>7.1f} "
              f"{1000 * cpu / max(run, 1):>10.1f} {driver:>12.1f} {before:>11.2f} {after:>10.2f}")  # fmt: skip
    if ray_line:
        print(ray_line)
    keys = ["setting", "cells", "run", "wall_s", "cpu_s", "driver_cpu_s", "load_before", "load_after"]
    print(json.dumps({"rows": [dict(zip(keys, row, strict=True)) for row in rows]}))


if __name__ == "__main__":
    main()
