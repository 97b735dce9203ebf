"""Per-cell harness overhead and whole-matrix wall time (figures, not pass marks).

For each installed adapter, the same cell (its first supported default cell on the `valid`
scenario) is run alternately
  - user floor (in-process SDKs): what a user's own loop pays for the same structured call:
    the SDK's client, model and agent built once, against one provider run, and the SDK's call
    repeated (``USER_LOOPS``);
  - bare: the adapter's SDK call against a fresh provider run, nothing else;
  - through the runner: open the run, drive it under cap and time limit, read the ledger,
    classify, build the rows and hand them to the parquet writer;
bare and runner share the HTTP clients and build SSL contexts as a run does (``bench.sdk.clients``).
Medians per call, of wall time and of CPU time (this process and its children: the figure that
holds on a loaded machine), are printed with runner / bare and runner / user floor (issue 18's
target: at most 1.5). Then the default matrix (or one ``--matrix-shard`` of it) is timed
through `bench run` (subprocess), next to the sum of its cells' bare floors divided by the cores.
``--sdk`` limits both parts to the SDKs named; a tiny run (the benchmark test's):
``--reps 1 --sdk pydantic-ai --matrix-shard 1/40``.

    .venv/bin/python benchmarks/overhead.py [--reps 15] [--skip-matrix] [--sdk NAME ...] [--matrix-shard I/N]
    .venv/bin/python benchmarks/overhead.py --claude-startup [--reps 10]
    .venv/bin/python benchmarks/overhead.py --claude-phases [--reps 18]
    .venv/bin/python benchmarks/overhead.py --claude-compile-cache [--reps 6]

``--claude-phases`` splits a Claude cell into spawn, CLI start, request and exit, and compares
spawning each CLI with pre-starting the next one while a cell runs (docs/performance.md).
``--claude-compile-cache`` times a Claude cell with and without Node's compile cache, cold and
warm. ``--claude-startup`` times the Claude adapter's default cell on `valid` with and without the
start-up switches (``LEAN_START_ARGS`` / ``LEAN_START_ENV``), interleaved, and checks that the
recorded request bodies are the same apart from per-cell ids (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.vocabulary import ModeSupport
from bench.provider import LocalProvider, RunHandle
from bench.results.store import ResultsWriter, latest_run, read_table
from bench.run.plan import CellPlan
from bench.run.runner import Runner, RunOptions, Slot
from bench.scenarios.files import default_scenarios
from bench.scenarios.tasks import Task, get_task
from bench.sdk import clients, registry
from bench.sdk.adapter import Adapter, Cell, Endpoint


@contextlib.asynccontextmanager
async def pydantic_ai_loop(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=endpoint.openai_base_url, api_key=endpoint.api_key)
    agent = Agent(OpenAIChatModel(endpoint.openai_model, provider=provider), output_type=task.output_model)
    async with agent:
        yield lambda: agent.run(task.prompt)


@contextlib.asynccontextmanager
async def openai_agents_loop(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    async with AsyncOpenAI(base_url=endpoint.openai_base_url, api_key=endpoint.api_key) as client:
        model = OpenAIChatCompletionsModel(model=endpoint.openai_model, openai_client=client)
        agent = Agent(name="extractor", instructions="Answer with the requested structured output.", model=model,
                      output_type=task.output_model)  # fmt: skip
        yield lambda: Runner.run(agent, task.prompt, run_config=RunConfig(tracing_disabled=True))


@contextlib.asynccontextmanager
async def langchain_loop(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=endpoint.openai_model, base_url=endpoint.openai_base_url, api_key=endpoint.api_key,
                       stream_usage=True)  # fmt: skip
    agent = create_agent(model, tools=[], response_format=ToolStrategy(task.output_model))
    yield lambda: agent.ainvoke({"messages": [{"role": "user", "content": task.prompt}]})


@contextlib.asynccontextmanager
async def agentmaker_loop(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    """The LLMClient (which holds the SDK client) once; the Agent per call, so no call sees an
    earlier call's history."""
    from agentmaker import Agent, LLMClient, Tracer

    client = LLMClient(
        "openai", model=endpoint.openai_model, base_url=endpoint.openai_base_url, api_key=endpoint.api_key
    )
    async with client as llm:
        yield lambda: Agent("misfit", llm, tracer=Tracer()).arun(task.prompt, output_schema=task.output_model)


