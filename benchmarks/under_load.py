"""The default matrix with CPU-bound busy processes beside it, against the golden matrix.

Outcomes must not depend on machine load (a time limit catches stalls, not slowness): this runs
``bench run`` (the whole default matrix, or a ``--shard`` of it) while ``--busy-per-core`` busy
loops per core compete for the CPU, and compares every cell it ran with
tests/golden/default_matrix.tsv. It prints:

    busy: N processes on C cores; load average 1 min: before X, at the end Y
    run: R rows, K cells run, wall W s
    golden: D difference(s) in G cells compared

and exits 1 when a cell differs. The benchmark test runs a tiny shard with one busy loop:

    .venv/bin/python benchmarks/under_load.py [--busy-per-core 2] [--shard 1/40] [--sdk NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.results import golden
from bench.results.store import load_run

BUSY = "while True: pass"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy-per-core", type=int, default=2)
    parser.add_argument("--shard", help="I/N: run one slice of the default matrix")
    parser.add_argument("--sdk", action="append", default=[])
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    before = os.getloadavg()[0]
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy_per_core * cores)]
    try:
        with tempfile.TemporaryDirectory(prefix="misfit-under-load-") as scratch:
            command = [sys.executable, "-m", "bench.cli", "run", "--no-progress", "--out", scratch]
            command += [f"--shard={args.shard}"] if args.shard else []
            command += [item for sdk in args.sdk for item in ("--sdk", sdk)]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            at_end = os.getloadavg()[0]
            if done.returncode != 0:
                print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "bench run failed")
                return 2
            runs = load_run(Path(scratch) / "latest")["runs"]
    finally:
        for process in busy:
            process.kill()
            process.wait()
    ran = golden.golden_frame(runs)
    expected = golden.read().merge(ran[golden.KEY], on=golden.KEY, how="inner")
    changes = golden.differences(runs, expected)
    load = f"load average 1 min: before {before:.1f}, at the end {at_end:.1f}"
    print(f"busy: {len(busy)} processes on {cores} cores; {load}")
    print(f"run: {len(runs)} rows, {int((runs['outcome'] != 'unsupported').sum())} cells run, wall {wall:.1f} s")
    print(f"golden: {len(changes)} difference(s) in {len(expected)} cells compared")
    for line in changes[:20]:
        print(f"  {line}")
    return 1 if changes else 0


if __name__ == "__main__":
    sys.exit(main())
