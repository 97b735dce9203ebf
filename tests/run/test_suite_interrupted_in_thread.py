"""bench.run.suite.in_own_loop: a run made under a running event loop (a notebook's kernel) runs in
a thread of its own; the kernel's interrupt reaches only the main thread, and must stop the run
there too, written as ``interrupted``, with no thread of it left going (issue 24's notebook)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KERNEL = r"""
import asyncio, json, os, signal, sys, threading
from pathlib import Path
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, in_own_loop, run_suite

recorded = []

def on_record(cell):
    recorded.append(cell)
    if len(recorded) == 3:  # the kernel's interrupt button: SIGINT to the kernel's main thread
        os.kill(os.getpid(), signal.SIGINT)

request = SuiteRequest(sdks=("pydantic-ai",), results_root=Path(sys.argv[1]), procs=1,
                       filters=Filters(scenarios=frozenset({"valid", "malformed_then_valid", "wrong_persistent"})))

async def cell():  # a notebook cell: synchronous code under the kernel's running loop
    try:
        in_own_loop(lambda: run_suite(request, on_record=on_record))
    except KeyboardInterrupt:
        print(json.dumps({"interrupted": True, "recorded": len(recorded),
                          "threads": [t.name for t in threading.enumerate()]}))

loop = asyncio.new_event_loop()  # as a kernel's: run_until_complete leaves Python's SIGINT handler in place
loop.run_until_complete(cell())
"""


def test_the_kernels_interrupt_stops_the_run_in_its_thread(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KERNEL, str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["interrupted"] and "misfit-run" not in said["threads"]
    manifest = json.loads(next(tmp_path.glob("2*/manifest.json")).read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"
    assert said["recorded"] <= manifest["cells_written"] < manifest["cells_planned"]
