"""Scale: a fault-rate sweep of 1k, 5k and 10k in-process cells (figures, not pass marks).

Each size runs in a child process of its own (so the three sizes do not share one peak-RSS
high-water mark) through ``bench.run.suite.run_suite``: pydantic-ai, tool mode, default variant,
OpenAI chat, on a stochastic scenario (15 % malformed answers, seeded), ``--reps`` = size.
The child prints: wall time and time per cell (linear growth = flat time per cell), peak RSS
(``ru_maxrss``) and the RSS after 10/50/90/100 % of the cells (flat memory = no growth between
those), and how many parquet parts were on disk while it ran (incremental writing).

    .venv/bin/python benchmarks/scale.py [--sizes 1000 5000 10000] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

SCENARIO = """\
version: 1
scenarios:
  - name: scale_malformed_15
    task: person
    suite: full
    stochastic: {rates: {malformed: 0.15}, seed: 3}
"""


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


class PartsWatcher(threading.Thread):
    """Counts parquet parts on disk while the run goes: they appear as cells finish and are
    merged away at the end, so a high count mid-run is the proof of incremental writing."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root, self.max_parts, self.samples = root, 0, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.25):
            parts = len(list(self.root.glob("*/parts/runs-*.parquet")))
            self.max_parts, self.samples = max(self.max_parts, parts), self.samples + 1


def child(size: int, concurrency: int) -> None:
    """One size, in this process; prints one JSON line."""
    from bench.run.plan import Filters
    from bench.run.runner import RunOptions
    from bench.run.suite import SuiteRequest, run_suite

    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scale.yaml"
        scenario.write_text(SCENARIO)
        root = Path(tmp) / "results"
        request = SuiteRequest(
            sdks=("pydantic-ai",),
            filters=Filters(
                modes=frozenset({"tool"}), variants=frozenset({"default"}), protocols=frozenset({"openai-chat"})
            ),
            suite="full",
            scenario_paths=(scenario,),
            reps=size,
            options=RunOptions(concurrency=concurrency),
            results_root=root,
        )
        marks = {max(1, size * p // 100): p for p in (10, 50, 90, 100)}
        rss: dict[int, float] = {}
        done = [0]

        def on_record(_record: object) -> None:
            done[0] += 1
            if done[0] in marks:
                rss[marks[done[0]]] = round(_rss_mb(), 1)

        watcher = PartsWatcher(root)
        watcher.start()
        started_rss = _rss_mb()
        started = time.perf_counter()
        directory = run_suite(request, on_record=on_record)
        wall = time.perf_counter() - started
        watcher.stop.set()
        watcher.join()
        manifest = json.loads((directory / "manifest.json").read_text())
        print(json.dumps({
            "cells": size, "written": manifest["cells_written"], "wall_s": round(wall, 2),
            "ms_per_cell": round(wall / size * 1000, 2), "rss_start_mb": round(started_rss, 1),
            "rss_at_pct_mb": rss, "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "max_parts_on_disk": watcher.max_parts,
        }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.concurrency)
        return
    print(f"{'cells':>6} {'wall s':>8} {'ms/cell':>8} {'RSS start':>9} {'RSS 10/50/90/100 % (MB)':>26} "
          f"{'peak RSS':>9} {'parts':>6}")  # fmt: skip
    for size in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(size), "--concurrency", str(args.concurrency)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        r = json.loads(out.stdout.strip().splitlines()[-1])
        marks = "/".join(str(r["rss_at_pct_mb"].get(str(p), "-")) for p in (10, 50, 90, 100))
        print(f"{r['cells']:>6} {r['wall_s']:>8.1f} {r['ms_per_cell']:>8.2f} {r['rss_start_mb']:>9.1f} "
              f"{marks:>26} {r['peak_rss_mb']:>9.1f} {r['max_parts_on_disk']:>6}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
