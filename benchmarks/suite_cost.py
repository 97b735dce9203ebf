"""Where the test suite's time goes (issue 38): seconds per test file and per fixture setup.

Runs pytest (any arguments after ``--`` go to it: a path, ``-m``, ``-n auto``) with this module
as a plugin in every process, pytest-xdist workers included. Each process appends what it
measured to its own JSON-lines file in one folder: the master every test's phases (setup, call,
teardown, as pytest reports them), every process the self time of each fixture setup (the
fixture's own body up to its ``yield``, its dependencies excluded: pytest sets those up first).
Then it prints, largest first:

  the run       tests, wall, CPU (user + system of pytest and every process it waited for: the
                figure the machine's load inflates least), the sum of the tests' phases,
                pytest's exit code, the cores and the load average before and after
  per file      seconds (setup + call + teardown of its tests), CPU seconds, share, tests, its
                slowest test
  per fixture   seconds of setup, how many setups, scope, where it is declared

A test's CPU is measured in the process that ran it (every pytest-xdist worker's own): user +
system of the process and of the children it waited for in the meantime (a `bench run`'s shard
processes and SDK workers, a CLI started by the test), from setup to teardown. It is the figure to
read on a loaded machine: another job's load stretches a test's seconds, hardly its CPU. The
server threads of a session fixture (the provider) are charged to the test running at the time.
A session fixture's setup is charged to the test that first asked for it, so a file's seconds
include the shared fixtures its first test built; the fixture table names them apart. Under
xdist the seconds are each worker's own (two workers on two cores: each test's wall, loaded by
the other). pytest's own exit code is this script's, 5 ("no tests ran") included.

    .venv/bin/python benchmarks/suite_cost.py [--top 25] [--keep DIR] [-- PYTEST_ARGS ...]
    .venv/bin/python benchmarks/suite_cost.py --from DIR      # the table of a kept run again
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LOG_ENV = "SUITE_COST_LOG"
CHECKOUT = Path(__file__).resolve().parents[1]


# --- the plugin: loaded by pytest in each process through `-p benchmarks.suite_cost` ----------


def _write(record: dict[str, Any]) -> None:
    folder = os.environ.get(LOG_ENV)
    if folder:
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[None]:
    start = time.perf_counter()
    yield
    code = getattr(fixturedef.func, "__code__", None)
    where = f"{os.path.relpath(code.co_filename, CHECKOUT)}:{code.co_firstlineno}" if code else "?"
    _write(
        {
            "fixture": fixturedef.argname,
            "scope": fixturedef.scope,
            "where": where,
            "seconds": time.perf_counter() - start,
        }
    )


_WORKER = False
"""Whether this process is a pytest-xdist worker (its master gets its reports and counts them)."""


def pytest_configure(config: pytest.Config) -> None:
    global _WORKER
    _WORKER = hasattr(config, "workerinput")


def _cpu() -> float:
    """User + system seconds of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    start = _cpu()
    yield
    _write({"cpu_test": item.nodeid, "cpu": _cpu() - start})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _WORKER:
        return  # the master gets every worker's reports: counted there once
    _write({"test": report.nodeid, "when": report.when, "outcome": report.outcome, "seconds": report.duration})


# --- the script -----------------------------------------------------------------------------


