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


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
