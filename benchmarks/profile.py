"""Where a ``bench run``'s CPU goes, across every process it starts (issue 30): the floor per cell.

Each SDK's default matrix (or one ``--shard`` of it) is one ``bench run --sdk S`` as a user runs
it, under py-spy (``record --subprocesses --nonblocking``, raw stacks, idle threads left out),
so the run, its shard processes (``--procs``) and every thread in them are sampled. psutil polls
the process tree meanwhile: each Python process's CPU (user + sys) scales its own samples, so
the shares are py-spy's and the seconds are the kernel's; the Claude CLIs (not Python) are the
CPU their shard process reaped (its children's times). Each sample goes to the top-level package
of its innermost frame's file (self time); a standard-library frame other than the event loop's
(``typing``, ``json``, ``re`` ...) goes to the nearest caller outside it, so ``json.dumps`` in the
provider counts as the provider; one in ``EpollSelector.select`` is a thread waiting for the GIL
or a core after its wait (``WAITING``), and dropped. Packages are grouped into components:

  sdk        the SDK's own code (pydantic_ai, agents, langchain*, langgraph, agentmaker, ...)
  pydantic   pydantic and pydantic_core (validation, schemas) outside the provider
  http       the official clients and their transport: openai, anthropic, httpx, httpcore, h11, anyio
  provider   bench/provider and everything in its server thread (uvicorn, h11, its event loop)
  harness    our runner, ledger reads, classification, rows, parquet (bench.*, adapters, pyarrow)
  loop       the run's event loop (asyncio, selectors) outside the provider's thread
  cli        the Claude CLI subprocesses (bundled Bun binary), from their CPU times
  other      any other package
  start-up   imports and the tokenizer's vocabulary (once per process), planning, the closing
             summary, the parquet merge and gc.collect (once per run): not per cell

Per cell = (CPU of the run minus its start-up) / the cells run (not ``unsupported``); the run's
totals are printed beside, with py-spy's own CPU apart (it is not in any figure).

    .venv/bin/python benchmarks/profile.py [--sdk NAME ...] [--shard I/N] [--procs N] [--rate 40] [--keep DIR]

With ``--shard I/N`` the whole-matrix line scales each SDK's per-cell CPU by N (start-up once).
A tiny run (the benchmark test's): ``--sdk pydantic-ai --shard 1/200``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SDKS = ["pydantic-ai", "openai-agents", "langchain", "agentmaker", "claude-agent-sdk"]
COMPONENTS = ["sdk", "pydantic", "http", "provider", "harness", "loop", "cli", "other"]
SDK_PACKAGES = {"pydantic_ai", "pydantic_graph", "agents", "langchain", "langchain_core", "langgraph",
                "langchain_openai", "langchain_anthropic", "langsmith", "agentmaker", "claude_agent_sdk",
                "genai_prices", "griffe", "opentelemetry", "logfire_api", "mcp"}  # fmt: skip
PYDANTIC_PACKAGES = {"pydantic", "pydantic_core", "typing_inspection", "annotated_types"}
HTTP_PACKAGES = {"openai", "anthropic", "httpx", "httpcore", "httpx2", "httpcore2", "h11", "anyio", "sniffio", "ssl",
                 "certifi", "jiter", "distro", "socket", "http"}  # fmt: skip
HARNESS_PACKAGES = {"bench", "adapters", "pyarrow", "pandas", "numpy", "quicktok", "yaml", "psutil", "typer", "click",
                    "rich"}  # fmt: skip
LOOP_MODULES = {"asyncio", "selectors", "concurrent", "threading", "queue", "contextvars", "_asyncio"}
CALLER_PACKAGES = {"typing_extensions", "attr", "wrapt", "functools", "<string>"}
"""Leaf packages whose time goes to the caller, as the standard library's does."""
PER_RUN = {
    "plan_suite": "per run: planning (scenarios, matrix)",
    "_print_summary": "per run: the closing summary",
    "ResultsWriter.finalize": "per run: merging the parquet parts",
}
"""Functions whose time (and their callees') is the run's, not a cell's: counted with the start-up."""
WAITING = ("EpollSelector.select (",)
"""Innermost frames py-spy counts as active that are waits: a thread back from ``epoll_wait``
waits there for the GIL (the provider's server thread, behind the cells' loop thread), and on a
loaded machine for a core. Dropped: the process's CPU is spread over its other samples."""
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>.+?)(?::\d+)?\)$")
STDLIB = os.path.dirname(os.__file__)


