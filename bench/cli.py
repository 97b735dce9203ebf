"""The ``bench`` command: a thin layer that parses arguments and calls library functions.

Data goes to stdout, progress and errors to stderr. Exit codes: 0 success, 1 gate failed,
2 usage or input error, 3 harness error.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from bench.results import ResultsError
from bench.scenario import SCENARIO_DIR, Scenario, ScenarioError, load_paths, write_json_schema

EXIT_INPUT_ERROR = 2

app = typer.Typer(
    help="misfit-bench: what agent SDKs do when the model's answer does not fit the type.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
scenarios_app = typer.Typer(help="List, validate and document scenario files.", no_args_is_help=True)
app.add_typer(scenarios_app, name="scenarios")


def fail(message: str, code: int = EXIT_INPUT_ERROR) -> NoReturn:
    """One clear line on stderr and a documented exit code, never a traceback."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _load(paths: list[Path] | None) -> list[Scenario]:
    try:
        return load_paths(paths or [SCENARIO_DIR])
    except ScenarioError as error:
        fail(str(error))


@scenarios_app.command("list")
def scenarios_list(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: scenarios/).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the scenarios with their task, fault and suite."""
    scenarios = _load(paths)
    if as_json:
        rows = [
            {"name": s.name, "task": s.task, "fault": s.fault_label, "suite": s.suite, "description": s.description}
            for s in scenarios
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    width = max(len(s.name) for s in scenarios)
    for s in scenarios:
        typer.echo(f"{s.name:<{width}}  {s.task:<15} {s.suite:<8} {s.fault_label}")


@scenarios_app.command("validate")
def scenarios_validate(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files or folders to check.")],
) -> None:
    """Check scenario files; exit 2 with one line per problem (file, entry, field)."""
    scenarios = _load(paths)
    typer.echo(f"ok: {len(scenarios)} scenarios in {len(paths)} path(s)")


@scenarios_app.command("schema")
def scenarios_schema(
    directory: Annotated[Path, typer.Option(help="Where to write scenario.schema.json.")] = SCENARIO_DIR,
) -> None:
    """Regenerate the JSON Schema editors use to complete and check scenario files."""
    typer.echo(str(write_json_schema(directory)))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = 8787,
    scenario: Annotated[str | None, typer.Option(help="Scenario name that scripts the default run.")] = None,
    scenario_path: Annotated[list[Path] | None, typer.Option("--scenarios", help="Scenario files or folders.")] = None,
    task: Annotated[str, typer.Option(help="Task of the default run when no scenario is given.")] = "person",
) -> None:
    """Serve the fault-injecting provider until Ctrl-C, for any client to point at.

    The default run answers under /v1/... (OpenAI base URL http://HOST:PORT/v1, Anthropic base
    URL http://HOST:PORT); POST /runs opens more runs, GET /runs/ID/ledger shows what was served.
    """
    from bench.provider import LocalProvider
    from bench.tasks import TASKS

    script: dict[str, object] = {"task": task, "script": ["valid"]}
    if scenario is not None:
        chosen = {s.name: s for s in _load(scenario_path)}.get(scenario)
        if chosen is None:
            fail(f"unknown scenario {scenario!r}; see 'bench scenarios list'")
        script = {"task": chosen.task, **chosen.script_spec()}
    elif task not in TASKS:
        fail(f"unknown task {task!r}; known tasks: {', '.join(sorted(TASKS))}")
    try:
        provider = LocalProvider(host=host, port=port).start()
    except (ValueError, OSError) as error:
        fail(str(error))
    from bench.provider.server import SERVE_LEDGER_LIMIT

    if scenario_path:  # what POST /runs {"scenario": NAME} may name; the library otherwise
        provider.scenarios = {s.name: s for s in _load(scenario_path)}
    provider.open_run(run_id="default", ledger_limit=SERVE_LEDGER_LIMIT, **script)  # type: ignore[arg-type]
    typer.echo(f"OpenAI base URL:    {provider.base_url}/v1")
    typer.echo(f"Anthropic base URL: {provider.base_url}")
    typer.echo(f"ledger:             {provider.base_url}/runs/default/ledger")
    typer.echo("serving on loopback; Ctrl-C to stop", err=True)
    _wait_for_signal()
    provider.stop()


def _wait_for_signal() -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


def _set(values: list[str] | None) -> frozenset[str] | None:
    return frozenset(values) if values else None


@app.command()
def run(
    sdk: Annotated[list[str] | None, typer.Option("--sdk", help="Adapter(s) to run (default: all installed).")] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="Your own agent: module:attr (an agent object, or a factory taking the model handle) or a "
            "[[tool.bench.agents]] name from ./pyproject.toml; 'all' runs every declared agent.",
        ),
    ] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", help="tool, native, prompted.")] = None,
    variant: Annotated[list[str] | None, typer.Option("--variant", help="default, hardened, stream, ...")] = None,
    protocol: Annotated[
        list[str] | None, typer.Option("--protocol", help="openai-chat, openai-responses, anthropic-messages.")
    ] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario name(s).")] = None,
    fault: Annotated[
        list[str] | None, typer.Option("--fault", help="Fault label or behaviour, e.g. malformed.")
    ] = None,
    suite: Annotated[str, typer.Option(help="default, or full (adds what is slow by nature).")] = "default",
    scenario_paths: Annotated[list[Path] | None, typer.Option("--scenarios", help="Scenario files or folders.")] = None,
    reps: Annotated[int, typer.Option(min=1, help="Repetitions per cell.")] = 1,
    seed: Annotated[int, typer.Option(help="Seed for stochastic scenarios.")] = 0,
    call_cap: Annotated[int, typer.Option(min=1, help="Model calls after which a cell is a runaway.")] = 12,
    time_limit: Annotated[float | None, typer.Option(help="Seconds per cell (default: per adapter).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Cells at once (each adapter has its own cap too).")] = 4,
    record_bodies: Annotated[bool, typer.Option(help="Store each request body in the attempts table.")] = False,
    out: Annotated[Path, typer.Option(help="Results root folder.")] = Path("results"),
    progress: Annotated[bool | None, typer.Option(help="Progress bar on stderr (default: when a terminal).")] = None,
    shard: Annotated[
        str | None, typer.Option(help="Run only slice I of N (e.g. 2/4), by a stable hash of the cell.")
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="Finish an interrupted run (path or suite id): only its missing cells run.")
    ] = None,
    procs: Annotated[
        int | None,
        typer.Option(
            min=1, max=64, help="Processes running cells side by side (default: one per core, fewer for small runs)."
        ),
    ] = None,
) -> None:
    """Run SDKs x modes x variants x scenarios against the local provider; write parquet.

    Cells are written as they finish; Ctrl-C or SIGTERM leaves a readable run of everything
    finished (exit 130), which --resume completes. Exit codes: 0 done, 2 usage or input error,
    3 harness error (a bug in misfit-bench), 130 interrupted.
    """
    from bench.runner import Filters, RunOptions, parse_shard
    from bench.suite import SuiteError, SuiteRequest, run_suite

    if suite not in ("default", "full"):
        fail(f"unknown suite {suite!r}; expected 'default' or 'full'")
    try:
        shard_spec = parse_shard(shard) if shard else None
    except ValueError as error:
        fail(str(error))
    request = SuiteRequest(
        sdks=tuple(sdk or ()),
        filters=Filters(_set(mode), _set(variant), _set(protocol), _set(scenario), _set(fault)),
        suite=suite,
        scenario_paths=tuple(scenario_paths or (SCENARIO_DIR,)),
        reps=reps,
        seed=seed,
        options=RunOptions(
            call_cap=call_cap, time_limit_s=time_limit, concurrency=concurrency, record_bodies=record_bodies
        ),
        results_root=out,
        shard=shard_spec,
        agents=None if agent is None else tuple(a for a in agent if a != "all"),
        procs=procs,
    )
    show = sys.stderr.isatty() if progress is None else progress
    # Explicit: a shell starts background jobs with SIGINT ignored, and Ctrl-C must still work.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        if resume is not None:
            from bench.results import resolve_run
            from bench.suite import resume_suite

            target = resolve_run(resume, out)
            directory = _run_with_progress(target, resume_suite, show)
        else:
            directory = _run_with_progress(request, run_suite, show)
    except (SuiteError, ScenarioError, ResultsError) as error:
        fail(str(error))
    except KeyboardInterrupt:
        _quiet_shutdown()
        typer.echo("interrupted: the cells finished so far are written; finish with: bench run --resume RUN", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # SDK clients leaked past the run are collected at exit; their ResourceWarnings are
        # already in sdk.log, and must not spill onto the terminal after the summary.
        warnings.simplefilter("ignore", ResourceWarning)
    _print_summary(directory)


def _quiet_shutdown() -> None:
    """An interrupt leaves SDK coroutines that were created but never started; collected at
    interpreter exit they print "never awaited" noise. The results are already on disk: drop it."""
    warnings.simplefilter("ignore")
    sys.unraisablehook = lambda unraisable: None
    gc.collect()


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a CI job cancelled, a container stopped) ends a run exactly like Ctrl-C: as a
    SIGINT, which asyncio turns into a clean cancellation of the running cells."""
    os.kill(os.getpid(), signal.SIGINT)


def _run_with_progress(request: object, run_suite: Callable[..., Path], show: bool) -> Path:
    """Call ``run_suite(request, ...)`` (or ``resume_suite(path, ...)``) with a progress bar."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    warn = lambda message: console.print(f"[yellow]warning:[/] {message}")  # noqa: E731
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not show, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("cells", total=None)
        return run_suite(
            request,
            on_record=lambda record: bar.advance(task),
            warn=warn,
            on_plan=lambda total: bar.update(task, total=total),
        )


def _print_summary(directory: Path) -> None:
    from bench.matrix import landing_matrix, outcome_totals
    from bench.results import read_table

    runs = read_table(directory, "runs").to_pandas()
    typer.echo(landing_matrix(runs))
    typer.echo("")
    typer.echo(f"{len(runs)} cells: {outcome_totals(runs)}")
    typer.echo(f"results: {directory}")
    if (runs["outcome"] == "harness_error").any():
        typer.echo("error: harness errors occurred (a bug in misfit-bench, not in an SDK)", err=True)
        raise typer.Exit(3)


@app.command("list")
def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Adapters, their modes, variants and protocols, and whether their SDK is installed."""
    from bench import registry

    rows = []
    for name, registration in registry.registrations().items():
        row: dict[str, object] = {"sdk": name, "target": registration.target}
        try:
            adapter = registry.load(name)
        except registry.AdapterUnavailable as error:
            rows.append(row | {"installed": False, "error": str(error)})
            continue
        from bench.runner import sdk_version

        cells = adapter.cells()
        row |= {
            "installed": sdk_version(adapter) is not None,
            "version": sdk_version(adapter),
            "modes": sorted({str(c.mode) for c in cells if c.mode_support != "unsupported"}),
            "variants": sorted({c.variant for c in cells}),
            "protocols": sorted({str(c.protocol) for c in cells}),
            "cells": len(cells),
            "unsupported_cells": sum(1 for c in cells if c.mode_support == "unsupported"),
        }
        rows.append(row)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        if not row.get("installed"):
            typer.echo(f"{row['sdk']:<18} not installed: {row.get('error', '')}")
            continue
        typer.echo(
            f"{row['sdk']:<18} {row['version']:<10} modes={','.join(row['modes'])}  "  # type: ignore[arg-type]
            f"variants={','.join(row['variants'])}  cells={row['cells']} ({row['unsupported_cells']} unsupported)"  # type: ignore[arg-type]
        )


from bench.gate import gate_command  # noqa: E402
from bench.merge import baseline_app, merge_command  # noqa: E402
from bench.report.cli import report_command  # noqa: E402

app.command("report")(report_command)
app.command("gate")(gate_command)
app.command("merge")(merge_command)
app.add_typer(baseline_app, name="baseline")

DEBUG = {"traceback": False}


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
) -> None:
    DEBUG["traceback"] = debug


def main() -> None:
    """Entry point: an internal error is one line and exit 3 unless --debug asks for more.

    The process ends with ``os._exit`` once the streams are flushed: the SDKs keep HTTP clients
    in module globals, and finalising those during interpreter shutdown (after every warnings
    filter is gone) prints pages of "unclosed transport" noise after the summary. Everything a
    command writes is on disk by then, so there is nothing left for shutdown to do.
    """
    code: int = 0
    try:
        app()
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except Exception as error:
        if DEBUG["traceback"]:
            raise
        typer.echo(f"internal error: {type(error).__name__}: {error} (rerun with --debug for the traceback)", err=True)
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
