"""The default suite replayed on recorded answers: cells, outcomes, harness errors, wall time.

Runs ``bench run --cassettes FOLDER --tasks cassettes`` (the tasks drawn from the recordings,
docs/record-replay.md) in a child process, as a user runs it, on the vendored pydantic-ai
recordings by default, then reads the run and prints:

    replayed default suite on pydantic-ai: 5289 cells (2774 run, 2515 unsupported), 0 harness errors, wall 2100.9 s
    outcomes: unsupported 2515, raised 987, ok 743, ...
    pydantic-ai         1107 cells   1026 run    0 harness errors

Exit 1 when a cell is a harness error (a request answered with a miss, or any harness bug).

    .venv/bin/python benchmarks/replay.py [--cassettes DIR] [--sdk NAME ...] [--shard I/N] [--procs N]

Measured on the 2-core development machine shared with three other sessions (load average
about 25), all five SDKs, the whole default suite: 5289 cells, 2774 run, 35 min wall, 540 s of
CPU, 6 harness errors (cells stalled before their first request under that load: ``NoModelCall``),
measured on ``bench run --rerun RUN --outcome harness_error`` (2 min 16 s): the figures are in
docs/record-replay.md. A tiny run (the benchmark test's): ``--sdk pydantic-ai --shard 1/200``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
VENDORED = CHECKOUT / "tests" / "fixtures" / "cassettes" / "pydantic-ai"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cassettes", type=Path, default=VENDORED)
    parser.add_argument("--sdk", action="append", default=[])
    parser.add_argument("--shard")
    parser.add_argument("--procs", type=int)
    args = parser.parse_args()
    from bench.results.store import latest_run, read_table

    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-c", "from bench.cli import main; main()", "run", "--cassettes",
                   str(args.cassettes), "--tasks", "cassettes", "--out", out, "--no-progress"]  # fmt: skip
        command += [a for sdk in args.sdk for a in ("--sdk", sdk)]
        command += ["--shard", args.shard] if args.shard else []
        command += ["--procs", str(args.procs)] if args.procs else []
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ})
        wall = time.perf_counter() - started
        run = latest_run(Path(out))
        if run is None:
            print(f"bench run exited {done.returncode} with no run:\n{done.stderr[-3000:]}", file=sys.stderr)
            return 2
        runs = read_table(run, "runs").to_pandas()
    counts = runs["outcome"].value_counts()
    unsupported = int(counts.get("unsupported", 0))
    errors = int(counts.get("harness_error", 0))
    print(
        f"replayed default suite on {args.cassettes.name}: {len(runs)} cells ({len(runs) - unsupported} run, "
        f"{unsupported} unsupported), {errors} harness errors, wall {wall:.1f} s"
    )
    print("outcomes: " + ", ".join(f"{outcome} {int(n)}" for outcome, n in counts.items()))
    for sdk, cells in runs.groupby("sdk"):
        ran = int((cells["outcome"] != "unsupported").sum())
        failed = int((cells["outcome"] == "harness_error").sum())
        print(f"{sdk:<18}{len(cells):>6} cells {ran:>6} run {failed:>4} harness errors")
    for message in runs.loc[runs["outcome"] == "harness_error", "exception_message"].head(5):
        print(f"harness error: {message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
