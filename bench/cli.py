"""The ``bench`` command: a thin layer that parses arguments and calls library functions.

Data goes to stdout, progress and errors to stderr. Exit codes: 0 success, 1 gate failed,
2 usage or input error, 3 harness error.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, NoReturn

import typer

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
    provider.open_run(run_id="default", **script)  # type: ignore[arg-type]
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
    mode: Annotated[list[str] | None, typer.Option("--mode", help="tool, native, prompted.")] = None,
    variant: Annotated[list[str] | None, typer.Option("--variant", help="default, hardened, stream, ...")] = None,
    protocol: Annotated[list[str] | None, typer.Option("--protocol", help="openai-chat, openai-responses, anthropic-messages.")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario name(s).")] = None,
    fault: Annotated[list[str] | None, typer.Option("--fault", help="Fault label or behaviour, e.g. malformed.")] = None,
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
    shard: Annotated[str | None, typer.Option(help="Run only slice I of N (e.g. 2/4), by a stable hash of the cell.")] = None,
) -> None:
    """Run SDKs x modes x variants x scenarios against the local provider; write parquet."""
    from bench.runner import Filters, RunOptions
    from bench.suite import SuiteError, SuiteRequest, run_suite

    from bench.runner import parse_shard

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
        options=RunOptions(call_cap=call_cap, time_limit_s=time_limit, concurrency=concurrency, record_bodies=record_bodies),
        results_root=out,
        shard=shard_spec,
    )
    show = sys.stderr.isatty() if progress is None else progress
    try:
        directory = _run_with_progress(request, run_suite, show)
    except (SuiteError, ScenarioError) as error:
        fail(str(error))
    _print_summary(directory)


def _run_with_progress(request: object, run_suite: Callable[..., Path], show: bool) -> Path:
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


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
