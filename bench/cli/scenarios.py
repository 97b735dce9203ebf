"""``bench scenarios list | validate | schema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import load_scenarios
from bench.scenarios.files import SCENARIO_DIR, write_json_schema

scenarios_app = typer.Typer(help="List, validate and document scenario files.", no_args_is_help=True)


@scenarios_app.command("list")
def scenarios_list(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: scenarios/).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the scenarios with their task, fault and suite."""
    scenarios = load_scenarios(paths)
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
    scenarios = load_scenarios(paths)
    typer.echo(f"ok: {len(scenarios)} scenarios in {len(paths)} path(s)")


@scenarios_app.command("schema")
def scenarios_schema(
    directory: Annotated[Path, typer.Option(help="Where to write scenario.schema.json.")] = SCENARIO_DIR,
) -> None:
    """Regenerate the JSON Schema editors use to complete and check scenario files."""
    typer.echo(str(write_json_schema(directory)))