def load(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The records of a kept folder: tests' phases and CPU, fixture setups, the run (run.json)."""
    tests: list[dict[str, Any]] = []
    fixtures: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "test" in record or "cpu_test" in record:
                tests.append(record)
            elif "fixture" in record:
                fixtures.append(record)
    meta = folder / "run.json"
    if meta.exists():
        run = json.loads(meta.read_text(encoding="utf-8"))
    return tests, fixtures, run


def table(tests: list[dict[str, Any]], fixtures: list[dict[str, Any]], run: dict[str, Any], top: int) -> str:
    per_test: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    outcomes: dict[str, str] = {}
    for record in tests:
        if "cpu_test" in record:
            cpu[record["cpu_test"]] += record["cpu"]
            continue
        per_test[record["test"]] += record["seconds"]
        if record["when"] == "call" or record["outcome"] != "passed":
            outcomes.setdefault(record["test"], record["outcome"])
    per_file: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for nodeid, seconds in per_test.items():
        per_file[nodeid.split("::", 1)[0]].append((seconds, nodeid))
    total = sum(per_test.values()) or 1e-9
    counts: dict[str, int] = defaultdict(int)
    for outcome in outcomes.values():
        counts[outcome] += 1
    lines = [
        f"{len(per_test)} tests ({', '.join(f'{n} {o}' for o, n in sorted(counts.items()))}) in "
        f"{run.get('wall', 0.0):.0f} s wall, {run.get('cpu', 0.0):.0f} s CPU, {total:.0f} s summed over their phases; "
        f"pytest exit {run.get('exit', '?')}; {run.get('cores', '?')} cores, load average "
        f"{run.get('load_before', '?')} before, {run.get('load_after', '?')} after",
        f"pytest {' '.join(run.get('args', []))}",
        "",
        f"per file (top {min(top, len(per_file))} of {len(per_file)}; CPU: {sum(cpu.values()):.0f} s in the tests)",
        f"{'seconds':>8} {'CPU':>7} {'share':>6} {'tests':>6}  file  (slowest test, seconds)",
    ]
    ranked = sorted(per_file.items(), key=lambda item: -sum(s for s, _ in item[1]))
    for path, costs in ranked[:top]:
        seconds = sum(s for s, _ in costs)
        worst, name = max(costs)
        measured = [cpu[nodeid] for _, nodeid in costs if nodeid in cpu]
        used = f"{sum(measured):7.1f}" if measured else f"{'-':>7}"  # a run kept before CPU was measured
        lines.append(
            f"{seconds:8.1f} {used} {seconds / total:6.1%} {len(costs):6d}  {path}  "
            f"({name.split('::', 1)[1]}, {worst:.1f})"
        )
    per_fixture: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for record in fixtures:
        per_fixture[(record["fixture"], record["scope"], record["where"])].append(record["seconds"])
    lines += ["", f"per fixture setup (top {min(top, len(per_fixture))} of {len(per_fixture)})"]
    lines.append(f"{'seconds':>8} {'setups':>7} {'each':>7}  {'scope':<8}  fixture  (declared at)")
    for (name, scope, where), setups in sorted(per_fixture.items(), key=lambda item: -sum(item[1]))[:top]:
        lines.append(
            f"{sum(setups):8.1f} {len(setups):7d} {sum(setups) / len(setups):7.2f}  {scope:<8}  {name}  ({where})"
        )
    return "\n".join(lines)


def _children_cpu() -> float:
    """User + system seconds of the processes this one has waited for (pytest, its workers and
    every process they waited for): the run's CPU, which the machine's load inflates far less
    than its wall."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument("--keep", type=Path, help="keep the measurements in this folder (for --from)")
    parser.add_argument("--from", dest="source", type=Path, help="print the table of a kept run; run nothing")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    options = parser.parse_args()
    if options.source is not None:
        if not options.source.is_dir():
            print(f"--from {options.source}: no such folder", file=sys.stderr)
            return 2
        print(table(*load(options.source), options.top))
        return 0
    folder = options.keep or Path(tempfile.mkdtemp(prefix="suite-cost-"))
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.jsonl"):
        stale.unlink()
    env = {
        **os.environ,
        LOG_ENV: str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH", "")])),
    }
    args = ["-p", "benchmarks.suite_cost", *options.pytest_args]
    load_before = f"{os.getloadavg()[0]:.2f}"
    start, cpu = time.perf_counter(), _children_cpu()
    status = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=CHECKOUT, env=env, check=False).returncode
    run = {
        "args": options.pytest_args,
        "wall": time.perf_counter() - start,
        "cpu": _children_cpu() - cpu,
        "exit": status,
        "cores": os.cpu_count(),
        "load_before": load_before,
        "load_after": f"{os.getloadavg()[0]:.2f}",
    }
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    print()
    print(table(*load(folder), options.top))
    if options.keep is None:
        print(f"(measurements in {folder}; --keep DIR to choose where)")
    return status


if __name__ == "__main__":
    sys.exit(main())
