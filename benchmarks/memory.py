"""Memory bounds under misuse (issue 20, point 6): figures, not pass marks.

Each measurement runs in a child process of its own, so one peak (``ru_maxrss``) never hides
another. It prints:

- ``serve``: RSS growth of a ``bench serve``-style run (bounded ledger, the default) over N
  chat requests, against a run that keeps every attempt and body (the old behaviour);
- ``bodies``: the RSS and peak of a ``bench serve`` process sent four 100 MB bodies at once
  (refused unread: 413);
- ``plan``: the memory one planned cell costs, and so the plan at its 1,000,000-cell cap.

    .venv/bin/python benchmarks/memory.py [--requests 20000] [--plan-cells 100000] [--body-mb 100]

A tiny run (the benchmark test's): ``--requests 50 --plan-cells 1000 --body-mb 2``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import threading

import psutil


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


CHAT = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Extract the person: 'Ada Lovelace (36) <ada@example.org>'."}],
}
"""A chat request; the scripted `valid` run answers it whatever it asks for."""


def serve(requests: int, bounded: bool) -> dict[str, float]:
    import httpx

    from bench.provider import LocalProvider
    from bench.provider.server import SERVE_LEDGER_LIMIT

    with LocalProvider() as provider:
        run = provider.open_script("person", ["valid"], ledger_limit=SERVE_LEDGER_LIMIT if bounded else None)
        url = f"{run.endpoint.openai_base_url}/chat/completions"
        with httpx.Client(timeout=60) as client:
            for index in range(200):  # warm up: caches, allocator arenas
                client.post(url, json=CHAT | {"user": f"warm-{index}"})
            before = _rss_mb()
            for index in range(requests):  # distinct bodies, as a real client's conversations are
                client.post(url, json=CHAT | {"user": f"request-{index}"})
        after = _rss_mb()
        kept = len(run.state.attempts)
    return {"rss_before_mb": before, "rss_after_mb": after, "growth_mb": after - before, "attempts_kept": kept}


def bodies(size_mb: int, concurrent: int) -> dict[str, float]:
    """``bench serve`` in a process of its own (its memory alone), sent ``concurrent`` bodies of
    ``size_mb`` at once; its peak is the kernel's high-water mark (VmHWM)."""
    import re

    import httpx

    command = [sys.executable, "-m", "bench.cli", "serve", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        base = re.search(r"(http://\S+?)/v1", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        process = psutil.Process(server.pid)
        before = process.memory_info().rss / 2**20
        body = b'{"messages": "' + b"x" * (size_mb << 20) + b'"}'
        statuses: list[int] = []

        def post() -> None:
            with httpx.Client(timeout=300) as client:
                statuses.append(client.post(f"{base}/v1/chat/completions", content=body).status_code)

        threads = [threading.Thread(target=post) for _ in range(concurrent)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after = process.memory_info().rss / 2**20
        with open(f"/proc/{server.pid}/status", encoding="ascii") as status:
            peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"statuses": sorted(set(statuses)), "server_rss_before_mb": before, "server_rss_after_mb": after,
            "server_peak_mb": peak}  # fmt: skip


def plan(cells: int) -> dict[str, float]:
    import tracemalloc

    from bench.run.plan import Filters, expand
    from bench.scenarios.files import default_scenarios
    from bench.sdk import registry

    adapter = registry.load("agentmaker")
    scenarios = default_scenarios()
    per_rep = sum(1 for _ in adapter.cells()) * len(scenarios)
    reps = max(1, cells // per_rep)
    tracemalloc.start()
    plans = expand([adapter], scenarios, Filters(), reps=reps)
    current, _ = tracemalloc.get_traced_memory()
    per_cell = current / len(plans)
    return {"cells": len(plans), "plan_mb": current / 2**20, "bytes_per_cell": per_cell,
            "at_cap_mb": per_cell * 1_000_000 / 2**20}  # fmt: skip


def _child(kind: str, argument: int, body_mb: int) -> None:
    if kind == "serve-bounded":
        print(json.dumps(serve(argument, bounded=True)))
    elif kind == "serve-unbounded":
        print(json.dumps(serve(argument, bounded=False)))
    elif kind == "bodies":
        print(json.dumps(bodies(body_mb, 4)))
    else:
        print(json.dumps(plan(argument)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--plan-cells", type=int, default=100_000)
    parser.add_argument("--body-mb", type=int, default=100, help="size of each of the four bodies sent at once")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.body_mb)
        return
    for kind, argument in [("serve-bounded", args.requests), ("serve-unbounded", args.requests),
                           ("bodies", 0), ("plan", args.plan_cells)]:  # fmt: skip
        result = subprocess.run(
            [sys.executable, __file__, "--child", kind, str(argument), "--body-mb", str(args.body_mb)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise SystemExit(f"{kind}: the measuring process exited {result.returncode}:\n{result.stderr[-2000:]}")
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        shown = ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
        print(f"{kind:<16} {shown}", flush=True)


if __name__ == "__main__":
    main()
