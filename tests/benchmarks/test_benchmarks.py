"""Every script under benchmarks/ runs, with tiny parameters, and prints its figures.

A benchmark nothing runs rots: overhead.py's whole-matrix part once printed "0 rows, 0 cells
run" and died of a ZeroDivisionError, and releases.py started its workers with an attribute the
registry no longer had. Each script runs here as its own process (as a user runs it), from this
checkout (PYTHONPATH), and must exit 0 and print the lines its docstring promises, numbers
included. Only the figures' shape is checked: their values depend on the machine's load.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.node import setup

CHECKOUT = Path(__file__).resolve().parents[2]
NUMBER = r"-?\d+(?:\.\d+)?"

CASES: dict[str, tuple[list[str], list[str]]] = {
    "overhead": (
        ["--reps", "1", "--sdk", "pydantic-ai", "--matrix-shard", "1/200"],
        [
            rf"pydantic-ai +tool/default/openai-chat +wall +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}",
            r"pydantic-ai +tool/default/openai-chat +cpu" + rf" +{NUMBER}" * 7,
            rf"pydantic-ai +runner / user's loop on CPU {NUMBER}: target 1\.2 (met|NOT met)",
            rf"shard 1/200 default matrix: [1-9]\d* rows, [1-9]\d* cells run, wall {NUMBER} s",
            rf"sum of bare valid-call floors / \d+ cores: {NUMBER} s \(ratio {NUMBER}\)",
        ],
    ),
    "matrix": (
        ["--shard", "1/200", "--sdk", "pydantic-ai"],
        [
            r"[1-9]\d* rows, [1-9]\d* cells run, \d+ cores, shard 1/200",
            rf"floor pydantic-ai +[1-9]\d* cells +sum +{NUMBER} s +mean +{NUMBER} ms",
            rf"sum of bare floors {NUMBER} s; / \d+ cores = {NUMBER} s",
            rf"default +{NUMBER} +{NUMBER} +{NUMBER}",
        ],
    ),
    "claude_cli_reuse": (
        ["--cells", "2"],
        [
            rf"a CLI per cell \(today\) +2 cells: wall {NUMBER} s, CPU {NUMBER} s, per cell CPU {NUMBER} s",
            *(
                rf"one CLI, {way} +2 cells: wall {NUMBER} s, CPU {NUMBER} s, per cell CPU {NUMBER} s \(-?\d+% less"
                for way in ("session_id each", "/clear between")
            ),
            r"messages per model call \[1, \d+\]; \d+ session id\(s\) reported: (each cell a fresh|later cells carry)",
        ],
    ),
    "executors": (
        ["--sdk", "pydantic-ai", "--shard", "1/200"],
        [
            r"plan: pydantic-ai, shard 1/200 of the default matrix; \d+ cores",
            *(rf"{setting} +[1-9]\d* +[1-9]\d*" + rf" +{NUMBER}" * 8 for setting in ("procs-1", "procs-2", "ray")),
            r"ray: [1-9]\d* tasks in [1-9]\d* worker processes",
        ],
    ),
    "memory": (
        ["--requests", "50", "--plan-cells", "1000", "--body-mb", "33"],
        [
            rf"serve-bounded +rss_before_mb={NUMBER}, rss_after_mb={NUMBER}, growth_mb={NUMBER}, attempts_kept=\d+",
            rf"serve-unbounded +rss_before_mb={NUMBER}, .*attempts_kept=\d+",
            rf"bodies +statuses=\[413\], server_rss_before_mb={NUMBER}, .*server_peak_mb={NUMBER}",
            rf"plan +cells=[1-9]\d*, plan_mb={NUMBER}, bytes_per_cell={NUMBER}, at_cap_mb={NUMBER}",
        ],
    ),
    "profile": (
        ["--sdk", "pydantic-ai", "--shard", "1/200"],
        [
            r"pydantic-ai +[1-9]\d* +[1-9]\d*" + rf" +{NUMBER}" * 12,
            rf"whole matrix: per-cell CPU x cells run x 200 = {NUMBER} s of CPU",
            rf"start-up +imports +{NUMBER} +{NUMBER}%",
        ],
    ),
    "node_loop": (
        ["--calls", "5", "--rounds", "1"],
        [
            rf"user's own Node loop \(provider and model built once\): {NUMBER} ms wall, {NUMBER} ms CPU per call",
            rf"through the runner \(the slot's Node worker\): +{NUMBER} ms wall, {NUMBER} ms CPU per cell",
            rf"runner / user's loop: wall {NUMBER}, CPU {NUMBER}: target 1\.3 on CPU (met|NOT met)",
        ],
    ),
    "provider_rps": (
        ["--duration", "1", "--rounds", "1"],
        [
            rf"small +\d+ +0 +{NUMBER} +{NUMBER} +{NUMBER}",
            rf"stream-200 +\d+ +200 +{NUMBER} +{NUMBER} +{NUMBER}",
            rf"server-thread CPU per request: provider {NUMBER} us, minimal {NUMBER} us, ratio {NUMBER}",
            rf"ledger: [1-9]\d* attempts, RSS growth {NUMBER} MiB per 10k attempts",
        ],
    ),
    "releases": (
        ["--no-builds", "--reps", "1"],
        [
            rf"worker start pydantic-ai \(own interpreter\): {NUMBER} s \(median of 1\)",
            rf"worker start openai-agents \(own interpreter\): {NUMBER} s \(median of 1\)",
            rf"cell latency pydantic-ai \(valid, chat, default\): in-process {NUMBER} ms, worker {NUMBER} ms",
            rf"cell latency openai-agents \(valid, chat, default\): in-process {NUMBER} ms, worker {NUMBER} ms",
        ],
    ),
    "suite_cost": (
        ["--top", "3", "--", "-q", "tests/test_layout.py"],
        [
            rf"[1-9]\d* tests \([1-9]\d* passed\) in {NUMBER} s wall, {NUMBER} s CPU, {NUMBER} s summed over "
            r"their phases; pytest exit 0",
            rf"per file \(top 1 of 1; CPU: {NUMBER} s in the tests\)\n +seconds +CPU +share +tests +file.*\n"
            rf" +{NUMBER} +{NUMBER} +{NUMBER}% +[1-9]\d* +tests/test_layout\.py",
            rf"per fixture setup \(top [1-9] of [1-9]\d*\)\n.*\n +{NUMBER} +[1-9]\d* +{NUMBER} +\w+ +\w+",
        ],
    ),
    "under_load": (
        ["--busy-per-core", "1", "--shard", "1/200", "--sdk", "pydantic-ai"],
        [
            rf"busy: \d+ processes on \d+ cores; load average 1 min: before {NUMBER}, at the end {NUMBER}",
            rf"run: [1-9]\d* rows, [1-9]\d* cells run, wall {NUMBER} s",
            r"golden: 0 difference\(s\) in [1-9]\d* cells compared",
        ],
    ),
    "replay": (
        ["--sdk", "pydantic-ai", "--shard", "1/200"],
        [
            r"replayed default suite on pydantic-ai: [1-9]\d* cells \([1-9]\d* run, \d+ unsupported\), "
            rf"0 harness errors, wall {NUMBER} s",
            r"outcomes: \w+ [1-9]\d*",
            r"pydantic-ai +[1-9]\d* cells +[1-9]\d* run +0 harness errors",
        ],
    ),
    "scale": (
        ["--sizes", "20", "--concurrency", "2"],
        [rf"20 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}/{NUMBER}/{NUMBER}/{NUMBER} +{NUMBER} +\d+"],
    ),
}


def test_every_benchmark_has_a_case() -> None:
    """A new script under benchmarks/ is run here too, or this fails."""
    assert sorted(p.stem for p in (CHECKOUT / "benchmarks").glob("*.py")) == sorted(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_runs_and_prints_its_figures(script: str) -> None:
    if script == "provider_rps" and shutil.which("wrk") is None:
        pytest.skip("provider_rps.py drives wrk, which is not installed (apt-get install -y wrk)")
    if script == "node_loop" and (reason := setup.unavailable()) is not None:
        pytest.skip(f"node_loop.py drives the Node side: {reason}")
    if script == "profile" and shutil.which("py-spy", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("profile.py samples with py-spy, which is not installed (the [test] extra has it)")
    args, figures = CASES[script]
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    done = subprocess.run(
        [sys.executable, str(CHECKOUT / "benchmarks" / f"{script}.py"), *args],
        cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{script}.py exited {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}"
    missing = [figure for figure in figures if not re.search(figure, done.stdout)]
    assert not missing, f"{script}.py did not print {missing}:\n{done.stdout}"