def package_of(file: str) -> str:
    """The top-level package of a frame's file: ``pydantic``, ``bench.provider``, ``asyncio``,
    ``<stdlib>`` for a standard-library module outside the event loop, or ``<frozen>``."""
    if file.startswith("<frozen"):
        return "<frozen>"
    if "site-packages/" in file:
        top = file.split("site-packages/", 1)[1].split("/", 1)[0]
        return top.removesuffix(".py").split(".")[0]
    parts = Path(file).parts
    for marker in ("bench", "adapters"):
        if marker in parts and not file.startswith(STDLIB):
            index = parts.index(marker)
            sub = parts[index + 1] if marker == "bench" and len(parts) > index + 2 else ""
            return f"bench.{sub}" if sub else marker
    if file.startswith(STDLIB):
        top = Path(file).relative_to(STDLIB).parts[0].removesuffix(".py")
        return top if top in LOOP_MODULES or top in HTTP_PACKAGES else "<stdlib>"
    return file if file == "<string>" else "<other>"


def component_of(package: str, in_provider: bool) -> str:
    if in_provider or package.startswith("bench.provider"):
        return "provider"
    top = package.split(".")[0]
    for name, packages in (("sdk", SDK_PACKAGES), ("pydantic", PYDANTIC_PACKAGES), ("http", HTTP_PACKAGES),
                           ("harness", HARNESS_PACKAGES), ("loop", LOOP_MODULES)):  # fmt: skip
        if top in packages:
            return name
    return "other"


def classify(frames: list[str], thread: str) -> tuple[str, str]:
    """(component, package) of one sample: ``start-up`` for imports and the tokenizer load."""
    files = [match["file"] if (match := FRAME.match(f)) else f for f in frames]
    functions = [match["function"] if (match := FRAME.match(f)) else f for f in frames]
    if "_find_and_load" in functions:
        return "start-up", "imports"
    if any(f.endswith("bench/core/tokens.py") for f in files) and "_encoding" in functions:
        return "start-up", "tokenizer load"
    for function, what in PER_RUN.items():
        if function in functions:
            return "start-up", what
    if functions[-1:] == ["run_plans"]:  # its own line: the closing gc.collect() (a builtin: no frame)
        return "start-up", "per run: gc.collect after the cells"
    in_provider = thread == "misfit-provider"
    packages = [package_of(f) for f in files]
    for package in reversed(packages):
        if package not in ("<stdlib>", "<frozen>", "<other>", *CALLER_PACKAGES):
            return component_of(package, in_provider), package
    return component_of("<stdlib>", in_provider), "<stdlib>"


@dataclass
class Process:
    """One process of the tree as psutil last saw it."""

    cmdline: str
    cpu: float = 0.0
    children_cpu: float = 0.0


@dataclass
class Profile:
    """One ``bench run`` under py-spy: CPU seconds by (component, package), and its cells."""

    rows: int = 0
    run: int = 0
    total: float = 0.0
    spy: float = 0.0
    seconds: Counter[tuple[str, str]] = field(default_factory=Counter)

    def component(self, name: str) -> float:
        return sum(s for (component, _), s in self.seconds.items() if component == name)


def poll(root: psutil.Process, seen: dict[int, Process]) -> None:
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for process in processes:
        try:
            with process.oneshot():
                times, cmdline = process.cpu_times(), " ".join(process.cmdline())
        except psutil.Error:
            continue
        entry = seen.setdefault(process.pid, Process(cmdline))
        entry.cpu = max(entry.cpu, times.user + times.system)
        entry.children_cpu = max(entry.children_cpu, times.children_user + times.children_system)


def samples(raw: Path) -> dict[int, Counter[tuple[str, str]]]:
    """py-spy's raw stacks, classified, by the pid of the process sampled."""
    found: dict[int, Counter[tuple[str, str]]] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        pids = [int(f.split()[1].rstrip(":").split(":")[0]) for f in frames if f.startswith("process ")]
        threads = [f for f in frames if f.startswith("thread (")]
        thread = threads[0].split(": ", 1)[1] if threads and ": " in threads[0] else ""
        python = [f for f in frames if not f.startswith(("process ", "thread ("))]
        if python and python[-1].startswith(WAITING):
            continue
        found.setdefault(pids[-1], Counter())[classify(python, thread)] += int(count)
    return found