@contextlib.asynccontextmanager
async def agentmaker_client_per_call(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    """Not a user's floor: the LLMClient built (and closed) per call too, as the runner built one
    per cell before slot routes (it takes no HTTP client and fixes its base URL at construction)."""
    from agentmaker import Agent, LLMClient, Tracer

    async def call() -> object:
        client = LLMClient(
            "openai", model=endpoint.openai_model, base_url=endpoint.openai_base_url, api_key=endpoint.api_key
        )
        async with client as llm:
            return await Agent("misfit", llm, tracer=Tracer()).arun(task.prompt, output_schema=task.output_model)

    yield call


@contextlib.asynccontextmanager
async def smolagents_loop(endpoint: Endpoint, task: Task) -> AsyncIterator[Call]:
    """The model (which holds the sync openai client) and the agent once, with the adapter's typed
    final answer; ``agent.run`` resets the agent's memory on each call (its default). smolagents is
    synchronous: the call blocks this loop, as it would a user's script (the provider serves from
    its own thread)."""
    from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent

    from adapters.smolagents.answer import final_answer_tool

    model = OpenAIServerModel(endpoint.openai_model, api_base=endpoint.openai_base_url, api_key=endpoint.api_key)
    agent = ToolCallingAgent(tools=[final_answer_tool(task.output_model)], model=model, verbosity_level=LogLevel.OFF)

    async def call() -> object:
        return agent.run(task.prompt)

    try:
        yield call
    finally:
        model.client.close()


Call = Callable[[], Awaitable[object]]
CLIENT_PER_CALL: dict[str, Callable[[Endpoint, Task], contextlib.AbstractAsyncContextManager[Call]]] = {
    "agentmaker": agentmaker_client_per_call,
}
"""For an SDK whose client the runner reuses per slot only (bench.run.runner.Slot): the user's loop
with the client built per call, printed beside the floor (never the floor itself)."""
USER_LOOPS: dict[str, Callable[[Endpoint, Task], contextlib.AbstractAsyncContextManager[Call]]] = {
    "pydantic-ai": pydantic_ai_loop,
    "openai-agents": openai_agents_loop,
    "langchain": langchain_loop,
    "agentmaker": agentmaker_loop,
    "smolagents": smolagents_loop,
}
"""A user's loop for each in-process SDK's ``first_cell`` (the same declaration, mode and
protocol): the SDK's objects built once, the call to repeat yielded."""


def first_cell(adapter: Adapter) -> Cell:
    supported = [c for c in adapter.cells() if c.mode_support is not ModeSupport.UNSUPPORTED]
    defaults = [c for c in supported if c.variant == "default" and not c.stream]
    return (defaults or supported)[0]


Timing = tuple[float, float]
"""One call's (wall seconds, CPU seconds of the process and its children)."""


async def timed(call: Call) -> Timing:
    wall, cpu = time.perf_counter(), cpu_seconds()
    await call()
    return time.perf_counter() - wall, cpu_seconds() - cpu


async def bare_call(adapter: Adapter, cell: Cell, provider: LocalProvider) -> Timing:
    with provider.open_script("person", ["valid"]) as run:
        return await timed(lambda: adapter.run_cell(cell, get_task("person"), run.endpoint))


async def runner_call(
    runner: Runner, plan: CellPlan, provider: LocalProvider, writer: ResultsWriter, slot: Slot
) -> Timing:
    """One cell through the runner in ``slot``, as one of a run's worker slots runs its cells."""

    async def call() -> None:
        record = await runner.run_cell(plan, provider, slot)
        writer.add(record.run, record.attempts)

    return await timed(call)


@contextlib.asynccontextmanager
async def user_loop(
    name: str, provider: LocalProvider, loops: dict[str, Any] | None = None
) -> AsyncIterator[Callable[[], Awaitable[Timing]]]:
    """A user's loop on one run that answers `valid` to every call; yields the timed call."""
    with provider.open_script("person", ["valid"], then="repeat") as run:
        async with (loops or USER_LOOPS)[name](run.endpoint, get_task("person")) as call:
            yield lambda: timed(call)


@dataclass
class Figures:
    """Per-call medians (wall, CPU) of each path; ``user`` is empty for the Claude CLI."""

    user: list[Timing] = field(default_factory=list)
    bare: list[Timing] = field(default_factory=list)
    runner: list[Timing] = field(default_factory=list)
    rebuilt: list[Timing] = field(default_factory=list)
    """Through the runner with the run's SDK objects built per cell (``ClientPool.reuse`` off):
    the harness before agents were reused, timed in the same run."""
    client_per_call: list[Timing] = field(default_factory=list)
    """The user's loop with its client built per call (``CLIENT_PER_CALL``), where there is one."""

    @staticmethod
    def median(timings: list[Timing], which: int) -> float:
        return statistics.median(t[which] for t in timings) if timings else float("nan")


async def measure(name: str, reps: int, provider: LocalProvider, out: Path) -> Figures:
    """User floor, bare and runner alternating call by call, bare and runner sharing the HTTP
    clients as a run does."""
    adapter = registry.load(name)
    cell = first_cell(adapter)
    valid = next(s for s in default_scenarios() if s.name == "valid")
    runner = Runner({name: adapter}, RunOptions(), suite_id="bench")
    writer = ResultsWriter(out / name)
    plan = CellPlan(cell, valid, rep=0, seed=0)
    figures = Figures()
    slot = Slot()
    async with clients.sharing() as pool, contextlib.AsyncExitStack() as stack:
        stack.enter_context(clients.lazy_trust_store())
        user = await stack.enter_async_context(user_loop(name, provider)) if name in USER_LOOPS else None
        fresh = None
        if name in CLIENT_PER_CALL:
            fresh = await stack.enter_async_context(user_loop(name, provider, CLIENT_PER_CALL))
        await bare_call(adapter, cell, provider)  # warm-up: imports, clients, CLI caches
        for warm in (user, fresh):
            if warm is not None:
                await warm()
        for _ in range(reps):
            if user is not None:
                figures.user.append(await user())
            if fresh is not None:
                figures.client_per_call.append(await fresh())
            figures.bare.append(await bare_call(adapter, cell, provider))
            figures.runner.append(await runner_call(runner, plan, provider, writer, slot))
            pool.reuse = False
            figures.rebuilt.append(await runner_call(runner, plan, provider, writer, Slot()))
            pool.reuse = True
    writer.finalize()
    return figures


TARGET_RUNNER_OVER_USER = 1.2
"""Issue 30's target for runner / user's loop, on CPU, for every in-process SDK."""


def print_figures(name: str, figures: Figures) -> None:
    cell = first_cell(registry.load(name))
    label = f"{cell.mode}/{cell.variant}/{cell.protocol}"
    for which, unit in ((0, "wall"), (1, "cpu")):
        user, bare, runner, rebuilt = (
            Figures.median(getattr(figures, path), which) * 1000 for path in ("user", "bare", "runner", "rebuilt")
        )
        print(f"{name:<18} {label:<34} {unit:<5} {user:>8.1f} {bare:>8.1f} {runner:>10.1f} {rebuilt:>11.1f} "
              f"{runner / bare:>12.2f} {runner / user:>12.2f} {rebuilt / user:>13.2f}")  # fmt: skip
    if figures.user:
        ratio = Figures.median(figures.runner, 1) / Figures.median(figures.user, 1)
        verdict = "met" if ratio <= TARGET_RUNNER_OVER_USER else "NOT met"
        print(f"{name:<18} runner / user's loop on CPU {ratio:.2f}: target {TARGET_RUNNER_OVER_USER} {verdict}")
    if figures.client_per_call:
        fresh = Figures.median(figures.client_per_call, 1)
        print(f"{name:<18} the user's loop with its client built per call: {fresh * 1000:.1f} ms CPU; "
              f"runner / that {Figures.median(figures.runner, 1) / fresh:.2f}, "
              f"that / user's loop {fresh / Figures.median(figures.user, 1):.2f}")  # fmt: skip


def load_average() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def cpu_seconds() -> float:
    """User + system time of this process and its waited-for children (the Claude CLIs): the
    figure that holds on a machine shared with other jobs, where wall time does not."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def matrix_wall_time(out: Path, sdks: list[str], shard: str | None) -> tuple[float, Path]:
    """Wall time of ``bench run`` in a child process, and the run folder it wrote. A run that
    fails or writes nothing stops the benchmark with bench run's own last lines: a matrix
    that silently ran nothing once printed "0 rows" and a ZeroDivisionError."""
    command = [sys.executable, "-m", "bench.cli", "run", "--out", str(out), "--no-progress"]
    command += [a for sdk in sdks for a in ("--sdk", sdk)] + (["--shard", shard] if shard else [])
    started = time.perf_counter()
    done = subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    run_dir = latest_run(out)
    if done.returncode != 0 or run_dir is None:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"bench run exited {done.returncode} and wrote {run_dir or 'no run'}:\n{tail}")
    return wall, run_dir


def _masked(body: object) -> str:
    """A request body without what differs between any two cells: temp dirs, session and device ids."""
    text = json.dumps(body, sort_keys=True)
    text = re.sub(r"misfit-claude-[a-z0-9_]+", "<tmp>", text)
    return re.sub(r'(session_id|device_id)\\\\?":\\\\?"[0-9a-f-]+', r"\1=<id>", text)


async def claude_startup(reps: int) -> None:
    import adapters.claude_agent_sdk.adapter as claude

    lean = {"after": (claude.LEAN_START_ARGS, claude.LEAN_START_ENV), "before": ({}, {})}
    adapter = registry.load("claude-agent-sdk")
    cell, task = first_cell(adapter), get_task("person")
    times: dict[str, list[float]] = {"before": [], "after": []}
    init: dict[str, list[float]] = {"before": [], "after": []}
    bodies: dict[str, list[str]] = {}
    with LocalProvider(record_bodies=True) as provider:
        for rep in range(reps + 1):  # rep 0 warms up and records the bodies
            for name, (args, env) in lean.items():
                claude.LEAN_START_ARGS, claude.LEAN_START_ENV = args, env
                with provider.open_script("person", ["valid"]) as run:
                    started = time.perf_counter()
                    result = await adapter.run_cell(cell, task, run.endpoint)
                    elapsed = time.perf_counter() - started
                    if rep == 0:
                        bodies[name] = [_masked(a.request_body) for a in run.attempts]
                        continue
                    times[name].append(elapsed)
                    init[name].append(float(result.details.get("cli_init_ms", "nan")))
    claude.LEAN_START_ARGS, claude.LEAN_START_ENV = lean["after"]
    print(f"{'claude start-up':<10} {'median cell ms':>15} {'median init ms':>15} {'min cell ms':>12}")
    for name in ("before", "after"):
        print(f"{name:<15} {statistics.median(times[name]) * 1000:>15.0f} {statistics.median(init[name]):>15.0f} "
              f"{min(times[name]) * 1000:>12.0f}")  # fmt: skip
    same = bodies["before"] == bodies["after"]
    print(f"request bodies identical apart from per-cell ids: {same} ({len(bodies['after'])} request(s))")


async def claude_phases(reps: int) -> None:
    """Where a Claude cell's time goes (spawn -> init message -> first request -> last response
    -> result -> CLI exit, and the CLI's CPU), and what pre-starting the next CLI while a cell
    runs buys: blocks of ``reps`` cells in a row, spawned per cell or pre-started (the next
    cell's transport connected before the current cell starts, through ``query(transport=)``),
    three alternating rounds. Every cell is checked to have made exactly one request."""
    from claude_agent_sdk import ResultMessage, SystemMessage, query
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    import adapters.claude_agent_sdk.adapter as claude

    spec, task = claude._spec(first_cell(registry.load("claude-agent-sdk"))), get_task("person")
    rows: dict[str, list[dict[str, float]]] = {"spawned per cell": [], "next pre-started": []}
    with LocalProvider() as provider, tempfile.TemporaryDirectory() as tmp:
        count = iter(range(1_000_000))

        def prepared() -> tuple[RunHandle, Any]:
            run, scratch = provider.open_script("person", ["valid"]), Path(tmp) / str(next(count))
            scratch.mkdir()
            return run, claude._options(spec, task, run.endpoint, str(scratch), claude._HookLog(), lambda line: None)

        async def connected(options: Any) -> Any:
            transport = SubprocessCLITransport(prompt=task.prompt, options=options)
            await transport.connect()
            return transport

        async def cell(run: RunHandle, options: Any, transport: Any) -> dict[str, float]:
            marks: dict[str, float] = {}
            epoch, started, cpu = time.time(), time.perf_counter(), cpu_seconds()
            async for message in query(prompt=task.prompt, options=options, transport=transport):
                if isinstance(message, SystemMessage):
                    marks.setdefault("init", time.perf_counter() - started)
                elif isinstance(message, ResultMessage):
                    marks["result"] = time.perf_counter() - started
            marks["exit"], marks["cpu"] = time.perf_counter() - started, cpu_seconds() - cpu
            (attempt,) = [a for a in run.attempts if a.attempt is not None]
            marks["first_request"] = attempt.started_at - epoch
            marks["last_response"] = attempt.started_at + attempt.duration_ms / 1000 - epoch
            run.close()
            return marks

        async def block(prestart: bool) -> dict[str, float]:
            cells = [prepared() for _ in range(reps)]
            started, cpu = time.perf_counter(), cpu_seconds()
            pending = asyncio.ensure_future(connected(cells[0][1])) if prestart else None
            for index, (run, options) in enumerate(cells):
                transport = await pending if pending is not None else None
                if prestart and index + 1 < reps:
                    pending = asyncio.ensure_future(connected(cells[index + 1][1]))
                marks = await cell(run, options, transport)
            return {"block_wall": (time.perf_counter() - started) / reps, "block_cpu": (cpu_seconds() - cpu) / reps,
                    **marks}  # fmt: skip

        await block(False)  # warm-up
        for _ in range(3):
            for name, prestart in (("spawned per cell", False), ("next pre-started", True)):
                rows[name].append(await block(prestart))
    phases = {
        "spawn->init": lambda r: r["init"],
        "init->request": lambda r: r["first_request"] - r["init"],
        "request": lambda r: r["last_response"] - r["first_request"],
        "->result": lambda r: r["result"] - r["last_response"],
        "result->exit": lambda r: r["exit"] - r["result"],
        "cell": lambda r: r["exit"],
        "per cell in block": lambda r: r["block_wall"],
        "CPU per cell": lambda r: r["block_cpu"],
    }
    print(f"{'Claude CLI, median ms':<22}" + "".join(f"{name:>19}" for name in phases))
    for name, found in rows.items():
        print(
            f"{name:<22}" + "".join(f"{statistics.median(f(r) for r in found) * 1000:>19.0f}" for f in phases.values())
        )
    print("(phases from the last cell of each block; per cell in block = block wall / cells; CPU includes the CLIs)")


async def claude_compile_cache(reps: int) -> None:
    """Node's compile cache for the Claude CLI (issue 30, lead b): the adapter's default cell on
    `valid`, interleaved, with no ``NODE_COMPILE_CACHE``, a fresh cache folder per cell (cold) and
    one folder reused (warm); CPU includes the CLI. Prints what the warm folder holds after."""
    import adapters.claude_agent_sdk.adapter as claude

    adapter, base = registry.load("claude-agent-sdk"), dict(claude.LEAN_START_ENV)
    cell, task = first_cell(adapter), get_task("person")
    timings: dict[str, list[Timing]] = {"none": [], "cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp, LocalProvider() as provider:
        warm = Path(tmp) / "warm"
        for rep in range(reps + 1):  # rep 0 warms up
            for name, found in timings.items():
                folder = {"none": None, "cold": Path(tmp) / f"cold-{rep}", "warm": warm}[name]
                claude.LEAN_START_ENV = base | ({} if folder is None else {"NODE_COMPILE_CACHE": str(folder)})
                with provider.open_script("person", ["valid"]) as run:
                    timing = await timed(lambda: adapter.run_cell(cell, task, run.endpoint))
                if rep:
                    found.append(timing)
        claude.LEAN_START_ENV = base
        cached = sum(len(files) for _, _, files in os.walk(warm))
    print(f"{'NODE_COMPILE_CACHE':<20} {'median cell ms':>15} {'median cpu ms':>14}   ({load_average()})")
    for name, found in timings.items():
        print(f"{name:<20} {Figures.median(found, 0) * 1000:>15.0f} {Figures.median(found, 1) * 1000:>14.0f}")
    print(f"files in the warm cache folder after {reps + 1} cells: {cached}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--skip-matrix", action="store_true")
    parser.add_argument("--claude-startup", action="store_true")
    parser.add_argument("--claude-phases", action="store_true")
    parser.add_argument("--claude-compile-cache", action="store_true")
    parser.add_argument("--sdk", action="append", help="only these SDKs (both parts); repeatable")
    parser.add_argument("--matrix-shard", help="I/N: time only this slice of the default matrix")
    args = parser.parse_args()
    if args.claude_startup:
        asyncio.run(claude_startup(args.reps))
        return
    if args.claude_compile_cache:
        asyncio.run(claude_compile_cache(args.reps))
        return
    if args.claude_phases:
        asyncio.run(claude_phases(max(2, args.reps // 3)))
        return
    names = [n for n in registry.registrations() if n != "openai-parse" and (not args.sdk or n in args.sdk)]
    if not names:
        raise SystemExit(f"no installed adapter among {args.sdk}")
    floors: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, LocalProvider() as provider:
        print(f"{'adapter':<18} {'cell':<34} {'':<5} {'user ms':>8} {'bare ms':>8} {'runner ms':>10} "
              f"{'rebuilt ms':>11} {'runner/bare':>12} {'runner/user':>12} {'rebuilt/user':>13}"
              f"   ({load_average()})")  # fmt: skip
        for name in names:
            reps = max(3, args.reps // 3) if name == "claude-agent-sdk" else args.reps
            figures = asyncio.run(measure(name, reps, provider, Path(tmp)))
            floors[name] = Figures.median(figures.bare, 0)
            print_figures(name, figures)
    print("medians per call; cpu = user+sys of this process (SDK, harness and provider) and its children (the CLI); "
          "rebuilt = through the runner with each cell's agent built for it (before reuse)")  # fmt: skip
    print(f"after the cells: {load_average()}")
    if args.skip_matrix:
        return
    with tempfile.TemporaryDirectory() as tmp:
        wall, run_dir = matrix_wall_time(Path(tmp), args.sdk or [], args.matrix_shard)
        runs = read_table(run_dir, "runs").to_pandas()
        ran = runs[runs.outcome != "unsupported"]
        floor = sum(floors.get(sdk, 0.0) for sdk in ran.sdk) / (os.cpu_count() or 1)
        if ran.empty or floor <= 0:
            raise SystemExit(f"the matrix ran no cells ({len(runs)} rows in {run_dir}): nothing to compare")
        which = f"shard {args.matrix_shard}" if args.matrix_shard else "full"
        print(f"\n{which} default matrix: {len(runs)} rows, {len(ran)} cells run, wall {wall:.1f} s")
        print(f"sum of bare valid-call floors / {os.cpu_count()} cores: {floor:.1f} s (ratio {wall / floor:.2f}); "
              "faulty cells make more model calls than the valid floor, so this ratio overstates overhead")  # fmt: skip


if __name__ == "__main__":
    main()