def profile_run(command: list[str], spy: str, rate: int, scratch: Path) -> Profile:
    raw, out = scratch / "raw.txt", scratch / "out"
    spied = [spy, "record", "--rate", str(rate), "--nonblocking", "--subprocesses", "--full-filenames", "--threads",
             "--format", "raw", "--output", str(raw), "--", *command, "--out", str(out)]  # fmt: skip
    child = subprocess.Popen(spied, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root, seen = psutil.Process(child.pid), dict[int, Process]()
    while child.poll() is None:
        poll(root, seen)
        time.sleep(0.1)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0 or not raw.exists():
        sys.exit(f"py-spy ... bench run exited {child.returncode}: {stderr.strip()[-1500:]}")
    # The run's own process reaped every process below it: its children's times are the rest of the tree.
    run_pid = next(pid for pid, p in seen.items() if " -m bench.cli run " in f" {p.cmdline} ")
    result = Profile(total=seen[run_pid].cpu + seen[run_pid].children_cpu)
    result.spy = seen[child.pid].cpu
    shards = [pid for pid, p in seen.items() if "bench.run.shard" in p.cmdline]
    by_pid = samples(raw)
    for pid, counts in by_pid.items():
        cpu, total = seen[pid].cpu if pid in seen else 0.0, sum(counts.values())
        for key, count in counts.items():
            result.seconds[key] += cpu * count / total
    runners = shards or [pid for pid, p in seen.items() if "bench.cli run" in p.cmdline]
    result.seconds["cli", "claude CLI"] = sum(seen[pid].children_cpu for pid in runners)
    result.total = max(result.total, sum(result.seconds.values()))  # a shard reaped after the last poll
    unsampled = result.total - sum(result.seconds.values())
    result.seconds["start-up", "unsampled (interpreter start, last 0.1 s)"] = max(unsampled, 0.0)
    result.rows, result.run = cells(out)
    return result


def cells(out: Path) -> tuple[int, int]:
    import pyarrow.compute as pc

    from bench.results.store import latest_run, read_table

    directory = latest_run(out)
    if directory is None:
        sys.exit(f"bench run wrote no run under {out}")
    outcome = read_table(directory, "runs").column("outcome")
    return len(outcome), len(outcome) - pc.sum(pc.equal(outcome, "unsupported")).as_py()


def print_profiles(profiles: dict[str, Profile], scale: int) -> None:
    print(f"{'CPU ms per cell run':<19} {'rows':>5} {'run':>5} " + "".join(f"{c:>9}" for c in COMPONENTS)
          + f" {'per cell':>9} {'start-up s':>10} {'total s':>8} {'py-spy s':>8}")  # fmt: skip
    whole, start = 0.0, 0.0
    for sdk, p in profiles.items():
        run = max(p.run, 1)
        per = {c: 1000 * p.component(c) / run for c in COMPONENTS}
        totals = f" {sum(per.values()):>9.1f} {p.component('start-up'):>10.1f} {p.total:>8.1f} {p.spy:>8.1f}"
        print(f"{sdk:<19} {p.rows:>5} {p.run:>5} " + "".join(f"{per[c]:>9.1f}" for c in COMPONENTS) + totals)
        whole += sum(per.values()) * p.run * scale / 1000
        start += p.component("start-up")
    everything: Counter[tuple[str, str]] = sum((p.seconds for p in profiles.values()), Counter())
    cpu = sum(everything.values())
    cores = os.cpu_count() or 1
    print(f"\nwhole matrix: per-cell CPU x cells run x {scale} = {whole:.1f} s of CPU ({whole / cores:.1f} s on "
          f"{cores} cores perfectly packed), + start-up {start:.1f} s (these runs' sum: one run of all SDKs pays the "
          "imports once per process)")  # fmt: skip
    print(f"\n{'component':<10} {'package':<42} {'CPU s':>8} {'share':>6}   (all runs, self time)")
    for (component, package), seconds in everything.most_common(30):
        print(f"{component:<10} {package:<42} {seconds:>8.2f} {100 * seconds / cpu:>5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk", action="append", choices=SDKS, help="Default: the five built-in SDKs.")
    parser.add_argument("--shard", help="I/N: profile only this slice of each SDK's default matrix.")
    parser.add_argument("--procs", type=int, help="bench run --procs (default: bench run's own).")
    parser.add_argument("--rate", type=int, default=40, help="py-spy samples per second and process.")
    parser.add_argument("--keep", type=Path, help="Copy each run's raw py-spy stacks here (SDK.txt).")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    if spy is None:
        sys.exit("profile.py needs py-spy: pip install -c constraints.txt 'misfit-bench[test]'")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the start")
    profiles: dict[str, Profile] = {}
    for sdk in args.sdk or SDKS:
        command = [sys.executable, "-m", "bench.cli", "run", "--sdk", sdk, "--no-progress"]
        command += ["--shard", args.shard] if args.shard else []
        command += ["--procs", str(args.procs)] if args.procs else []
        with tempfile.TemporaryDirectory(prefix="misfit-profile-") as scratch:
            profiles[sdk] = profile_run(command, spy, args.rate, Path(scratch))
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(Path(scratch, "raw.txt"), args.keep / f"{sdk}.txt")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the end; "
          f"{'shard ' + args.shard if args.shard else 'the default matrix'}, one bench run per SDK")  # fmt: skip
    print_profiles(profiles, int(args.shard.split("/")[1]) if args.shard else 1)


if __name__ == "__main__":
    main()
